/**
 * A Worker bound to two entrypoints of one callee (js/test/fixtures/two-entrypoints): both
 * bindings reach the same Worker, with one D1 database, whether the scenario gives a callee()
 * for one binding or for each.
 */

import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { check } from "../src/index.ts";

const fixture = (name: string) =>
  join(dirname(fileURLToPath(import.meta.url)), "fixtures", "two-entrypoints", name);

describe("two bindings to one service", () => {
  for (const scenario of ["shop.sim.ts", "shop.both.sim.ts"]) {
    it(`reach one Worker and its database (${scenario})`, async () => {
      const result = await check(fixture(scenario));
      expect(result.verdict).toBe("BOUNDED");
    });
  }
});
