// Builds the TypeScript host into js/dist (ES modules for Node), as `pnpm build:host`.
// Dependencies stay external: they are installed beside eutaxy.
import { build } from "esbuild";

await build({
  entryPoints: ["js/src/cli.ts", "js/src/index.ts", "js/src/cloudflare.ts", "js/src/vitest.ts"],
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
