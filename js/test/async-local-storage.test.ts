/**
 * A Worker's own AsyncLocalStorage (js/test/fixtures/async-local-storage): each request sees its
 * own store after every await of a binding, whatever the interleaving, on both runtimes; a binding
 * call made in a snapshot of another request's context is the call of the request that runs it,
 * as in workerd, though eutaxy follows invocations with an AsyncLocalStorage of its own; and the
 * storage each run makes at the module's top level is let go of when the run ends, so that Node
 * does not go on calling every earlier run's storage at every promise of the later runs.
 */

import { describe, expect, it } from "vitest";
import { check } from "../src/index.ts";
import { violated } from "./verdict.ts";

const fixture = (file: string) => new URL(`./fixtures/async-local-storage/${file}`, import.meta.url).pathname;
const scenario = fixture("tenants.sim.ts");

type Made = { __eutaxyStorages?: { enabled?: boolean; getStore(): unknown }[] };

describe("a Worker's AsyncLocalStorage", () => {
  it.each(["node", "workerd"] as const)(
    "holds each request's store across interleaved awaits (%s)",
    async (runtime) => {
      const result = await check(scenario, { runtime });
      expect(result.verdict === "VIOLATED" ? result.message : result.verdict).toBe("BOUNDED");
    },
  );

  it("is disabled once its run is over (node)", async () => {
    const made = globalThis as Made;
    made.__eutaxyStorages = [];
    try {
      const result = await check(scenario);
      expect(result.verdict).toBe("BOUNDED");
      const storages = made.__eutaxyStorages;
      expect(storages.length).toBeGreaterThan(2);
      // Node 20 and 22 keep an enabled storage in a process-wide list that every new promise
      // walks; one left enabled per run made every later run slower.
      expect(storages.filter((storage) => storage.enabled === true)).toEqual([]);
      expect(storages.map((storage) => storage.getStore())).toEqual(storages.map(() => undefined));
    } finally {
      delete made.__eutaxyStorages;
    }
  });

  it.each(["node", "workerd"] as const)(
    "lets a snapshot of another request's context make no call of that request (%s)",
    async (runtime) => {
      const result = violated(await check(fixture("snapshot.sim.ts"), { runtime }));
      // The second request's writes run in the first one's context (they see its tenant)...
      expect(JSON.parse(result.message)).toEqual([
        { tenant: "acme", seen: "acme", via: "snapshot" },
        { tenant: "acme", seen: "acme", via: "resource" },
        { tenant: "acme", seen: "acme", via: "bind" },
        { tenant: "globex", seen: "acme", via: "snapshot" },
        { tenant: "globex", seen: "acme", via: "resource" },
        { tenant: "globex", seen: "globex", via: "bind" },
      ]);
      // ...and are its own calls, not calls of the first request, which had answered already.
      const calls = result.trace.filter((line) => / effect #\d+ D1:DB \w+: proceed$/.test(line));
      expect(calls).toEqual([
        ...[0, 1, 2, 3].map((n) => `req-1#1 effect #${n} D1:DB ${n === 0 ? "first" : "run"}: proceed`),
        ...[0, 1, 2, 3].map((n) => `req-2#1 effect #${n} D1:DB ${n === 0 ? "first" : "run"}: proceed`),
      ]);
    },
  );
});
