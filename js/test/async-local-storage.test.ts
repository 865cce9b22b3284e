/**
 * A Worker's own AsyncLocalStorage (js/test/fixtures/async-local-storage): each request sees its
 * own store after every await of a binding, whatever the interleaving, on both runtimes; and the
 * storage each run makes at the module's top level is let go of when the run ends, so that Node
 * does not go on calling every earlier run's storage at every promise of the later runs.
 */

import { describe, expect, it } from "vitest";
import { check } from "../src/index.ts";

const scenario = new URL("./fixtures/async-local-storage/tenants.sim.ts", import.meta.url).pathname;

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
});
