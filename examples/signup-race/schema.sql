-- Accounts by e-mail address. The table has no UNIQUE constraint on email: the Worker is
-- meant to keep addresses unique itself.
CREATE TABLE users (
  id TEXT PRIMARY KEY,
  email TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);
