/**
 * Fidelity of Queues: the same producer calls, without faults, against eutaxy's producer binding
 * (js/src/sim/queues.ts on a real engine) and against Miniflare's (workerd, from npm) give the
 * same results and error messages, and a consumer sees the same batch for the same sends. As in
 * fidelity.test.ts, one runner (plain JavaScript, below) makes the calls and records every
 * outcome as JSON, inside a Worker in Miniflare and in Node against eutaxy's binding; where
 * docs/fidelity.md lists a difference, the test asserts the difference itself.
 */

import { Miniflare } from "miniflare";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEngine, type Engine } from "../src/engine.ts";
import type { InvocationCall, PlatformWork, RunContext } from "../src/sim/context.ts";
import type { EffectScope } from "../src/sim/effect-scope.ts";
import { createQueueProducer, QUEUE_SCHEMA } from "../src/sim/queues.ts";
import type { BindingSpec, SimQueue, SimWorker } from "../src/sim/world.ts";

/**
 * The runner, run as it is on both sides. `runProducer` makes `{ op: "send" | "sendBatch" |
 * "metrics", args }` calls; an outcome is `{ value }` or `{ error, name, sync? }`. Bodies JSON
 * cannot carry are tagged (`{ $bytes: [..] }` a Uint8Array, `{ $map: [[k, v]] }`,
 * `{ $function: true }`, `{ $repeat: "x", times: n }` a long string). `describeBatch` is what a
 * consumer's handler records of the batch it gets: the data it can read and the shape of it.
 */
const RUNNER = `
const OPS_MAX = 200;

function decode(value) {
  if (Array.isArray(value)) return value.map(decode);
  if (value === null || typeof value !== "object") return value;
  if (value.$undefined) return undefined;
  if (value.$function) return () => 1;
  if (value.$repeat !== undefined) return value.$repeat.repeat(value.times);
  if (value.$bytes !== undefined) return Uint8Array.from(value.$bytes);
  if (value.$buffer !== undefined) return Uint8Array.from(value.$buffer).buffer;
  if (value.$map !== undefined) return new Map(value.$map);
  if (value.$many !== undefined) return Array.from({ length: value.$many }, (_, i) => ({ body: i }));
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, decode(v)]));
}

function encode(value) {
  if (value === undefined) return { $undefined: true };
  if (value === null || typeof value !== "object") return value;
  if (value instanceof Date) return "<Date>";
  if (value instanceof ArrayBuffer) return { $buffer: Array.from(new Uint8Array(value)) };
  if (value instanceof Map) return { $map: [...value] };
  if (Array.isArray(value)) return value.map(encode);
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, encode(v)]));
}

function failure(error, sync) {
  const out = { error: error instanceof Error ? error.message : String(error), name: error?.constructor?.name ?? typeof error };
  if (sync) out.sync = true;
  return out;
}

async function settle(call) {
  let promise;
  try {
    promise = call();
  } catch (error) {
    return failure(error, true);
  }
  try {
    return { value: encode(await promise) };
  } catch (error) {
    return failure(error, false);
  }
}

async function runProducer(queue, ops) {
  const outcomes = [];
  for (const op of ops.slice(0, OPS_MAX)) outcomes.push(await settle(() => queue[op.op](...decode(op.args ?? []))));
  return outcomes;
}

function dataKeys(object) {
  return Object.keys(object).filter((k) => typeof object[k] !== "function").sort();
}

function describeBatch(batch) {
  return {
    queue: batch.queue,
    keys: dataKeys(batch),
    methods: ["ackAll", "retryAll"].map((k) => typeof batch[k]),
    metadata: batch.metadata === undefined ? "<undefined>" : Object.keys(batch.metadata.metrics ?? {}).sort(),
    messages: batch.messages.map((m) => ({
      id: /^[0-9a-f]{32}$/.test(m.id) ? "<32 hex digits>" : m.id,
      keys: dataKeys(m),
      methods: ["ack", "retry"].map((k) => typeof m[k]),
      timestamp: m.timestamp instanceof Date ? "<Date>" : typeof m.timestamp,
      body: encode(m.body),
      attempts: m.attempts,
    })),
  };
}

/**
 * The consumer: retries the message whose body is "again" on its first delivery, acks the rest;
 * a body \`{ op }\` says instead what to call on its first delivery ("ack-retryAll": \`ack()\`, then
 * \`retryAll()\`; "retry-ackAll": \`retry()\`, then \`ackAll()\`; "always-retry": \`retry()\` on
 * every delivery; "none": nothing). A dead letter queue's batch is recorded and acknowledged.
 */
function consume(batch, seen) {
  seen.push(describeBatch(batch));
  if (batch.queue.includes("dlq")) return;
  for (const m of batch.messages) {
    const op = typeof m.body === "object" && m.body !== null ? m.body.op : undefined;
    if (op === undefined) {
      if (m.body === "again" && m.attempts === 1) m.retry();
      else m.ack();
    } else if (op === "always-retry") {
      m.retry();
    } else if (m.attempts === 1 && op === "ack-retryAll") {
      m.ack();
      batch.retryAll();
    } else if (m.attempts === 1 && op === "retry-ackAll") {
      m.retry();
      batch.ackAll();
    }
  }
}
`;

