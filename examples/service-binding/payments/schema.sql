-- The payments Worker's database: one row per charge, one charge per idempotency key.
CREATE TABLE IF NOT EXISTS charges (
  charge_id INTEGER PRIMARY KEY AUTOINCREMENT,
  idempotency_key TEXT NOT NULL UNIQUE,
  order_id TEXT NOT NULL,
  amount_cents INTEGER NOT NULL,
  created_at TEXT NOT NULL DEFAULT (datetime('now'))
);
