import type { R2Bucket, R2ListOptions, R2Objects } from "@cloudflare/workers-types/index.ts";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createEngine, type Engine, type FootprintEntry } from "../engine.ts";
import type { EffectOptions, EffectScope } from "./effect-scope.ts";
import { createR2Bucket, R2_SCHEMA, type R2Run, r2Keys, r2Read } from "./r2.ts";

/** What a fake scope saw of one effect. */
interface Seen {
  readonly label: string;
  readonly footprint: readonly FootprintEntry[] | undefined;
  /** Whether the binding offered a transient alternative: R2 is strongly consistent, never. */
  readonly transient: boolean;
}

let engine: Engine;
let seen: Seen[];
let traced: string[];
let run: R2Run;

const BUCKETS = ["r2:FILES", "r2:media/FILES"];

function freshEngine(): Engine {
  const created = createEngine({
    seed: "r2",
    events: ["req-1"],
    maxFaultsPerRun: 0,
    maxRedeliveries: 0,
    budgetMs: 10_000,
    runsMax: 10,
    shrinkRunsMax: 10,
    invariants: [],
  });
  for (const store of BUCKETS) {
    created.d1Open(store);
    created.d1Setup(store, R2_SCHEMA);
  }
  created.seal();
  created.nextRun(0);
  return created;
}

/** The virtual clock the fake run answers with; tests move it. */
let clockMs: number;

/** A run over `engine`, with per-run memory as a run has it. */
function runOver(over: Engine, tracing = true): R2Run {
  const memos = new Map<string, unknown>();
  return {
    engine: over,
    nowMs: () => clockMs,
    memo<T>(key: string, create: () => T): T {
      if (!memos.has(key)) memos.set(key, create());
      return memos.get(key) as T;
    },
    tracing,
    trace: (line) => traced.push(line),
  };
}

beforeEach(() => {
  engine = freshEngine();
  clockMs = engine.nowMs();
  seen = [];
  traced = [];
  misbehave = new Set();
  run = runOver(engine);
});

afterEach(() => engine.free());

/** Labels whose next effect takes the transient alternative (when offered). */
let misbehave: Set<string>;

/** A fake invocation: every effect runs at once, or its transient alternative when asked. */
const scope: EffectScope = {
  invocation: "req-1#1",
  effect<T>(label: string, perform: (effect: number) => T | Promise<T>, options: EffectOptions = {}) {
    const { transient } = options;
    const offered = transient !== undefined && (options.transientOffered?.() ?? true);
    const index = seen.push({ label, footprint: options.footprint?.(0, "req-1#1"), transient: offered }) - 1;
    const chosen = transient && offered && misbehave.delete(label) ? transient : perform;
    return Promise.resolve().then(() => chosen(index) as T);
  },
};

function bucket(store = "r2:FILES", honorInclude = true): R2Bucket {
  return createR2Bucket({ kind: "r2", name: "FILES", store }, scope, run, honorInclude) as R2Bucket;
}

