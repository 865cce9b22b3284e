/**
 * The `eutaxy` command: a thin shell over `check()`. Options are declared once in a table that
 * both the parser and `--help` read. What it prints is made for two readers: a person at a
 * terminal (color on the verdict, a progress line on stderr) and a CI job (no color, no
 * progress, `--json` with a documented schema, `--junit` for the test report, exit codes).
 */

import { accessSync, constants, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { parseArgs } from "node:util";
import type { CheckOptions, CheckResult } from "./check.ts";
import { closest } from "./closest.ts";
import { colorEnabled, paintVerdict } from "./color.ts";
import { ExitCode, InputError, SimulationError, shown } from "./errors.ts";
import { renderHtml } from "./html.ts";
import { renderJunit, renderJunitError, renderMergedJunit } from "./junit.ts";
import { BUDGET_MS_MAX, loadScenario, SCENARIO_FILE } from "./load/scenario.ts";
import { type MergedResult, mergeResults, shortfall } from "./merge.ts";
import { checkParallel, renderParallelReport, WORKERS_MAX } from "./parallel.ts";
import { progressLine } from "./progress.ts";
import {
  describeBounds,
  REDUCTION_CAVEAT,
  renderReport,
  renderWarnings,
  stepByStepCommand,
} from "./report.ts";
import { renderCounterexample, renderReplay } from "./trace.ts";

interface OptionSpec {
  readonly type: "string" | "boolean";
  readonly value?: string;
  readonly short?: string;
  readonly help: string;
}

const OPTIONS = {
  seed: {
    type: "string",
    value: "S",
    help: "the seed runs derive their randomness from (default: the scenario's name)",
  },
  replay: { type: "string", value: "RUN_SEED", help: "run exactly the schedule a VIOLATED report printed" },
  "budget-ms": { type: "string", value: "N", help: "override the scenario's bounds.budgetMs" },
  runtime: { type: "string", value: "NAME", help: "where the Worker code runs: node (default) or workerd" },
  strategy: {
    type: "string",
    value: "NAME",
    help: "how the schedules are explored: auto (default), exhaustive, random or pct; random and pct sample, and never answer BOUNDED",
  },
  "pct-depth": {
    type: "string",
    value: "N",
    help: "with pct (and auto, when it samples): the bug depth (default 3), N - 1 priority changes per run",
  },
  "no-reduction": {
    type: "boolean",
    help: "explore every interleaving, without partial-order reduction (for Workers whose libraries share state between requests; a change to a module-level variable of the Workers' own turns it off by itself)",
  },
  workers: {
    type: "string",
    value: "N",
    help: `explore in N worker threads on this machine (default 1, at most ${WORKERS_MAX}), one shard each; the verdict is that of --shard 1/N to N/N merged`,
  },
  shard: {
    type: "string",
    value: "I/N",
    help: "explore only shard I of N (from 1) of the schedules, for a CI matrix; merge the --json results with eutaxy merge",
  },
  json: {
    type: "boolean",
    help: "print the result as JSON instead of the report (schema eutaxy.check/1, docs/json-schema.md)",
  },
  junit: {
    type: "string",
    value: "FILE",
    help: "also write a JUnit XML report to FILE: one testcase per invariant, for CI test reporters",
  },
  html: {
    type: "string",
    value: "FILE",
    help: "also write the result as a self-contained HTML page to FILE: the counterexample as a sequence diagram",
  },
  trace: { type: "boolean", help: "after a VIOLATED report, print the counterexample run step by step" },
  help: { type: "boolean", short: "h", help: "show this help" },
  version: { type: "boolean", help: "print eutaxy's version" },
} as const satisfies Record<string, OptionSpec>;

const EXIT_CODES = [
  [ExitCode.Bounded, "BOUNDED: every schedule within the bounds ran, no invariant broke (or a replay HELD)"],
  [ExitCode.Violated, "VIOLATED: an invariant broke; the report shows the shrunk schedule"],
  [ExitCode.BadInput, "bad input: a scenario, wrangler config, schema or Worker eutaxy cannot use"],
  [ExitCode.Incomplete, "INCOMPLETE: the budget ran out before the bounded space was covered"],
  [
    ExitCode.Simulation,
    "the Worker escaped the simulation (awaited a socket or a promise nothing settles, or ran nondeterministically)",
  ],
] as const;

function usage(): string {
  const options = Object.entries(OPTIONS).map(([name, spec]) => {
    const flag = `--${name}${"value" in spec ? ` ${spec.value}` : ""}${"short" in spec ? `, -${spec.short}` : ""}`;
    return `  ${flag.padEnd(22)} ${spec.help}`;
  });
  return [
    ...SYNOPSIS,
    "",
    "check runs the scenario's Workers in one deterministic simulation, injects a crash before or",
    "after every binding call within the bounds, resends what got no answer, and checks the",
    "scenario's invariants after every run. Prints VIOLATED with a shrunk, replayable schedule,",
    "BOUNDED when every schedule within the bounds ran, or INCOMPLETE when the budget ran out.",
    "",
    "replay runs exactly the run a run seed names (printed by a VIOLATED report) and prints it",
    "step by step: every delivery, every effect with the decision at it, every D1 statement with",
    "its parameters and result, every answer, death and exception; then whether an invariant",
    "broke in it (VIOLATED) or none did (HELD).",
    "",
    "merge reads the --json results of the shards of one check (--shard I/N on each machine of a",
    "CI matrix) and prints the one verdict they make together: VIOLATED if any shard found a",
    "violation, BOUNDED only if every shard ran and is BOUNDED, INCOMPLETE otherwise; --junit",
    "writes that verdict's JUnit report.",
    "",
    "Options:",
    ...options,
    "",
    "Output:",
    "  The verdict word is colored when stdout is a terminal; NO_COLOR=1 turns color off and",
    "  FORCE_COLOR=1 turns it on anywhere (FORCE_COLOR=0 off). On a terminal a progress line",
    "  (runs, runs/s, budget left) is drawn on stderr during the check and erased before the",
    "  report; it is never drawn when stderr is not a terminal.",
    "",
    "Exit codes:",
    ...EXIT_CODES.map(([code, text]) => `  ${code}  ${text}`),
  ].join("\n");
}

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
    version: string;
  };
  return pkg.version;
}

