/**
 * One check split into shards, as a CI matrix runs it: the shards together cover the schedules
 * of the unsplit check, and their merged verdict is the unsplit verdict.
 */

import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Ajv } from "ajv";
import { describe, expect, it } from "vitest";
import { type CheckResult, check } from "../src/index.ts";
import { mergeResults } from "../src/merge.ts";
import { tempFolder } from "./files.ts";

const root = new URL("../../", import.meta.url).pathname;
const example = (file: string) => `${root}examples/service-binding/${file}`;

async function shards(file: string, count: number): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  for (let index = 0; index < count; index++)
    results.push(await check(example(file), { shard: { index, count } }));
  return results;
}

describe("shards", () => {
  it("cover, together, the schedules of the unsplit check, and merge to its BOUNDED", async () => {
    const whole = await check(example("checkout.fixed.sim.ts"));
    const parts = await shards("checkout.fixed.sim.ts", 3);
    expect(whole.verdict).toBe("BOUNDED");
    for (const [index, part] of parts.entries()) {
      expect(part.verdict).toBe("BOUNDED");
      expect(part.shard).toEqual({ index, count: 3 });
    }
    const merged = mergeResults(parts, ["1", "2", "3"]);
    expect(merged.verdict).toBe("BOUNDED");
    if (merged.verdict !== "BOUNDED" || whole.verdict !== "BOUNDED") return;
    // Every shard also runs the top of the tree it shares with the others (src/shard.rs), so the
    // shards' runs add up to at least the unsplit check's; that each leaf has exactly one owner
    // is the engine's own test.
    expect(merged.runs).toBeGreaterThanOrEqual(whole.runs);
  });

  it("merge to the unsplit VIOLATED, with the same invariant and message", async () => {
    const whole = await check(example("checkout.sim.ts"));
    const merged = mergeResults(await shards("checkout.sim.ts", 2), ["1", "2"]);
    expect(merged.verdict).toBe("VIOLATED");
    if (merged.verdict !== "VIOLATED" || whole.verdict !== "VIOLATED") return;
    expect(merged.invariant).toBe(whole.invariant);
    expect(merged.message).toBe(whole.message);
  });

  it("merge to INCOMPLETE when a shard is missing", async () => {
    const parts = await shards("checkout.fixed.sim.ts", 3);
    const merged = mergeResults([parts[0], parts[2]] as CheckResult[], ["1", "3"]);
    expect(merged.verdict).toBe("INCOMPLETE");
    if (merged.verdict === "INCOMPLETE") {
      expect(merged.reason).toBe("shards");
      expect(merged.missing).toEqual([1]);
    }
  });

  it("merge to INCOMPLETE when some saw module-level state change and others did not", async () => {
    // Each shard that sees a Worker's module-level variable change explores its part again with
    // every answer a step of its own; one that saw none explored its part of the other tree.
    const numbering = `${root}js/test/fixtures/module-state/numbering.fixed.sim.ts`;
    const parts: CheckResult[] = [];
    for (let index = 0; index < 2; index++)
      parts.push(await check(numbering, { shard: { index, count: 2 } }));
    const [first, second] = parts as [CheckResult, CheckResult];
    expect(first.verdict).toBe("BOUNDED");
    expect("warnings" in first && first.warnings?.map((w) => w.kind)).toContain("module-state");
    expect(mergeResults(parts, ["1", "2"]).verdict).toBe("BOUNDED");
    const unaware = { ...second, warnings: [] } as CheckResult;
    const merged = mergeResults([first, unaware], ["1", "2"]);
    expect(merged).toMatchObject({ verdict: "INCOMPLETE", reason: "answers", unsplit: [1] });
    // As `eutaxy merge --json` prints it, it follows the schema.
    const schema = JSON.parse(readFileSync(`${root}docs/eutaxy.check.v1.schema.json`, "utf8"));
    const validate = new Ajv({ allErrors: true }).compile(schema);
    expect(validate({ schema: "eutaxy.check/1", ...merged }), JSON.stringify(validate.errors)).toBe(true);
  });

  it("refuse to merge shards of different trees, or one shard twice", async () => {
    const parts = await shards("checkout.fixed.sim.ts", 2);
    const [first, second] = parts as [CheckResult, CheckResult];
    const otherBounds = { ...second, bounds: { ...second.bounds, maxFaultsPerRun: 0 } } as CheckResult;
    expect(() => mergeResults([first, otherBounds], ["a.json", "b.json"])).toThrow(
      "this result was checked with maxFaultsPerRun 0, not 1 as a.json was",
    );
    expect(() => mergeResults([first, first], ["a.json", "b.json"])).toThrow(
      "shard 1 is given twice (also as a.json)",
    );
    // A different budget splits the same tree.
    const otherBudget = { ...second, bounds: { ...second.bounds, budgetMs: 1 } } as CheckResult;
    expect(mergeResults([first, otherBudget], ["a.json", "b.json"]).verdict).toBe("BOUNDED");
  });

  it("work from the command line: --shard I/N with --json, then eutaxy merge", () => {
    const dir = tempFolder("eutaxy-shards-");
    const cli = (args: string[]) =>
      spawnSync(process.execPath, [`${root}js/bin/eutaxy.js`, ...args], {
        cwd: `${root}examples/service-binding`,
        encoding: "utf8",
      });
    const files = [1, 2].map((i) => {
      const run = cli(["check", "./checkout.fixed.sim.ts", "--shard", `${i}/2`, "--json"]);
      expect(run.status).toBe(0);
      const file = join(dir, `shard-${i}.json`);
      writeFileSync(file, run.stdout);
      return file;
    });
    const merged = cli(["merge", ...files]);
    expect(merged.status).toBe(0);
    expect(merged.stdout.split("\n")[0]).toBe(
      "BOUNDED  checkout-fixed  (seed checkout-fixed), 2 shards merged",
    );
    // The bounds it holds within, as one process's report says them.
    expect(merged.stdout).toContain(
      "Bounds: maxFaultsPerRun 1, maxRedeliveries 3, maxConcurrentInvocations 1, budgetMs 2000.",
    );
    const partial = cli(["merge", files[0] as string]);
    expect(partial.status).toBe(3);
    expect(partial.stdout).toMatch(/shard 2\/2 missing/);
    expect(cli(["check", "./checkout.fixed.sim.ts", "--shard", "3/2"]).status).toBe(2);
  });
});
