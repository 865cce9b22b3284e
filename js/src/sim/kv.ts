/**
 * Workers KV, simulated over a SQLite store in the engine. (Being written.)
 */

import type { Engine } from "../engine.ts";
import type { RunContext } from "./context.ts";
import type { EffectScope } from "./effect-scope.ts";
import type { BindingSpec } from "./world.ts";

/** The schema of a KV namespace's store, applied once at setup. */
export const KV_SCHEMA =
  "CREATE TABLE kv (key TEXT PRIMARY KEY, value BLOB NOT NULL, metadata TEXT, expiration INTEGER)";

export function createKvNamespace(
  spec: Extract<BindingSpec, { kind: "kv" }>,
  scope: EffectScope,
  run: RunContext,
): object {
  void scope;
  void run;
  throw new Error(`KV binding ${spec.name} is not simulated yet`);
}

/** The value of `key` as text at the end of a run, or null (for custom invariants). */
export function kvRead(engine: Engine, store: string, key: string): string | null {
  const result = engine.d1Run(store, "SELECT value FROM kv WHERE key = ?1", [key]);
  const value = result.rows[0]?.[0];
  if (value === undefined) return null;
  return value instanceof Uint8Array ? new TextDecoder().decode(value) : String(value);
}

/** Every key at the end of a run, sorted as KV lists them. */
export function kvKeys(engine: Engine, store: string): string[] {
  return engine.d1Run(store, "SELECT key FROM kv ORDER BY key", []).rows.map((row) => String(row[0]));
}