/**
 * The Worker Miniflare runs, once per compatibility date: `POST /` runs producer calls on `Q`;
 * `POST /consume` sends the body's messages to the consumed queue with `sendBatch`, and
 * `GET /seen` answers what the consumer saw of that queue so far (a module-level array: one
 * isolate runs both).
 */
const WORKER = `${RUNNER}
const seen = [];
export default {
  async fetch(request, env) {
    const path = new URL(request.url).pathname;
    if (path === "/seen") return Response.json(seen);
    if (path === "/consume") {
      await env.CONSUMED.sendBatch(decode(await request.json()));
      return Response.json("sent");
    }
    return Response.json(await runProducer(env.Q, await request.json()));
  },
  async queue(batch) {
    // The produced queue has a consumer only because Miniflare's broker checks nothing for a
    // queue without one; its batches are acknowledged unseen.
    if (batch.queue.startsWith("consumed-") || batch.queue.startsWith("dlq-")) consume(batch, seen);
    else batch.ackAll();
  },
};
`;

type Op = Record<string, unknown>;
interface Outcome {
  value?: unknown;
  error?: string;
  name?: string;
  sync?: true;
}
interface SeenBatch {
  queue: string;
  messages: { body: unknown; attempts: number }[];
}

const runner = new Function(`${RUNNER}\nreturn { runProducer, describeBatch, consume };`)() as {
  runProducer(queue: unknown, ops: readonly Op[]): Promise<Outcome[]>;
  consume(batch: unknown, seen: unknown[]): void;
};

/**
 * Before and after `queue_expose_error_codes` (default from 2026-03-12), which changes the
 * messages of failed sends.
 */
const OLD = "2025-09-01";
const NEW = "2026-04-01";

let miniflare: Miniflare;

beforeAll(async () => {
  const worker = (date: string) => ({
    name: `w-${date}`,
    modules: true,
    script: WORKER,
    compatibilityDate: date,
    queueProducers: { Q: `produced-${date}`, CONSUMED: `consumed-${date}` },
    queueConsumers: {
      [`consumed-${date}`]: {
        maxBatchSize: 3,
        maxBatchTimeout: 0,
        retryDelay: 0,
        maxRetries: 2,
        deadLetterQueue: `dlq-${date}`,
      },
      [`dlq-${date}`]: { maxBatchSize: 3, maxBatchTimeout: 0 },
      [`produced-${date}`]: { maxBatchSize: 100, maxBatchTimeout: 0 },
    },
  });
  miniflare = new Miniflare({ workers: [worker(OLD), worker(NEW)] });
  await miniflare.ready;
}, 120_000);

afterAll(async () => {
  await miniflare?.dispose();
}, 60_000);

