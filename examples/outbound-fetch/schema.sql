-- Every charge the payment provider made for the store, by the provider's charge id.
CREATE TABLE IF NOT EXISTS charges (
  charge_id TEXT PRIMARY KEY,
  order_id TEXT NOT NULL,
  amount_cents INTEGER NOT NULL
);
