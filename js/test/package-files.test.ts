/**
 * The tarball `npm pack` makes of eutaxy, which a project installs (`npm install -D
 * ./eutaxy-0.1.0.tgz`) instead of linking the repository: it holds everything the installed
 * package loads at run time, whatever git ignores (js/dist, and pkg/, where wasm-pack writes a
 * `.gitignore` of `*` that npm obeyed even for the files package.json's `files` names), and none
 * of the repository's tests, Rust sources or examples; installed, it checks a scenario in Node and
 * in workerd. A copy of the package's files is packed, after `js/prepack.js` as `npm pack` runs it,
 * so that the engine's folders keep their build.
 */

import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";
import { tempFolder } from "./files.ts";

const root = fileURLToPath(new URL("../../", import.meta.url));

/** A copy of what packing reads, with the engine's folders as wasm-pack leaves them. */
function packageCopy(): string {
  const dir = tempFolder("eutaxy-pack-");
  for (const path of [
    "package.json",
    "README.md",
    "docs",
    "js/bin",
    "js/dist",
    "js/src",
    "js/prepack.js",
    "pkg",
  ]) {
    cpSync(join(root, path), join(dir, path), { recursive: true, dereference: true });
  }
  for (const folder of ["pkg", "pkg/web"]) writeFileSync(join(dir, folder, ".gitignore"), "*");
  return dir;
}

function run(command: string, args: string[], cwd: string) {
  return spawnSync(command, args, { cwd, encoding: "utf8" });
}

interface Packed {
  /** The folder of the packed copy. */
  readonly dir: string;
  readonly tarball: string;
  readonly files: ReadonlySet<string>;
}

let packedOnce: Packed | undefined;

/** The copy, readied by `js/prepack.js` and packed by npm, once for this file's tests. */
function packed(): Packed {
  if (packedOnce) return packedOnce;
  const dir = packageCopy();
  const prepack = run(process.execPath, ["js/prepack.js"], dir);
  expect(prepack.stderr).toBe("");
  expect(prepack.status).toBe(0);
  const pack = run("npm", ["pack", "--json", "--ignore-scripts", "--pack-destination", dir], dir);
  expect(pack.status).toBe(0);
  const [result] = JSON.parse(pack.stdout) as [{ filename: string; files: { path: string }[] }];
  packedOnce = {
    dir,
    tarball: join(dir, result.filename),
    files: new Set(result.files.map((f) => f.path)),
  };
  return packedOnce;
}

it("packs the host, its declarations, the sources workerd bundles and both builds of the engine", () => {
  const { dir, files } = packed();
  const needed = [
    "js/bin/eutaxy.js",
    "js/dist/cli.js",
    "js/dist/parallel-worker.js",
    "js/src/workerd/host.ts",
    "pkg/engine_bg.wasm",
    "pkg/web/engine_bg.wasm",
    // engine.js is CommonJS in a package of ES modules: its package.json says so.
    "pkg/package.json",
    "pkg/web/package.json",
  ];
  for (const module of ["index", "cloudflare", "vitest"])
    needed.push(`js/dist/${module}.js`, `js/dist/${module}.d.ts`);
  // Each build of the engine, and the snippets it loads beside it.
  for (const folder of ["pkg", "pkg/web"]) {
    needed.push(`${folder}/engine.js`);
    const engine = readFileSync(join(dir, folder, "engine.js"), "utf8");
    for (const [, snippet] of engine.matchAll(/['"`]\.\/(snippets\/[^'"`]+)['"`]/g))
      needed.push(`${folder}/${snippet}`);
  }
  expect(needed.filter((path) => !files.has(path))).toEqual([]);
  expect([...files].filter((path) => /\.test\.ts$|^src\/|^examples\/|^js\/test\//.test(path))).toEqual([]);
});

it("refuses to pack an eutaxy whose engine is not built, saying how to build it", () => {
  const dir = packageCopy();
  rmSync(join(dir, "pkg"), { recursive: true });
  const prepack = run(process.execPath, ["js/prepack.js"], dir);
  expect(prepack.status).toBe(1);
  expect(prepack.stderr).toMatch(
    /^eutaxy cannot be packed without pkg\/package\.json, pkg\/engine\.js, .*run `pnpm build`/,
  );
});

it("installed from its tarball, checks a scenario on both runtimes", () => {
  const { tarball } = packed();
  // A project's node_modules as npm lays it out: eutaxy unpacked, its dependencies beside it.
  const project = tempFolder("eutaxy-installed-");
  const installed = join(project, "node_modules", "eutaxy");
  mkdirSync(installed, { recursive: true });
  expect(run("tar", ["xzf", tarball, "-C", installed, "--strip-components=1"], project).status).toBe(0);
  const { dependencies } = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
    dependencies: Record<string, string>;
  };
  for (const name of Object.keys(dependencies)) {
    symlinkSync(realpathSync(join(root, "node_modules", name)), join(project, "node_modules", name), "dir");
  }
  cpSync(join(root, "examples", "signup-race"), join(project, "app"), {
    recursive: true,
    filter: (path) => !path.includes("node_modules"),
  });
  for (const runtime of ["node", "workerd"]) {
    const check = run(
      process.execPath,
      [join(installed, "js/bin/eutaxy.js"), "check", "signup.sim.ts", "--runtime", runtime],
      join(project, "app"),
    );
    expect(check.stderr).toBe("");
    expect(check.stdout).toMatch(/^VIOLATED {2}signup/);
    expect(check.status).toBe(1);
  }
});
