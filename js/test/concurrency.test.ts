/**
 * Interleaved invocations (`bounds.maxConcurrentInvocations` above 1): races written as Workers
 * developers write them are found without any fault, their fixes are BOUNDED, partial-order
 * reduction keeps every verdict of plain exhaustive search with fewer runs, sampling reports
 * itself honestly and its counterexamples replay, and shards merge to the unsplit verdict.
 */

import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { type CheckOptions, type CheckResult, check, renderReport } from "../src/index.ts";
import { mergeResults } from "../src/merge.ts";
import { tempFolder } from "./files.ts";
import { violated } from "./verdict.ts";

const root = new URL("../../", import.meta.url).pathname;
const example = (path: string) => `${root}examples/${path}`;
const fixture = (path: string) => `${root}js/test/fixtures/concurrency/${path}`;

/** The steps of a trace that ran in some invocation, in order: `req-2#1 effect #0 …`, `deliver …`. */
function steps(trace: readonly string[]): string[] {
  return trace.filter((line) => /^(deliver \S+|\S+#\d+(\/\d+)* effect #\d+ .*)$/.test(line));
}

/**
 * A copy of `scenario` with `maxConcurrentInvocations` set to `n`, so that examples written for
 * one invocation at a time can be checked interleaved. The copy lives in a temporary folder and
 * names the example's files by absolute path.
 */
function interleaved(scenario: string, n: number): string {
  const text = readFileSync(scenario, "utf8")
    .replaceAll('"./', `"${dirname(scenario)}/`)
    .replace(/maxConcurrentInvocations: \d+/, `maxConcurrentInvocations: ${n}`);
  if (!text.includes(`maxConcurrentInvocations: ${n}`))
    throw new Error(`${scenario} sets no bound to change`);
  const copy = join(tempFolder("eutaxy-interleaved-"), basename(scenario));
  writeFileSync(copy, text);
  return copy;
}

describe("the steps of an interleaved counterexample", () => {
  it("say that a request whose handler threw was answered 500, and why", async () => {
    const file = new URL("fixtures/concurrency/throws/throws.sim.ts", import.meta.url).pathname;
    const report = renderReport(violated(await check(file)));
    expect(report).toContain(
      "  req-2#1 threw, so it was answered 500: Error: D1_ERROR: no such table: orders: SQLITE_ERROR",
    );
    // Said once: no second line for the same answer.
    expect(report).not.toContain("req-2#1 answered 500");
    expect(report).not.toMatch(/answered \d+:\n/);
  });
});

describe("a check-then-insert race in D1 (examples/signup-race)", () => {
  it("is VIOLATED with no fault: the second lookup runs before the first insert", async () => {
    const result = violated(await check(example("signup-race/signup.sim.ts")));
    expect(result.invariant).toBe("one-account-per-address");
    expect(result.message).toBe('2 rows of users in D1:DB share email = "ada@example.com"');
    expect(result.faults).toEqual([]);
    expect(result.eventsKept).toEqual(["req-1", "req-2"]);
    // Both lookups run before either insert.
    const order = steps(result.trace).filter((s) => s.includes("effect"));
    const lookups = order.flatMap((s, i) => (s.includes("D1:DB first") ? [i] : []));
    const inserts = order.flatMap((s, i) => (s.includes("D1:DB run") ? [i] : []));
    expect(lookups).toHaveLength(2);
    expect(inserts).toHaveLength(2);
    expect(Math.max(...lookups)).toBeLessThan(Math.min(...inserts));
    const report = renderReport(result);
    expect(report).toContain(
      "Steps in the order they ran:\n  deliver req-1#1\n  req-1#1 effect #0 (D1:DB first)",
    );
    expect(report).toContain("no faults: the events alone break it");
    // Each answer is a step too, after the insert its request made.
    const listed = report.slice(report.indexOf("Steps in the order they ran:")).split("\n");
    const answered = listed.findIndex((line) => /^ {2}req-\d#1 answered 201$/.test(line));
    expect(answered).toBeGreaterThan(listed.findIndex((line) => line.includes("(D1:DB run)")));
  });

  it("replays from its run seed, interleaving and all", async () => {
    const result = violated(await check(example("signup-race/signup.sim.ts")));
    expect(result.runSeed.split(":")).toHaveLength(5);
    const replay = violated(await check(example("signup-race/signup.sim.ts"), { replay: result.runSeed }));
    expect(replay.trace).toEqual(result.trace);
  });

  it("is BOUNDED once the lookup and the insert are one statement", async () => {
    const result = await check(example("signup-race/signup.fixed.sim.ts"));
    expect(result.verdict).toBe("BOUNDED");
  });

  it("shrinks to the race alone when crashes and resends are explored too", async () => {
    const result = violated(await check(fixture("signup-retries.sim.ts")));
    expect(result.faults).toEqual([]);
    expect(result.eventsKept).toEqual(["req-1", "req-2"]);
    expect(result.runSeed).toMatch(/:-:0:[^:]+$/);
  });

  it("gives the same verdict and trace every time", async () => {
    const [a, b] = [
      await check(example("signup-race/signup.sim.ts")),
      await check(example("signup-race/signup.sim.ts")),
    ];
    const [x, y] = [violated(a), violated(b)];
    expect(y.runSeed).toBe(x.runSeed);
    expect(y.runs).toBe(x.runs);
    expect(y.trace).toEqual(x.trace);
  });
});

describe("a read-modify-write across an await in a Durable Object", () => {
  it("is VIOLATED: a booking runs while the other's charge is in flight", async () => {
    const result = violated(await check(example("seats-race/seats.sim.ts")));
    expect(result.message).toBe("2 bookings succeeded for a show with 1 seat");
    expect(result.faults).toEqual([]);
    // The second booking reaches the object while the first one's charge is on its way.
    const order = result.trace.filter((line) => / effect #\d+ .*: proceed$|gets the answer/.test(line));
    expect(order.indexOf("req-2#1 effect #0 DO:SHOW book: proceed")).toBeGreaterThan(
      order.indexOf("req-1#1/0 effect #0 fetch POST https://pay.example/charge: proceed"),
    );
    expect(order.indexOf("req-2#1 effect #0 DO:SHOW book: proceed")).toBeLessThan(
      order.indexOf("req-1#1/0 gets the answer of effect #0"),
    );
    // Both read the count before either wrote it: the storage calls are traced as calls, and
    // the KV API's own table in the object's SQLite store stays out of the trace.
    const object = 'DO:Show/"opening-night"';
    const reads = result.trace.filter((line) => line === `  ${object} storage.get("sold") -> undefined`);
    expect(reads).toHaveLength(2);
    expect(result.trace.filter((line) => line === `  ${object} storage.put("sold", 1)`)).toHaveLength(2);
    expect(result.trace.filter((line) => line.includes("_cf_KV"))).toEqual([]);
  });

  it("is BOUNDED when the seat is held before the charge", async () => {
    expect((await check(example("seats-race/seats.fixed.sim.ts"))).verdict).toBe("BOUNDED");
  });

  it("is BOUNDED when the booking runs under blockConcurrencyWhile", async () => {
    expect((await check(example("seats-race/seats.gated.sim.ts"))).verdict).toBe("BOUNDED");
  });

  it("is BOUNDED with one invocation at a time: the race needs the interleaving", async () => {
    const result = await check(interleaved(example("seats-race/seats.sim.ts"), 1));
    expect(result.verdict).toBe("BOUNDED");
  });
});

/**
 * Races in Workers written without eutaxy in mind (js/test/fixtures/races): a lost update in D1,
 * a read-modify-write of a KV counter, a check-then-insert behind an RPC call. Each is found
 * without a fault and needs the interleaving; each fix is BOUNDED.
 */
const race = (path: string) => `${root}js/test/fixtures/races/${path}`;
const RACES = [
  {
    name: "a D1 balance read, then written back",
    bug: race("bank/withdraw.sim.ts"),
    fix: race("bank/withdraw.fixed.sim.ts"),
    invariant: "money-conserved",
  },
  {
    name: "a KV counter read, then incremented",
    bug: race("kv-counter/counter.sim.ts"),
    fix: race("kv-counter/counter.fixed.sim.ts"),
    invariant: "no-acknowledged-hit-lost",
  },
  {
    name: "a check-then-insert in a Worker called over RPC",
    bug: race("rpc-register/register.sim.ts"),
    fix: race("rpc-register/register.fixed.sim.ts"),
    invariant: "one-user-per-email",
  },
];

describe("races in Workers eutaxy has not seen", () => {
  for (const { name, bug, fix, invariant } of RACES) {
    it(`${name}: VIOLATED with no fault, one request between the other's read and write`, async () => {
      const result = violated(await check(bug));
      expect(result.invariant).toBe(invariant);
      expect(result.faults).toEqual([]);
      const order = steps(result.trace);
      // Both requests have started before the first one's last step.
      const second = order.findIndex((line) => line.startsWith("deliver req-2#1"));
      const firstLast = order.findLastIndex((line) => line.startsWith("req-1#1"));
      expect(second).toBeGreaterThanOrEqual(0);
      expect(second).toBeLessThan(firstLast);
    });

    it(`${name}: BOUNDED with one invocation at a time`, async () => {
      expect((await check(interleaved(bug, 1))).verdict).toBe("BOUNDED");
    });

    it(`${name}: the fix is BOUNDED`, async () => {
      expect((await check(fix)).verdict).toBe("BOUNDED");
    });
  }
});

describe("a race on a table the Worker creates on first use", () => {
  it("is VIOLATED with no fault: what statements touch is read again once the table exists", async () => {
    const result = violated(await check(race("lazy-table/signup.sim.ts")));
    expect(result.invariant).toBe("one-account-per-email");
    expect(result.faults).toEqual([]);
    expect(result.eventsKept).toEqual(["req-1", "req-2", "req-3"]);
  });

  it("is BOUNDED with one invocation at a time", async () => {
    expect((await check(interleaved(race("lazy-table/signup.sim.ts"), 1))).verdict).toBe("BOUNDED");
  });

  it("its fix, a unique address and an insert that keeps the first, is BOUNDED", async () => {
    expect((await check(race("lazy-table/signup.fixed.sim.ts"))).verdict).toBe("BOUNDED");
  });
});

describe("a queue consumer that races the request that queued its message", () => {
  it("is VIOLATED with no fault: the batch looks the order up before the request records it", async () => {
    const result = violated(await check(fixture("queue-mail/mail.sim.ts")));
    expect(result.invariant).toBe("every-mail-finds-its-order");
    expect(result.faults).toEqual([]);
    const order = steps(result.trace);
    const lookup = order.findIndex((line) => line.startsWith("batch-1#1 effect #0 D1:DB first"));
    const recorded = order.findLastIndex((line) => /^req-\d#1 effect #\d D1:DB run/.test(line));
    expect(lookup).toBeGreaterThanOrEqual(0);
    expect(lookup).toBeLessThan(recorded);
  });

  it("its fix, which records the order before it queues the mail, is BOUNDED", async () => {
    expect((await check(fixture("queue-mail/mail.fixed.sim.ts"))).verdict).toBe("BOUNDED");
  });
});

describe("a dead letter queue's consumer racing itself", () => {
  it("is VIOLATED: a dead-letter batch starts before the second job has failed, and both open an incident", async () => {
    const result = violated(await check(fixture("dlq-incidents/incidents.sim.ts")));
    expect(result.invariant).toBe("one-open-incident-per-customer");
    expect(result.faults).toEqual([]);
  });
});

describe("an alarm's retry, 2 s after its first attempt failed", () => {
  it("is a step of its own, which another request may come before or after", async () => {
    const result = violated(await check(fixture("alarm-retry-clock/clock.sim.ts")));
    expect(result.invariant).toBe("signup-before-the-retry");
    // The engine chose when the retry started, as it chooses any platform work's start.
    expect(result.trace).toContain("schedule: deliver alarm-1#2 (of 2 pending)");
    const report = renderReport(result);
    // An alarm answers no one: its failure is not a 500.
    expect(report).toContain(
      "  alarm-1#1 threw: Error: the mail provider is down (at js/test/fixtures/concurrency/alarm-retry-clock/worker.ts:17:46)\n",
    );
    expect(report).not.toContain("alarm-1#1 threw, so it was answered 500");
  });
});

describe("blockConcurrencyWhile with more than one call waiting (examples/seats-race)", () => {
  it("holds every waiting call until the callback settles: three bookings, one seat, BOUNDED", async () => {
    const result = await check(fixture("seats-three-gated.sim.ts"));
    expect(result.verdict).toBe("BOUNDED");
  });

  it("without it, three bookings at once sell the seat twice", async () => {
    const result = violated(await check(fixture("seats-three.sim.ts")));
    expect(result.faults).toEqual([]);
  });
});

describe("a critical section that waits on a timer while another call waits at the gate (section-timer)", () => {
  // workerd answers 1 and 2: the second call goes in once the first's section is done.
  it.each(["tickets.sim.ts", "tickets.block.sim.ts"])(
    "gives each call a number of its own: %s is BOUNDED",
    async (scenario) => {
      expect((await check(fixture(`section-timer/${scenario}`))).verdict).toBe("BOUNDED");
    },
  );

  it("without a section, two calls get one number", async () => {
    const result = violated(await check(fixture("section-timer/tickets.bare.sim.ts")));
    expect(result.message).toBe("two calls got ticket 1");
    expect(result.faults).toEqual([]);
  });

  it("runs the call let in at the gate as its own invocation: its timer and its binding call", async () => {
    // req-2 arrives while req-1's transaction waits on its timer. Woken by req-1's step, the
    // call's timer was once set as req-1's, dropped when req-1 answered, and the check ended as
    // if the call waited on something outside the simulation.
    const replay = "6aa8721575af428b:1,2:-:0:1.1/0=2.1";
    const result = await check(fixture("section-timer/tickets.sim.ts"), { replay });
    expect(result.verdict).toBe("HELD");
    if (result.verdict !== "HELD") return;
    const enters = result.trace.indexOf('req-2#1/0 enters Durable Object Tickets "desk", its gate open');
    expect(enters).toBeGreaterThan(result.trace.indexOf("req-1#1/0 timer of 50 ms fired"));
    expect(result.trace.slice(enters)).toEqual(
      expect.arrayContaining([
        "req-2#1/0 timer of 50 ms fired",
        "req-2#1/0 effect #0 fetch POST https://board.example/: proceed",
        "req-2#1 answered 200 2",
      ]),
    );
  });
});

describe("an alarm set while the object's alarm handler runs", () => {
  it("waits for the handler to finish, as workerd queues it: one alarm at a time", async () => {
    // Jobs stored while the handler sends set a new alarm; had it rung at once, the handler
    // would have started a second time beside the first and noted it.
    const result = await check(fixture("alarm-serial/serial.sim.ts"));
    expect(result.verdict).toBe("BOUNDED");
  });
});

describe("an alarm that releases a hold a confirmation took while its notice was in flight", () => {
  it("is reported as the race it is, with no fault, though a crash can stand in for a switch", async () => {
    // The alarm reads the hold and sends its notice; the confirmation runs while the notice's
    // answer is on its way back, and the alarm, answered, releases the hold it read. A crash
    // before the notice (the retry reads the hold again) can stand in for the second switch,
    // but two switches and no fault are smaller.
    const result = violated(await check(fixture("alarm-release/release.sim.ts")));
    expect(result.message).toBe("hold #1 was confirmed and is now released");
    expect(result.faults).toEqual([]);
    expect(result.runSeed.split(":").slice(1)).toEqual([
      "1,2",
      "-",
      "0",
      "2.1@0=~alarm-1#1,~alarm-1#1@0+=2.1@0",
    ]);
    expect(steps(result.trace)).toEqual([
      "deliver req-1#1",
      "req-1#1 effect #0 DO:ROOM hold: proceed",
      "deliver req-2#1",
      "deliver alarm-1#1",
      "alarm-1#1 effect #0 fetch POST https://notify.example/hold-expired: proceed",
      "req-2#1 effect #0 DO:ROOM confirm: proceed",
    ]);
    const again = violated(await check(fixture("alarm-release/release.sim.ts")));
    expect(again.runSeed).toBe(result.runSeed);
    // The report's steps end with the alarm's end: it answers no one, so nothing else would say
    // it went no further.
    expect(renderReport(result)).toContain(
      "  alarm-1#1 gets the answer of effect #0\n  alarm-1#1 finished\n",
    );
  });
});

describe("a promise a module shares between requests", () => {
  it("left unsettled by an invocation that died: the runtime cancels the request that awaits it", async () => {
    const result = violated(await check(fixture("shared-promise/greet.sim.ts")));
    expect(result.message).toBe("req-1 got 500 on delivery 2");
    expect(result.faults).toEqual([expect.objectContaining({ kind: "crash_before", invocation: "req-1#1" })]);
    expect(result.trace).toContain("req-1#2 hung: the runtime canceled it");
    // The report's steps say what became of it, as they say a request threw.
    expect(renderReport(result)).toContain("  req-1#2 hung, so the runtime canceled it and answered 500\n");
  });
});

describe("a read-then-write of a balance over a service binding (two Workers)", () => {
  it("shrinks to the one context switch the race needs", async () => {
    // The search finds it with two switches (deliver req-2 while req-1's setBalance callee
    // waits, then run req-2's balance callee ahead of it), neither of which races alone; one
    // switch made earlier does: deliver req-2 instead of req-1's setBalance call.
    const result = violated(await check(fixture("wallet-rpc/shop.sim.ts")));
    expect(result.message).toBe("purchases total 1200 cents but Ada only had 1000");
    const choices = result.runSeed.split(":")[4]?.split(",");
    expect(choices).toEqual(["1.1@2=2.1"]);
    // Both purchases read the balance before either writes it back.
    const order = steps(result.trace);
    const reads = order.flatMap((s, i) => (s.includes("D1:wallet/DB first") ? [i] : []));
    const writes = order.flatMap((s, i) => (s.includes("D1:wallet/DB run") ? [i] : []));
    expect(reads).toHaveLength(2);
    expect(Math.max(...reads)).toBeLessThan(Math.min(...writes));
  });
});

/**
 * Small scenarios, interleaved: partial-order reduction must give the verdict plain exhaustive
 * search gives, with no more runs, and with far fewer runs in all.
 */
const SMALL = [
  example("signup-race/signup.sim.ts"),
  example("signup-race/signup.fixed.sim.ts"),
  example("seats-race/seats.sim.ts"),
  example("seats-race/seats.fixed.sim.ts"),
  ...RACES.flatMap(({ bug, fix }) => [bug, fix]),
  // Platform work started between other invocations' calls: a queue batch, an alarm set for
  // now, an alarm's retry.
  fixture("queue-mail/mail.sim.ts"),
  fixture("queue-mail/mail.fixed.sim.ts"),
  fixture("alarm-now/outbox.sim.ts"),
  fixture("alarm-retry-clock/clock.sim.ts"),
  // A failing batch dead-letters in the step where it fails, whose footprint names no queue.
  fixture("dlq-incidents/incidents.sim.ts"),
];
const SMALL_INTERLEAVED = [
  "service-binding/checkout.sim.ts",
  "service-binding/checkout.fixed.sim.ts",
  "d1-transfer/transfer.sim.ts",
  "d1-transfer/transfer.fixed.sim.ts",
  "durable-objects/counter.fixed.sim.ts",
  "outbound-fetch/pay.fixed.sim.ts",
];

describe("partial-order reduction", () => {
  it("keeps every verdict of plain exhaustive search, with far fewer runs", async () => {
    const scenarios = [...SMALL, ...SMALL_INTERLEAVED.map((path) => interleaved(example(path), 2))];
    let reduced = 0;
    let full = 0;
    for (const scenario of scenarios) {
      const options: CheckOptions = { strategy: "exhaustive", budgetMs: 60_000 };
      const por = await check(scenario, options);
      const plain = await check(scenario, { ...options, partialOrderReduction: false });
      expect([scenario, por.verdict]).toEqual([scenario, plain.verdict]);
      expect(["BOUNDED", "VIOLATED"]).toContain(por.verdict);
      if (por.verdict === "VIOLATED" && plain.verdict === "VIOLATED") {
        expect(por.invariant).toBe(plain.invariant);
      }
      if (por.verdict === "BOUNDED" && plain.verdict === "BOUNDED") {
        expect(por.runs).toBeLessThanOrEqual(plain.runs);
        reduced += por.runs;
        full += plain.runs;
      }
    }
    expect(full / reduced).toBeGreaterThan(3);
  }, 120_000);
});

describe("a BOUNDED check with interleavings", () => {
  it("says that no run changed module state the reduction cannot see, and not when it was off", async () => {
    const scenario = example("signup-race/signup.fixed.sim.ts");
    const reduced = await check(scenario);
    const full = await check(scenario, { partialOrderReduction: false });
    if (reduced.verdict !== "BOUNDED" || full.verdict !== "BOUNDED") throw new Error("expected BOUNDED");
    expect(reduced.partialOrderReduction).toBe(true);
    expect(renderReport(reduced)).toContain(
      "(partial-order reduction), and no run changed a module-level variable of the Workers' own files",
    );
    expect(full.partialOrderReduction).toBe(false);
    expect(renderReport(full)).not.toMatch(/partial-order reduction/);
    // One invocation at a time there is nothing to reorder, and nothing to say.
    const single = await check(interleaved(scenario, 1));
    expect(single.verdict === "BOUNDED" && single.partialOrderReduction).toBeUndefined();
  });
});

describe("module-level state, which partial-order reduction cannot see", () => {
  const numbering = (file: string) => `${root}js/test/fixtures/module-state/${file}`;

  it("is watched: a race on a module-level counter is found with the reduction on", async () => {
    // Read before an await, written after it: two requests take the same number.
    expect((await check(numbering("numbering.sim.ts"))).verdict).toBe("VIOLATED");
    // The same in a Map the module keeps, changed in place.
    expect((await check(numbering("numbering.cache.sim.ts"))).verdict).toBe("VIOLATED");
    // A lock in a nested object, taken and released within each request.
    expect((await check(numbering("numbering.lock.sim.ts"))).verdict).toBe("VIOLATED");
  });

  it("races a read whose answer is on its way while a write empties the cache it then fills", async () => {
    // The read's lookup takes effect, the price changes and the cache is emptied, then the
    // lookup's answer arrives and fills the cache with the old price.
    const stale = violated(await check(numbering("prices.sim.ts")));
    expect(stale.message).toBe("req-3 read 1000, D1 holds 1200");
    // Found once the check started again without the reduction, which the report says.
    expect(stale.warnings?.map((w) => w.kind)).toEqual(["module-state"]);
    expect(renderReport(stale)).toContain("so the check started again without partial-order reduction");
    expect(renderReport(stale)).toContain("  req-1#1 gets the answer of effect #0\n");
    // The check ran again with every answer a step of its own, which its run seed says (`+`),
    // so that a replay splits them too and runs the same schedule.
    expect(stale.runSeed.split(":")[4]).toMatch(/^\+./);
    const replayed = violated(await check(numbering("prices.sim.ts"), { replay: stale.runSeed }));
    expect(replayed.trace).toEqual(stale.trace);
    const unmarked = stale.runSeed.replace(/:\+/, ":");
    expect((await check(numbering("prices.sim.ts"), { replay: unmarked })).verdict).toBe("HELD");
    expect((await check(numbering("prices.fixed.sim.ts"))).verdict).toBe("BOUNDED");
  });

  it("watches every variable of a module esbuild initializes lazily, declared on one line", async () => {
    // `var PRICE_KEY, cache;`: the cache is the second, and only it changes.
    const stale = violated(await check(numbering("prices.lazy.sim.ts")));
    expect(stale.message).toBe("req-3 read 1000, D1 holds 1200");
    expect(stale.warnings?.[0]?.message).toContain(
      "changed the module-level variable cache of js/test/fixtures/module-state/price-cache.ts while",
    );
  });

  it("watches every variable of a declaration of several, not only the first", async () => {
    // `const key = "price", cache = new Map();`: the cache is the second, and only it changes.
    const stale = violated(await check(numbering("prices.pair.sim.ts")));
    expect(stale.message).toBe("req-3 read 1000, D1 holds 1200");
    expect(stale.warnings?.[0]?.message).toContain(
      "changed the module-level variable cache of js/test/fixtures/module-state/worker.prices.pair.ts while",
    );
  });

  it("turns the reduction off once a run changes it, and the report names the variable", async () => {
    const fixed = await check(numbering("numbering.fixed.sim.ts"));
    const full = await check(numbering("numbering.fixed.sim.ts"), { partialOrderReduction: false });
    if (fixed.verdict !== "BOUNDED" || full.verdict !== "BOUNDED") throw new Error("expected BOUNDED");
    expect(fixed.partialOrderReduction).toBe(false);
    expect(fixed.runs).toBe(full.runs);
    expect(fixed.bounds.budgetMs).toBe(10_000);
    expect(fixed.warnings).toEqual([
      {
        kind: "module-state",
        message:
          "Worker numbering changed the module-level variable served of js/test/fixtures/module-state/worker.fixed.ts while it served requests, which concurrent requests share and partial-order reduction cannot see, so every interleaving ran, with the code after each binding call's answer as a step of its own. Here all the requests of a run share one isolate; Cloudflare may run them in different isolates, which do not share it.",
      },
    ]);
    // Without the reduction the runs watch it too, and run again in the same tree.
    expect(full.warnings).toEqual(fixed.warnings);
    expect(renderReport(fixed)).not.toContain("(partial-order reduction)");
  });

  it("leaves the reduction on for a library's client kept in a variable by the first request", async () => {
    // `db ??= drizzle(env.DB)`: which request built the client makes no difference.
    const race = violated(await check(numbering("numbering.client.sim.ts")));
    expect(race.message).toBe("2 rows of log in D1:DB share n = 1");
    const fixed = await check(numbering("numbering.client.fixed.sim.ts"));
    const full = await check(numbering("numbering.client.fixed.sim.ts"), { partialOrderReduction: false });
    if (fixed.verdict !== "BOUNDED" || full.verdict !== "BOUNDED") throw new Error("expected BOUNDED");
    expect(fixed.partialOrderReduction).toBe(true);
    expect(fixed).not.toHaveProperty("warnings");
    expect(fixed.runs).toBeLessThan(full.runs);
  });

  it("warns, one request at a time, that requests found what earlier ones left in a module", async () => {
    // A resend finds its order remembered in a Set: right in one isolate, not across two.
    const kept = await check(numbering("dedupe.sim.ts"));
    if (kept.verdict !== "BOUNDED") throw new Error(`expected BOUNDED, got ${kept.verdict}`);
    expect(kept.warnings).toEqual([
      {
        kind: "isolate-state",
        message:
          "Worker numbering kept state between requests in the module-level variable logged of js/test/fixtures/module-state/worker.dedupe.ts: here all the requests of a run share one isolate, so each found what the ones before it (a resend's first attempt among them) left there. Cloudflare may run them in different isolates, where none of it is, so a Worker that relies on it to be right (a lock, a record of what it did) can still fail in production; eutaxy does not run that case.",
      },
    ]);
    // A Worker that keeps nothing between requests gets no such warning.
    expect(await check(example("service-binding/checkout.fixed.sim.ts"))).not.toHaveProperty("warnings");
  });

  it("does not warn that requests found module state when no request came after the change", async () => {
    const once = await check(numbering("dedupe.once.sim.ts"));
    if (once.verdict !== "BOUNDED") throw new Error(`expected BOUNDED, got ${once.verdict}`);
    expect(once).not.toHaveProperty("warnings");
  });

  it("names the variable as the Worker's file declares it, where the bundle renamed it", async () => {
    // A helper's file declares `logged` too, so the bundle calls the Worker's `logged2`.
    const kept = await check(numbering("dedupe.renamed.sim.ts"));
    if (kept.verdict !== "BOUNDED") throw new Error(`expected BOUNDED, got ${kept.verdict}`);
    expect(kept.warnings?.[0]?.message).toContain(
      "the module-level variable logged of js/test/fixtures/module-state/worker.renamed.ts:",
    );
  });

  it("leaves the reduction on for a Worker that keeps no module state", async () => {
    const result = await check(example("signup-race/signup.fixed.sim.ts"));
    expect(result.verdict === "BOUNDED" && result.partialOrderReduction).toBe(true);
    expect(result).not.toHaveProperty("warnings");
  });
});

describe("--no-reduction", () => {
  it("explores every interleaving from the command line, for the same verdict", () => {
    const cli = (...args: string[]) => {
      const run = spawnSync(process.execPath, [`${root}js/bin/eutaxy.js`, "check", ...args, "--json"], {
        cwd: `${root}examples/signup-race`,
        encoding: "utf8",
      });
      expect(run.status).toBe(0);
      return JSON.parse(run.stdout) as { verdict: string; runs: number };
    };
    const reduced = cli("./signup.fixed.sim.ts");
    const full = cli("./signup.fixed.sim.ts", "--no-reduction");
    expect([reduced.verdict, full.verdict]).toEqual(["BOUNDED", "BOUNDED"]);
    expect(full.runs).toBeGreaterThan(reduced.runs);
  });
});

describe("sampling", () => {
  for (const strategy of ["pct", "random"] as const) {
    it(`${strategy}: finds the race, and its counterexample shrinks and replays from its seed`, async () => {
      const scenario = example("signup-race/signup.sim.ts");
      const result = violated(await check(scenario, { strategy }));
      expect(result.invariant).toBe("one-account-per-address");
      expect(result.eventsKept).toEqual(["req-1", "req-2"]);
      const replay = violated(await check(scenario, { replay: result.runSeed }));
      expect(replay.trace).toEqual(result.trace);
      expect(replay.message).toBe(result.message);
    });

    it(`${strategy}: shrinks a walk that switched back and forth to the one switch the race needs`, async () => {
      // From these seeds the race is first found by a run that switches several times, and
      // dropping or merging its switches keeps two or three (deliver req-2 before req-1's
      // lookup, then switch back to req-1's lookup before req-2's insert). The one switch
      // "deliver req-2 before req-1's insert" races as well, at a point none of those runs
      // passes through.
      const seeds = { random: ["s1", "s2", "s3"], pct: ["s1", "s4", "s5"] }[strategy];
      for (const seed of seeds) {
        const result = violated(await check(example("signup-race/signup.sim.ts"), { strategy, seed }));
        expect(result.runSeed.split(":").slice(1), seed).toEqual(["1,2", "-", "0", "1.1@1=2.1"]);
      }
    });

    it(`${strategy}: is INCOMPLETE, never BOUNDED, and says how it sampled`, async () => {
      const result = await check(example("signup-race/signup.fixed.sim.ts"), { strategy, budgetMs: 300 });
      expect(result.verdict).toBe("INCOMPLETE");
      if (result.verdict !== "INCOMPLETE") return;
      expect(result.strategy).toBe(strategy);
      expect(result.distinctSchedules).toBeGreaterThan(0);
      expect(result.distinctSchedules).toBeLessThanOrEqual(result.runs);
      expect(renderReport(result)).toMatch(/Sampled by .*: \d+ distinct schedules?\./);
      // A bigger budget would not make it a proof: the exhaustive search would.
      expect(renderReport(result)).toContain(
        "this is not a proof, and sampling never gives one: --strategy exhaustive (or auto, the default) covers the bounds when the budget allows.",
      );
    });
  }
});

describe("a sampled run of requests that wait on timers", () => {
  // A timer firing and the delivery that started its invocation are named alike in a schedule,
  // and so are an invocation's successive timers: a replay applied a switch at the first point
  // of that name, not where the sampled run made it, and the check ended in nondeterminism.
  for (const strategy of ["random", "pct"] as const) {
    it(`${strategy}: replays as it ran, so it shrinks and reports, from every seed`, async () => {
      for (const seed of ["1", "2", "8", "11", "12"]) {
        const result = violated(await check(fixture("timer-waits/waits.sim.ts"), { strategy, seed }));
        const again = violated(await check(fixture("timer-waits/waits.sim.ts"), { replay: result.runSeed }));
        expect(again.trace, seed).toEqual(result.trace);
      }
    });
  }
});

describe("shards of an interleaved check", () => {
  // A budget no machine runs out of: a verdict that must be BOUNDED is not the machine's speed's.
  const untimed = { budgetMs: 120_000 };

  async function split(scenario: string, count: number): Promise<CheckResult[]> {
    const results: CheckResult[] = [];
    for (let index = 0; index < count; index++)
      results.push(await check(scenario, { ...untimed, shard: { index, count } }));
    return results;
  }

  it("merge to the unsplit BOUNDED", async () => {
    const scenario = interleaved(example("service-binding/checkout.fixed.sim.ts"), 2);
    const whole = await check(scenario, untimed);
    expect(whole).toMatchObject({ verdict: "BOUNDED", partialOrderReduction: true });
    const merged = mergeResults(await split(scenario, 3), ["1", "2", "3"]);
    // Merged, it says what the unsplit check says, reduction included (and its report's caveat).
    expect(merged).toMatchObject({ verdict: "BOUNDED", partialOrderReduction: true });
    expect(renderReport(merged as CheckResult)).toContain("partial-order reduction");
    // One shard without reduction: the whole still rests on the reduction the other used.
    const mixed = [
      await check(scenario, { ...untimed, shard: { index: 0, count: 2 } }),
      await check(scenario, { ...untimed, shard: { index: 1, count: 2 }, partialOrderReduction: false }),
    ];
    expect(mergeResults(mixed, ["1", "2"])).toMatchObject({
      verdict: "BOUNDED",
      partialOrderReduction: true,
    });
  });

  it("merge to the unsplit VIOLATED", async () => {
    const scenario = example("signup-race/signup.sim.ts");
    const whole = violated(await check(scenario));
    const merged = mergeResults(await split(scenario, 2), ["1", "2"]);
    expect(merged.verdict).toBe("VIOLATED");
    if (merged.verdict === "VIOLATED") expect(merged.invariant).toBe(whole.invariant);
  });
});
