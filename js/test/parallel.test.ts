/**
 * `--workers N` as a user runs it (the built CLI, whose worker threads load js/dist): one check
 * split into N shards on one machine, with the verdict `--shard 1/N` … `N/N` and `eutaxy merge`
 * give, whatever the threads' timing. Also the options that choose the search strategy.
 */

import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { Ajv } from "ajv";
import { describe, expect, it } from "vitest";
import { type CheckResult, check } from "../src/index.ts";
import { mergeResults } from "../src/merge.ts";
import { decidingEndings, type Ending, firstDecisive } from "../src/parallel.ts";

const root = new URL("../../", import.meta.url).pathname;
const examples = `${root}examples/service-binding`;

type Run = { readonly code: number | null; readonly stdout: string; readonly stderr: string };

function eutaxy(args: string[]): Run {
  const run = spawnSync(process.execPath, [`${root}js/bin/eutaxy.js`, ...args], {
    cwd: examples,
    encoding: "utf8",
  });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

const answers = new Map<string, Run>();
/** The CLI's answer to `args`, run once for every test that reads it: the machine has 2 cores. */
function once(...args: string[]): Run {
  const key = args.join(" ");
  const known = answers.get(key) ?? eutaxy(args);
  answers.set(key, known);
  return known;
}

const violated = () => once("check", "./checkout.sim.ts", "--workers", "2", "--json");
const bounded = () => once("check", "./checkout.fixed.sim.ts", "--workers", "2", "--json");
const sampled = () =>
  once("check", "./checkout.fixed.sim.ts", "--workers", "2", "--strategy", "random", "--budget-ms", "200");

/** The shards of the check run one after the other in this process, then merged. */
async function mergedShards(file: string, count: number) {
  const results: CheckResult[] = [];
  for (let index = 0; index < count; index++) {
    results.push(await check(`${examples}/${file}`, { shard: { index, count } }));
  }
  return mergeResults(
    results,
    results.map((_, i) => `shard ${i + 1}`),
  );
}

/** A result without what depends on the clock. */
function timeless(result: object): object {
  const {
    elapsedMs: _elapsedMs,
    schema: _schema,
    ...rest
  } = result as { elapsedMs: number; schema?: string };
  return rest;
}

/** A bad-input failure: exit 2 and one line on stderr that says what is wrong. */
function expectBadInput(run: Run, problem: RegExp): void {
  expect(run.code).toBe(2);
  expect(run.stdout).toBe("");
  const lines = run.stderr.trimEnd().split("\n");
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(problem);
}

describe("eutaxy check --workers", () => {
  it("finds the planted bug: the shards' merge, with a run seed that replays without --workers", async () => {
    expect(violated().code).toBe(1);
    const result = JSON.parse(violated().stdout);
    expect(result).toMatchObject({ verdict: "VIOLATED", invariant: "one-charge-per-order" });
    // A split search may find another first violation than the unsplit one, but always this one.
    expect(timeless(result)).toEqual(timeless(await mergedShards("checkout.sim.ts", 2)));
    const replayed = await check(`${examples}/checkout.sim.ts`, { replay: result.runSeed });
    expect(replayed).toMatchObject({ verdict: "VIOLATED", invariant: result.invariant });
  });

  it("prints a VIOLATED report as one process prints it", () => {
    const lines = once("check", "./checkout.sim.ts", "--workers", "2").stdout.trimEnd().split("\n");
    expect(lines[0]).toBe("VIOLATED  checkout  (seed checkout)");
    expect(lines.at(-2)).toMatch(/^Replay: eutaxy check checkout\.sim\.ts --replay [0-9a-f]{16}:\S+$/);
    expect(lines.join("\n")).not.toMatch(/worker/);
  });

  it("proves the fixed checkout BOUNDED, saying how many workers split it", async () => {
    const run = once("check", "./checkout.fixed.sim.ts", "--workers", "2");
    expect(run.code).toBe(0);
    expect(run.stdout.split("\n")[0]).toBe("BOUNDED  checkout-fixed  (seed checkout-fixed), 2 workers");
    expect(run.stdout).toMatch(/Split over 2 worker threads/);
    const json = JSON.parse(bounded().stdout);
    expect(json).toMatchObject({ verdict: "BOUNDED", shards: 2 });
    expect(json.runs).toBeGreaterThan(0);
    // The shards' runs include the top of the tree each of them explores, so they are compared
    // with the shards run in this process rather than with the unsplit check's runs.
    expect(timeless(json)).toEqual(timeless(await mergedShards("checkout.fixed.sim.ts", 2)));
  });

  it("runs as today with --workers 1: in this thread, the plain report", () => {
    const untimed = (...args: string[]) => once(...args).stdout.replace(/\d+ ms|\d+\.\d s/g, "T");
    const one = untimed("check", "./checkout.fixed.sim.ts", "--workers", "1");
    expect(one).toBe(untimed("check", "./checkout.fixed.sim.ts"));
    expect(one.split("\n")[0]).toBe("BOUNDED  checkout-fixed  (seed checkout-fixed)");
  });

  it("samples in every worker with a sampling strategy, and is INCOMPLETE", () => {
    expect(sampled().code).toBe(3);
    expect(sampled().stdout.split("\n")[0]).toBe(
      "INCOMPLETE  checkout-fixed  (seed checkout-fixed), 2 workers",
    );
    expect(sampled().stdout).toMatch(/Sampled by random walks: \d+ distinct schedules?\./);
  });

  it("prints --json that follows docs/eutaxy.check.v1.schema.json", () => {
    const schema = JSON.parse(readFileSync(`${root}docs/eutaxy.check.v1.schema.json`, "utf8"));
    const validate = new Ajv({ allErrors: true }).compile(schema);
    const incomplete = once(
      "check",
      "./checkout.fixed.sim.ts",
      "--workers",
      "2",
      "--strategy",
      "random",
      "--budget-ms",
      "200",
      "--json",
    );
    for (const run of [violated(), bounded(), incomplete]) {
      const json = JSON.parse(run.stdout);
      expect(validate(json), JSON.stringify(validate.errors)).toBe(true);
      expect(Object.keys(json).filter((k) => !(k in schema.properties))).toEqual([]);
    }
  });

  it("runs each worker's check in workerd with --runtime workerd", () => {
    const run = once("check", "./checkout.sim.ts", "--workers", "2", "--runtime", "workerd");
    expect(run.code).toBe(1);
    expect(run.stdout.split("\n")[0]).toBe("VIOLATED  checkout  (seed checkout)");
  });

  it("runs every worker's Workers in UTC, whatever the machine's zone", () => {
    const run = spawnSync(
      process.execPath,
      [`${root}js/bin/eutaxy.js`, "check", "time-zone.sim.ts", "--workers", "2"],
      {
        cwd: `${root}js/test/fixtures/workers-globals`,
        encoding: "utf8",
        env: { ...process.env, TZ: "Asia/Kolkata" },
      },
    );
    expect(run.stderr).toBe("");
    expect(run.stdout).toMatch(/^BOUNDED {2}time-zone .*, 2 workers/);
  });

  it("rejects --shard, --replay and a number of workers it cannot use, in one line", () => {
    expectBadInput(
      eutaxy(["check", "./checkout.sim.ts", "--workers", "2", "--shard", "1/2"]),
      /--workers .*--shard/,
    );
    expectBadInput(
      eutaxy(["check", "./checkout.sim.ts", "--workers", "2", "--replay", "42fbb229c28a2459:2:A2.1@0:1"]),
      /replay .*--workers/,
    );
    expectBadInput(
      eutaxy(["replay", "./checkout.sim.ts", "42fbb229c28a2459:2:A2.1@0:1", "--workers", "2"]),
      /replay .*--workers/,
    );
    expectBadInput(eutaxy(["check", "./checkout.sim.ts", "--workers", "0"]), /--workers .* 1 to 64, not 0/);
    const words = eutaxy(["check", "./checkout.sim.ts", "--workers", "two"]);
    expect(words.code).toBe(2);
    expect(words.stderr.split("\n")[0]).toBe("eutaxy: --workers must be a whole number, not two");
  });
});

describe("which shards decide a split check", () => {
  const result = (verdict: "BOUNDED" | "VIOLATED") => ({ result: { verdict } as CheckResult });
  const failed: Ending = { error: new Error("escaped") };

  it("waits for the shards below a violation, which may still find one that wins", () => {
    const endings = [undefined, result("VIOLATED"), undefined];
    // Shard 3 cannot change the verdict and may be stopped; shard 1 must run to its end.
    expect(firstDecisive(endings)).toBe(1);
    expect(decidingEndings(endings)).toBeUndefined();
    expect(decidingEndings([result("BOUNDED"), result("VIOLATED"), undefined])).toHaveLength(2);
  });

  it("takes a violation or an error of a lower shard before one of a higher shard", () => {
    expect(firstDecisive([result("VIOLATED"), result("VIOLATED")])).toBe(0);
    expect(decidingEndings([failed, result("VIOLATED")])).toEqual([failed]);
  });

  it("needs every shard when none is decisive", () => {
    expect(firstDecisive([result("BOUNDED"), undefined])).toBe(2);
    expect(decidingEndings([result("BOUNDED"), undefined])).toBeUndefined();
    expect(decidingEndings([result("BOUNDED"), result("BOUNDED")])).toHaveLength(2);
  });
});

describe("--strategy and --pct-depth", () => {
  it("are listed by --help", () => {
    const help = eutaxy(["--help"]).stdout;
    for (const option of ["--workers N", "--strategy NAME", "--pct-depth N"]) expect(help).toContain(option);
  });

  it("reject a strategy or a depth there is not, in one line", () => {
    expectBadInput(eutaxy(["check", "./checkout.sim.ts", "--strategy", "bfs"]), /--strategy bfs/);
    expectBadInput(
      eutaxy(["check", "./checkout.sim.ts", "--strategy", "pct", "--pct-depth", "17"]),
      /--pct-depth .* 1 to 16/,
    );
  });

  it("reach the engine: pct samples, and says so", () => {
    const run = eutaxy(["check", "./checkout.fixed.sim.ts", "--strategy", "pct", "--budget-ms", "200"]);
    expect(run.code).toBe(3);
    expect(run.stdout).toMatch(/Sampled by PCT/);
  });
});
