/**
 * Color on the terminal, for the verdict word only. Color is a help to a person reading a
 * terminal and noise everywhere else (CI logs, files, pipes), so it is on only when stdout is a
 * TTY, unless the user says otherwise: NO_COLOR (https://no-color.org) turns it off, and
 * FORCE_COLOR turns it on even into a pipe, as Node and most command-line tools read them.
 */

type Verdict = "BOUNDED" | "VIOLATED" | "INCOMPLETE" | "HELD";

/** SGR codes: bold, and green for a proof or a run that held, red for a bug, yellow for neither. */
const CODES: Record<Verdict, string> = {
  BOUNDED: "\x1b[1;32m",
  HELD: "\x1b[1;32m",
  VIOLATED: "\x1b[1;31m",
  INCOMPLETE: "\x1b[1;33m",
};
const RESET = "\x1b[0m";

/**
 * Whether to color what goes to `stream`. FORCE_COLOR wins over NO_COLOR, as in Node's own
 * `getColorDepth`, so that a CI job can ask for color in a log that renders it; FORCE_COLOR=0
 * or =false means no color, as in the `supports-color` package. NO_COLOR counts only when set
 * to something other than the empty string, as its convention says.
 */
export function colorEnabled(stream: { readonly isTTY?: boolean }, env: NodeJS.ProcessEnv): boolean {
  const force = env.FORCE_COLOR;
  if (force !== undefined) return force !== "0" && force.toLowerCase() !== "false";
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== "") return false;
  if (env.TERM === "dumb") return false;
  return stream.isTTY === true;
}

/** `text` with the first occurrence of the verdict word in it colored, when `enabled`. */
export function paintVerdict(text: string, verdict: Verdict, enabled: boolean): string {
  if (!enabled) return text;
  const at = text.indexOf(verdict);
  if (at < 0) return text;
  return `${text.slice(0, at)}${CODES[verdict]}${verdict}${RESET}${text.slice(at + verdict.length)}`;
}
