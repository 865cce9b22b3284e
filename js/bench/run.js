// `pnpm bench`: bundles the bench (js/bench/*.ts) with the host's TypeScript sources as they are
// now (not js/dist) into node_modules/.cache/eutaxy-bench, then runs it. The bench's own
// scenarios import `eutaxy/cloudflare`, which the scenario loader finds as cloudflare.js beside
// the bundle; the engine is found in pkg/ above it, so `pnpm build:engine` must have run.
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build } from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const outdir = join(root, "node_modules", ".cache", "eutaxy-bench");

await build({
  entryPoints: {
    main: join(root, "js/bench/main.ts"),
    child: join(root, "js/bench/child.ts"),
    "memory-child": join(root, "js/bench/memory-child.ts"),
    cloudflare: join(root, "js/src/cloudflare.ts"),
    index: join(root, "js/src/index.ts"),
  },
  outdir,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  packages: "external",
  logLevel: "warning",
});

const { main } = await import(pathToFileURL(join(outdir, "main.js")).href);
process.exitCode = await main(process.argv.slice(2), { root, outdir });
