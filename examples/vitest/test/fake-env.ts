/**
 * A fake env for unit tests that call the Worker's fetch directly, in plain Node: a D1 that
 * answers the few statements the signup Worker sends from an in-memory table, and a mailer that
 * records what it was asked to send. It is as far as a unit test goes: every call succeeds, once.
 */

import { vi } from "vitest";
import type { Env, WelcomeMail } from "../worker";

interface Row {
  id: string;
  email: string;
  name: string;
  created_at: string;
  welcomed_at: string | null;
  welcome_message_id: string | null;
}

export interface FakeEnv extends Env {
  /** The users table, by email. */
  readonly users: Map<string, Row>;
  /** Every welcome mail the mailer was asked to send, in order. */
  readonly mails: WelcomeMail[];
}

export function fakeEnv(): FakeEnv {
  const users = new Map<string, Row>();
  const mails: WelcomeMail[] = [];

  function run(sql: string, params: unknown[]): { rows: Row[]; changes: number } {
    const [a, b, c, d] = params as string[];
    if (sql.startsWith("SELECT")) {
      const row = users.get(a as string);
      return { rows: row ? [row] : [], changes: 0 };
    }
    if (sql.startsWith("INSERT INTO users")) {
      if (users.has(b as string)) {
        if (sql.includes("ON CONFLICT(email) DO NOTHING")) return { rows: [], changes: 0 };
        throw new Error("D1_ERROR: UNIQUE constraint failed: users.email: SQLITE_CONSTRAINT");
      }
      const row: Row = {
        id: a as string,
        email: b as string,
        name: c as string,
        created_at: d as string,
        welcomed_at: null,
        welcome_message_id: null,
      };
      users.set(row.email, row);
      return { rows: [], changes: 1 };
    }
    if (sql.startsWith("UPDATE users SET welcomed_at")) {
      const row = [...users.values()].find((r) => r.id === c);
      if (row) Object.assign(row, { welcomed_at: a, welcome_message_id: b });
      return { rows: [], changes: row ? 1 : 0 };
    }
    throw new Error(`the fake D1 does not know this statement: ${sql}`);
  }

  const prepare = (sql: string) => {
    let params: unknown[] = [];
    const statement = {
      bind: (...values: unknown[]) => {
        params = values;
        return statement;
      },
      first: async () => run(sql, params).rows[0] ?? null,
      all: async () => ({ results: run(sql, params).rows, success: true, meta: {} }),
      run: async () => ({ results: [], success: true, meta: { changes: run(sql, params).changes } }),
    };
    return statement;
  };

  return {
    DB: { prepare } as unknown as D1Database,
    MAILER: {
      sendWelcome: vi.fn(async (mail: WelcomeMail) => {
        mails.push(mail);
        return { messageId: `msg-${mails.length}` };
      }),
    },
    users,
    mails,
  };
}
