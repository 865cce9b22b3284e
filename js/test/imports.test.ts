/**
 * What a Worker imports, checked with its code running in Node and inside workerd: a dynamic
 * `import()` of the runtime's modules gets what a static import gets, refusals included;
 * `cloudflare:sockets` loads, and `connect()` ends the check; wrangler's default module rules
 * give `.html`, `.sql` and `.txt` files as text, `.bin` files as ArrayBuffers and `.wasm` files
 * as WebAssembly modules, and a config's own `rules` give the files they match as their types.
 */

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { check, InputError } from "../src/index.ts";
import { tempFolder } from "./files.ts";
import { ADD_WASM } from "./wasm.ts";

const runtimes = ["node", "workerd"] as const;

/**
 * A folder with `files` beside a Worker whose fetch handler is `body`, after `imports`, and a
 * scenario that sends it one request and holds when the answer is 200 with `expected` as its body.
 */
function scenario(
  options: { imports?: string; body: string; expected?: string; rules?: unknown[] },
  files: Record<string, string | Uint8Array> = {},
): string {
  const dir = tempFolder("eutaxy-imports-");
  for (const [name, contents] of Object.entries(files)) writeFileSync(join(dir, name), contents);
  writeFileSync(
    join(dir, "wrangler.jsonc"),
    JSON.stringify({
      name: "w",
      main: "worker.ts",
      compatibility_date: "2025-09-01",
      compatibility_flags: ["nodejs_compat"],
      ...(options.rules ? { rules: options.rules } : {}),
    }),
  );
  writeFileSync(
    join(dir, "worker.ts"),
    `${options.imports ?? ""}\nexport default { async fetch(): Promise<Response> { ${options.body} } };`,
  );
  const file = join(dir, "s.sim.ts");
  writeFileSync(
    file,
    `import { defineScenario, http, invariant } from "eutaxy/cloudflare";
     export default defineScenario({
       name: "imports",
       worker: { entry: "./worker.ts", config: "./wrangler.jsonc" },
       drive: http([{ path: "/" }], { retries: 0 }),
       invariants: [
         invariant("answered", (s) => {
           const answer = s.responses[0];
           return (answer?.status === 200 && answer.body === ${JSON.stringify(options.expected ?? "ok")}) ||
             \`answered \${answer?.status}: \${answer?.body}\`;
         }),
       ],
       bounds: { maxFaultsPerRun: 0 },
     });`,
  );
  return file;
}

async function failure(file: string, runtime: (typeof runtimes)[number]): Promise<Error> {
  return check(file, { runtime }).then(
    (result) => new Error(`expected an error, got ${result.verdict}`),
    (error: unknown) => error as Error,
  );
}

