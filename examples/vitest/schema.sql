-- One account per email. `welcomed_at` is set once the welcome mail has been handed to the mailer.
CREATE TABLE users (
  id TEXT PRIMARY KEY,
  email TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  created_at TEXT NOT NULL,
  welcomed_at TEXT,
  welcome_message_id TEXT
);
