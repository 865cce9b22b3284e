/**
 * `pnpm bench`: eutaxy's speed against the floor (the same Worker code run bare) and against
 * Miniflare (the same runs in real workerd), partial-order reduction's effect, and memory over a
 * long check. Figures that are compared are measured side by side in one bench run: a group of
 * units (a batch of the floor's runs, a check, Miniflare runs) is timed in cycles, each cycle
 * timing every unit once, so that a change in the machine's load reaches them alike; each ratio
 * is taken within a cycle and the table shows the median over the cycles. Each side runs in a
 * process of its own (child.ts), driven one request at a time from here, and times itself.
 * `js/bench/run.js` bundles this file and the host's sources, then calls `main`.
 */

import { type ChildProcess, execFile, fork } from "node:child_process";
import { writeFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import type { CheckOptions } from "../src/index.ts";
import type { CheckReport, Request as ChildRequest, MiniflareTiming, Timing } from "./child.ts";
import type { MemoryReport } from "./memory-child.ts";
import { orderRequests } from "./orders.ts";
import { median, WARM_RUNS } from "./sim.ts";
import { examplePaths, loadWorker, schemaStatements } from "./workers.ts";

const USAGE = `usage: pnpm bench [--quick] [--json FILE]

  --quick      a smoke run: shorter timings, 10,000 runs for memory (also EUTAXY_BENCH_QUICK=1)
  --json FILE  also write every figure, per cycle, as JSON to FILE
`;

interface Settings {
  readonly quick: boolean;
  /** Minimum wall-clock time of each group of interleaved measurements. */
  readonly twoOrdersMs: number;
  readonly plantedMs: number;
  readonly libraryMs: number;
  /** Cycles of the larger scenario, each one check with this budget. */
  readonly largeCycles: number;
  readonly largeBudgetMs: number;
  /** Budget of each random-walk check of the fixed scenario (its steady state). */
  readonly steadyBudgetMs: number;
  /** Budget of the random-walk check that warms the host's code up before anything is timed. */
  readonly simWarmMs: number;
  /** Miniflare runs per cycle (their median is the cycle's figure), and the group's minimum time. */
  readonly miniflareRuns: number;
  readonly miniflareMs: number;
  readonly memoryRuns: number;
  readonly memoryEarly: number;
  readonly memoryEvery: number;
}

const FULL: Settings = {
  quick: false,
  twoOrdersMs: 10_000,
  plantedMs: 4000,
  libraryMs: 6000,
  largeCycles: 2,
  largeBudgetMs: 3000,
  steadyBudgetMs: 300,
  simWarmMs: 3000,
  miniflareRuns: 3,
  miniflareMs: 6000,
  memoryRuns: 100_000,
  memoryEarly: 10_000,
  memoryEvery: 1000,
};

const QUICK: Settings = {
  quick: true,
  twoOrdersMs: 2500,
  plantedMs: 1000,
  libraryMs: 1500,
  largeCycles: 1,
  largeBudgetMs: 1000,
  steadyBudgetMs: 200,
  simWarmMs: 1500,
  miniflareRuns: 3,
  miniflareMs: 1500,
  memoryRuns: 10_000,
  memoryEarly: 5000,
  memoryEvery: 500,
};

/** Runs in one timed batch of the floor. */
const FLOOR_BATCH = 20;
/** Runs of each floor before any is timed (or as many as fit in FLOOR_WARM_MS). */
const FLOOR_WARM_RUNS = 2000;
const FLOOR_WARM_MS = 3000;

const TARGETS = {
  /** The simulation's cost per run, as a multiple of the floor's: at most. */
  floorRatio: 1.5,
  /** Miniflare's cost per run, as a multiple of eutaxy's: at least. */
  miniflareRatio: 75,
  /** RSS at the last sample over RSS at the early one: at most. */
  memoryRatio: 1.1,
};

interface Row {
  readonly name: string;
  readonly figure: string;
  readonly baseline: string;
  readonly ratio: string;
  readonly target: string;
  readonly met: string;
}

export interface Paths {
  /** The repository's root. */
  readonly root: string;
  /** Where run.js bundled the bench (memory-child.js is there). */
  readonly outdir: string;
}

export async function main(argv: readonly string[], paths: Paths): Promise<number> {
  let jsonFile: string | undefined;
  let quick = process.env.EUTAXY_BENCH_QUICK === "1";
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--quick") quick = true;
    else if (arg === "--json" && argv[i + 1] !== undefined) jsonFile = argv[++i];
    else if (arg?.startsWith("--json=")) jsonFile = arg.slice("--json=".length);
    else {
      process.stderr.write(arg === "--help" || arg === "-h" ? USAGE : `unknown argument ${arg}\n${USAGE}`);
      return arg === "--help" || arg === "-h" ? 0 : 2;
    }
  }
  const settings = quick ? QUICK : FULL;
  const machine = {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? "unknown",
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    loadAverage: loadavg()[0],
    date: new Date().toISOString(),
  };
  log(`${machine.cpus} × ${machine.cpuModel}, Node ${machine.node}${quick ? ", --quick" : ""}`);
  const started = performance.now();
  const bench = new Bench(paths, settings);
  await bench.run();
  const rows = bench.rows();
  process.stdout.write(`\n${table(rows)}\n`);
  process.stdout.write(`\n${bench.notes().join("\n")}\n`);
  const totalS = (performance.now() - started) / 1000;
  const loadAfter = loadavg()[0] ?? 0;
  process.stdout.write(
    `\nbench: ${totalS.toFixed(0)} s in all; load average ${machine.loadAverage?.toFixed(1)} before, ${loadAfter.toFixed(1)} after, on ${machine.cpus} CPUs\n`,
  );
  if (jsonFile !== undefined) {
    writeFileSync(
      jsonFile,
      `${JSON.stringify({ schema: "eutaxy.bench/1", machine, settings, totalS, rows, results: bench.results }, null, 2)}\n`,
    );
    log(`wrote ${jsonFile}`);
  }
  return 0;
}

