/**
 * `ctx.storage.transaction()` of a SQLite-backed Durable Object, as workerd runs it
 * (js/test/fixtures/do-transaction): every storage call inside it is part of it (SQL and
 * `ctx.storage.put` too, not only `txn`), an invocation that dies inside it commits nothing, and
 * no other call reaches the object until it settles. The bare versions of the same code show what
 * the transaction is there for.
 */

import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { check } from "../src/index.ts";
import { violated } from "./verdict.ts";

const fixture = (name: string) =>
  join(dirname(fileURLToPath(import.meta.url)), "fixtures", "do-transaction", name);

describe("a Durable Object's storage.transaction()", () => {
  it("undoes SQL and ctx.storage writes when its invocation dies inside it", async () => {
    expect((await check(fixture("transfer.sim.ts"))).verdict).toBe("BOUNDED");
    const bare = violated(await check(fixture("transfer.bare.sim.ts")));
    expect(bare.message).toBe("the accounts hold 70, but 100 was deposited");
    expect(bare.faults).toMatchObject([{ kind: "crash_before", invocation: "req-1#1/0", effect: 0 }]);
    // The object's SQL is shown as the object's, not as a D1 database's.
    expect(bare.trace).toContainEqual(
      expect.stringMatching(
        /^ +DO:Bank\/"main" SQL: UPDATE accounts SET balance = balance - \? WHERE id = 'ada'/,
      ),
    );
  });

  it("ends a call back into the object that waits for the transaction that waits for it at the 30-second limit", async () => {
    // A deadlock: on Cloudflare the critical section's time limit cancels it and resets the
    // object, and the calls fail with the limit's error, 30 s on.
    const result = violated(await check(fixture("reentrant.sim.ts")));
    expect(result.message).toBe(
      "req-1#1 was answered 500, not 200: A call to blockConcurrencyWhile() in a Durable Object waited for too long. The call was canceled and the Durable Object was reset. (after 30001 ms)",
    );
    expect(result.trace).toContain(
      'Durable Object A "a" reset (a critical section held it past the 30-second limit): its in-memory state is gone',
    );
    expect(result.trace).toContain(
      "req-1#1 answered 500 A call to blockConcurrencyWhile() in a Durable Object waited for too long. The call was canceled and the Durable Object was reset. (after 30001 ms)",
    );
  });

  it("resets the object when a blockConcurrencyWhile callback outlasts the 30-second limit on the clock", async () => {
    // A minute's wait inside the callback: at 30 s the object resets, the wait never ends, and
    // the caller has the limit's error then.
    const result = violated(await check(fixture("slow.sim.ts")));
    expect(result.trace).toContain(
      'Durable Object Slow "s" reset (a critical section held it past the 30-second limit): its in-memory state is gone',
    );
    expect(result.trace).toContain(
      "req-1#1 answered 500 A call to blockConcurrencyWhile() in a Durable Object waited for too long. The call was canceled and the Durable Object was reset. (after 30001 ms)",
    );
    // Ten seconds is within it.
    expect((await check(fixture("slow.quick.sim.ts"))).verdict).toBe("BOUNDED");
  });

  it("says when a call that waited at the gate of another invocation's critical section goes in", async () => {
    // The read reaches the object while the refresh's fetch is out; it waits at the gate and goes
    // in after the refresh: its storage calls sit under a line of its own, not the refresh's.
    const replay = "8af97972044b8af2:1,2:-:0:1.1/0@0=2.1";
    const result = await check(fixture("gate.sim.ts"), { replay });
    expect(result.verdict).toBe("HELD");
    if (result.verdict !== "HELD") return;
    const enters = result.trace.indexOf('req-2#1/0 enters Durable Object A "a", its gate open');
    expect(enters).toBeGreaterThan(result.trace.indexOf('  DO:A/"a" storage.put("price", "1200")'));
    expect(result.trace[enters + 1]).toBe('  DO:A/"a" storage.get("price") -> "1200"');
  });

  it("of a key-value-backed object holds only the writes made through txn, as production's ActorCache", async () => {
    // The worker answers 500 naming each case that kept or read other than Miniflare's ActorCache.
    const result = await check(fixture("key-value/direct-writes.sim.ts"));
    expect(result.verdict).toBe("BOUNDED");
  });

  it("keeps other calls out of the object until it settles", async () => {
    expect((await check(fixture("deposits.sim.ts"))).verdict).toBe("BOUNDED");
    const bare = violated(await check(fixture("deposits.bare.sim.ts")));
    expect(bare.message).toBe("bob holds 10, but 20 was deposited");
    expect(bare.faults).toEqual([]);
  });
});
