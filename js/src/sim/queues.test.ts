/**
 * Cloudflare Queues: the producer binding against a real engine store with a fake scope
 * (shapes, limits, errors, serialization), and delivery, acknowledgement, retries, dead letter
 * queues and redelivery after a lost acknowledgement through `check()` on the fixtures in
 * js/test/fixtures/queues.
 */

import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { check } from "../check.ts";
import { createEngine, type Engine } from "../engine.ts";
import { InputError } from "../errors.ts";
import type { WorkerConfig } from "../load/wrangler.ts";
import { renderReport } from "../report.ts";
import type { PlatformWork, RunContext } from "./context.ts";
import type { EffectScope } from "./effect-scope.ts";
import {
  createQueueProducer,
  deserialize,
  droppedBodies,
  QUEUE_SCHEMA,
  queueBodies,
  queueMessages,
  sendFromOutside,
  serialize,
} from "./queues.ts";
import type { BindingSpec, SimQueue, SimWorker } from "./world.ts";

const NOW = 1_767_225_600_000;

type QueueSpec = Extract<BindingSpec, { kind: "queue" }>;

interface Harness {
  readonly producer: {
    send(body: unknown, options?: Record<string, unknown>): Promise<unknown>;
    sendBatch(messages: unknown, options?: Record<string, unknown>): Promise<unknown>;
    metrics(): Promise<unknown>;
  };
  /** Effect labels in the order the producer made them. */
  readonly labels: string[];
  readonly later: PlatformWork[];
  readonly traces: string[];
  readonly run: RunContext;
  rows(): { id: string; contentType: string; visibleAt: number; body: Uint8Array }[];
}

let engine: Engine;

beforeEach(() => {
  engine = createEngine({
    seed: "queues-test",
    events: ["e"],
    maxFaultsPerRun: 0,
    maxRedeliveries: 0,
    budgetMs: 60_000,
    runsMax: 10,
    shrinkRunsMax: 10,
    invariants: [],
  });
  for (const store of ["queue:jobs", "queue:idle"]) {
    engine.d1Open(store);
    engine.d1Setup(store, QUEUE_SCHEMA);
  }
  engine.seal();
  engine.nextRun(0);
});

afterEach(() => engine.free());

/**
 * A producer for binding JOBS → queue `jobs` (which has a consumer) of a Worker with `config`;
 * with `failing`, every effect that offers a transient fault takes it.
 */
function harness(config: Partial<WorkerConfig> = {}, failing = false): Harness {
  const spec: QueueSpec = { kind: "queue", name: "JOBS", queue: "jobs" };
  const worker = {
    name: "producer",
    prefix: "",
    config: {
      compatibilityDate: "2025-09-01",
      compatibilityFlags: [],
      queueProducers: [{ binding: "JOBS", queue: "jobs" }],
      ...config,
    },
    bindings: new Map([["JOBS", spec]]),
  } as unknown as SimWorker;
  const queues = new Map<string, SimQueue>([
    [
      "jobs",
      {
        name: "jobs",
        store: "queue:jobs",
        consumer: { worker, settings: { queue: "jobs", maxBatchSize: 10, maxRetries: 3 } },
      },
    ],
    ["idle", { name: "idle", store: "queue:idle", consumer: undefined }],
  ]);
  const labels: string[] = [];
  const later: PlatformWork[] = [];
  const traces: string[] = [];
  const memos = new Map<string, unknown>();
  const run = {
    engine,
    world: { workers: [worker], queues, file: "/scenario.sim.ts" },
    current: undefined,
    nowMs: () => NOW,
    later: (work: PlatformWork) => later.push(work),
    memo: <T>(key: string, create: () => T): T => {
      if (!memos.has(key)) memos.set(key, create());
      return memos.get(key) as T;
    },
    trace: (line: string) => traces.push(line),
  } as unknown as RunContext;
  const scope: EffectScope = {
    invocation: "req-1#1",
    effect(label, perform, options) {
      labels.push(label);
      try {
        // A transient fault settles the call with what `transient` gives (a send's throws).
        if (failing && options?.transient) {
          return Promise.resolve(options.transient(labels.length - 1)) as Promise<never>;
        }
        return Promise.resolve(perform(labels.length - 1));
      } catch (error) {
        return Promise.reject(error);
      }
    },
  };
  const producer = createQueueProducer(spec, scope, run) as Harness["producer"];
  const rows = () =>
    engine
      .d1Run("queue:jobs", "SELECT id, content_type, visible_at, body FROM messages ORDER BY seq", [])
      .rows.map((r) => ({
        id: r[0] as string,
        contentType: r[1] as string,
        visibleAt: r[2] as number,
        body: r[3] as Uint8Array,
      }));
  return { producer, labels, later, traces, run, rows };
}

