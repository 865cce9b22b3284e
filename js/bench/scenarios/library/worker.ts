/**
 * Benchmark only: the service-binding example's fixed checkout and its payments in one Worker,
 * written as many Workers are: Hono for routing, zod for validating the body, Drizzle over D1.
 * Its bundle is about 1 MB (zod's whole API), which eutaxy evaluates anew in every run, as it
 * does any Worker's, while the floor evaluates it once.
 */

import type { D1Database } from "@cloudflare/workers-types";
import { eq } from "drizzle-orm";
import { drizzle } from "drizzle-orm/d1";
import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { Hono } from "hono";
import { z } from "zod";

// The table of examples/service-binding/payments/schema.sql (its created_at left to its default).
const charges = sqliteTable("charges", {
  chargeId: integer("charge_id").primaryKey({ autoIncrement: true }),
  idempotencyKey: text("idempotency_key").notNull().unique(),
  orderId: text("order_id").notNull(),
  amountCents: integer("amount_cents").notNull(),
});

const payment = z.object({ amountCents: z.number().int().positive() });

const app = new Hono<{ Bindings: { DB: D1Database } }>();

app.post("/orders/:orderId/pay", async (c) => {
  const parsed = payment.safeParse(await c.req.json());
  if (!parsed.success) return c.json({ error: parsed.error.issues }, 400);
  const orderId = c.req.param("orderId");
  const key = `order:${orderId}`;
  const db = drizzle(c.env.DB);
  await db
    .insert(charges)
    .values({ idempotencyKey: key, orderId, amountCents: parsed.data.amountCents })
    .onConflictDoNothing({ target: charges.idempotencyKey });
  const [charge] = await db
    .select({ chargeId: charges.chargeId })
    .from(charges)
    .where(eq(charges.idempotencyKey, key));
  if (!charge) return c.json({ error: `no charge for ${key}` }, 500);
  return c.json({ orderId, chargeId: charge.chargeId });
});

export default app;
