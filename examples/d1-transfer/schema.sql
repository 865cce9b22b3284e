-- The bank's accounts, in cents. Every run starts from these two: 200.00 in all.
CREATE TABLE IF NOT EXISTS accounts (
  id TEXT PRIMARY KEY,
  balance INTEGER NOT NULL
);
INSERT INTO accounts (id, balance) VALUES ('alice', 10000), ('bob', 10000);
