/**
 * Cloudflare Queues, simulated over one SQLite store per queue in the engine (`queue:<name>`).
 *
 * The producer binding (`env.JOBS`) gives Worker code `send`, `sendBatch` and `metrics`, each one
 * effect labelled `Queue:<binding> <method>`. A queue with a consumer gets its messages delivered
 * as the platform's own work after the current event: a batch of up to `max_batch_size` messages
 * is one invocation (`batch-1#1`) of the consumer's `queue` handler, and the end of a successful
 * batch, the acknowledgement reaching the queue, is one more effect of that invocation,
 * `Queue:<queue> ack`. A crash before it is the documented at-least-once case: the work was done
 * but the queue never heard, so every message of the batch is delivered again (`batch-1#2`).
 *
 * Sources:
 * - Cloudflare's docs, "JavaScript APIs" (developers.cloudflare.com/queues/configuration/
 *   javascript-apis/): the shapes of `Queue`, `MessageBatch`, `Message`, the content types, and
 *   "the entire batch will be considered a failure" when the handler or a `waitUntil` rejects.
 * - "Batching, Retries and Delays" (…/queues/configuration/batching-retries/): the ack/retry
 *   precedence rules, `max_retries`, `retry_delay`, message delay precedence.
 * - "Dead Letter Queues" (…/queues/configuration/dead-letter-queues/), "Delivery guarantees"
 *   (…/queues/reference/delivery-guarantees/), "Limits" (…/queues/platform/limits/: 128 KB per
 *   message, 100 messages and 256 KB per `sendBatch`, 12 hours of delay, 1 KB = 1000 bytes) and
 *   "Error codes" (…/queues/reference/error-codes/).
 * - workerd's src/workerd/api/queue.c++ for what the docs leave open: the TypeErrors and their
 *   texts, content-type validation, serialization per content type, which calls to
 *   ack/retry/ackAll/retryAll are ignored, the two error formats behind the
 *   `queue_expose_error_codes` flag, and the send response's backlog metrics.
 *
 * Choices the sources leave to the simulation:
 * - Explicit `ack()`s (and `ackAll()`) are recorded by the platform as they are made (workerd
 *   keeps them outside the isolate), so they hold when the handler throws, when the invocation
 *   dies, and when the final ack effect is lost; what a lost ack effect loses is the implicit
 *   acknowledgement of the rest of a returning batch.
 * - A retried batch is redelivered as the next delivery of the same batch (`batch-1#2`) with the
 *   messages it still owes, so that the engine can bound and shrink platform retries like a
 *   client's resends; a message is retried `max_retries` times at most, then dead-lettered.
 * - Delays give each message a "visible at" time on the run's clock; a batch goes out when its
 *   messages are visible, and the clock moves forward to that time as the batch starts (as it
 *   does for an alarm), so a message delayed or retried with a delay is consumed that much later
 *   by the clock the consumer reads. `max_batch_timeout` is not modelled: a batch goes out after
 *   the current event.
 *
 * Where Miniflare differs from production this follows production: Miniflare retries every
 * message of a batch whose handler threw or called `retryAll()`, explicit acks included, and
 * drops messages sent to a queue without a consumer; Cloudflare keeps explicit acks and keeps
 * the messages (js/test/fidelity-queues.test.ts observes the `retryAll()` case).
 */

import type { D1StatementSpec, Engine, FootprintEntry } from "../engine.ts";
import { InputError } from "../errors.ts";
import type { WorkerConfig } from "../load/wrangler.ts";
import type { PlatformWork, RunContext } from "./context.ts";
import { type EffectScope, PLATFORM_WORK } from "./effect-scope.ts";
import { callHandler } from "./handlers.ts";
import type { Invocation } from "./invocation.ts";
import { decodeClone, encodeClone } from "./stored-clone.ts";
import type { ExecutionContextLike } from "./workers-module.ts";
import type { BindingSpec, SimQueue } from "./world.ts";

/**
 * The schema of a queue's store, applied once at setup. `messages` holds every message still in
 * the queue: `seq` is the send order, `visible_at` the virtual time it may be delivered from,
 * `attempts` its deliveries so far, and `lease` the batch (`batch-3`) it was delivered in while
 * that batch still owes it a redelivery. `dropped` keeps the messages that ran out of retries
 * with no dead letter queue, so invariants can see what was lost.
 */
export const QUEUE_SCHEMA = [
  "CREATE TABLE messages (seq INTEGER PRIMARY KEY, id TEXT NOT NULL, body BLOB NOT NULL, content_type TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, sent_at INTEGER NOT NULL, visible_at INTEGER NOT NULL, lease TEXT)",
  "CREATE TABLE dropped (seq INTEGER PRIMARY KEY, id TEXT NOT NULL, body BLOB NOT NULL, content_type TEXT NOT NULL, attempts INTEGER NOT NULL)",
].join(";\n");

