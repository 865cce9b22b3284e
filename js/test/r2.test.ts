/**
 * R2 (js/test/fixtures/r2): an upload to a bucket and the D1 row that records it, written as two
 * steps. A crash between them leaves an object no row points to, which the check finds and names;
 * the Worker that records the file as pending first, uploads, then marks it done is BOUNDED. Two
 * requests that look for a key and then write it race; a put with `onlyIf` does not. A second
 * write to a key within the second may get R2's 429, which a Worker must wait out. A
 * run's object versions come from its seed, so a replay answers the same. What eutaxy does not
 * simulate of R2 (multipart uploads) ends the check as bad input.
 */

import { describe, expect, it } from "vitest";
import { renderHtml } from "../src/html.ts";
import { check, InputError, renderReport } from "../src/index.ts";
import { renderTrace } from "../src/trace.ts";
import { project } from "./files.ts";
import { violated } from "./verdict.ts";

const fixture = (path: string) => new URL(`./fixtures/r2/${path}`, import.meta.url).pathname;

describe("an upload to R2 and its row in D1", () => {
  it("finds the orphan a crash between the upload and the insert leaves, and names the crash", async () => {
    const result = violated(await check(fixture("upload.sim.ts")));
    expect(result.invariant).toBe("every-object-has-its-row");
    expect(result.message).toBe("objects without a row in files: files/report.txt");
    expect(result.faults).toEqual([
      { kind: "crash_before", invocation: "req-1#1", effect: 1, label: "D1:DB run" },
    ]);
    expect(renderReport(result)).toContain("crash_before at req-1#1 effect #1 (D1:DB run)");
    // The upload is an effect of its own, traced as the binding's call.
    const put = result.trace.indexOf("req-1#1 effect #0 R2:FILES put: proceed");
    expect(put).toBeGreaterThanOrEqual(0);
    expect(result.trace[put + 1]).toMatch(
      /^ {2}R2:FILES put "files\/report\.txt" "quarterly numbers" -> version [0-9a-f]{8}$/,
    );
  });

  it("draws the bucket as a lifeline of its own on the HTML page, with the upload on it", async () => {
    const html = renderHtml(violated(await check(fixture("upload.sim.ts"))));
    const heads = [
      ...html.matchAll(/<div class="head head-\w+"[^>]*><b>([^<]*)<\/b><small>([^<]*)<\/small>/g),
    ].map((m) => `${m[1]}: ${m[2]}`);
    expect(heads).toContain("R2:FILES: R2 bucket");
    expect(html.replace(/<[^>]+>/g, "")).toContain(
      "put &quot;files/report.txt&quot; &quot;quarterly numbers&quot;",
    );
  });

  it("replays the run seed with the same trace, object versions included", async () => {
    const found = violated(await check(fixture("upload.sim.ts")));
    const replayed = violated(await check(fixture("upload.sim.ts"), { replay: found.runSeed }));
    expect(replayed.trace).toEqual(found.trace);
    // The version the trace shows is the seed's: a second check draws the same.
    const again = violated(await check(fixture("upload.sim.ts")));
    expect(again.trace).toEqual(found.trace);
  });

  it("holds when the row goes in first as pending and is marked done after the upload", async () => {
    const result = await check(fixture("upload.fixed.sim.ts"));
    expect(result.verdict).toBe("BOUNDED");
  });
});

describe("two requests claiming one key", () => {
  it("finds the race between a head that found nothing and the put after it", async () => {
    const result = violated(await check(fixture("claim.sim.ts")));
    expect(result.message).toBe("told 201 but not the owner (ada@example.com): mallory@example.com");
    expect(result.faults).toEqual([]);
    expect(result.trace.filter((line) => /^req-\S+ effect #\d/.test(line))).toEqual([
      "req-1#1 effect #0 R2:HANDLES head: proceed",
      "req-2#1 effect #0 R2:HANDLES head: proceed",
      "req-2#1 effect #1 R2:HANDLES put: proceed",
      "req-1#1 effect #1 R2:HANDLES put: proceed",
    ]);
  });

  it("lists the run step by step with each call under its effect, and the invariant's read after the last step", async () => {
    const result = violated(await check(fixture("claim.sim.ts")));
    const lines = renderTrace(result.trace).split("\n");
    expect(lines.slice(-2)).toEqual([
      "after the last step (the invariants read the final state):",
      '  R2:HANDLES "handles/ada" is "ada@example.com"',
    ]);
    expect(lines).toContain('    R2:HANDLES head "handles/ada" -> null');
  });

  it("holds with a put conditional on no object having the key, in either order", async () => {
    const result = await check(fixture("claim.fixed.sim.ts"));
    expect(result.verdict).toBe("BOUNDED");
    // The two puts write one bucket: both orders run.
    if (result.verdict === "BOUNDED") expect(result.runs).toBe(2);
  });
});

