/**
 * Escaping for the visual counterexample. Everything a page shows that came from a run (a
 * Worker's answers, its SQL and parameters, error messages, names from the scenario) passes
 * through `esc`, so no output of a Worker can add markup or script to the page.
 */

const ENTITIES: Readonly<Record<string, string>> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

/** Text as HTML text or as a quoted attribute value. */
export function esc(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ENTITIES[c] ?? c);
}

/** Shown values are cut at this many characters (the whole trace is on the page once, below). */
const SHOWN_MAX = 600;

/** `esc`, with a long value cut to a readable length and marked as cut. */
export function escShort(text: string, max = SHOWN_MAX): string {
  return text.length <= max
    ? esc(text)
    : `${esc(text.slice(0, max))}<span class="cut">… (${text.length - max} more characters)</span>`;
}
