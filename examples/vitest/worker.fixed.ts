/**
 * The signup Worker, fixed: a signup is idempotent per email. It creates the account unless one
 * exists (`ON CONFLICT(email) DO NOTHING`), then reads the account back; an account that was never
 * welcomed is a signup an earlier delivery left half done, so this delivery sends the welcome mail
 * and answers 201 as the first would have. Only an account already welcomed is answered 409.
 *
 * The mail goes out under the account's id as idempotency key, so a resend after the mailer was
 * called but before `welcomed_at` was written asks for the same mail again, which the mailer does
 * not send twice.
 */

import { type Env, readSignup } from "./worker";

interface Account {
  readonly id: string;
  readonly name: string;
  readonly welcomed_at: string | null;
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    if (request.method !== "POST" || new URL(request.url).pathname !== "/signup") {
      return new Response("not found", { status: 404 });
    }
    const signup = await readSignup(request);
    if (!signup) return new Response("expected { email, name }", { status: 400 });

    await env.DB.prepare(
      "INSERT INTO users (id, email, name, created_at) VALUES (?, ?, ?, ?) ON CONFLICT(email) DO NOTHING",
    )
      .bind(crypto.randomUUID(), signup.email, signup.name, new Date().toISOString())
      .run();
    const account = await env.DB.prepare("SELECT id, name, welcomed_at FROM users WHERE email = ?")
      .bind(signup.email)
      .first<Account>();
    if (!account) throw new Error(`the account of ${signup.email} is gone right after it was created`);
    if (account.welcomed_at !== null) return new Response("already registered", { status: 409 });

    const { messageId } = await env.MAILER.sendWelcome({
      to: signup.email,
      name: account.name,
      idempotencyKey: account.id,
    });
    await env.DB.prepare("UPDATE users SET welcomed_at = ?, welcome_message_id = ? WHERE id = ?")
      .bind(new Date().toISOString(), messageId, account.id)
      .run();
    return Response.json({ id: account.id }, { status: 201 });
  },
} satisfies ExportedHandler<Env>;
