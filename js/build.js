// Builds the TypeScript host into js/dist (ES modules for Node), as `pnpm build:host`.
// Dependencies stay external: they are installed beside eutaxy.
import { rmSync } from "node:fs";
import { build } from "esbuild";

// Chunk names change with their content: without this, every build leaves the last one's behind.
rmSync("js/dist", { recursive: true, force: true });

await build({
  // parallel-worker is the entry of --workers' threads, which load it by its path beside cli.js.
  entryPoints: [
    "js/src/cli.ts",
    "js/src/index.ts",
    "js/src/cloudflare.ts",
    "js/src/vitest.ts",
    "js/src/parallel-worker.ts",
  ],
  outdir: "js/dist",
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  packages: "external",
  sourcemap: true,
  logLevel: "warning",
});
