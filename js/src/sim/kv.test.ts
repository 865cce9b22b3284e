import type { KVNamespace } from "@cloudflare/workers-types/index.ts";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createEngine, type Engine } from "../engine.ts";
import type { EffectOptions, EffectScope } from "./effect-scope.ts";
import { createKvNamespace, KV_SCHEMA, type KvRun, kvKeys, kvRead } from "./kv.ts";

/** The KV namespace as Workers type it; the simulation returns a plain object. */
type Kv = KVNamespace;

/** What a fake scope saw of one effect. */
interface Seen {
  readonly invocation: string;
  readonly label: string;
  /** Whether the binding offered a transient alternative. */
  readonly transient: boolean;
}

let engine: Engine;
/** The virtual clock the fake run answers with; tests move it. */
let clockMs: number;
let seen: Seen[];
/** Labels whose next effect takes the transient alternative (when offered). */
let misbehave: Set<string>;
let run: KvRun;

const STORE = "kv:CACHE";

beforeEach(() => {
  engine = createEngine({
    seed: "kv",
    events: ["req-1"],
    maxFaultsPerRun: 0,
    maxRedeliveries: 0,
    budgetMs: 10_000,
    runsMax: 10,
    shrinkRunsMax: 10,
    invariants: [],
  });
  for (const store of [STORE, "kv:payments/CACHE"]) {
    engine.d1Open(store);
    engine.d1Setup(store, KV_SCHEMA);
  }
  engine.seal();
  engine.nextRun(0);
  clockMs = engine.nowMs();
  seen = [];
  misbehave = new Set();
  const memos = new Map<string, unknown>();
  run = {
    engine,
    nowMs: () => clockMs,
    memo<T>(key: string, create: () => T): T {
      if (!memos.has(key)) memos.set(key, create());
      return memos.get(key) as T;
    },
  };
});

afterEach(() => engine.free());

/** A fake invocation: every effect runs at once, or its transient alternative when asked. */
function scope(invocation: string): EffectScope {
  return {
    invocation,
    effect<T>(label: string, perform: (effect: number) => T | Promise<T>, options: EffectOptions = {}) {
      const { transient } = options;
      const offered = transient !== undefined && (options.transientOffered?.() ?? true);
      const index = seen.push({ invocation, label, transient: offered }) - 1;
      const chosen = transient && offered && misbehave.delete(label) ? transient : perform;
      return new Promise<T>((resolve) => resolve(chosen(index) as T));
    },
  };
}

function kv(invocation = "req-1#1", store = STORE): Kv {
  return createKvNamespace({ kind: "kv", name: "CACHE", store }, scope(invocation), run) as Kv;
}

async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected a rejection");
}

