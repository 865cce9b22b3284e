import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ADD_WASM } from "../../test/wasm.ts";
import { InputError } from "../errors.ts";
import { type BundleConfig, bundleWorker } from "./bundle.ts";
import type { ModuleRule } from "./wrangler.ts";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "eutaxy-bundle-"));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function write(name: string, text: string | Uint8Array): string {
  const file = join(dir, name);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
  return file;
}

async function inputError(run: () => Promise<unknown>): Promise<InputError> {
  const error = await run().then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(error).toBeInstanceOf(InputError);
  return error as InputError;
}

/** A stand-in for the runtime's `cloudflare:workers`. */
class WorkerEntrypoint {
  constructor(readonly env: unknown) {}
}
const runtime = { "cloudflare:workers": { WorkerEntrypoint } };

type Handler = { fetch(): number };

describe("bundleWorker", () => {
  it("starts module-level state fresh in every instantiation", async () => {
    const entry = write("worker.ts", `let count = 0;\nexport default { fetch() { return ++count; } };`);
    const worker = await bundleWorker(entry);
    expect(worker.entry).toBe(entry);
    const first = worker.instantiate(runtime).default as Handler;
    expect([first.fetch(), first.fetch()]).toEqual([1, 2]);
    const second = worker.instantiate(runtime).default as Handler;
    expect(second.fetch()).toBe(1);
  });

  it("bundles TypeScript, `.ts` imports, runtime modules and named classes", async () => {
    write(
      "payments/worker.ts",
      `import { WorkerEntrypoint } from "cloudflare:workers";
       import type { Charge } from "./types.ts";
       export class Payments extends WorkerEntrypoint<unknown> {
         charge(id: number): Charge { return { chargeId: id }; }
       }
       export default { fetch: (): number => 404 };`,
    );
    write("payments/types.ts", "export interface Charge { readonly chargeId: number }");
    const entry = write(
      "worker.ts",
      `import type { Payments } from "./payments/worker.ts";
       export { Payments } from "./payments/worker.ts";
       const use = (p: Payments) => p.charge(7);
       export default { fetch: (): number => 200, use };`,
    );
    const exports = (await bundleWorker(entry)).instantiate(runtime);
    const Payments = exports.Payments as new (
      env: unknown,
    ) => WorkerEntrypoint & { charge(id: number): unknown };
    const payments = new Payments({ DB: 1 });
    expect(payments).toBeInstanceOf(WorkerEntrypoint);
    expect(payments.env).toEqual({ DB: 1 });
    expect(payments.charge(3)).toEqual({ chargeId: 3 });
    expect((exports.default as Handler).fetch()).toBe(200);
  });

  it("resolves npm packages with the Workers conditions, and Node builtins from Node", async () => {
    write(
      "node_modules/dual/package.json",
      JSON.stringify({
        name: "dual",
        exports: { workerd: "./workerd.js", node: "./node.js", default: "./default.js" },
      }),
    );
    write("node_modules/dual/workerd.js", `export const where = "workerd";`);
    write("node_modules/dual/node.js", `export const where = "node";`);
    write("node_modules/dual/default.js", `export const where = "default";`);
    const entry = write(
      "worker.ts",
      `import { where } from "dual";
       import { Buffer } from "node:buffer";
       export default { where, hex: Buffer.from("hi").toString("hex") };`,
    );
    expect((await bundleWorker(entry)).instantiate({}).default).toEqual({ where: "workerd", hex: "6869" });
  });

  it("takes a built-in named without node: as the node: module, unless a package answers the name", async () => {
    write("node_modules/events/package.json", JSON.stringify({ name: "events", main: "index.js" }));
    write("node_modules/events/index.js", `exports.polyfill = true;`);
    const entry = write(
      "worker.ts",
      `import { createHash } from "crypto";
       import * as events from "events";
       export default { hash: createHash("sha256").update("x").digest("hex").slice(0, 8), polyfill: events.polyfill };`,
    );
    const worker = await bundleWorker(entry);
    expect(worker.nodeImports).toEqual(["node:crypto"]);
    expect(worker.instantiate({}).default).toEqual({ hash: "2d711642", polyfill: true });
  });

  it("replaces the config's define identifiers, as wrangler's bundle does", async () => {
    const entry = write("worker.ts", `declare const API_BASE: string;\nexport default { base: API_BASE };`);
    const worker = await bundleWorker(entry, {
      file: join(dir, "wrangler.json"),
      define: { API_BASE: '"https://api.example"' },
    });
    expect(worker.instantiate({}).default).toEqual({ base: "https://api.example" });
  });

  it("throws naming an import the runtime does not provide", async () => {
    const entry = write(
      "worker.ts",
      `import { EmailMessage } from "cloudflare:email";\nexport default { EmailMessage };`,
    );
    const worker = await bundleWorker(entry);
    expect(() => worker.instantiate(runtime)).toThrow(/cloudflare:email/);
  });

  it("gives a dynamic import the runtime's modules a static import gets, and local files", async () => {
    write("lib/double.ts", "export const double = (n: number): number => 2 * n;");
    const entry = write(
      "worker.ts",
      `export default {
         async fetch() {
           const { createHash } = await import("node:crypto");
           const { WorkerEntrypoint } = await import("cloudflare:workers");
           const { double } = await import("./lib/double.ts");
           return [createHash("sha256").update("hi").digest("hex").slice(0, 8), WorkerEntrypoint.name, double(21)];
         },
       };`,
    );
    const handler = (await bundleWorker(entry)).instantiate(runtime).default as { fetch(): Promise<unknown> };
    expect(await handler.fetch()).toEqual(["8f434346", "WorkerEntrypoint", 42]);
  });

  it("refuses a dynamic import of a node: module as it refuses a static one", async () => {
    const refusal = async (worker: string) => {
      const exports = (await bundleWorker(write("worker.ts", worker))).instantiate(runtime);
      return inputError(async () => (exports.default as { fetch(): Promise<unknown> }).fetch());
    };
    const dynamic = await refusal(`export default { fetch: () => import("node:fs") };`);
    const entry = write(
      "worker.ts",
      `import { readFileSync } from "node:fs";\nexport default { readFileSync };`,
    );
    const worker = await bundleWorker(entry);
    const staticImport = await inputError(async () => worker.instantiate(runtime));
    expect(dynamic.problem).toMatch(/^imports node:fs, which would reach the machine eutaxy runs on/);
    expect(dynamic.problem).toBe(staticImport.problem);
  });

  it("gives .txt, .html and .sql files as their text, wrangler's default Text modules", async () => {
    write("page.html", "<p>hi</p>\n");
    write("query.sql", "SELECT 1;\n");
    write("notes/read-me.txt", "plain\n");
    const entry = write(
      "worker.ts",
      `import page from "./page.html";
       import query from "./query.sql";
       import text from "./notes/read-me.txt";
       export default { page, query, text };`,
    );
    expect((await bundleWorker(entry)).instantiate(runtime).default).toEqual({
      page: "<p>hi</p>\n",
      query: "SELECT 1;\n",
      text: "plain\n",
    });
  });

  it("gives a .bin file as an ArrayBuffer of its bytes, new in every instantiation", async () => {
    write("table.bin", new Uint8Array([1, 2, 250]));
    const entry = write("worker.ts", `import table from "./table.bin";\nexport default { table };`);
    const worker = await bundleWorker(entry);
    const first = (worker.instantiate(runtime).default as { table: unknown }).table;
    expect(first).toBeInstanceOf(ArrayBuffer);
    expect([...new Uint8Array(first as ArrayBuffer)]).toEqual([1, 2, 250]);
    new Uint8Array(first as ArrayBuffer).fill(0);
    const second = (worker.instantiate(runtime).default as { table: ArrayBuffer }).table;
    expect([...new Uint8Array(second)]).toEqual([1, 2, 250]);
  });

  it("gives a .wasm file, with or without ?module, as a WebAssembly.Module the Worker instantiates", async () => {
    write("add.wasm", ADD_WASM);
    const entry = write(
      "worker.ts",
      `import add from "./add.wasm";
       import same from "./add.wasm?module";
       export default {
         async fetch() {
           const { exports } = await WebAssembly.instantiate(add);
           return [add instanceof WebAssembly.Module, add === same, exports.add(2, 3)];
         },
       };`,
    );
    const handler = (await bundleWorker(entry)).instantiate(runtime).default as { fetch(): Promise<unknown> };
    expect(await handler.fetch()).toEqual([true, true, 5]);
  });

  /** A config at the scratch folder's wrangler.json with the module rules `rules`. */
  function withRules(...rules: Omit<ModuleRule, "at">[]): BundleConfig {
    return {
      file: join(dir, "wrangler.json"),
      rules: rules.map((rule, i) => ({ ...rule, at: `rules[${i}]` })),
    };
  }

  it("gives the files a config's rules match as their type gives them, before wrangler's defaults", async () => {
    write("README.md", "# Shop\n");
    write("docs/terms.md", "terms\n");
    write("table.dat", new Uint8Array([7, 8]));
    write("note.txt", "note\n");
    write("add.wasm.bin", ADD_WASM);
    const entry = write(
      "worker.ts",
      `import readme from "./README.md";
       import terms from "./docs/terms.md";
       import table from "./table.dat";
       import note from "./note.txt";
       import add from "./add.wasm.bin";
       export default { readme, terms, table: [...new Uint8Array(table)], note, wasm: add instanceof WebAssembly.Module };`,
    );
    const config = withRules(
      { type: "Text", globs: ["**/*.md"], fallthrough: true },
      { type: "Data", globs: ["**/*.dat"], fallthrough: true },
      { type: "CompiledWasm", globs: ["**/*.wasm.bin"], fallthrough: true },
    );
    expect((await bundleWorker(entry, config)).instantiate(runtime).default).toEqual({
      readme: "# Shop\n",
      terms: "terms\n",
      table: [7, 8],
      note: "note\n",
      wasm: true,
    });
  });

  it("lets the first rule that matches decide, a config's before wrangler's defaults", async () => {
    write("note.txt", "ab");
    const entry = write("worker.ts", `import note from "./note.txt";\nexport default { note };`);
    const note = (
      (await bundleWorker(entry, withRules({ type: "Data", globs: ["**/*.txt"] }))).instantiate(runtime)
        .default as { note: unknown }
    ).note;
    expect(note).toBeInstanceOf(ArrayBuffer);
    expect([...new Uint8Array(note as ArrayBuffer)]).toEqual([97, 98]);
  });

  it("refuses an import only a rule wrangler drops matches: one of its type came first without fallthrough", async () => {
    write("README.md", "# Shop\n");
    write("page.html", "<p>hi</p>");
    const entry = write(
      "worker.ts",
      `import readme from "./README.md";\nimport page from "./page.html";\nexport default { readme, page };`,
    );
    const error = await inputError(() =>
      bundleWorker(entry, withRules({ type: "Text", globs: ["**/*.md"] })),
    );
    expect(error.file).toBe(`${entry}:2:18`);
    expect(error.problem).toBe(
      `./page.html matches wrangler's default Text rule, which wrangler drops, and so refuses the import: rules[0] (Text) of ${join(dir, "wrangler.json")} comes before it without fallthrough = true`,
    );
  });

  it("matches a rule's globs against the import as written, as wrangler does", async () => {
    write("docs/terms.md", "terms");
    const entry = write("worker.ts", `import terms from "./docs/terms.md";\nexport default { terms };`);
    // `docs/*.md` matches the specifier `docs/terms.md`, not `./docs/terms.md`.
    const error = await inputError(() =>
      bundleWorker(entry, withRules({ type: "Text", globs: ["docs/*.md"] })),
    );
    expect(error.problem).toMatch(/^No loader is configured for "\.md" files/);
    const matched = await bundleWorker(entry, withRules({ type: "Text", globs: ["./docs/*.md"] }));
    expect(matched.instantiate(runtime).default).toEqual({ terms: "terms" });
  });

  it('replaces process.env.NODE_ENV with "production", as wrangler\'s bundle does when it deploys', async () => {
    const entry = write("worker.ts", "export default { mode: process.env.NODE_ENV };");
    const compat = {
      file: join(dir, "wrangler.json"),
      compatibilityDate: "2025-09-01",
      compatibilityFlags: ["nodejs_compat"],
    };
    expect((await bundleWorker(entry)).instantiate(runtime).default).toEqual({ mode: "production" });
    expect((await bundleWorker(entry, compat)).instantiate(runtime).default).toEqual({ mode: "production" });
  });

  it("finds a Node global the Worker puts on the global object itself, as a polyfill's is on workerd", async () => {
    const entry = write(
      "worker.ts",
      `const host = globalThis.clearImmediate;
       let seen;
       try {
         globalThis.clearImmediate = function polyfill() {};
         seen = [typeof clearImmediate, clearImmediate.name];
         clearImmediate = function assigned() {};
         seen.push(globalThis.clearImmediate.name);
       } finally {
         globalThis.clearImmediate = host;
       }
       let after;
       try { after = clearImmediate.name; } catch (error) { after = String(error); }
       export default { seen, after };`,
    );
    expect((await bundleWorker(entry)).instantiate(runtime).default).toEqual({
      seen: ["function", "polyfill", "assigned"],
      after: "ReferenceError: clearImmediate is not defined",
    });
  });

  it("refuses an assignment to an absent Node global, as workerd refuses it in a module", async () => {
    const entry = write(
      "worker.ts",
      `let refused;
       try { Buffer = 1; } catch (error) { refused = String(error); }
       export default { refused, onGlobal: typeof globalThis.Buffer };`,
    );
    expect((await bundleWorker(entry)).instantiate(runtime).default).toEqual({
      refused: "ReferenceError: Buffer is not defined",
      onGlobal: "undefined",
    });
    // The host's own is untouched.
    expect(typeof globalThis.Buffer).toBe("function");
  });

  it("keeps the names of classes the bundle renames, as wrangler's keep_names does unless the config turns it off", async () => {
    write("errors.ts", `export class NotFound extends Error { name = this.constructor.name; }`);
    const entry = write(
      "worker.ts",
      `import { NotFound as Missing } from "./errors.ts";
       class NotFound extends Error { name = this.constructor.name; }
       export default { names: [new NotFound().name, new Missing().name] };`,
    );
    const file = join(dir, "wrangler.json");
    expect((await bundleWorker(entry)).instantiate(runtime).default).toEqual({
      names: ["NotFound", "NotFound"],
    });
    // Without it, esbuild's rename of the second class shows.
    expect((await bundleWorker(entry, { file, keepNames: false })).instantiate(runtime).default).toEqual({
      names: ["NotFound2", "NotFound"],
    });
  });

  it("reads the config's tsconfig for every file, its paths and decorators, as wrangler hands it to esbuild", async () => {
    write(
      "config/tsconfig.base.json",
      `{ "compilerOptions": { "experimentalDecorators": true, "useDefineForClassFields": false } }`,
    );
    write(
      "config/tsconfig.worker.json",
      `{ "extends": "./tsconfig.base.json", "compilerOptions": { "baseUrl": "..", "paths": { "~/*": ["src/*"], "#errors": ["src/errors.ts"] } } }`,
    );
    write("src/errors.ts", `export const kind = "errors";`);
    write(
      "src/routes.ts",
      `import { kind } from "#errors";
       export const seen: string[] = [kind];
       export function Route(path: string) {
         return (target: object, key: string) => { seen.push(\`\${path} \${target.constructor.name}.\${key}\`); };
       }`,
    );
    const entry = write(
      "src/worker.ts",
      `import { Route, seen } from "~/routes";
       class Hooks { @Route("/stripe") stripe() {} }
       export default { seen, hooks: new Hooks() };`,
    );
    const file = write("wrangler.json", `{ "name": "hooks", "tsconfig": "./config/tsconfig.worker.json" }`);
    const exports = (
      await bundleWorker(entry, { file, tsconfig: join(dir, "config/tsconfig.worker.json") })
    ).instantiate(runtime);
    expect((exports.default as { seen: string[] }).seen).toEqual(["errors", "/stripe Hooks.stripe"]);
    // Without it, esbuild finds no tsconfig beside the files, and `~/routes` is no path it knows.
    const error = await inputError(() => bundleWorker(entry, { file }));
    expect(error.problem).toBe('Could not resolve "~/routes"');
  });

  it("answers an import the config's alias names with what Node resolves from the config's folder, first", async () => {
    write("shims/clock.ts", `export const now = () => "shimmed";`);
    write("node_modules/clock/package.json", `{ "name": "clock", "main": "index.js" }`);
    write("node_modules/clock/index.js", `exports.now = () => "package";`);
    write("node_modules/tiny-jsx/package.json", `{ "name": "tiny-jsx", "main": "index.js" }`);
    write("node_modules/tiny-jsx/index.js", `exports.h = (tag) => tag;`);
    const entry = write(
      "src/worker.ts",
      `import { now } from "clock";
       import { now as pkg } from "clock/index.js";
       export default { now: now(), pkg: pkg() };`,
    );
    const file = join(dir, "wrangler.json");
    const alias = { clock: "./shims/clock.ts" };
    expect((await bundleWorker(entry, { file, alias })).instantiate(runtime).default).toEqual({
      now: "shimmed",
      // Only an import written as the key is replaced.
      pkg: "package",
    });
    const error = await inputError(() => bundleWorker(entry, { file, alias: { clock: "./shims/clock" } }));
    expect(error.problem).toBe(
      `alias["clock"] of ${file} is "./shims/clock", which cannot be resolved from ${dir} as wrangler resolves it (Node's resolution: a file by its whole name, such as "./src/clock.ts", or an installed package)`,
    );
  });

  it("compiles JSX in .js files, with the config's jsx_factory where no tsconfig names one", async () => {
    const entry = write(
      "worker.js",
      `const h = (tag, props, ...children) => ({ tag, children });
       export default { page: <p>hi</p> };`,
    );
    const file = join(dir, "wrangler.json");
    expect((await bundleWorker(entry, { file, jsxFactory: "h" })).instantiate(runtime).default).toEqual({
      page: { tag: "p", children: ["hi"] },
    });
  });

  it("reports a .wasm file that does not exist where the import names it", async () => {
    const entry = write(
      "worker.ts",
      `\nimport missing from "./missing.wasm?module";\nexport default { missing };`,
    );
    const error = await inputError(() => bundleWorker(entry));
    expect(error.file).toBe(`${entry}:2:21`);
    expect(error.problem).toBe('Could not resolve "./missing.wasm"');
  });

  it("reports a .wasm file that is not WebAssembly", async () => {
    const wasm = write("broken.wasm", "not wasm");
    const entry = write("worker.ts", `import broken from "./broken.wasm";\nexport default { broken };`);
    const error = await inputError(() => bundleWorker(entry));
    expect(error.file).toBe(wasm);
    expect(error.problem).toMatch(/^is not a WebAssembly module: /);
  });

  it("lets what the Worker throws at import propagate as it is", async () => {
    const entry = write("worker.ts", `throw new TypeError("boom");`);
    const worker = await bundleWorker(entry);
    expect(() => worker.instantiate(runtime)).toThrow(TypeError);
  });

  it("reports a syntax error at its file, line and column", async () => {
    write("lib/charge.ts", `export const fee = 1 +;\n`);
    const entry = write("worker.ts", `import { fee } from "./lib/charge.ts";\nexport default { fee };`);
    const error = await inputError(() => bundleWorker(entry));
    expect(error.file).toBe(join(dir, "lib/charge.ts:1:23"));
    expect(error.problem).toBe('Unexpected ";"');
  });

  it("reports an import that cannot be resolved", async () => {
    const entry = write("worker.ts", `\nimport "not-installed";`);
    const error = await inputError(() => bundleWorker(entry));
    expect(error.file).toBe(`${entry}:2:8`);
    expect(error.problem).toBe('Could not resolve "not-installed"');
  });

  it("reports a missing entry", async () => {
    const entry = join(dir, "missing.ts");
    expect((await inputError(() => bundleWorker(entry))).message).toBe(`${entry}: no such file`);
  });
});
