/**
 * `eutaxy/vitest` as a user meets it: the matchers pass and fail on the vitest example's checks,
 * a failure's message is the report the CLI prints (with the replay command), checkScenario
 * refuses what it cannot read with one message, scenarioTest registers working tests, and the
 * example's own `pnpm test` passes through the package's built export.
 */

import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { renderReport } from "../src/index.ts";
import { checkScenario, scenarioTest } from "../src/vitest.ts";

const planted = new URL("../../examples/vitest/signup.sim.ts", import.meta.url);
const fixed = new URL("../../examples/vitest/signup.fixed.sim.ts", import.meta.url);
const INVARIANT = "answered-signups-are-welcomed";

/** The message of the assertion `assert` fails with. */
function failureOf(assert: () => void): string {
  try {
    assert();
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error("the assertion passed");
}

describe("the matchers on a BOUNDED check", () => {
  it("pass toBeBounded and toHold, and fail toBeViolated with the report", async () => {
    const result = await checkScenario(fixed);
    expect(result).toBeBounded();
    expect(result).toHold();
    expect(result).not.toBeViolated();
    const message = failureOf(() => expect(result).toBeViolated(INVARIANT));
    expect(message).toBe(
      `expected the check to be VIOLATED (invariant ${INVARIANT}), but it is BOUNDED:\n\n${renderReport(result)}`,
    );
    expect(message).toMatch(/^BOUNDED {2}signup-fixed {2}\(seed signup-fixed\)$/m);
  });
});

describe("the matchers on a VIOLATED check", () => {
  it("pass toBeViolated with and without the invariant's name", async () => {
    const result = await checkScenario(planted);
    expect(result).toBeViolated();
    expect(result).toBeViolated(INVARIANT);
    expect(result).not.toBeBounded();
    expect(result).not.toHold();
  });

  it("fail toBeBounded with the report, the command that replays the schedule and the one that prints it", async () => {
    const result = await checkScenario(planted);
    if (result.verdict !== "VIOLATED") throw new Error(`expected VIOLATED, got ${result.verdict}`);
    const message = failureOf(() => expect(result).toBeBounded());
    expect(message).toBe(
      `expected the check to be BOUNDED, but it is VIOLATED:\n\n${renderReport(result)}\nStep by step: eutaxy replay examples/vitest/signup.sim.ts ${result.runSeed}`,
    );
    expect(message).toContain(
      `Invariant ${INVARIANT} is violated: grace@example.com was answered 409, but was never sent the welcome mail`,
    );
    expect(message).toContain("crash_before at req-2#1 effect #3 (D1:DB run)");
    expect(message).toMatch(/^Replay: eutaxy check \S*signup\.sim\.ts --replay [0-9a-f]{16}:\S+$/m);
    expect(message).toContain(`--replay ${result.runSeed}`);
  });

  it("fail toBeViolated for another invariant, naming both", async () => {
    const result = await checkScenario(planted);
    const message = failureOf(() => expect(result).toBeViolated("one-account-per-email"));
    expect(message.split("\n")[0]).toBe(
      `expected the check to break invariant one-account-per-email, but it broke ${INVARIANT}:`,
    );
  });
});

describe("the matchers on a replay", () => {
  it("hold for a replayed run that breaks nothing, and not for the counterexample's", async () => {
    // A crash before the first D1 call of the second signup: the resend does the whole signup.
    const held = await checkScenario(planted, { replay: "508bb18f7aa2a8c9:2:B2.1@0:1" });
    expect(held.verdict).toBe("HELD");
    expect(held).toHold();
    expect(held).not.toBeBounded();

    const broken = await checkScenario(planted, { replay: "508bb18f7aa2a8c9:2:B2.1@3:1" });
    expect(broken).toBeViolated(INVARIANT);
    expect(failureOf(() => expect(broken).toHold()).split("\n")[0]).toBe(
      "expected the check to be BOUNDED (or HELD, for a replay), but it is VIOLATED:",
    );
  });
});

describe("misuse", () => {
  it("fails a matcher given something other than a check's result", async () => {
    expect(failureOf(() => expect(42).toBeBounded())).toBe(
      "toBeBounded() needs the result of check() or checkScenario(), but got a number",
    );
    expect(() => expect(undefined).not.toBeViolated()).toThrow(
      "toBeViolated() needs the result of check() or checkScenario(), but got undefined",
    );
    const pending = checkScenario(fixed);
    expect(failureOf(() => expect(pending).toHold())).toMatch(
      /^toHold\(\) needs the result of a check, but got a promise: await/,
    );
    await pending;
  });

  it("refuses a relative path, which would depend on where vitest was started", async () => {
    await expect(checkScenario("./signup.sim.ts")).rejects.toThrow(
      './signup.sim.ts: checkScenario needs the scenario as new URL("./signup.sim.ts", import.meta.url) or an absolute path',
    );
  });

  it("names a missing scenario file, with a stack that starts at the caller", async () => {
    const missing = new URL("../../examples/vitest/missing.sim.ts", import.meta.url);
    const error = await checkScenario(missing).catch((e: unknown) => e as Error);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(/missing\.sim\.ts: no such file$/);
    expect((error as Error).stack?.split("\n")[1]).toContain("vitest-integration.test.ts");
  });

  it("refuses a scenario test with an unknown expectation", () => {
    expect(() => scenarioTest("x", fixed, "bounded" as never)).toThrow(
      'scenarioTest "x": expected "BOUNDED", "VIOLATED" or { violated: "invariant-name" }, got "bounded"',
    );
  });
});

describe("scenarioTest", () => {
  scenarioTest("registers a test that expects BOUNDED", fixed, "BOUNDED");
  scenarioTest("registers a test that expects the named invariant VIOLATED", planted, {
    violated: INVARIANT,
  });
  scenarioTest("registers a test that expects VIOLATED", fileURLToPath(planted), "VIOLATED");
});

describe("a scenario test that fails", () => {
  it("points vitest's report at the line that registered it, not into eutaxy", () => {
    const site = fileURLToPath(new URL("./fixtures/scenario-test-site/", import.meta.url));
    const run = spawnSync(
      process.execPath,
      [
        fileURLToPath(new URL("../../node_modules/vitest/vitest.mjs", import.meta.url)),
        "run",
        "--root",
        site,
      ],
      { cwd: site, encoding: "utf8", env: { ...process.env, NO_COLOR: "1", CI: "true" }, timeout: 60_000 },
    );
    const output = `${run.stdout}\n${run.stderr}`;
    expect(run.status, output).toBe(1);
    expect(output).toContain("expected the check to be BOUNDED, but it is VIOLATED");
    expect(output).toMatch(/❯ failing\.spec\.ts:5:1$/m);
  }, 60_000);
});

describe("the vitest example", () => {
  it("passes its own `pnpm test`: unit tests and scenario tests, through eutaxy/vitest's build", () => {
    const run = spawnSync("pnpm", ["--filter", "eutaxy-example-vitest", "test"], {
      cwd: fileURLToPath(new URL("../..", import.meta.url)),
      encoding: "utf8",
      env: { ...process.env, NO_COLOR: "1", CI: "true" },
      timeout: 120_000,
    });
    expect(run.status, `${run.stdout}\n${run.stderr}`).toBe(0);
    expect(run.stdout).toMatch(/\|eutaxy\| test\/signup\.sim\.test\.ts \(4 tests\)/);
    expect(run.stdout).toMatch(/\|unit\| test\/worker\.test\.ts \(8 tests\)/);
    expect(run.stdout).toMatch(/Tests {2}12 passed \(12\)/);
  }, 150_000);
});
