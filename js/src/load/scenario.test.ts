import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { InputError } from "../errors.ts";
import { loadScenario } from "./scenario.ts";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "eutaxy-scenario-"));
  // The two Workers of the service-binding example, as far as loading a scenario looks at them.
  write("worker.ts", "export default {};");
  write("wrangler.jsonc", `{ "name": "checkout" }`);
  write("payments/worker.ts", "export default {};");
  write("payments/wrangler.jsonc", `{ "name": "payments" }`);
  write("payments/schema.sql", "CREATE TABLE charges (order_id TEXT);");
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function write(name: string, text: string): string {
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

/** A scenario as plain data, untyped so that the tests can spoil it as a user's mistake would. */
// biome-ignore lint/suspicious/noExplicitAny: the tests write any field with any value.
type ScenarioData = Record<string, any>;

/** A valid scenario, for the tests to spoil one field at a time. */
function baseScenario(): ScenarioData {
  return {
    name: "checkout",
    worker: { entry: "./worker.ts" },
    setup: [
      { kind: "callee", binding: "PAYMENTS", entry: "./payments/worker.ts" },
      { kind: "d1Schema", db: "payments/DB", file: "./payments/schema.sql" },
    ],
    drive: { kind: "http", requests: [{ path: "/orders/o-1/pay", body: { amountCents: 1 } }], retries: 3 },
    invariants: [
      {
        kind: "unique",
        name: "one-charge-per-order",
        rows: { kind: "d1Rows", db: "payments/DB", table: "charges" },
        columns: ["order_id"],
      },
    ],
    bounds: { maxFaultsPerRun: 1, budgetMs: 2000 },
  };
}

describe("loadScenario", () => {
  it("loads a scenario written with eutaxy/cloudflare, its paths made absolute", async () => {
    const file = write(
      "checkout.sim.ts",
      `import { callee, d1Rows, d1Schema, defineScenario, http, service, unique } from "eutaxy/cloudflare";
       export default defineScenario({
         name: "checkout",
         seed: "s-1",
         worker: { entry: "./worker.ts", config: "./wrangler.jsonc" },
         setup: [
           callee("PAYMENTS", { entry: "./payments/worker.ts", config: "./payments/wrangler.jsonc" }),
           d1Schema("payments/DB", "./payments/schema.sql"),
           service("AUDIT", { log: async (line: string) => line.length }),
         ],
         drive: http([{ path: "/orders/o-1/pay", body: { amountCents: 2500 }, headers: { "x-a": "1" } }], { retries: 3 }),
         invariants: [unique("one-charge-per-order", d1Rows("payments/DB", "charges"), "order_id")],
         bounds: { maxFaultsPerRun: 1, maxRedeliveries: 3, maxConcurrentInvocations: 1, budgetMs: 2000 },
       });`,
    );
    const { file: loaded, scenario } = await loadScenario(file);
    expect(loaded).toBe(file);
    expect(scenario).toMatchObject({
      name: "checkout",
      seed: "s-1",
      worker: { entry: join(dir, "worker.ts"), config: join(dir, "wrangler.jsonc") },
      setup: [
        {
          kind: "callee",
          binding: "PAYMENTS",
          entry: join(dir, "payments/worker.ts"),
          config: join(dir, "payments/wrangler.jsonc"),
        },
        { kind: "d1Schema", db: "payments/DB", file: join(dir, "payments/schema.sql") },
        { kind: "service", binding: "AUDIT" },
      ],
      drive: {
        kind: "http",
        requests: [{ path: "/orders/o-1/pay", body: { amountCents: 2500 }, headers: { "x-a": "1" } }],
        retries: 3,
      },
      invariants: [
        {
          kind: "unique",
          name: "one-charge-per-order",
          rows: { kind: "d1Rows", db: "payments/DB", table: "charges" },
          columns: ["order_id"],
        },
      ],
      bounds: { maxFaultsPerRun: 1, maxRedeliveries: 3, maxConcurrentInvocations: 1, budgetMs: 2000 },
    });
    const audit = scenario.setup?.[2];
    expect(audit?.kind === "service" && (await audit.handlers.log?.(...(["abc"] as never[])))).toBe(3);
  });

  it("takes an answered status as a class, a code, or a code written as a number", async () => {
    const file = write(
      "answers.sim.ts",
      `import { answered, defineScenario, http } from "eutaxy/cloudflare";
       export default defineScenario({
         name: "answers",
         worker: { entry: "./worker.ts", config: "./wrangler.jsonc" },
         drive: http([{ path: "/" }]),
         invariants: [answered("any-2xx"), answered("created", { status: "201" }), answered("declined", { status: 402 })],
       });`,
    );
    const { scenario } = await loadScenario(file);
    expect(scenario.invariants.map((i) => (i.kind === "answered" ? i.status : undefined))).toEqual([
      "2xx",
      "201",
      "402",
    ]);
  });

  it("finds the wrangler config beside an entry when the scenario names none", async () => {
    const file = write("checkout.sim.ts", `export default ${JSON.stringify(baseScenario())};`);
    const { scenario } = await loadScenario(file);
    expect(scenario.worker.config).toBe(join(dir, "wrangler.jsonc"));
    expect(scenario.setup?.[0]).toMatchObject({ config: join(dir, "payments/wrangler.jsonc") });
  });

  it("finds the wrangler config in a folder above the entry, as wrangler does", async () => {
    write("src/index.ts", "export default {};");
    write("payments/src/index.ts", "export default {};");
    const scenario = baseScenario();
    scenario.worker.entry = "./src/index.ts";
    scenario.setup[0].entry = "./payments/src/index.ts";
    const file = write("checkout.sim.ts", `export default ${JSON.stringify(scenario)};`);
    const loaded = (await loadScenario(file)).scenario;
    expect(loaded.worker).toEqual({ entry: join(dir, "src/index.ts"), config: join(dir, "wrangler.jsonc") });
    expect(loaded.setup?.[0]).toMatchObject({
      entry: join(dir, "payments/src/index.ts"),
      config: join(dir, "payments/wrangler.jsonc"),
    });
  });

  it("takes the entry from the config's main when the scenario names none", async () => {
    write("wrangler.jsonc", `{ "name": "checkout", "main": "src/index.ts" }`);
    write("src/index.ts", "export default {};");
    write("payments/wrangler.toml", `name = "payments"\nmain = "./worker.ts"`);
    write("notifier/wrangler.json", `{ "name": "notifier", "main": "index.ts" }`);
    write("notifier/index.ts", "export default {};");
    const file = write(
      "checkout.sim.ts",
      `import { callee, consumer, defineScenario, http, invariant } from "eutaxy/cloudflare";
       export default defineScenario({
         name: "checkout",
         worker: { config: "./wrangler.jsonc" },
         setup: [callee("PAYMENTS", { config: "./payments/wrangler.toml" }), consumer({ config: "./notifier/wrangler.json" })],
         drive: http([{ path: "/" }]),
         invariants: [invariant("always", () => true)],
       });`,
    );
    const { scenario } = await loadScenario(file);
    expect(scenario.worker).toEqual({
      entry: join(dir, "src/index.ts"),
      config: join(dir, "wrangler.jsonc"),
    });
    expect(scenario.setup).toEqual([
      {
        kind: "callee",
        binding: "PAYMENTS",
        entry: join(dir, "payments/worker.ts"),
        config: join(dir, "payments/wrangler.toml"),
      },
      {
        kind: "consumer",
        entry: join(dir, "notifier/index.ts"),
        config: join(dir, "notifier/wrangler.json"),
      },
    ]);
  });

  it("says a config's main or a worker's entry that is a folder is one, with the modules in it", async () => {
    write("wrangler.jsonc", `{ "name": "checkout", "main": "src" }`);
    write("src/index.ts", "export default {};");
    const configured = { ...baseScenario(), worker: { config: "./wrangler.jsonc" } };
    const byConfig = await inputError(() =>
      loadScenario(write("bad.sim.ts", `export default ${JSON.stringify(configured)};`)),
    );
    expect(byConfig.problem).toBe(
      `main points at src, which is a folder, not a module (${join(dir, "src")}/ has index.ts); the scenario's worker.config names this config and no entry, so the Worker's entry is its main`,
    );
    const entered = { ...baseScenario(), worker: { entry: "./src" } };
    const byEntry = await inputError(() =>
      loadScenario(write("bad.sim.ts", `export default ${JSON.stringify(entered)};`)),
    );
    expect(byEntry.problem).toBe(
      `worker.entry: ./src is a folder, not a file (${join(dir, "src")}/ has index.ts)`,
    );
  });

  it("reports a config's main that does not exist as the config's mistake, when the scenario names no entry", async () => {
    write("wrangler.jsonc", `{ "name": "checkout", "main": "src/main.ts" }`);
    write("src/index.ts", "export default {};");
    write("src/types.d.ts", "");
    const scenario = { ...baseScenario(), worker: { config: "./wrangler.jsonc" } };
    const path = write("bad.sim.ts", `export default ${JSON.stringify(scenario)};`);
    const error = await inputError(() => loadScenario(path));
    expect(error.file).toBe(join(dir, "wrangler.jsonc"));
    expect(error.problem).toBe(
      `main points at src/main.ts, which does not exist (${join(dir, "src")}/ has index.ts); the scenario's worker.config names this config and no entry, so the Worker's entry is its main`,
    );
  });

  it("says the config's build.command makes a main that does not exist yet, which eutaxy does not run", async () => {
    write("wrangler.toml", `name = "built"\nmain = "dist/index.js"\n\n[build]\ncommand = "npm run build"\n`);
    const scenario = { ...baseScenario(), worker: { config: "./wrangler.toml" } };
    const error = await inputError(() =>
      loadScenario(write("bad.sim.ts", `export default ${JSON.stringify(scenario)};`)),
    );
    expect(error.problem).toBe(
      "main points at dist/index.js, which does not exist: its build.command (npm run build) makes it, which wrangler runs before it bundles and eutaxy does not, so run it first; the scenario's worker.config names this config and no entry, so the Worker's entry is its main",
    );
  });

  it("takes a Worker's environment, and the entry from that environment's main", async () => {
    write(
      "wrangler.jsonc",
      `{ "name": "checkout", "main": "src/index.ts", "env": { "canary": { "main": "src/canary.ts" } } }`,
    );
    write("src/canary.ts", "export default {};");
    const scenario = baseScenario();
    scenario.worker = { config: "./wrangler.jsonc", env: "canary" };
    scenario.setup[0].env = "staging";
    const file = write("checkout.sim.ts", `export default ${JSON.stringify(scenario)};`);
    const loaded = (await loadScenario(file)).scenario;
    expect(loaded.worker).toEqual({
      entry: join(dir, "src/canary.ts"),
      config: join(dir, "wrangler.jsonc"),
      env: "canary",
    });
    expect(loaded.setup?.[0]).toEqual({
      kind: "callee",
      binding: "PAYMENTS",
      entry: join(dir, "payments/worker.ts"),
      config: join(dir, "payments/wrangler.jsonc"),
      env: "staging",
    });
  });

  it("reports an environment of a Worker that has no config, or one its config lacks", async () => {
    const scenario = { ...baseScenario(), worker: { config: "./wrangler.jsonc", env: "canary" } };
    const lacking = write("lacking.sim.ts", `export default ${JSON.stringify(scenario)};`);
    const error = await inputError(() => loadScenario(lacking));
    expect(error.file).toBe(join(dir, "wrangler.jsonc"));
    expect(error.problem).toBe("has no environment canary (env.canary); it has none");
    rmSync(join(dir, "wrangler.jsonc"));
    const configless = write(
      "configless.sim.ts",
      `export default ${JSON.stringify({ ...baseScenario(), worker: { entry: "./worker.ts", env: "canary" } })};`,
    );
    expect((await inputError(() => loadScenario(configless))).problem).toBe(
      "worker.env: no wrangler config to take environment canary from (none beside ./worker.ts or in a folder above)",
    );
  });

  it("takes a folder of D1 migrations for a schema", async () => {
    write("payments/migrations/0001_init.sql", "CREATE TABLE charges (order_id TEXT);");
    const scenario = baseScenario();
    scenario.setup[1].file = "./payments/migrations";
    const file = write("checkout.sim.ts", `export default ${JSON.stringify(scenario)};`);
    expect((await loadScenario(file)).scenario.setup?.[1]).toEqual({
      kind: "d1Schema",
      db: "payments/DB",
      file: join(dir, "payments/migrations"),
    });
  });

  it("bundles the packages the scenario imports, CommonJS ones included", async () => {
    write("node_modules/paths/package.json", JSON.stringify({ name: "paths", main: "index.js" }));
    write("node_modules/paths/index.js", `exports.entry = require("node:path").join(".", "worker.ts");`);
    const file = write(
      "checkout.sim.ts",
      `import { entry } from "paths";
       const scenario = ${JSON.stringify(baseScenario())};
       export default { ...scenario, worker: { entry } };`,
    );
    expect((await loadScenario(file)).scenario.worker.entry).toBe(join(dir, "worker.ts"));
  });

  it("gives each of the scenario's modules its own import.meta, so a shared helper names its own files", async () => {
    // A helper in another folder, as a workspace keeps its scenarios' common setup.
    write("shared/schema.sql", "CREATE TABLE charges (order_id TEXT);");
    write(
      "shared/setup.ts",
      `import { fileURLToPath } from "node:url";
       export const schema = fileURLToPath(new URL("./schema.sql", import.meta.url));
       export const folder = import.meta.dirname;
       export const self = import.meta.filename;`,
    );
    const scenario = baseScenario();
    const file = write(
      "sims/checkout.sim.ts",
      `import { folder, schema, self } from "../shared/setup.ts";
       const scenario = ${JSON.stringify(scenario)};
       scenario.worker.entry = "../worker.ts";
       scenario.setup[0].entry = "../payments/worker.ts";
       scenario.setup[1].file = schema;
       scenario.name = [folder, self, import.meta.url].join(" ");
       export default scenario;`,
    );
    const loaded = (await loadScenario(file)).scenario;
    expect(loaded.setup?.[1]).toMatchObject({ file: join(dir, "shared/schema.sql") });
    expect(loaded.name).toBe(
      `${join(dir, "shared")} ${join(dir, "shared/setup.ts")} ${pathToFileURL(file).href}`,
    );
  });

  it("reports a missing scenario file", async () => {
    const path = join(dir, "none.sim.ts");
    expect((await inputError(() => loadScenario(path))).message).toBe(`${path}: no such file`);
  });

  it.each([["export default 42;"], ["export const scenario = {};"]])(
    "reports a default export that is not a scenario: %s",
    async (text) => {
      const path = write("bad.sim.ts", text);
      expect((await inputError(() => loadScenario(path))).problem).toBe(
        "the default export is not a scenario: export default defineScenario({...})",
      );
    },
  );

  it("reports a folder as one, with the scenarios in it", async () => {
    write("scenarios/a.sim.ts", "export default {};");
    write("scenarios/b.sim.ts", "export default {};");
    write("scenarios/notes.md", "");
    const folder = join(dir, "scenarios");
    expect((await inputError(() => loadScenario(folder))).problem).toBe(
      `is a folder, not a scenario: a scenario is one *.sim.ts file, such as ${folder}/a.sim.ts, ${folder}/b.sim.ts in this folder`,
    );
    for (const name of ["c", "d", "e"]) write(`scenarios/${name}.sim.ts`, "export default {};");
    expect((await inputError(() => loadScenario(folder))).problem).toMatch(
      /c\.sim\.ts and 2 more in this folder$/,
    );
    mkdirSync(join(dir, "empty"));
    expect((await inputError(() => loadScenario(join(dir, "empty")))).problem).toBe(
      "is a folder, not a scenario: a scenario is one *.sim.ts file, and this folder has none",
    );
  });

  it("reports a wrangler config or another file that is no module as not a scenario", async () => {
    expect((await inputError(() => loadScenario(join(dir, "wrangler.jsonc")))).problem).toBe(
      'is a wrangler config, not a scenario: a scenario is a *.sim.ts file whose default export is defineScenario({...}), which names this config in worker: { config: "./wrangler.jsonc" }',
    );
    expect((await inputError(() => loadScenario(join(dir, "payments/schema.sql")))).problem).toBe(
      "is not a scenario: a scenario is a *.sim.ts file whose default export is defineScenario({...}) (a TypeScript or JavaScript module)",
    );
  });

  it("reports a Worker's module given as the scenario, by what only a Worker imports", async () => {
    write(
      "src/lock.ts",
      `import { DurableObject } from "cloudflare:workers";\nexport class Lock extends DurableObject {}`,
    );
    const entry = write(
      "src/index.ts",
      `export { Lock } from "./lock";\nexport default { fetch: () => new Response("ok") };`,
    );
    const error = await inputError(() => loadScenario(entry));
    expect(error.file).toBe(entry);
    expect(error.problem).toBe(
      `is a Worker's module, not a scenario: it imports cloudflare:workers (through ${join(dir, "src/lock.ts")}); a scenario is a *.sim.ts file whose default export is defineScenario({...}), which names the Worker in worker: { entry }`,
    );
  });

  it("reports a Worker's module given as the scenario, by its handlers", async () => {
    const entry = write("src/index.ts", "export default { fetch() {}, queue() {} };");
    expect((await inputError(() => loadScenario(entry))).problem).toBe(
      "is a Worker's module, not a scenario: its default export has fetch and queue handlers; a scenario is a *.sim.ts file whose default export is defineScenario({...}), which names the Worker in worker: { entry }",
    );
  });

  it("reports a scenario that imports a Worker's module, which only the Workers runtime can load", async () => {
    write(
      "src/lock.ts",
      `import { DurableObject } from "cloudflare:workers";\nexport class Lock extends DurableObject {}\nexport const TTL = 5;`,
    );
    const path = write(
      "lock.sim.ts",
      `import { TTL } from "./src/lock";\nexport default { name: String(TTL) };`,
    );
    expect((await inputError(() => loadScenario(path))).problem).toBe(
      `imports cloudflare:workers (through ${join(dir, "src/lock.ts")}), which only a Worker's code can: a scenario runs outside the Workers' runtime, so it names a Worker's modules (worker: { entry }) instead of importing them`,
    );
  });

  it("reports a scenario that throws while it is loaded", async () => {
    const path = write("bad.sim.ts", `throw new Error("no fixtures");`);
    expect((await inputError(() => loadScenario(path))).message).toBe(
      `${path}: threw while loading: no fixtures`,
    );
  });

  it("reports a syntax error at its line and column", async () => {
    const path = write("bad.sim.ts", `\nexport default {;`);
    const error = await inputError(() => loadScenario(path));
    expect(error.file).toBe(`${path}:2:17`);
  });

  it.each<[string, (scenario: ScenarioData) => void, string]>([
    ["no name", (s) => delete s.name, "the scenario needs a name"],
    ["an empty name", (s) => (s.name = ""), "name must be a non-empty string"],
    ["a seed that is a number", (s) => (s.seed = 3), "seed must be a non-empty string"],
    [
      "a misspelt field",
      (s) => (s.bound = {}),
      "unknown field bound (expected name, seed, worker, setup, drive, invariants or bounds)",
    ],
    ["no worker", (s) => delete s.worker, "the scenario needs a worker"],
    [
      "a worker without entry",
      (s) => (s.worker = {}),
      "worker needs an entry or a config (whose main is the entry)",
    ],
    [
      "a worker without entry whose config has no main",
      (s) => (s.worker = { config: "./wrangler.jsonc" }),
      "worker needs an entry: its config ./wrangler.jsonc has no main",
    ],
    [
      "a callee without entry whose config has no main",
      (s) => (s.setup[0] = { kind: "callee", binding: "PAYMENTS", config: "./payments/wrangler.jsonc" }),
      "setup[0]: callee needs an entry: its config ./payments/wrangler.jsonc has no main",
    ],
    ["a worker env that is not a string", (s) => (s.worker.env = 1), "worker.env must be a non-empty string"],
    [
      "a consumer of a misspelt field",
      (s) => (s.setup[0] = { kind: "consumer", entry: "./worker.ts", environment: "staging" }),
      "setup[0]: unknown field environment (expected kind, entry, config or env)",
    ],
    [
      "a worker entry that does not exist",
      (s) => (s.worker.entry = "./nope.ts"),
      `worker.entry: no such file ./nope.ts (resolved to ${join("DIR", "nope.ts")})`,
    ],
    [
      "a worker config that does not exist",
      (s) => (s.worker.config = "w.toml"),
      "worker.config: no such file w.toml",
    ],
    ["setup that is not an array", (s) => (s.setup = {}), "setup must be an array"],
    ["a setup step of no kind", (s) => (s.setup[0] = {}), "setup[0] needs a kind"],
    [
      "a setup step of unknown kind",
      (s) => (s.setup[0].kind = "queue"),
      'setup[0]: unknown kind "queue" (expected callee, consumer, service, d1Schema, kvEntries, r2Objects, outbound or secrets)',
    ],
    ["a d1Schema without file", (s) => delete s.setup[1].file, "setup[1]: d1Schema needs a file"],
    [
      "a d1Schema file that does not exist",
      (s) => (s.setup[1].file = "./schema.sql"),
      `setup[1].file: no such file or folder ./schema.sql (resolved to ${join("DIR", "schema.sql")})`,
    ],
    ["a d1Schema without db", (s) => (s.setup[1].db = 1), "setup[1].db must be a non-empty string"],
    ["a callee without binding", (s) => delete s.setup[0].binding, "setup[0]: callee needs a binding"],
    [
      "one binding set up twice",
      (s) => s.setup.push(s.setup[0]),
      "setup[2]: binding PAYMENTS is already set up by setup[0]",
    ],
    [
      "a service without handlers",
      (s) => (s.setup[0] = { kind: "service", binding: "P" }),
      "setup[0]: service needs handlers",
    ],
    [
      "a service handler that is not a function",
      (s) => (s.setup[0] = { kind: "service", binding: "P", handlers: { charge: 1 } }),
      "setup[0].handlers.charge must be a function",
    ],
    ["no drive", (s) => delete s.drive, "the scenario needs a drive"],
    [
      "a drive of unknown kind",
      (s) => (s.drive.kind = "ws"),
      'drive: unknown kind "ws" (expected http, queue or cron)',
    ],
    ["no requests", (s) => (s.drive.requests = []), "drive.requests must not be empty"],
    [
      "a request that is not an object",
      (s) => (s.drive.requests = ["/"]),
      "drive.requests[0] must be an object",
    ],
    [
      "a relative request path",
      (s) => (s.drive.requests[0].path = "orders"),
      'drive.requests[0].path must start with "/"',
    ],
    [
      "an empty method",
      (s) => (s.drive.requests[0].method = ""),
      "drive.requests[0].method must be a non-empty string",
    ],
    [
      "a header that is not a string",
      (s) => (s.drive.requests[0].headers = { a: 1 }),
      "drive.requests[0].headers.a must be a string",
    ],
    [
      "a method that is not one",
      (s) => (s.drive.requests[0].method = "PO ST"),
      "drive.requests[0]: 'PO ST' is not a valid HTTP method.",
    ],
    [
      "a GET with a body",
      (s) => Object.assign(s.drive.requests[0], { method: "GET", body: { a: 1 } }),
      "drive.requests[0]: Request with GET/HEAD method cannot have body.",
    ],
    [
      "a header value over two lines",
      (s) => (s.drive.requests[0].headers = { "x-note": "a\nb" }),
      'drive.requests[0]: Headers.append: "a\\nb" is an invalid header value.',
    ],

    [
      "a request sent at a negative time",
      (s) => (s.drive.requests[0].atMs = -1),
      "drive.requests[0].atMs must be a non-negative integer",
    ],
    [
      "a request sent before the one ahead of it",
      (s) => (s.drive.requests = [{ path: "/a", atMs: 500 }, { path: "/b" }, { path: "/c", atMs: 100 }]),
      "drive.requests[2].atMs is 100, before an earlier request's 500: the client sends its requests in order",
    ],
    [
      "a request sent after ten years",
      (s) => (s.drive.requests[0].atMs = 4e11),
      "drive.requests[0].atMs is 400000000000: at most 315360000000 (ten years)",
    ],
    ["negative retries", (s) => (s.drive.retries = -1), "drive.retries must be a non-negative integer"],
    ["fractional retries", (s) => (s.drive.retries = 1.5), "drive.retries must be a non-negative integer"],
    [
      "a status to resend on written as text",
      (s) => (s.drive.resendOn = ["5xx", "503"]),
      'drive.resendOn[1] must be a status from 400 to 599, "4xx" or "5xx"',
    ],
    ["no invariants", (s) => delete s.invariants, "the scenario needs invariants"],
    [
      "an empty list of invariants",
      (s) => (s.invariants = []),
      "invariants must not be empty: a check needs at least one invariant",
    ],
    [
      "an invariant of unknown kind",
      (s) => (s.invariants[0].kind = "sum"),
      'invariants[0]: unknown kind "sum" (expected unique, query, conserved, custom or answered)',
    ],
    ["an invariant without name", (s) => delete s.invariants[0].name, "invariants[0] needs a name"],
    [
      "rows of unknown kind",
      (s) => (s.invariants[0].rows.kind = "kv"),
      'invariants[0].rows: unknown kind "kv" (expected d1Rows)',
    ],
    ["rows without table", (s) => delete s.invariants[0].rows.table, "invariants[0].rows needs a table"],
    [
      "no columns",
      (s) => (s.invariants[0].columns = []),
      "invariants[0].columns must be a non-empty array of column names",
    ],
    [
      "a column that is not a string",
      (s) => (s.invariants[0].columns = [1]),
      "invariants[0].columns must be a non-empty array of column names",
    ],
    [
      "two invariants of one name",
      (s) => s.invariants.push(s.invariants[0]),
      "invariants[1]: the name one-charge-per-order is taken by invariants[0]",
    ],
    ["bounds that are not an object", (s) => (s.bounds = 3), "bounds must be an object"],
    [
      "an unknown bound",
      (s) => (s.bounds.maxRuns = 3),
      "bounds: unknown field maxRuns (expected maxFaultsPerRun, maxRedeliveries, maxConcurrentInvocations or budgetMs)",
    ],
    [
      "a negative bound",
      (s) => (s.bounds.maxRedeliveries = -1),
      "bounds.maxRedeliveries must be a non-negative integer",
    ],
    ["a zero budget", (s) => (s.bounds.budgetMs = 0), "bounds.budgetMs must be a positive integer"],
    [
      "17 faults per run",
      (s) => (s.bounds.maxFaultsPerRun = 17),
      "bounds.maxFaultsPerRun must be at most 16",
    ],
    ["65 redeliveries", (s) => (s.bounds.maxRedeliveries = 65), "bounds.maxRedeliveries must be at most 64"],
    [
      "a budget past 2^53",
      (s) => (s.bounds.budgetMs = 1e20),
      "bounds.budgetMs must be at most 9007199254740991",
    ],
  ])("reports %s", async (_, spoil, problem) => {
    const scenario = baseScenario();
    spoil(scenario);
    const path = write("bad.sim.ts", `export default ${JSON.stringify(scenario)};`);
    const error = await inputError(() => loadScenario(path));
    expect(error.file).toBe(path);
    expect(error.problem.replace(dir, "DIR")).toContain(problem);
  });

  it.each([
    [
      "{ amount: 10n }",
      "drive.requests[0].body cannot be sent as JSON: Do not know how to serialize a BigInt",
    ],
    ["() => 'hi'", "drive.requests[0].body is a function, which JSON cannot carry"],
  ])("reports a request body JSON cannot carry: %s", async (body, problem) => {
    const path = write(
      "bad.sim.ts",
      `const s = ${JSON.stringify(baseScenario())};\ns.drive.requests[0].body = ${body};\nexport default s;`,
    );
    const error = await inputError(() => loadScenario(path));
    expect(error.file).toBe(path);
    expect(error.problem).toBe(problem);
  });

  it("names a service handler's field when it is not a function", async () => {
    const path = write(
      "bad.sim.ts",
      `const s = ${JSON.stringify(baseScenario())};
       export default { ...s, setup: [{ kind: "service", binding: "P", handlers: { fetch: () => new Response(), charge: "x" } }] };`,
    );
    expect((await inputError(() => loadScenario(path))).problem).toBe(
      "setup[0].handlers.charge must be a function",
    );
  });
});