export type QueueContentType = "text" | "bytes" | "json" | "v8";
const CONTENT_TYPES: readonly QueueContentType[] = ["text", "bytes", "json", "v8"];

/** Limits from the docs' "Limits" page; 1 KB is 1000 bytes there. */
const MESSAGE_BYTES_MAX = 128_000;
const BATCH_MESSAGES_MAX = 100;
const BATCH_BYTES_MAX = 256_000;
const DELAY_SECONDS_MAX = 43_200;
/** `waitUntil` promises a batch waits for; a handler that keeps adding more is cut off here. */
const WAIT_UNTIL_MAX = 1_000;

/** The engine stream message ids are drawn from, apart from every invocation's own stream. */
const ID_STREAM = "queue-ids";

/** What a producer's broker call can fail with, as the docs' error-code table lists it. */
interface BrokerFailure {
  readonly status: 400 | 413 | 500;
  readonly code: number;
  readonly cause: string;
}
const MESSAGE_TOO_LARGE: BrokerFailure = { status: 413, code: 10204, cause: "Message size out of bounds" };
const BATCH_TOO_LARGE: BrokerFailure = { status: 413, code: 10205, cause: "Batch size out of bounds" };
const BATCH_TOO_MANY: BrokerFailure = { status: 413, code: 10206, cause: "Batch count out of bounds" };
const BAD_METADATA: BrokerFailure = { status: 400, code: 10203, cause: "Invalid message metadata" };
/**
 * The broker failing a send for a reason of its own, the send's transient fault. The error-code
 * table lists failures a send can meet through no fault of its arguments (10201
 * ClientDisconnected: "retry message send"; 15000, an internal error), and workerd reports an
 * internal one as Miniflare's broker makes it: `Queue send failed: Internal Server Error`, or
 * `Unknown Internal Error (15000)` with error codes (js/test/fidelity-queues.test.ts).
 */
const INTERNAL: BrokerFailure = { status: 500, code: 15000, cause: "Unknown Internal Error" };
const STATUS_TEXT = { 400: "Bad Request", 413: "Payload Too Large", 500: "Internal Server Error" } as const;

/** The compatibility behaviours of the sending Worker that change what a producer does. */
interface Compat {
  /** `queues_json_messages` (default from 2024-03-18): json rather than v8 without a content type. */
  readonly jsonByDefault: boolean;
  /** `queue_expose_error_codes` (default from 2026-03-12): "<cause> (<code>)" error messages. */
  readonly errorCodes: boolean;
}

/** A message ready to enqueue: its serialized body, content type and own delay. */
interface Outgoing {
  readonly bytes: Uint8Array;
  readonly contentType: QueueContentType;
  readonly delaySeconds: number | undefined;
}

/** One message row of a queue's store. */
interface StoredMessage {
  readonly seq: number;
  readonly id: string;
  readonly body: Uint8Array;
  readonly contentType: QueueContentType;
  readonly attempts: number;
  readonly sentAt: number;
  /** When it may be delivered, on the run's clock: its send, plus its delay or its retry's. */
  readonly visibleAt: number;
}

type QueueEngine = Pick<Engine, "d1Run" | "d1Batch" | "fillRandom">;

// ---------------------------------------------------------------------------------------------
// The producer binding.

/** Creates `env.<binding>` for a queue producer; every call to the queue is one effect of `scope`. */
export function createQueueProducer(
  spec: Extract<BindingSpec, { kind: "queue" }>,
  scope: EffectScope,
  run: RunContext,
): object {
  const owner = run.world.workers.find((w) => w.bindings.get(spec.name) === spec);
  const binding = `${owner?.prefix ?? ""}${spec.name}`;
  const queue = run.world.queues.get(spec.queue);
  if (!queue) throw new Error(`queue ${spec.queue} of binding ${binding} is not in the world`);
  const compat = compatOf(owner?.config);
  // The producer's `delivery_delay` is the queue-level default a message's own delay overrides.
  const defaultDelay = owner?.config?.queueProducers.find((p) => p.binding === spec.name)?.deliveryDelay;

  const enqueueAs = (method: "send" | "sendBatch", outgoing: readonly Outgoing[], batchDelay?: number) =>
    scope.effect(
      `Queue:${binding} ${method}`,
      () => {
        const failure = brokerCheck(method, outgoing, batchDelay);
        if (failure) throw brokerError(method, failure, compat);
        enqueue(run, queue, outgoing, batchDelay ?? defaultDelay);
        if (!queue.consumer) run.sentUnconsumed?.(queue.name, binding);
        return { metadata: { metrics: backlog(run.engine, queue.store) } };
      },
      {
        footprint: () => changesQueue(queue),
        // The send fails and nothing is enqueued: a producer that swallows the error loses the
        // message, one that retries or fails its request does not.
        transient: () => {
          throw brokerError(method, INTERNAL, compat);
        },
      },
    );

  return {
    send(body: unknown, options?: { contentType?: string; delaySeconds?: number }): Promise<unknown> {
      let outgoing: Outgoing;
      try {
        // workerd checks these before the round trip; its promise-returning methods reject.
        outgoing = prepare(body, options?.contentType, options?.delaySeconds, compat, true);
      } catch (error) {
        return Promise.reject(error);
      }
      return enqueueAs("send", [outgoing]);
    },
    sendBatch(messages: Iterable<unknown>, options?: { delaySeconds?: number }): Promise<unknown> {
      let outgoing: Outgoing[];
      try {
        const requests = Array.from(messages ?? [], (m) => (m ?? {}) as Record<string, unknown>);
        if (requests.length === 0) throw new TypeError("sendBatch() requires at least one message");
        outgoing = requests.map((m) => prepare(m.body, m.contentType, m.delaySeconds, compat, false));
      } catch (error) {
        return Promise.reject(error);
      }
      return enqueueAs("sendBatch", outgoing, options?.delaySeconds);
    },
    metrics(): Promise<unknown> {
      return scope.effect(`Queue:${binding} metrics`, () => backlog(run.engine, queue.store), {
        footprint: () => [{ resource: `Queue:${queue.store}`, write: false }],
      });
    },
  };
}

