/**
 * A signup Worker. `POST /signup` with `{ email, name }` creates an account in D1 and has the
 * mailer (another team's Worker, reached over the MAILER service binding by RPC) send the welcome
 * mail; the account records when it was welcomed. A second signup for an email that already has
 * an account is answered 409. Clients resend a signup that got no answer.
 *
 * The unit tests in test/worker.test.ts pass. Run `pnpm test` to see the scenario test find what
 * they cannot: a signup whose invocation dies after the account is created is resent, the resend
 * finds the account and answers 409, and the welcome mail is never sent.
 */

/** The welcome mail the mailer sends; it sends one mail per idempotency key. */
export interface WelcomeMail {
  readonly to: string;
  readonly name: string;
  readonly idempotencyKey: string;
}

/** The mailer Worker's RPC interface, as its team documents it. */
export interface Mailer {
  sendWelcome(mail: WelcomeMail): Promise<{ messageId: string }>;
}

export interface Env {
  readonly DB: D1Database;
  readonly MAILER: Mailer;
}

interface Signup {
  readonly email: string;
  readonly name: string;
}

/** The signup in the request's JSON body, or undefined when it is not one. */
export async function readSignup(request: Request): Promise<Signup | undefined> {
  const body = (await request.json().catch(() => undefined)) as Partial<Signup> | undefined;
  if (typeof body?.email !== "string" || !body.email.includes("@")) return undefined;
  if (typeof body.name !== "string" || body.name === "") return undefined;
  return { email: body.email.toLowerCase(), name: body.name };
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    if (request.method !== "POST" || new URL(request.url).pathname !== "/signup") {
      return new Response("not found", { status: 404 });
    }
    const signup = await readSignup(request);
    if (!signup) return new Response("expected { email, name }", { status: 400 });

    const existing = await env.DB.prepare("SELECT id FROM users WHERE email = ?").bind(signup.email).first();
    if (existing) return new Response("already registered", { status: 409 });

    const id = crypto.randomUUID();
    await env.DB.prepare("INSERT INTO users (id, email, name, created_at) VALUES (?, ?, ?, ?)")
      .bind(id, signup.email, signup.name, new Date().toISOString())
      .run();
    const { messageId } = await env.MAILER.sendWelcome({ to: signup.email, name: signup.name, idempotencyKey: id });
    await env.DB.prepare("UPDATE users SET welcomed_at = ?, welcome_message_id = ? WHERE id = ?")
      .bind(new Date().toISOString(), messageId, id)
      .run();
    return Response.json({ id }, { status: 201 });
  },
} satisfies ExportedHandler<Env>;
