/**
 * Mistakes in a scenario or in what a Worker reaches for, found by writing Workers against
 * eutaxy: each stops the check with a message saying what and where, never a verdict built on
 * it. A custom invariant that reads a binding the scenario lacks, runs SQL that does not
 * parse, or returns a Promise is the scenario's mistake (bad input); a Worker importing
 * `node:fs` would reach this machine (bad input); one using a runtime API eutaxy does not
 * simulate (`caches.default`) stops the check rather than answering 500 and hiding the rest.
 */

import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { SimulationError } from "../src/errors.ts";
import { type CheckResult, check, InputError, renderReport } from "../src/index.ts";
import { project, tempFolder } from "./files.ts";

/**
 * A folder with a one-route Worker whose fetch body is `body`, and a scenario with `invariant`;
 * `config` adds fields to the Worker's wrangler config.
 */
function scenario(
  body: string,
  invariant: string,
  imports = "",
  config: Record<string, unknown> = {},
): string {
  const dir = tempFolder("eutaxy-mistakes-");
  writeFileSync(
    join(dir, "wrangler.jsonc"),
    JSON.stringify({
      name: "w",
      main: "worker.ts",
      compatibility_date: "2025-09-01",
      compatibility_flags: ["nodejs_compat"],
      d1_databases: [{ binding: "DB", database_name: "db" }],
      ...config,
    }),
  );
  writeFileSync(join(dir, "schema.sql"), "CREATE TABLE t (v INTEGER);");
  writeFileSync(
    join(dir, "worker.ts"),
    `${imports}\nexport default { async fetch(request: Request, env: { DB: D1Database }): Promise<Response> { ${body} } };`,
  );
  const file = join(dir, "s.sim.ts");
  writeFileSync(
    file,
    `import { d1Schema, defineScenario, http, invariant } from "eutaxy/cloudflare";
     export default defineScenario({
       name: "mistakes",
       worker: { entry: "./worker.ts", config: "./wrangler.jsonc" },
       setup: [d1Schema("DB", "./schema.sql")],
       drive: http([{ path: "/" }]),
       invariants: [invariant("i", ${invariant})],
       bounds: { maxFaultsPerRun: 0 },
     });`,
  );
  return file;
}

const ok = 'return new Response("ok");';

async function failure(file: string): Promise<unknown> {
  try {
    const result = await check(file);
    return result;
  } catch (error) {
    return error;
  }
}

describe("a scenario's mistakes in a custom invariant", () => {
  it("reading a binding the scenario does not have", async () => {
    const error = await failure(
      scenario(ok, '(s) => s.durableObjectStorage("ROOMS", "a", "k") === undefined'),
    );
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).problem).toMatch(
      /^invariant i: it reads Durable Object binding ROOMS, which the scenario does not have; no Worker has a Durable Object binding in \S*wrangler\.jsonc$/,
    );
  });

  it("reading a D1 binding by a name the scenario does not have, with the names it has", async () => {
    const error = await failure(scenario(ok, '(s) => s.d1("shop/DB", "SELECT 1").length === 1'));
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).problem).toBe(
      "invariant i: it reads D1 binding shop/DB, which the scenario does not have; the D1 bindings are DB",
    );
  });

  it("reading a KV value as a stream, or as a type KV does not have", async () => {
    const kv = { kv_namespaces: [{ binding: "CACHE", id: "cache" }] };
    const stream = await failure(scenario(ok, '(s) => s.kv("CACHE", "k", "stream") === null', "", kv));
    expect(stream).toBeInstanceOf(InputError);
    expect((stream as InputError).problem).toBe(
      'invariant i: it reads KV CACHE "k" as "stream", which an invariant cannot read (it reads the final state synchronously); ask for "arrayBuffer" to get its bytes',
    );
    const unknown = await failure(
      scenario(ok, '(s) => s.kv("CACHE", "k", { type: "bytes" }) === null', "", kv),
    );
    expect(unknown).toBeInstanceOf(InputError);
    expect((unknown as InputError).problem).toBe(
      'invariant i: it reads KV CACHE "k" as "bytes", which is not a type: ask for "text" (the default), "json" or "arrayBuffer"',
    );
  });

  it("running SQL that does not parse", async () => {
    const error = await failure(scenario(ok, '(s) => s.d1("DB", "SELEC 1").length === 0'));
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).problem).toMatch(/^invariant i: its query on DB failed: .*syntax error/);
  });

  it("returning something other than true or a message", async () => {
    for (const [check, returned] of [
      ["() => false", "false"],
      ["() => { 1; }", "undefined"],
      ["() => ({ ok: true })", "an object"],
    ] as const) {
      const error = await failure(scenario(ok, check));
      expect(error).toBeInstanceOf(InputError);
      // The run it could not judge is named, to replay once the invariant answers.
      expect((error as InputError).problem).toMatch(
        new RegExp(
          `^invariant i returned ${returned}: return true when it holds, or a message saying what broke \\(in run [0-9a-f]{16}:[^ ]+, which --replay runs again\\)$`,
        ),
      );
    }
  });

  it("returning a Promise", async () => {
    const error = await failure(scenario(ok, "async () => true"));
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).problem).toMatch(/^invariant i returned a Promise/);
  });
});

