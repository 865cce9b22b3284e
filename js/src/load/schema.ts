/**
 * Reads what a `d1Schema` step names: one SQL file, or a folder of D1 migrations (wrangler's
 * `migrations_dir`), whose `.sql` files are applied in the order `wrangler d1 migrations apply`
 * applies them, each as one schema file.
 */

import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { InputError } from "../errors.ts";
import type { SchemaFile } from "../explore.ts";

/** The SQL files `path` (absolute) names, with their text, in the order they are applied. */
export function readSchema(path: string): SchemaFile[] {
  const files = statSync(path, { throwIfNoEntry: false })?.isDirectory() ? migrationFiles(path) : [path];
  return files.map((file) => {
    try {
      return { file, sql: readFileSync(file, "utf8") };
    } catch {
      throw new InputError(file, "no such file (named by d1Schema in the scenario)");
    }
  });
}

/**
 * The migrations in `dir`, in wrangler's order: its `.sql` files sorted by name, then (stably)
 * by the number before the first `_`, so `9_seed.sql` comes before `10_index.sql`. The same
 * two sorts as wrangler's, so names without a number land where wrangler puts them too.
 */
export function migrationFiles(dir: string): string[] {
  const names = readdirSync(dir).filter(
    (name) => name.endsWith(".sql") && statSync(join(dir, name)).isFile(),
  );
  if (names.length === 0) {
    throw new InputError(
      dir,
      "no .sql files in this folder of migrations (named by d1Schema in the scenario)",
    );
  }
  const number = (name: string) => Number.parseInt(name.split("_")[0] ?? "", 10);
  return names
    .sort()
    .sort((a, b) => {
      if (number(a) < number(b)) return -1;
      if (number(a) > number(b)) return 1;
      return 0;
    })
    .map((name) => join(dir, name));
}
