/**
 * `eutaxy`: the programmatic API the CLI is built on. `check` runs a scenario and returns its
 * verdict; `renderReport` prints it as the CLI does.
 */

export { type CheckOptions, type CheckResult, check, DEFAULT_BOUNDS, type ResolvedBounds } from "./check.ts";
export type { FaultReport } from "./engine.ts";
export { ExitCode, InputError, SimulationError } from "./errors.ts";
export { renderReport, replayCommand } from "./report.ts";
