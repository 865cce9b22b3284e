/**
 * The signup scenario as vitest tests. eutaxy runs the Worker's real code in one deterministic
 * simulation, crashes the invocation before and after every binding call, resends what got no
 * answer, and checks the scenario's invariant after every run. These run in plain Node (the
 * `eutaxy` project in vitest.config.ts), not in the Workers pool.
 */

import { checkScenario, scenarioTest } from "eutaxy/vitest";
import { describe, expect, it } from "vitest";

describe("signup under crashes and resends", () => {
  it("finds the resend that answers 409 to an account never welcomed", async () => {
    const result = await checkScenario(new URL("../signup.sim.ts", import.meta.url));
    expect(result).toBeViolated("answered-signups-are-welcomed");
  });

  it("welcomes every answered signup once a resend finishes what the first delivery began", async () => {
    expect(await checkScenario(new URL("../signup.fixed.sim.ts", import.meta.url))).toBeBounded();
  });
});

// The same two checks, one line each.
scenarioTest("signup.sim.ts is VIOLATED", new URL("../signup.sim.ts", import.meta.url), {
  violated: "answered-signups-are-welcomed",
});
scenarioTest("signup.fixed.sim.ts is BOUNDED", new URL("../signup.fixed.sim.ts", import.meta.url), "BOUNDED");
