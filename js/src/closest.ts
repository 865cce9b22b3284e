/**
 * "Did you mean": the word of a list closest to a misspelt one, for the CLI's messages about an
 * unknown option or command.
 */

/**
 * The candidate `word` most likely misspells, or undefined when none is close: one that starts
 * with it (`budget` for `budget-ms`), else the nearest by edits (a letter added, dropped,
 * changed, or two swapped) within a third of the word's length, at least one.
 */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  if (word.length >= 3) {
    const extended = candidates.filter((candidate) => candidate.startsWith(word));
    if (extended.length === 1) return extended[0];
  }
  const allowed = Math.max(1, Math.floor(word.length / 3));
  let best: string | undefined;
  let bestDistance = allowed + 1;
  for (const candidate of candidates) {
    const distance = editDistance(word, candidate);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/**
 * Edits that turn `a` into `b`, a swap of two neighbouring letters counting as one (the
 * optimal string alignment distance): `jsno` is one edit from `json`.
 */
export function editDistance(a: string, b: string): number {
  // rows[i][j]: the edits from the first i letters of a to the first j of b.
  const rows: number[][] = [];
  for (let i = 0; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      if (i === 0) {
        row.push(j);
        continue;
      }
      const above = rows[i - 1] as number[];
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let distance = Math.min(
        (above[j] as number) + 1,
        (row[j - 1] as number) + 1,
        (above[j - 1] as number) + cost,
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        distance = Math.min(distance, ((rows[i - 2] as number[])[j - 2] as number) + 1);
      }
      row.push(distance);
    }
    rows.push(row);
  }
  return (rows[a.length] as number[])[b.length] as number;
}
