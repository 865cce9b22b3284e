/**
 * WeakRef and FinalizationRegistry (js/test/fixtures/weak-refs): the host's collector takes what
 * it takes when its heap says so, which no seed decides. A Worker that caches rows in WeakRefs
 * and counts finalized ones must still give one verdict for one seed, on either runtime, and see
 * the platform's classes in all but collecting; a Worker whose compatibility leaves them out has
 * none, as workerd gives it none.
 */

import { describe, expect, it } from "vitest";
import { check } from "../src/index.ts";

const fixture = (file: string) => new URL(`./fixtures/weak-refs/${file}`, import.meta.url).pathname;

describe("a cache of rows held in WeakRefs, with a FinalizationRegistry", () => {
  it.each(["node", "workerd"] as const)(
    "is BOUNDED, with nothing collected within a run, however much garbage it makes (%s)",
    async (runtime) => {
      expect((await check(fixture("settings.sim.ts"), { runtime })).verdict).toBe("BOUNDED");
    },
  );

  it.each(["node", "workerd"] as const)(
    "sees WeakRef and FinalizationRegistry as the platform's: deref, unregister, instanceof, refusals (%s)",
    async (runtime) => {
      const result = await check(fixture("semantics.sim.ts"), { runtime });
      expect(result.verdict === "VIOLATED" ? result.message : result.verdict).toBe("BOUNDED");
    },
  );
});

describe("a Worker whose compatibility date is before 2025-05-05", () => {
  it.each(["node", "workerd"] as const)(
    "has no WeakRef or FinalizationRegistry, unless enable_weak_ref gives them (%s)",
    async (runtime) => {
      for (const file of ["defined.sim.ts", "enabled.sim.ts"]) {
        const result = await check(fixture(file), { runtime });
        expect(result.verdict === "VIOLATED" ? result.message : result.verdict).toBe("BOUNDED");
      }
    },
  );
});