describe.each(runtimes)("with --runtime %s, a Worker", (runtime) => {
  it("dynamically imports node:crypto, cloudflare:workers and its own files", async () => {
    const file = scenario(
      {
        body: `const { createHash } = await import("node:crypto");
               const { WorkerEntrypoint } = await import("cloudflare:workers");
               const { double } = await import("./double.ts");
               const hash = createHash("sha256").update("hi").digest("hex").slice(0, 8);
               return new Response([hash, WorkerEntrypoint.name, double(21)].join(" "));`,
        expected: "8f434346 WorkerEntrypoint 42",
      },
      { "double.ts": "export const double = (n: number): number => 2 * n;" },
    );
    expect(await check(file, { runtime })).toMatchObject({ verdict: "BOUNDED" });
  });

  it("that imports node:fs, statically or dynamically, is refused alike", async () => {
    const dynamic = await failure(
      scenario({ body: 'try { await import("node:fs"); } catch {} return new Response("ok");' }),
      runtime,
    );
    const staticImport = await failure(
      scenario({
        imports: 'import { readFileSync } from "node:fs";',
        body: "return new Response(typeof readFileSync);",
      }),
      runtime,
    );
    expect(dynamic).toBeInstanceOf(InputError);
    expect((dynamic as InputError).problem).toMatch(
      /^imports node:fs, which would reach the machine eutaxy runs on/,
    );
    expect((dynamic as InputError).problem).toBe((staticImport as InputError).problem);
  });

  it("finds a node: module whose name it computes", async () => {
    const file = scenario({
      body: `const { createHash } = await import(["node", "crypto"].join(":"));
             return new Response(createHash("sha256").update("hi").digest("hex").slice(0, 8));`,
      expected: "8f434346",
    });
    expect(await check(file, { runtime })).toMatchObject({ verdict: "BOUNDED" });
  });

  it("that imports cloudflare:sockets and never connects is checked", async () => {
    const file = scenario({
      imports: 'import { connect } from "cloudflare:sockets";',
      body: 'return new Response(typeof connect === "function" ? "ok" : "no connect");',
    });
    expect(await check(file, { runtime })).toMatchObject({ verdict: "BOUNDED" });
  });

  it("that connects stops the check, even when it catches the error", async () => {
    const file = scenario({
      imports: 'import { connect } from "cloudflare:sockets";',
      body: 'try { connect("db.example.com:5432"); } catch {} return new Response("ok");',
    });
    const error = await failure(file, runtime);
    // As an unsupported binding: bad input naming the Worker.
    expect(error).toBeInstanceOf(InputError);
    expect(error.message).toMatch(
      /worker\.ts: Worker \S+ used sockets \(connect\(\) from cloudflare:sockets\), which eutaxy does not simulate yet; the check cannot go on without it$/,
    );
  });

  it("that dynamically imports a module eutaxy does not provide stops the check, even when it catches the error", async () => {
    const file = scenario({
      body: 'try { await import("cloudflare:email"); } catch {} return new Response("ok");',
    });
    const error = await failure(file, runtime);
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).problem).toBe("imports cloudflare:email, which eutaxy does not provide");
  });

  it("imports .html, .sql, .txt, .bin and .wasm files as wrangler's default module rules give them", async () => {
    const file = scenario(
      {
        imports: `import page from "./page.html";
                  import query from "./query.sql";
                  import note from "./note.txt";
                  import table from "./table.bin";
                  import add from "./add.wasm";
                  import addModule from "./add.wasm?module";`,
        body: `const { exports } = await WebAssembly.instantiate(add);
               const data = table instanceof ArrayBuffer ? [...new Uint8Array(table)].join(",") : typeof table;
               const wasm = add === addModule ? exports.add(2, 3) : "two modules";
               return new Response([page, query, note, data, wasm].join(" "));`,
        expected: "<p>hi</p> SELECT 1; note 1,2,250 5",
      },
      {
        "page.html": "<p>hi</p>",
        "query.sql": "SELECT 1;",
        "note.txt": "note",
        "table.bin": new Uint8Array([1, 2, 250]),
        "add.wasm": ADD_WASM,
      },
    );
    expect(await check(file, { runtime })).toMatchObject({ verdict: "BOUNDED" });
  });

  it("imports the files its config's module rules match as their types give them", async () => {
    const file = scenario(
      {
        imports: `import readme from "./README.md";
                  import table from "./table.dat";
                  import add from "./add.wasm.bin";
                  import note from "./note.txt";`,
        body: `const { exports } = await WebAssembly.instantiate(add);
               const data = table instanceof ArrayBuffer ? [...new Uint8Array(table)].join(",") : typeof table;
               return new Response([readme, data, exports.add(2, 3), note].join(" "));`,
        expected: "# Shop 1,2,250 5 note",
        rules: [
          { type: "Text", globs: ["**/*.md"], fallthrough: true },
          { type: "Data", globs: ["**/*.dat"] },
          { type: "CompiledWasm", globs: ["**/*.wasm.bin"], fallthrough: true },
        ],
      },
      {
        "README.md": "# Shop",
        "table.dat": new Uint8Array([1, 2, 250]),
        "add.wasm.bin": ADD_WASM,
        "note.txt": "note",
      },
    );
    expect(await check(file, { runtime })).toMatchObject({ verdict: "BOUNDED" });
  });
});