function exitCodeOf(result: CheckResult): number {
  switch (result.verdict) {
    case "BOUNDED":
    case "HELD":
      return ExitCode.Bounded;
    case "VIOLATED":
      return ExitCode.Violated;
    case "INCOMPLETE":
      return ExitCode.Incomplete;
  }
}

/** The options' values, once the command line is read and checked against `OPTIONS`. */
type Values = {
  -readonly [K in keyof typeof OPTIONS]?: (typeof OPTIONS)[K]["type"] extends "string" ? string : boolean;
};

const COMMANDS = ["check", "replay", "merge"] as const;

/** The forms of the command, for `--help` and for a command line with no arguments. */
const SYNOPSIS = [
  "Usage: eutaxy check <scenario.sim.ts> [options]",
  "       eutaxy replay <scenario.sim.ts> <RUN_SEED> [options]",
  "       eutaxy merge <result.json>... [--json] [--junit FILE]",
];

/** What a command line asks for, once read and checked. */
interface Request {
  readonly command: "check" | "replay";
  readonly scenario: string;
  readonly options: CheckOptions;
  /** Worker threads the check is split over (`--workers`); 1 runs it in this thread. */
  readonly workers: number;
  readonly values: Values;
}

/** Reads the positionals and options; a string is the problem, for stderr and exit 2. */
function request(values: Values, positionals: readonly string[]): Request | string {
  const [command, scenario, ...rest] = positionals;
  if (command !== "check" && command !== "replay") return unknownCommand(command ?? "");
  const problem = command === "check" ? checkArguments(positionals) : replayArguments(positionals);
  if (problem !== undefined) return problem;
  let runSeed: string | undefined;
  if (command === "check") {
    runSeed = values.replay;
  } else {
    if (values.replay !== undefined) return "replay takes the run seed as its argument, not --replay";
    runSeed = rest[0];
  }
  let budgetMs: number | undefined;
  if (values["budget-ms"] !== undefined) {
    budgetMs = Number(values["budget-ms"]);
    if (!/^\d+$/.test(values["budget-ms"]) || !Number.isSafeInteger(budgetMs) || budgetMs <= 0) {
      return `--budget-ms must be a whole number of milliseconds from 1 to ${BUDGET_MS_MAX}, not ${values["budget-ms"]}`;
    }
  }
  let shard: CheckOptions["shard"];
  if (values.shard !== undefined) {
    const match = /^(\d+)\/(\d+)$/.exec(values.shard);
    const [index, count] = match ? [Number(match[1]), Number(match[2])] : [0, 0];
    if (!match || count < 1 || index < 1 || index > count) {
      return `--shard takes I/N with 1 <= I <= N (shard I of N), not ${values.shard}`;
    }
    shard = { index: index - 1, count };
  }
  // The ranges of these numbers are check()'s and checkParallel()'s to enforce.
  for (const name of ["workers", "pct-depth"] as const) {
    const value = values[name];
    if (value !== undefined && !/^\d+$/.test(value)) return `--${name} must be a whole number, not ${value}`;
  }
  if (
    values["pct-depth"] !== undefined &&
    (values.strategy === "random" || values.strategy === "exhaustive")
  ) {
    return `--pct-depth is PCT's bug depth, which --strategy ${values.strategy} does not use (pct does, and auto when it samples)`;
  }
  if (values.junit === "") return "--junit needs the path of the file to write";
  if (values.html === "") return "--html needs the path of the file to write";
  // The options check() takes from the command line; one entry per option.
  const options: CheckOptions = {
    ...(values.seed === undefined ? {} : { seed: values.seed }),
    ...(runSeed === undefined ? {} : { replay: runSeed }),
    ...(budgetMs === undefined ? {} : { budgetMs }),
    ...(values.runtime === undefined ? {} : { runtime: values.runtime as CheckOptions["runtime"] }),
    ...(shard === undefined ? {} : { shard }),
    ...(values.strategy === undefined ? {} : { strategy: values.strategy as CheckOptions["strategy"] }),
    ...(values["pct-depth"] === undefined ? {} : { pctDepth: Number(values["pct-depth"]) }),
    ...(values["no-reduction"] ? { partialOrderReduction: false } : {}),
  };
  return { command, scenario: scenario as string, options, workers: Number(values.workers ?? 1), values };
}

