/**
 * What the command prints for CI and for a person replaying a run: the JSON against its
 * published schema, the JUnit report as a CI system reads it, color only where it belongs, the
 * progress line only on a terminal, and a run step by step (`eutaxy replay`, `--trace`).
 */

import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Ajv } from "ajv";
import { describe, expect, it } from "vitest";
import { check } from "../src/check.ts";
import { type Progress, progressLine } from "../src/progress.ts";
import { renderReport } from "../src/report.ts";
import { parseStep, renderTrace } from "../src/trace.ts";
import { tempFolder } from "./files.ts";

const root = new URL("../../", import.meta.url).pathname;
const example = `${root}examples/service-binding`;

/** The environment without the variables that turn color on or off, as in a plain CI job. */
function plainEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  for (const name of ["FORCE_COLOR", "NO_COLOR"]) if (!(name in extra)) delete env[name];
  return env;
}

function eutaxy(
  args: string[],
  { cwd = example, env = plainEnv() }: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): { code: number | null; stdout: string; stderr: string } {
  const run = spawnSync(process.execPath, [`${root}js/bin/eutaxy.js`, ...args], {
    cwd,
    env,
    encoding: "utf8",
  });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

/** The run seed of the planted bug's counterexample, found once. */
let violation: { runSeed: string; json: Record<string, unknown> } | undefined;
function planted(): { runSeed: string; json: Record<string, unknown> } {
  if (!violation) {
    const json = JSON.parse(eutaxy(["check", "./checkout.sim.ts", "--json"]).stdout) as Record<
      string,
      unknown
    >;
    violation = { runSeed: json.runSeed as string, json };
  }
  return violation;
}

/** The same events and redeliveries with no fault: a run that breaks nothing. */
function faultless(runSeed: string): string {
  const [hash, events, , redeliveries] = runSeed.split(":");
  return `${hash}:${events}:-:${redeliveries}`;
}

// ---------------------------------------------------------------------------------------------

describe("what an invariant logs", () => {
  it("stays out of the check's output, --json included, and is kept with the traced run", () => {
    const { code, stdout } = eutaxy([
      "check",
      `${root}js/test/fixtures/invariant-log/logged.sim.ts`,
      "--json",
    ]);
    expect(code).toBe(1);
    const result = JSON.parse(stdout) as { trace: string[] };
    expect(result.trace).toContain("invariants console.log: charges: 2");
  });
});

describe("--json follows docs/eutaxy.check.v1.schema.json", () => {
  const schema = JSON.parse(readFileSync(`${root}docs/eutaxy.check.v1.schema.json`, "utf8")) as {
    properties: Record<string, unknown>;
    definitions: { bounds: { properties: object }; fault: { properties: object } };
  };
  const validate = new Ajv({ allErrors: true }).compile(schema);

  /** Valid against the schema, and every field it has is one the schema documents. */
  function expectDocumented(json: Record<string, unknown>): void {
    expect(validate(json), JSON.stringify(validate.errors)).toBe(true);
    expect(Object.keys(json).filter((k) => !(k in schema.properties))).toEqual([]);
    const bounds = Object.keys(json.bounds as object);
    expect(bounds.sort()).toEqual(Object.keys(schema.definitions.bounds.properties).sort());
    for (const fault of (json.faults ?? []) as object[]) {
      expect(Object.keys(fault).sort()).toEqual(Object.keys(schema.definitions.fault.properties).sort());
    }
  }

  const cases: [string, () => string[], string, number][] = [
    ["VIOLATED", () => ["check", "./checkout.sim.ts", "--json"], "VIOLATED", 1],
    ["BOUNDED", () => ["check", "./checkout.fixed.sim.ts", "--json"], "BOUNDED", 0],
    ["INCOMPLETE", () => ["check", "./checkout.fixed.sim.ts", "--budget-ms", "1", "--json"], "INCOMPLETE", 3],
    ["HELD", () => ["replay", "./checkout.sim.ts", faultless(planted().runSeed), "--json"], "HELD", 0],
    [
      "a replay that VIOLATED",
      () => ["replay", "./checkout.sim.ts", planted().runSeed, "--json"],
      "VIOLATED",
      1,
    ],
  ];
  for (const [name, args, verdict, code] of cases) {
    it(`validates the output of ${name}`, () => {
      const run = eutaxy(args());
      expect(run.code).toBe(code);
      const json = JSON.parse(run.stdout) as Record<string, unknown>;
      expect(json.schema).toBe("eutaxy.check/1");
      expect(json.verdict).toBe(verdict);
      expectDocumented(json);
    });
  }

  it("validates warnings of every kind a check of the fixtures gives", () => {
    const fixtures = `${root}js/test/fixtures`;
    const runs = [
      { cwd: `${fixtures}/module-state`, file: "./numbering.fixed.sim.ts", kinds: ["module-state"] },
      { cwd: `${fixtures}/module-state`, file: "./prices.sim.ts", kinds: ["module-state"] },
      { cwd: `${fixtures}/module-state`, file: "./dedupe.sim.ts", kinds: ["isolate-state"] },
      { cwd: `${fixtures}/warnings`, file: "./lookup.sim.ts", kinds: ["no-request-succeeded"] },
      { cwd: `${fixtures}/warnings`, file: "./replica.sim.ts", kinds: ["replica-reads"] },
      { cwd: `${fixtures}/warnings`, file: "./slow.sim.ts", kinds: ["event-delivered-late"] },
    ];
    for (const { cwd, file, kinds } of runs) {
      const run = eutaxy(["check", file, "--json"], { cwd });
      const json = JSON.parse(run.stdout) as Record<string, unknown>;
      expect((json.warnings as { kind: string }[]).map((w) => w.kind)).toEqual(kinds);
      expectDocumented(json);
    }
  });

  it("tells the verdicts apart: a field of another verdict, or one missing, is invalid", () => {
    const json = planted().json;
    expect(validate({ ...json, verdict: "BOUNDED" })).toBe(false);
    const { runSeed: _dropped, ...withoutRunSeed } = json;
    expect(validate(withoutRunSeed)).toBe(false);
    expect(validate({ ...json, schema: "eutaxy.check/2" })).toBe(false);
  });
});

// ---------------------------------------------------------------------------------------------

interface XmlElement {
  readonly name: string;
  readonly attrs: Record<string, string>;
  readonly children: XmlElement[];
  text: string;
}

/** A small XML reader, enough for the JUnit report: it throws on a tag that does not close. */
function parseXml(xml: string): XmlElement {
  const decode = (s: string): string =>
    s
      .replace(/&#(\d+);/g, (_, n: string) => String.fromCharCode(Number(n)))
      .replace(/&quot;/g, '"')
      .replace(/&lt;/g, "<")
      .replace(/&gt;/g, ">")
      .replace(/&amp;/g, "&");
  const top: XmlElement = { name: "#document", attrs: {}, children: [], text: "" };
  const stack = [top];
  const token = /<\?[^>]*\?>|<(\/?)([\w:-]+)((?:\s+[\w:-]+="[^"]*")*)\s*(\/?)>|([^<]+)/g;
  for (const m of xml.matchAll(token)) {
    const current = stack[stack.length - 1] as XmlElement;
    if (m[5] !== undefined) current.text += decode(m[5]);
    else if (m[2] === undefined) continue;
    else if (m[1] === "/") {
      if (current.name !== m[2]) throw new Error(`</${m[2]}> closes <${current.name}>`);
      stack.pop();
    } else {
      const attrs: Record<string, string> = {};
      for (const a of (m[3] ?? "").matchAll(/([\w:-]+)="([^"]*)"/g))
        attrs[a[1] as string] = decode(a[2] as string);
      const element: XmlElement = { name: m[2], attrs, children: [], text: "" };
      current.children.push(element);
      if (m[4] !== "/") stack.push(element);
    }
  }
  if (stack.length !== 1) throw new Error(`<${stack[stack.length - 1]?.name}> is not closed`);
  const [rootElement] = top.children;
  if (!rootElement || top.children.length !== 1) throw new Error("not one root element");
  return rootElement;
}

function child(element: XmlElement, name: string): XmlElement | undefined {
  return element.children.find((c) => c.name === name);
}

describe("--junit", () => {
  const dir = tempFolder("eutaxy-junit-");

  function junit(args: string[], file: string): { code: number | null; suite: XmlElement; stdout: string } {
    const path = join(dir, file);
    const run = eutaxy([...args, "--junit", path]);
    const doc = parseXml(readFileSync(path, "utf8"));
    expect(doc.name).toBe("testsuites");
    const suites = doc.children.filter((c) => c.name === "testsuite");
    expect(suites).toHaveLength(1);
    return { code: run.code, suite: suites[0] as XmlElement, stdout: run.stdout };
  }

  it("reports a VIOLATED invariant as a failure with its message, the report and the replay command", () => {
    const { code, suite, stdout } = junit(["check", "./checkout.sim.ts"], "violated.xml");
    expect(code).toBe(1);
    expect(stdout.split("\n")[0]).toBe("VIOLATED  checkout  (seed checkout)");
    expect(suite.attrs).toMatchObject({ name: "checkout", tests: "1", failures: "1", errors: "0" });
    const testcase = child(suite, "testcase") as XmlElement;
    expect(testcase.attrs.name).toBe("one-charge-per-order");
    const failure = child(testcase, "failure") as XmlElement;
    expect(failure.attrs.message).toBe('2 rows of charges in D1:payments/DB share order_id = "o-2"');
    const runSeed = /run seed (\S+)\)/.exec(stdout)?.[1] as string;
    expect(failure.text).toContain(`Replay: eutaxy check checkout.sim.ts --replay ${runSeed}`);
    expect(failure.text).toContain(`eutaxy replay checkout.sim.ts ${runSeed}`);
    expect(failure.text).toContain("crash_after at req-2#1 effect #0 (Service:PAYMENTS charge)");
  });

  it("reports BOUNDED as every invariant passing", () => {
    const { code, suite } = junit(["check", "./checkout.fixed.sim.ts"], "bounded.xml");
    expect(code).toBe(0);
    expect(suite.attrs).toMatchObject({ tests: "1", failures: "0", errors: "0", skipped: "0" });
    const testcase = child(suite, "testcase") as XmlElement;
    expect(testcase.attrs.name).toBe("one-charge-per-order");
    expect(testcase.children).toEqual([]);
  });

  it("reports INCOMPLETE as an error with the reason, so that CI lists it with the red job", () => {
    const { code, suite } = junit(["check", "./checkout.fixed.sim.ts", "--budget-ms", "1"], "incomplete.xml");
    expect(code).toBe(3);
    expect(suite.attrs).toMatchObject({ tests: "1", failures: "0", errors: "1" });
    const error = child(child(suite, "testcase") as XmlElement, "error") as XmlElement;
    expect(error.attrs.type).toBe("INCOMPLETE");
    expect(error.attrs.message).toMatch(/the budget of 1 ms ran out after \d+ schedules?;/);
  });

  it("reports a check that cannot run as an error naming the file, and still exits 2", () => {
    const path = join(dir, "bad.xml");
    const run = eutaxy(["check", "./nope.sim.ts", "--junit", path]);
    expect(run.code).toBe(2);
    const suite = child(parseXml(readFileSync(path, "utf8")), "testsuite") as XmlElement;
    const error = child(child(suite, "testcase") as XmlElement, "error") as XmlElement;
    expect(error.attrs.type).toBe("BAD_INPUT");
    expect(error.attrs.message).toMatch(/nope\.sim\.ts: no such file/);
  });

  /** The `--json` results of the scenario's shards 1/n to n/n, as a CI matrix's jobs keep them. */
  function shardResults(scenario: string, count: number): string[] {
    return Array.from({ length: count }, (_, i) => {
      const run = eutaxy(["check", scenario, "--shard", `${i + 1}/${count}`, "--json"]);
      expect([0, 1]).toContain(run.code);
      const file = join(dir, `${scenario.replace(/\W/g, "")}-${i + 1}.json`);
      writeFileSync(file, run.stdout);
      return file;
    });
  }

  it("reports the verdict of merged shards: BOUNDED passing, a missing shard as an error naming it", () => {
    const files = shardResults("./checkout.fixed.sim.ts", 2);
    const { code, suite, stdout } = junit(["merge", ...files], "merged.xml");
    expect(code).toBe(0);
    expect(stdout.split("\n")[0]).toBe("BOUNDED  checkout-fixed  (seed checkout-fixed), 2 shards merged");
    expect(suite.attrs).toMatchObject({ name: "checkout-fixed", tests: "1", failures: "0", errors: "0" });
    const testcase = child(suite, "testcase") as XmlElement;
    expect(testcase.attrs.name).toBe("one-charge-per-order");
    expect(testcase.children).toEqual([]);
    const properties = (child(suite, "properties") as XmlElement).children.map((p) => [
      p.attrs.name,
      p.attrs.value,
    ]);
    expect(properties).toContainEqual(["verdict", "BOUNDED"]);
    expect(properties).toContainEqual(["shards", "2"]);

    const partial = junit(["merge", files[0] as string], "partial.xml");
    expect(partial.code).toBe(3);
    const error = child(child(partial.suite, "testcase") as XmlElement, "error") as XmlElement;
    expect(error.attrs.type).toBe("INCOMPLETE");
    expect(error.attrs.message).toMatch(/\(shard 2\/2 missing\); no invariant broke/);

    const path = join(dir, "unmerged.xml");
    expect(eutaxy(["merge", "./nope.json", "--junit", path]).code).toBe(2);
    const bad = child(child(parseXml(readFileSync(path, "utf8")), "testsuite") as XmlElement, "testcase");
    expect(child(bad as XmlElement, "error")?.attrs).toMatchObject({
      type: "BAD_INPUT",
      message: "./nope.json: no such file",
    });
  });

  it("reports merged shards' VIOLATED as the violating shard's check does, with its replay command", () => {
    const files = shardResults("./checkout.sim.ts", 2);
    const { code, suite, stdout } = junit(["merge", ...files], "merged-violated.xml");
    expect(code).toBe(1);
    const failure = child(child(suite, "testcase") as XmlElement, "failure") as XmlElement;
    expect(failure.attrs.message).toBe('2 rows of charges in D1:payments/DB share order_id = "o-2"');
    const runSeed = /run seed (\S+)\)/.exec(stdout)?.[1] as string;
    expect(failure.text).toContain(`eutaxy replay checkout.sim.ts ${runSeed}`);
    // Merged where the scenario is not at hand (a job that only downloaded the results), the
    // broken invariant is still the one testcase.
    const moved = files.map((file) => {
      const result = JSON.parse(readFileSync(file, "utf8"));
      const away = `${file}.away.json`;
      writeFileSync(away, JSON.stringify({ ...result, file: join(dir, "gone", "checkout.sim.ts") }));
      return away;
    });
    const elsewhere = eutaxy(["merge", ...moved, "--junit", join(dir, "elsewhere.xml")]);
    expect(elsewhere.code).toBe(1);
    const away = child(parseXml(readFileSync(join(dir, "elsewhere.xml"), "utf8")), "testsuite") as XmlElement;
    expect(away.attrs).toMatchObject({ tests: "1", failures: "1", skipped: "0" });
    expect((child(away, "testcase") as XmlElement).attrs.name).toBe("one-charge-per-order");
  });

  it("exits 2 naming a report file it cannot write, before checking and printing anything", () => {
    const run = eutaxy(["check", "./checkout.sim.ts", "--json", "--junit", join(dir, "no/such/dir/x.xml")]);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr).toMatch(/x\.xml: cannot write the --junit report \(ENOENT\)/);
    const html = eutaxy(["check", "./checkout.sim.ts", "--html", dir]);
    expect(html.code).toBe(2);
    expect(html.stderr).toMatch(/cannot write the --html report \(EISDIR\)/);
  });
});

