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

/** A wrangler config as the user would name it: its file, and the environment read if one was. */
export function shownConfig(config: { readonly file: string; readonly env?: string }): string {
  return config.env === undefined ? shown(config.file) : `${shown(config.file)} (env.${config.env})`;
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
 * (a socket, a promise nothing settles), or a replay of the same choices reached a different effect.
 */
export class SimulationError extends Error {
  readonly exitCode = 4;
  constructor(message: string) {
    super(message);
    this.name = "SimulationError";
  }
}

/**
 * An error as plain data, to cross to where the check was asked for (from workerd, from a worker
 * thread) and be raised there as the same kind of error: a class does not cross.
 */
export type CarriedError =
  | { readonly kind: "input"; readonly file: string | undefined; readonly problem: string }
  | { readonly kind: "simulation"; readonly message: string }
  | { readonly kind: "internal"; readonly message: string; readonly stack: string | undefined };

export function carry(error: unknown): CarriedError {
  if (error instanceof InputError) return { kind: "input", file: error.file, problem: error.problem };
  if (error instanceof SimulationError) return { kind: "simulation", message: error.message };
  if (error instanceof Error) return { kind: "internal", message: error.message, stack: error.stack };
  return { kind: "internal", message: String(error), stack: undefined };
}

/** The error `carried` was, to throw again; `where` marks an internal error's stack. */
export function uncarry(carried: CarriedError, where?: string): Error {
  switch (carried.kind) {
    case "input":
      return new InputError(carried.file, carried.problem);
    case "simulation":
      return new SimulationError(carried.message);
    case "internal": {
      const error = new Error(carried.message);
      if (carried.stack) error.stack = where ? `${carried.stack}\n    (${where})` : carried.stack;
      return error;
    }
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
