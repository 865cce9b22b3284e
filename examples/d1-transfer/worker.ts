/**
 * A bank Worker that moves money between two accounts in D1: `POST /transfers` with
 * `{ from, to, amountCents }`. The planted version debits and credits with two separate
 * statements. Each is right on its own, and D1 runs each one atomically, but nothing makes
 * the pair atomic. Run `eutaxy check ./transfer.sim.ts` to see what happens between them.
 */

export interface Env {
  readonly DB: D1Database;
}

export interface Transfer {
  readonly from: string;
  readonly to: string;
  readonly amountCents: number;
}

/** How a transfer reaches the database. */
export type Move = (db: D1Database, transfer: Transfer) => Promise<void>;

function debit(db: D1Database, { from, amountCents }: Transfer): D1PreparedStatement {
  return db.prepare("UPDATE accounts SET balance = balance - ?1 WHERE id = ?2").bind(amountCents, from);
}

function credit(db: D1Database, { to, amountCents }: Transfer): D1PreparedStatement {
  return db.prepare("UPDATE accounts SET balance = balance + ?1 WHERE id = ?2").bind(amountCents, to);
}

/** The planted move: the debit, then the credit, each its own statement and its own transaction. */
export const twoStatements: Move = async (db, transfer) => {
  await debit(db, transfer).run();
  await credit(db, transfer).run();
};

/** The fixed move: both statements in one batch, which D1 runs as one transaction. */
export const oneBatch: Move = async (db, transfer) => {
  await db.batch([debit(db, transfer), credit(db, transfer)]);
};

export function bank(move: Move): ExportedHandler<Env> {
  return {
    async fetch(request: Request, env: Env): Promise<Response> {
      if (request.method !== "POST" || new URL(request.url).pathname !== "/transfers") {
        return new Response("not found", { status: 404 });
      }
      const transfer = (await request.json()) as Transfer;
      await move(env.DB, transfer);
      return Response.json({ moved: transfer.amountCents, from: transfer.from, to: transfer.to });
    },
  };
}

export default bank(twoStatements);
