/**
 * Durable Objects: namespaces, ids, stubs, and objects whose storage lives in the engine.
 * (Being written.)
 */

import type { RunContext } from "./context.ts";
import type { EffectScope } from "./effect-scope.ts";
import type { BindingSpec, DurableObjectNamespace } from "./world.ts";

export function createDurableObjectNamespace(
  spec: Extract<BindingSpec, { kind: "durableObject" }>,
  scope: EffectScope,
  run: RunContext,
): object {
  void scope;
  void run;
  throw new Error(`Durable Object binding ${spec.name} is not simulated yet`);
}

/** The engine store of the object `idFromName(name)` names in `namespace`. */
export function durableObjectStore(namespace: DurableObjectNamespace, name: string): string {
  return `${namespace.storePrefix}${name}`;
}
