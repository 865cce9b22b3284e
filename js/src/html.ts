/**
 * The visual counterexample: a self-contained HTML page for a check's result (`--html <file>`).
 * A VIOLATED page explains the bug without the terminal: the verdict, the broken invariant and
 * the replay command; the run in a few sentences; the shrunk schedule as a sequence diagram with
 * the fault marked where it struck; and the writes and reads behind the broken invariant.
 * BOUNDED and INCOMPLETE pages say what was covered. The page has no scripts and loads nothing;
 * every text from the run is escaped (html/escape.ts), so a Worker's output cannot add markup.
 */

import type { CheckResult } from "./check.ts";
import { shown } from "./errors.ts";
import type { CheckWarning } from "./explore.ts";
import { type Culprits, findCulprits } from "./html/culprits.ts";
import { renderDiagram, statementHtml } from "./html/diagram.ts";
import { esc } from "./html/escape.ts";
import { faultMeaning, faultName } from "./html/faults.ts";
import { renderStory } from "./html/story.ts";
import { STYLE } from "./html/style.ts";
import { parseTrace, type Statement, type Step } from "./html/trace.ts";
import { foundAfter, notAProof, plural, REDUCTION_CAVEAT, ranOut, replayCommand, sampled } from "./report.ts";

export function renderHtml(result: CheckResult): string {
  switch (result.verdict) {
    case "VIOLATED":
      return violatedPage(result);
    case "HELD":
      return heldPage(result);
    case "BOUNDED":
    case "INCOMPLETE":
      return coveragePage(result);
  }
}

type Violated = CheckResult & { verdict: "VIOLATED" };

function violatedPage(result: Violated): string {
  const { steps, finalReads } = parseTrace(result.trace);
  const culprits = findCulprits(result.message, steps, finalReads);
  const diagram = renderDiagram(steps, culprits);
  const broken = `Invariant <b>${esc(result.invariant)}</b> is violated: <span class="message">${esc(result.message)}</span>`;
  const faults =
    result.faults.length === 0
      ? "<dd>none: the events alone break it</dd>"
      : result.faults
          .map(
            (f) =>
              `<dd><span class="faultline">✕ ${esc(faultName(f.kind, f.label))}</span> at <b>${esc(f.invocation)}</b> effect #${f.effect} (<code>${esc(f.label)}</code>): ${esc(faultMeaning(f.kind, f.invocation, f.label))}</dd>`,
          )
          .join("");
  const facts = `<dl class="facts">
<dt>Scenario</dt><dd><b>${esc(result.scenario)}</b> (<code>${esc(shown(result.file))}</code>)</dd>
<dt>Seed</dt><dd><code>${esc(result.seed)}</code></dd>
<dt>Broken invariant</dt><dd><b>${esc(result.invariant)}</b></dd>
<dt>What it found</dt><dd class="message">${esc(result.message)}</dd>
<dt>Fault${result.faults.length === 1 ? "" : "s"}</dt>${faults}
<dt>Events kept</dt><dd>${esc(result.eventsKept.join(", ") || "none")}</dd>
<dt>Run seed</dt><dd><code>${esc(result.runSeed)}</code></dd>
<dt>Replay</dt><dd><code>${esc(replayCommand(result, result.runSeed))}</code></dd>
<dt>Search</dt><dd>${esc(foundAfter(result))}; shrunk in ${esc(plural(result.shrinkRuns, "run"))}</dd>
</dl>`;
  const story = renderStory(
    steps,
    culprits,
    `So the final state breaks <b>${esc(result.invariant)}</b>: ${esc(result.message)}`,
  );
  return page(
    result,
    broken,
    `<section class="overview"><div class="card"><h2>The counterexample</h2>${facts}</div><div class="card"><h2>What happened</h2>${story}</div></section>
<section><h2>The shrunk schedule, step by step</h2>${LEGEND}${diagram.html}</section>
<section class="card breaks"><h2>What breaks the invariant</h2><p>${broken}</p>${breaks(steps, culprits, finalReads, diagram.stepOf)}</section>${warningCards(result)}
${fullTrace(result.trace)}`,
  );
}

/** A card for each of the result's warnings. */
function warningCards(result: { readonly warnings?: readonly CheckWarning[] }): string {
  return (result.warnings ?? [])
    .map((w) => `\n<section class="card warning"><h2>Warning</h2><p>${esc(w.message)}</p></section>`)
    .join("");
}

const LEGEND = `<p class="legend"><span>→ a delivery or a call (an effect)</span><span>⇢ dashed: an answer or a result</span><span><span class="x-inline">✕</span> the fault, or an invocation's death</span><span><span class="tagged">amber</span> the writes the invariant is about</span></p>`;