/** What is wrong with `eutaxy check`'s arguments, if anything: it takes one scenario file. */
function checkArguments([, scenario, ...rest]: readonly string[]): string | undefined {
  if (scenario === undefined) return "check needs a scenario file: eutaxy check <scenario.sim.ts>";
  if (rest.length === 0) return undefined;
  if (rest.length === 1 && looksLikeRunSeed(rest[0] as string)) {
    return `check takes one scenario file; to run a run seed, eutaxy check ${scenario} --replay ${rest[0]} (or eutaxy replay ${scenario} ${rest[0]})`;
  }
  const files = [scenario, ...rest];
  return `check takes one scenario file, and was given ${files.length}: ${listed(files)} (a shell glob such as *.sim.ts expands to every file it matches; run eutaxy check once for each)`;
}

/** What is wrong with `eutaxy replay`'s arguments, if anything: a scenario file and a run seed. */
function replayArguments([, scenario, ...rest]: readonly string[]): string | undefined {
  if (scenario === undefined) {
    return "replay needs a scenario file and a run seed: eutaxy replay <scenario.sim.ts> <RUN_SEED>";
  }
  if (rest.length === 0) {
    return `replay: the run seed is missing after ${scenario}: eutaxy replay ${scenario} <RUN_SEED>, with the run seed a VIOLATED report printed`;
  }
  if (rest.length === 1) return undefined;
  return `replay takes a scenario file and one run seed, and was given ${rest.length + 1} arguments: ${listed([scenario, ...rest])}`;
}

/** A run seed as a report prints it: the seed's hash, then the events kept (`42fbb229c28a2459:2:…`). */
function looksLikeRunSeed(word: string): boolean {
  return /^[0-9a-f]{16}:/.test(word);
}

