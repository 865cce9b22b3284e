/**
 * The code the workerd script is made of, bundled with esbuild in Node: the simulation host
 * (`host.ts` and everything it imports, with the engine's web build) and the scenario module.
 * The Workers' code is the bundle `load/bundle.ts` made in Node, with the `node:*` modules and
 * CompiledWasm modules each imports, which workerd can only provide as imports the script makes
 * itself.
 */

import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build, type Plugin } from "esbuild";
import { buildInputError } from "../load/bundle.ts";
import { ownLocations } from "../load/scenario.ts";

const here = dirname(fileURLToPath(import.meta.url));

/** The first of `candidates` that exists, or an error saying eutaxy is not built. */
function found(what: string, candidates: readonly string[]): string {
  const path = candidates.find((c) => existsSync(c));
  if (!path) {
    throw new Error(`eutaxy is missing ${what} (none of ${candidates.join(", ")}): run \`pnpm build\``);
  }
  return path;
}

/**
 * Run from source this file is `js/src/workerd/bundle.ts`; run from the build it is bundled into
 * `js/dist/`, beside which the sources ship.
 */
function sourceDir(): string {
  return dirname(
    found("the workerd host's source", [
      join(here, "host.ts"),
      join(here, "..", "src", "workerd", "host.ts"),
    ]),
  );
}

/** The engine built for the web target; `dir` is `js/src/workerd`, three levels under the top. */
export function webEnginePath(file: "engine.js" | "engine_bg.wasm"): string {
  const top = resolve(sourceDir(), "..", "..", "..");
  return found("the engine's web build", [join(top, "pkg", "web", file)]);
}

let hostCode: Promise<string> | undefined;

/** The host module, bundled once per process. */
export function bundleHost(): Promise<string> {
  hostCode ??= bundleHostNow();
  return hostCode;
}

async function bundleHostNow(): Promise<string> {
  const dir = sourceDir();
  const aliases: Plugin = {
    name: "eutaxy-workerd-host",
    setup(b) {
      b.onResolve({ filter: /^eutaxy:engine-web$/ }, () => ({ path: webEnginePath("engine.js") }));
      // workerd's node:v8 has no serialize; the host brings its own, byte for byte Node's.
      b.onResolve({ filter: /^node:v8$/ }, () => ({ path: join(dir, "v8.ts") }));
    },
  };
  const result = await build({
    entryPoints: [join(dir, "host.ts")],
    bundle: true,
    write: false,
    format: "esm",
    platform: "neutral",
    target: "es2022",
    external: ["node:*"],
    plugins: [aliases],
    logLevel: "silent",
  });
  return result.outputFiles[0]?.text ?? "";
}

/**
 * Bundles the scenario module as an ES module for workerd, `eutaxy/cloudflare` resolved to ours.
 * It reads `process.env` as it does in Node, where the check was started: a scenario that takes
 * its requests or an invariant's limit from the environment builds the same check in both.
 */
export async function bundleScenarioCode(file: string): Promise<string> {
  const own: Plugin = {
    name: "eutaxy",
    setup(b) {
      b.onResolve({ filter: /^eutaxy(\/cloudflare)?$/ }, (args) => ({
        path: ownModule(args.path === "eutaxy" ? "index" : "cloudflare"),
      }));
    },
  };
  try {
    const result = await build({
      entryPoints: [file],
      absWorkingDir: dirname(file),
      bundle: true,
      write: false,
      format: "esm",
      platform: "neutral",
      target: "es2022",
      mainFields: ["browser", "module", "main"],
      conditions: ["workerd", "worker", "browser"],
      logLevel: "silent",
      external: ["node:*"],
      define: { "process.env": JSON.stringify(process.env) },
      plugins: [own, ownLocations],
    });
    return result.outputFiles[0]?.text ?? "";
  } catch (error) {
    throw buildInputError(error, file);
  }
}

function ownModule(name: string): string {
  return found(`its module ${name}`, [join(here, "..", `${name}.ts`), join(here, `${name}.js`)]);
}