/**
 * What one timed unit of a group measured: microseconds per run, as a number or as `us` beside
 * other figures of the same stretch (`cpuUs`, `requestsUs`), kept as `<unit>.<key>`.
 */
type Unit = () => Promise<number | Timing | MiniflareTiming>;

/**
 * Samples per unit of one group, aligned by cycle: `samples[k][i]` is unit k's figure in cycle i
 * (NaN once the unit has failed). Every cycle runs every unit once, starting from a different one
 * each time, so that a change of the machine's load reaches all of them alike.
 */
type Samples = Record<string, number[]>;

interface Results {
  /** Per group, the samples of each unit (µs per run; `<unit>.cpuUs` in CPU time, where measured). */
  groups: Record<string, Samples>;
  /** The last check of each check unit. */
  checks: Record<string, CheckReport>;
  errors: Record<string, string>;
  miniflareStartMs?: number;
  por?: { with: CheckReport; without: CheckReport };
  memory?: MemoryReport;
}

class Bench {
  readonly results: Results = { groups: {}, checks: {}, errors: {} };
  private readonly example: ReturnType<typeof examplePaths>;
  private readonly scenarios: { large: string; pair: string; library: string };

  constructor(
    private readonly paths: Paths,
    private readonly settings: Settings,
  ) {
    this.example = examplePaths(paths.root);
    const dir = join(paths.root, "js", "bench", "scenarios");
    this.scenarios = {
      large: join(dir, "orders-10.sim.ts"),
      pair: join(dir, "pair-concurrent.sim.ts"),
      library: join(dir, "library", "library.sim.ts"),
    };
  }

