/**
 * `cloudflare:workers` as workerd exports it (compared with Miniflare 4.20260426.0): `waitUntil`
 * is the running invocation's `ctx.waitUntil`, so a crash in the work it was handed loses that
 * work and not the answer, and the exports eutaxy does not simulate end the check where the Worker
 * uses one, rather than answering `undefined` and reporting the Worker's TypeError as its bug.
 */

import { expect, it } from "vitest";
import { check, renderReport } from "../src/index.ts";

const fixture = (name: string) => new URL(`./fixtures/workers-module/${name}`, import.meta.url).pathname;

it("hands waitUntil's work to the request that runs it: a crash there loses the log, not the answer", async () => {
  const result = await check(fixture("visits.sim.ts"));
  if (result.verdict !== "VIOLATED") throw new Error(`expected VIOLATED, got ${result.verdict}`);
  expect(result.faults).toEqual([
    expect.objectContaining({ kind: "crash_before", invocation: "req-1#1", effect: 1 }),
  ]);
  // The answer came before the crash, which hit the work waitUntil was handed.
  expect(renderReport(result)).toContain(
    "crash_before at req-1#1 effect #1 (D1:DB run), in its ctx.waitUntil work, after it answered 200",
  );
});

it("is BOUNDED when the visit and its log are one batch", async () => {
  const result = await check(fixture("visits.fixed.sim.ts"));
  expect(result.verdict, result.verdict === "VIOLATED" ? result.message : "").toBe("BOUNDED");
});