describe("reads and writes", () => {
  it("puts and gets in every type, each call one effect labelled KV:<namespace> <method>", async () => {
    const cache = kv();
    await cache.put("greeting", "héllo");
    await cache.put("doc", JSON.stringify({ a: [1, 2] }));
    await cache.put("bytes", new Uint8Array([1, 2, 3]).subarray(1));
    expect(await cache.get("greeting")).toBe("héllo");
    expect(await cache.get("greeting", "text")).toBe("héllo");
    expect(await cache.get("doc", "json")).toEqual({ a: [1, 2] });
    expect(await cache.get("doc", { type: "json", cacheTtl: 60 })).toEqual({ a: [1, 2] });
    expect([...new Uint8Array((await cache.get("bytes", "arrayBuffer")) as ArrayBuffer)]).toEqual([2, 3]);
    const stream = (await cache.get("greeting", "stream")) as ReadableStream;
    expect(await new Response(stream).text()).toBe("héllo");
    expect(await cache.get("missing")).toBeNull();
    expect(await cache.get("missing", "json")).toBeNull();
    expect(seen.map((s) => s.label)).toEqual([
      "KV:CACHE put",
      "KV:CACHE put",
      "KV:CACHE put",
      ...Array(8).fill("KV:CACHE get"),
    ]);
  });

  it("names a callee's namespace by its store", async () => {
    await kv("req-1#1/0", "kv:payments/CACHE").get("k");
    expect(seen.map((s) => s.label)).toEqual(["KV:payments/CACHE get"]);
  });

  it("stores a ReadableStream, an ArrayBuffer and a number as their bytes", async () => {
    const cache = kv();
    // Node's stream, typed as the Workers' one the binding takes.
    const body = new Response("streamed").body as unknown as Parameters<Kv["put"]>[1];
    await cache.put("s", body);
    await cache.put("b", new TextEncoder().encode("buffer").buffer);
    await cache.put("n", 42 as unknown as string);
    expect(await cache.get("s")).toBe("streamed");
    expect(await cache.get("b")).toBe("buffer");
    expect(await cache.get("n")).toBe("42");
  });

  it("answers getWithMetadata as { value, metadata, cacheStatus: null }", async () => {
    const cache = kv();
    await cache.put("k", "v", { metadata: { owner: "ana" } });
    await cache.put("plain", "p");
    expect(await cache.getWithMetadata("k")).toEqual({
      value: "v",
      metadata: { owner: "ana" },
      cacheStatus: null,
    });
    expect(await cache.getWithMetadata("plain")).toEqual({ value: "p", metadata: null, cacheStatus: null });
    expect(await cache.getWithMetadata("missing")).toEqual({
      value: null,
      metadata: null,
      cacheStatus: null,
    });
    expect(seen.at(-1)?.label).toBe("KV:CACHE getWithMetadata");
  });

  it("reads up to 100 keys at once as a Map in the order asked, as one effect", async () => {
    const cache = kv();
    await cache.put("b", '"two"', { metadata: { n: 2 } });
    await cache.put("a", '"one"');
    const before = seen.length;
    expect(await cache.get(["b", "missing", "a"])).toEqual(
      new Map([
        ["b", '"two"'],
        ["missing", null],
        ["a", '"one"'],
      ]),
    );
    expect(await cache.get(["a"], "json")).toEqual(new Map([["a", "one"]]));
    expect(await cache.getWithMetadata(["b", "missing"], "json")).toEqual(
      new Map<string, unknown>([
        ["b", { value: "two", metadata: { n: 2 } }],
        ["missing", null],
      ]),
    );
    expect(seen.slice(before).map((s) => s.label)).toEqual([
      "KV:CACHE get",
      "KV:CACHE get",
      "KV:CACHE getWithMetadata",
    ]);
  });

  it("refuses bulk reads as KV does", async () => {
    const cache = kv();
    const keys = Array.from({ length: 101 }, (_, i) => `k${i}`);
    expect((await rejection(cache.get(keys))).message).toBe(
      "KV GET_BULK failed: 400 You can request a maximum of 100 keys",
    );
    expect((await rejection(cache.get([]))).message).toBe(
      "KV GET_BULK failed: 400 You must request a minimum of 1 key",
    );
    expect((await rejection(cache.get(["a"], { type: "arrayBuffer" } as never))).message).toBe(
      'KV GET_BULK failed: 400 "arrayBuffer" is not a valid type. Use "json" or "text"',
    );
    await cache.put("t", "not json");
    expect((await rejection(cache.get(["t"], "json"))).message).toBe(
      "KV GET_BULK failed: 400 At least one of the requested keys corresponds to a non-json value",
    );
  });

  it("deletes: the key reads as absent, and deleting a missing key succeeds", async () => {
    const cache = kv();
    await cache.put("k", "v");
    await cache.delete("k");
    await cache.delete("never");
    expect(await cache.get("k")).toBeNull();
    expect(seen.filter((s) => s.label === "KV:CACHE delete")).toHaveLength(2);
  });

  it("rejects a json read of a value that is not JSON with the parser's error", async () => {
    const cache = kv();
    await cache.put("t", "not json");
    expect(await rejection(cache.get("t", "json"))).toBeInstanceOf(SyntaxError);
  });

  it("checks an unknown type only when the key has a value, as workerd does", async () => {
    const cache = kv();
    expect(await cache.get("missing", "bogus" as never)).toBeNull();
    await cache.put("k", "v");
    const error = await rejection(cache.get("k", "bogus" as never));
    expect(error).toBeInstanceOf(TypeError);
    expect(error.message).toBe(
      'Unknown response type. Possible types are "text", "arrayBuffer", "json", and "stream".',
    );
  });
});

