/**
 * The JUnit XML report (`--junit <file>`), the format CI systems read test results from: GitHub
 * Actions' test reporters (dorny/test-reporter, mikepenz/action-junit-report, EnricoMi's
 * publish-unit-test-result-action), GitLab's `artifacts:reports:junit`, Jenkins, CircleCI.
 *
 * One check is one <testsuite>, named after the scenario; each invariant is one <testcase>.
 *
 * - BOUNDED, or a replay that HELD: every testcase passes.
 * - VIOLATED: the broken invariant is a <failure> whose message is the invariant's message and
 *   whose body is the report, with the replay command. The other invariants are <skipped>: the
 *   check stops at the first broken invariant, so they were not checked in every schedule.
 * - INCOMPLETE: every testcase is an <error> with the reason. Not <skipped>: an INCOMPLETE check
 *   exits 3 and fails the CI job, and a skipped test is shown by these reporters as a quiet
 *   count ("3 skipped") while the job is red, which leaves the reader to find out why. An
 *   <error> is listed with the failures, with its message (GitLab's merge request widget,
 *   GitHub's annotations and job summaries), which is where the budget that ran out belongs.
 *   It is also what <error> means in JUnit: the test could not run to its end, as opposed to a
 *   <failure>, an assertion that did not hold.
 * - A check that could not run at all (bad input, a Worker escaping the simulation): one
 *   testcase, `check`, with an <error>, so the CI shows the message instead of "no test results".
 *
 * `eutaxy merge --junit` writes the same report for the verdict its shards make together: a
 * shard's VIOLATED as that shard's check would, BOUNDED and INCOMPLETE (a shard missing, one out
 * of budget) with the merged report.
 */

import type { CheckResult } from "./check.ts";
import { shown } from "./errors.ts";
import { type MergedResult, shortfall } from "./merge.ts";
import { plural, renderReport } from "./report.ts";

/** A testcase's outcome: passed when none of these. */
type Outcome = {
  readonly kind: "failure" | "error" | "skipped";
  readonly type: string;
  readonly message: string;
  readonly body?: string;
};

interface TestCase {
  readonly name: string;
  readonly outcome?: Outcome | undefined;
}

interface Suite {
  readonly name: string;
  readonly file: string;
  readonly timeMs: number;
  readonly properties: readonly (readonly [string, string])[];
  readonly cases: readonly TestCase[];
  readonly out?: string | undefined;
}

/**
 * The report of a check. `invariants` are the scenario's invariant names in its order; the
 * result names only the broken one. `stepByStep` is the command that prints a run step by step.
 */
export function renderJunit(
  result: CheckResult,
  invariants: readonly string[],
  stepByStep: (runSeed: string) => string,
): string {
  const names = invariants.length > 0 ? invariants : ["invariants"];
  const properties = headerProperties(result);
  if ("runs" in result) properties.push(["runs", String(result.runs)]);
  if ("runSeed" in result) properties.push(["runSeed", result.runSeed]);
  const report = renderReport(result);
  let cases: TestCase[];
  switch (result.verdict) {
    case "BOUNDED":
    case "HELD":
      cases = names.map((name) => ({ name }));
      break;
    case "VIOLATED": {
      const broken = result.invariant;
      cases = (names.includes(broken) ? names : [broken, ...names]).map((name) => ({
        name,
        outcome:
          name === broken
            ? {
                kind: "failure",
                type: "VIOLATED",
                message: result.message,
                body: `${report}\nStep by step: ${stepByStep(result.runSeed)}`,
              }
            : {
                kind: "skipped",
                type: "NOT_CHECKED",
                message: `not checked in every schedule: the check stopped when ${broken} broke`,
              },
      }));
      break;
    }
    case "INCOMPLETE": {
      const ran = plural(result.runs, result.strategy === "exhaustive" ? "schedule" : "run");
      const reason =
        result.reason === "budget"
          ? `INCOMPLETE: the budget of ${result.bounds.budgetMs} ms ran out after ${ran}; no invariant broke in them, but not every schedule within the bounds ran`
          : `INCOMPLETE: the limit on runs was reached after ${ran}; no invariant broke in them, but not every schedule within the bounds ran`;
      cases = names.map((name) => ({
        name,
        outcome: { kind: "error", type: "INCOMPLETE", message: reason, body: report },
      }));
      break;
    }
  }
  return document({
    name: result.scenario,
    file: shown(result.file),
    timeMs: result.elapsedMs,
    properties,
    cases,
    out: result.verdict === "VIOLATED" ? undefined : report,
  });
}

