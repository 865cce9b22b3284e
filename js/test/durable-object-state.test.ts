/**
 * Custom invariants read what a Durable Object keeps with the KV-style storage API.
 */

import { expect, it } from "vitest";
import { check } from "../src/index.ts";

const fixture = (file: string) => new URL(`./fixtures/tally/${file}`, import.meta.url).pathname;

it("reads a Durable Object's stored value in a custom invariant and finds the double add", async () => {
  const result = await check(fixture("tally.sim.ts"));
  if (result.verdict !== "VIOLATED") throw new Error(`expected VIOLATED, got ${result.verdict}`);
  expect(result.invariant).toBe("total-matches-answers");
  expect(result.message).toMatch(/^the tally holds \d+, but the \d+ answered adds sum to \d+$/);
  expect(result.faults).toHaveLength(1);
  expect(result.faults[0]?.label).toBe("DO:TALLY add");
});
