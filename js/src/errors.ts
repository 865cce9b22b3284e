/**
 * The errors a check can end with, each with its own exit code. Anything else that escapes is a
 * bug in eutaxy and is reported as one.
 */

import { isAbsolute, relative } from "node:path";

/** A path as the user would write it: relative to the working folder when inside it. */
export function shown(path: string): string {
  if (!isAbsolute(path)) return path;
  const rel = relative(process.cwd(), path);
  return rel && !rel.startsWith("..") && !isAbsolute(rel) ? rel : path;
}

/** Bad input: a scenario, a wrangler config, a schema or a Worker module eutaxy cannot use. */
export class InputError extends Error {
  readonly exitCode = 2;
  constructor(
    /** The file the problem is in, as the user named it or absolute. */
    readonly file: string | undefined,
    readonly problem: string,
  ) {
    super(file ? `${shown(file)}: ${problem}` : problem);
    this.name = "InputError";
  }
}

/**
 * The Worker code escaped the simulation: it awaited something the simulation does not control
 * (a real timer, a socket), or a replay of the same choices reached a different effect.
 */
export class SimulationError extends Error {
  readonly exitCode = 4;
  constructor(message: string) {
    super(message);
    this.name = "SimulationError";
  }
}

export const ExitCode = {
  Bounded: 0,
  Violated: 1,
  BadInput: 2,
  Incomplete: 3,
  Simulation: 4,
  Internal: 70,
} as const;