describe("what a Worker reaches for", () => {
  it("node: modules without the nodejs_compat flag, which Cloudflare then does not provide", async () => {
    const file = scenario(
      'return new Response(createHash("sha256").update("x").digest("hex"));',
      "() => true",
      'import { createHash } from "node:crypto";',
      { compatibility_flags: [] },
    );
    const error = await failure(file);
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).problem).toMatch(
      /imports node:crypto, which Cloudflare provides only with the nodejs_compat compatibility flag \(on by default from the 2026-08-04 compatibility date\), and this config does not set it/,
    );
  });

  it("node: modules with a compatibility date that turns Node.js compatibility on, unless both flags turn it off", async () => {
    const hash = 'return new Response(createHash("sha256").update("x").digest("hex") + typeof Buffer);';
    const imports = 'import { createHash } from "node:crypto";';
    const byDate = { compatibility_date: "2026-09-01", compatibility_flags: [] };
    const result = (await check(
      scenario(hash, "(s) => s.responses.every((r) => r.status === 200)", imports, byDate),
    )) as CheckResult;
    expect(result.verdict).toBe("BOUNDED");
    const off = {
      compatibility_date: "2026-09-01",
      compatibility_flags: ["no_nodejs_compat", "no_nodejs_compat_v2"],
    };
    const error = await failure(scenario(hash, "() => true", imports, off));
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).problem).toMatch(
      /imports node:crypto, .* and this config turns it off with no_nodejs_compat$/,
    );
  });

  it("node:fs, which would reach this machine", async () => {
    const file = scenario(
      'appendFileSync("/tmp/eutaxy-must-not-exist", "x"); return new Response("ok");',
      "() => true",
      'import { appendFileSync } from "node:fs";',
    );
    const error = await failure(file);
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).problem).toMatch(
      /^imports node:fs, which would reach the machine eutaxy runs on/,
    );
  });

  it("the Cache API, which eutaxy does not simulate", async () => {
    const file = scenario(
      'try { await caches.default.match(request); } catch {} return new Response("ok");',
      "() => true",
    );
    const error = await failure(file);
    // As an unsupported binding is: bad input naming the Worker, exit 2.
    expect(error).toBeInstanceOf(InputError);
    expect((error as Error).message).toMatch(
      /worker\.ts: Worker \S+ used the Cache API .*, which eutaxy does not simulate yet/,
    );
  });

  it("passThroughOnException(), once the Worker then throws: the origin it would reach is not simulated", async () => {
    const ctx = "(arguments[2] as ExecutionContext)";
    const passes = scenario(`${ctx}.passThroughOnException(); return new Response("ok");`, "() => true");
    expect((await check(passes)).verdict).toBe("BOUNDED");
    const error = await failure(
      scenario(`${ctx}.passThroughOnException(); throw new Error("boom");`, "() => true"),
    );
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).problem).toBe(
      "Worker w used ctx.passThroughOnException(), then threw (the request goes on to its origin), which eutaxy does not simulate yet; the check cannot go on without it",
    );
  });

  it("random values from crypto as the module loads, which workerd refuses (Math.random it allows)", async () => {
    expect((await check(scenario(ok, "() => true", "const jitter = Math.random();"))).verdict).toBe(
      "BOUNDED",
    );
    for (const call of ["crypto.randomUUID()", "crypto.getRandomValues(new Uint8Array(4))"]) {
      const error = await failure(scenario(ok, "() => true", `const id = ${call};`));
      expect(error).toBeInstanceOf(InputError);
      expect((error as InputError).problem).toMatch(
        /^the Worker threw at import: Error: Disallowed operation called within global scope\. /,
      );
    }
  });

  it("a Worker in the service-worker format, named as such rather than as one without a fetch handler", async () => {
    const dir = project({
      "wrangler.toml": 'name = "sw"\nmain = "index.js"\nkv_namespaces = [{ binding = "KV", id = "k" }]\n',
      "index.js": `addEventListener("fetch", (event) => event.respondWith(new Response(KV ? "kv" : "none")));`,
      "s.sim.ts": `import { defineScenario, http, invariant } from "eutaxy/cloudflare";
        export default defineScenario({
          name: "sw",
          worker: { config: "./wrangler.toml" },
          drive: http([{ path: "/" }]),
          invariants: [invariant("i", () => true)],
        });`,
    });
    const error = await failure(join(dir, "s.sim.ts"));
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).file).toBe(join(dir, "index.js"));
    expect((error as InputError).problem).toMatch(
      /^exports nothing: a Worker in the service-worker format \(addEventListener\("fetch", …\)\), which wrangler still deploys but eutaxy does not run; /,
    );
  });

  it("waitUntil of cloudflare:workers as the module loads, which workerd refuses", async () => {
    const error = await failure(
      scenario(
        ok,
        "() => true",
        'import { waitUntil } from "cloudflare:workers";\nwaitUntil(Promise.resolve());',
      ),
    );
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).file).toMatch(/worker\.ts:2:1$/);
    expect((error as InputError).problem).toMatch(
      /^the Worker threw at import: Error: Disallowed operation called within global scope\. /,
    );
  });

  it.each([
    ["withEnv() from cloudflare:workers", "withEnv", "withEnv({}, () => 1)"],
    ["RpcStub from cloudflare:workers", "RpcStub", "new RpcStub({})"],
  ])(
    "%s, which eutaxy does not simulate, even where the Worker catches what it throws",
    async (what, name, use) => {
      const file = scenario(
        `try { ${use}; } catch {} return new Response("ok");`,
        "() => true",
        `import { ${name} } from "cloudflare:workers";`,
      );
      const error = await failure(file);
      expect(error).toBeInstanceOf(InputError);
      expect((error as InputError).problem).toBe(
        `Worker w used ${what}, which eutaxy does not simulate yet; the check cannot go on without it`,
      );
    },
  );

  it("top-level await, which workerd runs and eutaxy does not yet, named as eutaxy's limit at its line", async () => {
    const error = await failure(scenario(ok, "() => true", "const seed = await Promise.resolve(1);"));
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).file).toMatch(/worker\.ts:1:14$/);
    expect((error as InputError).problem).toMatch(
      /^uses top-level await, which workerd runs and eutaxy does not yet/,
    );
  });

  it.each([
    ["ctx.storage.kv (the synchronous KV API)", 'this.ctx.storage.kv.get("n")'],
    ["ctx.storage.getCurrentBookmark()", "await this.ctx.storage.getCurrentBookmark()"],
    ["WebSocketPair (WebSockets)", "new WebSocketPair()"],
    ["ctx.acceptWebSocket()", "this.ctx.acceptWebSocket({} as WebSocket)"],
  ])("a Durable Object's %s, even where the object catches what it throws", async (what, call) => {
    const room = `import { DurableObject } from "cloudflare:workers";
      export class Room extends DurableObject {
        async read(): Promise<string> { try { return String(${call}); } catch { return "hidden"; } }
      }`;
    const file = scenario(
      'const ROOM = (env as any).ROOM; return new Response(await ROOM.get(ROOM.idFromName("a")).read());',
      "() => true",
      room,
      {
        durable_objects: { bindings: [{ name: "ROOM", class_name: "Room" }] },
        migrations: [{ tag: "v1", new_sqlite_classes: ["Room"] }],
      },
    );
    const error = await failure(file);
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).problem).toBe(
      `Worker w used ${what}, which eutaxy does not simulate yet; the check cannot go on without it`,
    );
  });
});

