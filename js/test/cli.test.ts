/**
 * The `eutaxy` command as a user runs it (the built CLI in a child process): the report, exit
 * codes, and one clear message for each kind of bad input.
 */

import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const root = new URL("../../", import.meta.url).pathname;

function eutaxy(args: string[], cwd = root): { code: number | null; stdout: string; stderr: string } {
  const run = spawnSync(process.execPath, [`${root}js/bin/eutaxy.js`, ...args], { cwd, encoding: "utf8" });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

/** A bad-input failure: exit 2, one line on stderr naming `file`, nothing from our internals. */
function expectBadInput(run: ReturnType<typeof eutaxy>, file: string, problem: RegExp): void {
  expect(run.code).toBe(2);
  expect(run.stdout).toBe("");
  const lines = run.stderr.trimEnd().split("\n");
  expect(lines).toHaveLength(1);
  expect(lines[0]).toContain(file);
  expect(lines[0]).toMatch(problem);
  expect(run.stderr).not.toMatch(/^\s+at /m);
}

describe("eutaxy check", () => {
  it("prints the seed page's report for the planted bug and exits 1", () => {
    const run = eutaxy(["check", "./checkout.sim.ts"], `${root}examples/service-binding`);
    expect(run.code).toBe(1);
    const lines = run.stdout.split("\n");
    expect(lines[0]).toBe("VIOLATED  checkout  (seed checkout)");
    expect(lines[2]).toBe(
      'Invariant one-charge-per-order is violated: 2 rows of charges in D1:payments/DB share order_id = "o-2"',
    );
    expect(lines[4]).toMatch(/^Schedule \(run seed \S+\), events kept: req-2$/);
    expect(lines[5]).toBe("  crash_after at req-2#1 effect #0 (Service:PAYMENTS charge)");
  });

  it("replays the run seed it printed", () => {
    const cwd = `${root}examples/service-binding`;
    const first = eutaxy(["check", "./checkout.sim.ts"], cwd);
    const runSeed = /run seed (\S+)\)/.exec(first.stdout)?.[1] as string;
    const replay = eutaxy(["check", "./checkout.sim.ts", "--replay", runSeed], cwd);
    expect(replay.code).toBe(1);
    expect(replay.stdout.split("\n").slice(0, 6)).toEqual(first.stdout.split("\n").slice(0, 6));
  });

  it("prints BOUNDED for the fix and exits 0", () => {
    const run = eutaxy(["check", "./checkout.fixed.sim.ts"], `${root}examples/service-binding`);
    expect(run.code).toBe(0);
    expect(run.stdout.split("\n")[0]).toBe("BOUNDED  checkout-fixed  (seed checkout-fixed)");
    expect(run.stdout).toMatch(/no invariant broke: \d+ schedules in /);
  });

  it("exits 3 with INCOMPLETE when the budget runs out", () => {
    const run = eutaxy(
      ["check", "./checkout.fixed.sim.ts", "--budget-ms", "1"],
      `${root}examples/service-binding`,
    );
    expect(run.code).toBe(3);
    expect(run.stdout.split("\n")[0]).toBe("INCOMPLETE  checkout-fixed  (seed checkout-fixed)");
  });

  it("says what is wrong with a negative budget, not that the option is ambiguous", () => {
    const run = eutaxy(
      ["check", "./checkout.fixed.sim.ts", "--budget-ms", "-5"],
      `${root}examples/service-binding`,
    );
    expect(run.code).toBe(2);
    expect(run.stderr.split("\n")[0]).toBe(
      "eutaxy: --budget-ms must be a positive whole number of milliseconds, at most 9007199254740991",
    );
  });

  it("writes the counterexample as an HTML page with --html", () => {
    const page = join(mkdtempSync(join(tmpdir(), "eutaxy-html-")), "checkout.html");
    const run = eutaxy(["check", "./checkout.sim.ts", "--html", page], `${root}examples/service-binding`);
    expect(run.code).toBe(1);
    const html = readFileSync(page, "utf8");
    expect(html).toMatch(/^<!doctype html>/i);
    expect(html).toContain("one-charge-per-order");
    expect(html).toContain("crash_after");
    expect(html).toContain("req-2#2");
  });

  it("prints JSON with a schema tag", () => {
    const run = eutaxy(["check", "./checkout.sim.ts", "--json"], `${root}examples/service-binding`);
    expect(run.code).toBe(1);
    const result = JSON.parse(run.stdout) as { schema: string; verdict: string; eventsKept: string[] };
    expect(result.schema).toBe("eutaxy.check/1");
    expect(result.verdict).toBe("VIOLATED");
    expect(result.eventsKept).toEqual(["req-2"]);
  });

  it("documents its options and exit codes in --help", () => {
    const run = eutaxy(["--help"]);
    expect(run.code).toBe(0);
    for (const word of ["--seed", "--replay", "--json", "--budget-ms", "BOUNDED", "VIOLATED", "INCOMPLETE"]) {
      expect(run.stdout).toContain(word);
    }
  });
});

