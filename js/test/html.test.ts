/**
 * The visual counterexample (`renderHtml`): what a user reads on the page for each example's
 * planted bug, that nothing a Worker outputs can inject markup, and, in headless Chromium, that
 * the page renders to a non-blank picture with the diagram, the fault and the invariant in it.
 */

import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type CheckResult, check } from "../src/check.ts";
import { findCulprits } from "../src/html/culprits.ts";
import { parseStatement, parseTrace } from "../src/html/trace.ts";
import { renderHtml } from "../src/html.ts";
import { FINAL_STATE } from "../src/trace.ts";
import { countColour, readPng } from "./png.ts";

const examples = new URL("../../examples/", import.meta.url).pathname;

type Violated = Extract<CheckResult, { verdict: "VIOLATED" }>;

async function violated(path: string): Promise<Violated> {
  const result = await check(join(examples, path));
  if (result.verdict !== "VIOLATED") throw new Error(`expected VIOLATED from ${path}, got ${result.verdict}`);
  return result;
}

/** The page's text as a reader sees it: tags dropped, entities decoded. */
function text(html: string): string {
  return html
    .replace(/<style>[\s\S]*?<\/style>/g, "")
    .replace(/<[^>]+>/g, "")
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&");
}

/** The lane headers of the diagram, in order: `<b>title</b>` inside `class="head …"`. */
function lifelines(html: string): string[] {
  return [...html.matchAll(/<div class="head head-\w+"[^>]*><b>([^<]*)<\/b>/g)].map((m) =>
    text(m[1] as string),
  );
}

/** The tags a page is made of; anything else would have come from the run. */
const OUR_TAGS = new Set(
  "html head meta title style body header h1 h2 small span p main section div dl dt dd b code ol li ul details summary pre footer".split(
    " ",
  ),
);

/** The attributes our tags carry; an event handler or a link would have come from the run. */
const OUR_ATTRIBUTES = new Set([
  "class",
  "style",
  "title",
  "lang",
  "charset",
  "name",
  "content",
  "role",
  "aria-label",
]);

/**
 * Every `<` of text is escaped, so each `<` left starts a tag of the page's own: its name and
 * attributes must be ours.
 */