describe("a Durable Object that uses the WebSocket hibernation API with no socket connected", () => {
  it("is answered as workerd answers it, so that the rest of the object can be checked", async () => {
    // What Miniflare 4.20260426.0 answers the same calls (its workerd); before, the
    // constructor's WebSocketRequestResponsePair was a ReferenceError, every request a 500, and
    // getWebSockets() ended the check.
    const room = `import { DurableObject } from "cloudflare:workers";
      export class Room extends DurableObject {
        constructor(ctx: DurableObjectState, env: unknown) {
          super(ctx, env);
          ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("ping", "pong"));
        }
        read(): unknown {
          const out: unknown[] = [];
          const t = (f: () => unknown) => {
            try { out.push(f()); } catch (e) { out.push(\`\${(e as Error).name}: \${(e as Error).message}\`); }
          };
          t(() => { const p = this.ctx.getWebSocketAutoResponse(); return p && [p.request, p.response, p instanceof WebSocketRequestResponsePair, Object.keys(p)]; });
          t(() => this.ctx.getWebSockets());
          t(() => this.ctx.getWebSockets("room"));
          t(() => this.ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("é".repeat(1500), "y")));
          t(() => this.ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("y", "x".repeat(3000))));
          t(() => this.ctx.setWebSocketAutoResponse({ request: "a", response: "b" } as never));
          t(() => new (WebSocketRequestResponsePair as never as new () => object)());
          t(() => [this.ctx.setWebSocketAutoResponse(), this.ctx.getWebSocketAutoResponse()]);
          t(() => [this.ctx.getHibernatableWebSocketEventTimeout(), this.ctx.setHibernatableWebSocketEventTimeout(5000), this.ctx.getHibernatableWebSocketEventTimeout()]);
          t(() => this.ctx.setHibernatableWebSocketEventTimeout(-1));
          t(() => this.ctx.getTags({} as WebSocket));
          return out;
        }
      }`;
    const expected = [
      ["ping", "pong", true, []],
      [],
      [],
      "RangeError: Request cannot be larger than 2048 bytes. A request of size 3000 was provided.",
      "RangeError: Response cannot be larger than 2048 bytes. A response of size 3000 was provided.",
      "TypeError: Failed to execute 'setWebSocketAutoResponse' on 'DurableObjectState': parameter 1 is not of type 'WebSocketRequestResponsePair'.",
      "TypeError: Failed to construct 'WebSocketRequestResponsePair': constructor parameter 1 is not of type 'string'.",
      [null, null],
      [null, null, 5000],
      "TypeError: The value cannot be converted because it is negative and this API expects a positive number.",
      "TypeError: Failed to execute 'getTags' on 'DurableObjectState': parameter 1 is not of type 'WebSocket'.",
    ];
    const file = scenario(
      'const ROOM = (env as any).ROOM; return Response.json(await ROOM.get(ROOM.idFromName("a")).read());',
      `(state) => state.responses[0]?.body === ${JSON.stringify(JSON.stringify(expected))} || String(state.responses[0]?.body)`,
      room,
      {
        compatibility_date: "2026-03-01",
        durable_objects: { bindings: [{ name: "ROOM", class_name: "Room" }] },
        migrations: [{ tag: "v1", new_sqlite_classes: ["Room"] }],
      },
    );
    const result = await check(file);
    expect(result.verdict === "VIOLATED" ? result.message : result.verdict).toBe("BOUNDED");
  });
});

