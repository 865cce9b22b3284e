/**
 * Finds the writes in a run that made the final state break the invariant, so the diagram can
 * point at them. For a `unique` invariant the engine's message names the shared values
 * (`2 rows of charges in D1:payments/DB share order_id = "o-2"`): the writes to that database
 * carrying all of them are the duplicated rows. For any other invariant, the writes whose text
 * parameters the message names are marked instead, among those to the Workers' D1 databases and
 * Durable Objects' SQL storage that the invariants read (all of them when the trace shows no
 * read).
 */

import { paramText, type Statement, type Step } from "./trace.ts";

export interface Culprits {
  /** The marked statements, each with why it matters, shown beside it: `row with order_id = "o-2"`. */
  readonly statements: ReadonlyMap<Statement, string>;
  /** For a `unique` invariant: the table, database and shared values the message names. */
  readonly unique?: {
    readonly count: number;
    readonly table: string;
    readonly db: string;
    readonly share: string;
  };
}

const WRITE = /^\s*(?:INSERT|REPLACE|UPDATE|DELETE|UPSERT)\b/i;
/** Text parameters shorter than this are too common to point at anything. */
const NAMED_MIN = 3;

export function findCulprits(
  message: string,
  steps: readonly Step[],
  finalReads: readonly Statement[] = [],
): Culprits {
  // A write that changed no row wrote nothing the invariant could be about, and neither did one
  // into a database the invariants did not read, when the trace shows what they read.
  const read = new Set(finalReads.map((s) => s.db));
  const writes = steps
    .flatMap((step) => step.statements)
    .filter(
      (s) =>
        WRITE.test(sqlOf(s)) &&
        (!s.db.includes(":") || s.db.startsWith("DO:")) &&
        s.result !== "0 changed" &&
        (read.size === 0 || read.has(s.db)),
    );
  const unique = message.match(/^(\d+) rows of ([\s\S]+) in D1:(\S+) share ([\s\S]+)$/);
  if (unique) {
    const [, count, table, db, share] = unique as unknown as [string, string, string, string, string];
    const values = sharedValues(share);
    const statements = new Map<Statement, string>();
    for (const s of writes) {
      const all = values.length > 0 && values.every((v) => s.params.includes(v) || s.sql.includes(v));
      if (s.db === db && all && writesInto(s.sql, table)) statements.set(s, `row with ${share}`);
    }
    return { statements, unique: { count: Number(count), table, db, share } };
  }
  const statements = new Map<Statement, string>();
  for (const s of writes) {
    const named = s.params
      .filter((p) => p.startsWith('"') && paramText(p).length >= NAMED_MIN && message.includes(paramText(p)))
      .slice(0, 3);
    if (named.length > 0) statements.set(s, `${named.join(", ")} named by the invariant`);
  }
  return { statements };
}

/** A statement's SQL: a Durable Object's is traced after `SQL: `. */
function sqlOf(s: Statement): string {
  return s.db.startsWith("DO:") && s.sql.startsWith("SQL: ") ? s.sql.slice("SQL: ".length) : s.sql;
}

/** The table a write names first (`INSERT INTO t`, `UPDATE OR IGNORE t`, `DELETE FROM t`). */
const TARGET =
  /^\s*(?:(?:INSERT|REPLACE|UPSERT)(?:\s+OR\s+\w+)?\s+INTO|UPDATE(?:\s+OR\s+\w+)?|DELETE\s+FROM)\s+["`[]?(?:\w+["`\]]?\.["`[]?)?(\w+)/i;

/**
 * Whether `sql` writes into `table`, by the table its statement names: a write that names
 * another table only shares a value with the rows (an order id in a status update). A statement
 * this cannot read counts, so that a write is never hidden for want of parsing it.
 */
function writesInto(sql: string, table: string): boolean {
  const target = sql.match(TARGET)?.[1];
  return target === undefined || target.toLowerCase() === table.toLowerCase();
}

/** `order_id = "o-2"` → [`"o-2"`]; `(a, b) = ("x", 2)` → [`"x"`, `2`], as parameters print. */
function sharedValues(share: string): string[] {
  const one = share.match(/^[^()=]+ = ([\s\S]+)$/);
  if (one) return [one[1] as string];
  const many = share.match(/^\([^()]*\) = \(([\s\S]*)\)$/);
  if (!many) return [];
  const values: string[] = [];
  const token = /"(?:[^"\\]|\\.)*"|[^,\s]+/g;
  for (const m of (many[1] as string).matchAll(token)) values.push(m[0]);
  return values;
}