describe("a Worker that escapes the simulation", () => {
  const escapes = `${root}js/test/fixtures/escapes`;

  for (const [scenario, what] of [["forever.sim.ts", "a promise nothing settles"]] as const) {
    it(`stops with exit 4 naming the invocation that awaits ${what}`, () => {
      const run = eutaxy(["check", `./${scenario}`], escapes);
      expect(run.code).toBe(4);
      expect(run.stdout).toBe("");
      expect(run.stderr.trimEnd().split("\n")).toHaveLength(1);
      expect(run.stderr).toMatch(
        /invocation req-1#1 of Worker sleeper is waiting on something outside the simulation/,
      );
    });
  }
});

describe("bad input", () => {
  const bad = `${root}js/test/fixtures/bad`;

  it("names a scenario file that does not exist", () => {
    expectBadInput(eutaxy(["check", "./nope.sim.ts"], bad), "nope.sim.ts", /no such file/);
  });

  it("names a malformed wrangler.jsonc with the position of the error", () => {
    expectBadInput(eutaxy(["check", "./malformed.sim.ts"], bad), "malformed/wrangler.jsonc", /:\d+:\d+/);
  });

  it("names the schema file with a SQL error, at the line and column of the error", () => {
    const run = eutaxy(["check", "./sqlerror.sim.ts"], bad);
    expectBadInput(run, "sqlerror/schema.sql", /syntax error/);
    expect(run.stderr).toBe(
      'eutaxy: sqlerror/schema.sql:8:52: SQL error applying it to D1 DB: statement 2: near ")": syntax error\n',
    );
  });

  it("names a D1 binding no Worker binds", () => {
    expectBadInput(
      eutaxy(["check", "./unknown-binding.sim.ts"], bad),
      "unknown-binding.sim.ts",
      /payments\/NOPE/,
    );
  });

  it("reports a Worker that throws at import as the Worker's", () => {
    expectBadInput(
      eutaxy(["check", "./throws-at-import.sim.ts"], bad),
      "throws-at-import/worker.ts",
      /threw at import/,
    );
  });

  it("refuses a Worker that sets a timer at import: workerd throws there, so it cannot load", () => {
    expectBadInput(
      eutaxy(["check", "./io-at-import-timer.sim.ts"], bad),
      "io-at-import/timer.ts",
      /threw at import: Error: Disallowed operation called within global scope/,
    );
  });

  it("gives a fetch at import workerd's rejected promise: the module loads, no request is sent", () => {
    const run = eutaxy(["check", "./io-at-import-fetch.sim.ts", "--json"], bad);
    expect(run.code).toBe(1);
    const result = JSON.parse(run.stdout) as { message: string; trace: string[] };
    expect(result.message).toBe("req-1#1 was answered 500, not 2xx");
    expect(result.trace).toContainEqual(
      expect.stringMatching(/^req-1#1 threw Error: Disallowed operation called within global scope/),
    );
  });

  it("names a binding of a kind eutaxy does not simulate when the Worker uses it", () => {
    expectBadInput(
      eutaxy(["check", "./unsupported.sim.ts"], bad),
      "unsupported/wrangler.jsonc",
      /r2_buckets\[0\] binds BUCKET, and the Worker used it, but eutaxy does not simulate/,
    );
  });

  it("names a module rule of a type it cannot honour, with its config", () => {
    expectBadInput(
      eutaxy(["check", "./python-rule.sim.ts"], bad),
      "python-rule/wrangler.jsonc",
      /: rules\[0\]\.type is "PythonModule"; a module rule's type must be one of Text, Data, CompiledWasm, ESModule, CommonJS/,
    );
  });

  it("rejects a malformed run seed", () => {
    const run = eutaxy(
      ["check", "./checkout.sim.ts", "--replay", "not-a-seed"],
      `${root}examples/service-binding`,
    );
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/--replay/);
  });

  it("rejects an unknown command", () => {
    expect(eutaxy(["frobnicate"]).code).toBe(2);
  });
});

describe("a Worker that logs", () => {
  const fixtures = `${root}js/test/fixtures/console`;

  it("keeps --json the check's own: its logs are in the counterexample's trace, not on stdout", () => {
    const run = eutaxy(["check", "./greet.sim.ts", "--json"], fixtures);
    expect(run.code).toBe(1);
    const result = JSON.parse(run.stdout) as { verdict: string; trace: string[] };
    expect(result.verdict).toBe("VIOLATED");
    expect(result.trace).toContain('req-1#1 console.log: greeting /hi {"at":1767225600000}');
    expect(result.trace).toContain("req-1#1 console.error: RangeError: not really an error");
    // What the module logs as it loads is part of every run, before its first delivery.
    expect(result.trace).toContain("init console.log: loading the greeter");
    expect(run.stderr).toBe("");
  });
});