/**
 * The report of shards merged (`eutaxy merge`); `report` is what the merge printed. Missing
 * shards and a shard out of its budget are <error>s, as an INCOMPLETE check's are.
 */
export function renderMergedJunit(
  merged: MergedResult,
  invariants: readonly string[],
  report: string,
  stepByStep: (runSeed: string) => string,
): string {
  if (merged.verdict === "VIOLATED") {
    return renderJunit(merged, invariants.length > 0 ? invariants : [merged.invariant], stepByStep);
  }
  const names = invariants.length > 0 ? invariants : ["invariants"];
  const properties: [string, string][] = [
    ...headerProperties(merged),
    ["runs", String(merged.runs)],
    ["shards", String(merged.shards)],
  ];
  const outcome: Outcome | undefined =
    merged.verdict === "INCOMPLETE"
      ? {
          kind: "error",
          type: "INCOMPLETE",
          message: `INCOMPLETE: not every schedule within the bounds ran (${shortfall(merged)}); no invariant broke in those that did`,
          body: report,
        }
      : undefined;
  return document({
    name: merged.scenario,
    file: shown(merged.file),
    timeMs: merged.elapsedMs,
    properties,
    cases: names.map((name) => ({ name, outcome })),
    out: report,
  });
}

/** What every report says of the check: its verdict, seed and bounds. */
function headerProperties(result: CheckResult | MergedResult): [string, string][] {
  return [
    ["verdict", result.verdict],
    ["seed", result.seed],
    ["maxFaultsPerRun", String(result.bounds.maxFaultsPerRun)],
    ["maxRedeliveries", String(result.bounds.maxRedeliveries)],
    ["maxConcurrentInvocations", String(result.bounds.maxConcurrentInvocations)],
    ["budgetMs", String(result.bounds.budgetMs)],
  ];
}

/** The report of a check that could not run: one `check` testcase with the error. */
export function renderJunitError(scenarioPath: string, kind: string, message: string): string {
  return document({
    name: shown(scenarioPath),
    file: shown(scenarioPath),
    timeMs: 0,
    properties: [],
    cases: [{ name: "check", outcome: { kind: "error", type: kind, message } }],
  });
}

function document(suite: Suite): string {
  const count = (kind: Outcome["kind"]): number => suite.cases.filter((c) => c.outcome?.kind === kind).length;
  const counts = `tests="${suite.cases.length}" failures="${count("failure")}" errors="${count("error")}" skipped="${count("skipped")}" time="${(suite.timeMs / 1000).toFixed(3)}"`;
  const lines = [
    `<?xml version="1.0" encoding="UTF-8"?>`,
    `<testsuites name="eutaxy" ${counts}>`,
    `  <testsuite name="${attr(suite.name)}" ${counts} file="${attr(suite.file)}">`,
  ];
  if (suite.properties.length > 0) {
    lines.push("    <properties>");
    for (const [name, value] of suite.properties) {
      lines.push(`      <property name="${attr(name)}" value="${attr(value)}"/>`);
    }
    lines.push("    </properties>");
  }
  for (const testCase of suite.cases) {
    const open = `    <testcase name="${attr(testCase.name)}" classname="${attr(suite.name)}" file="${attr(suite.file)}"`;
    const outcome = testCase.outcome;
    if (!outcome) {
      lines.push(`${open}/>`);
      continue;
    }
    const head = `<${outcome.kind} type="${attr(outcome.type)}" message="${attr(outcome.message)}"`;
    lines.push(
      `${open}>`,
      outcome.body === undefined
        ? `      ${head}/>`
        : `      ${head}>${text(outcome.body)}</${outcome.kind}>`,
      "    </testcase>",
    );
  }
  if (suite.out !== undefined) lines.push(`    <system-out>${text(suite.out)}</system-out>`);
  lines.push("  </testsuite>", "</testsuites>", "");
  return lines.join("\n");
}

/**
 * Characters XML 1.0 cannot hold at all (most control characters) are dropped: a Worker's
 * answer or exception can carry them into a message, and one would make the file unreadable.
 */
function clean(value: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: these are the characters XML forbids.
  return value.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, "");
}

function text(value: string): string {
  return clean(value).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** An attribute value; newlines are kept as character references, which attributes would fold. */
function attr(value: string): string {
  return text(value)
    .replace(/"/g, "&quot;")
    .replace(/\n/g, "&#10;")
    .replace(/\r/g, "&#13;")
    .replace(/\t/g, "&#9;");
}