describe("the producer binding", () => {
  it("sends one message as one effect, JSON by default, and schedules one batch", async () => {
    const h = harness();
    const response = await h.producer.send({ order: "o-1" });
    expect(h.labels).toEqual(["Queue:JOBS send"]);
    expect(response).toEqual({
      metadata: { metrics: { backlogCount: 1, backlogBytes: 15, oldestMessageTimestamp: new Date(NOW) } },
    });
    const [row] = h.rows();
    expect(row?.contentType).toBe("json");
    expect(new TextDecoder().decode(row?.body)).toBe('{"order":"o-1"}');
    expect(row?.id).toMatch(/^[0-9a-f]{32}$/);
    expect(row?.visibleAt).toBe(NOW);
    await h.producer.send("second");
    expect(h.later.map((w) => w.kind)).toEqual(["batch"]);
    expect(new Set(h.rows().map((r) => r.id)).size).toBe(2);
  });

  it("serializes with v8 by default before the 2024-03-18 compatibility date", async () => {
    const h = harness({ compatibilityDate: "2024-01-01" });
    await h.producer.send(new Map([["k", 1]]));
    const [row] = h.rows();
    expect(row?.contentType).toBe("v8");
    expect(deserialize(row?.body as Uint8Array, "v8")).toEqual(new Map([["k", 1]]));
  });

  it("rejects bad arguments as workerd does, before any effect", async () => {
    const h = harness();
    await expect(h.producer.send(undefined)).rejects.toThrow(
      new TypeError("Message body cannot be undefined"),
    );
    await expect(h.producer.send("x", { contentType: "xml" })).rejects.toThrow(
      new TypeError("Unsupported queue message content type: xml"),
    );
    await expect(h.producer.send(42, { contentType: "text" })).rejects.toThrow(
      new TypeError('Content Type "text" requires a value of type string, but received: number'),
    );
    await expect(h.producer.send(new ArrayBuffer(2), { contentType: "bytes" })).rejects.toThrow(
      new TypeError('Content Type "bytes" requires a value of type ArrayBufferView, but received: object'),
    );
    await expect(h.producer.sendBatch([])).rejects.toThrow(
      new TypeError("sendBatch() requires at least one message"),
    );
    await expect(h.producer.sendBatch([{ body: undefined }])).rejects.toThrow(TypeError);
    expect(h.labels).toEqual([]);
    expect(h.rows()).toEqual([]);
  });

  it("accepts content types in any case, stored lower-case", async () => {
    const h = harness();
    await h.producer.send("hello", { contentType: "TEXT" });
    expect(h.rows()[0]?.contentType).toBe("text");
  });

  it("fails an oversized message after the round trip, with the error the compatibility date gives", async () => {
    const big = "x".repeat(128_001);
    const old = harness();
    await expect(old.producer.send(big, { contentType: "text" })).rejects.toThrow(
      new Error("Queue send failed: Payload Too Large"),
    );
    expect(old.labels).toEqual(["Queue:JOBS send"]);
    expect(old.rows()).toEqual([]);
    const coded = harness({ compatibilityDate: "2026-04-01" });
    await expect(coded.producer.send(big, { contentType: "text" })).rejects.toThrow(
      new Error("Message size out of bounds (10204)"),
    );
    const flagged = harness({ compatibilityFlags: ["queue_expose_error_codes"] });
    await expect(flagged.producer.send(big, { contentType: "text" })).rejects.toThrow(
      "Message size out of bounds (10204)",
    );
    await expect(old.producer.send("x".repeat(128_000), { contentType: "text" })).resolves.toBeDefined();
  });

  it("accepts delays from 0 to 43200 whole seconds and fails others", async () => {
    const h = harness();
    await h.producer.send("late", { delaySeconds: 43_200 });
    expect(h.rows()[0]?.visibleAt).toBe(NOW + 43_200_000);
    for (const delaySeconds of [43_201, -1, 1.5]) {
      await expect(h.producer.send("x", { delaySeconds })).rejects.toThrow("Queue send failed: Bad Request");
    }
    await expect(h.producer.sendBatch([{ body: 1 }], { delaySeconds: 50_000 })).rejects.toThrow(
      "Queue sendBatch failed: Bad Request",
    );
    expect(h.rows()).toHaveLength(1);
  });

  it("sends a batch as one effect, each message's delay over the batch's over the producer's", async () => {
    const h = harness({ queueProducers: [{ binding: "JOBS", queue: "jobs", deliveryDelay: 60 }] });
    await h.producer.sendBatch(
      new Set([{ body: "a", contentType: "text", delaySeconds: 0 }, { body: { b: 1 } }]),
      { delaySeconds: 5 },
    );
    await h.producer.send("c");
    expect(h.labels).toEqual(["Queue:JOBS sendBatch", "Queue:JOBS send"]);
    expect(h.rows().map((r) => [r.contentType, r.visibleAt - NOW])).toEqual([
      ["text", 0],
      ["json", 5_000],
      ["json", 60_000],
    ]);
  });

  it("fails batches over 100 messages or 256 KB, and members over 128 KB", async () => {
    const h = harness({ compatibilityDate: "2026-04-01" });
    const many = Array.from({ length: 101 }, (_, i) => ({ body: i }));
    await expect(h.producer.sendBatch(many)).rejects.toThrow("Batch count out of bounds (10206)");
    const third = "x".repeat(90_000);
    await expect(
      h.producer.sendBatch([third, third, third].map((body) => ({ body, contentType: "text" }))),
    ).rejects.toThrow("Batch size out of bounds (10205)");
    await expect(h.producer.sendBatch([{ body: "x".repeat(128_001), contentType: "text" }])).rejects.toThrow(
      "Message size out of bounds (10204)",
    );
    const old = harness();
    await expect(old.producer.sendBatch(many)).rejects.toThrow("Queue sendBatch failed: Payload Too Large");
    await expect(h.producer.sendBatch(many.slice(0, 100))).resolves.toBeDefined();
    expect(h.rows()).toHaveLength(100);
  });

  it("detaches a buffer send() takes as bytes, but not one sendBatch() takes", async () => {
    const h = harness();
    const sent = new Uint8Array([1, 2, 3]);
    await h.producer.send(sent, { contentType: "bytes" });
    expect(sent.buffer.byteLength).toBe(0);
    const batched = new Uint8Array([4, 5]);
    await h.producer.sendBatch([{ body: batched, contentType: "bytes" }]);
    expect(batched.byteLength).toBe(2);
    expect(
      queueBodies(engine, "queue:jobs").map((b) => Array.from(new Uint8Array(b as ArrayBuffer))),
    ).toEqual([
      [1, 2, 3],
      [4, 5],
    ]);
  });

  it("fails a send or a batch as the broker's internal error when the fault is taken, enqueuing nothing", async () => {
    // The error-code table has sends fail through no fault of their arguments, to be retried;
    // workerd words an internal one by the compatibility date, as for Miniflare's broker.
    const old = harness({}, true);
    await expect(old.producer.send({ a: 1 })).rejects.toThrow(/^Queue send failed: Internal Server Error$/);
    await expect(old.producer.sendBatch([{ body: 1 }])).rejects.toThrow(
      /^Queue sendBatch failed: Internal Server Error$/,
    );
    const coded = harness({ compatibilityDate: "2026-04-01" }, true);
    await expect(coded.producer.send({ a: 1 })).rejects.toThrow(/^Unknown Internal Error \(15000\)$/);
    for (const h of [old, coded]) {
      expect(h.rows()).toEqual([]);
      expect(h.later).toEqual([]);
    }
    // metrics() reads the backlog and offers no such fault.
    await expect(coded.producer.metrics()).resolves.toMatchObject({ backlogCount: 0 });
  });

  it("reports the backlog from metrics() as one effect", async () => {
    const h = harness();
    expect(await h.producer.metrics()).toEqual({ backlogCount: 0, backlogBytes: 0 });
    await h.producer.send("abc", { contentType: "text" });
    expect(await h.producer.metrics()).toEqual({
      backlogCount: 1,
      backlogBytes: 3,
      oldestMessageTimestamp: new Date(NOW),
    });
    expect(h.labels).toEqual(["Queue:JOBS metrics", "Queue:JOBS send", "Queue:JOBS metrics"]);
  });
});