describe("a scenario script that keeps state from one run to the next", () => {
  it("is named among the causes when the violating run does not repeat itself", async () => {
    const dir = project({
      "wrangler.json": JSON.stringify({ name: "quote", main: "worker.ts", compatibility_date: "2025-09-01" }),
      "worker.ts": `export default { async fetch() {
        return new Response(await (await fetch("https://rates.example/eur")).text());
      } };`,
      // The provider is slow the first time only: a counter the scenario's module keeps.
      "s.sim.ts": `import { defineScenario, http, invariant, outbound } from "eutaxy/cloudflare";
        let calls = 0;
        export default defineScenario({
          name: "quote",
          worker: { entry: "./worker.ts", config: "./wrangler.json" },
          setup: [outbound({ "https://rates.example/": () => new Response(++calls === 1 ? "slow" : "1.08") })],
          drive: http([{ path: "/" }]),
          invariants: [invariant("answered-a-rate", (s) => s.responses.every((r) => r.body === "1.08") || "a slow answer")],
        });`,
    });
    const error = await failure(join(dir, "s.sim.ts"));
    expect(error).toBeInstanceOf(SimulationError);
    expect((error as Error).message).toMatch(
      /^nondeterminism: replaying the violating run did not break invariant answered-a-rate again; the Worker, or a script of the scenario \(an outbound\(\) answer, a service\(\) method, an invariant\), depends on something outside the simulation, such as state a scenario script keeps from one run to the next/,
    );
  });
});

describe("a misspelt name imported from eutaxy/cloudflare", () => {
  it("is said of eutaxy/cloudflare, not of the file it resolves to, with the name meant", async () => {
    const dir = project({
      "wrangler.json": JSON.stringify({ name: "w", main: "worker.ts", compatibility_date: "2025-09-01" }),
      "worker.ts": "export default { async fetch() { return new Response('ok'); } };",
      "s.sim.ts": `import { calee, defineScenario, http, invariant } from "eutaxy/cloudflare";
        export default defineScenario({
          name: "typo",
          worker: { entry: "./worker.ts", config: "./wrangler.json" },
          setup: [calee("X", { entry: "./worker.ts" })],
          drive: http([{ path: "/" }]),
          invariants: [invariant("answered", () => true)],
        });`,
    });
    const error = await failure(join(dir, "s.sim.ts"));
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).problem).toBe(
      '"eutaxy/cloudflare" has no export calee: did you mean callee?',
    );
  });

  it("says a scenario helper imported from eutaxy itself comes from eutaxy/cloudflare", async () => {
    const dir = project({
      "wrangler.json": JSON.stringify({ name: "w", main: "worker.ts", compatibility_date: "2025-09-01" }),
      "worker.ts": "export default { async fetch() { return new Response('ok'); } };",
      "s.sim.ts": `import { answered, defineScenario, http } from "eutaxy";
        export default defineScenario({
          name: "root",
          worker: { entry: "./worker.ts", config: "./wrangler.json" },
          drive: http([{ path: "/" }]),
          invariants: [answered("answered")],
        });`,
    });
    const error = await failure(join(dir, "s.sim.ts"));
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).problem).toBe(
      '"eutaxy" has no export answered: a scenario imports it from "eutaxy/cloudflare"',
    );
  });
});