function expectOnlyOurMarkup(html: string): void {
  const body = html.replace(/<style>[\s\S]*?<\/style>/, "").replace(/^<!doctype html>/, "");
  const tags = [...body.matchAll(/<\/?([^\s>/]*)([^>]*)>/g)];
  expect(tags.length).toBeGreaterThan(10);
  const foreign: string[] = [];
  for (const [tag, name, rest] of tags) {
    if (!OUR_TAGS.has((name as string).toLowerCase())) foreign.push(tag);
    for (const attribute of (rest as string).matchAll(/\s([^\s=]+)="[^"]*"/g)) {
      if (!OUR_ATTRIBUTES.has(attribute[1] as string)) foreign.push(tag);
    }
    // Attribute values are quoted and escaped, so nothing may be left outside them.
    if ((rest as string).replace(/\s[^\s=]+="[^"]*"/g, "").trim() !== "") foreign.push(tag);
  }
  expect(foreign).toEqual([]);
  expect(html).not.toMatch(/javascript:/i);
}

/** Self-contained: nothing is loaded from anywhere when the page opens, and nothing runs. */
function expectSelfContained(html: string): void {
  // A literal `<` only ever starts a tag (text is escaped), and attributes are checked above.
  expect(html).not.toMatch(/<(script|link|img|iframe|object|embed|base|form)\b/i);
  const styles = [
    html.match(/<style>([\s\S]*?)<\/style>/)?.[1] ?? "",
    ...[...html.matchAll(/ style="([^"]*)"/g)].map((m) => m[1] as string),
  ].join("\n");
  expect(styles).not.toMatch(/url\(|@import|expression\(/i);
}

describe("the service-binding example's page", async () => {
  const result = await violated("service-binding/checkout.sim.ts");
  const html = renderHtml(result);
  const page = text(html);

  it("has a header with the verdict, scenario, seed, invariant, run seed and replay command", () => {
    expect(html.startsWith("<!doctype html>")).toBe(true);
    expect(page).toContain("VIOLATED checkout");
    expect(page).toContain("seed checkout");
    expect(page).toContain(
      'Invariant one-charge-per-order is violated: 2 rows of charges in D1:payments/DB share order_id = "o-2"',
    );
    expect(page).toContain(result.runSeed);
    expect(page).toContain(
      `eutaxy check examples/service-binding/checkout.sim.ts --replay ${result.runSeed}`,
    );
    expect(page).toMatch(/crash_after at req-2#1 effect #0 \(Service:PAYMENTS charge\): The call happens/);
  });

  it("draws one lifeline for the client, each invocation and the callee's database", () => {
    expect(lifelines(html)).toEqual([
      "Client",
      "req-2#1",
      "req-2#1/0",
      "req-2#2",
      "req-2#2/0",
      "D1:payments/DB",
    ]);
  });

  it("tells the double charge: crash after the charge, death, resend, second charge", () => {
    const story = text(html.match(/<ol class="story">[\s\S]*?<\/ol>/)?.[0] ?? "");
    expect(story).toContain(
      'req-2#1 (req-2) calls Service:PAYMENTS charge ✕ crash_after; writes a row with order_id = "o-2"; dies, so it never answers.',
    );
    expect(story).toContain("No answer, so the client resends req-2 as req-2#2.");
    expect(story).toContain(
      'req-2#2 (delivery 2 of req-2) calls Service:PAYMENTS charge; writes a row with order_id = "o-2"',
    );
  });

  it("marks the fault at the effect, the death, the resend and the lost result in the diagram", () => {
    expect(html).toMatch(
      /class="arrow rightward fault fault-crash_after"[\s\S]*?effect #0<\/span> <b>Service:PAYMENTS charge/,
    );
    expect(html).toContain('<span class="x x-from" title="crash_after">✕</span>');
    expect(page).toContain("req-2#1 died: it never answers, so the client gets no answer.");
    expect(page).toContain("no answer, so the client resends: req-2#2");
    expect(page).toContain("never seen: req-2#1 is killed before it reads this (crash_after)");
    expect(page).toContain('answered 200 {"orderId":"o-2","chargeId":2}');
  });

  it("shows each charge's INSERT with its parameters and marks both rows that share the order", () => {
    const rows = [...html.matchAll(/<div class="stmt culprit">([\s\S]*?)<\/div>/g)].map((m) =>
      text(m[1] as string),
    );
    // Each row is marked in the diagram and listed again under "What breaks the invariant".
    expect(rows).toHaveLength(4);
    for (const row of rows) {
      expect(row).toMatch(
        /^INSERT INTO charges \(idempotency_key, order_id, amount_cents\) VALUES \(\?1, \?2, \?3\) ON CONFLICT \(idempotency_key\) DO NOTHING \["[0-9a-f-]{36}", "o-2", 900\] → 1 changed row with order_id = "o-2"$/,
      );
    }
    expect(page).toMatch(/step 3, req-2#1\/0 effect #0:/);
    expect(page).toMatch(/step 10, req-2#2\/0 effect #0:/);
  });

  it("is one self-contained file with no scripts", () => {
    expectSelfContained(html);
    expectOnlyOurMarkup(html);
  });
});

describe("every example's page", () => {
  const cases = [
    {
      sim: "d1-transfer/transfer.sim.ts",
      lanes: ["Client", "req-3#1", "req-3#2", "D1:DB"],
      fault: /crash_before at req-3#1 effect #1 \(D1:DB run\)/,
      shows: [
        "run (never made)",
        'UPDATE accounts SET balance = balance - ?1 WHERE id = ?2 [500, "alice"] → 1 changed',
      ],
    },
    {
      sim: "kv/coupons.sim.ts",
      lanes: ["Client", "req-1#1", "req-2#1", "req-3#1", "KV:COUPONS", "D1:DB"],
      fault: /stale_read at req-3#1 effect #0 \(KV:COUPONS get\): KV answers with the value from before/,
      shows: [
        // The KV calls as the binding's, the stale read with the value it answered.
        'get "coupon:SPRING" → stale: "{\\"percentOff\\":20,\\"usedBy\\":null}"',
        '"o-2", "SPRING" named by the invariant',
      ],
    },
    {
      sim: "queues/deposits.sim.ts",
      lanes: ["Producer", "Queue:deposits", "batch-1#1", "batch-1#2", "D1:DB"],
      fault: /crash_before at batch-1#1 effect #1 \(Queue:deposits ack\)/,
      shows: [
        "msg-3 sent to queue deposits",
        "the platform delivers it again: batch-1#2",
        "failed: acked 0, retried 1",
      ],
    },
    {
      sim: "durable-objects/counter.sim.ts",
      lanes: ["Client", "req-1#1", "req-2#1", "req-3#1", "DO:COUNTER"],
      fault: /reset at req-2#1 effect #0 \(DO:COUNTER increment\): The Durable Object is reset/,
      shows: ['Durable Object Counter "global" reset', "What the invariants read from the final state:"],
    },
    {
      sim: "outbound-fetch/pay.sim.ts",
      lanes: ["Client", "req-2#1", "req-2#2", "fetch https://api.payments.example", "D1:DB"],
      fault: /crash_after at req-2#1 effect #1 \(D1:DB run\)/,
      shows: ["effect #0 POST /v1/charges", '"ch_021f63c9", "o-2" named by the invariant'],
    },
  ];
  for (const c of cases) {
    it(`${c.sim}: lifelines, the fault and what breaks the invariant`, async () => {
      const result = await violated(c.sim);
      const html = renderHtml(result);
      const page = text(html);
      expect(lifelines(html)).toEqual(c.lanes);
      expect(page).toMatch(c.fault);
      expect(html).toMatch(/<span class="x x-(from|to)" title="[a-z_]+">✕<\/span>/);
      for (const s of c.shows) expect(page).toContain(s);
      expect(page).toContain(`Invariant ${result.invariant} is violated: ${result.message}`);
      expectSelfContained(html);
      expectOnlyOurMarkup(html);
    });
  }
});

describe("a race's page", () => {
  it("tells the order in which the deliveries' calls interleaved", async () => {
    const page = text(renderHtml(await violated("signup-race/signup.sim.ts")));
    expect(page).toContain(
      "The calls of different deliveries interleave, in this order: req-1#1 D1:DB first, req-2#1 D1:DB first, req-2#1 D1:DB run, req-1#1 D1:DB run.",
    );
  });

  it("says nothing of an order when one delivery's calls follow another's", async () => {
    expect(text(renderHtml(await violated("d1-transfer/transfer.sim.ts")))).not.toContain("interleave");
  });
});

describe("a resend on an answer", () => {
  it("says the client resent because of the answer, not for want of one", async () => {
    const fixture = new URL("./fixtures/resend-on/webhook.sim.ts", import.meta.url).pathname;
    const result = await check(fixture);
    if (result.verdict !== "VIOLATED") throw new Error(`expected VIOLATED, got ${result.verdict}`);
    const page = text(renderHtml(result));
    expect(page).toContain("req-1#1 was answered 503, so the client resends req-1 as req-1#2.");
    expect(page).toContain("req-1#1 was answered 503, so the client resends: req-1#2");
    expect(page).not.toContain("no answer, so the client resends");
    expect(page).not.toContain("No answer, so the client resends");
    expect(page).toContain("resends when it gets no answer, or an answer it resends on");
  });
});

describe("the writes a unique invariant is about", () => {
  it("are the writes into its table that changed a row, not others that carry the same value", () => {
    const run = (n: number) => [
      `deliver req-${n}#1`,
      `req-${n}#1 effect #0 D1:DB run: proceed`,
      `  D1 DB: INSERT INTO payments (order_id, amount) VALUES (?1, ?2) ["o-1", ${n}] -> 1 changed`,
      `req-${n}#1 effect #1 D1:DB run: proceed`,
      `  D1 DB: UPDATE orders SET status = 'paid' WHERE id = ?1 ["o-1"] -> 1 changed`,
    ];
    const { steps } = parseTrace([
      ...run(1),
      ...run(2),
      "req-3#1 effect #0 D1:DB run: proceed",
      `  D1 DB: INSERT OR IGNORE INTO payments (order_id, amount) VALUES (?1, ?2) ["o-1", 3] -> 0 changed`,
    ]);
    const culprits = findCulprits('2 rows of payments in D1:DB share order_id = "o-1"', steps);
    expect([...culprits.statements.keys()].map((s) => s.sql)).toEqual([
      "INSERT INTO payments (order_id, amount) VALUES (?1, ?2)",
      "INSERT INTO payments (order_id, amount) VALUES (?1, ?2)",
    ]);
  });
});

describe("the writes another invariant is about", () => {
  it("are those into what the invariants read, a Durable Object's storage too, that name what the message names", () => {
    const { steps, finalReads } = parseTrace([
      "deliver req-1#1",
      "req-1#1 effect #0 DO:ROOM confirm: proceed",
      "host req-1#1/0",
      `  DO:Room/"r1" SQL: UPDATE reservations SET status = 'confirmed' WHERE user = ? ["ada"] -> 1 changed`,
      "req-1#1/0 returned true",
      "req-1#1 effect #1 D1:DB run: proceed",
      `  D1 DB: INSERT INTO bookings (user) VALUES (?1) ["ada"] -> 1 changed`,
      "req-1#1 answered 200 confirmed",
      FINAL_STATE,
      `  DO:Room/"r1" SQL: SELECT id, user FROM reservations WHERE status = 'released' -> 1 row (1, "ada")`,
    ]);
    const culprits = findCulprits(
      'reservation #1 of "ada" was confirmed and is now released',
      steps,
      finalReads,
    );
    expect([...culprits.statements].map(([s, why]) => [s.db, s.params, why])).toEqual([
      ['DO:Room/"r1"', ['"ada"'], '"ada" named by the invariant'],
    ]);
  });
});

describe("pages without a counterexample", () => {
  it("BOUNDED says what was covered", async () => {
    const result = await check(join(examples, "service-binding/checkout.fixed.sim.ts"));
    expect(result.verdict).toBe("BOUNDED");
    const page = text(renderHtml(result));
    expect(page).toContain("BOUNDED checkout");
    expect(page).toMatch(/Every schedule within the bounds ran and no invariant broke: \d+ schedules in /);
    expect(page).toContain("Every placement of at most 1 fault per run, at every effect of every invocation");
    expect(page).toMatch(/maxFaultsPerRun\s*1/);
  });

  it("INCOMPLETE says the budget ran out and that this is not a proof", () => {
    const page = text(
      renderHtml({
        verdict: "INCOMPLETE",
        reason: "budget",
        strategy: "exhaustive",
        runs: 120,
        scenario: "checkout",
        file: "checkout.sim.ts",
        seed: "checkout",
        elapsedMs: 2000,
        bounds: { maxFaultsPerRun: 2, maxRedeliveries: 3, maxConcurrentInvocations: 1, budgetMs: 2000 },
      } as CheckResult),
    );
    expect(page).toContain("INCOMPLETE checkout");
    expect(page).toContain("The budget of 2000 ms ran out after 120 schedules");
    expect(page).toContain("this is not a proof");
    // No run of it to replay.
    expect(page).not.toContain("Replay the run with the command above");
  });

  it("say how sampling covered the space, and what partial-order reduction rests on", () => {
    const bounds = { maxFaultsPerRun: 1, maxRedeliveries: 3, maxConcurrentInvocations: 2, budgetMs: 2000 };
    const header = {
      scenario: "checkout",
      file: "checkout.sim.ts",
      seed: "checkout",
      elapsedMs: 2000,
      bounds,
    };
    const sampledPage = text(
      renderHtml({
        ...header,
        verdict: "INCOMPLETE",
        reason: "budget",
        runs: 300,
        strategy: "pct",
        distinctSchedules: 280,
        switchedAfterRuns: 98,
      } as CheckResult),
    );
    expect(sampledPage).toContain(
      "Sampled by PCT (probabilistic concurrency testing), after 98 exhaustive runs showed the tree is larger than the budget covers: 280 distinct schedules.",
    );
    const reduced = text(
      renderHtml({ ...header, verdict: "BOUNDED", runs: 78, partialOrderReduction: true } as CheckResult),
    );
    expect(reduced).toContain(
      "(partial-order reduction), and no run changed a module-level variable of the Workers' own files",
    );
  });
});

describe("escaping", () => {
  const evil = `<script>alert(1)</script><img src=x onerror="alert(2)">'&`;
  const result = {
    verdict: "VIOLATED",
    scenario: `shop${evil}`,
    file: `/tmp/${evil}.sim.ts`,
    seed: evil,
    elapsedMs: 10,
    bounds: { maxFaultsPerRun: 1, maxRedeliveries: 3, maxConcurrentInvocations: 1, budgetMs: 1000 },
    runs: 3,
    shrinkRuns: 2,
    invariant: `inv${evil}`,
    // The engine prints a shared text value as JSON, as it prints parameters.
    message: `2 rows of t in D1:DB share k = ${JSON.stringify(evil)}`,
    runSeed: `1:2:${evil}`,
    eventsKept: [evil],
    faults: [{ kind: "crash_after", invocation: `req-1#1`, effect: 0, label: `Service:P${evil} m` }],
    trace: [
      "deliver req-1#1",
      `req-1#1 effect #0 Service:P${evil} m: crash_after`,
      `req-1#1/0 effect #0 D1:DB run: proceed`,
      `  D1 DB: INSERT INTO t (k) VALUES (?1) /*${evil}*/ [${JSON.stringify(evil)}] -> 1 changed`,
      `req-1#1/0 returned ${JSON.stringify({ html: evil })}`,
      "req-1#1 died",
      "redeliver req-1#2",
      "deliver req-1#2",
      `req-1#2 threw Error: ${evil}`,
      `req-1#2 answered 500 ${evil}`,
      `a line nobody knows ${evil}`,
      `  D1 DB: SELECT '${evil}' -> 1 row (${JSON.stringify(evil)})`,
    ],
  } as CheckResult;
  const html = renderHtml(result);

  it("shows a Worker's markup as text and never as markup", () => {
    expectOnlyOurMarkup(html);
    expectSelfContained(html);
    expect(html).not.toContain(evil);
    expect(html).toContain(
      "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=&quot;alert(2)&quot;&gt;&#39;&amp;",
    );
    // Everything is still there for the reader, as text.
    const page = text(html);
    expect(page).toContain(`shop${evil}`);
    expect(page).toContain(`Error: ${evil}`);
    expect(page).toContain(`a line nobody knows ${evil}`);
    expect(page).toContain(`row with k = ${JSON.stringify(evil)}`);
  });

  it("escapes every verdict's page", () => {
    const bounded = renderHtml({ ...result, verdict: "BOUNDED", runs: 1 } as CheckResult);
    const held = renderHtml({ ...result, verdict: "HELD" } as CheckResult);
    for (const html of [bounded, held]) {
      expectOnlyOurMarkup(html);
      expect(html).not.toContain(evil);
    }
  });
});

describe("a long run", () => {
  it("draws at most 40 lifelines and says where the rest of the run is", () => {
    const trace: string[] = [];
    for (let i = 1; trace.length < 10_000; i++) {
      trace.push(
        `deliver req-${i}#1`,
        `req-${i}#1 effect #0 D1:DB run: proceed`,
        `req-${i}#1 answered 200 ok`,
      );
    }
    const html = renderHtml({
      verdict: "HELD",
      scenario: "long",
      file: "long.sim.ts",
      seed: "long",
      elapsedMs: 1,
      bounds: { maxFaultsPerRun: 1, maxRedeliveries: 1, maxConcurrentInvocations: 1, budgetMs: 1 },
      runSeed: "1:2:3",
      trace,
    } as CheckResult);
    expect(lifelines(html)).toHaveLength(40);
    expect(text(html)).toMatch(/… \d+ more steps: see the full trace below\./);
    expect(text(html)).toContain("req-3333#1 answered 200 ok");
  });
});

describe("reading the trace", () => {
  it("splits a D1 line whose SQL has its own ' -> ' and ' [' at the right places", () => {
    const s = parseStatement(
      `  D1 payments/DB batch[1]: SELECT data -> '$.a' AS [x -> y] FROM t WHERE k = ?1 ["a, b] -> 2", null, x'00ff', -1.5] -> 1 row ("v")`,
    );
    expect(s).toEqual({
      db: "payments/DB",
      part: "batch[1]",
      sql: "SELECT data -> '$.a' AS [x -> y] FROM t WHERE k = ?1",
      params: ['"a, b] -> 2"', "null", "x'00ff'", "-1.5"],
      result: '1 row ("v")',
    });
  });

  it("keeps a queue's bookkeeping with its batch and gives the invariants' reads apart", () => {
    const { steps, finalReads } = parseTrace([
      "deliver batch-1#1",
      "batch-1#1 succeeded on queue q: acked 1, retried 0",
      "  D1 queue:q: SELECT 1 -> 1 row (1)",
      "  D1 DB: SELECT id FROM accounts -> 1 row (1)",
    ]);
    expect(steps.map((s) => s.kind)).toEqual(["deliver", "batch-end"]);
    expect(steps[1]?.statements.map((s) => s.db)).toEqual(["queue:q"]);
    expect(finalReads.map((s) => s.sql)).toEqual(["SELECT id FROM accounts"]);
  });

  it("draws no step of its own for a callee starting, and keeps its storage calls with the call that hosts it", () => {
    const { steps } = parseTrace([
      "deliver req-1#1",
      "req-1#1 effect #0 DO:VISITS visit: proceed",
      "host req-1#1/0",
      '  DO:Visits/"home" storage.get("visits") -> 1',
      "req-1#1/0 returned 1",
    ]);
    expect(steps.map((s) => s.kind)).toEqual(["deliver", "effect", "returned"]);
    expect(steps[1]?.statements.map((s) => s.sql)).toEqual(['storage.get("visits")']);
  });

  it("keeps an outbound fetch's status with the effect that made it, and draws it there", async () => {
    const { steps } = parseTrace([
      "deliver batch-1#1",
      "batch-1#1 effect #0 fetch POST https://mail.example/v1/send: proceed",
      "  Fetch:https://mail.example POST /v1/send -> 503",
      "batch-1#1 finished",
    ]);
    expect(steps.map((s) => s.kind)).toEqual(["deliver", "effect", "finished"]);
    expect(steps[1]?.statements).toEqual([
      { db: "Fetch:https://mail.example", part: "", sql: "POST /v1/send", params: [], result: "503" },
    ]);
    // The outbound-fetch example's page shows each status under its fetch, not folded away.
    const page = renderHtml(await violated("outbound-fetch/pay.sim.ts"));
    expect(page).toMatch(
      /effect #\d+<\/span> <b>POST \/v1\/charges<\/b><div class="stmt"><code class="sql">POST \/v1\/charges<\/code> <span class="res">→ 200<\/span>/,
    );
    // The trace's own line stays in the full trace at the end, and nowhere else as a note.
    expect(text(page.split("The full trace")[0] ?? "")).not.toContain("Fetch:");
  });

  it("draws a death the trace says more of, and says what", async () => {
    const result = await check(new URL("./fixtures/callee-crash/pay.sim.ts", import.meta.url).pathname);
    expect(result.verdict).toBe("VIOLATED");
    expect(text(renderHtml(result))).toContain(
      "req-1#1 died (with its callee req-1#1/0: a service binding runs both on one thread): it never answers",
    );
  });
});

/** Chromium, when installed (scripts/setup.sh installs it; CI runs setup.sh). */
const chromium =
  spawnSync("sh", ["-c", "command -v chromium || command -v chromium-browser"], {
    encoding: "utf8",
  }).stdout.trim() || undefined;
if (!chromium) {
  console.warn(
    "html.test.ts: chromium is not installed, so the screenshot test is skipped; run scripts/setup.sh",
  );
}

describe.skipIf(!chromium)("the page in headless Chromium", () => {
  const dir = mkdtempSync(join(tmpdir(), "eutaxy-html-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  function runChromium(args: string[]): string {
    const profile = mkdtempSync(join(dir, "profile-"));
    const run = spawnSync(
      chromium as string,
      [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        `--user-data-dir=${profile}`,
        ...args,
      ],
      { encoding: "utf8", timeout: 60_000, maxBuffer: 64 * 1024 * 1024 },
    );
    if (run.status !== 0) throw new Error(`chromium exited ${run.status}: ${run.stderr}`);
    return run.stdout;
  }

  it("renders the service-binding counterexample to a readable, non-blank screenshot", async () => {
    const result = await violated("service-binding/checkout.sim.ts");
    const page = join(dir, "checkout.html");
    const png = join(dir, "checkout.png");
    writeFileSync(page, renderHtml(result));
    runChromium([`--screenshot=${png}`, "--window-size=1400,1000", `file://${page}`]);

    expect(existsSync(png)).toBe(true);
    const image = readPng(readFileSync(png));
    expect([image.width, image.height]).toEqual([1400, 1000]);
    // Not blank: many colours, and the page's own colours are on screen in the first view: the
    // red of the fault marker and the verdict, the pink band of the fault's row, the amber band
    // of a charge's row and the blue of the invocations' lifelines.
    const colours = new Set<number>();
    for (let i = 0; i < image.pixels.length && colours.size < 64; i += image.channels * 7) {
      colours.add(
        ((image.pixels[i] as number) << 16) |
          ((image.pixels[i + 1] as number) << 8) |
          (image.pixels[i + 2] as number),
      );
    }
    expect(colours.size).toBeGreaterThanOrEqual(64);
    expect(countColour(image, [0xd1, 0x24, 0x2f])).toBeGreaterThan(500);
    expect(countColour(image, [0xff, 0xeb, 0xe9], 6)).toBeGreaterThan(5_000);
    expect(countColour(image, [0xff, 0xf8, 0xc5], 6)).toBeGreaterThan(5_000);
    expect(countColour(image, [0xb6, 0xe3, 0xff], 8)).toBeGreaterThan(500);
  });

  it("has the diagram's lifelines, the fault marker and the invariant in the rendered DOM", async () => {
    const result = await violated("service-binding/checkout.sim.ts");
    const page = join(dir, "checkout-dom.html");
    writeFileSync(page, renderHtml(result));
    const dom = runChromium(["--dump-dom", `file://${page}`]);
    expect(lifelines(dom)).toEqual([
      "Client",
      "req-2#1",
      "req-2#1/0",
      "req-2#2",
      "req-2#2/0",
      "D1:payments/DB",
    ]);
    expect(dom.match(/<div class="life life-invocation"/g)).toHaveLength(4);
    expect(dom).toContain('<span class="x x-from" title="crash_after">✕</span>');
    expect(dom).toContain("✕ fault: crash_after");
    expect(text(dom)).toContain(
      'Invariant one-charge-per-order is violated: 2 rows of charges in D1:payments/DB share order_id = "o-2"',
    );
  });
});