describe("validation", () => {
  it("refuses empty, '.', '..' and over-long keys before any effect", async () => {
    const cache = kv();
    const empty = await rejection(cache.get(""));
    expect(empty).toBeInstanceOf(TypeError);
    expect(empty.message).toBe("Key name cannot be empty.");
    expect((await rejection(cache.put(".", "v"))).message).toBe('"." is not allowed as a key name.');
    expect((await rejection(cache.delete(".."))).message).toBe('".." is not allowed as a key name.');
    // 256 two-byte characters plus one byte: 513 bytes in UTF-8, 257 characters.
    const long = `${"é".repeat(256)}x`;
    expect((await rejection(cache.put(long, "v"))).message).toBe(
      "KV PUT failed: 414 UTF-8 encoded length of 513 exceeds key length limit of 512.",
    );
    expect((await rejection(cache.get(long))).message).toBe(
      "KV GET failed: 414 UTF-8 encoded length of 513 exceeds key length limit of 512.",
    );
    expect((await rejection(cache.delete(long))).message).toMatch(/^KV DELETE failed: 414 /);
    await cache.put("é".repeat(256), "exactly 512 bytes");
    expect(seen.map((s) => s.label)).toEqual(["KV:CACHE put"]);
  });

  it("refuses expirations KV refuses, with its messages", async () => {
    const cache = kv();
    const now = Math.floor(clockMs / 1000);
    const message = async (options: object) => (await rejection(cache.put("k", "v", options))).message;
    expect(await message({ expirationTtl: 5 })).toBe(
      "KV PUT failed: 400 Invalid expiration_ttl of 5. Expiration TTL must be at least 60.",
    );
    expect(await message({ expirationTtl: 0 })).toBe(
      "KV PUT failed: 400 Invalid expiration_ttl of 0. Please specify integer greater than 0.",
    );
    expect(await message({ expiration: now })).toBe(
      `KV PUT failed: 400 Invalid expiration of ${now}. Please specify integer greater than the current number of seconds since the UNIX epoch.`,
    );
    expect(await message({ expiration: now + 59 })).toBe(
      `KV PUT failed: 400 Invalid expiration of ${now + 59}. Expiration times must be at least 60 seconds in the future.`,
    );
    await cache.put("k", "v", { expiration: now + 60 });
    await cache.put("k2", "v", { expirationTtl: 60 });
    expect(await cache.get("k")).toBe("v");
  });

  it("refuses metadata over 1024 bytes and values over 25 MiB", async () => {
    const cache = kv();
    // {"x":"…"} is 8 bytes of JSON around the string.
    expect((await rejection(cache.put("k", "v", { metadata: { x: "a".repeat(1017) } }))).message).toBe(
      "KV PUT failed: 413 Metadata length of 1025 exceeds limit of 1024.",
    );
    await cache.put("k", "v", { metadata: { x: "a".repeat(1016) } });
    expect((await rejection(cache.put("big", new Uint8Array(25 * 1024 * 1024 + 1)))).message).toBe(
      "KV PUT failed: 413 Value length of 26214401 exceeds limit of 26214400.",
    );
    expect(await cache.get("big")).toBeNull();
  });

  it("refuses values that are neither strings, buffers nor streams", async () => {
    const error = await rejection(kv().put("k", { not: "a value" } as unknown as string));
    expect(error).toBeInstanceOf(TypeError);
    expect(error.message).toBe(
      "KV put() accepts only strings, ArrayBuffers, ArrayBufferViews, and ReadableStreams as values.",
    );
    expect(seen).toEqual([]);
  });

  it("refuses a cacheTtl under production's 30 s and a list limit over 1000", async () => {
    const cache = kv();
    expect((await rejection(cache.get("k", { type: "text", cacheTtl: 10 }))).message).toBe(
      "KV GET failed: 400 Invalid cache_ttl of 10. Cache TTL must be at least 30.",
    );
    await cache.get("k", { type: "text", cacheTtl: 30 });
    expect((await rejection(cache.list({ limit: 1001 }))).message).toBe(
      "KV GET failed: 400 Invalid key_count_limit of 1001. Please specify an integer less than 1000.",
    );
  });
});

