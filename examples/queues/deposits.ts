/**
 * What both scenarios send and check: three deposits (`msg-1` … `msg-3`), and the invariant that
 * no account is credited more than the run deposited to it. The run's deposits are the events it
 * delivered (`state.events`): a shrunk counterexample may keep only some.
 */

import { invariant } from "eutaxy/cloudflare";
import type { Deposit } from "./worker.ts";

export const DEPOSITS: readonly Deposit[] = [
  { account: "alice", amountCents: 2500 },
  { account: "bob", amountCents: 900 },
  { account: "alice", amountCents: 100 },
];

export const creditedOnce = invariant("credited-at-most-once", (state) => {
  const sent = DEPOSITS.filter((_, i) => state.events.includes(`msg-${i + 1}`));
  const deposited = (account: string) =>
    sent.filter((d) => d.account === account).reduce((sum, d) => sum + d.amountCents, 0);
  for (const row of state.d1("DB", "SELECT id, balance_cents FROM accounts ORDER BY id")) {
    const account = String(row.id);
    if (Number(row.balance_cents) > deposited(account)) {
      return `${account} was credited ${row.balance_cents} cents, but only ${deposited(account)} cents were deposited`;
    }
  }
  return true;
});
