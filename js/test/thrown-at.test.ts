/**
 * Where a Worker's exception was thrown (js/test/fixtures/thrown-at): the step-by-step listing
 * names the line of the Worker's own files that threw, or that called the library that threw
 * (zod's `parse`), after the exception, on either runtime; an error D1 rejects with has the
 * Worker's frames that called D1 as its stack, as workerd's has, not the run loop's.
 */

import { describe, expect, it } from "vitest";
import { check } from "../src/index.ts";
import { violated } from "./verdict.ts";

const fixture = new URL("./fixtures/thrown-at/signup.sim.ts", import.meta.url).pathname;
const orders = new URL("./fixtures/thrown-at/orders.sim.ts", import.meta.url).pathname;

describe("an exception a library throws for the Worker", () => {
  it.each(["node", "workerd"] as const)(
    "is listed at the Worker's line that called it (%s)",
    async (runtime) => {
      const result = violated(await check(fixture, { runtime }));
      const threw = result.trace.find((line) => line.startsWith("req-1#1 threw "));
      expect(threw).toMatch(
        /^req-1#1 threw ZodError: [\s\S]*"Invalid email address"[\s\S]* \(at \S*thrown-at\/worker\.ts:22:30\)$/,
      );
    },
  );
});

describe("an error D1 rejects with", () => {
  it.each(["node", "workerd"] as const)(
    "has the Worker's code that called D1 as its stack, and is listed at that line (%s)",
    async (runtime) => {
      const result = violated(await check(orders, { runtime }));
      const logged = result.trace.find((line) => line.startsWith("req-1#1 console.log: "));
      // The Worker's frames alone, as V8 follows its awaits: not the host's that called its handler.
      expect(logged?.split("\n")).toEqual([
        "req-1#1 console.log: Error: D1_ERROR: no such table: orders: SQLITE_ERROR",
        expect.stringMatching(/^ {4}at async orders \(/),
        expect.stringMatching(/^ {4}at async Object\.fetch \(/),
      ]);
      const threw = result.trace.find((line) => line.startsWith("req-1#1 threw "));
      expect(threw).toMatch(
        /^req-1#1 threw Error: D1_ERROR: no such table: orders: SQLITE_ERROR \(at \S*thrown-at\/worker\.ts:9:11\)$/,
      );
    },
  );
});
