/**
 * Sign-up: `POST /signup` with `{ email }` creates an account unless one exists for the address.
 * It looks the address up, and inserts only when the lookup found nothing.
 */

interface Env {
  DB: D1Database;
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const { email } = await request.json<{ email: string }>();
    const address = email.trim().toLowerCase();
    const existing = await env.DB.prepare("SELECT id FROM users WHERE email = ?").bind(address).first();
    if (existing) return Response.json({ error: "this address already has an account" }, { status: 409 });
    const id = crypto.randomUUID();
    await env.DB.prepare("INSERT INTO users (id, email) VALUES (?, ?)").bind(id, address).run();
    return Response.json({ id }, { status: 201 });
  },
} satisfies ExportedHandler<Env>;