  async run(): Promise<void> {
    const { example, settings, paths } = this;
    const schema = schemaStatements(example.schema);
    log("bundling the example's Workers for the floor and for Miniflare");
    const libraryDir = join(paths.root, "js", "bench", "scenarios", "library");
    const libraryEntry = join(libraryDir, "worker.ts");
    const [checkoutFixed, checkoutPlanted, payments, mfCheckout, mfPayments, library] = await Promise.all([
      loadWorker(example.checkoutFixed, example.checkoutConfig, true),
      loadWorker(example.checkout, example.checkoutConfig, true),
      loadWorker(example.payments, example.paymentsConfig, true),
      loadWorker(example.checkoutFixed, example.checkoutConfig, false),
      loadWorker(example.payments, example.paymentsConfig, false),
      loadWorker(libraryEntry, join(libraryDir, "wrangler.jsonc"), true),
    ]);
    const two = orderRequests(2);
    const floor = new Child(paths, "floor");
    const sim = new Child(paths, "eutaxy");
    const mf = new Child(paths, "miniflare");
    try {
      await floor.ask({
        op: "floor",
        name: "fixed",
        workers: [checkoutFixed, payments],
        schema,
        requests: two,
      });
      await floor.ask({
        op: "floor",
        name: "planted",
        workers: [checkoutPlanted, payments],
        schema,
        requests: two,
      });
      await floor.ask({
        op: "floor",
        name: "ten",
        workers: [checkoutFixed, payments],
        schema,
        requests: orderRequests(10),
      });
      await floor.ask({ op: "floor", name: "library", workers: [library], schema, requests: two });

      // V8 takes a thousand runs or so to compile the floor's code at its fastest, and the host's
      // code a few checks: both are warmed up before anything is timed.
      log("warming up: the floors, the example's checks");
      for (const name of ["fixed", "planted", "ten", "library"]) {
        await floor.ask({ op: "floorWarm", name, runs: FLOOR_WARM_RUNS, maxMs: FLOOR_WARM_MS });
      }
      await this.attempt("floor", async () => {
        for (const name of ["fixed", "library"]) {
          const charged = (await floor.ask({ op: "floorCharged", name })) as number;
          if (charged !== 2) throw new Error(`the ${name} floor's run charged ${charged} orders, not 2`);
        }
      });
      const check = async (
        name: string,
        path: string,
        options: CheckOptionsData = {},
      ): Promise<CheckReport> => {
        const report = (await sim.ask({ op: "check", path, options })) as CheckReport;
        this.results.checks[name] = report;
        return report;
      };
      for (let i = 0; i < 5; i++) {
        await this.attempt("checkFixed", () => check("checkFixed", example.fixedScenario));
        await this.attempt("checkViolated", () => check("checkViolated", example.violatedScenario));
      }
      await this.attempt("steady", () =>
        check("steady", example.fixedScenario, { strategy: "random", budgetMs: settings.simWarmMs }),
      );

      const floorBatch =
        (name: string): Unit =>
        async () =>
          (await floor.ask({ op: "floorBatch", name, runs: FLOOR_BATCH })) as Timing;
      const checkFixed: Unit = async () => (await check("checkFixed", example.fixedScenario)).usPerRun;
      const steadyOf =
        (name: string, scenario: string): Unit =>
        async () => {
          const report = await check(name, scenario, {
            strategy: "random",
            budgetMs: settings.steadyBudgetMs,
          });
          if (!report.steady) {
            throw new Error(
              `the random-walk check made ${report.runs} runs, too few to time its steady state`,
            );
          }
          return report.steady;
        };
      const steady = steadyOf("steady", example.fixedScenario);

      log("two orders: the floor, the fixed scenario's BOUNDED check and its steady state, interleaved");
      this.results.groups.twoOrders = await this.interleave(
        { floorFixed: floorBatch("fixed"), checkFixed, steady },
        settings.twoOrdersMs,
        2,
      );

      log("the planted checkout: its floor and the VIOLATED scenario's exploration, interleaved");
      this.results.groups.planted = await this.interleave(
        {
          floorPlanted: floorBatch("planted"),
          checkViolated: async () => (await check("checkViolated", example.violatedScenario)).usPerRun,
        },
        settings.plantedMs,
        2,
      );

      log("ten orders: their floor and the larger concurrent scenario, interleaved");
      this.results.groups.tenOrders = await this.interleave(
        {
          floor10: floorBatch("ten"),
          large: async () =>
            (await check("large", this.scenarios.large, { budgetMs: settings.largeBudgetMs })).usPerRun,
        },
        0,
        settings.largeCycles,
      );

      log("the Hono, zod and Drizzle Worker: its floor, its module's evaluation and its steady state");
      await this.attempt("librarySteady", async () => {
        await sim.ask({ op: "module", name: "library", entry: libraryEntry });
        await check("librarySteady", this.scenarios.library, {
          strategy: "random",
          budgetMs: settings.simWarmMs / 2,
        });
      });
      this.results.groups.library = await this.interleave(
        {
          floorLibrary: floorBatch("library"),
          libraryModule: async () =>
            (await sim.ask({ op: "evaluateBatch", name: "library", runs: FLOOR_BATCH })) as Timing,
          librarySteady: steadyOf("librarySteady", this.scenarios.library),
        },
        settings.libraryMs,
        2,
      );

      log("Miniflare: starting workerd with the two Workers and their D1 database");
      const started = await this.attempt("miniflare", async () => {
        const startMs = (await mf.ask({
          op: "miniflareStart",
          workers: [mfCheckout, mfPayments],
          schema,
          requests: two,
        })) as number;
        await mf.ask({ op: "miniflareRuns", runs: 5 });
        const charged = (await mf.ask({ op: "miniflareCharged" })) as number;
        if (charged !== 2) throw new Error(`Miniflare's run charged ${charged} orders, not 2`);
        return startMs;
      });
      this.results.miniflareStartMs = started;
      if (started !== undefined) {
        log(
          "two orders in Miniflare, the fixed scenario's check and its steady state, the floor, interleaved",
        );
        this.results.groups.miniflare = await this.interleave(
          {
            miniflare: async () =>
              (await mf.ask({ op: "miniflareRuns", runs: settings.miniflareRuns })) as number,
            checkFixed,
            steady,
            floorFixed: floorBatch("fixed"),
          },
          settings.miniflareMs,
          2,
        );
        await mf.ask({ op: "miniflareDispose" });
      }

      log("partial-order reduction: the two-order concurrent scenario with and without");
      await this.attempt("por", async () => {
        const withPor = await check("porWith", this.scenarios.pair, { strategy: "exhaustive" });
        const without = await check("porWithout", this.scenarios.pair, {
          strategy: "exhaustive",
          partialOrderReduction: false,
        });
        this.results.por = { with: withPor, without };
      });
    } finally {
      floor.stop();
      sim.stop();
      mf.stop();
    }

    log(
      `memory: ${settings.memoryRuns.toLocaleString("en-US")} runs of the fixed scenario, in a process of its own`,
    );
    await this.attempt("memory", async () => {
      this.results.memory = await memoryChild(this.paths, example.fixedScenario, settings);
    });
  }