/** The writes that put the offending rows there, and what the invariants read after the run. */
function breaks(
  steps: readonly Step[],
  culprits: Culprits,
  finalReads: readonly Statement[],
  stepOf: ReadonlyMap<Statement, number>,
): string {
  const where = new Map<Statement, Step>();
  for (const step of steps) for (const s of step.statements) where.set(s, step);
  const parts: string[] = [];
  const writes = [...culprits.statements.keys()];
  if (writes.length > 0) {
    const intro = culprits.unique
      ? `${culprits.unique.count} rows of ${esc(culprits.unique.table)} in D1:${esc(culprits.unique.db)} share ${esc(culprits.unique.share)}. The run wrote them here:`
      : "The writes of the run that the invariant's message names:";
    const items = writes.map((s) => {
      const step = where.get(s);
      const by =
        step?.kind === "effect" ? `${esc(step.invocation)} effect #${step.effect}` : esc(step?.line ?? "");
      return `<li>step ${stepOf.get(s) ?? "?"}, <b>${by}</b>: ${statementHtml(s, culprits)}</li>`;
    });
    parts.push(`<p>${intro}</p><ul class="writes">${items.join("")}</ul>`);
  } else if (culprits.unique) {
    parts.push(
      `<p>${culprits.unique.count} rows of ${esc(culprits.unique.table)} in D1:${esc(culprits.unique.db)} share ${esc(culprits.unique.share)}; the statements that wrote them do not carry the value as a parameter, so look for them in the diagram.</p>`,
    );
  }
  if (finalReads.length > 0) {
    parts.push(
      `<p>What the invariants read from the final state:</p><ul class="writes">${finalReads.map((s) => `<li>${statementHtml(s, undefined)}</li>`).join("")}</ul>`,
    );
  }
  return parts.join("");
}

function heldPage(result: CheckResult & { verdict: "HELD" }): string {
  const { steps } = parseTrace(result.trace);
  const diagram = renderDiagram(steps, undefined);
  const lead = "The replayed run broke no invariant.";
  return page(
    result,
    esc(lead),
    `<section class="card"><dl class="facts">
<dt>Scenario</dt><dd><b>${esc(result.scenario)}</b> (<code>${esc(shown(result.file))}</code>)</dd>
<dt>Run seed</dt><dd><code>${esc(result.runSeed)}</code></dd>
<dt>Replay</dt><dd><code>${esc(replayCommand(result, result.runSeed))}</code></dd>
</dl></section>
<section><h2>The replayed run, step by step</h2>${LEGEND}${diagram.html}</section>
${fullTrace(result.trace)}`,
  );
}

function coveragePage(result: CheckResult & { verdict: "BOUNDED" | "INCOMPLETE" }): string {
  const b = result.bounds;
  const lead =
    result.verdict === "BOUNDED"
      ? `Every schedule within the bounds ran and no invariant broke: ${plural(result.runs, "schedule")} in ${seconds(result.elapsedMs)}.`
      : ranOut(result);
  const meaning =
    result.verdict === "BOUNDED"
      ? `Every placement of at most ${plural(b.maxFaultsPerRun, "fault")} per run, at every effect of every invocation, ran with every resend it caused (up to ${plural(b.maxRedeliveries, "redelivery")} of each event, ${b.maxConcurrentInvocations === 1 ? "one invocation at a time" : `in every interleaving of up to ${b.maxConcurrentInvocations} invocations at once`}), and every invariant held at the end of every run.${result.partialOrderReduction ? ` ${REDUCTION_CAVEAT}` : ""}`
      : `${result.strategy === "random" || result.strategy === "pct" ? `${sampled(result)} ` : ""}${notAProof(result)}`;
  return page(
    result,
    esc(lead),
    `<section class="card"><h2>What was covered</h2><p>${esc(meaning)}</p><dl class="facts">
<dt>Scenario</dt><dd><b>${esc(result.scenario)}</b> (<code>${esc(shown(result.file))}</code>)</dd>
<dt>Seed</dt><dd><code>${esc(result.seed)}</code></dd>
<dt>Schedules run</dt><dd>${result.runs}</dd>
<dt>maxFaultsPerRun</dt><dd>${b.maxFaultsPerRun}</dd>
<dt>maxRedeliveries</dt><dd>${b.maxRedeliveries}</dd>
<dt>maxConcurrentInvocations</dt><dd>${b.maxConcurrentInvocations}</dd>
<dt>budgetMs</dt><dd>${b.budgetMs}</dd>
</dl></section>${warningCards(result)}`,
  );
}

function fullTrace(trace: readonly string[]): string {
  return `<section><details><summary>The full trace of the run (${trace.length} lines, as <code>--json</code> gives it)</summary><pre class="trace">${esc(trace.join("\n"))}</pre></details></section>`;
}

function page(result: CheckResult, lead: string, body: string): string {
  const seed = result.verdict === "HELD" ? `run seed ${result.runSeed}` : `seed ${result.seed}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(`${result.verdict} ${result.scenario} — eutaxy`)}</title>
<style>${STYLE}</style>
</head>
<body class="verdict-${result.verdict}">
<header class="top"><h1><span class="badge">${result.verdict}</span> ${esc(result.scenario)} <small>${esc(seed)}</small></h1><p class="lead">${lead}</p></header>
<main>
${body}
</main>
<footer>eutaxy: a deterministic simulation of Cloudflare Workers.${result.verdict === "VIOLATED" || result.verdict === "HELD" ? " Replay the run with the command above to see the same trace." : ""}</footer>
</body>
</html>
`;
}

function seconds(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}