describe("a consumer() given its entry alone", () => {
  it("says which config named it as the scenario's Worker, and how to give it its own", async () => {
    // Wrangler's search from src/ finds the producer's config above it.
    const dir = project({
      "wrangler.json": JSON.stringify({
        name: "orders",
        main: "src/orders.ts",
        compatibility_date: "2025-09-01",
        queues: { producers: [{ binding: "JOBS", queue: "jobs" }] },
      }),
      "src/orders.ts": `export default { async fetch(_r: Request, env: { JOBS: Queue }) {
        await env.JOBS.send({ id: 1 });
        return new Response("queued");
      } };`,
      "src/jobs.ts": "export default { async queue() {} };",
      "s.sim.ts": `import { consumer, defineScenario, http, invariant } from "eutaxy/cloudflare";
        export default defineScenario({
          name: "orders",
          worker: { config: "./wrangler.json" },
          setup: [consumer({ entry: "./src/jobs.ts" })],
          drive: http([{ path: "/" }]),
          invariants: [invariant("answered", () => true)],
        });`,
    });
    const error = await failure(join(dir, "s.sim.ts"));
    expect(error).toBeInstanceOf(InputError);
    // Paths are shown from the working folder.
    expect((error as InputError).problem.replaceAll(`${dir}/`, "")).toBe(
      "setup[0]: two Workers in the scenario are named orders: src/jobs.ts, named in wrangler.json, and src/orders.ts, named in wrangler.json; give consumer() the config its Worker is deployed with: consumer({ entry, config })",
    );
  });
});

describe("an API eutaxy does not simulate, used as a module loads", () => {
  it("names the Worker whose module used it, not the one the requests reach", async () => {
    const dir = project({
      "wrangler.json": JSON.stringify({
        name: "shop",
        main: "worker.ts",
        compatibility_date: "2025-09-01",
        services: [{ binding: "PRICES", service: "prices" }],
      }),
      "worker.ts": `export default { async fetch(_r: Request, env: { PRICES: Fetcher }) {
        return env.PRICES.fetch("https://prices/");
      } };`,
      "prices/wrangler.json": JSON.stringify({
        name: "prices",
        main: "worker.ts",
        compatibility_date: "2025-09-01",
      }),
      "prices/worker.ts": `const cache = caches.default;
        export default { async fetch() { return new Response(String(typeof cache)); } };`,
      "s.sim.ts": `import { callee, defineScenario, http, invariant } from "eutaxy/cloudflare";
        export default defineScenario({
          name: "prices",
          worker: { entry: "./worker.ts", config: "./wrangler.json" },
          setup: [callee("PRICES", { config: "./prices/wrangler.json" })],
          drive: http([{ path: "/" }]),
          invariants: [invariant("answered", () => true)],
        });`,
    });
    const error = await failure(join(dir, "s.sim.ts"));
    expect(error).toBeInstanceOf(InputError);
    expect((error as Error).message).toMatch(
      /prices\/worker\.ts:1:22: Worker prices used the Cache API \(caches\.default, caches\.open\), which eutaxy does not simulate yet; the check cannot go on without it$/,
    );
  });
});

describe("a binding of a kind eutaxy does not simulate", () => {
  // Left out of env, each of these made the Worker throw on every request, and the check could say BOUNDED.
  it.each<[string, Record<string, unknown>, string]>([
    [
      "ratelimits",
      { ratelimits: [{ name: "LIMITER", namespace_id: "1001", simple: { limit: 10, period: 60 } }] },
      'await env.LIMITER.limit({ key: "k" });',
    ],
    [
      "unsafe.bindings",
      { unsafe: { bindings: [{ name: "LIMITER", type: "ratelimit", namespace_id: "1001" }] } },
      'await env.LIMITER.limit({ key: "k" });',
    ],
    [
      "secrets_store_secrets",
      { secrets_store_secrets: [{ binding: "LIMITER", store_id: "s", secret_name: "key" }] },
      "await env.LIMITER.get();",
    ],
    [
      "pipelines",
      { pipelines: [{ binding: "LIMITER", pipeline: "events" }] },
      "await env.LIMITER.send([{ a: 1 }]);",
    ],
  ])("%s stops the check when the Worker uses it", async (field, config, use) => {
    const error = await failure(scenario(`${use} return new Response("ok");`, "() => true", "", config));
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).file).toMatch(/wrangler\.jsonc$/);
    expect((error as InputError).problem).toBe(
      `${field}[0] binds LIMITER, and the Worker used it, but eutaxy does not simulate this kind of binding yet`,
    );
  });
});

