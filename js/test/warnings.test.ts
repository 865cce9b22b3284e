/**
 * A verdict that found nothing says so when its runs could not have found much
 * (js/test/fixtures/warnings): no run reached a binding, no request got an answer below 500, or
 * the bounds stopped retries the platform would make.
 * The verdict and exit code stay what the runs earned; the report adds a warning.
 */

import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { type CheckResult, check, renderReport } from "../src/index.ts";
import { mergeResults } from "../src/merge.ts";
import { violated } from "./verdict.ts";

const fixture = (name: string) => join(dirname(fileURLToPath(import.meta.url)), "fixtures", "warnings", name);

function kinds(result: CheckResult): string[] {
  return "warnings" in result ? (result.warnings ?? []).map((w) => w.kind) : [];
}

describe("a verdict's warnings", () => {
  it("say that a Worker threw before any binding call, quoting what it threw", async () => {
    const result = await check(fixture("broken.sim.ts"));
    expect(result.verdict).toBe("BOUNDED");
    expect(kinds(result)).toEqual(["no-binding-call", "no-request-succeeded"]);
    const report = renderReport(result);
    expect(report).toContain("Warning: No run reached a binding call");
    expect(report).toContain("(first: req-1#1 threw SyntaxError: ");
  });

  it("leave out what partial-order reduction rests on when no run reached a binding", async () => {
    const result = await check(fixture("echo.concurrent.sim.ts"));
    expect(kinds(result)).toEqual(["no-binding-call"]);
    expect(result).toMatchObject({ verdict: "BOUNDED", partialOrderReduction: true });
    expect(renderReport(result)).not.toContain("partial-order reduction");
  });

  it("say that no run reached a binding, when the requests answered without one, quoting the first answer", async () => {
    const result = await check(fixture("echo.sim.ts"));
    expect(kinds(result)).toEqual(["no-binding-call"]);
    // What the Worker answered says why (a 404 for a request sent as GET by mistake).
    expect(renderReport(result)).toContain(
      'No run reached a binding call (first: req-1#1 answered 200 "{\\"id\\":\\"n-1\\",\\"text\\":\\"first\\"}"), so',
    );
  });

  it("say that every answer was a 5xx, quoting the first", async () => {
    const result = await check(fixture("unavailable.sim.ts"));
    expect(kinds(result)).toEqual(["no-request-succeeded"]);
    expect(renderReport(result)).toContain('(first: req-1#1 answered 503 "try later")');
  });

  it("say that every answer was a 4xx or 5xx, when some were 4xx, quoting the first", async () => {
    // Each request reached the database, under a key the notes were never stored under.
    const result = await check(fixture("lookup.sim.ts"));
    expect(result.verdict).toBe("BOUNDED");
    expect(kinds(result)).toEqual(["no-request-succeeded"]);
    expect(renderReport(result)).toContain(
      'Warning: No request got a 2xx or 3xx answer in any run (first: req-1#1 answered 404 "no such note"), so the invariants held over a Worker that refused every request: are the requests the ones it serves?',
    );
  });

  it("are absent when the requests reached the database and succeeded", async () => {
    const result = await check(fixture("saved.sim.ts"));
    expect(result.verdict).toBe("BOUNDED");
    expect(result).not.toHaveProperty("warnings");
    expect(renderReport(result)).not.toContain("Warning");
  });

  it("say that the bounds stopped the platform's retries short of the dead letter queue", async () => {
    const result = await check(fixture("poison.sim.ts"));
    expect(result.verdict).toBe("BOUNDED");
    expect(kinds(result)).toContain("platform-retries-cut");
    expect(renderReport(result)).toContain("maxRedeliveries 5 covers them.");
    // With those retries, the dead-lettering the warning spoke of is found.
    expect((await check(fixture("poison.retries.sim.ts"))).verdict).toBe("VIOLATED");
  });

  it("say so of a counterexample that broke only because the bounds stopped the platform's retries", async () => {
    const result = violated(await check(fixture("poison.cut.sim.ts")));
    expect(result.warnings).toEqual([
      {
        kind: "platform-retries-cut",
        message:
          "maxRedeliveries stopped the platform's retries in this run: Cloudflare would deliver batch-1 a 3rd time, and up to 6 times in all, so what broke may be what those retries would mend (more retries, dead-lettering). maxRedeliveries 5 covers them.",
      },
    ]);
    expect(renderReport(result)).toContain(
      "Warning: maxRedeliveries stopped the platform's retries in this run",
    );
    // A counterexample whose run had every retry Cloudflare makes carries none.
    expect(violated(await check(fixture("poison.retries.sim.ts"))).warnings).toBeUndefined();
  });

  it("say that a queue's consumer threw at every batch, which no request answer shows", async () => {
    // A consumer bound to the wrong database fails the same way: BOUNDED, and nothing else
    // would tell that the invariants were never checked against a batch that went through.
    const result = await check(fixture("poison.sim.ts"));
    expect(result.verdict).toBe("BOUNDED");
    const warning =
      "warnings" in result ? result.warnings?.find((w) => w.kind === "no-work-succeeded") : undefined;
    expect(warning?.message).toBe(
      "No batch of queue orders ran without an exception in any run (first: batch-1#1 threw Error: cannot parse 1 message(s)), so the invariants held over a handler that fails every time.",
    );
    const shards = [0, 1].map((index) => ({ index, count: 2 }));
    const parts: CheckResult[] = [];
    for (const shard of shards) parts.push(await check(fixture("poison.sim.ts"), { shard }));
    const merged = mergeResults(parts, ["1", "2"]) as CheckResult;
    expect(kinds(merged)).toContain("no-work-succeeded");
    // A consumer that gets through its batches gives none (consumer.test.ts: the fixed orders).
  });

  it("say that a session that may read a replica read the primary", async () => {
    const result = await check(fixture("replica.sim.ts"));
    expect(result.verdict).toBe("BOUNDED");
    expect("warnings" in result ? result.warnings : undefined).toEqual([
      {
        kind: "replica-reads",
        message:
          "Worker notes's DB opened a D1 session that may read a replica (withSession() or \"first-unconstrained\"), and eutaxy's D1 has no replicas: every read came from the primary, so what a replica lagging behind would have answered was not checked.",
      },
    ]);
  });

  it("say that an event waited for the invocation before it, one at a time", async () => {
    const result = await check(fixture("slow.sim.ts"));
    expect(result.verdict).toBe("BOUNDED");
    expect("warnings" in result ? result.warnings : undefined).toEqual([
      {
        kind: "event-delivered-late",
        message:
          "In 1 of 1 run an event was delivered late (req-2, 4 s after the driver sent it): the invocations before it held every place maxConcurrentInvocations gives, so no run had it overlap them. A larger maxConcurrentInvocations checks it beside them.",
      },
    ]);
  });

  it("say when a request sent at a time of its own raced nothing, as what came before was over", async () => {
    const result = await check(fixture("apart.concurrent.sim.ts"));
    expect(result.verdict).toBe("BOUNDED");
    expect("warnings" in result ? result.warnings : undefined).toEqual([
      {
        kind: "sent-apart",
        message:
          "In no run did req-2 (sent at 50 ms) overlap another invocation: a binding call takes 1 ms of the run's clock, so what came before was over by then, and maxConcurrentInvocations had nothing to interleave it with. To check requests racing, send them at the same atMs (a duplicate delivery, a double click); one sent later to let a lease or a window run out does not race.",
      },
    ]);
  });

  it("say nothing of an event a schedule made late by firing a timer while it could have started it", async () => {
    // Two at once: the third note finds a place free at its time unless the schedule fires the
    // first one's five-second timer before starting the second, and other runs start it first.
    const result = await check(fixture("slow.concurrent.sim.ts"));
    expect(result.verdict).toBe("BOUNDED");
    expect(kinds(result)).toEqual([]);
  });

  it("survive a merge only when every shard gives them", async () => {
    const echo = [
      await check(fixture("echo.sim.ts"), { shard: { index: 0, count: 2 } }),
      await check(fixture("echo.sim.ts"), { shard: { index: 1, count: 2 } }),
    ];
    expect(kinds(mergeResults(echo, ["1", "2"]) as CheckResult)).toEqual(["no-binding-call"]);
    const [first, second] = echo as [CheckResult, CheckResult];
    const { warnings: _dropped, ...quiet } = second as Extract<CheckResult, { verdict: "BOUNDED" }>;
    expect(kinds(mergeResults([first, quiet], ["1", "2"]) as CheckResult)).toEqual([]);
    // Nor when a shard is missing: its runs might have reached a binding.
    expect(kinds(mergeResults([first], ["1"]) as CheckResult)).toEqual([]);
  });

  it("keep a module's state kept between requests, said of some run, from any shard", async () => {
    const dedupe = join(dirname(fileURLToPath(import.meta.url)), "fixtures", "module-state", "dedupe.sim.ts");
    const parts: CheckResult[] = [];
    for (const index of [0, 1]) parts.push(await check(dedupe, { shard: { index, count: 2 } }));
    const said = parts.filter((p) => kinds(p).includes("isolate-state"));
    expect(said.length).toBeGreaterThan(0);
    expect(kinds(mergeResults(parts, ["1", "2"]) as CheckResult)).toEqual(["isolate-state"]);
    expect(kinds(mergeResults([said[0] as CheckResult], ["1"]) as CheckResult)).toEqual(["isolate-state"]);
  });

  it("keep the cut retries of any shard, even with a shard missing", async () => {
    const shards = [0, 1].map((index) => ({ index, count: 2 }));
    const parts: CheckResult[] = [];
    for (const shard of shards) parts.push(await check(fixture("poison.sim.ts"), { shard }));
    const cut = parts.filter((p) => kinds(p).includes("platform-retries-cut"));
    expect(cut.length).toBeGreaterThan(0);
    expect(kinds(mergeResults([cut[0] as CheckResult], ["1"]) as CheckResult)).toContain(
      "platform-retries-cut",
    );
  });
});