function compatOf(config: WorkerConfig | undefined): Compat {
  const on = (flag: string, date: string) => {
    const flags = config?.compatibilityFlags ?? [];
    if (flags.includes(flag)) return true;
    if (flags.includes(`no_${flag}`)) return false;
    // Wrangler takes today's date when a config gives none, so the newest behaviour applies.
    return (config?.compatibilityDate ?? "9999-12-31") >= date;
  };
  return {
    jsonByDefault: on("queues_json_messages", "2024-03-18"),
    errorCodes: on("queue_expose_error_codes", "2026-03-12"),
  };
}

/** Validates and serializes one message as workerd does before anything is sent. */
function prepare(
  body: unknown,
  contentType: unknown,
  delaySeconds: unknown,
  compat: Compat,
  detach: boolean,
): Outgoing {
  if (body === undefined) throw new TypeError("Message body cannot be undefined");
  const type =
    contentType === undefined ? (compat.jsonByDefault ? "json" : "v8") : validateContentType(contentType);
  const bytes = serialize(body, type);
  // `send` detaches an ArrayBuffer it is given with "bytes", as workerd does (observable in JS).
  if (detach && type === "bytes") detachBuffer(body as ArrayBufferView);
  return { bytes, contentType: type, delaySeconds: delaySeconds as number | undefined };
}