// ---------------------------------------------------------------------------------------------

describe("color", () => {
  it("prints no escape codes when stdout is not a terminal", () => {
    const run = eutaxy(["check", "./checkout.sim.ts"]);
    expect(run.code).toBe(1);
    expect(run.stdout).not.toContain("\x1b");
    expect(run.stderr).not.toContain("\x1b");
  });

  it("colors the verdict word, and only it, with FORCE_COLOR=1", () => {
    const run = eutaxy(["check", "./checkout.sim.ts"], { env: plainEnv({ FORCE_COLOR: "1" }) });
    const [first, ...rest] = run.stdout.split("\n");
    expect(first).toBe("\x1b[1;31mVIOLATED\x1b[0m  checkout  (seed checkout)");
    expect(rest.join("\n")).not.toContain("\x1b");
  });

  it("prints no color with FORCE_COLOR=0, nor in --json with FORCE_COLOR=1", () => {
    expect(
      eutaxy(["check", "./checkout.sim.ts"], { env: plainEnv({ FORCE_COLOR: "0" }) }).stdout,
    ).not.toContain("\x1b");
    const json = eutaxy(["check", "./checkout.sim.ts", "--json"], { env: plainEnv({ FORCE_COLOR: "1" }) });
    expect(json.stdout).not.toContain("\x1b");
  });
});