describe("a SQL error in a schema", () => {
  /** The InputError a check stops with when `schema.sql` holds `sql`, and the scenario's folder. */
  async function schemaFailure(sql: string): Promise<{ error: InputError; dir: string }> {
    const file = scenario(ok, "() => true");
    writeFileSync(join(dirname(file), "schema.sql"), sql);
    const error = await failure(file);
    expect(error).toBeInstanceOf(InputError);
    return { error: error as InputError, dir: dirname(file) };
  }

  const commented = [
    "-- Accounts; one row per user.",
    "CREATE TABLE accounts (",
    "  id INTEGER PRIMARY KEY, /* the user's; never reused */",
    "  balance INTEGER NOT NULL",
    ");",
    "",
    "/* Charges",
    "   reference accounts; */",
    "CREAT TABLE charges (id INTEGER PRIMARY KEY);",
    "",
  ];
  it.each<[string, string, string, string]>([
    [
      "after comments and blank lines",
      commented.join("\n"),
      "9:1",
      'statement 2: near "CREAT": syntax error',
    ],
    ["with CRLF line endings", commented.join("\r\n"), "9:1", 'statement 2: near "CREAT": syntax error'],
    [
      "after strings holding semicolons and line breaks",
      "CREATE TABLE notes (body TEXT);\nINSERT INTO notes VALUES ('a; b');\nINSERT INTO notes VALUES ('c;\nd'), (1 2);\n",
      "4:9",
      'statement 3: near "2": syntax error',
    ],
    [
      "in a trigger's body",
      [
        "CREATE TABLE a (x);",
        "CREATE TABLE log (x);",
        "CREATE TRIGGER a_log AFTER INSERT ON a BEGIN",
        "  INSERT INTO log VALUES (new.x);",
        "  UPDAT log SET x = 1;",
        "END;",
        "CREATE INDEX a_by_x ON a (x);",
      ].join("\n"),
      "5:3",
      'statement 3: near "UPDAT": syntax error',
    ],
    [
      "for a missing comma",
      "CREATE TABLE t (\n  a INTEGER,\n  b TEXT\n  UNIQUE (a)\n);",
      "4:10",
      'statement 1: near "(": syntax error',
    ],
    [
      "on a table not yet created",
      "CREATE TABLE a (x);\n\n  CREATE INDEX b_by_y ON b (y);\nCREATE TABLE b (y);",
      "3:3",
      "statement 2: no such table: main.b",
    ],
  ])("is at its line and column %s", async (_, sql, at, message) => {
    const { error, dir } = await schemaFailure(sql);
    expect(error.file).toBe(`${join(dir, "schema.sql")}:${at}`);
    expect(error.problem).toBe(`SQL error applying it to D1 DB: ${message}`);
  });

  it("in a folder of D1 migrations is at its line and column in the migration it is in", async () => {
    const file = scenario(ok, "() => true");
    const dir = dirname(file);
    mkdirSync(join(dir, "migrations"));
    writeFileSync(join(dir, "migrations", "0001_init.sql"), "-- The table.\n\nCREATE TABLE t (v INTEGER);");
    writeFileSync(
      join(dir, "migrations", "0002_index.sql"),
      "-- Look-ups by w.\nCREATE INDEX t_v ON t (v);\n\nCREATE INDEX t_w ON t (w);\n",
    );
    writeFileSync(file, readFileSync(file, "utf8").replace('"./schema.sql"', '"./migrations"'));
    const error = await failure(file);
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).file).toBe(`${join(dir, "migrations", "0002_index.sql")}:4:24`);
    expect((error as InputError).problem).toBe(
      "SQL error applying it to D1 DB: statement 2: no such column: w",
    );
  });
});

describe("a scenario that applies no D1 migrations", () => {
  /** A Worker whose config keeps its migrations in `folder` (`migrations_dir` when declared). */
  function unmigrated(folder: string, declared: boolean, invariant: string, setup = ""): string {
    const dir = project({
      "wrangler.jsonc": JSON.stringify({
        name: "shop",
        main: "src/index.ts",
        d1_databases: [
          { binding: "DB", database_name: "shop", ...(declared ? { migrations_dir: folder } : {}) },
        ],
      }),
      [`${folder}/0001_init.sql`]: "CREATE TABLE orders (k TEXT);",
      "src/index.ts": 'export default { fetch: () => new Response("ok") };',
      "scenarios/s.sim.ts": `import { d1Rows, d1Schema, defineScenario, http, invariant, unique } from "eutaxy/cloudflare";
        export default defineScenario({
          name: "s",
          worker: { config: "../wrangler.jsonc" },
          setup: [${setup}],
          drive: http([{ path: "/" }]),
          invariants: [${invariant}],
        });`,
    });
    return join(dir, "scenarios/s.sim.ts");
  }
  const unique = 'unique("one-per-key", d1Rows("DB", "orders"), "k")';

  it("says how to apply the folder its config's migrations_dir names", async () => {
    const file = unmigrated("db/migrations", true, unique);
    const dir = dirname(dirname(file));
    const error = await failure(file);
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).problem).toBe(
      `invariant one-per-key: D1:DB has no table "orders" (no d1Schema of the scenario sets up D1 DB, and ${join(dir, "wrangler.jsonc")} keeps its migrations in ${join(dir, "db/migrations")}/: add d1Schema("DB", "../db/migrations") to the setup)`,
    );
  });

  it("says how to apply the migrations folder beside the config, for a custom invariant's query too", async () => {
    const error = await failure(
      unmigrated(
        "migrations",
        false,
        'invariant("few", (s) => s.d1("DB", "SELECT * FROM orders").length < 9)',
      ),
    );
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).problem).toMatch(
      /^invariant few: its query on DB failed: no such table: orders: SQLITE_ERROR \(no d1Schema of the scenario sets up D1 DB, and \S+ keeps its migrations in \S+\/migrations\/: add d1Schema\("DB", "\.\.\/migrations"\) to the setup\)$/,
    );
  });

  it("says how to apply them when every request fails on a table they would have made", async () => {
    const dir = project({
      "wrangler.jsonc": JSON.stringify({
        name: "shop",
        main: "src/index.ts",
        d1_databases: [{ binding: "DB", database_name: "shop" }],
      }),
      "migrations/0001_init.sql": "CREATE TABLE orders (k TEXT);",
      "src/index.ts": `export default {
        async fetch(_request: Request, env: { DB: D1Database }) {
          return Response.json(await env.DB.prepare("SELECT * FROM orders").all());
        },
      };`,
      "s.sim.ts": `import { defineScenario, http, invariant } from "eutaxy/cloudflare";
        export default defineScenario({
          name: "s",
          worker: { config: "./wrangler.jsonc" },
          drive: http([{ path: "/" }]),
          invariants: [invariant("fine", () => true)],
        });`,
    });
    const result = await check(join(dir, "s.sim.ts"));
    expect(result.verdict).toBe("BOUNDED");
    const warning = "warnings" in result ? result.warnings?.[0] : undefined;
    expect(warning?.kind).toBe("no-request-succeeded");
    expect(warning?.message).toMatch(
      /no such table: orders.*, so the invariants held over a Worker that fails \(no d1Schema of the scenario sets up D1 DB, and \S+ keeps its migrations in \S+\/migrations\/: add d1Schema\("DB", "\.\/migrations"\) to the setup\)\.$/,
    );
  });

  it("says nothing of migrations when the scenario sets the database up, or the Worker has none", async () => {
    const typo = await failure(
      unmigrated(
        "migrations",
        true,
        'unique("u", d1Rows("DB", "order"), "k")',
        'd1Schema("DB", "../migrations")',
      ),
    );
    expect((typo as InputError).problem).toBe('invariant u: D1:DB has no table "order"');
    const none = await failure(unmigrated("schema", false, unique));
    expect((none as InputError).problem).toBe('invariant one-per-key: D1:DB has no table "orders"');
  });
});

