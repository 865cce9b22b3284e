/**
 * A Worker's env for one invocation: its vars and secrets, and one binding object per
 * binding, each making its calls as effects of `scope`.
 */

import type { Env, RunContext } from "./context.ts";
import { createD1Database } from "./d1.ts";
import { createDurableObjectNamespace } from "./durable-objects.ts";
import type { EffectScope } from "./effect-scope.ts";
import { createKvNamespace } from "./kv.ts";
import { createQueueProducer } from "./queues.ts";
import { createServiceBinding, serviceCalls } from "./service.ts";
import type { SimWorker } from "./world.ts";

export function buildEnv(run: RunContext, worker: SimWorker, scope: EffectScope): Env {
  const env: Env = { ...worker.vars };
  for (const [name, spec] of worker.bindings) {
    switch (spec.kind) {
      case "d1":
        env[name] = createD1Database(spec.store, scope, run.engine);
        break;
      case "service":
        env[name] = createServiceBinding(
          `${worker.prefix}${name}`,
          scope,
          serviceCalls(run, scope, spec.target),
        );
        break;
      case "kv":
        env[name] = createKvNamespace(spec, scope, run);
        break;
      case "durableObject":
        env[name] = createDurableObjectNamespace(spec, scope, run);
        break;
      case "queue":
        env[name] = createQueueProducer(spec, scope, run);
        break;
    }
  }
  return env;
}
