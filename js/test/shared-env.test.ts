/**
 * A Worker's env is one object for every request of a run, its bindings the same objects, as
 * workerd gives them (js/test/fixtures/shared-env, compared with Miniflare 4.20260426): a handle
 * a module keeps from its first request makes the next requests' calls as theirs.
 */

import { expect, it } from "vitest";
import { check } from "../src/index.ts";

const fixture = (name: string) => new URL(`./fixtures/shared-env/${name}`, import.meta.url).pathname;

it("gives the second request the env of the first, its bindings those of cloudflare:workers' env", async () => {
  const result = await check(fixture("facts.sim.ts"));
  expect(result.verdict, result.verdict === "VIOLATED" ? result.message : "").toBe("BOUNDED");
});

it("finds the race through a kept handle, each call made by the request that made it", async () => {
  const result = await check(fixture("race.sim.ts"));
  if (result.verdict !== "VIOLATED") throw new Error(`expected VIOLATED, got ${result.verdict}`);
  expect(result.eventsKept).toEqual(["req-1", "req-2"]);
  const effects = result.trace
    .filter((line) => /^req-\d#1 effect #\d/.test(line))
    .map((line) => line.split(":")[0]);
  expect(effects).toEqual([
    "req-1#1 effect #0 D1",
    "req-2#1 effect #0 D1",
    "req-2#1 effect #1 D1",
    "req-1#1 effect #1 D1",
  ]);
});

it("makes a call as the request whose code makes it, woken by a promise another request started", async () => {
  const result = await check(fixture("shared-promise.sim.ts"));
  if (result.verdict !== "VIOLATED") throw new Error(`expected VIOLATED, got ${result.verdict}`);
  const inserts = result.trace.flatMap((line, at) => {
    const made = /^(req-\d)#1 effect #\d+ D1:DB run: proceed$/.exec(line);
    return made ? [[made[1], result.trace[at + 1]?.match(/\["(req-\d) \(woken\)"\]/)?.[1]]] : [];
  });
  expect(inserts).toHaveLength(2);
  for (const [by, inserted] of inserts) expect(inserted).toBe(by);
});
