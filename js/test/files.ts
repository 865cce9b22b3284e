/**
 * Folders of files for tests that write a Worker, a config or a scenario of their own, and the
 * bad input such a test expects.
 */

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, afterEach, beforeEach, expect } from "vitest";
import { InputError } from "../src/errors.ts";

/** Writes `text` to `name` in `dir`, making the folders it needs, and answers the file's path. */
function writeIn(dir: string, name: string, text: string | Uint8Array): string {
  const file = join(dir, name);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
  return file;
}

/** The folders `tempFolder` made for the test file that imports this module. */
const made: string[] = [];
afterAll(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A new empty folder in the system's temporary folder, removed after the test file's tests. */
export function tempFolder(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

/** A new folder (named from `prefix`) holding `files`, path → text, for one test file. */
export function project(files: Record<string, string>, prefix = "eutaxy-project-"): string {
  const dir = tempFolder(prefix);
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