function validateContentType(contentType: unknown): QueueContentType {
  const lower = String(contentType).toLowerCase();
  const found = CONTENT_TYPES.find((t) => t === lower);
  if (!found) throw new TypeError(`Unsupported queue message content type: ${String(contentType)}`);
  return found;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A body as the bytes the queue stores, per content type (workerd's `serialize`). */
export function serialize(body: unknown, type: QueueContentType): Uint8Array {
  switch (type) {
    case "text":
      if (typeof body !== "string") throw requires("text", "string", body);
      return encoder.encode(body);
    case "bytes": {
      if (!ArrayBuffer.isView(body)) throw requires("bytes", "ArrayBufferView", body);
      return new Uint8Array(body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength));
    }
    case "json":
      // V8's JSON::Stringify turns an unserializable value (a function) into the text
      // "undefined", which the consumer then fails to parse; String() does the same.
      return encoder.encode(String(JSON.stringify(body)));
    case "v8":
      // V8's serializer: the structured clone the runtime sends, DataCloneError included.
      return encodeClone(body);
  }
}

/** A stored body as the consumer gets it (workerd's `deserialize`). */
export function deserialize(bytes: Uint8Array, type: QueueContentType): unknown {
  switch (type) {
    case "text":
      return decoder.decode(bytes);
    case "bytes":
      return bytes.slice().buffer;
    case "json":
      return JSON.parse(decoder.decode(bytes));
    case "v8":
      // As a structured clone gives it back: its own buffers, the simulation's `Date`.
      return decodeClone(bytes);
  }
}

function requires(type: string, expected: string, body: unknown): TypeError {
  return new TypeError(
    `Content Type "${type}" requires a value of type ${expected}, but received: ${typeof body}`,
  );
}

function detachBuffer(view: ArrayBufferView): void {
  try {
    structuredClone(view.buffer, { transfer: [view.buffer as ArrayBuffer] });
  } catch {
    // Not detachable (a SharedArrayBuffer, wasm memory): workerd copies without detaching too.
  }
}

/**
 * What the queue's broker rejects after the round trip: sizes, counts and delays beyond the
 * documented limits. Message sizes count the serialized body.
 */
function brokerCheck(
  method: "send" | "sendBatch",
  outgoing: readonly Outgoing[],
  batchDelay: unknown,
): BrokerFailure | undefined {
  if (method === "sendBatch") {
    if (outgoing.length > BATCH_MESSAGES_MAX) return BATCH_TOO_MANY;
    if (outgoing.some((m) => m.bytes.length > MESSAGE_BYTES_MAX)) return MESSAGE_TOO_LARGE;
    if (outgoing.reduce((sum, m) => sum + m.bytes.length, 0) > BATCH_BYTES_MAX) return BATCH_TOO_LARGE;
    if (batchDelay !== undefined && !validDelay(batchDelay)) return BAD_METADATA;
  } else if (outgoing.some((m) => m.bytes.length > MESSAGE_BYTES_MAX)) {
    return MESSAGE_TOO_LARGE;
  }
  if (outgoing.some((m) => m.delaySeconds !== undefined && !validDelay(m.delaySeconds))) return BAD_METADATA;
  return undefined;
}

function validDelay(delay: unknown): boolean {
  return typeof delay === "number" && Number.isInteger(delay) && delay >= 0 && delay <= DELAY_SECONDS_MAX;
}

/**
 * The Error a failed send rejects with. Without `queue_expose_error_codes` workerd reports the
 * HTTP status text (`Queue send failed: Payload Too Large`); with it, the broker's cause and
 * code. The broker's cause texts are not published: the docs' error-code table's wording stands
 * in for them (`Message size out of bounds (10204)`).
 */
function brokerError(method: "send" | "sendBatch", failure: BrokerFailure, compat: Compat): Error {
  if (compat.errorCodes) return new Error(`${failure.cause} (${failure.code})`);
  return new Error(`Queue ${method} failed: ${STATUS_TEXT[failure.status]}`);
}

/** Adds messages to `queue`'s store and makes sure its consumer will get them. */
function enqueue(run: RunContext, queue: SimQueue, outgoing: readonly Outgoing[], delay?: number): void {
  const now = run.nowMs();
  run.engine.d1Batch(
    queue.store,
    outgoing.map((m) => ({
      sql: "INSERT INTO messages (id, body, content_type, sent_at, visible_at) VALUES (?1, ?2, ?3, ?4, ?5)",
      params: [
        messageId(run.engine),
        m.bytes,
        m.contentType,
        now,
        // A message's own delay wins over the batch's or the queue's, 0 included (docs).
        now + (m.delaySeconds ?? delay ?? 0) * 1000,
      ],
    })),
    true,
  );
  scheduleBatch(run, queue);
}

/** A message id shaped like Cloudflare's (32 hex digits), from the run's own id stream. */
function messageId(engine: QueueEngine): string {
  const bytes = new Uint8Array(16);
  engine.fillRandom(ID_STREAM, bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The queue's backlog, as `metrics()` and the send responses report it. */
function backlog(engine: QueueEngine, store: string): Record<string, unknown> {
  const row = engine.d1Run(
    store,
    "SELECT COUNT(*), COALESCE(SUM(LENGTH(body)), 0), MIN(sent_at) FROM messages",
    [],
    true,
  ).rows[0] as [number, number, number | null];
  const [backlogCount, backlogBytes, oldest] = row;
  return {
    backlogCount,
    backlogBytes,
    ...(oldest === null ? {} : { oldestMessageTimestamp: new Date(oldest) }),
  };
}

// ---------------------------------------------------------------------------------------------
// Messages from outside the Workers: the queue driver.

/** Sends `body` to queue `name` from outside the Workers (the queue driver's event `from`). */
export function sendFromOutside(run: RunContext, name: string, body: unknown, from: string): void {
  const queue = run.world.queues.get(name);
  if (!queue) {
    const known = [...run.world.queues.keys()];
    throw new InputError(
      run.world.file,
      `queue("${name}", …) sends to a queue no Worker of the scenario produces to or consumes; ${
        known.length ? `the queues are ${known.join(", ")}` : "no Worker has a queue"
      }`,
    );
  }
  if (body === undefined || JSON.stringify(body) === undefined) {
    throw new InputError(run.world.file, `${from}: a queue message body must be a JSON value`);
  }
  const bytes = serialize(body, "json");
  if (bytes.length > MESSAGE_BYTES_MAX) {
    throw new InputError(run.world.file, `${from}: the message is over Cloudflare's 128 KB limit`);
  }
  run.trace(`${from} sent to queue ${name}`);
  enqueue(run, queue, [{ bytes, contentType: "json", delaySeconds: undefined }]);
}

// ---------------------------------------------------------------------------------------------
// Delivery: the platform's own work.

/** Queues a batch delivery for `queue` unless one is already waiting or nobody consumes it. */
function scheduleBatch(run: RunContext, queue: SimQueue): void {
  if (!queue.consumer) return;
  const waiting = run.memo("queues:batch-scheduled", () => new Set<string>());
  if (waiting.has(queue.name)) return;
  waiting.add(queue.name);
  run.later({
    kind: "batch",
    ...consumerLimit(queue),
    // The batch starts once its first message is visible (a message sent with a delay).
    dueMs: () =>
      messagesVisibleAt(run, "SELECT MIN(visible_at) FROM messages WHERE lease IS NULL", queue, []),
    run: async (context, name) => {
      waiting.delete(queue.name);
      await deliverNewBatch(context, queue, name);
    },
  });
}

/** The time `sql` reads from the queue's messages (a MIN or MAX of `visible_at`); undefined for none. */
function messagesVisibleAt(
  run: RunContext,
  sql: string,
  queue: SimQueue,
  params: unknown[],
): number | undefined {
  const value = run.engine.d1Run(queue.store, sql, params, true).rows[0]?.[0];
  return typeof value === "number" ? value : undefined;
}

/** A consumer's `max_concurrency`: its batches, first deliveries and retries alike, live at once at most. */
function consumerLimit(queue: SimQueue): Pick<PlatformWork, "limit"> {
  const max = queue.consumer?.settings.maxConcurrency;
  return max === undefined ? {} : { limit: { group: `queue ${queue.name}`, max } };
}

/**
 * Delivers the next batch of `queue` as `<name>#1`: the messages no batch holds, in order of
 * visibility then sending, that are visible when the first of them is (now, or later: the batch
 * then starts at that time), up to `max_batch_size`.
 */
async function deliverNewBatch(run: RunContext, queue: SimQueue, name: string): Promise<void> {
  const consumer = queue.consumer;
  if (!consumer) return;
  // The batch size is written into the text, an integer: SQLite plans with a bound LIMIT's value
  // and prepares the statement again each time it is bound.
  const taken = run.engine.d1Run(
    queue.store,
    `UPDATE messages SET lease = ?1 WHERE seq IN (SELECT seq FROM messages WHERE lease IS NULL AND visible_at <= MAX(?2, (SELECT MIN(visible_at) FROM messages WHERE lease IS NULL)) ORDER BY visible_at, seq LIMIT ${Math.trunc(consumer.settings.maxBatchSize)})`,
    [name, run.nowMs()],
    true,
  );
  if (taken.changes > 0) await deliverLeased(run, queue, name, 1);
}

/**
 * Delivers the messages batch `name` holds as invocation `<name>#<delivery>`, then settles
 * them: acknowledged ones leave the queue, retried ones stay for delivery `delivery + 1` (or go
 * to the dead letter queue, or are dropped, once out of retries).
 */
async function deliverLeased(
  run: RunContext,
  queue: SimQueue,
  name: string,
  delivery: number,
): Promise<void> {
  const consumer = queue.consumer;
  if (!consumer) return;
  const { engine } = run;
  const messages = engine
    .d1Run(
      queue.store,
      "UPDATE messages SET attempts = attempts + 1 WHERE lease = ?1 RETURNING seq, id, body, content_type, attempts, sent_at, visible_at",
      [name],
      true,
    )
    .rows.sort((a, b) => (a[6] as number) - (b[6] as number) || (a[0] as number) - (b[0] as number))
    .map(
      (row): StoredMessage => ({
        seq: row[0] as number,
        id: row[1] as string,
        body: row[2] as Uint8Array,
        contentType: row[3] as QueueContentType,
        attempts: row[4] as number,
        sentAt: row[5] as number,
        visibleAt: row[6] as number,
      }),
    );
  if (messages.length === 0) return;
  // The batch goes out once every message in it is visible: its delay, or its retry's, has
  // passed on the clock the consumer reads.
  const visibleAt = Math.max(...messages.map((m) => m.visibleAt));
  const waitedMs = visibleAt - run.nowMs();
  run.advanceClockTo(visibleAt);
  const id = `${name}#${delivery}`;
  const metrics = backlog(engine, queue.store);
  const result = new BatchResult();

  const outcome = await run.deliver(id, {
    worker: consumer.worker,
    work: `batch of queue ${queue.name}`,
    body: async (ctx, env, invocation) => {
      // A delay the queue waited out moves the clock the consumer reads, which can be what breaks
      // it (a message that expired meanwhile): the trace says so, first thing in the delivery.
      if (waitedMs > 0 && run.tracing) {
        run.trace(
          `${id} waited ${waitedMs / 1000} s for its messages' ${delivery > 1 ? "retry " : ""}delay to pass`,
        );
      }
      if (run.tracing) traceMessages(run, id, messages, consumer.settings.maxRetries);
      const batch = messageBatch(queue.name, messages, metrics, result);
      const waits: Promise<unknown>[] = [];
      const handlerCtx: ExecutionContextLike = {
        waitUntil(promise) {
          waits.push(Promise.resolve(promise));
          ctx.waitUntil(promise);
        },
        passThroughOnException: () => ctx.passThroughOnException(),
        props: ctx.props,
      };
      await callHandler(run, consumer.worker, undefined, "queue", batch, env, handlerCtx);
      result.stage = "waitUntil";
      // The batch succeeds once the handler and every waitUntil promise have resolved (docs).
      for (let i = 0; i < waits.length && i < WAIT_UNTIL_MAX; i++) await waits[i];
      result.stage = "ack";
      await ackEffect(run, queue, invocation, id, messages, result);
    },
  });
  if (!result.reported) {
    // The queue never heard of a success: the handler threw or the invocation died. Explicit
    // acks (and ackAll) still hold, as the docs promise "even if your queue consumer fails".
    settle(run, queue, id, messages, result, false, whyFailed(outcome.kind, result.stage));
  }
  const [owed, waiting] = engine.d1Run(
    queue.store,
    "SELECT COUNT(*) FILTER (WHERE lease = ?1), COUNT(*) FILTER (WHERE lease IS NULL) FROM messages",
    [name],
    true,
  ).rows[0] as [number, number];
  if (waiting > 0) scheduleBatch(run, queue);
  // Each retry is one more delivery of the batch, bounded by max_retries (settle) and by the
  // run's redeliveries, which the engine grants like a client's resends and shrinks.
  const retried = owed > 0 && engine.redeliverPlatform(name, delivery + 1);
  if (owed > 0 && !retried) {
    const { maxRetries, deadLetterQueue } = queue.consumer.settings;
    const follows = deadLetterQueue ? "more retries, dead-lettering" : "more retries, dropping the messages";
    run.retryRefused?.(name, delivery + 1, maxRetries + 1, follows);
  }
  if (retried) {
    // The retry goes out once its messages' retry delays have passed.
    const dueMs = messagesVisibleAt(run, "SELECT MAX(visible_at) FROM messages WHERE lease = ?1", queue, [
      name,
    ]);
    run.later({
      // The run names platform work by its kind; a redelivery keeps the batch's own name
      // (`batch-1#2`), so the name the run offers here is not used.
      kind: "redelivery",
      invocation: `${name}#${delivery + 1}`,
      ...consumerLimit(queue),
      dueMs: () => dueMs,
      run: (context) => deliverLeased(context, queue, name, delivery + 1),
    });
  }
}

/** The acknowledgement of a successful batch reaching the queue: one effect of the batch. */
function ackEffect(
  run: RunContext,
  queue: SimQueue,
  invocation: Invocation,
  id: string,
  messages: readonly StoredMessage[],
  result: BatchResult,
): Promise<void> {
  return invocation.effect(
    `Queue:${queue.name} ack`,
    () => {
      result.reported = true;
      settle(run, queue, id, messages, result, true, undefined);
    },
    { footprint: () => settlesQueue(run, queue) },
  );
}

/**
 * What settling a batch of `queue` changes: its messages, and its dead letter queue's, where
 * messages out of retries go.
 */
function settlesQueue(run: RunContext, queue: SimQueue): FootprintEntry[] {
  const deadLetters = queue.consumer?.settings.deadLetterQueue;
  const dlq = deadLetters === undefined ? undefined : run.world.queues.get(deadLetters);
  return dlq ? [...changesQueue(queue), ...changesQueue(dlq)] : changesQueue(queue);
}

/**
 * A call that changes a queue's messages may also queue platform work (a batch delivery), and
 * the order of that work is shared by all the run's queues and objects.
 */
function changesQueue(queue: SimQueue): FootprintEntry[] {
  return [
    { resource: `Queue:${queue.store}`, write: true },
    { resource: PLATFORM_WORK, write: true },
  ];
}

/**
 * What the consumer said about a batch, recorded as workerd records it: the first of `ack` and
 * `retry` on a message wins, `ackAll` and `retryAll` exclude each other, and a call on a single
 * message takes precedence over the batch-level call whichever comes first, except that
 * `ack()` after `retryAll()` and `retry()` after `ackAll()` are ignored (workerd logs a warning).
 * A message's later `retry()` replaces the delay of an earlier one.
 */
class BatchResult {
  readonly acks = new Set<string>();
  /** Explicit retries and their own delays. */
  readonly retries = new Map<string, number | undefined>();
  ackAll = false;
  retryAll: { delaySeconds: number | undefined } | undefined;
  /** Set when the ack effect ran: the queue heard the batch's outcome. */
  reported = false;
  /** How far the delivery got, to say why a batch the queue never heard of failed. */
  stage: "handler" | "waitUntil" | "ack" = "handler";
}

/** Why a batch failed, for the trace: how its invocation ended, and where it was then. */
function whyFailed(ended: "returned" | "threw" | "died", stage: BatchResult["stage"]): string {
  if (ended === "threw") {
    return stage === "handler" ? "the handler threw" : "a promise it passed to waitUntil rejected";
  }
  if (stage === "ack") {
    return "the handler returned, but the invocation died before its acknowledgement reached the queue";
  }
  return stage === "handler"
    ? "the invocation died before the handler returned"
    : "the invocation died before its waitUntil promises settled";
}

/** Messages a trace line lists one by one; a larger batch's others are counted. */
const TRACED_MESSAGES_MAX = 10;
/** Characters of a message's body a trace line shows. */
const TRACED_BODY_MAX = 200;

/**
 * Says which messages a delivery gets (`batch-1#2 gets message 5f…, attempt 2 of 4: {"id":7}`),
 * so that a redelivery in a trace names what came again, not only the batch it came in.
 */
function traceMessages(
  run: RunContext,
  id: string,
  messages: readonly StoredMessage[],
  maxRetries: number,
): void {
  for (const m of messages.slice(0, TRACED_MESSAGES_MAX)) {
    run.trace(`${id} gets message ${m.id}, attempt ${m.attempts} of ${maxRetries + 1}: ${shownBody(m)}`);
  }
  if (messages.length > TRACED_MESSAGES_MAX) {
    run.trace(`${id} gets ${messages.length - TRACED_MESSAGES_MAX} more messages`);
  }
}

/** A message's body as a trace shows it: its JSON, cut short; bytes by their count. */
function shownBody(m: StoredMessage): string {
  let text: string;
  if (m.contentType === "bytes") {
    text = `${m.body.length} bytes`;
  } else if (m.contentType === "json") {
    text = decoder.decode(m.body);
  } else {
    try {
      text = JSON.stringify(deserialize(m.body, m.contentType)) ?? String(deserialize(m.body, m.contentType));
    } catch {
      text = `a ${m.contentType} body of ${m.body.length} bytes`;
    }
  }
  return text.length > TRACED_BODY_MAX ? `${text.slice(0, TRACED_BODY_MAX)}…` : text;
}

function messageBatch(
  queue: string,
  stored: readonly StoredMessage[],
  metrics: Record<string, unknown>,
  result: BatchResult,
): object {
  const messages = Object.freeze(
    stored.map((m) => {
      const body = deserialize(m.body, m.contentType);
      const timestamp = new Date(m.sentAt);
      return Object.freeze({
        id: m.id,
        timestamp,
        body,
        attempts: m.attempts,
        ack(): void {
          if (result.ackAll || result.retryAll || result.retries.has(m.id)) return;
          result.acks.add(m.id);
        },
        retry(options?: { delaySeconds?: number }): void {
          if (result.ackAll || result.acks.has(m.id)) return;
          // Each call replaces the message's retry options (workerd upserts them), so a later
          // retry() without a delay takes back an earlier one's.
          result.retries.set(m.id, retryDelayOf(options));
        },
      });
    }),
  );
  return Object.freeze({
    queue,
    messages,
    metadata: { metrics },
    ackAll(): void {
      if (!result.retryAll) result.ackAll = true;
    },
    retryAll(options?: { delaySeconds?: number }): void {
      if (!result.ackAll) result.retryAll = { delaySeconds: retryDelayOf(options) };
    },
  });
}

/**
 * A retry's `delaySeconds` as workerd reads it: an `int` (its `QueueRetryOptions`), which V8
 * converts as ToInt32 does, so `1.5` is 1 and a value that is no number (`"30"` aside) is 0,
 * never an error (Miniflare 4.20260426 takes every such call). A negative delay delivers at
 * once, as Miniflare's broker does; production's broker does not say.
 */
function retryDelayOf(options: { delaySeconds?: unknown } | undefined): number | undefined {
  const value = options?.delaySeconds;
  if (value === undefined) return undefined;
  return Math.max(0, (value as number) | 0);
}

/**
 * Applies a batch's outcome to the store. `succeeded`: the handler returned and the queue heard
 * it, so messages nobody retried are acknowledged; otherwise every message not explicitly
 * acknowledged is retried, for the reason `failure` gives. A retried message out of retries (its
 * deliveries exceed `max_retries`) goes to the dead letter queue, or is dropped without one.
 */
function settle(
  run: RunContext,
  queue: SimQueue,
  id: string,
  messages: readonly StoredMessage[],
  result: BatchResult,
  succeeded: boolean,
  failure: string | undefined,
): void {
  const consumer = queue.consumer;
  if (!consumer) return;
  const { maxRetries, retryDelay, deadLetterQueue } = consumer.settings;
  const acked: number[] = [];
  const retried: [number, number][] = [];
  const exhausted: StoredMessage[] = [];
  for (const m of messages) {
    const explicit = result.retries.has(m.id);
    const ack = result.acks.has(m.id) || (!explicit && (result.ackAll || (succeeded && !result.retryAll)));
    if (ack) {
      acked.push(m.seq);
    } else if (m.attempts > maxRetries) {
      exhausted.push(m);
    } else {
      const delay =
        (explicit ? result.retries.get(m.id) : undefined) ?? result.retryAll?.delaySeconds ?? retryDelay ?? 0;
      retried.push([m.seq, run.nowMs() + delay * 1000]);
    }
  }
  const { engine } = run;
  const gone = [...acked, ...exhausted.map((m) => m.seq)];
  const statements: D1StatementSpec[] = [
    ...(gone.length === 0
      ? []
      : [
          {
            sql: "DELETE FROM messages WHERE seq IN (SELECT value FROM json_each(?1))",
            params: [JSON.stringify(gone)],
          },
        ]),
    ...retried.map(([seq, visibleAt]) => ({
      sql: "UPDATE messages SET visible_at = ?2 WHERE seq = ?1",
      params: [seq, visibleAt],
    })),
  ];
  const dlq = deadLetterQueue === undefined ? undefined : run.world.queues.get(deadLetterQueue);
  if (!dlq) {
    for (const m of exhausted) {
      statements.push({
        sql: "INSERT INTO dropped (id, body, content_type, attempts) VALUES (?1, ?2, ?3, ?4)",
        params: [m.id, m.body, m.contentType, m.attempts],
      });
    }
  }
  if (statements.length > 0) engine.d1Batch(queue.store, statements, true);
  if (dlq && exhausted.length > 0) {
    // A dead-lettered message is a message of the other queue, with its id and timestamp.
    engine.d1Batch(
      dlq.store,
      exhausted.map((m) => ({
        sql: "INSERT INTO messages (id, body, content_type, sent_at, visible_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        params: [m.id, m.body, m.contentType, m.sentAt, run.nowMs()],
      })),
      true,
    );
    scheduleBatch(run, dlq);
  }
  const parts = [`acked ${acked.length}`, `retried ${retried.length}`];
  if (exhausted.length > 0) {
    parts.push(dlq ? `dead-lettered ${exhausted.length} to ${dlq.name}` : `dropped ${exhausted.length}`);
  }
  run.trace(`${id} ${succeeded ? "succeeded" : "failed"} on queue ${queue.name}: ${parts.join(", ")}`);
  if (!run.tracing) return;
  // What became of each message not acknowledged, and why: the trace's answer to "which message
  // came again, and what sent it back".
  const why = (m: StoredMessage): string => {
    if (result.retries.has(m.id)) return "retry() was called on it";
    if (result.retryAll) return "retryAll() was called";
    return failure ?? "the batch failed";
  };
  const retriedSeqs = new Map(retried);
  const fates = messages.flatMap((m): string[] => {
    const visibleAt = retriedSeqs.get(m.seq);
    if (visibleAt !== undefined) {
      const delay = visibleAt - run.nowMs();
      const when = delay > 0 ? `, in ${delay / 1000} s` : "";
      return [
        `${id} retries message ${m.id} (attempt ${m.attempts + 1} of ${maxRetries + 1} next${when}): ${why(m)}`,
      ];
    }
    if (!exhausted.includes(m)) return [];
    const end = dlq ? `dead-letters message ${m.id} to ${dlq.name}` : `drops message ${m.id}`;
    const last = `after attempt ${m.attempts} of ${maxRetries + 1} (max_retries ${maxRetries})`;
    return [`${id} ${end} ${last}: ${why(m)}${dlq ? "" : ", and the queue has no dead_letter_queue"}`];
  });
  for (const line of fates.slice(0, TRACED_MESSAGES_MAX)) run.trace(line);
  if (fates.length > TRACED_MESSAGES_MAX) {
    run.trace(`${id} retries or gives up ${fates.length - TRACED_MESSAGES_MAX} more messages`);
  }
}

// ---------------------------------------------------------------------------------------------
// The state at the end of a run, for invariants.

/** A message still in a queue at the end of a run. */
export interface QueuedMessage {
  readonly id: string;
  readonly body: unknown;
  /** Deliveries so far. */
  readonly attempts: number;
  readonly timestamp: Date;
}

/** The messages still in a queue (waiting, delayed or owed a redelivery), in delivery order. */
export function queueMessages(engine: Pick<Engine, "d1Run">, store: string): QueuedMessage[] {
  return engine
    .d1Run(
      store,
      "SELECT id, body, content_type, attempts, sent_at FROM messages ORDER BY visible_at, seq",
      [],
      true,
    )
    .rows.map((row) => ({
      id: row[0] as string,
      body: bodyOf(row[1], row[2]),
      attempts: row[3] as number,
      timestamp: new Date(row[4] as number),
    }));
}

/** The bodies of the messages still in a queue at the end of a run. */
export function queueBodies(engine: Pick<Engine, "d1Run">, store: string): unknown[] {
  return queueMessages(engine, store).map((m) => m.body);
}

/** The bodies of the messages a queue dropped after `max_retries` without a dead letter queue. */
export function droppedBodies(engine: Pick<Engine, "d1Run">, store: string): unknown[] {
  return engine
    .d1Run(store, "SELECT body, content_type FROM dropped ORDER BY seq", [], true)
    .rows.map((row) => bodyOf(row[0], row[1]));
}

/** A stored body for an invariant; one the consumer could not parse either is shown as text. */
function bodyOf(body: unknown, contentType: unknown): unknown {
  const bytes = body instanceof Uint8Array ? body : encoder.encode(String(body));
  try {
    return deserialize(bytes, contentType as QueueContentType);
  } catch {
    return decoder.decode(bytes);
  }
}
