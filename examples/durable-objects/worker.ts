/**
 * A visit counter. The Worker asks one Durable Object, `Counter` named "global", to count each
 * visit and answers with the new count. To save writes, the object keeps the count in memory
 * and writes it to its storage every 10 visits, or when an operator asks it to (`POST /flush`,
 * run before a deploy). Run `eutaxy check ./counter.sim.ts` to see what a reset of the object
 * does to visits it has already acknowledged.
 */

import { DurableObject } from "cloudflare:workers";

export interface Env {
  readonly COUNTER: DurableObjectNamespace<Counter>;
}

/** Visits the object counts between two writes. */
const SAVE_EVERY = 10;

export class Counter extends DurableObject<Env> {
  protected count = 0;
  private unsaved = 0;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    // Loads the saved count before the object serves its first call.
    ctx.blockConcurrencyWhile(async () => {
      const sql = ctx.storage.sql;
      sql.exec("CREATE TABLE IF NOT EXISTS counter (id INTEGER PRIMARY KEY CHECK (id = 1), value INTEGER NOT NULL)");
      sql.exec("INSERT OR IGNORE INTO counter (id, value) VALUES (1, 0)");
      this.count = sql.exec<{ value: number }>("SELECT value FROM counter").one().value;
    });
  }

  /** Counts one visit and returns the count. */
  increment(): number {
    this.count++;
    this.unsaved++;
    if (this.unsaved >= SAVE_EVERY) this.save();
    return this.count;
  }

  /** Writes the count to storage now. */
  flush(): number {
    this.save();
    return this.count;
  }

  protected save(): void {
    this.ctx.storage.sql.exec("UPDATE counter SET value = ? WHERE id = 1", this.count);
    this.unsaved = 0;
  }
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const { pathname } = new URL(request.url);
    if (request.method !== "POST" || (pathname !== "/visit" && pathname !== "/flush")) {
      return new Response("not found", { status: 404 });
    }
    const counter = env.COUNTER.getByName("global");
    try {
      const count = pathname === "/visit" ? await counter.increment() : await counter.flush();
      return Response.json({ count });
    } catch (error) {
      // The object could not count this visit; the client may try again.
      return new Response(`counter unavailable: ${(error as Error).message}`, { status: 503 });
    }
  },
} satisfies ExportedHandler<Env>;
