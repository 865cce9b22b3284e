/**
 * A Worker checked as one of its wrangler environments (`env: "staging"`), end to end through
 * `check()`: the environment's vars and bindings reach the Worker, the top level's do not, and
 * a callee's environment names it `<name>-<env>`.
 */

import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { check, InputError } from "../src/index.ts";
import { project as projectFolder } from "./files.ts";

/** A folder holding `files` (path → text), for one test's Workers and scenario. */
const project = (files: Record<string, string>) => projectFolder(files, "eutaxy-environments-");

/** A shop whose staging environment has vars and bindings of its own, and its payments callee. */
const shop = {
  "wrangler.toml": `name = "shop"
main = "worker.ts"
compatibility_date = "2025-09-01"

[vars]
MODE = "production"

[[d1_databases]]
binding = "DB"
database_name = "shop"

[[services]]
binding = "PAYMENTS"
service = "payments"

[env.staging.vars]
MODE = "staging"

[[env.staging.kv_namespaces]]
binding = "CACHE"

[[env.staging.services]]
binding = "PAYMENTS"
service = "payments-staging"

[env.qa.vars]
MODE = "qa"
`,
  "worker.ts": `export default {
    async fetch(_request: Request, env: Record<string, any>): Promise<Response> {
      await env.CACHE.put("seen", "1");
      const paid = await (await env.PAYMENTS.fetch("https://payments/")).text();
      return Response.json({ mode: env.MODE, names: Object.keys(env).sort(), paid });
    },
  };`,
  "payments/wrangler.jsonc": JSON.stringify({
    name: "payments",
    main: "worker.ts",
    env: { staging: { d1_databases: [{ binding: "DB", database_name: "payments-staging" }] } },
  }),
  "payments/worker.ts": `export default {
    async fetch(_request: Request, env: { DB: D1Database }): Promise<Response> {
      await env.DB.prepare("INSERT INTO charges VALUES (1)").run();
      return new Response("charged");
    },
  };`,
  "schema.sql": "CREATE TABLE charges (amount INTEGER);",
};

/**
 * A scenario checking the shop as its environment `env`, its payments callee as staging, with
 * `setup` (source) after the callee.
 */
function shopScenario(env: string, setup: string, invariant: string): string {
  return `import { callee, d1Schema, defineScenario, http, invariant } from "eutaxy/cloudflare";
    export default defineScenario({
      name: "shop",
      worker: { config: "./wrangler.toml", env: "${env}" },
      setup: [callee("PAYMENTS", { config: "./payments/wrangler.jsonc", env: "staging" }), ${setup}],
      drive: http([{ path: "/" }]),
      invariants: [invariant("env", ${invariant})],
      bounds: { maxFaultsPerRun: 0 },
    });`;
}

/** Holds when the first answer's body is `expected`; else says what it was. */
function bodyIs(expected: unknown): string {
  const text = JSON.stringify(JSON.stringify(expected));
  return `(s) => s.responses[0]?.body === ${text} || "the body was " + s.responses[0]?.body`;
}

describe("a Worker checked as a wrangler environment", () => {
  it("gets the environment's vars and bindings, not the top level's, and its callee's too", async () => {
    const dir = project({
      ...shop,
      "staging.sim.ts": shopScenario(
        "staging",
        'd1Schema("payments-staging/DB", "./schema.sql")',
        bodyIs({ mode: "staging", names: ["CACHE", "MODE", "PAYMENTS"], paid: "charged" }),
      ),
    });
    expect(await check(join(dir, "staging.sim.ts"))).toMatchObject({ verdict: "BOUNDED" });
  });

  it("has no binding only the top level declares, and the message says where it is", async () => {
    const dir = project({
      ...shop,
      "staging.sim.ts": shopScenario("staging", 'd1Schema("DB", "./schema.sql")', "() => true"),
    });
    const error = await check(join(dir, "staging.sim.ts")).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).problem).toBe(
      `setup[1]: d1Schema("DB") names D1 binding "DB", but no Worker in the scenario binds it; the D1 bindings are payments-staging/DB (${join(dir, "wrangler.toml")} declares DB only in the top level, which wrangler does not pass on to env.staging, the part this check reads: leave env out of the options that load it to read the top level)`,
    );
  });

  it("has no service binding only the top level declares, and the message says which environment", async () => {
    const dir = project({
      ...shop,
      "qa.sim.ts": shopScenario("qa", 'd1Schema("payments-staging/DB", "./schema.sql")', "() => true"),
    });
    const error = await check(join(dir, "qa.sim.ts")).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).problem).toBe(
      `setup[0]: callee("PAYMENTS"): ${join(dir, "wrangler.toml")} (env.qa) has no service binding PAYMENTS; it has no service bindings`,
    );
  });

  it("names the environment's field when its service binding reaches an entrypoint the callee lacks", async () => {
    const dir = project({
      ...shop,
      "wrangler.toml": shop["wrangler.toml"].replace(
        'service = "payments-staging"',
        'service = "payments-staging"\nentrypoint = "Charges"',
      ),
      "staging.sim.ts": shopScenario(
        "staging",
        'd1Schema("payments-staging/DB", "./schema.sql")',
        "() => true",
      ),
    });
    const error = await check(join(dir, "staging.sim.ts")).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).problem).toMatch(
      /^env\.staging\.services\[0\] binds PAYMENTS to entrypoint Charges of payments-staging \(.*\), which does not export it/,
    );
  });

  it("is refused when its service binding names another Worker than the callee the scenario runs", async () => {
    // The top level binds PAYMENTS to payments, and the scenario runs payments' staging.
    const dir = project({
      ...shop,
      "top.sim.ts": shopScenario("staging", "", "() => true").replace(', env: "staging" }', " }"),
    });
    const error = await check(join(dir, "top.sim.ts")).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).problem).toBe(
      `setup[0]: callee("PAYMENTS") runs Worker payments-staging (${join(dir, "payments", "wrangler.jsonc")} (env.staging)), but ${join(dir, "wrangler.toml")} binds PAYMENTS to service payments, the Worker the binding reaches on Cloudflare`,
    );
  });

  it("is refused when the config has no such environment, with those it has", async () => {
    const dir = project({
      ...shop,
      "prod.sim.ts": shopScenario("prod", 'd1Schema("payments-staging/DB", "./schema.sql")', "() => true"),
    });
    const error = await check(join(dir, "prod.sim.ts")).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).file).toBe(join(dir, "wrangler.toml"));
    expect((error as InputError).problem).toBe(
      "has no environment prod (env.prod); its environments are staging, qa",
    );
  });
});