describe("expiration", () => {
  it("reads an expired key as absent, in get, list, kvRead and kvKeys", async () => {
    const cache = kv();
    await cache.put("short", "s", { expirationTtl: 60 });
    await cache.put("long", "l", { expirationTtl: 3600 });
    const view = { d1Run: engine.d1Run.bind(engine), nowMs: () => clockMs };
    expect(kvKeys(view, STORE)).toEqual(["long", "short"]);
    expect((await cache.list()).keys.map((k) => k.name)).toEqual(["long", "short"]);
    clockMs += 60_000;
    expect(await cache.get("short")).toBeNull();
    expect(await cache.getWithMetadata("short")).toEqual({ value: null, metadata: null, cacheStatus: null });
    expect((await cache.list()).keys.map((k) => k.name)).toEqual(["long"]);
    expect(kvRead(view, STORE, "short")).toBeNull();
    expect(kvRead(view, STORE, "long")).toBe("l");
    expect(kvKeys(view, STORE)).toEqual(["long"]);
  });

  it("traces a read of an expired key with the time it expired", async () => {
    const lines: string[] = [];
    run = { ...run, tracing: true, trace: (line) => lines.push(line) };
    const cache = kv();
    await cache.put("lock", "held", { expirationTtl: 60 });
    await cache.get("lock");
    clockMs += 60_000;
    await cache.get("lock");
    await cache.get("never-put");
    const expires = new Date((Math.floor((clockMs - 60_000) / 1000) + 60) * 1000).toISOString();
    expect(lines.filter((line) => line.includes(" get "))).toEqual([
      '  KV:CACHE get "lock" -> "held"',
      `  KV:CACHE get "lock" -> null (expired ${expires})`,
      '  KV:CACHE get "never-put" -> null',
    ]);
  });
});

describe("the final state a custom invariant reads (kvRead)", () => {
  const allBytes = () => Uint8Array.from({ length: 256 }, (_, i) => i);

  it("gives bytes back exactly as an ArrayBuffer, whether put as a buffer, a view or a stream", async () => {
    const cache = kv();
    await cache.put("buffer", allBytes().buffer);
    await cache.put("view", new Uint8Array([9, ...allBytes(), 9]).subarray(1, 257));
    const stream = new ReadableStream({
      start(controller) {
        controller.enqueue(allBytes().subarray(0, 100));
        controller.enqueue(allBytes().subarray(100));
        controller.close();
      },
    });
    // Node's stream, typed as the Workers' one the binding takes.
    await cache.put("stream", stream as unknown as Parameters<Kv["put"]>[1]);
    const view = { d1Run: engine.d1Run.bind(engine), nowMs: () => clockMs };
    for (const key of ["buffer", "view", "stream"]) {
      const read = kvRead(view, STORE, key, "arrayBuffer");
      expect(read).toBeInstanceOf(ArrayBuffer);
      expect([...new Uint8Array(read as ArrayBuffer)]).toEqual([...allBytes()]);
    }
    // As text, as `get` reads it: bytes that are not UTF-8 become U+FFFD.
    expect(kvRead(view, STORE, "buffer")).toBe(new TextDecoder().decode(allBytes()));
    expect(kvRead(view, STORE, "buffer")).toContain("\uFFFD");
  });

  it("reads a string as text, as JSON and as its UTF-8 bytes, and a missing key as null", async () => {
    const cache = kv();
    await cache.put("doc", JSON.stringify({ café: [1] }));
    const view = { d1Run: engine.d1Run.bind(engine), nowMs: () => clockMs };
    expect(kvRead(view, STORE, "doc", "text")).toBe('{"café":[1]}');
    expect(kvRead(view, STORE, "doc", "json")).toEqual({ café: [1] });
    expect([...new Uint8Array(kvRead(view, STORE, "doc", "arrayBuffer") as ArrayBuffer)]).toEqual([
      ...new TextEncoder().encode('{"café":[1]}'),
    ]);
    expect(kvRead(view, STORE, "missing", "arrayBuffer")).toBeNull();
  });
});

