/**
 * Merging the results of one check split into shards (`--shard i/n`), each run on its own
 * machine, into one verdict: VIOLATED if any shard found a violation (the one from the lowest
 * shard, so the merge is deterministic), BOUNDED only if every shard of the split is present and
 * BOUNDED, and INCOMPLETE otherwise, saying which shards are missing or incomplete.
 */

import type { CheckResult } from "./check.ts";
import { InputError } from "./errors.ts";
import type { CheckWarning } from "./explore.ts";

export type ShardedResult = CheckResult;

export type MergedResult =
  | Extract<ShardedResult, { verdict: "VIOLATED" }>
  | (Omit<Extract<ShardedResult, { verdict: "BOUNDED" }>, "shard"> & { readonly shards: number })
  | (Omit<
      Extract<ShardedResult, { verdict: "INCOMPLETE" }>,
      "shard" | "reason" | "strategy" | "distinctSchedules" | "switchedAfterRuns"
    > & {
      readonly reason: "budget" | "runs" | "shards" | "answers";
      readonly shards: number;
      readonly missing: readonly number[];
      /**
       * `answers`: the shards (from 0) none of whose runs changed the Workers' module-level
       * state, which others saw change: they explored their part with each plain Worker's answer
       * coming with its call, the others theirs with every answer a step of its own, so the
       * parts are of two different trees.
       */
      readonly unsplit?: readonly number[];
    });

/** The bounds that shape the tree the shards split. */
const TREE_BOUNDS = ["maxFaultsPerRun", "maxRedeliveries", "maxConcurrentInvocations"] as const;

/**
 * The warnings of the merged check, as the lowest shard that gives each words it. Most say
 * something of all the runs (none reached a binding, none answered below 500, none had a request
 * sent apart overlap another invocation), which holds of the
 * whole check only if it holds of every shard's runs, all present (`complete`); a shard that ran
 * nothing says nothing either way. `platform-retries-cut`, `alarm-before-event`,
 * `event-delivered-late`, `queue-not-consumed` and `replica-reads` say something of some run, which holds of the whole check if it holds of
 * any shard's (an alarm's is counted in that shard's runs), as do `module-state` and `isolate-state`.
 */
function mergedWarnings(
  results: readonly ShardedResult[],
  complete: boolean,
): { readonly warnings?: readonly CheckWarning[] } {
  const ordered = results
    .filter((r) => "runs" in r && r.runs > 0)
    .sort((a, b) => (a.shard?.index ?? 0) - (b.shard?.index ?? 0));
  const of = (r: ShardedResult) => ("warnings" in r ? (r.warnings ?? []) : []);
  const first = (kind: CheckWarning["kind"]) => ordered.flatMap((r) => of(r)).find((w) => w.kind === kind);
  const warnings: CheckWarning[] = [];
  for (const kind of ["no-binding-call", "no-request-succeeded", "sent-apart"] as const) {
    const warning = first(kind);
    if (warning && complete && ordered.every((r) => of(r).some((w) => w.kind === kind)))
      warnings.push(warning);
  }
  // Said of every run, each of the lowest shard's for work that failed in every shard too.
  const failing = (r: ShardedResult) =>
    of(r)
      .filter((w) => w.kind === "no-work-succeeded")
      .map((w) => w.message.split(" (first: ")[0]);
  for (const warning of ordered.length > 0 ? of(ordered[0] as ShardedResult) : []) {
    if (warning.kind !== "no-work-succeeded" || !complete) continue;
    const work = warning.message.split(" (first: ")[0];
    if (ordered.every((r) => failing(r).includes(work))) warnings.push(warning);
  }
  const cut = first("platform-retries-cut");
  if (cut) warnings.push(cut);
  const alarm = first("alarm-before-event");
  if (alarm) warnings.push(alarm);
  const late = first("event-delivered-late");
  if (late) warnings.push(late);
  const moduleState = first("module-state");
  if (moduleState) warnings.push(moduleState);
  const kept = first("isolate-state");
  if (kept) warnings.push(kept);
  // Said of some run too: each queue, and each binding's replica sessions, once.
  const said = new Set<string>();
  for (const warning of ordered
    .flatMap((r) => of(r))
    .filter((w) => w.kind === "queue-not-consumed" || w.kind === "replica-reads")) {
    if (said.has(warning.message)) continue;
    said.add(warning.message);
    warnings.push(warning);
  }
  return warnings.length > 0 ? { warnings } : {};
}

