/**
 * The `eutaxy` command: a thin shell over `check()`. Options are declared once in a table that
 * both the parser and `--help` read.
 */

import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { type CheckResult, check } from "./check.ts";
import { ExitCode, InputError, SimulationError } from "./errors.ts";
import { renderReport } from "./report.ts";

interface OptionSpec {
  readonly type: "string" | "boolean";
  readonly value?: string;
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
  json: { type: "boolean", help: "print the result as JSON (schema eutaxy.check/1) instead of the report" },
  help: { type: "boolean", help: "show this help" },
  version: { type: "boolean", help: "print eutaxy's version" },
} as const satisfies Record<string, OptionSpec>;

const EXIT_CODES = [
  [ExitCode.Bounded, "BOUNDED: every schedule within the bounds ran, no invariant broke"],
  [ExitCode.Violated, "VIOLATED: an invariant broke; the report shows the shrunk schedule"],
  [ExitCode.BadInput, "bad input: a scenario, wrangler config, schema or Worker eutaxy cannot use"],
  [ExitCode.Incomplete, "INCOMPLETE: the budget ran out before the bounded space was covered"],
  [
    ExitCode.Simulation,
    "the Worker escaped the simulation (awaited a real timer or socket, or ran nondeterministically)",
  ],
] as const;

function usage(): string {
  const options = Object.entries(OPTIONS).map(([name, spec]) => {
    const flag = `--${name}${"value" in spec ? ` ${spec.value}` : ""}`;
    return `  ${flag.padEnd(22)} ${spec.help}`;
  });
  return [
    "Usage: eutaxy check <scenario.sim.ts> [options]",
    "",
    "Runs the scenario's Workers in one deterministic simulation, injects a crash before or",
    "after every binding call within the bounds, resends what got no answer, and checks the",
    "scenario's invariants after every run. Prints VIOLATED with a shrunk, replayable schedule,",
    "BOUNDED when every schedule within the bounds ran, or INCOMPLETE when the budget ran out.",
    "",
    "Options:",
    ...options,
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

/** Runs the CLI with `argv` (without node and the script); resolves to the exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  let parsed: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>;
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    process.stderr.write(`eutaxy: ${(error as Error).message}\n\n${usage()}\n`);
    return ExitCode.BadInput;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(`${usage()}\n`);
    return ExitCode.Bounded;
  }
  if (values.version) {
    process.stdout.write(`${version()}\n`);
    return ExitCode.Bounded;
  }
  const [command, scenario, ...extra] = positionals;
  if (command !== "check" || !scenario || extra.length > 0) {
    process.stderr.write(`eutaxy: expected \`eutaxy check <scenario.sim.ts>\`\n\n${usage()}\n`);
    return ExitCode.BadInput;
  }
  let budgetMs: number | undefined;
  if (values["budget-ms"] !== undefined) {
    budgetMs = Number(values["budget-ms"]);
    if (!Number.isInteger(budgetMs) || budgetMs <= 0) {
      process.stderr.write(`eutaxy: --budget-ms must be a positive whole number of milliseconds\n`);
      return ExitCode.BadInput;
    }
  }

  try {
    const result = await check(scenario, {
      ...(values.seed === undefined ? {} : { seed: values.seed }),
      ...(values.replay === undefined ? {} : { replay: values.replay }),
      ...(budgetMs === undefined ? {} : { budgetMs }),
    });
    process.stdout.write(
      values.json
        ? `${JSON.stringify({ schema: "eutaxy.check/1", ...result }, null, 2)}\n`
        : `${renderReport(result)}\n`,
    );
    return exitCodeOf(result);
  } catch (error) {
    if (error instanceof InputError || error instanceof SimulationError) {
      process.stderr.write(`eutaxy: ${error.message}\n`);
      return error.exitCode;
    }
    process.stderr.write(
      `eutaxy: internal error (a bug in eutaxy, please report it):\n${(error as Error)?.stack ?? error}\n`,
    );
    return ExitCode.Internal;
  }
}
