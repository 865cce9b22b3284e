/**
 * Sign-up: `POST /signup` with `{ email }` creates an account unless one exists for the address.
 * The lookup and the insert are one statement, so no other request can come between them.
 */

interface Env {
  DB: D1Database;
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const { email } = await request.json<{ email: string }>();
    const address = email.trim().toLowerCase();
    const id = crypto.randomUUID();
    const inserted = await env.DB.prepare(
      "INSERT INTO users (id, email) SELECT ?1, ?2 WHERE NOT EXISTS (SELECT 1 FROM users WHERE email = ?2)",
    )
      .bind(id, address)
      .run();
    if (inserted.meta.changes === 0) {
      return Response.json({ error: "this address already has an account" }, { status: 409 });
    }
    return Response.json({ id }, { status: 201 });
  },
} satisfies ExportedHandler<Env>;
