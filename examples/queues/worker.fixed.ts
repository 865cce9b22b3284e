/**
 * The same ledger, made safe to redeliver to: the credit and the record that this message was
 * applied are one D1 batch, one transaction, and the credit only happens when the message id is
 * not recorded yet. A redelivery finds its id and changes nothing.
 * `eutaxy check ./deposits.fixed.sim.ts` reports BOUNDED.
 */

import { type Deposit, ledger } from "./worker.ts";

export default ledger(async (db: D1Database, message: Message<Deposit>) => {
  const { account, amountCents } = message.body;
  await db.batch([
    db
      .prepare(
        "UPDATE accounts SET balance_cents = balance_cents + ?1 WHERE id = ?2 AND NOT EXISTS (SELECT 1 FROM processed_messages WHERE message_id = ?3)",
      )
      .bind(amountCents, account, message.id),
    db.prepare("INSERT OR IGNORE INTO processed_messages (message_id) VALUES (?1)").bind(message.id),
  ]);
});
