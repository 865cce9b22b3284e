/**
 * What to add to a message about a D1 table that does not exist when the likely cause is a
 * scenario that never applied its Worker's migrations: every database starts empty, and only
 * `d1Schema` steps create tables. Reads no files, as the exploration it runs in does not.
 */

import { dirname, isAbsolute, relative } from "node:path";
import { shown } from "../errors.ts";
import { d1Store } from "./store-names.ts";
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
  const hint = migrationsHint(world, (store) => store === d1Store(world.workers, db));
  return hint === undefined ? message : `${message} (${hint})`;
}

/**
 * `message` about a Worker's own query of a table its database lacks (`no such table: orders`,
 * which names no database), with the hint for the first database the scenario never sets up
 * whose Worker keeps D1 migrations.
 */
export function withAnyMigrationsHint(world: World, message: string): string {
  if (!MISSING_TABLE.test(message)) return message;
  const hint = migrationsHint(world, () => true);
  return hint === undefined ? message : `${message} (${hint})`;
}

/** How to apply the migrations of the first database `wanted` accepts that no d1Schema sets up. */
function migrationsHint(world: World, wanted: (store: string) => boolean): string | undefined {
  const setUp = new Set(
    (world.scenario.setup ?? []).flatMap((step) =>
      step.kind === "d1Schema" ? [d1Store(world.workers, step.db)] : [],
    ),
  );
  for (const worker of world.workers) {
    for (const declared of worker.config?.d1Databases ?? []) {
      const spec = worker.bindings.get(declared.binding);
      if (spec?.kind !== "d1" || declared.migrationsDir === undefined) continue;
      if (!wanted(spec.store) || setUp.has(spec.store)) continue;
      const binding = `${worker.prefix}${declared.binding}`;
      const config = shown(worker.config?.file ?? "");
      const folder = `${shown(declared.migrationsDir)}/`;
      const step = `d1Schema("${binding}", "${fromScenario(world.file, declared.migrationsDir)}")`;
      return `no d1Schema of the scenario sets up D1 ${binding}, and ${config} keeps its migrations in ${folder}: add ${step} to the setup`;
    }
  }
  return undefined;
}

/** `path` as the scenario would name it: relative to the scenario's folder, `./` in front. */
function fromScenario(scenarioFile: string, path: string): string {
  const rel = relative(dirname(scenarioFile), path);
  if (isAbsolute(rel) || rel.startsWith("..")) return rel;
  return `./${rel}`;
}
