import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { inputErrorOf, scratchFolder } from "../../test/files.ts";
import { migrationFiles, readSchema } from "./schema.ts";

const scratch = scratchFolder("eutaxy-schema-");
const write = scratch.write;

describe("readSchema", () => {
  it("reads one SQL file", () => {
    const file = write("schema.sql", "CREATE TABLE t (v INTEGER);");
    expect(readSchema(file)).toEqual([{ file, sql: "CREATE TABLE t (v INTEGER);" }]);
  });

  it("reads a folder of migrations, each file on its own, in the order wrangler applies them", () => {
    write("0002_add_total.sql", "ALTER TABLE orders ADD COLUMN total INTEGER;");
    write("0001_init.sql", "CREATE TABLE orders (id TEXT);");
    expect(readSchema(scratch.dir)).toEqual([
      { file: join(scratch.dir, "0001_init.sql"), sql: "CREATE TABLE orders (id TEXT);" },
      { file: join(scratch.dir, "0002_add_total.sql"), sql: "ALTER TABLE orders ADD COLUMN total INTEGER;" },
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
    mkdirSync(join(scratch.dir, "0003_folder.sql"));
    expect(migrationFiles(scratch.dir)).toEqual(
      ["0001_init.sql", "0002_a.sql", "0002_b.sql", "9_seed.sql", "10_index.sql"].map((name) =>
        join(scratch.dir, name),
      ),
    );
  });

  it("reports a folder without migrations", () => {
    write("notes.txt", "");
    const error = inputErrorOf(() => migrationFiles(scratch.dir));
    expect(error.file).toBe(scratch.dir);
    expect(error.problem).toBe(
      "no .sql files in this folder of migrations (named by d1Schema in the scenario)",
    );
  });
});