describe("a service binding to an entrypoint", () => {
  it("the callee does not export is refused before any run: every call would throw", async () => {
    const dir = tempFolder("eutaxy-mistakes-");
    mkdirSync(join(dir, "inventory"));
    writeFileSync(
      join(dir, "wrangler.jsonc"),
      JSON.stringify({
        name: "orders",
        main: "worker.ts",
        services: [{ binding: "INVENTORY", service: "inventory", entrypoint: "InventorySvc" }],
      }),
    );
    writeFileSync(
      join(dir, "worker.ts"),
      `export default { async fetch(_r: Request, env: { INVENTORY: { reserve(): Promise<void> } }) {
         await env.INVENTORY.reserve();
         return new Response("ok");
       } };`,
    );
    writeFileSync(join(dir, "inventory", "wrangler.jsonc"), JSON.stringify({ name: "inventory" }));
    writeFileSync(
      join(dir, "inventory", "worker.ts"),
      `import { WorkerEntrypoint } from "cloudflare:workers";
       export class InventoryService extends WorkerEntrypoint { async reserve() {} }
       export const admin = { async fetch() { return new Response("admin"); } };
       export const LIMIT = 3;
       export default { async fetch() { return new Response("inventory"); } };`,
    );
    const file = join(dir, "s.sim.ts");
    writeFileSync(
      file,
      `import { answered, callee, defineScenario, http } from "eutaxy/cloudflare";
       export default defineScenario({
         name: "orders",
         worker: { entry: "./worker.ts" },
         setup: [callee("INVENTORY", { entry: "./inventory/worker.ts" })],
         drive: http([{ path: "/" }]),
         invariants: [answered("ok")],
       });`,
    );
    const error = await failure(file);
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).file).toBe(join(dir, "wrangler.jsonc"));
    expect((error as InputError).problem).toBe(
      `services[0] binds INVENTORY to entrypoint InventorySvc of inventory (${join(dir, "inventory", "worker.ts")}), which does not export it; its entrypoints are InventoryService, admin`,
    );
  });
});

