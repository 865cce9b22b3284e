/**
 * What both scenarios send and check: three deposits, and the invariant that no account is
 * credited more than was deposited to it. (A run may deliver fewer deposits than these, when the
 * shrinker drops events or a redelivery is still waiting, so the check is one-sided.)
 */

import { invariant } from "eutaxy/cloudflare";
import type { Deposit } from "./worker.ts";

export const DEPOSITS: readonly Deposit[] = [
  { account: "alice", amountCents: 2500 },
  { account: "bob", amountCents: 900 },
  { account: "alice", amountCents: 100 },
];

function deposited(account: string): number {
  return DEPOSITS.filter((d) => d.account === account).reduce((sum, d) => sum + d.amountCents, 0);
}

export const creditedOnce = invariant("credited-at-most-once", (state) => {
  for (const row of state.d1("DB", "SELECT id, balance_cents FROM accounts ORDER BY id")) {
    const account = String(row.id);
    if (Number(row.balance_cents) > deposited(account)) {
      return `${account} was credited ${row.balance_cents} cents, but only ${deposited(account)} cents were deposited`;
    }
  }
  return true;
});