async function mfFetch(date: string, path: string, body?: unknown): Promise<unknown> {
  const worker = await miniflare.getWorker(`w-${date}`);
  const response = await worker.fetch(`http://fidelity.test${path}`, {
    method: body === undefined ? "GET" : "POST",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`Miniflare answered ${response.status}: ${text}`);
  return JSON.parse(text);
}

/** Now on the virtual clock of the fake run: 2026-01-01, as eutaxy's runs start. */
const NOW = Date.UTC(2026, 0, 1);

/** eutaxy's side: an engine with the queue's store, and a run context just big enough for it. */
interface SimQueueRun {
  readonly engine: Engine;
  readonly run: RunContext;
  /** The producer binding `Q` of the Worker, which makes it the owner whose config applies. */
  readonly producer: (scope: EffectScope) => object;
  readonly later: PlatformWork[];
  readonly seen: unknown[];
}

function simRun(date: string): SimQueueRun {
  const engine = createEngine({
    seed: "fidelity",
    events: ["req-1"],
    maxFaultsPerRun: 0,
    maxRedeliveries: 3,
    budgetMs: 10_000,
    runsMax: 1,
    shrinkRunsMax: 1,
    invariants: [],
  });
  for (const store of ["queue:q", "queue:q-dlq"]) {
    engine.d1Open(store);
    engine.d1Setup(store, QUEUE_SCHEMA);
  }
  engine.seal();
  engine.nextRun(0);
  const spec: Extract<BindingSpec, { kind: "queue" }> = { kind: "queue", name: "Q", queue: "q" };
  const seen: unknown[] = [];
  const worker = {
    name: "w",
    prefix: "",
    config: {
      compatibilityDate: date,
      compatibilityFlags: [],
      queueProducers: [{ binding: "Q", queue: "q" }],
    },
    bindings: new Map([["Q", spec]]),
  } as unknown as SimWorker;
  const queue: SimQueue = {
    name: "q",
    store: "queue:q",
    consumer: {
      worker,
      settings: { queue: "q", maxBatchSize: 3, maxRetries: 2, retryDelay: 0, deadLetterQueue: "q-dlq" },
    },
  };
  const dlq: SimQueue = {
    name: "q-dlq",
    store: "queue:q-dlq",
    consumer: { worker, settings: { queue: "q-dlq", maxBatchSize: 3, maxRetries: 3 } },
  };
  const later: PlatformWork[] = [];
  const memos = new Map<string, unknown>();
  const exports = { default: { queue: (batch: unknown) => runner.consume(batch, seen) } };
  const run = {
    engine,
    world: {
      workers: [worker],
      queues: new Map([
        ["q", queue],
        ["q-dlq", dlq],
      ]),
      file: "/fidelity.sim.ts",
    },
    current: undefined,
    nowMs: () => NOW,
    // The queue's retry delay is 0: no batch waits, and the clock stays where it is.
    advanceClockTo: () => {},
    exportsOf: () => exports,
    later: (work: PlatformWork) => later.push(work),
    memo: <T>(key: string, create: () => T): T => {
      if (!memos.has(key)) memos.set(key, create());
      return memos.get(key) as T;
    },
    // A delivery that never faults: the handler runs, and its effects perform at once.
    async deliver(_id: string, call: InvocationCall) {
      const invocation = { effect: (_label: string, perform: (effect: number) => unknown) => perform(0) };
      const ctx = { waitUntil: () => {}, passThroughOnException: () => {}, props: {} };
      await call.body(ctx, {}, invocation as never);
      return { kind: "returned", value: undefined };
    },
    trace: () => {},
  } as unknown as RunContext;
  return { engine, run, later, seen, producer: (scope) => createQueueProducer(spec, scope, run) };
}

/** An invocation that never faults: every effect performs at once. */
const PASS_THROUGH: EffectScope = {
  invocation: "req-1#1",
  effect: (_label, perform) => Promise.resolve().then(() => perform(0)),
};

async function simulatedProducer(date: string, ops: readonly Op[]): Promise<Outcome[]> {
  const { engine, producer: create } = simRun(date);
  try {
    const producer = create(PASS_THROUGH);
    return JSON.parse(JSON.stringify(await runner.runProducer(producer, ops))) as Outcome[];
  } finally {
    engine.free();
  }
}

/**
 * The backlog a send answers with and `metrics()` reports (docs/fidelity.md, "Queues"): Miniflare
 * reports an empty backlog always; eutaxy counts its store. Compared by type.
 */
function normalizeMetrics(outcomes: Outcome[]): Outcome[] {
  const metrics = (m: Record<string, unknown>) => ({
    backlogCount: `<${typeof m.backlogCount}>`,
    backlogBytes: `<${typeof m.backlogBytes}>`,
  });
  return outcomes.map((outcome) => {
    const value = outcome.value as Record<string, unknown> | undefined;
    if (!value || typeof value !== "object") return outcome;
    if ("backlogCount" in value) return { value: metrics(value) };
    const inner = (value.metadata as { metrics?: Record<string, unknown> } | undefined)?.metrics;
    return inner ? { value: { metadata: { metrics: metrics(inner) } } } : outcome;
  });
}

async function bothProducers(date: string, ops: readonly Op[]): Promise<{ sim: Outcome[]; mf: Outcome[] }> {
  const mf = (await mfFetch(date, "/", ops)) as Outcome[];
  const sim = await simulatedProducer(date, ops);
  expect(sim).toHaveLength(ops.length);
  expect(mf).toHaveLength(ops.length);
  return { sim, mf };
}

const send = (...args: unknown[]) => ({ op: "send", args });
const sendBatch = (...args: unknown[]) => ({ op: "sendBatch", args });
const long = (times: number) => ({ $repeat: "x", times });

describe("Queues producer fidelity against Miniflare", () => {
  it("sends every content type and refuses bad arguments alike, before and after error codes", async () => {
    const ops = [
      send({ a: [1, null] }),
      send("hé", { contentType: "text" }),
      send({ $bytes: [1, 2] }, { contentType: "bytes" }),
      send({ $map: [[1, 2]] }, { contentType: "v8" }),
      send({ b: 1 }, { contentType: "json" }),
      send("x", { contentType: "TEXT" }),
      send(42),
      send(long(128_000), { contentType: "text" }),
      send("x", { delaySeconds: 0 }),
      send("x", { delaySeconds: 43_200 }),
      send({ $undefined: true }),
      send("x", { contentType: "xml" }),
      send(42, { contentType: "text" }),
      send({ $buffer: [1] }, { contentType: "bytes" }),
      send("x", { contentType: "bytes" }),
      sendBatch([]),
      sendBatch([{ body: { $undefined: true } }]),
      sendBatch([{ body: "x", contentType: "xml" }]),
      sendBatch([
        { body: 1 },
        { body: "t", contentType: "text" },
        { body: { $bytes: [3] }, contentType: "bytes" },
      ]),
      sendBatch({ $many: 100 }),
      sendBatch([{ body: 1, delaySeconds: 5 }], { delaySeconds: 10 }),
      { op: "metrics" },
    ];
    for (const date of [OLD, NEW]) {
      const { sim, mf } = await bothProducers(date, ops);
      expect(normalizeMetrics(sim)).toEqual(normalizeMetrics(mf));
    }
  });

  it("fails sends over the documented limits, where Miniflare's broker words them its own way or takes them", async () => {
    // docs/fidelity.md, "Queues": the limits are production's ("Limits": 128 KB a message, 100
    // messages and 256 KB a batch, 12 hours of delay); the messages are workerd's status text
    // (before `queue_expose_error_codes`) or the docs' error-code table (after it).
    const ops = [
      send(long(128_001), { contentType: "text" }),
      sendBatch({ $many: 101 }),
      sendBatch([1, 2, 3].map(() => ({ body: long(90_000), contentType: "text" }))),
      send("x", { delaySeconds: 43_201 }),
      send("x", { delaySeconds: -1 }),
      send("x", { delaySeconds: 1.5 }),
      sendBatch([{ body: 1 }], { delaySeconds: 50_000 }),
      send({ $function: true }),
    ];
    const accepted = {
      value: { metadata: { metrics: { backlogCount: "<number>", backlogBytes: "<number>" } } },
    };
    const old = await bothProducers(OLD, ops);
    expect(normalizeMetrics(old.mf)).toEqual([
      { error: "Queue send failed: message length of 128001 bytes exceeds limit of 128000", name: "Error" },
      { error: "Queue sendBatch failed: batch message count of 101 exceeds limit of 100", name: "Error" },
      accepted,
      accepted,
      { error: "Queue send failed: Internal Server Error", name: "Error" },
      accepted,
      accepted,
      { error: "Queue send failed: Internal Server Error", name: "Error" },
    ]);
    expect(normalizeMetrics(old.sim)).toEqual([
      { error: "Queue send failed: Payload Too Large", name: "Error" },
      { error: "Queue sendBatch failed: Payload Too Large", name: "Error" },
      { error: "Queue sendBatch failed: Payload Too Large", name: "Error" },
      { error: "Queue send failed: Bad Request", name: "Error" },
      { error: "Queue send failed: Bad Request", name: "Error" },
      { error: "Queue send failed: Bad Request", name: "Error" },
      { error: "Queue sendBatch failed: Bad Request", name: "Error" },
      accepted,
    ]);
    const coded = await bothProducers(NEW, ops);
    const unknown = { error: "Unknown Internal Error (15000)", name: "Error" };
    expect(normalizeMetrics(coded.mf)).toEqual([
      unknown,
      unknown,
      accepted,
      accepted,
      unknown,
      accepted,
      accepted,
      unknown,
    ]);
    expect(coded.sim.map((o) => o.error)).toEqual([
      "Message size out of bounds (10204)",
      "Batch count out of bounds (10206)",
      "Batch size out of bounds (10205)",
      "Invalid message metadata (10203)",
      "Invalid message metadata (10203)",
      "Invalid message metadata (10203)",
      "Invalid message metadata (10203)",
      undefined,
    ]);
  });
});

/** What Miniflare's consumer saw once it has seen `batches` batches; polls for up to 5 seconds. */
async function seenByMiniflare(date: string, batches: number): Promise<SeenBatch[]> {
  const deadline = Date.now() + 5_000;
  for (let i = 0; i < 100; i++) {
    const seen = (await mfFetch(date, "/seen")) as SeenBatch[];
    if (seen.length >= batches || Date.now() > deadline) return seen;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error("Miniflare's consumer never saw the batches");
}

/** What eutaxy's consumer sees for the same sends: every batch the platform delivers. */
async function seenByEutaxy(date: string, messages: unknown[]): Promise<SeenBatch[]> {
  const { engine, run, later, seen, producer: create } = simRun(date);
  try {
    const producer = create(PASS_THROUGH) as { sendBatch(m: unknown): Promise<unknown> };
    await producer.sendBatch(messages);
    for (let i = 0; i < 20 && later.length > 0; i++) {
      const work = later.shift() as PlatformWork;
      await work.run(run, `${work.kind}-${i + 1}`);
    }
    return JSON.parse(JSON.stringify(seen)) as SeenBatch[];
  } finally {
    engine.free();
  }
}

describe("Queues consumer fidelity against Miniflare", () => {
  it("delivers a batch of the same shape, and redelivers a retried message with its attempts counted", async () => {
    const messages = [
      { body: { order: 1 } },
      { body: "again", contentType: "text" },
      { body: [1, 2, 3], contentType: "bytes" },
    ];
    // Bytes travel as an array of numbers over JSON; both sides get a Uint8Array.
    const forMiniflare = messages.map((m) =>
      m.contentType === "bytes" ? { ...m, body: { $bytes: m.body } } : m,
    );
    await mfFetch(NEW, "/consume", forMiniflare);
    const mf = await seenByMiniflare(NEW, 2);
    const sim = await seenByEutaxy(
      NEW,
      messages.map((m) =>
        m.contentType === "bytes" ? { ...m, body: Uint8Array.from(m.body as number[]) } : m,
      ),
    );
    // The batch's queue is the queue's own name, which differs between the two setups.
    expect(mf.map((b) => b.queue)).toEqual([`consumed-${NEW}`, `consumed-${NEW}`]);
    expect(sim.map((b) => b.queue)).toEqual(["q", "q"]);
    const shape = (batches: SeenBatch[]) => batches.map((b) => ({ ...b, queue: "<queue>" }));
    expect(shape(sim)).toEqual(shape(mf));
    // What a user would check: the retried message came back alone, on its second attempt.
    expect(mf[1]?.messages).toMatchObject([{ body: "again", attempts: 2 }]);
  });

  it("holds a message's own ack or retry over the batch's ackAll or retryAll, and dead-letters after max_retries", async () => {
    // One batch at a time, each sent once the one before has settled on Miniflare's side (its
    // broker would put a retried message in a batch with the next sends).
    const batches = [
      // ack() then retryAll(): the ack holds, the other message is retried.
      [{ body: { op: "ack-retryAll", key: 1 } }, { body: { op: "none", key: 2 } }],
      // retry() then ackAll(): the retry holds, the other message is acknowledged.
      [{ body: { op: "retry-ackAll", key: 3 } }, { body: { op: "none", key: 4 } }],
      // Retried every time: 1 delivery and max_retries (2) retries, then the dead letter queue.
      [{ body: { op: "always-retry", key: 5 } }],
    ];
    // How many batches Miniflare's consumer has seen once each has settled, after those it saw
    // before (the test above's).
    const settled = [2, 4, 8];
    const date = NEW;
    const before = ((await mfFetch(date, "/seen")) as SeenBatch[]).length;
    let mf: SeenBatch[] = [];
    for (const [i, batch] of batches.entries()) {
      await mfFetch(date, "/consume", batch);
      mf = await seenByMiniflare(date, before + (settled[i] as number));
    }
    mf = mf.slice(before);
    const sim: SeenBatch[] = [];
    for (const batch of batches) sim.push(...(await seenByEutaxy(date, batch)));
    const deliveries = (all: SeenBatch[]) =>
      all.map((b) => ({
        dlq: b.queue.includes("dlq"),
        messages: b.messages.map((m) => ({ key: (m.body as { key: number }).key, attempts: m.attempts })),
      }));
    // docs/fidelity.md, "Queues": Miniflare's broker retries every message of a batch whose
    // handler called retryAll(), the one acknowledged with ack() before it included; the docs'
    // precedence rules keep that ack, and so does eutaxy.
    expect(deliveries(mf)[1]).toEqual({
      dlq: false,
      messages: [
        { key: 1, attempts: 2 },
        { key: 2, attempts: 2 },
      ],
    });
    expect(deliveries(sim)[1]).toEqual({ dlq: false, messages: [{ key: 2, attempts: 2 }] });
    const besides = (all: SeenBatch[]) => deliveries(all).filter((_, i) => i !== 1);
    expect(besides(sim)).toEqual(besides(mf));
    expect(besides(sim)).toEqual([
      {
        dlq: false,
        messages: [
          { key: 1, attempts: 1 },
          { key: 2, attempts: 1 },
        ],
      },
      {
        dlq: false,
        messages: [
          { key: 3, attempts: 1 },
          { key: 4, attempts: 1 },
        ],
      },
      { dlq: false, messages: [{ key: 3, attempts: 2 }] },
      { dlq: false, messages: [{ key: 5, attempts: 1 }] },
      { dlq: false, messages: [{ key: 5, attempts: 2 }] },
      { dlq: false, messages: [{ key: 5, attempts: 3 }] },
      // Dead-lettered: a first delivery on the dead letter queue.
      { dlq: true, messages: [{ key: 5, attempts: 1 }] },
    ]);
  });
});