/** Merges shard results of one scenario; `files` name where each came from, for errors. */
export function mergeResults(results: readonly ShardedResult[], files: readonly string[]): MergedResult {
  const first = results[0];
  if (!first) throw new InputError(undefined, "merge needs at least one result file");
  results.forEach((result, i) => {
    const file = files[i];
    if (!result.shard) throw new InputError(file, "this result is not from a sharded check (--shard i/n)");
    if (result.scenario !== first.scenario || result.seed !== first.seed) {
      throw new InputError(
        file,
        `this result is of ${result.scenario} (seed ${result.seed}), not ${first.scenario} (seed ${first.seed})`,
      );
    }
    if (result.shard.count !== first.shard?.count) {
      throw new InputError(
        file,
        `this result is from a split into ${result.shard.count}, not ${first.shard?.count}`,
      );
    }
    if (result.verdict === "HELD") throw new InputError(file, "a replay's result cannot be merged");
    // The split is of one tree: the bounds that shape it must agree (the budget may differ).
    for (const bound of TREE_BOUNDS) {
      if (result.bounds[bound] !== first.bounds[bound]) {
        throw new InputError(
          file,
          `this result was checked with ${bound} ${result.bounds[bound]}, not ${first.bounds[bound]} as ${files[0]} was`,
        );
      }
    }
    const earlier = results.findIndex((other) => other.shard?.index === result.shard?.index);
    if (earlier < i) {
      throw new InputError(
        file,
        `shard ${(result.shard?.index ?? 0) + 1} is given twice (also as ${files[earlier]})`,
      );
    }
  });
  const count = first.shard?.count ?? 1;
  const violated = results
    .filter((r): r is Extract<ShardedResult, { verdict: "VIOLATED" }> => r.verdict === "VIOLATED")
    .sort((a, b) => (a.shard?.index ?? 0) - (b.shard?.index ?? 0))[0];
  if (violated) return violated;

  const runs = results.reduce((sum, r) => sum + ("runs" in r ? r.runs : 0), 0);
  const elapsedMs = Math.max(...results.map((r) => r.elapsedMs));
  const present = new Set(results.map((r) => r.shard?.index));
  const missing = Array.from({ length: count }, (_, i) => i).filter((i) => !present.has(i));
  const { shard: _shard, ...header } = first;
  const base = {
    scenario: header.scenario,
    file: header.file,
    seed: header.seed,
    bounds: header.bounds,
    elapsedMs,
    runs,
    shards: count,
  };
  const incomplete = results.find((r) => r.verdict === "INCOMPLETE");
  // A shard that saw module-level state change explored the tree in which every answer is a
  // step of its own; one that saw none, the tree in which a plain Worker's answers come with
  // its calls. Parts of two trees cover neither.
  const split = (r: ShardedResult) =>
    "warnings" in r && (r.warnings ?? []).some((w) => w.kind === "module-state");
  const unsplit = results.some(split)
    ? results.filter((r) => !split(r) && "runs" in r && r.runs > 0).map((r) => r.shard?.index ?? 0)
    : [];
  if (unsplit.length > 0) {
    return {
      ...base,
      verdict: "INCOMPLETE",
      ...mergedWarnings(results, missing.length === 0),
      reason: "answers",
      missing,
      unsplit: unsplit.sort((a, b) => a - b),
    };
  }
  if (missing.length === 0 && !incomplete) {
    // With interleavings, every shard says whether reduction pruned them; the whole relied on
    // it (and on its caveat) if any shard did.
    const reductions = results.flatMap((r) =>
      r.verdict === "BOUNDED" && r.partialOrderReduction !== undefined ? [r.partialOrderReduction] : [],
    );
    return {
      ...base,
      verdict: "BOUNDED",
      ...(reductions.length > 0 ? { partialOrderReduction: reductions.some(Boolean) } : {}),
      ...mergedWarnings(results, true),
    };
  }
  return {
    ...base,
    verdict: "INCOMPLETE",
    ...mergedWarnings(results, missing.length === 0),
    reason: missing.length > 0 ? "shards" : incomplete?.verdict === "INCOMPLETE" ? incomplete.reason : "runs",
    missing,
  };
}

/** Why a merged INCOMPLETE is not BOUNDED, as its report and its JUnit report word it. */
export function shortfall(merged: Extract<MergedResult, { verdict: "INCOMPLETE" }>): string {
  const shards = (indexes: readonly number[]) =>
    `shard${indexes.length === 1 ? "" : "s"} ${indexes.map((i) => `${i + 1}/${merged.shards}`).join(", ")}`;
  if (merged.reason === "answers") {
    const they = merged.unsplit?.length === 1 ? "it" : "they";
    return `${shards(merged.unsplit ?? [])} saw no module-level variable change, which the others saw, so ${they} explored with the answers of plain Workers' calls coming with the calls: run the check unsharded`;
  }
  if (merged.missing.length > 0) return `${shards(merged.missing)} missing`;
  return `a shard ran out of its ${merged.reason === "budget" ? "budget" : "run limit"}`;
}
