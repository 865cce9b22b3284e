/**
 * A Worker's local secrets (`.dev.vars` beside its wrangler config) end to end through
 * `check()`: they reach its env over the config's vars, as under `wrangler dev`, and the
 * scenario's `secrets()` go over them.
 */

import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { check, InputError } from "../src/index.ts";
import { project as projectFolder } from "./files.ts";

/** A folder holding `files` (path → text), for one test's Workers and scenario. */
const project = (files: Record<string, string>) => projectFolder(files, "eutaxy-dev-vars-");

/** A Worker that answers with the env values it was given, and its config. */
const worker = {
  "wrangler.jsonc": JSON.stringify({
    name: "w",
    main: "worker.ts",
    vars: { MODE: "config", API_KEY: "from-config" },
    kv_namespaces: [{ binding: "CACHE" }],
    env: { staging: { vars: { MODE: "staging" } } },
  }),
  "worker.ts": `export default {
    async fetch(_request: Request, env: Record<string, unknown>): Promise<Response> {
      const { MODE, API_KEY, TOKEN, OTHER } = env;
      return Response.json({ MODE, API_KEY, TOKEN, OTHER });
    },
  };`,
};

/** A scenario over the Worker in environment `env` (the top level when undefined), with `setup`. */
function scenario(setup: string, expected: unknown, env?: string): string {
  const body = JSON.stringify(JSON.stringify(expected));
  return `import { defineScenario, http, invariant, secrets } from "eutaxy/cloudflare";
    export default defineScenario({
      name: "dev-vars",
      worker: { config: "./wrangler.jsonc"${env === undefined ? "" : `, env: "${env}"`} },
      setup: [${setup}],
      drive: http([{ path: "/" }]),
      invariants: [invariant("env", (s) => s.responses[0]?.body === ${body} || "the body was " + s.responses[0]?.body)],
      bounds: { maxFaultsPerRun: 0 },
    });`;
}

describe("a Worker's .dev.vars", () => {
  it("reach its env over the config's vars, under the scenario's secrets(), and no .env with them", async () => {
    const dir = project({
      ...worker,
      ".dev.vars": "API_KEY=from-dev-vars\nTOKEN=from-dev-vars\n",
      ".env": "OTHER=from-dot-env\n",
      "s.sim.ts": scenario('secrets({ TOKEN: "from-scenario" })', {
        MODE: "config",
        API_KEY: "from-dev-vars",
        TOKEN: "from-scenario",
      }),
    });
    expect(await check(join(dir, "s.sim.ts"))).toMatchObject({ verdict: "BOUNDED" });
  });

  it("are read as wrangler's dotenv reads them: KEY: value lines, quotes, comments, a multi-line value", async () => {
    const dir = project({
      ...worker,
      ".dev.vars":
        "API_KEY: colon-value\n# a comment\nTOKEN=\"line one\nline two\"\nOTHER='single # not a comment'\n",
      "s.sim.ts": scenario("", {
        MODE: "config",
        API_KEY: "colon-value",
        TOKEN: "line one\nline two",
        OTHER: "single # not a comment",
      }),
    });
    const result = await check(join(dir, "s.sim.ts"));
    expect(result.verdict === "VIOLATED" ? result.message : result.verdict).toBe("BOUNDED");
  });

  it("are .dev.vars.<env> for an environment that has one", async () => {
    const dir = project({
      ...worker,
      ".dev.vars": "API_KEY=from-dev-vars\n",
      ".dev.vars.staging": "TOKEN=from-staging\n",
      "s.sim.ts": scenario("", { MODE: "staging", TOKEN: "from-staging" }, "staging"),
    });
    expect(await check(join(dir, "s.sim.ts"))).toMatchObject({ verdict: "BOUNDED" });
  });

  it("may not take a binding's name", async () => {
    const dir = project({
      ...worker,
      ".dev.vars": "CACHE=oops\n",
      "s.sim.ts": scenario("", {}),
    });
    const error = await check(join(dir, "s.sim.ts")).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).file).toBe(join(dir, ".dev.vars"));
    expect((error as InputError).problem).toBe(
      `CACHE has the name of a binding of w (${join(dir, "wrangler.jsonc")})`,
    );
  });
});