/** The first few of `words`, and how many more there are. */
function listed(words: readonly string[]): string {
  const shownMax = 3;
  if (words.length <= shownMax) return words.join(", ");
  return `${words.slice(0, shownMax).join(", ")} and ${words.length - shownMax} more`;
}

function unknownCommand(command: string): string {
  const commands = "the commands are check, replay and merge";
  if (SCENARIO_FILE.test(command)) {
    return `${command} is not a command; to check it: eutaxy check ${command} (${commands})`;
  }
  const near = closest(command, COMMANDS);
  return `unknown command ${command}${near ? `; did you mean ${near}?` : ""} (${commands})`;
}

/**
 * The command line read against `OPTIONS`, or the problem with it: an option there is not (with
 * the known one it most likely misspells), an option that needs a value and has none, a value
 * given to an option that takes none. Node's parser is run leniently and its tokens checked
 * here, so that every such problem is one line in eutaxy's words.
 */
function parse(argv: readonly string[]): { values: Values; positionals: string[] } | string {
  const args = negativesJoined(argv);
  const { positionals, tokens } = parseArgs({
    args,
    options: OPTIONS,
    allowPositionals: true,
    strict: false,
    tokens: true,
  });
  const values: Record<string, string | boolean> = {};
  for (const token of tokens) {
    if (token.kind !== "option") continue;
    const raw = args[token.index] as string;
    if (!Object.hasOwn(OPTIONS, token.name)) return unknownOption(raw, token.rawName);
    const name = token.name as keyof typeof OPTIONS;
    const spec: OptionSpec = OPTIONS[name];
    if (spec.type === "boolean") {
      if (token.value !== undefined) return `--${name} takes no value, and was given ${token.value}`;
      values[name] = true;
      continue;
    }
    // Without `=`, the parser takes the next argument as the value even when it is an option.
    if (token.value === undefined || (!token.inlineValue && token.value.startsWith("--"))) {
      return `--${name} needs a value: --${name} ${spec.value}`;
    }
    values[name] = token.value;
  }
  return { values: values as Values, positionals };
}

function unknownOption(raw: string, rawName: string): string {
  // `-json` reaches the parser as the short options -j, -s, -o, -n.
  const given = raw.startsWith("--") ? rawName : (raw.split("=")[0] as string);
  const near = closest(given.replace(/^-+/, ""), Object.keys(OPTIONS));
  return near
    ? `unknown option ${given}; did you mean --${near}?`
    : `unknown option ${given} (eutaxy --help lists the options)`;
}

/**
 * `argv` with a negative number after an option that takes a value joined to it
 * (`--budget-ms -5` as `--budget-ms=-5`): the parser would take `-5` for an option, and the
 * option's own check should say what is wrong with the value.
 */
function negativesJoined(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    const next = argv[i + 1];
    const option = arg.startsWith("--") ? OPTIONS[arg.slice(2) as keyof typeof OPTIONS] : undefined;
    if (option?.type === "string" && next !== undefined && /^-\d/.test(next)) {
      out.push(`${arg}=${next}`);
      i++;
    } else {
      out.push(arg);
    }
  }
  return out;
}

/** A mistake in the command line: one line saying what is wrong, and exit 2. */
function usageError(problem: string): number {
  process.stderr.write(`eutaxy: ${problem}\n`);
  return ExitCode.BadInput;
}