describe("R2's limit of one write a second to one key", () => {
  it("answers a second save of one key within the second with R2's 429, named rate_limited", async () => {
    const result = violated(await check(fixture("avatar.sim.ts")));
    expect(result.message).toBe("req-2 answered 500: ");
    expect(result.faults).toEqual([
      { kind: "transient_error", invocation: "req-2#1", effect: 0, label: "R2:FILES put" },
    ]);
    expect(renderReport(result)).toContain("rate_limited at req-2#1 effect #0 (R2:FILES put)");
    expect(result.trace).toContain(
      "req-2#1 effect #0 failed: Error: put: Reduce your concurrent request rate for the same object. (10058)",
    );
    expect(renderHtml(result).replace(/<[^>]+>/g, "")).toContain(
      "R2 refuses the write with a 429: the key was written less than a second earlier.",
    );
  });

  it("holds when the Worker waits a second and tries again", async () => {
    expect((await check(fixture("avatar.fixed.sim.ts"))).verdict).toBe("BOUNDED");
  });
});

describe("the final state of a bucket", () => {
  it("refuses an invariant that reads a bucket the scenario does not bind, naming the ones it does", async () => {
    const dir = project({
      "s.sim.ts": `import { d1Schema, defineScenario, http, invariant } from "eutaxy/cloudflare";
        export default defineScenario({
          name: "typo",
          worker: { entry: "${fixture("upload.ts")}", config: "${fixture("wrangler.jsonc")}" },
          setup: [d1Schema("DB", "${fixture("schema.sql")}")],
          drive: http([{ path: "/upload", method: "POST", body: "x" }]),
          invariants: [invariant("reads", (state) => state.r2Keys("FILE").length >= 0)],
        });`,
    });
    const error = await check(`${dir}/s.sim.ts`).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).message).toMatch(
      /invariant reads: it reads R2 binding FILE, which the scenario does not have; the R2 bindings are FILES$/,
    );
  });
});

describe("r2Objects: a bucket that holds objects before the runs", () => {
  it("gives every run the objects, with their etag and the clock's start as their upload", async () => {
    // The invariant compares what the Worker served, and reads the bucket's keys and texts.
    expect((await check(fixture("serve.sim.ts"))).verdict).toBe("BOUNDED");
  });

  const scenarioWith = (step: string) => {
    const dir = project({
      "s.sim.ts": `import { defineScenario, http, invariant, r2Objects } from "eutaxy/cloudflare";
        export default defineScenario({
          name: "bad-objects",
          worker: { entry: "${fixture("serve.ts")}", config: "${fixture("wrangler.serve.jsonc")}" },
          setup: [${step}],
          drive: http([{ path: "/x" }]),
          invariants: [invariant("i", () => true)],
        });`,
    });
    return `${dir}/s.sim.ts`;
  };
  const refusal = async (file: string) => {
    const error = await check(file).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(InputError);
    return (error as InputError).message;
  };

  it("refuses a bucket no Worker binds, a key over 1024 bytes, a value that is not text", async () => {
    expect(await refusal(scenarioWith(`r2Objects("FILE", { a: "1" })`))).toMatch(
      /s\.sim\.ts: setup\[0\]: r2Objects\("FILE"\) names R2 binding "FILE", but no Worker in the scenario binds it; the R2 bindings are FILES$/,
    );
    expect(await refusal(scenarioWith(`r2Objects("FILES", { ["k".repeat(1025)]: "1" })`))).toMatch(
      /is 1025 bytes long, over R2's 1024$/,
    );
    expect(await refusal(scenarioWith(`r2Objects("FILES", { k: 1 })`))).toMatch(
      /setup\[0\]\.objects\.k must be a string, the object's text/,
    );
  });
});

describe("what eutaxy does not simulate of R2", () => {
  it("ends the check at a multipart upload, naming the Worker, rather than answer a made-up upload", async () => {
    const error = await check(fixture("multipart.sim.ts")).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).message).toMatch(
      /r2\/multipart\.ts: Worker multipart used R2 multipart uploads \(createMultipartUpload\(\)\), which eutaxy does not simulate yet; the check cannot go on without it$/,
    );
  });
});

describe("R2 inside workerd", () => {
  it("gives the same counterexample, trace and all, as in Node", async () => {
    const node = violated(await check(fixture("upload.sim.ts")));
    const workerd = violated(await check(fixture("upload.sim.ts"), { runtime: "workerd" }));
    expect(workerd.runSeed).toBe(node.runSeed);
    expect(workerd.trace).toEqual(node.trace);
    expect((await check(fixture("upload.fixed.sim.ts"), { runtime: "workerd" })).verdict).toBe("BOUNDED");
  }, 60_000);
});
