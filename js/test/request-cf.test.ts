/**
 * The request a Worker's handler gets from the `http` driver, as workerd gives it: `request.cf`
 * (Miniflare's default, the scenario's fields over it) and `redirect: "manual"`.
 */

import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { check, InputError } from "../src/index.ts";
import { project } from "./files.ts";

const worker = {
  "wrangler.jsonc": JSON.stringify({ name: "geo", main: "worker.ts", compatibility_date: "2025-09-01" }),
  "worker.ts": `export default {
    async fetch(request: Request): Promise<Response> {
      const cf = request.cf as Record<string, unknown>;
      (cf as { country: string }).country = "changed by the Worker";
      return Response.json({ colo: cf.colo, city: cf.city, redirect: request.redirect });
    },
  };`,
};

function scenario(requests: string, expected: unknown[]): string {
  return `import { defineScenario, http, invariant } from "eutaxy/cloudflare";
    export default defineScenario({
      name: "geo",
      worker: { config: "./wrangler.jsonc" },
      drive: http(${requests}),
      invariants: [invariant("as-expected", (s) => {
        const bodies = JSON.stringify(s.responses.map((r) => JSON.parse(r.body)));
        return bodies === ${JSON.stringify(JSON.stringify(expected))} || "answered " + bodies;
      })],
      bounds: { maxFaultsPerRun: 0 },
    });`;
}

describe("request.cf of a driver's request", () => {
  it("is Miniflare's default, with the scenario's fields over it, fresh for every delivery", async () => {
    const dir = project(
      {
        ...worker,
        "s.sim.ts": scenario(
          '[{ path: "/" }, { path: "/", cf: { colo: "FRA", city: "Frankfurt" } }, { path: "/" }]',
          [
            { colo: "DFW", city: "Austin", redirect: "manual" },
            { colo: "FRA", city: "Frankfurt", redirect: "manual" },
            { colo: "DFW", city: "Austin", redirect: "manual" },
          ],
        ),
      },
      "eutaxy-cf-",
    );
    const result = await check(join(dir, "s.sim.ts"));
    expect(result.verdict === "VIOLATED" ? result.message : result.verdict).toBe("BOUNDED");
  });

  it("refuses fields that are not data, naming the request", async () => {
    const dir = project(
      { ...worker, "s.sim.ts": scenario('[{ path: "/", cf: { country: () => "DE" } }]', []) },
      "eutaxy-cf-",
    );
    const error = await check(join(dir, "s.sim.ts")).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).problem).toMatch(/requests\[0\]\.cf must be plain data/);
  });
});
