-- Account balances, and the queue messages the fixed consumer has already applied.
CREATE TABLE accounts (
  id TEXT PRIMARY KEY,
  balance_cents INTEGER NOT NULL
);
INSERT INTO accounts (id, balance_cents) VALUES ('alice', 0), ('bob', 0);

CREATE TABLE processed_messages (
  message_id TEXT PRIMARY KEY
);
