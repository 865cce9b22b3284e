/**
 * Cloudflare Queues, simulated over a SQLite store per queue in the engine. (Being written.)
 */

import type { Engine } from "../engine.ts";
import type { RunContext } from "./context.ts";
import type { EffectScope } from "./effect-scope.ts";
import type { BindingSpec } from "./world.ts";

/** The schema of a queue's store, applied once at setup. */
export const QUEUE_SCHEMA =
  "CREATE TABLE messages (seq INTEGER PRIMARY KEY, id TEXT NOT NULL, body BLOB, content_type TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, sent_at INTEGER NOT NULL, state TEXT NOT NULL DEFAULT 'ready')";

export function createQueueProducer(
  spec: Extract<BindingSpec, { kind: "queue" }>,
  scope: EffectScope,
  run: RunContext,
): object {
  void scope;
  void run;
  throw new Error(`queue binding ${spec.name} is not simulated yet`);
}

/** Sends `body` to queue `name` from outside the Workers (the queue driver's event `from`). */
export function sendFromOutside(run: RunContext, name: string, body: unknown, from: string): void {
  void run;
  void body;
  throw new Error(`${from}: queue ${name} is not simulated yet`);
}

/** The bodies of the messages still in a queue at the end of a run. */
export function queueBodies(engine: Engine, store: string): unknown[] {
  void engine;
  void store;
  return [];
}