describe("bodies and messages from outside", () => {
  it("round-trips each content type as the consumer receives it", () => {
    expect(deserialize(serialize("hé", "text"), "text")).toBe("hé");
    expect(deserialize(serialize({ a: [1] }, "json"), "json")).toEqual({ a: [1] });
    const bytes = deserialize(serialize(new Uint16Array([258]), "bytes"), "bytes");
    expect(bytes).toBeInstanceOf(ArrayBuffer);
    expect(Array.from(new Uint8Array(bytes as ArrayBuffer))).toEqual([2, 1]);
    const date = new Date(NOW);
    expect(deserialize(serialize({ date, set: new Set([1]) }, "v8"), "v8")).toEqual({
      date,
      set: new Set([1]),
    });
    expect(() => serialize(() => 1, "v8")).toThrow(/could not be cloned/);
    // A view sent as "v8" arrives over a buffer of its own, as a structured clone does.
    const view = deserialize(serialize(new Uint8Array([1, 2, 3]), "v8"), "v8") as Uint8Array;
    expect([view.byteOffset, view.buffer.byteLength, [...view]]).toEqual([0, 3, [1, 2, 3]]);
  });

  it("sends a driver's message as JSON without an effect, traced", () => {
    const h = harness();
    sendFromOutside(h.run, "jobs", { n: 1 }, "msg-1");
    expect(h.traces).toEqual(["msg-1 sent to queue jobs"]);
    expect(h.labels).toEqual([]);
    expect(queueMessages(engine, "queue:jobs")).toMatchObject([{ body: { n: 1 }, attempts: 0 }]);
    expect(h.later).toHaveLength(1);
    // A queue without a consumer keeps its messages and schedules nothing.
    sendFromOutside(h.run, "idle", "waiting", "msg-2");
    expect(queueBodies(engine, "queue:idle")).toEqual(["waiting"]);
    expect(h.later).toHaveLength(1);
    expect(droppedBodies(engine, "queue:jobs")).toEqual([]);
  });

  it("refuses a driver message to an unknown queue as bad input", () => {
    const h = harness();
    expect(() => sendFromOutside(h.run, "nope", 1, "msg-1")).toThrow(InputError);
    expect(() => sendFromOutside(h.run, "nope", 1, "msg-1")).toThrow(/the queues are jobs, idle/);
  });
});

