/**
 * Durable Objects through `check()` on the Workers in js/test/fixtures/durable-objects: ids, stub
 * calls and in-memory state, the key-value and SQL storage APIs, a reset that loses memory but
 * not storage, and alarms with their retries.
 */

import { describe, expect, it } from "vitest";
import { type CheckResult, check } from "../index.ts";
import { hexFromName, idFromString } from "./durable-object-id.ts";
import { splitQuery, splitStatements } from "./durable-object-sql.ts";
import { durableObjectStore, RESET_MESSAGE } from "./durable-objects.ts";

const fixture = (file: string) =>
  new URL(`../../test/fixtures/durable-objects/${file}`, import.meta.url).pathname;

/** The verdict, or the violation's message when the check found one, for a readable failure. */
function outcome(result: CheckResult): string {
  return result.verdict === "VIOLATED" ? `VIOLATED ${result.invariant}: ${result.message}` : result.verdict;
}

describe("Durable Object ids", () => {
  it("derives the same id from a name every time, distinct per namespace", () => {
    const a = hexFromName("do:Lab:", "alpha");
    expect(a).toMatch(/^[0-9a-f]{64}$/);
    expect(hexFromName("do:Lab:", "alpha")).toBe(a);
    expect(hexFromName("do:Other:", "alpha")).not.toBe(a);
    expect(idFromString("do:Lab:", a.toUpperCase()).toString()).toBe(a);
    expect(() => idFromString("do:Other:", a)).toThrow("Durable Object ID is not valid for this namespace.");
    expect(() => idFromString("do:Lab:", "abc")).toThrow("Invalid Durable Object ID: must be 64 hex digits");
  });

  it("names the store of a named object by its id, as the stubs do", () => {
    const namespace = { storePrefix: "do:Lab:" } as Parameters<typeof durableObjectStore>[0];
    expect(durableObjectStore(namespace, "alpha")).toBe(`do:Lab:${hexFromName("do:Lab:", "alpha")}`);
  });
});

describe("splitting SQL into statements", () => {
  it("splits at semicolons outside quotes, comments and trigger bodies", () => {
    expect(splitStatements("SELECT 1; SELECT 'a;b' -- c;d\n; /* ; */ SELECT \"x;\"")).toEqual([
      "SELECT 1",
      "SELECT 'a;b' -- c;d",
      '/* ; */ SELECT "x;"',
    ]);
    expect(
      splitStatements("CREATE TRIGGER t AFTER INSERT ON a BEGIN INSERT INTO b VALUES (1); END; SELECT 2;"),
    ).toEqual(["CREATE TRIGGER t AFTER INSERT ON a BEGIN INSERT INTO b VALUES (1); END", "SELECT 2"]);
    expect(splitStatements("  ; -- nothing\n")).toEqual([]);
  });

  it("tells text that holds no statement after the last one's semicolon, as workerd prepares it", () => {
    const tail = (sql: string) => splitQuery(sql).emptyTail;
    expect(tail("SELECT 1; -- done")).toBe(true);
    expect(tail("SELECT 1;;")).toBe(true);
    expect(tail("SELECT 1; /* c */")).toBe(true);
    expect(tail("CREATE TRIGGER t AFTER INSERT ON a BEGIN SELECT 1; END; -- c")).toBe(true);
    expect(tail("SELECT 1 -- done")).toBe(false);
    expect(tail("SELECT 1;\n\t ")).toBe(false);
    expect(tail("-- first\n; SELECT 2")).toBe(false);
    expect(tail("SELECT 1; ; SELECT 2")).toBe(false);
    expect(tail("-- nothing")).toBe(false);
  });
});

describe("a Durable Object's storage calls in the trace", () => {
  it("show the entries a put writes at once, and what getAlarm answers", async () => {
    const result = await check(
      new URL("../../test/fixtures/storage-trace/record.sim.ts", import.meta.url).pathname,
    );
    if (result.verdict !== "VIOLATED") throw new Error(`expected VIOLATED, got ${result.verdict}`);
    expect(result.trace).toContain('  DO:Ledger/"ada" storage.put({"balance":30,"paid":70})');
    expect(result.trace).toContain('  DO:Ledger/"ada" storage.getAlarm() -> null');
  });
});

describe("Durable Objects through check()", () => {
  it("answers ids, stub calls, in-memory state, KV, SQL and key-value-backed classes as documented", async () => {
    const result = await check(fixture("semantics.sim.ts"));
    expect(outcome(result)).toBe("BOUNDED");
  });

  it("loses the object's memory on a reset but keeps its storage, and rebuilds the instance", async () => {
    const result = await check(fixture("reset.sim.ts"));
    if (result.verdict !== "VIOLATED") throw new Error(`expected VIOLATED, got ${result.verdict}`);
    expect(result.invariant).toBe("memory-survives");
    expect(result.eventsKept).toEqual(["req-1", "req-2", "req-3"]);
    expect(result.faults).toEqual([
      { kind: "transient_error", invocation: "req-2#1", effect: 0, label: "DO:LAB ping" },
    ]);
    expect(result.message).toBe(
      `recall answered {"memory":null,"storage":"x","constructions":2} after ping answered 503 ${RESET_MESSAGE}`,
    );
  });

  it("retries a throwing alarm with alarmInfo, clears it after success, never runs a cancelled one", async () => {
    const result = await check(fixture("alarms.sim.ts"));
    expect(outcome(result)).toBe("BOUNDED");
  });

  it("gives an always-throwing alarm up after 6 retries", async () => {
    const result = await check(fixture("alarm-gives-up.sim.ts"));
    expect(outcome(result)).toBe("BOUNDED");
    // The trace says which of Cloudflare's retries each delivery is, its backoff, and the end.
    const run = await check(fixture("alarm-gives-up.sim.ts"), { replay: "0000000000000001:1:-:6" });
    if (run.verdict !== "HELD") throw new Error(`expected the replay to hold, got ${run.verdict}`);
    expect(run.trace).toContain("alarm-1#2 is Cloudflare's retry 1 of 6, 2 s after the last");
    expect(run.trace).toContain("alarm-1#7 is Cloudflare's retry 6 of 6, 64 s after the last");
    expect(run.trace).toContain("alarm-1 given up: Cloudflare retries an alarm 6 times, then drops it");
  });

  it("retries an alarm whose invocation dies or whose call fails, until it completes", async () => {
    const result = await check(fixture("alarm-faults.sim.ts"));
    expect(outcome(result)).toBe("BOUNDED");
    if (result.verdict === "BOUNDED") expect(result.runs).toBeGreaterThan(4);
  });
});
