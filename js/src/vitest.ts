/**
 * `eutaxy/vitest`: scenarios as vitest tests. Importing this module adds three matchers to
 * vitest's `expect`, each over the CheckResult of a check:
 *
 * - `toBeBounded()`: every schedule within the bounds ran and no invariant broke.
 * - `toBeViolated(invariant?)`: an invariant broke (the one named, when a name is given).
 * - `toHold()`: no invariant broke, over every schedule within the bounds (BOUNDED) or in the one
 *   run a replay ran (HELD). INCOMPLETE fails it: schedules that never ran prove nothing.
 *
 * When a matcher fails, its message is the report the CLI prints (renderReport), so the test's
 * output carries the broken invariant, the shrunk schedule and the command that replays it.
 * `checkScenario(path, options?)` runs a check from a test; `scenarioTest(name, path, expectation)`
 * registers a whole test for one scenario.
 *
 * vitest is a peer dependency: this module is the only one in eutaxy that imports it, and it runs
 * in the vitest worker of the test that imports it (Node, not the Workers pool).
 */

import { isAbsolute } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, test } from "vitest";
import { type CheckOptions, type CheckResult, check } from "./check.ts";
import { InputError, SimulationError } from "./errors.ts";
import { renderReport, stepByStepCommand } from "./report.ts";

/** What the matchers add to vitest's `expect(result)`. */
export interface EutaxyMatchers<R = unknown> {
  /** Every schedule within the bounds ran and no invariant broke. */
  toBeBounded(): R;
  /** An invariant broke; when `invariant` is given, that one. */
  toBeViolated(invariant?: string): R;
  /** No invariant broke: BOUNDED, or HELD for a replayed run. */
  toHold(): R;
}

declare module "vitest" {
  // biome-ignore lint/suspicious/noExplicitAny: vitest declares Matchers<T = any>; an augmentation must repeat it.
  interface Matchers<T = any> extends EutaxyMatchers<T> {}
}

/** What a scenario test expects of its check. */
export type ScenarioExpectation = "BOUNDED" | "VIOLATED" | { readonly violated: string };

export interface ScenarioTestOptions extends CheckOptions {
  /**
   * The test's timeout in ms. A check spends up to its budget exploring, and also bundles the
   * Workers and shrinks a counterexample, so vitest's default of 5 s is too short for most.
   */
  readonly timeout?: number;
}

/** The timeout scenarioTest gives a test: the default budget (10 s) with room for bundling and shrinking. */
const SCENARIO_TEST_TIMEOUT_MS = 60_000;

interface MatcherContext {
  readonly isNot: boolean;
}

interface MatcherOutcome {
  readonly pass: boolean;
  readonly message: () => string;
}

/**
 * A failed matcher's message: one line saying what was expected, then the check's report and,
 * for a violation, the command that prints its run step by step.
 */
function failure(expected: string, result: CheckResult): string {
  return `expected the check to be ${expected}, but it is ${result.verdict}:\n\n${reported(result)}`;
}

/** The check's report, with the command that prints a violation's run step by step. */
function reported(result: CheckResult): string {
  const report = renderReport(result);
  return result.verdict === "VIOLATED"
    ? `${report}\nStep by step: ${stepByStepCommand(result, result.runSeed)}`
    : report;
}

/**
 * The received value as a CheckResult. Anything else (most often the promise of a check that was
 * not awaited) is a mistake in the test, not a verdict: it throws, so that `.not` cannot turn it
 * into a passing assertion.
 */
function asResult(received: unknown, matcher: string): CheckResult {
  if (received instanceof Promise) {
    throw new TypeError(
      `${matcher}() needs the result of a check, but got a promise: await checkScenario(...) first, or use expect(...).resolves.${matcher}()`,
    );
  }
  const verdict = (received as { verdict?: unknown } | null | undefined)?.verdict;
  if (typeof received !== "object" || received === null || typeof verdict !== "string") {
    throw new TypeError(
      `${matcher}() needs the result of check() or checkScenario(), but got ${describe(received)}`,
    );
  }
  return received as CheckResult;
}

function describe(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (typeof value === "object")
    return `an object without a verdict (${Object.keys(value).join(", ") || "empty"})`;
  return `a ${typeof value}`;
}

/**
 * The matchers as vitest's `expect.extend` takes them. Importing this module installs them;
 * they are exported too, for a setup file that wants to install them on an `expect` of its own.
 */