const fixture = (file: string) => new URL(`../../test/fixtures/queues/${file}`, import.meta.url).pathname;

describe("delivery through check()", () => {
  it("acknowledges, retries, dead-letters and deserializes as Cloudflare documents", async () => {
    const result = await check(fixture("semantics.sim.ts"));
    expect(result.verdict).toBe("BOUNDED");
    if (result.verdict === "BOUNDED") expect(result.runs).toBe(1);
  });

  it("stops redelivering when the run is out of redeliveries, leaving the message waiting", async () => {
    const result = await check(fixture("refused.sim.ts"));
    expect(result.verdict).toBe("BOUNDED");
  });

  it("redelivers a batch whose acknowledgement was lost", async () => {
    const result = await check(fixture("lost-ack.sim.ts"));
    if (result.verdict !== "VIOLATED") throw new Error(`expected VIOLATED, got ${result.verdict}`);
    expect(result.invariant).toBe("never-redelivered");
    expect(result.message).toBe('1 row from D1:DB breaks it: (key = "q", attempts = 2)');
    expect(result.eventsKept).toEqual(["msg-1"]);
    expect(result.faults).toEqual([
      { kind: "crash_before", invocation: "batch-1#1", effect: 0, label: "Queue:jobs ack" },
    ]);
    const story = result.trace.filter((line) => !line.startsWith("  "));
    // Which message each delivery got, and why it came again: the handler had returned, and the
    // acknowledgement was what the invocation died before.
    const id = /^batch-1#1 gets message ([0-9a-f]{32}),/.exec(story[2] ?? "")?.[1];
    expect(id).toBeDefined();
    expect(story).toEqual([
      "msg-1 sent to queue jobs",
      "deliver batch-1#1",
      `batch-1#1 gets message ${id}, attempt 1 of 3: {"op":"quiet","key":"q"}`,
      "batch-1#1 effect #0 Queue:jobs ack: crash_before",
      "batch-1#1 died",
      "batch-1#1 failed on queue jobs: acked 0, retried 1",
      `batch-1#1 retries message ${id} (attempt 2 of 3 next): the handler returned, but the invocation died before its acknowledgement reached the queue`,
      "redeliver batch-1#2",
      "deliver batch-1#2",
      `batch-1#2 gets message ${id}, attempt 2 of 3: {"op":"quiet","key":"q"}`,
      "batch-1#2 effect #0 D1:DB run: proceed",
      "batch-1#2 effect #1 Queue:jobs ack: proceed",
      "batch-1#2 succeeded on queue jobs: acked 1, retried 0",
      "the run is over: the invariants read the final state",
    ]);
    // The report says it under the fault, with the message's body, without --trace.
    expect(renderReport(result).split("\n")).toContain(
      `    batch-1#1 retries message ${id} {"op":"quiet","key":"q"} (attempt 2 of 3 next): the handler returned, but the invocation died before its acknowledgement reached the queue`,
    );
    const replayed = await check(fixture("lost-ack.sim.ts"), { replay: result.runSeed });
    if (replayed.verdict !== "VIOLATED") throw new Error(`expected VIOLATED, got ${replayed.verdict}`);
    expect(replayed.trace).toEqual(result.trace);
  });

  it("reads a retry's delay as workerd does, an int, whatever the Worker passes", async () => {
    const result = await check(fixture("retry-delay-values/retry-delay-values.sim.ts"));
    if (result.verdict !== "VIOLATED") throw new Error(`expected VIOLATED, got ${result.verdict}`);
    // "x", 1.9, "2", -1, null, and 2 then none: 0, 1, 2, 0, 0 and 0 s, and 2 ms for the
    // delivery's two calls.
    expect(result.message).toBe("retries waited [2,1002,2002,2,2,2] ms");
    expect(result.trace.filter((line) => / threw /.test(line))).toEqual([]);
  });

  it("finds a producer that swallows a failed send", async () => {
    const result = await check(fixture("send-failed/send-failed.sim.ts"));
    if (result.verdict !== "VIOLATED") throw new Error(`expected VIOLATED, got ${result.verdict}`);
    expect(result.faults).toEqual([
      { kind: "transient_error", invocation: "req-1#1", effect: 1, label: "Queue:ORDERS send" },
    ]);
    expect(result.trace).toContain("req-1#1 effect #1 failed: Error: Unknown Internal Error (15000)");
  });

  it("says which message each delivery got, and why each one not acknowledged comes back or goes", async () => {
    const result = await check(fixture("fates.sim.ts"));
    if (result.verdict !== "VIOLATED") throw new Error(`expected VIOLATED, got ${result.verdict}`);
    const idOf = (key: string): string => {
      const line = result.trace.find(
        (l) => l.startsWith("batch-1#1 gets message") && l.includes(`"key":"${key}"`),
      );
      return /gets message ([0-9a-f]{32})/.exec(line ?? "")?.[1] ?? `no message ${key}`;
    };
    const [b, c] = [idOf("b"), idOf("c")];
    const fates = result.trace.filter((l) => / (retries|dead-letters|drops) message /.test(l));
    expect(fates).toEqual([
      // b's own retry() is why it comes back first; then it shares c's failures: handled but
      // never acknowledged, it is dead-lettered beside c.
      `batch-1#1 retries message ${b} (attempt 2 of 3 next): retry() was called on it`,
      `batch-1#1 retries message ${c} (attempt 2 of 3 next): the handler threw`,
      `batch-1#2 retries message ${b} (attempt 3 of 3 next): the handler threw`,
      `batch-1#2 retries message ${c} (attempt 3 of 3 next): the handler threw`,
      `batch-1#3 dead-letters message ${b} to jobs-dlq after attempt 3 of 3 (max_retries 2): the handler threw`,
      `batch-1#3 dead-letters message ${c} to jobs-dlq after attempt 3 of 3 (max_retries 2): the handler threw`,
    ]);
    // Without a fault, the report says each message's last fate, with its body.
    const report = renderReport(result).split("\n");
    const schedule = report.indexOf("  no faults: the events alone break it");
    expect(report.slice(schedule + 1, schedule + 3)).toEqual([
      `    batch-1#3 dead-letters message ${b} {"op":"retry-once","key":"b"} to jobs-dlq after attempt 3 of 3 (max_retries 2): the handler threw`,
      `    batch-1#3 dead-letters message ${c} {"op":"throw","key":"c"} to jobs-dlq after attempt 3 of 3 (max_retries 2): the handler threw`,
    ]);
    // The dead letter queue's consumer (max_retries 0) gets c under its id, as a first attempt.
    expect(result.trace).toContain(`batch-2#1 gets message ${c}, attempt 1 of 1: {"op":"throw","key":"c"}`);
  });
});