  /** Cycles through `units` for at least `minMs` and `minCycles`; a unit that fails is dropped. */
  private async interleave(units: Record<string, Unit>, minMs: number, minCycles: number): Promise<Samples> {
    const names = Object.keys(units);
    const samples: Samples = Object.fromEntries(names.map((n) => [n, []]));
    const failed = new Set<string>();
    const started = performance.now();
    for (let cycle = 0; cycle < minCycles || performance.now() - started < minMs; cycle++) {
      const figures = new Map<string, number>();
      for (let k = 0; k < names.length; k++) {
        const name = names[(cycle + k) % names.length] as string;
        if (failed.has(name)) continue;
        const figure = await this.attempt(name, units[name] as Unit);
        if (figure === undefined) {
          failed.add(name);
        } else if (typeof figure === "number") {
          figures.set(name, figure);
        } else {
          for (const [key, value] of Object.entries(figure))
            figures.set(key === "us" ? name : `${name}.${key}`, value);
        }
      }
      for (const name of figures.keys()) samples[name] ??= new Array<number>(cycle).fill(Number.NaN);
      for (const [name, list] of Object.entries(samples)) list.push(figures.get(name) ?? Number.NaN);
      if (failed.size === names.length) break;
    }
    return samples;
  }

  /** Runs `fn`; an error is recorded under `name` (and shown in that row) instead of stopping the bench. */
  private async attempt<T>(name: string, fn: () => Promise<T>): Promise<T | undefined> {
    try {
      return await fn();
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.results.errors[name] ??= message.split("\n")[0] ?? message;
      log(`${name}: ${message}`);
      return undefined;
    }
  }

  /** The median of unit `name`'s samples in `group`. */
  private figure(group: string, name: string): number | undefined {
    const values = (this.results.groups[group]?.[name] ?? []).filter(Number.isFinite);
    return values.length === 0 ? undefined : median(values);
  }

