/**
 * What a user would do instead of eutaxy: the same runs against real workerd through Miniflare.
 * Both Workers run in one Miniflare, the checkout reaching the payments Worker's `Payments`
 * entrypoint over its service binding, the payments database in Miniflare's D1 (in memory). A run
 * drops and re-creates the tables through Miniflare's D1 binding (fresh storage per run), then
 * `dispatchFetch`es the requests one after the other and reads each answer.
 */

import { Miniflare } from "miniflare";
import type { OrderRequest } from "./orders.ts";
import type { WorkerSource } from "./workers.ts";

export interface MiniflareRunner {
  /** Milliseconds from `new Miniflare` until it is ready. */
  readonly startMs: number;
  /** One run; answers the milliseconds its requests took (the rest was the reset of the tables). */
  run(): Promise<number>;
  /** Rows of `table` in the first D1 database of Worker `worker`. */
  count(worker: string, table: string): Promise<number>;
  dispose(): Promise<void>;
}

export async function startMiniflare(
  workers: readonly WorkerSource[],
  schema: readonly string[],
  requests: readonly OrderRequest[],
): Promise<MiniflareRunner> {
  const started = performance.now();
  const mf = new Miniflare({
    workers: workers.map((w) => ({
      name: w.name,
      modules: true,
      script: w.code,
      compatibilityDate: w.compatibilityDate,
      d1Databases: { ...w.d1 },
      serviceBindings: Object.fromEntries(
        Object.entries(w.services).map(([binding, s]) => [
          binding,
          s.entrypoint === undefined ? { name: s.service } : { name: s.service, entrypoint: s.entrypoint },
        ]),
      ),
    })),
  });
  await mf.ready;
  const startMs = performance.now() - started;
  const databases: Awaited<ReturnType<Miniflare["getD1Database"]>>[] = [];
  for (const w of workers) {
    for (const binding of Object.keys(w.d1)) databases.push(await mf.getD1Database(binding, w.name));
  }
  const tables = schema
    .map((s) => /create\s+table\s+(?:if\s+not\s+exists\s+)?(\w+)/i.exec(s)?.[1])
    .filter((t): t is string => t !== undefined);
  const reset = [...tables.map((t) => `DROP TABLE IF EXISTS ${t}`), ...schema];

  return {
    startMs,
    async run() {
      for (const db of databases) await db.batch(reset.map((sql) => db.prepare(sql)));
      const started = performance.now();
      for (const request of requests) {
        const response = await mf.dispatchFetch(`https://checkout.bench${request.path}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(request.body),
        });
        const text = await response.text();
        if (response.status !== 200)
          throw new Error(`Miniflare: ${request.path} answered ${response.status}: ${text}`);
      }
      return performance.now() - started;
    },
    async count(worker, table) {
      const w = workers.find((x) => x.name === worker);
      const binding = Object.keys(w?.d1 ?? {})[0];
      if (binding === undefined) throw new Error(`Miniflare: ${worker} has no database`);
      const db = await mf.getD1Database(binding, worker);
      const row = await db.prepare(`SELECT count(*) AS n FROM ${table}`).first<{ n: number }>();
      return row?.n ?? 0;
    },
    dispose: () => mf.dispose(),
  };
}
