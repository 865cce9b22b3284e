import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { InputError } from "../errors.ts";
import { migrationFiles, readSchema } from "./schema.ts";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "eutaxy-schema-"));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function write(name: string, text: string): string {
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
}

/** The InputError `run` throws; fails the test when it throws anything else or nothing. */
function inputError(run: () => unknown): InputError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(InputError);
    return error as InputError;
  }
  throw new Error("expected an InputError");
}

describe("readSchema", () => {
  it("reads one SQL file", () => {
    const file = write("schema.sql", "CREATE TABLE t (v INTEGER);");
    expect(readSchema(file)).toEqual([{ file, sql: "CREATE TABLE t (v INTEGER);" }]);
  });

  it("reads a folder of migrations, each file on its own, in the order wrangler applies them", () => {
    write("0002_add_total.sql", "ALTER TABLE orders ADD COLUMN total INTEGER;");
    write("0001_init.sql", "CREATE TABLE orders (id TEXT);");
    expect(readSchema(dir)).toEqual([
      { file: join(dir, "0001_init.sql"), sql: "CREATE TABLE orders (id TEXT);" },
      { file: join(dir, "0002_add_total.sql"), sql: "ALTER TABLE orders ADD COLUMN total INTEGER;" },
    ]);
  });
});

describe("migrationFiles", () => {
  it("orders by the number before the first _, then by name, and takes .sql files only", () => {
    for (const name of [
      "10_index.sql",
      "9_seed.sql",
      "0001_init.sql",
      "0002_b.sql",
      "0002_a.sql",
      "README.md",
    ]) {
      write(name, "");
    }
    mkdirSync(join(dir, "0003_folder.sql"));
    expect(migrationFiles(dir)).toEqual(
      ["0001_init.sql", "0002_a.sql", "0002_b.sql", "9_seed.sql", "10_index.sql"].map((name) =>
        join(dir, name),
      ),
    );
  });

  it("reports a folder without migrations", () => {
    write("notes.txt", "");
    const error = inputError(() => migrationFiles(dir));
    expect(error.file).toBe(dir);
    expect(error.problem).toBe(
      "no .sql files in this folder of migrations (named by d1Schema in the scenario)",
    );
  });
});
