/**
 * A promise nothing handles while a check runs: the Worker's own is logged as workerd logs it
 * and the request goes on (workers-globals.test.ts, and below in plain Node); any other is left
 * as it would be without eutaxy: a listener of the test's own hears it, vitest reports it, and
 * plain Node ends the process with it.
 */

import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { check } from "../src/index.ts";
import { violated } from "./verdict.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));
const fixtures = fileURLToPath(new URL("./fixtures/foreign-rejection/", import.meta.url));
/** A Worker that leaves a promise rejected and unhandled in every run, and answers 201. */
const unhandled = fileURLToPath(new URL("./fixtures/workers-globals/unhandled.sim.ts", import.meta.url));
const WORKERS = "console.error: Uncaught (in promise) Error: nobody listens";

describe("a rejection that is not the Worker's", () => {
  it("reaches a listener of the test's own, and is not logged as the Worker's", async () => {
    const heard: unknown[] = [];
    const listener = (reason: unknown) => heard.push(reason);
    process.on("unhandledRejection", listener);
    try {
      let once = false;
      const result = violated(
        await check(unhandled, {
          onProgress: () => {
            if (once) return;
            once = true;
            // From the test's own code, while the next run (the one the report traces) goes on.
            setImmediate(() => Promise.reject(new Error("the test's own")));
          },
        }),
      );
      expect(heard).toContainEqual(new Error("the test's own"));
      expect(result.trace.filter((line) => line.includes("the test's own"))).toEqual([]);
      expect(result.trace.some((line) => line.includes(WORKERS))).toBe(true);
    } finally {
      process.off("unhandledRejection", listener);
    }
  });

  it("is reported by vitest in the test file that left it", () => {
    const run = spawnSync(
      process.execPath,
      [`${root}node_modules/vitest/vitest.mjs`, "run", "--root", fixtures],
      {
        cwd: fixtures,
        encoding: "utf8",
        env: { ...process.env, NO_COLOR: "1", CI: "true" },
        timeout: 60_000,
      },
    );
    const output = `${run.stdout}\n${run.stderr}`;
    expect(run.status, output).toBe(1);
    expect(output).toContain("1 passed");
    expect(output).toMatch(/Unhandled Rejection[^\n]*\n+Error: the test's own/);
    expect(output).not.toContain("nobody listens");
  });

  it("reaches a plain Node program's own listener, while the Worker's own does not end the program", () => {
    const node = (args: string[]) =>
      spawnSync(process.execPath, [`${fixtures}beside.mjs`, ...args], { encoding: "utf8", timeout: 60_000 });
    const foreign = node(["foreign"]);
    expect(foreign.status).toBe(1);
    // Its listener hears every rejection, the Worker's too; its own reaches it, and only the
    // Worker's reach the run's trace.
    expect(foreign.stderr).toContain("the program's own listener: not the Worker's\n");
    expect(foreign.stdout.split("\n")[0]).toBe("VIOLATED");
    expect(foreign.stdout).not.toContain("not the Worker's");
    const own = node([]);
    expect(own.stderr).toBe("");
    expect(own.status).toBe(0);
    expect(own.stdout.split("\n")[0]).toBe("VIOLATED");
    expect(own.stdout).toContain(WORKERS);
  });
});