export const eutaxyMatchers = {
  toBeBounded(this: MatcherContext, received: unknown): MatcherOutcome {
    const result = asResult(received, "toBeBounded");
    return {
      pass: result.verdict === "BOUNDED",
      message: () =>
        this.isNot
          ? `expected the check not to be BOUNDED, but it is:\n\n${reported(result)}`
          : failure("BOUNDED", result),
    };
  },

  toBeViolated(this: MatcherContext, received: unknown, invariant?: string): MatcherOutcome {
    const result = asResult(received, "toBeViolated");
    const wanted = invariant === undefined ? "VIOLATED" : `VIOLATED (invariant ${invariant})`;
    if (result.verdict === "VIOLATED" && invariant !== undefined && result.invariant !== invariant) {
      return {
        pass: false,
        message: () =>
          `expected the check to break invariant ${invariant}, but it broke ${result.invariant}:\n\n${reported(result)}`,
      };
    }
    return {
      pass: result.verdict === "VIOLATED",
      message: () =>
        this.isNot
          ? `expected the check not to be ${wanted}, but it is:\n\n${reported(result)}`
          : failure(wanted, result),
    };
  },

  toHold(this: MatcherContext, received: unknown): MatcherOutcome {
    const result = asResult(received, "toHold");
    return {
      pass: result.verdict === "BOUNDED" || result.verdict === "HELD",
      message: () =>
        this.isNot
          ? `expected an invariant to break, but the check is ${result.verdict}:\n\n${reported(result)}`
          : failure("BOUNDED (or HELD, for a replay)", result),
    };
  },
};

expect.extend(eutaxyMatchers);

/**
 * Runs the check of a scenario from a test. The scenario is named as `new URL("./x.sim.ts",
 * import.meta.url)` (relative to the test file) or by an absolute path; a relative path string is
 * refused, because it would be read from whatever folder vitest was started in.
 *
 * A scenario eutaxy cannot use fails the test with the one message the CLI prints for it, and a
 * stack that points at the test's call rather than into eutaxy.
 */
export async function checkScenario(path: string | URL, options: CheckOptions = {}): Promise<CheckResult> {
  // Taken now, while the test's own frame is still on the stack; after the first await it is not.
  const site = callSite(checkScenario);
  try {
    return await check(scenarioFile(path), options);
  } catch (error) {
    if (error instanceof InputError || error instanceof SimulationError) atSite(error, site);
    throw error;
  }
}

/** The stack where `callee` was called, for an error later raised on the caller's behalf. */
function callSite(callee: (...args: never[]) => unknown): Error {
  const site = new Error();
  Error.captureStackTrace?.(site, callee);
  return site;
}

/** `error` with the stack of `site` under its message: vitest then shows the caller's line. */
function atSite(error: Error, site: Error): void {
  const frames = (site.stack ?? "").split("\n").slice(1).join("\n");
  error.stack = `${error.name}: ${error.message}\n${frames}`;
}

/** The scenario's absolute path, from a file URL or an absolute path. */
function scenarioFile(path: string | URL): string {
  if (path instanceof URL) {
    if (path.protocol !== "file:") {
      throw new InputError(
        path.href,
        'checkScenario needs a file: URL, such as new URL("./x.sim.ts", import.meta.url)',
      );
    }
    return fileURLToPath(path);
  }
  if (typeof path !== "string" || path === "") {
    throw new InputError(
      undefined,
      'checkScenario needs the scenario file, as new URL("./x.sim.ts", import.meta.url)',
    );
  }
  if (path.startsWith("file:")) return fileURLToPath(path);
  if (!isAbsolute(path)) {
    throw new InputError(
      path,
      `checkScenario needs the scenario as new URL(${JSON.stringify(path)}, import.meta.url) or an absolute path; a relative path would depend on the folder vitest was started in`,
    );
  }
  return path;
}

/**
 * Registers one vitest test that checks the scenario at `path` and expects `expectation`:
 * `"BOUNDED"`, `"VIOLATED"`, or `{ violated: "invariant-name" }`. Call it where `test` could be
 * called: at the top of a test file or inside `describe`.
 */
export function scenarioTest(
  name: string,
  path: string | URL,
  expectation: ScenarioExpectation,
  options: ScenarioTestOptions = {},
): void {
  const { timeout = SCENARIO_TEST_TIMEOUT_MS, ...checkOptions } = options;
  if (
    expectation !== "BOUNDED" &&
    expectation !== "VIOLATED" &&
    typeof (expectation as { violated?: unknown } | null)?.violated !== "string"
  ) {
    throw new InputError(
      undefined,
      `scenarioTest ${JSON.stringify(name)}: expected "BOUNDED", "VIOLATED" or { violated: "invariant-name" }, got ${JSON.stringify(expectation)}`,
    );
  }
  // A failure points at the line that registered the test, not into eutaxy.
  const site = callSite(scenarioTest);
  test(
    name,
    async () => {
      try {
        const result = await checkScenario(path, checkOptions);
        if (expectation === "BOUNDED") expect(result).toBeBounded();
        else if (expectation === "VIOLATED") expect(result).toBeViolated();
        else expect(result).toBeViolated(expectation.violated);
      } catch (error) {
        if (error instanceof Error) atSite(error, site);
        throw error;
      }
    },
    timeout,
  );
}
