-- The coupons Worker's database: which order redeemed which coupon, at most one coupon per order.
CREATE TABLE IF NOT EXISTS redemptions (
  order_id TEXT PRIMARY KEY,
  coupon TEXT NOT NULL,
  percent_off INTEGER NOT NULL,
  redeemed_at TEXT NOT NULL DEFAULT (datetime('now'))
);