describe("the R2 binding", () => {
  it("makes each call one effect on the bucket, reading or writing it, and traces it under the effect", async () => {
    const files = bucket();
    await files.put("a.txt", "hello", { customMetadata: { by: "ada" } });
    await files.head("a.txt");
    await (await files.get("a.txt"))?.text();
    await files.get("a.txt", { range: { offset: 1, length: 2 } });
    await files.list({ prefix: "a" });
    await files.delete(["a.txt", "b.txt"]);
    await files.get("a.txt");
    expect(seen.map((s) => [s.label, s.footprint, s.transient])).toEqual([
      ["R2:FILES put", [{ resource: "R2:r2:FILES", write: true }], false],
      ["R2:FILES head", [{ resource: "R2:r2:FILES", write: false }], false],
      ["R2:FILES get", [{ resource: "R2:r2:FILES", write: false }], false],
      ["R2:FILES get", [{ resource: "R2:r2:FILES", write: false }], false],
      ["R2:FILES list", [{ resource: "R2:r2:FILES", write: false }], false],
      // a.txt was put less than a second before: R2's 429 is offered.
      ["R2:FILES delete", [{ resource: "R2:r2:FILES", write: true }], true],
      ["R2:FILES get", [{ resource: "R2:r2:FILES", write: false }], false],
    ]);
    const version =
      /^ {2}R2:FILES put "a\.txt" "hello" customMetadata \{"by":"ada"\} -> version ([0-9a-f]{8})$/.exec(
        traced[0] ?? "",
      )?.[1];
    expect(version).toBeDefined();
    expect(traced.slice(1)).toEqual([
      `  R2:FILES head "a.txt" -> "hello" version ${version}`,
      `  R2:FILES get "a.txt" -> "hello" version ${version}`,
      `  R2:FILES get "a.txt" -> bytes 1-2 of "hello" version ${version}`,
      '  R2:FILES list prefix "a" -> 1 object',
      "  R2:FILES delete 2 keys -> 1 object deleted",
      '  R2:FILES get "a.txt" -> null',
    ]);
  });

  it("offers R2's 429 to a write of a key written less than a second before, and writes nothing then", async () => {
    const files = bucket();
    await files.put("k", "1");
    clockMs += 999;
    misbehave.add("R2:FILES put");
    const error = await files.put("k", "2").then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error?.message).toBe("put: Reduce your concurrent request rate for the same object. (10058)");
    expect(r2Read(engine, "r2:FILES", "k")).toBe("1");
    // Another key, a put whose condition failed (it wrote nothing), a second later: none offers it.
    await files.put("other", "x");
    await files.put("k", "3", { onlyIf: { etagMatches: "nope" } });
    clockMs += 1;
    await files.put("k", "4");
    expect(seen.map((s) => s.transient)).toEqual([false, true, false, true, false]);
    expect(traced).toContain("  R2:FILES put -> 429, a key written less than a second before");
  });

  it("draws each bucket's versions from its own stream: puts to two buckets get the same ones in either order", async () => {
    const put = async (order: readonly string[]) => {
      const versions: Record<string, string> = {};
      for (const store of order) versions[store] = (await bucket(store).put("k", "v"))?.version ?? "none";
      return versions;
    };
    const first = await put(BUCKETS);
    engine.free();
    engine = freshEngine();
    run = runOver(engine, false);
    const second = await put([...BUCKETS].reverse());
    expect(second).toEqual(first);
    expect(first["r2:FILES"]).not.toBe(first["r2:media/FILES"]);
  });

  it("gives invariants an object's text, or null, and the keys in byte order", async () => {
    const files = bucket();
    await files.put("b", "second");
    await files.put("a", new Uint8Array([0xe2, 0x82, 0xac]));
    await files.put("B", "upper");
    expect(r2Keys(engine, "r2:FILES")).toEqual(["B", "a", "b"]);
    expect(r2Read(engine, "r2:FILES", "a")).toBe("€");
    expect(r2Read(engine, "r2:FILES", "missing")).toBeNull();
    expect(r2Keys(engine, "r2:media/FILES")).toEqual([]);
  });

  it("lists metadata only as include asks, or always without r2_list_honor_include, 100 objects a page then", async () => {
    // Miniflare 4.20260426 answers the same at the compatibility dates 2022-08-04 and 2022-08-03.
    const metadata = { httpMetadata: { contentType: "text/plain" }, customMetadata: { owner: "ada" } };
    for (const honorInclude of [true, false]) {
      const files = bucket(honorInclude ? "r2:FILES" : "r2:media/FILES", honorInclude);
      for (let i = 0; i < 150; i++) await files.put(`k${String(i).padStart(3, "0")}`, "x", metadata);
      const plain = await files.list();
      // workers-types leaves `include` out of R2ListOptions, which workerd reads all the same.
      const onlyCustom = { include: ["customMetadata"] } as R2ListOptions;
      const custom = await files.list(onlyCustom);
      const first = ({ objects: [object] }: R2Objects) => [object?.httpMetadata, object?.customMetadata];
      if (honorInclude) {
        expect([plain.objects.length, plain.truncated]).toEqual([150, false]);
        expect(first(plain)).toEqual([{}, {}]);
        expect(first(custom)).toEqual([{}, metadata.customMetadata]);
      } else {
        expect([plain.objects.length, plain.truncated]).toEqual([100, true]);
        expect(first(plain)).toEqual([metadata.httpMetadata, metadata.customMetadata]);
        expect(first(custom)).toEqual([metadata.httpMetadata, metadata.customMetadata]);
      }
    }
  });
});
