/**
 * The `eutaxy` command as a user runs it (the built CLI in a child process): the report, exit
 * codes, and one clear message for each kind of bad input.
 */

import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempFolder } from "./files.ts";

const root = new URL("../../", import.meta.url).pathname;

function eutaxy(
  args: string[],
  cwd = root,
  env: NodeJS.ProcessEnv = process.env,
): { code: number | null; stdout: string; stderr: string } {
  const run = spawnSync(process.execPath, [`${root}js/bin/eutaxy.js`, ...args], {
    cwd,
    encoding: "utf8",
    env,
  });
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

/** A mistake in the command line: exit 2, and `line` alone on stderr, without the help page. */
function expectUsageError(run: ReturnType<typeof eutaxy>, line: string): void {
  expect(run.stderr).toBe(`${line}\n`);
  expect(run.stdout).toBe("");
  expect(run.code).toBe(2);
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
    // One invocation at a time: nothing multiplies faults by interleavings.
    expect(run.stdout).not.toContain("Faults and interleavings multiply");
  });

  it("says how to split an INCOMPLETE check that both injects faults and interleaves", () => {
    // Ten orders, two faults a run, two invocations at once: far more than three seconds cover,
    // and enough runs in them, even on a loaded machine, to tell.
    const run = eutaxy(["check", "./orders-10.sim.ts", "--budget-ms", "3000"], `${root}js/bench/scenarios`);
    expect(run.code).toBe(3);
    expect(run.stdout).toContain(
      "Faults and interleavings multiply: checking the races (maxFaultsPerRun 0) and the faults (maxConcurrentInvocations 1) in two scenarios takes far fewer schedules; --workers N also explores on N CPUs.",
    );
  });

  it("says to give a budget spent on the first runs more time, before anything else", () => {
    const run = eutaxy(["check", "./seats.gated.sim.ts", "--budget-ms", "1"], `${root}examples/seats-race`);
    expect(run.code).toBe(3);
    expect(run.stdout).toContain(
      "The first runs compile the Workers' code and take the longest, so a budget spent on them says little of how many schedules the bounds hold: give it a few seconds before splitting the scenario.",
    );
    expect(run.stdout).not.toContain("Faults and interleavings multiply");
  });

  it("says what is wrong with a negative budget, not that the option is ambiguous", () => {
    const run = eutaxy(
      ["check", "./checkout.fixed.sim.ts", "--budget-ms", "-5"],
      `${root}examples/service-binding`,
    );
    expectUsageError(
      run,
      "eutaxy: --budget-ms must be a whole number of milliseconds from 1 to 9007199254740991, not -5",
    );
  });

  it("writes the counterexample as an HTML page with --html", () => {
    const page = join(tempFolder("eutaxy-html-"), "checkout.html");
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

  it("leaves no temporary folder behind when it runs the Workers in workerd", () => {
    const tmp = tempFolder("eutaxy-tmpdir-");
    const cwd = `${root}examples/service-binding`;
    const run = eutaxy(["check", "./checkout.fixed.sim.ts", "--runtime", "workerd"], cwd, {
      ...process.env,
      TMPDIR: tmp,
    });
    expect(run.code).toBe(0);
    expect(readdirSync(tmp)).toEqual([]);
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
      // With the run it happened in, which replays to the same point.
      const runSeed = /\(in run (\S+), which --replay runs again\)$/.exec(run.stderr.trimEnd())?.[1];
      expect(runSeed).toBeDefined();
      expect(eutaxy(["replay", `./${scenario}`, runSeed as string], escapes).stderr).toBe(run.stderr);
    });
  }
});

