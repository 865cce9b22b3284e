/**
 * Folders of files for tests that write a Worker, a config or a scenario of their own, and the
 * bad input such a test expects.
 */

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, expect } from "vitest";
import { InputError } from "../src/errors.ts";

/** Writes `text` to `name` in `dir`, making the folders it needs, and answers the file's path. */
function writeIn(dir: string, name: string, text: string | Uint8Array): string {
  const file = join(dir, name);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
  return file;
}

/** A new folder (named from `prefix`) holding `files`, path → text, for one test. */
export function project(files: Record<string, string>, prefix = "eutaxy-project-"): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  for (const [name, text] of Object.entries(files)) writeIn(dir, name, text);
  return dir;
}

/**
 * A folder made afresh for each test of the file that calls this at its top, and removed after
 * it: `dir` is the current one, `write` writes a file in it and answers its path.
 */
export function scratchFolder(prefix: string): {
  readonly dir: string;
  write(name: string, text: string | Uint8Array): string;
} {
  let current = "";
  beforeEach(() => {
    current = mkdtempSync(join(tmpdir(), prefix));
  });
  afterEach(() => {
    rmSync(current, { recursive: true, force: true });
  });
  return {
    get dir() {
      return current;
    },
    write: (name, text) => writeIn(current, name, text),
  };
}

/** The InputError `run` throws; fails the test when it throws anything else or nothing. */
export function inputErrorOf(run: () => unknown): InputError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(InputError);
    return error as InputError;
  }
  throw new Error("expected an InputError");
}
