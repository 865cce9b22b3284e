/**
 * The visual counterexample: a self-contained HTML page for a check's result. (Being written.)
 */

import type { CheckResult } from "./check.ts";

export function renderHtml(result: CheckResult): string {
  return `<!doctype html><title>${result.verdict} ${result.scenario}</title><pre>${result.verdict}</pre>`;
}
