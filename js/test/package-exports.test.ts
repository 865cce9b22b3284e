/**
 * What `eutaxy` and `eutaxy/vitest` resolve to in a project, through package.json's exports: the
 * built modules in Node, and under the `workerd` condition, which @cloudflare/vitest-pool-workers
 * (and wrangler) resolve packages with, a module that says at once that checks run in Node,
 * rather than the check's own code failing inside esbuild with `No such module "node:os"`.
 */

import { spawnSync } from "node:child_process";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build } from "esbuild";
import { describe, expect, it } from "vitest";
import { tempFolder } from "./files.ts";

const root = fileURLToPath(new URL("../../", import.meta.url));

/** A project with eutaxy in its node_modules, as `npm install -D ../eutaxy` links it. */
function project(): string {
  const dir = tempFolder("eutaxy-exports-");
  mkdirSync(join(dir, "node_modules"));
  symlinkSync(root, join(dir, "node_modules", "eutaxy"), "dir");
  writeFileSync(join(dir, "package.json"), '{ "type": "module" }');
  return dir;
}

describe.each(["eutaxy", "eutaxy/vitest"])("%s", (specifier) => {
  it("is the built module in Node", () => {
    const resolved = spawnSync(
      process.execPath,
      ["--input-type=module", "-e", `console.log(import.meta.resolve(${JSON.stringify(specifier)}))`],
      { cwd: project(), encoding: "utf8" },
    );
    const module = specifier === "eutaxy" ? "index" : "vitest";
    expect(resolved.stdout.trim()).toBe(pathToFileURL(join(root, "js/dist", `${module}.js`)).href);
  });

  it("throws at import in workerd, saying where scenario tests run", async () => {
    const dir = project();
    writeFileSync(join(dir, "pool.test.js"), `import ${JSON.stringify(specifier)};\n`);
    // As the Workers pool and wrangler resolve a test's imports.
    const bundle = await build({
      entryPoints: [join(dir, "pool.test.js")],
      bundle: true,
      write: false,
      format: "esm",
      platform: "neutral",
      conditions: ["workerd", "worker", "browser"],
      external: ["node:*"],
      logLevel: "silent",
    });
    const code = bundle.outputFiles[0]?.text ?? "";
    expect(code).not.toContain("esbuild");
    await expect(import(`data:text/javascript,${encodeURIComponent(code)}`)).rejects.toThrow(
      /^eutaxy checks scenarios in Node, not in workerd: .*@cloudflare\/vitest-pool-workers.*"In vitest"/,
    );
  });
});