// ---------------------------------------------------------------------------------------------

describe("the progress line", () => {
  it("is never printed when stderr is not a terminal", () => {
    const run = eutaxy(["check", "./checkout.fixed.sim.ts"]);
    expect(run.code).toBe(0);
    expect(run.stderr).toBe("");
  });

  /** A terminal that records what is written to it. */
  function terminal(): { isTTY: true; columns: number; written: string[]; write(text: string): void } {
    const written: string[] = [];
    return { isTTY: true, columns: 100, written, write: (text: string) => written.push(text) };
  }

  it("is redrawn at most ten times a second, and erased", () => {
    const tty = terminal();
    const line = progressLine(tty);
    if (!line) throw new Error("a terminal gets a progress line");
    // One run every millisecond for two seconds.
    for (let ms = 1; ms <= 2000; ms++)
      line.update({ runs: ms, faults: ms - 1, elapsedMs: ms, budgetMs: 10_000, phase: "explore" });
    expect(tty.written.length).toBeGreaterThan(10);
    expect(tty.written.length).toBeLessThanOrEqual(20);
    expect(tty.written.at(-1)).toMatch(
      /^\reutaxy: exploring: 2,000 runs, 1,000 runs\/s, 1,999 faults tried, 8\.0 s of the 10\.0 s budget left/,
    );
    line.clear();
    expect(tty.written.at(-1)).toMatch(/^\r +\r$/);
    expect(tty.written.join("")).not.toContain("\x1b");
  });

  it("is not drawn for a check that ends within 300 ms, nor when stderr is not a terminal", () => {
    const tty = terminal();
    const line = progressLine(tty);
    line?.update({ runs: 50, elapsedMs: 200, budgetMs: 10_000, phase: "explore" });
    line?.clear();
    expect(tty.written).toEqual([]);
    expect(progressLine({ isTTY: false, write: () => undefined })).toBeUndefined();
  });

  it("hears of every run from check(): its phase and the faults tried", async () => {
    const seen: Progress[] = [];
    const result = await check(`${example}/checkout.sim.ts`, { onProgress: (p) => seen.push(p) });
    if (result.verdict !== "VIOLATED") throw new Error(`expected VIOLATED, got ${result.verdict}`);
    expect(seen.map((p) => p.runs)).toEqual(seen.map((_, i) => i + 1));
    expect(seen.filter((p) => p.phase === "explore")).toHaveLength(result.runs);
    expect(seen.filter((p) => p.phase === "shrink")).toHaveLength(result.shrinkRuns);
    expect(seen[0]?.faults).toBe(0);
    expect(seen.at(-1)?.faults).toBeGreaterThan(0);
    expect(seen.every((p) => p.budgetMs === result.bounds.budgetMs)).toBe(true);
  });
});

