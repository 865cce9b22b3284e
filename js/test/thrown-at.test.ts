/**
 * Where a Worker's exception was thrown (js/test/fixtures/thrown-at): the step-by-step listing
 * names the line of the Worker's own files that threw, or that called the library that threw
 * (zod's `parse`), after the exception, on either runtime.
 */

import { describe, expect, it } from "vitest";
import { check } from "../src/index.ts";
import { violated } from "./verdict.ts";

const fixture = new URL("./fixtures/thrown-at/signup.sim.ts", import.meta.url).pathname;

describe("an exception a library throws for the Worker", () => {
  it.each(["node", "workerd"] as const)(
    "is listed at the Worker's line that called it (%s)",
    async (runtime) => {
      const result = violated(await check(fixture, { runtime }));
      const threw = result.trace.find((line) => line.startsWith("req-1#1 threw "));
      expect(threw).toMatch(
        /^req-1#1 threw ZodError: [\s\S]*"Invalid email address"[\s\S]* \(at \S*thrown-at\/worker\.ts:9:30\)$/,
      );
    },
  );
});
