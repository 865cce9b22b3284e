// Builds the TypeScript host into js/dist (ES modules for Node), as `pnpm build:host`, and the
// declaration files that package.json's `types` conditions name, beside it.
// Dependencies stay external: they are installed beside eutaxy.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { build } from "esbuild";

/** The modules a user imports: `eutaxy`, `eutaxy/cloudflare` and `eutaxy/vitest`. */
const PUBLIC_MODULES = ["js/src/index.ts", "js/src/cloudflare.ts", "js/src/vitest.ts"];

// Chunk names change with their content: without this, every build leaves the last one's behind.
rmSync("js/dist", { recursive: true, force: true });

// esbuild bundles in a process of its own while TypeScript loads and writes the declarations here.
const bundling = build({
  // parallel-worker is the entry of --workers' threads, which load it by its path beside cli.js.
  // in-workerd is what package.json's `workerd` condition gives `eutaxy` and `eutaxy/vitest`.
  entryPoints: [...PUBLIC_MODULES, "js/src/cli.ts", "js/src/parallel-worker.ts", "js/src/in-workerd.ts"],
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
const { default: ts } = await import("typescript");
writeDeclarations();
await bundling;

/**
 * Writes the .d.ts of the public modules, and of every module their declarations import, into
 * js/dist as js/src lays them out. A user's project type-checks eutaxy through these, not through
 * its sources: those import each other as `./x.ts`, which only a tsconfig with
 * allowImportingTsExtensions accepts, and skipLibCheck does not skip a .ts file.
 *
 * Each module's declarations come from its own text (isolatedDeclarations), without building and
 * checking the whole program, which `pnpm typecheck` does: that takes about a third of the time
 * of tsc's declaration emit, which has to. So the exports of a module reached here give the types
 * TypeScript would otherwise infer from other modules: a function's return type, the type of a
 * constant computed by a call; the build stops and says which ones are missing.
 */
function writeDeclarations() {
  const tsconfig = ts.getParsedCommandLineOfConfigFile(
    "tsconfig.json",
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => fail([diagnostic]),
    },
  );
  const compilerOptions = {
    ...tsconfig.options,
    declaration: true,
    declarationMap: true,
    isolatedDeclarations: true,
    rootDir: resolve("js/src"),
    outDir: resolve("js/dist"),
  };
  const problems = [...tsconfig.errors];
  const pending = PUBLIC_MODULES.map((module) => resolve(module));
  const written = new Set();
  for (let file = pending.pop(); file !== undefined; file = pending.pop()) {
    if (written.has(file)) continue;
    written.add(file);
    const imported = [];
    const declarations = ts.transpileDeclaration(readFileSync(file, "utf8"), {
      fileName: file,
      compilerOptions,
      reportDiagnostics: true,
      transformers: { afterDeclarations: [jsSpecifiers(imported)] },
    });
    problems.push(...declarations.diagnostics);
    pending.push(...imported.map((specifier) => join(dirname(file), specifier)));
    const output = join("js/dist", relative(resolve("js/src"), file)).replace(/\.ts$/, ".d.ts");
    mkdirSync(dirname(output), { recursive: true });
    writeFileSync(output, declarations.outputText);
    writeFileSync(`${output}.map`, declarations.sourceMapText);
  }
  if (problems.length > 0) fail(problems);
}

/**
 * A transformer that rewrites the relative specifiers of a declaration file from `./x.ts` to
 * `./x.js`, which a TypeScript of any version, under any moduleResolution, finds the `./x.d.ts`
 * beside (rewriteRelativeImportExtensions rewrites the JavaScript tsc emits, not declarations),
 * and adds the specifiers as written to `imported`.
 */
function jsSpecifiers(imported) {
  return (context) => {
    const { factory } = context;
    const rewrite = (specifier) => {
      if (!ts.isStringLiteral(specifier) || !/^\.\.?\/.*\.ts$/.test(specifier.text)) return specifier;
      imported.push(specifier.text);
      return factory.createStringLiteral(`${specifier.text.slice(0, -".ts".length)}.js`);
    };
    const visit = (node) => {
      if (ts.isImportDeclaration(node)) {
        const { modifiers, importClause, moduleSpecifier, attributes } = node;
        return factory.updateImportDeclaration(
          node,
          modifiers,
          importClause,
          rewrite(moduleSpecifier),
          attributes,
        );
      }
      if (ts.isExportDeclaration(node) && node.moduleSpecifier !== undefined) {
        const { modifiers, isTypeOnly, exportClause, moduleSpecifier, attributes } = node;
        const specifier = rewrite(moduleSpecifier);
        return factory.updateExportDeclaration(
          node,
          modifiers,
          isTypeOnly,
          exportClause,
          specifier,
          attributes,
        );
      }
      if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
        const argument = factory.updateLiteralTypeNode(node.argument, rewrite(node.argument.literal));
        const { attributes, qualifier, typeArguments, isTypeOf } = node;
        return factory.updateImportTypeNode(node, argument, attributes, qualifier, typeArguments, isTypeOf);
      }
      return ts.visitEachChild(node, visit, context);
    };
    return (file) => ts.visitNode(file, visit);
  };
}

function fail(diagnostics) {
  const host = {
    getCanonicalFileName: (name) => name,
    getCurrentDirectory: ts.sys.getCurrentDirectory,
    getNewLine: () => ts.sys.newLine,
  };
  console.error(ts.formatDiagnosticsWithColorAndContext(diagnostics, host));
  console.error(
    "The declaration files of eutaxy's public modules are written file by file: give the types asked for above.",
  );
  process.exit(1);
}