  /** The median over the cycles of `group` of unit `a`'s figure over unit `b`'s in the same cycle. */
  private ratio(group: string, a: string, b: string): number | undefined {
    const as = this.results.groups[group]?.[a] ?? [];
    const bs = this.results.groups[group]?.[b] ?? [];
    const ratios = as.map((x, i) => x / (bs[i] ?? Number.NaN)).filter(Number.isFinite);
    return ratios.length === 0 ? undefined : median(ratios);
  }

  rows(): Row[] {
    const { errors, por, memory, checks } = this.results;
    const rows: Row[] = [];
    const floorRow = (name: string, group: string, unit: string): Row => {
      const us = this.figure(group, unit);
      if (us === undefined) return errorRow(name, errors.floor);
      return { name, figure: `${fmtUs(us)}/run`, baseline: "–", ratio: "–", target: "–", met: "–" };
    };
    const simRow = (name: string, group: string, unit: string, floorUnit: string, floorName: string): Row => {
      const us = this.figure(group, unit);
      const s = checks[unit];
      if (us === undefined || !s) return errorRow(name, errors[unit]);
      const ratio = this.ratio(group, unit, floorUnit);
      const cpu = this.ratio(group, `${unit}.cpuUs`, `${floorUnit}.cpuUs`);
      return {
        name,
        figure: `${fmtRate(us)} (${fmtUs(us)}/run); ${s.verdict}${s.detail ? ` ${s.detail}` : ""}`,
        baseline: `${floorName} ${fmtUs(this.figure(group, floorUnit) ?? Number.NaN)}/run`,
        ratio:
          ratio === undefined
            ? "–"
            : `${ratio.toFixed(1)}x${cpu === undefined ? "" : ` (CPU ${cpu.toFixed(1)}x)`}`,
        target: `≤ ${TARGETS.floorRatio}x`,
        met: ratio === undefined ? "–" : ratio <= TARGETS.floorRatio ? "yes" : "no",
      };
    };

    rows.push(floorRow("floor: 2 orders, bare (fixed checkout)", "twoOrders", "floorFixed"));
    rows.push(floorRow("floor: 2 orders, bare (planted checkout)", "planted", "floorPlanted"));
    rows.push(floorRow("floor: 10 orders, bare (fixed checkout)", "tenOrders", "floor10"));
    rows.push(
      simRow("service-binding VIOLATED: exploring", "planted", "checkViolated", "floorPlanted", "floor"),
    );
    rows.push(
      simRow("service-binding fixed: BOUNDED check", "twoOrders", "checkFixed", "floorFixed", "floor"),
    );
    rows.push(simRow("service-binding fixed: steady state", "twoOrders", "steady", "floorFixed", "floor"));
    rows.push(simRow("10 orders, 2 faults, 2 concurrent", "tenOrders", "large", "floor10", "floor 10"));
    rows.push(floorRow("floor: Hono + zod + Drizzle Worker, bare", "library", "floorLibrary"));
    rows.push(
      simRow(
        "Hono + zod + Drizzle Worker: steady state",
        "library",
        "librarySteady",
        "floorLibrary",
        "floor",
      ),
    );
    const moduleUs = this.figure("library", "libraryModule");
    const moduleRatio = this.ratio("library", "libraryModule", "floorLibrary");
    rows.push(
      moduleUs === undefined
        ? errorRow("its module, evaluated anew per run", errors.libraryModule ?? errors.librarySteady)
        : {
            name: "its module, evaluated anew per run",
            figure: `${fmtUs(moduleUs)}/evaluation`,
            baseline: `floor ${fmtUs(this.figure("library", "floorLibrary") ?? Number.NaN)}/run`,
            ratio: moduleRatio === undefined ? "–" : `${moduleRatio.toFixed(1)}x`,
            target: "–",
            met: "–",
          },
    );

    const mfUs = this.figure("miniflare", "miniflare");
    if (mfUs === undefined) {
      rows.push(errorRow("Miniflare: 2 orders per run", errors.miniflare));
    } else {
      for (const [unit, label] of [
        ["checkFixed", "BOUNDED check"],
        ["steady", "steady state"],
      ] as const) {
        const ratio = this.ratio("miniflare", "miniflare", unit);
        rows.push({
          name: `Miniflare vs eutaxy ${label}`,
          figure: `Miniflare ${fmtUs(mfUs)}/run`,
          baseline: `eutaxy ${fmtUs(this.figure("miniflare", unit) ?? Number.NaN)}/run`,
          ratio: ratio === undefined ? "–" : `${ratio.toFixed(1)}x`,
          target: `≥ ${TARGETS.miniflareRatio}x`,
          met: ratio === undefined ? "–" : ratio >= TARGETS.miniflareRatio ? "yes" : "no",
        });
      }
      const vsFloor = this.ratio("miniflare", "miniflare", "floorFixed");
      rows.push({
        name: "Miniflare vs the floor",
        figure: `Miniflare ${fmtUs(mfUs)}/run`,
        baseline: `floor ${fmtUs(this.figure("miniflare", "floorFixed") ?? Number.NaN)}/run`,
        ratio: vsFloor === undefined ? "–" : `${vsFloor.toFixed(0)}x`,
        target: "–",
        met: "–",
      });
    }

    if (por) {
      const factor = por.without.runs / por.with.runs;
      const agree = por.with.verdict === por.without.verdict;
      const bounded = por.with.verdict === "BOUNDED";
      rows.push({
        name: "POR: 2 orders, 2 concurrent, 1 fault",
        figure: `${por.with.runs} runs with POR (${por.with.verdict})`,
        baseline: `${por.without.runs} runs without (${por.without.verdict})`,
        ratio: `${factor.toFixed(1)}x fewer`,
        target: "same verdict, > 1x",
        met: agree && bounded && factor > 1 ? "yes" : "no",
      });
    } else {
      rows.push(errorRow("POR: 2 orders, 2 concurrent, 1 fault", errors.por));
    }

    if (memory) {
      const { early, late } = memoryPoints(memory, this.settings);
      const ratio = early && late ? late.rssBytes / early.rssBytes : undefined;
      rows.push({
        name: `RSS over ${memory.runs.toLocaleString("en-US")} runs`,
        figure: late ? `${fmtMiB(late.rssBytes)} at ${late.runs.toLocaleString("en-US")}` : "–",
        baseline: early ? `${fmtMiB(early.rssBytes)} at ${early.runs.toLocaleString("en-US")}` : "–",
        ratio: ratio === undefined ? "–" : `${ratio.toFixed(2)}x`,
        target: `≤ ${TARGETS.memoryRatio}x`,
        met: ratio === undefined ? "–" : ratio <= TARGETS.memoryRatio ? "yes" : "no",
      });
    } else {
      rows.push(errorRow("RSS over many runs", errors.memory));
    }
    return rows;
  }

