/**
 * The two runtimes agree: every example scenario (`examples/*\/*.sim.ts`), checked with its Worker
 * code running in Node and then inside workerd, gets the same verdict after the same number of
 * runs, and a VIOLATED one the same invariant, message, run seed, kept events, faults and trace,
 * line for line. Replaying that run seed inside workerd reproduces the trace too. Bad input and
 * escapes found inside workerd come back as the same errors, with the same messages.
 *
 * The budget is raised for both runtimes alike, so that neither stops early on a slow machine:
 * what is compared is the exploration, not the speed.
 */

import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { type CheckResult, check, InputError, SimulationError } from "../src/index.ts";

const examples = new URL("../../examples/", import.meta.url).pathname;
const fixture = (path: string) => new URL(`fixtures/${path}`, import.meta.url).pathname;

const scenarios = readdirSync(examples, { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .flatMap((dir) =>
    readdirSync(join(examples, dir.name))
      .filter((file) => file.endsWith(".sim.ts"))
      .map((file) => `${dir.name}/${file}`),
  )
  .sort();

const BUDGET_MS = 120_000;

/** Everything in a result but the wall-clock time it took. */
function comparable(result: CheckResult): Omit<CheckResult, "elapsedMs"> {
  const { elapsedMs: _elapsedMs, ...rest } = result;
  return rest;
}

describe("the workerd runtime", () => {
  it("runs the Worker code inside workerd, not in Node", async () => {
    const where = fixture("runtimes/where.sim.ts");
    expect(await check(where, { runtime: "workerd" })).toMatchObject({ message: "ran in workerd" });
    expect(await check(where)).toMatchObject({ message: "ran in Node" });
  });

  it("evaluates the scenario with the environment the check was started in", async () => {
    process.env.EUTAXY_FIXTURE_EXPECTED = "ok";
    try {
      const file = fixture("runtimes/from-env.sim.ts");
      const message = "expected ok, read ok";
      expect(await check(file, { runtime: "workerd" })).toMatchObject({ message });
      expect(await check(file)).toMatchObject({ message });
    } finally {
      delete process.env.EUTAXY_FIXTURE_EXPECTED;
    }
  });

  it("says INCOMPLETE when the budget runs out inside workerd", async () => {
    // workerd's clock moves while the exploration runs, so the budget is measured there.
    const result = await check(join(examples, "d1-transfer/transfer.fixed.sim.ts"), {
      runtime: "workerd",
      budgetMs: 1,
    });
    expect(result).toMatchObject({ verdict: "INCOMPLETE", reason: "budget" });
  });

  it("finds every example, each with its planted bug and its fix", () => {
    expect(scenarios.length).toBeGreaterThanOrEqual(12);
  });

  for (const scenario of scenarios) {
    it(`gives ${scenario} the verdict and trace Node gives it`, async () => {
      const file = join(examples, scenario);
      const node = await check(file, { budgetMs: BUDGET_MS });
      const workerd = await check(file, { budgetMs: BUDGET_MS, runtime: "workerd" });
      expect(node.verdict).toMatch(/^(BOUNDED|VIOLATED)$/);
      expect(comparable(workerd)).toEqual(comparable(node));
      if (node.verdict !== "VIOLATED") return;
      const replayed = await check(file, { runtime: "workerd", replay: node.runSeed });
      expect(replayed.verdict).toBe("VIOLATED");
      if (replayed.verdict === "VIOLATED") {
        expect(replayed.runSeed).toBe(node.runSeed);
        expect(replayed.trace).toEqual(node.trace);
      }
    });
  }
});

describe("errors found inside workerd", () => {
  const failure = (file: string, runtime: "node" | "workerd") =>
    check(file, { runtime }).then(
      (result) => new Error(`expected an error, got ${result.verdict}`),
      (error: unknown) => error as Error,
    );
  const cases = [
    ["bad/throws-at-import.sim.ts", InputError],
    ["bad/throws-at-import-indirect.sim.ts", InputError],
    ["bad/io-at-import-timer.sim.ts", InputError],
    ["bad/sqlerror.sim.ts", InputError],
    ["outbound/unscripted.sim.ts", InputError],
    ["escapes/forever.sim.ts", SimulationError],
  ] as const;
  for (const [path, kind] of cases) {
    it(`come back from ${path} as the ${kind.name} Node raises, with its message`, async () => {
      const node = await failure(fixture(path), "node");
      const workerd = await failure(fixture(path), "workerd");
      expect(node).toBeInstanceOf(kind);
      expect(workerd).toBeInstanceOf(kind);
      expect(workerd.message).toBe(node.message);
    });
  }
});