// ---------------------------------------------------------------------------------------------

describe("a run step by step", () => {
  /** The listing of the planted bug's counterexample, as a user reads it. */
  const listing = [
    "deliver req-2#1",
    "  effect #0 Service:PAYMENTS charge: crash_after (fault)",
    "    req-2#1/0, hosted by req-2#1 effect #0",
    "      effect #0 D1:payments/DB run: proceed",
    "        D1 payments/DB: INSERT INTO charges (idempotency_key, order_id, amount_cents) VALUES (?1, ?2, ?3) ON CONFLICT (idempotency_key) DO NOTHING",
    /^ {10}params \["[0-9a-f-]{36}", "o-2", 900\]$/,
    "          -> 1 changed",
    "      effect #1 D1:payments/DB first: proceed",
    "        D1 payments/DB: SELECT charge_id FROM charges WHERE idempotency_key = ?1",
    /^ {10}params \["[0-9a-f-]{36}"\]$/,
    "          -> 1 row (1)",
    '      returned {"chargeId":1}',
    "  died",
    "",
    "redeliver req-2#2",
    "deliver req-2#2",
    "  effect #0 Service:PAYMENTS charge: proceed",
    "    req-2#2/0, hosted by req-2#2 effect #0",
  ];

  function expectListing(lines: string[]): void {
    listing.forEach((want, i) => {
      if (typeof want === "string") expect(lines[i]).toBe(want);
      else expect(lines[i]).toMatch(want);
    });
    expect(lines).toContain('  answered 200 {"orderId":"o-2","chargeId":2}');
  }

  it("eutaxy replay prints every step of the run, then the invariant that broke", () => {
    const { runSeed } = planted();
    const run = eutaxy(["replay", "./checkout.sim.ts", runSeed]);
    expect(run.code).toBe(1);
    const lines = run.stdout.trimEnd().split("\n");
    expect(lines[0]).toBe(`Run ${runSeed} of checkout (checkout.sim.ts), step by step:`);
    expect(lines[1]).toBe("");
    expectListing(lines.slice(2));
    expect(lines.at(-1)).toBe(
      'VIOLATED  invariant one-charge-per-order broke: 2 rows of charges in D1:payments/DB share order_id = "o-2"',
    );
  });

  it("eutaxy replay says when no invariant broke in the run, and exits 0", () => {
    const run = eutaxy(["replay", "./checkout.sim.ts", faultless(planted().runSeed)]);
    expect(run.code).toBe(0);
    const lines = run.stdout.trimEnd().split("\n");
    expect(lines).toContain('  answered 200 {"orderId":"o-2","chargeId":1}');
    expect(lines).not.toContain("  died");
    expect(lines.at(-1)).toBe("HELD  no invariant broke in this run");
  });

  it("eutaxy check --trace prints the counterexample step by step after the report", () => {
    const run = eutaxy(["check", "./checkout.sim.ts", "--trace"]);
    expect(run.code).toBe(1);
    const lines = run.stdout.trimEnd().split("\n");
    expect(lines[0]).toBe("VIOLATED  checkout  (seed checkout)");
    const at = lines.indexOf(`The counterexample (run seed ${planted().runSeed}), step by step:`);
    expect(at).toBeGreaterThan(0);
    expect(lines[at - 1]).toBe("");
    expect(lines[at + 1]).toBe("");
    expectListing(lines.slice(at + 2));
    // It ends with what the unique() invariant read, the rows that break it.
    expect(lines.slice(-3)).toEqual([
      "after the last step (the invariants read the final state):",
      '  D1 payments/DB: SELECT "order_id", COUNT(*) FROM "charges" WHERE "order_id" IS NOT NULL GROUP BY "order_id" HAVING COUNT(*) > 1 ORDER BY "order_id" LIMIT 1',
      '    -> 1 row ("o-2", 2)',
    ]);
  });

  it("rejects a replay without a run seed, or with a malformed one, as bad input", () => {
    const missing = eutaxy(["replay", "./checkout.sim.ts"]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe(
      "eutaxy: replay: the run seed is missing after ./checkout.sim.ts: eutaxy replay ./checkout.sim.ts <RUN_SEED>, with the run seed a VIOLATED report printed\n",
    );
    const malformed = eutaxy(["replay", "./checkout.sim.ts", "not-a-seed"]);
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toMatch(/run seed 'not-a-seed' is malformed/);
    expect(malformed.stderr).not.toMatch(/^\s+at /m);
  });

  it("reads an outcome whose text spans lines (a query library's error) as the outcome it is", () => {
    const threw = "Error: Failed query: insert into users\nparams: ada@example.com";
    expect(parseStep(`req-2#1 threw ${threw}`)).toEqual({
      kind: "outcome",
      invocation: "req-2#1",
      what: "threw",
      detail: threw,
    });
    expect(parseStep("req-2#1 hung: waiting\non a lock")).toEqual({
      kind: "other",
      invocation: "req-2#1",
      text: "hung: waiting\non a lock",
    });
  });

  it("shows a line it does not know as it is, and a batch's statements under their effect", () => {
    const text = renderTrace([
      "deliver req-1#1",
      "req-1#1 effect #0 D1:DB batch: proceed",
      '  D1 DB batch[0]: UPDATE a SET n = n - ?1 WHERE [id] = ?2 [5, "x [y]"] -> 1 changed',
      "  D1 DB batch[1]: UPDATE a SET n = n + 5 -> rolled back: D1_ERROR: boom",
      "req-1#1 something new happened",
      "a line of a kind eutaxy does not know yet",
    ]);
    expect(text.split("\n")).toEqual([
      "deliver req-1#1",
      "  effect #0 D1:DB batch: proceed",
      "    D1 DB batch[0]: UPDATE a SET n = n - ?1 WHERE [id] = ?2",
      '      params [5, "x [y]"]',
      "      -> 1 changed",
      "    D1 DB batch[1]: UPDATE a SET n = n + 5",
      "      -> rolled back: D1_ERROR: boom",
      "  something new happened",
      "",
      "a line of a kind eutaxy does not know yet",
    ]);
  });
});

describe("a Durable Object's storage calls in the step-by-step listing", () => {
  it("sit with the object's own steps after a call on another binding came back, every one of them", () => {
    const text = renderTrace([
      "deliver req-1#1",
      "req-1#1 effect #0 DO:CART checkout: proceed",
      "host req-1#1/0",
      '  DO:Cart/"ann" storage.get("paid") -> undefined',
      "req-1#1/0 effect #0 D1:DB run: proceed",
      "  D1 DB: INSERT INTO t VALUES (1) -> 1 changed",
      '  DO:Cart/"ann" storage.put("step", 1)',
      '  DO:Cart/"ann" storage.put("total", 9)',
      "req-1#1/0 effect #1 Service:PAYMENTS charge: proceed",
      "host req-1#1/0/1",
      "req-1#1/0/1 returned 7",
      '  DO:Cart/"ann" storage.put("paid", 7)',
      "req-1#1/0 returned 7",
      "req-1#1 answered 200 7",
    ]);
    expect(text.split("\n")).toEqual([
      "deliver req-1#1",
      "  effect #0 DO:CART checkout: proceed",
      "    req-1#1/0, hosted by req-1#1 effect #0",
      '      DO:Cart/"ann" storage.get("paid") -> undefined',
      "      effect #0 D1:DB run: proceed",
      "        D1 DB: INSERT INTO t VALUES (1)",
      "          -> 1 changed",
      '      DO:Cart/"ann" storage.put("step", 1)',
      '      DO:Cart/"ann" storage.put("total", 9)',
      "      effect #1 Service:PAYMENTS charge: proceed",
      "        req-1#1/0/1, hosted by req-1#1/0 effect #1",
      "          returned 7",
      '      DO:Cart/"ann" storage.put("paid", 7)',
      "      returned 7",
      "  answered 200 7",
    ]);
  });
});

describe("the steps of a long interleaved counterexample", () => {
  it("advises sampling when every interleaving had to run because of a module-level variable", () => {
    const incomplete = (warnings: readonly { kind: string; message: string }[]) =>
      renderReport({
        verdict: "INCOMPLETE",
        scenario: "cache",
        file: "/x/cache.sim.ts",
        seed: "cache",
        bounds: { maxFaultsPerRun: 0, maxRedeliveries: 3, maxConcurrentInvocations: 2, budgetMs: 10_000 },
        elapsedMs: 10_000,
        runs: 1379,
        reason: "budget",
        strategy: "exhaustive",
        distinctSchedules: 1379,
        warnings,
      } as never);
    const advice = "--strategy pct samples them instead";
    const variable = { kind: "module-state", message: "Worker app changed the module-level variable db …" };
    expect(incomplete([variable])).toContain(advice);
    expect(incomplete([])).not.toContain(advice);
  });

  it("keep where one invocation's steps give way to another's, and say how many are left out", () => {
    // req-1 reads, req-2 runs 40 steps through, then req-1 writes what it read: the race.
    const trace = [
      "deliver req-1#1",
      "req-1#1 effect #0 D1:DB first: proceed",
      "deliver req-2#1",
      ...Array.from({ length: 40 }, (_, i) => `req-2#1 effect #${i} D1:DB run: proceed`),
      "req-2#1 answered 200 ok",
      "req-1#1 effect #1 D1:DB run: proceed",
      "req-1#1 answered 200 ok",
    ];
    const report = renderReport({
      verdict: "VIOLATED",
      scenario: "race",
      file: "/x/race.sim.ts",
      seed: "race",
      bounds: { maxFaultsPerRun: 0, maxRedeliveries: 0, maxConcurrentInvocations: 2, budgetMs: 1000 },
      elapsedMs: 5,
      runs: 3,
      shrinkRuns: 2,
      invariant: "counted",
      message: "one visit lost",
      runSeed: "1:1,2:-:0:1.1@1=2.1",
      eventsKept: ["req-1", "req-2"],
      faults: [],
      trace,
    } as never);
    const steps =
      report.slice(report.indexOf("Steps in the order they ran:")).split("\n\n")[0]?.split("\n") ?? [];
    expect(steps.length).toBeLessThanOrEqual(1 + 32 + 4);
    expect(steps.slice(-6)).toEqual([
      "  req-2#1 effect #25 (D1:DB run)",
      "  … 14 more steps",
      "  req-2#1 answered 200",
      "  req-1#1 effect #1 (D1:DB run)",
      "  req-1#1 answered 200",
      "  (--trace shows the whole run)",
    ]);
  });
});

describe("how the search came to a violation", () => {
  it("says when auto had switched to PCT, whose moment the clock chose", () => {
    const violated = (extra: Record<string, unknown>) =>
      renderReport({
        verdict: "VIOLATED",
        scenario: "race",
        file: "/x/race.sim.ts",
        seed: "race",
        bounds: { maxFaultsPerRun: 1, maxRedeliveries: 0, maxConcurrentInvocations: 2, budgetMs: 10_000 },
        elapsedMs: 7_200,
        runs: 5_130,
        shrinkRuns: 12,
        invariant: "counted",
        message: "one visit lost",
        runSeed: "1:1,2:-:0:1.1@1=2.1",
        eventsKept: ["req-1", "req-2"],
        faults: [],
        trace: ["deliver req-1#1", "deliver req-2#1"],
        ...extra,
      } as never);
    expect(violated({ switchedAfterRuns: 4_410 })).toContain(
      "Found after 5130 schedules in 7.2 s, by PCT sampling: after 4410 exhaustive runs, the tree looked far larger than the budget covers and auto switched (by the clock, so another machine may find another counterexample; the run seed replays this one anywhere); shrunk in 12 runs.",
    );
    expect(violated({})).toContain("Found after 5130 schedules in 7.2 s; shrunk in 12 runs.");
  });
});

describe("a callee that goes on after its caller stopped waiting for it", () => {
  it("is named again where its steps come back, one request at a time too", () => {
    // The caller's 2 s deadline fired while its callee waited on a slow provider; the caller
    // retried, answered, and then the first callee went on and wrote what the retry wrote.
    const text = renderTrace([
      "deliver req-1#1",
      "req-1#1 effect #0 Service:ACCOUNTS debit: proceed",
      "host req-1#1/0",
      "req-1#1/0 effect #0 fetch POST https://risk.example/score: proceed",
      "req-1#1 timer of 2000 ms fired",
      "req-1#1 effect #1 Service:ACCOUNTS debit: proceed",
      "host req-1#1/1",
      "req-1#1/1 effect #0 fetch POST https://risk.example/score: proceed",
      "req-1#1/1 returned 7500",
      "req-1#1 answered 201 paid",
      "req-1#1/0 timer of 3000 ms fired",
      "req-1#1/0 effect #1 D1:accounts/DB run: proceed",
      "  D1 accounts/DB: UPDATE balances SET cents = cents - 2500 -> 1 changed",
      "req-1#1/0 returned 5000",
    ]);
    expect(text.split("\n")).toEqual([
      "deliver req-1#1",
      "  effect #0 Service:ACCOUNTS debit: proceed",
      "    req-1#1/0, hosted by req-1#1 effect #0",
      "      effect #0 fetch POST https://risk.example/score: proceed",
      "  timer of 2000 ms fired",
      "  effect #1 Service:ACCOUNTS debit: proceed",
      "    req-1#1/1, hosted by req-1#1 effect #1",
      "      effect #0 fetch POST https://risk.example/score: proceed",
      "      returned 7500",
      "  answered 201 paid",
      "    req-1#1/0, hosted by req-1#1 effect #0 (continued)",
      "      timer of 3000 ms fired",
      "      effect #1 D1:accounts/DB run: proceed",
      "        D1 accounts/DB: UPDATE balances SET cents = cents - 2500",
      "          -> 1 changed",
      "      returned 5000",
    ]);
  });
});

describe("a Durable Object's storage calls, step by step", () => {
  it("come under the header of the object's invocation, in the order it made them, for RPC, fetch and its constructor", () => {
    const run = eutaxy(["check", "./visits.sim.ts", "--trace"], {
      cwd: new URL("./fixtures/object-trace/", import.meta.url).pathname,
    });
    expect(run.code).toBe(1);
    const lines = run.stdout.trimEnd().split("\n");
    const at = lines.findIndex((l) => l.startsWith("The counterexample"));
    expect(lines.slice(at + 2)).toEqual([
      "deliver req-1#1",
      "  effect #0 DO:VISITS visit: proceed",
      "    req-1#1/0, hosted by req-1#1 effect #0",
      '      DO:Visits/"home" storage.get("since") -> undefined',
      '      DO:Visits/"home" storage.get("visits") -> undefined',
      '      DO:Visits/"home" storage.put("visits", 1)',
      "      returned 1",
      "  effect #1 DO:VISITS fetch: proceed",
      "    req-1#1/1, hosted by req-1#1 effect #1",
      '      DO:Visits/"home" storage.put("fetched", true)',
      '      DO:Visits/"home" storage.get("visits") -> 1',
      "      returned Response 200",
      "  answered 200 1 since today",
    ]);
  });

  it("puts a callee that started and showed nothing before another request's steps where it first shows", () => {
    const text = renderTrace([
      "deliver req-1#1",
      "req-1#1 effect #0 DO:WALLET spend: proceed",
      "host req-1#1/0",
      "schedule: 2 pending, took deliver req-2#1",
      "deliver req-2#1",
      "req-2#1 effect #0 DO:WALLET spend: proceed",
      "host req-2#1/0",
      '  DO:Wallet/"ada" storage.get("balance") -> 30',
      "req-1#1/0 returned true",
    ]);
    expect(text.split("\n")).toEqual([
      "deliver req-1#1",
      "  req-1#1 effect #0 DO:WALLET spend: proceed",
      "",
      "deliver req-2#1",
      "  req-2#1 effect #0 DO:WALLET spend: proceed",
      "    req-2#1/0, hosted by req-2#1 effect #0",
      '      DO:Wallet/"ada" storage.get("balance") -> 30',
      "",
      "    req-1#1/0, hosted by req-1#1 effect #0",
      "      req-1#1/0 returned true",
    ]);
  });
});

describe("an interleaved run, step by step", () => {
  it("starts a paragraph where another request's steps begin, and names a callee again when it comes back", () => {
    const text = renderTrace([
      "deliver req-1#1",
      "req-1#1 effect #0 DO:WALLET spend: proceed",
      "schedule: 2 pending, took deliver req-2#1",
      "deliver req-2#1",
      "req-2#1 effect #0 DO:WALLET spend: proceed",
      "req-1#1/0 effect #0 fetch POST https://render.example/quote: proceed",
      "req-2#1/0 effect #0 fetch POST https://render.example/quote: proceed",
      "req-1#1/0 returned true",
      "req-1#1 answered 200 ok",
    ]);
    expect(text.split("\n")).toEqual([
      "deliver req-1#1",
      "  req-1#1 effect #0 DO:WALLET spend: proceed",
      "",
      "deliver req-2#1",
      "  req-2#1 effect #0 DO:WALLET spend: proceed",
      "",
      "    req-1#1/0, hosted by req-1#1 effect #0",
      "      req-1#1/0 effect #0 fetch POST https://render.example/quote: proceed",
      "",
      "    req-2#1/0, hosted by req-2#1 effect #0",
      "      req-2#1/0 effect #0 fetch POST https://render.example/quote: proceed",
      "",
      "    req-1#1/0, hosted by req-1#1 effect #0 (continued)",
      "      req-1#1/0 returned true",
      "  req-1#1 answered 200 ok",
    ]);
  });

  it("puts an event sent at its time as a line of its own, not under the call another request made before it", () => {
    const text = renderTrace([
      "deliver cron-1#1",
      "cron-1#1 effect #0 D1:DB all: proceed",
      '  D1 DB: SELECT id FROM subscriptions -> 1 row ("sub-1")',
      "req-1 sent at 0 ms",
      "schedule: 2 pending, took deliver req-1#1",
      "deliver req-1#1",
      "req-1#1 effect #0 D1:DB run: proceed",
    ]);
    expect(text.split("\n")).toEqual([
      "deliver cron-1#1",
      "  cron-1#1 effect #0 D1:DB all: proceed",
      "    D1 DB: SELECT id FROM subscriptions",
      '      -> 1 row ("sub-1")',
      "",
      "req-1 sent at 0 ms",
      "",
      "deliver req-1#1",
      "  req-1#1 effect #0 D1:DB run: proceed",
    ]);
  });

  it("puts a caller's binding calls after its callee returned under the caller, not the callee", () => {
    const text = renderTrace([
      "deliver req-1#1",
      "req-1#1 effect #0 DO:WALLET withdraw: proceed",
      "host req-1#1/0",
      "schedule: 2 pending, took req-1#1/0 effect #0",
      "req-1#1/0 effect #0 DO:RISK assess: proceed",
      "host req-1#1/0/0",
      '  DO:RiskDesk/"global" storage.put("seen", 1)',
      "req-1#1/0/0 returned true",
      '  DO:Wallet/"ada" storage.put({"balance":30})',
      "req-1#1/0 returned 30",
      "req-1#1 answered 200 ok",
    ]);
    expect(text.split("\n")).toEqual([
      "deliver req-1#1",
      "  req-1#1 effect #0 DO:WALLET withdraw: proceed",
      "    req-1#1/0, hosted by req-1#1 effect #0",
      "      req-1#1/0 effect #0 DO:RISK assess: proceed",
      "        req-1#1/0/0, hosted by req-1#1/0 effect #0",
      '          DO:RiskDesk/"global" storage.put("seen", 1)',
      "          req-1#1/0/0 returned true",
      '        DO:Wallet/"ada" storage.put({"balance":30})',
      "      req-1#1/0 returned 30",
      "  req-1#1 answered 200 ok",
    ]);
  });

  it("names the invocation of every line about one, such as a call that failed when its object reset", () => {
    const text = renderTrace([
      "deliver req-1#1",
      "req-1#1 effect #0 DO:SHOW book: proceed",
      "schedule: 2 pending, took deliver req-2#1",
      "deliver req-2#1",
      "req-2#1 effect #0 DO:SHOW book: transient_error",
      'Durable Object Show "opening-night" reset (a transient fault at the call book): its in-memory state is gone',
      "req-1#1 effect #0 failed: Error: Durable Object reset because its code was updated.",
      "req-1#1/0 runs on, no longer the object's: its storage calls fail from now on",
    ]);
    expect(text.split("\n")).toEqual([
      "deliver req-1#1",
      "  req-1#1 effect #0 DO:SHOW book: proceed",
      "",
      "deliver req-2#1",
      "  req-2#1 effect #0 DO:SHOW book: reset (fault)",
      '    Durable Object Show "opening-night" reset (a transient fault at the call book): its in-memory state is gone',
      "",
      "  req-1#1 effect #0 failed: Error: Durable Object reset because its code was updated.",
      "    req-1#1/0, hosted by req-1#1 effect #0",
      "      req-1#1/0 runs on, no longer the object's: its storage calls fail from now on",
    ]);
  });

  it("shows a call that failed with the Worker's own error as it failed, not as a fault, whatever the message ends with", () => {
    const text = renderTrace([
      "deliver req-1#1",
      "req-1#1 effect #0 DO:WALLET spend: proceed",
      "host req-1#1/0",
      "req-1#1 effect #0 failed: Error: DrizzleError: Rollback",
      "req-1#1 answered 500 Internal Server Error",
    ]);
    expect(text.split("\n")).toEqual([
      "deliver req-1#1",
      "  effect #0 DO:WALLET spend: proceed",
      "  effect #0 failed: Error: DrizzleError: Rollback",
      "  answered 500 Internal Server Error",
    ]);
  });
});

describe("--help", () => {
  it("documents both commands, every option, the color variables and the exit codes", () => {
    const run = eutaxy(["--help"]);
    expect(run.code).toBe(0);
    for (const word of [
      "eutaxy check <scenario.sim.ts>",
      "eutaxy replay <scenario.sim.ts> <RUN_SEED>",
      "--json",
      "--junit FILE",
      "--trace",
      "--replay RUN_SEED",
      "--budget-ms N",
      "NO_COLOR",
      "FORCE_COLOR",
      "progress",
      "  3  INCOMPLETE",
      "  4  the Worker escaped",
    ]) {
      expect(run.stdout).toContain(word);
    }
  });
});