  notes(): string[] {
    const { groups, checks, miniflareStartMs, por, memory } = this.results;
    const cycles = Object.entries(groups)
      .map(([name, samples]) => `${name} ${Object.values(samples)[0]?.length ?? 0}`)
      .join(", ");
    const floorCpu = this.figure("twoOrders", "floorFixed.cpuUs");
    const steadyCpu = this.figure("twoOrders", "steady.cpuUs");
    const mfUs = this.figure("miniflare", "miniflare");
    const mfRequestsUs = this.figure("miniflare", "miniflare.requestsUs");
    const notes = [
      `Each figure is a median over cycles (${cycles}); a cycle times every unit of its group once,`,
      "and each ratio is taken within a cycle, then the median. A check's µs/run is its exploring",
      'phase\'s time over its runs (loading and bundling not counted). "steady state": the fixed',
      `scenario's schedules sampled at random, timed after the first ${WARM_RUNS} runs of a check. The floor:`,
      `median of batches of ${FLOOR_BATCH} runs. (CPU …x): the same ratio in CPU time, which other processes'`,
      "load on the machine inflates less.",
    ];
    if (floorCpu !== undefined && steadyCpu !== undefined) {
      notes.push(`CPU time per run: floor ${fmtUs(floorCpu)}, eutaxy steady state ${fmtUs(steadyCpu)}.`);
    }
    const fixed = checks.checkFixed;
    if (fixed) {
      notes.push(
        `A whole BOUNDED check of the fixed scenario (load, bundle, ${fixed.runs} runs) took ${fixed.wallMs.toFixed(0)} ms of wall-clock time.`,
      );
    }
    if (miniflareStartMs !== undefined)
      notes.push(`Miniflare took ${miniflareStartMs.toFixed(0)} ms to start.`);
    if (mfUs !== undefined && mfRequestsUs !== undefined) {
      notes.push(
        `A Miniflare run takes ${fmtUs(mfUs)}: ${fmtUs(mfRequestsUs)} for the two requests, the rest to re-create the table.`,
      );
    }
    if (por) {
      notes.push(
        `POR: ${por.with.runs} runs in ${por.with.wallMs.toFixed(0)} ms with, ${por.without.runs} runs in ${por.without.wallMs.toFixed(0)} ms without.`,
      );
    }
    if (memory) {
      const peak = Math.max(...memory.samples.map((s) => s.rssBytes));
      notes.push(
        `Memory: ${memory.runs.toLocaleString("en-US")} runs in ${(memory.ms / 1000).toFixed(0)} s (${memory.ended}); peak RSS ${fmtMiB(peak)}.`,
      );
    }
    for (const [name, message] of Object.entries(this.results.errors))
      notes.push(`error in ${name}: ${message}`);
    return notes;
  }
}

