/**
 * A Worker's env: its vars and secrets, and one binding object per binding, each making its
 * calls as effects of `scope` (a run makes one env per Worker and gives it to every request, as
 * workerd does; a Durable Object's instance has its own).
 */

import { InputError } from "../errors.ts";
import { r2ListHonorsInclude, rpcEnabled } from "./compatibility.ts";
import type { Env, RunContext } from "./context.ts";
import { createD1Database, newSchemaWatch } from "./d1.ts";
import { createDurableObjectNamespace } from "./durable-objects.ts";
import type { EffectScope } from "./effect-scope.ts";
import { createKvNamespace } from "./kv.ts";
import { createQueueProducer } from "./queues.ts";
import { createR2Bucket } from "./r2.ts";
import { createServiceBinding, serviceCalls } from "./service.ts";
import type { BindingSpec, SimWorker } from "./world.ts";

/**
 * A binding of a kind eutaxy does not simulate. Loading is fine (a Worker may never touch it in
 * the scenario); the first use ends the check with a message saying which binding it was,
 * rather than letting the Worker see a made-up answer.
 */
function unsupportedBinding(run: RunContext, spec: Extract<BindingSpec, { kind: "unsupported" }>): object {
  const refuse = (): never => {
    const error = new InputError(
      spec.file,
      `${spec.field} binds ${spec.name}, and the Worker used it, but eutaxy does not simulate this kind of binding yet`,
    );
    run.fail(error);
    throw error;
  };
  return new Proxy(
    {},
    { get: (_target, key) => (key === "then" || typeof key === "symbol" ? undefined : refuse()) },
  );
}

export function buildEnv(run: RunContext, worker: SimWorker, scope: EffectScope): Env {
  const env: Env = { ...worker.vars };
  // The calling Worker's compatibility decides whether its stubs have RPC methods.
  const rpc = rpcEnabled(worker.config);
  for (const [name, spec] of worker.bindings) {
    switch (spec.kind) {
      case "d1":
        env[name] = createD1Database(
          spec.store,
          scope,
          run.engine,
          run.memo(`d1-schema:${spec.store}`, newSchemaWatch),
          () => run.replicaSession?.(`Worker ${worker.name}'s ${name}`),
        );
        break;
      case "service":
        env[name] = createServiceBinding(
          `${worker.prefix}${name}`,
          scope,
          serviceCalls(run, scope, spec.target, `${worker.prefix}${name}`),
          rpc,
        );
        break;
      case "kv":
        env[name] = createKvNamespace(spec, scope, run);
        break;
      case "r2":
        env[name] = createR2Bucket(spec, scope, run, r2ListHonorsInclude(worker.config));
        break;
      case "durableObject":
        env[name] = createDurableObjectNamespace(spec, scope, run, rpc);
        break;
      case "queue":
        env[name] = createQueueProducer(spec, scope, run);
        break;
      case "unsupported":
        env[name] = unsupportedBinding(run, spec);
        break;
    }
  }
  return env;
}