describe("list", () => {
  it("traces a page after the first with the key its cursor resumes after", async () => {
    const lines: string[] = [];
    run = { ...run, tracing: true, trace: (line) => lines.push(line) };
    const cache = kv();
    for (const key of ["s:1", "s:2"]) await cache.put(key, "v");
    const first = (await cache.list({ prefix: "s:", limit: 1 })) as { cursor: string };
    await cache.list({ prefix: "s:", limit: 1, cursor: first.cursor });
    expect(lines.filter((line) => line.includes(" list "))).toEqual([
      '  KV:CACHE list prefix "s:" -> 1 key',
      '  KV:CACHE list prefix "s:" after "s:1" -> 1 key',
    ]);
  });

  it("lists keys by their UTF-8 bytes, with expiration and metadata when they have them", async () => {
    const cache = kv();
    const now = Math.floor(clockMs / 1000);
    // UTF-16 order puts the emoji (a surrogate pair, 0xD83D…) before U+FFFD; UTF-8 after it.
    for (const key of ["z", "\u{1F600}", "\uFFFD", "B", "a"]) await cache.put(key, "v");
    await cache.put("m", "v", { metadata: { tag: 1 }, expirationTtl: 120 });
    const listed = await cache.list();
    expect(listed).toEqual({
      keys: [
        { name: "B" },
        { name: "a" },
        { name: "m", expiration: now + 120, metadata: { tag: 1 } },
        { name: "z" },
        { name: "\uFFFD" },
        { name: "\u{1F600}" },
      ],
      list_complete: true,
      cacheStatus: null,
    });
    expect(seen.at(-1)?.label).toBe("KV:CACHE list");
  });

  it("pages with a limit and an opaque, deterministic cursor, and filters by prefix", async () => {
    const cache = kv();
    for (const key of ["user:3", "user:1", "order:1", "user:2"]) await cache.put(key, "v");
    const first = await cache.list({ prefix: "user:", limit: 2 });
    expect(first.keys.map((k) => k.name)).toEqual(["user:1", "user:2"]);
    expect(first.list_complete).toBe(false);
    const cursor = first.list_complete ? "" : first.cursor;
    expect(typeof cursor).toBe("string");
    const again = await cache.list({ prefix: "user:", limit: 2 });
    expect(again.list_complete ? undefined : again.cursor).toBe(cursor);
    const second = await cache.list({ prefix: "user:", limit: 2, cursor });
    expect(second).toEqual({ keys: [{ name: "user:3" }], list_complete: true, cacheStatus: null });
    // A limit of 0 is not sent, so KV answers with its default of 1000.
    expect((await cache.list({ limit: 0 })).keys).toHaveLength(4);
  });
});