type CheckOptionsData = Omit<CheckOptions, "onProgress">;

/** A child process (child.js) that answers one request at a time. */
class Child {
  private readonly process: ChildProcess;
  private next = 0;
  private readonly waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();

  constructor(
    paths: Paths,
    private readonly name: string,
  ) {
    this.process = fork(join(paths.outdir, "child.js"), [], {
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    this.process.on("message", (message: { id: number; value?: unknown; error?: string }) => {
      const waiter = this.waiting.get(message.id);
      this.waiting.delete(message.id);
      if (message.error !== undefined) waiter?.reject(new Error(message.error));
      else waiter?.resolve(message.value);
    });
    this.process.on("exit", (code) => {
      for (const waiter of this.waiting.values()) {
        waiter.reject(new Error(`the ${this.name} process exited (${code}) before it answered`));
      }
      this.waiting.clear();
    });
  }

  ask(request: ChildRequest): Promise<unknown> {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.process.send({ id, request });
    });
  }

  stop(): void {
    if (this.process.connected) this.process.disconnect();
  }
}

async function memoryChild(paths: Paths, scenario: string, settings: Settings): Promise<MemoryReport> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [
      join(paths.outdir, "memory-child.js"),
      scenario,
      String(settings.memoryRuns),
      String(settings.memoryEvery),
    ],
    { maxBuffer: 64 * 1024 * 1024 },
  );
  const line = stdout.trim().split("\n").at(-1) ?? "";
  return JSON.parse(line) as MemoryReport;
}

function memoryPoints(memory: MemoryReport, settings: Settings) {
  const at = (runs: number) => memory.samples.find((s) => s.runs >= runs);
  return { early: at(settings.memoryEarly), late: at(Math.min(settings.memoryRuns, memory.runs)) };
}

function errorRow(name: string, message: string | undefined): Row {
  return {
    name,
    figure: `error: ${message ?? "not measured"}`,
    baseline: "–",
    ratio: "–",
    target: "–",
    met: "error",
  };
}

function fmtUs(us: number): string {
  if (!Number.isFinite(us)) return "?";
  return us >= 10_000 ? `${(us / 1000).toFixed(1)} ms` : `${Math.round(us).toLocaleString("en-US")} µs`;
}

function fmtRate(usPerRun: number): string {
  return `${Math.round(1e6 / usPerRun).toLocaleString("en-US")} runs/s`;
}

function fmtMiB(bytes: number): string {
  return `${(bytes / 2 ** 20).toFixed(0)} MiB`;
}

function table(rows: readonly Row[]): string {
  const header: Row = {
    name: "name",
    figure: "figure",
    baseline: "baseline",
    ratio: "ratio",
    target: "target",
    met: "met?",
  };
  const keys = ["name", "figure", "baseline", "ratio", "target", "met"] as const;
  const all = [header, ...rows];
  const widths = keys.map((k) => Math.max(...all.map((r) => r[k].length)));
  const line = (r: Row) =>
    keys
      .map((k, i) => r[k].padEnd(widths[i] ?? 0))
      .join("  ")
      .trimEnd();
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n");
}

function log(message: string): void {
  process.stderr.write(`bench: ${message}\n`);
}
