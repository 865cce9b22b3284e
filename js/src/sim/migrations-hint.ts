/**
 * What to add to a message about a D1 table that does not exist when the likely cause is a
 * scenario that never applied its Worker's migrations: every database starts empty, and only
 * `d1Schema` steps create tables. Reads no files, as the exploration it runs in does not.
 */

import { dirname, isAbsolute, relative } from "node:path";
import { shown } from "../errors.ts";
import { d1StoreOf } from "./store-names.ts";
import type { World } from "./world.ts";

/** A message from a query or an invariant that names a table the database lacks. */
const MISSING_TABLE = /no such table|has no table/;

/**
 * `message`, and when it is about a table database `db` lacks, how to apply the D1 migrations of
 * a Worker that binds `db` (`migrationsDir`, load/wrangler.ts) when no `d1Schema` of the
 * scenario sets the database up.
 */
export function withMigrationsHint(world: World, db: string, message: string): string {
  if (!MISSING_TABLE.test(message)) return message;
  const store = d1StoreOf(world.workers, db) ?? db;
  const setUp = (world.scenario.setup ?? []).some(
    (step) => step.kind === "d1Schema" && (d1StoreOf(world.workers, step.db) ?? step.db) === store,
  );
  if (setUp) return message;
  for (const worker of world.workers) {
    for (const declared of worker.config?.d1Databases ?? []) {
      const spec = worker.bindings.get(declared.binding);
      if (spec?.kind !== "d1" || spec.store !== store || declared.migrationsDir === undefined) continue;
      const binding = `${worker.prefix}${declared.binding}`;
      const config = shown(worker.config?.file ?? "");
      const folder = `${shown(declared.migrationsDir)}/`;
      const step = `d1Schema("${binding}", "${fromScenario(world.file, declared.migrationsDir)}")`;
      return `${message} (no d1Schema of the scenario sets up D1 ${binding}, and ${config} keeps its migrations in ${folder}: add ${step} to the setup)`;
    }
  }
  return message;
}

/** `path` as the scenario would name it: relative to the scenario's folder, `./` in front. */
function fromScenario(scenarioFile: string, path: string): string {
  const rel = relative(dirname(scenarioFile), path);
  if (isAbsolute(rel) || rel.startsWith("..")) return rel;
  return `./${rel}`;
}
