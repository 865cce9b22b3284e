// Readies the repository for `npm pack` or `pnpm pack` (package.json's `prepack`, after
// `node js/build.js`): the tarball is what a project installs, so it must hold the engine that
// js/dist loads at run time, which `files` names under pkg/.
//
// wasm-pack writes a `.gitignore` of `*` into each folder it builds (pkg/ and pkg/web/), and npm
// obeys it even for the files `files` names: without this, `npm pack` left out pkg/snippets and all
// of pkg/web (pnpm pack keeps them), and the installed eutaxy could not load its engine. The
// repository's own .gitignore already keeps pkg/ out of git, so the two are removed here.
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";

const { files } = JSON.parse(readFileSync("package.json", "utf8"));
const missing = files.filter((entry) => !entry.startsWith("!") && !existsSync(entry));
if (missing.length > 0) {
  console.error(
    `eutaxy cannot be packed without ${missing.join(", ")}: run \`pnpm build\` first (wasm-pack writes the engine into pkg/, \`node js/build.js\` the host into js/dist/)`,
  );
  process.exit(1);
}
for (const dir of ["pkg", join("pkg", "web")]) rmSync(join(dir, ".gitignore"), { force: true });
