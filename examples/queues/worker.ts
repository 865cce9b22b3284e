/**
 * A ledger Worker that consumes the queue `deposits`: each message is a deposit, and the
 * consumer credits its amount to the account's balance. The queue delivers every message at
 * least once, and sometimes more than once. Run `eutaxy check ./deposits.sim.ts` to see what
 * a second delivery of the same deposit does to a balance.
 */

export interface Env {
  readonly DB: D1Database;
}

export interface Deposit {
  readonly account: string;
  readonly amountCents: number;
}

/** Credits one deposit; the planted consumer adds the amount, whatever came before. */
export async function credit(db: D1Database, message: Message<Deposit>): Promise<void> {
  const { account, amountCents } = message.body;
  await db
    .prepare("UPDATE accounts SET balance_cents = balance_cents + ?1 WHERE id = ?2")
    .bind(amountCents, account)
    .run();
}

export function ledger(apply: (db: D1Database, message: Message<Deposit>) => Promise<void>) {
  return {
    async queue(batch: MessageBatch<Deposit>, env: Env): Promise<void> {
      for (const message of batch.messages) await apply(env.DB, message);
      // Returning acknowledges every message of the batch.
    },
  } satisfies ExportedHandler<Env, Deposit>;
}

export default ledger(credit);