describe("a run seed that no longer fits the Worker", () => {
  // As a counterexample replayed against its fix is: the fix may make other calls.
  const transfer = (file: string) => new URL(`../../examples/d1-transfer/${file}`, import.meta.url).pathname;
  const signup = new URL("../../examples/signup-race/signup.sim.ts", import.meta.url).pathname;

  it("replays without a fault at an effect the run never reaches, and says so", async () => {
    const planted = await check(transfer("transfer.sim.ts"));
    expect(planted.verdict).toBe("VIOLATED");
    const runSeed = (planted as Extract<CheckResult, { verdict: "VIOLATED" }>).runSeed;
    // The fix makes the transfer one batch: the credit, effect #1, where the seed crashes, is gone.
    const fixed = await check(transfer("transfer.fixed.sim.ts"), { replay: runSeed });
    expect(fixed.verdict).toBe("HELD");
    expect(fixed).toHaveProperty("notAsPrinted", [
      "The seed's crash_before at req-3#1 effect #1 did not happen: this run never reached that effect, or that fault cannot happen there.",
    ]);
    const report = renderReport(fixed);
    expect(report).toContain("This is not the run the seed was printed for");
    expect(report).toContain("The seed's crash_before at req-3#1 effect #1 did not happen");
    // Replayed as printed, it says nothing of the kind.
    const again = await check(transfer("transfer.sim.ts"), { replay: runSeed });
    expect(again).not.toHaveProperty("notAsPrinted");
    expect(renderReport(again)).not.toContain("not the run the seed was printed for");
  });

  it("replays without a scheduling choice at a step the run never offers, and says so", async () => {
    // The example's printed seed chooses at req-1#1 effect #1; effect #7 never comes.
    const stale = await check(signup, { replay: "b694ecc921a7ce19:1,2:-:0:1.1@7=2.1" });
    expect(stale.verdict).toBe("HELD");
    expect(renderReport(stale)).toContain(
      "The seed's scheduling choice, the delivery of req-2#1 instead of req-1#1 effect #7, did not happen: this run never offered it.",
    );
    expect((await check(signup, { replay: "b694ecc921a7ce19:1,2:-:0:1.1@1=2.1" })).verdict).toBe("VIOLATED");
  });
});

describe("a binding declared in another wrangler environment only", () => {
  /** A shop Worker whose config declares its database in `[env.staging]` only; the scenario reads `env`. */
  function staged(env: string | undefined, scenarioSetup: string, invariant: string): string {
    const dir = project({
      "wrangler.jsonc": JSON.stringify({
        name: "shop",
        main: "src/index.ts",
        compatibility_date: "2025-09-01",
        vars: { MODE: "dev" },
        env: {
          staging: { d1_databases: [{ binding: "DB", database_name: "shop-staging" }] },
        },
      }),
      "schema.sql": "CREATE TABLE orders (k TEXT);",
      "src/index.ts": `export default {
        async fetch(_request: Request, env: { DB: D1Database }) {
          await env.DB.prepare("INSERT INTO orders (k) VALUES ('a')").run();
          return new Response("ok");
        },
      };`,
      "s.sim.ts": `import { d1Rows, d1Schema, defineScenario, http, invariant, unique } from "eutaxy/cloudflare";
        export default defineScenario({
          name: "s",
          worker: { config: "./wrangler.jsonc"${env === undefined ? "" : `, env: "${env}"`} },
          setup: [${scenarioSetup}],
          drive: http([{ path: "/" }]),
          invariants: [${invariant}],
        });`,
    });
    return join(dir, "s.sim.ts");
  }

  it("says which environment declares a binding the scenario names", async () => {
    const file = staged(
      undefined,
      'd1Schema("DB", "./schema.sql")',
      'unique("u", d1Rows("DB", "orders"), "k")',
    );
    const error = await failure(file);
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).problem).toBe(
      `setup[0]: d1Schema("DB") names D1 binding "DB", but no Worker in the scenario binds it; no Worker binds D1 (${join(dirname(file), "wrangler.jsonc")} declares DB only in env.staging, which wrangler does not pass on to the top level, the part this check reads: env: "staging" in the options that load it reads that environment)`,
    );
  });

  it("says it when every request fails, the Worker's env lacking the binding", async () => {
    const result = await check(staged(undefined, "", 'invariant("fine", () => true)'));
    expect(result.verdict).toBe("BOUNDED");
    const warning =
      "warnings" in result ? result.warnings?.find((w) => w.kind === "no-request-succeeded") : undefined;
    expect(warning?.message).toMatch(
      /TypeError: Cannot read properties of undefined \(reading 'prepare'\).*a Worker that fails \(\S+wrangler\.jsonc declares DB only in env\.staging, which wrangler does not pass on to the top level, the part this check reads: env: "staging" in the options that load it reads that environment\)\.$/,
    );
  });

  it("says the top level declares what the environment read lacks, as wrangler inherits no vars", async () => {
    const result = await check(
      staged("staging", 'd1Schema("DB", "./schema.sql")', 'invariant("fine", () => true)'),
    );
    expect(result.verdict).toBe("BOUNDED");
    expect("warnings" in result ? result.warnings : undefined).toBeUndefined();
    const failing = staged("staging", "", 'invariant("fine", () => true)');
    writeFileSync(
      join(dirname(failing), "src/index.ts"),
      `export default { fetch(_r: Request, env: { MODE: string }) { return new Response(env.MODE.toUpperCase()); } };`,
    );
    const warned = await check(failing);
    const warning =
      "warnings" in warned ? warned.warnings?.find((w) => w.kind === "no-request-succeeded") : undefined;
    expect(warning?.message).toMatch(
      /declares MODE only in the top level, which wrangler does not pass on to env\.staging, the part this check reads: leave env out of the options that load it to read the top level\)\.$/,
    );
  });
});
