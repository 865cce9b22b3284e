/**
 * eutaxy's types as a user's project meets them: a project as `npm create cloudflare` makes it
 * (moduleResolution "bundler", the Workers' types, no allowImportingTsExtensions), with eutaxy
 * linked into its node_modules, type-checks a scenario, a vitest test and a script that import
 * `eutaxy/cloudflare`, `eutaxy/vitest` and `eutaxy` through package.json's exports: the .d.ts
 * `node js/build.js` writes into js/dist. Each file also makes a mistake under `@ts-expect-error`,
 * which declarations that typed anything as `any` would let through.
 */

import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, expect, it } from "vitest";

const root = fileURLToPath(new URL("../../", import.meta.url));
const project = mkdtempSync(join(tmpdir(), "eutaxy-c3-project-"));
afterAll(() => rmSync(project, { recursive: true, force: true }));

it("a project without allowImportingTsExtensions type-checks its imports of eutaxy", () => {
  cpSync(fileURLToPath(new URL("fixtures/c3-project", import.meta.url)), project, { recursive: true });
  mkdirSync(join(project, "node_modules", "@cloudflare"), { recursive: true });
  // eutaxy as `npm install -D ../eutaxy` links it. vitest is the one eutaxy resolves, as it is when
  // TypeScript sees one vitest (README: "Using it in your project").
  symlinkSync(root, join(project, "node_modules", "eutaxy"), "dir");
  for (const name of ["vitest", "@cloudflare/workers-types"]) {
    symlinkSync(realpathSync(join(root, "node_modules", name)), join(project, "node_modules", name), "dir");
  }
  const tsc = spawnSync(process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-p", project], {
    encoding: "utf8",
  });
  expect(tsc.stdout + tsc.stderr).toBe("");
  expect(tsc.status).toBe(0);
});
