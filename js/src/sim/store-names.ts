/**
 * Scenario names of bindings (`DB`, `payments/DB` for a callee's) resolved to the Worker that
 * has them and to the engine store they reach. Apart from world.ts, which loads and bundles,
 * because the run also resolves them inside workerd.
 */

import type { BindingSpec, SimWorker } from "./world.ts";

/** Resolves `binding` (`PAYMENTS`, or `payments/LEDGER` for a callee's) to its Worker and name. */
export function ownerOf(workers: readonly SimWorker[], binding: string): [SimWorker, string] | undefined {
  const slash = binding.lastIndexOf("/");
  const prefix = slash < 0 ? "" : binding.slice(0, slash + 1);
  const owner = workers.find((w) => w.prefix === prefix);
  return owner ? [owner, binding.slice(slash + 1)] : undefined;
}

/**
 * The store D1 binding `db` reaches, or undefined when no Worker of the scenario has it. Bindings
 * of one database share one store, so `DB` and `admin/DB` may answer the same.
 */
export function d1StoreOf(workers: readonly SimWorker[], db: string): string | undefined {
  const found = ownerOf(workers, db);
  const spec = found?.[0].bindings.get(found[1]);
  return spec?.kind === "d1" ? spec.store : undefined;
}

/** The store KV binding `namespace` reaches, or undefined when no Worker of the scenario has it. */
export function kvStoreOf(workers: readonly SimWorker[], namespace: string): string | undefined {
  const found = ownerOf(workers, namespace);
  const spec = found?.[0].bindings.get(found[1]);
  return spec?.kind === "kv" ? spec.store : undefined;
}

/** The store R2 binding `bucket` reaches, or undefined when no Worker of the scenario has it. */
export function r2StoreOf(workers: readonly SimWorker[], bucket: string): string | undefined {
  const found = ownerOf(workers, bucket);
  const spec = found?.[0].bindings.get(found[1]);
  return spec?.kind === "r2" ? spec.store : undefined;
}

/** The store D1 binding `db` reaches, or `db` itself when no Worker of the scenario has it. */
export function d1Store(workers: readonly SimWorker[], db: string): string {
  return d1StoreOf(workers, db) ?? db;
}

/** The scenario names of every binding of `kind` (`DB`, `payments/DB`), for messages. */
export function bindingNames(workers: readonly SimWorker[], kind: BindingSpec["kind"]): string[] {
  return workers.flatMap((w) =>
    [...w.bindings].flatMap(([n, b]) => (b.kind === kind ? [`${w.prefix}${n}`] : [])),
  );
}