describe("bad input", () => {
  const bad = `${root}js/test/fixtures/bad`;

  it("names a scenario file that does not exist", () => {
    expectBadInput(eutaxy(["check", "./nope.sim.ts"], bad), "nope.sim.ts", /no such file/);
  });

  it("says a folder is one and names the scenarios in it", () => {
    expectBadInput(
      eutaxy(["check", "."], `${root}examples/service-binding`),
      ".",
      /^eutaxy: \.: is a folder, not a scenario: a scenario is one \*\.sim\.ts file, such as checkout\.fixed\.sim\.ts, checkout\.sim\.ts in this folder$/,
    );
  });

  it("says a Worker's module is not a scenario, not esbuild's error about cloudflare:workers", () => {
    expectBadInput(
      eutaxy(["check", "payments/worker.ts"], `${root}examples/service-binding`),
      "payments/worker.ts",
      /^eutaxy: payments\/worker\.ts: is a Worker's module, not a scenario: it imports cloudflare:workers; a scenario is a \*\.sim\.ts file/,
    );
  });

  it("says a wrangler config is not a scenario", () => {
    expectBadInput(
      eutaxy(["check", "wrangler.jsonc"], `${root}examples/service-binding`),
      "wrangler.jsonc",
      /^eutaxy: wrangler\.jsonc: is a wrangler config, not a scenario/,
    );
  });

  it("names a malformed wrangler.jsonc with the position of the error", () => {
    expectBadInput(eutaxy(["check", "./malformed.sim.ts"], bad), "malformed/wrangler.jsonc", /:\d+:\d+/);
  });

  it("names the wrangler config first when its main points at a file that does not exist", () => {
    const run = eutaxy(["check", "./main-wrong.sim.ts"], bad);
    expectBadInput(run, "main-wrong/wrangler.jsonc", /main points at src\/main\.ts, which does not exist/);
    expect(run.stderr).toMatch(/^eutaxy: main-wrong\/wrangler\.jsonc: main points at/);
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

  it("reports a Worker that throws at import as the Worker's, at the line it threw at", () => {
    const run = eutaxy(["check", "./throws-at-import.sim.ts"], bad);
    expectBadInput(run, "throws-at-import/worker.ts", /threw at import/);
    expect(run.stderr).toBe(
      "eutaxy: throws-at-import/worker.ts:10:9: the Worker threw at import: Error: notes: MAX_NOTE_LENGTH is not a number\n",
    );
  });

  it("names the module a Worker's entry imports, and its line, when that module throws at import", () => {
    const run = eutaxy(["check", "./throws-at-import-indirect.sim.ts"], bad);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      "eutaxy: throws-at-import-indirect/limits.ts:5:34: the Worker throws-at-import-indirect/worker.ts threw at import: Error: notes: the limit two hundred is not a number\n",
    );
  });

  it("refuses a Worker that sets a timer at import: workerd throws there, so it cannot load", () => {
    expectBadInput(
      eutaxy(["check", "./io-at-import-timer.sim.ts"], bad),
      "io-at-import/timer.ts:3:1",
      /threw at import: Error: Disallowed operation called within global scope/,
    );
  });

  it("gives a fetch at import workerd's rejected promise: the module loads, no request is sent", () => {
    const run = eutaxy(["check", "./io-at-import-fetch.sim.ts", "--json"], bad);
    expect(run.code).toBe(1);
    const result = JSON.parse(run.stdout) as { message: string; trace: string[] };
    expect(result.message).toMatch(
      /^req-1#1 was answered 500, not 2xx: its handler threw Error: Disallowed operation called within global scope/,
    );
    expect(result.trace).toContainEqual(
      expect.stringMatching(/^req-1#1 threw Error: Disallowed operation called within global scope/),
    );
  });

  it("names a binding of a kind eutaxy does not simulate when the Worker uses it", () => {
    expectBadInput(
      eutaxy(["check", "./unsupported.sim.ts"], bad),
      "unsupported/wrangler.jsonc",
      /analytics_engine_datasets\[0\] binds EVENTS, and the Worker used it, but eutaxy does not simulate/,
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

describe("a mistake in the command line is one line, not the help page", () => {
  const cases: [string, string[], string][] = [
    ["check with no file", ["check"], "eutaxy: check needs a scenario file: eutaxy check <scenario.sim.ts>"],
    [
      "an unknown option, with the one it misspells",
      ["check", "a.sim.ts", "--jsno"],
      "eutaxy: unknown option --jsno; did you mean --json?",
    ],
    [
      "an unknown option like no known one",
      ["check", "a.sim.ts", "--frobnicate"],
      "eutaxy: unknown option --frobnicate (eutaxy --help lists the options)",
    ],
    [
      "a long option written with one dash",
      ["check", "a.sim.ts", "-json"],
      "eutaxy: unknown option -json; did you mean --json?",
    ],
    [
      "a budget of nothing",
      ["check", "a.sim.ts", "--budget-ms", "0"],
      "eutaxy: --budget-ms must be a whole number of milliseconds from 1 to 9007199254740991, not 0",
    ],
    [
      "a shard past the last",
      ["check", "a.sim.ts", "--shard", "5/4"],
      "eutaxy: --shard takes I/N with 1 <= I <= N (shard I of N), not 5/4",
    ],
    [
      "an option without its value",
      ["check", "a.sim.ts", "--seed"],
      "eutaxy: --seed needs a value: --seed S",
    ],
    [
      "an option whose value is another option",
      ["check", "a.sim.ts", "--seed", "--json"],
      "eutaxy: --seed needs a value: --seed S",
    ],
    [
      "a value for a switch",
      ["check", "a.sim.ts", "--json=yes"],
      "eutaxy: --json takes no value, and was given yes",
    ],
    [
      "merge with no files",
      ["merge"],
      "eutaxy: merge needs the --json results of the shards: eutaxy merge <result.json>...",
    ],
    [
      "a misspelt command",
      ["chekc", "a.sim.ts"],
      "eutaxy: unknown command chekc; did you mean check? (the commands are check, replay and merge)",
    ],
    [
      "a scenario without a command",
      ["a.sim.ts"],
      "eutaxy: a.sim.ts is not a command; to check it: eutaxy check a.sim.ts (the commands are check, replay and merge)",
    ],
    [
      "replay without its run seed",
      ["replay", "a.sim.ts"],
      "eutaxy: replay: the run seed is missing after a.sim.ts: eutaxy replay a.sim.ts <RUN_SEED>, with the run seed a VIOLATED report printed",
    ],
    [
      "check given several scenarios, as a shell glob gives them",
      ["check", "a.sim.ts", "b.sim.ts"],
      "eutaxy: check takes one scenario file, and was given 2: a.sim.ts, b.sim.ts (a shell glob such as *.sim.ts expands to every file it matches; run eutaxy check once for each)",
    ],
    [
      "check given a run seed as its second argument",
      ["check", "a.sim.ts", "42fbb229c28a2459:2:A2.1@0:1"],
      "eutaxy: check takes one scenario file; to run a run seed, eutaxy check a.sim.ts --replay 42fbb229c28a2459:2:A2.1@0:1 (or eutaxy replay a.sim.ts 42fbb229c28a2459:2:A2.1@0:1)",
    ],
    [
      "no workers",
      ["check", "a.sim.ts", "--workers", "0"],
      "eutaxy: --workers must be a whole number from 1 to 64, not 0",
    ],
    [
      "a strategy there is not, before the scenario is read",
      ["check", "a.sim.ts", "--strategy", "foo"],
      "eutaxy: --strategy foo: the strategies are exhaustive, random, pct, auto",
    ],
  ];
  for (const [what, args, line] of cases) {
    it(`for ${what}`, () => expectUsageError(eutaxy(args), line));
  }

  it("--pct-depth with a strategy that does not use it", () => {
    expectUsageError(
      eutaxy(
        ["check", "./checkout.sim.ts", "--strategy", "random", "--pct-depth", "3"],
        `${root}examples/service-binding`,
      ),
      "eutaxy: --pct-depth is PCT's bug depth, which --strategy random does not use (pct does, and auto when it samples)",
    );
  });

  it("with no arguments at all, is the short usage and where the options are listed", () => {
    const run = eutaxy([]);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr).toBe(
      [
        "Usage: eutaxy check <scenario.sim.ts> [options]",
        "       eutaxy replay <scenario.sim.ts> <RUN_SEED> [options]",
        "       eutaxy merge <result.json>... [--json] [--junit FILE]",
        "eutaxy --help lists the options and exit codes.",
        "",
      ].join("\n"),
    );
  });

  it("leaves -h as --help", () => {
    const run = eutaxy(["-h"]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("--budget-ms N");
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
    // Colour is the terminal's: the trace keeps the text.
    expect(result.trace).toContain("req-1#1 console.log: --> GET /hi 200");
    // What the module logs as it loads is part of every run, before its first delivery.
    expect(result.trace).toContain("init console.log: loading the greeter");
    expect(run.stderr).toBe("");
  });
});