/** Runs the CLI with `argv` (without node and the script); resolves to the exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  const parsed = parse(argv);
  if (typeof parsed === "string") return usageError(parsed);
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(`${usage()}\n`);
    return ExitCode.Bounded;
  }
  if (values.version) {
    process.stdout.write(`${version()}\n`);
    return ExitCode.Bounded;
  }
  if (positionals.length === 0) {
    // What the command is for and how to learn more, without the page of options.
    process.stderr.write(`${SYNOPSIS.join("\n")}\neutaxy --help lists the options and exit codes.\n`);
    return ExitCode.BadInput;
  }
  if (positionals[0] === "merge") return merge(positionals.slice(1), values);
  const asked = request(values, positionals);
  if (typeof asked === "string") return usageError(asked);
  return run(asked);
}

async function run({ command, scenario, options, workers, values }: Request): Promise<number> {
  if (!reportsWritable(values)) return ExitCode.BadInput;
  const progress = progressLine(process.stderr);
  let result: CheckResult;
  try {
    const watched = { ...options, ...(progress ? { onProgress: progress.update } : {}) };
    result = await checkParallel(scenario, watched, workers);
  } catch (error) {
    progress?.clear();
    if (error instanceof InputError || error instanceof SimulationError) {
      // check() names a run seed it cannot read as the --replay option; replay took it as its argument.
      const message = command === "replay" ? error.message.replace(/^--replay: /, "") : error.message;
      process.stderr.write(`eutaxy: ${message}\n`);
      if (values.junit !== undefined) {
        const kind = error instanceof InputError ? "BAD_INPUT" : "ESCAPED_SIMULATION";
        if (!writeReport(values.junit, "--junit", renderJunitError(scenario, kind, message)))
          return ExitCode.BadInput;
      }
      return error.exitCode;
    }
    return internalError(error);
  }
  progress?.clear();
  try {
    process.stdout.write(`${output(command, result, values)}\n`);
    if (values.junit !== undefined) {
      const { scenario: declared } = await loadScenario(result.file);
      const xml = renderJunit(
        result,
        declared.invariants.map((inv) => inv.name),
        (runSeed) => stepByStepCommand(result, runSeed),
      );
      if (!writeReport(values.junit, "--junit", xml)) return ExitCode.BadInput;
    }
    if (values.html !== undefined && !writeReport(values.html, "--html", renderHtml(result))) {
      return ExitCode.BadInput;
    }
  } catch (error) {
    return internalError(error);
  }
  return exitCodeOf(result);
}

/** `eutaxy merge`: one verdict from the --json results of a check's shards. */
async function merge(files: readonly string[], values: Values): Promise<number> {
  if (files.length === 0) {
    return usageError("merge needs the --json results of the shards: eutaxy merge <result.json>...");
  }
  const ignored = Object.keys(values).filter((name) => name !== "json" && name !== "junit");
  if (ignored.length > 0) return usageError(`merge takes only --json and --junit, not --${ignored[0]}`);
  if (values.junit === "") return usageError("--junit needs the path of the file to write");
  if (!reportsWritable(values)) return ExitCode.BadInput;
  let merged: MergedResult;
  try {
    const results = files.map((file) => readResult(file));
    merged = mergeResults(results, files);
  } catch (error) {
    if (error instanceof InputError) {
      process.stderr.write(`eutaxy: ${error.message}\n`);
      // As a check that cannot run does: the CI shows the message, not "no test results".
      const report = renderJunitError(files[0] as string, "BAD_INPUT", error.message);
      if (values.junit !== undefined && !writeReport(values.junit, "--junit", report))
        return ExitCode.BadInput;
      return error.exitCode;
    }
    return internalError(error);
  }
  try {
    const report = renderMerged(merged);
    if (values.json) {
      process.stdout.write(`${JSON.stringify({ schema: "eutaxy.check/1", ...merged }, null, 2)}\n`);
    } else {
      process.stdout.write(`${report}\n`);
    }
    if (values.junit !== undefined) {
      const xml = renderMergedJunit(
        merged,
        await invariantNames(merged.file),
        report,
        (runSeed) => `eutaxy replay ${shown(merged.file)} ${runSeed}`,
      );
      if (!writeReport(values.junit, "--junit", xml)) return ExitCode.BadInput;
    }
  } catch (error) {
    return internalError(error);
  }
  return exitCodeOf(merged as CheckResult);
}

/**
 * The scenario's invariants, for one testcase each, when the merging machine has the scenario
 * (a CI job that checked the project out); without it, the report has the testcases the results
 * name (the broken invariant, or one for all of them).
 */