describe("eventual consistency: stale reads as a transient alternative", () => {
  it("offers a stale read only of a key another request wrote less than 60 s ago", async () => {
    const writer = kv("req-1#1");
    await writer.put("flag", "off");
    await writer.get("flag");
    await kv("req-1#1/0").get("flag");
    await kv("req-2#1").get("flag");
    clockMs += 60_000;
    await kv("req-2#1").get("flag");
    expect(seen.filter((s) => s.label === "KV:CACHE get").map((s) => [s.invocation, s.transient])).toEqual([
      ["req-1#1", false],
      ["req-1#1/0", false],
      ["req-2#1", true],
      ["req-2#1", false],
    ]);
  });

  it("keeps a read with a longer cacheTtl stale for as long as that", async () => {
    const writer = kv("req-1#1");
    await writer.put("flag", "off");
    await writer.put("flag", "on");
    clockMs += 120_000;
    const reader = kv("req-2#1");
    // Two minutes on, a read that keeps what it caches for five may still see the old value.
    misbehave.add("KV:CACHE get");
    expect(await reader.get("flag", { cacheTtl: 300 })).toBe("off");
    await reader.get("flag");
    await reader.get(["flag"], { cacheTtl: 300 });
    clockMs += 180_000;
    await reader.get("flag", { cacheTtl: 300 });
    expect(seen.filter((s) => s.label === "KV:CACHE get").map((s) => s.transient)).toEqual([
      true,
      false,
      true,
      false,
    ]);
  });

  it("answers a stale read with the value before the key's most recent write", async () => {
    const writer = kv("req-1#1");
    await writer.put("flag", "off", { metadata: { v: 1 } });
    await writer.put("flag", "on", { metadata: { v: 2 } });
    const reader = kv("req-2#1");
    misbehave.add("KV:CACHE get");
    expect(await reader.get("flag")).toBe("off");
    expect(await reader.get("flag")).toBe("on");
    misbehave.add("KV:CACHE getWithMetadata");
    expect(await reader.getWithMetadata("flag")).toEqual({
      value: "off",
      metadata: { v: 1 },
      cacheStatus: null,
    });
    misbehave.add("KV:CACHE get");
    expect(await reader.get(["flag", "other"])).toEqual(
      new Map([
        ["flag", "off"],
        ["other", null],
      ]),
    );
  });

  it("answers a stale read of a new key with null, and of a deleted key with its old value", async () => {
    const writer = kv("req-1#1");
    await writer.put("new", "1");
    await writer.put("gone", "was here");
    clockMs += 61_000;
    await writer.delete("gone");
    const reader = kv("req-2#1");
    misbehave.add("KV:CACHE get");
    expect(await reader.get("new")).toBe("1"); // written over 60 s ago: nothing stale to offer
    misbehave.clear();
    misbehave.add("KV:CACHE get");
    expect(await reader.get("gone")).toBe("was here");
    clockMs -= 61_000; // back within 60 s of the first writes (the clock is the test's)
    misbehave.add("KV:CACHE get");
    expect(await reader.get("new")).toBeNull();
  });

  it("lists the previous key set in a stale list", async () => {
    const writer = kv("req-1#1");
    await writer.put("a", "1");
    await writer.put("b", "1", { metadata: { v: 1 } });
    clockMs += 61_000;
    await writer.put("c", "1");
    await writer.delete("a");
    await writer.put("b", "2", { metadata: { v: 2 } });
    const reader = kv("req-2#1");
    expect((await reader.list()).keys).toEqual([{ name: "b", metadata: { v: 2 } }, { name: "c" }]);
    misbehave.add("KV:CACHE list");
    expect((await reader.list()).keys).toEqual([{ name: "a" }, { name: "b", metadata: { v: 1 } }]);
    // The writer reads its own writes: no stale list is offered to it.
    await writer.list();
    expect(seen.filter((s) => s.label === "KV:CACHE list").map((s) => s.transient)).toEqual([
      true,
      true,
      false,
    ]);
  });

  it("offers a stale list only when a key under its prefix was written elsewhere lately", async () => {
    await kv("req-1#1").put("user:1", "v");
    const reader = kv("req-2#1");
    await reader.list({ prefix: "order:" });
    await reader.list({ prefix: "user:" });
    expect(seen.filter((s) => s.label === "KV:CACHE list").map((s) => s.transient)).toEqual([false, true]);
  });
});

describe("1 write per second to one key: a transient 429", () => {
  it("offers a 429 to a write of a key written less than a second ago, and it changes nothing", async () => {
    const cache = kv("req-1#1");
    await cache.put("k", "1");
    clockMs += 999;
    misbehave.add("KV:CACHE put");
    expect((await rejection(cache.put("k", "2"))).message).toBe("KV PUT failed: 429 Too Many Requests");
    expect(await cache.get("k")).toBe("1");
    misbehave.add("KV:CACHE delete");
    expect((await rejection(kv("req-2#1").delete("k"))).message).toBe(
      "KV DELETE failed: 429 Too Many Requests",
    );
    expect(await cache.get("k")).toBe("1");
    clockMs += 1;
    await cache.put("k", "3");
    await cache.put("other", "x");
    expect(seen.filter((s) => s.label === "KV:CACHE put").map((s) => s.transient)).toEqual([
      false,
      true,
      false,
      false,
    ]);
  });
});