async function invariantNames(file: string): Promise<string[]> {
  try {
    const { scenario } = await loadScenario(file);
    return scenario.invariants.map((invariant) => invariant.name);
  } catch (error) {
    if (error instanceof InputError || error instanceof SimulationError) return [];
    throw error;
  }
}

/** One shard's result, as `eutaxy check --json` printed it. */
function readResult(file: string): CheckResult {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    throw new InputError(file, "no such file");
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new InputError(file, "not JSON: expected the output of eutaxy check --json");
  }
  const schema = (parsed as { schema?: unknown } | null)?.schema;
  if (schema !== "eutaxy.check/1") {
    throw new InputError(file, "not a result of eutaxy check --json (schema eutaxy.check/1)");
  }
  return parsed as CheckResult;
}

/** The merged verdict: a shard's VIOLATED report as it is, or the merged coverage. */
function renderMerged(merged: MergedResult): string {
  if (merged.verdict === "VIOLATED") return renderReport(merged);
  const given =
    merged.verdict === "INCOMPLETE" && merged.missing.length > 0
      ? `${merged.shards - merged.missing.length} of ${merged.shards}`
      : `${merged.shards}`;
  const head = `${merged.verdict}  ${merged.scenario}  (seed ${merged.seed}), ${given} shards merged`;
  if (merged.verdict === "BOUNDED") {
    return [
      head,
      "",
      `Every shard ran every schedule of its part within the bounds and no invariant broke: ${merged.runs} schedules in all.`,
      ...(merged.partialOrderReduction ? [REDUCTION_CAVEAT] : []),
      `Bounds: ${describeBounds(merged)}.`,
      ...renderWarnings(merged),
    ].join("\n");
  }
  return [
    head,
    "",
    `Not every schedule within the bounds ran (${shortfall(merged)}); no invariant broke in those that did, but this is not a proof.`,
    ...renderWarnings(merged),
  ].join("\n");
}

/** What goes to stdout: the JSON, the run step by step for `replay`, or the report. */
function output(command: Request["command"], result: CheckResult, values: Values): string {
  if (values.json) return JSON.stringify({ schema: "eutaxy.check/1", ...result }, null, 2);
  const color = colorEnabled(process.stdout, process.env);
  if (command === "replay")
    return renderReplay(result, (line, verdict) => paintVerdict(line, verdict, color));
  const report = renderParallelReport(result);
  const lines = report.split("\n");
  lines[0] = paintVerdict(lines[0] as string, result.verdict, color);
  const counterexample = values.trace ? renderCounterexample(result) : undefined;
  return counterexample === undefined ? lines.join("\n") : `${lines.join("\n")}\n\n${counterexample}`;
}

/**
 * Whether the report files asked for can be written, saying why not for the first that cannot:
 * found before the check (or the merge), not after it printed.
 */
function reportsWritable(values: Values): boolean {
  for (const [option, file] of [
    ["--junit", values.junit],
    ["--html", values.html],
  ] as const) {
    const why = file === undefined ? undefined : unwritable(file);
    if (why !== undefined && file !== undefined) {
      process.stderr.write(`eutaxy: ${shown(file)}: cannot write the ${option} report (${why})\n`);
      return false;
    }
  }
  return true;
}

/** Why `file` cannot be written (its folder missing or read-only, or it is a folder), if so. */
function unwritable(file: string): string | undefined {
  try {
    if (statSync(file, { throwIfNoEntry: false })?.isDirectory()) return "EISDIR";
    accessSync(dirname(resolve(file)), constants.W_OK);
    return undefined;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code ?? (error as Error).message;
  }
}

/** Writes a report file; a path that cannot be written is the user's to fix (exit 2). */
function writeReport(file: string, option: "--junit" | "--html", text: string): boolean {
  try {
    writeFileSync(file, text);
    return true;
  } catch (error) {
    const why = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    process.stderr.write(`eutaxy: ${shown(file)}: cannot write the ${option} report (${why})\n`);
    return false;
  }
}

function internalError(error: unknown): number {
  process.stderr.write(
    `eutaxy: internal error (a bug in eutaxy, please report it):\n${(error as Error)?.stack ?? error}\n`,
  );
  return ExitCode.Internal;
}
