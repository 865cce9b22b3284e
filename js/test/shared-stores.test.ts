/**
 * Workers that bind one database share it (js/test/fixtures/shared-stores). On Cloudflare, and in
 * Miniflare, every Worker that binds D1 database_id X reads and writes the same rows, every Worker
 * that binds KV namespace id Y the same keys, every Worker that binds R2 bucket_name Z the same
 * objects, and every Worker that binds a Durable Object class with script_name the same objects;
 * a race between two such Workers is a race on one database, which the check must find, on both
 * runtimes alike.
 */

import { describe, expect, it } from "vitest";
import { type CheckResult, check, InputError } from "../src/index.ts";
import { project } from "./files.ts";
import { violated } from "./verdict.ts";

const fixture = (path: string) => new URL(`fixtures/shared-stores/${path}`, import.meta.url).pathname;

/** Everything in a result but the wall-clock time it took. */
function comparable(result: CheckResult): Omit<CheckResult, "elapsedMs"> {
  const { elapsedMs: _elapsedMs, ...rest } = result;
  return rest;
}

function failure(file: string): Promise<Error> {
  return check(file).then(
    (result) => new Error(`expected bad input, got ${result.verdict}`),
    (error: unknown) => error as Error,
  );
}

describe("two Workers binding one D1 database_id", () => {
  it("share it: a sign-up and an invite that each look up, then insert, make two accounts", async () => {
    // The invariant reads the admin Worker's binding; the store is named after the web Worker's.
    const result = violated(await check(fixture("d1/signup.sim.ts")));
    expect(result.message).toBe('2 rows of users in D1:DB share email = "ada@example.com"');
    expect(result.faults).toEqual([]);
    // The invite's lookup ran between the sign-up's lookup and its insert, on the same database.
    expect(result.trace.filter((line) => /^req-\S+ effect #\d/.test(line))).toEqual([
      "req-1#1 effect #0 D1:DB first: proceed",
      "req-2#1 effect #0 Service:ADMIN invite: proceed",
      "req-2#1/0 effect #0 D1:DB first: proceed",
      "req-2#1/0 effect #1 D1:DB run: proceed",
      "req-1#1 effect #1 D1:DB run: proceed",
    ]);
  });

  it("holds with a UNIQUE email, whichever insert comes second", async () => {
    const result = await check(fixture("d1/signup.fixed.sim.ts"));
    expect(result.verdict).toBe("BOUNDED");
  });

  it("share it without a database_id too, keyed by the binding's name as wrangler dev keys it", async () => {
    const result = violated(await check(fixture("d1/signup.no-id.sim.ts")));
    expect(result.message).toBe('2 rows of users in D1:DB share email = "ada@example.com"');
  });

  it("one request at a time: the invite finds the sign-up's account, read through either binding", async () => {
    // The schema goes in through admin/DB alone; the web Worker's DB has its table all the same.
    const result = await check(fixture("d1/sequential.sim.ts"));
    expect(result.verdict).toBe("BOUNDED");
  });

  it("refuses to set the database up through both of its bindings, naming both", async () => {
    const error = await failure(fixture("d1/twice.sim.ts"));
    expect(error).toBeInstanceOf(InputError);
    expect(error.message).toMatch(
      /twice\.sim\.ts: setup\[2\]: d1Schema\("admin\/DB", "\S*schema\.sql"\) sets up the D1 database that setup\[1\] set up as DB: DB and admin\/DB are one database \(database_id f1111111-2222-3333-4444-555555555555\), shared as on Cloudflare; apply each schema to it once, through one of its names \(d1Schema\("DB", …\)\)$/,
    );
  });

  it("refuses one database_id under two database_names: one of the configs copied the other's id", async () => {
    const error = await failure(fixture("d1/renamed.sim.ts"));
    expect(error).toBeInstanceOf(InputError);
    expect(error.message).toMatch(
      /admin\/wrangler\.renamed\.jsonc: d1_databases binds DB \(database_name "audit"\) to the D1 database web binds as DB \(database_name "accounts", \S*wrangler\.jsonc\): both have database_id f1111111-2222-3333-4444-555555555555, and one database_id is one database, shared by every Worker that binds it; give each database its own database_id, or both bindings the same database_name$/,
    );
  });
});

describe("D1 bindings without a database_id", () => {
  /**
   * A Worker that inserts a note through its NOTES and answers what the reader Worker counts
   * through its DB; each binding's ids (wrangler config fields) are given.
   */
  const pair = (writer: Record<string, string>, reader: Record<string, string>) =>
    project({
      "wrangler.json": JSON.stringify({
        name: "writer",
        main: "worker.ts",
        compatibility_date: "2025-09-01",
        services: [{ binding: "READER", service: "reader" }],
        d1_databases: [{ binding: "NOTES", ...writer }],
      }),
      "worker.ts": `export default { async fetch(_r: Request, env: { NOTES: D1Database; READER: Fetcher }) {
        await env.NOTES.prepare("INSERT INTO notes VALUES ('hi')").run();
        return new Response(await (await env.READER.fetch("https://reader/")).text());
      } };`,
      "reader/wrangler.json": JSON.stringify({
        name: "reader",
        main: "worker.ts",
        compatibility_date: "2025-09-01",
        d1_databases: [{ binding: "DB", ...reader }],
      }),
      "reader/worker.ts": `export default { async fetch(_r: Request, env: { DB: D1Database }) {
        const row = await env.DB.prepare("SELECT count(*) AS n FROM notes").first<{ n: number }>();
        return new Response(String(row?.n));
      } };`,
      "schema.sql": "CREATE TABLE IF NOT EXISTS notes (text TEXT);",
      "s.sim.ts": `import { callee, d1Schema, defineScenario, http, invariant } from "eutaxy/cloudflare";
        export default defineScenario({
          name: "preview",
          worker: { entry: "./worker.ts", config: "./wrangler.json" },
          setup: [callee("READER", { config: "./reader/wrangler.json" }), d1Schema("NOTES", "./schema.sql")],
          drive: http([{ path: "/" }]),
          invariants: [invariant("reader-counts-the-note", (s) => s.responses.every((r) => r.body === "1") || s.responses.map((r) => r.body).join(" "))],
          bounds: { maxFaultsPerRun: 0 },
        });`,
    });

  it("are one database when they have one preview_database_id, as wrangler dev keys them", async () => {
    const dir = pair({ preview_database_id: "p-notes" }, { preview_database_id: "p-notes" });
    expect((await check(`${dir}/s.sim.ts`)).verdict).toBe("BOUNDED");
  });

  it("are two databases when their database_ids differ, whatever their preview_database_id", async () => {
    const dir = pair(
      { database_id: "d-1", preview_database_id: "p-notes" },
      { database_id: "d-2", preview_database_id: "p-notes" },
    );
    // The reader's database has no notes table: the writer's schema went to the writer's alone.
    expect((await check(`${dir}/s.sim.ts`)).verdict).toBe("VIOLATED");
  });
});

describe("two Workers binding one KV namespace id", () => {
  it("share it: the reader sees the writer's put, and state.kv reads it through the reader's binding", async () => {
    const result = await check(fixture("kv/flag.sim.ts"));
    expect(result.verdict).toBe("BOUNDED");
  });
});

describe("two Workers binding one R2 bucket_name", () => {
  it("share it: the reader sees the writer's upload through a binding of another name, as state.r2 does", async () => {
    const result = await check(fixture("r2/logo.sim.ts"));
    expect(result.verdict).toBe("BOUNDED");
  });

  it("do not share buckets of different names", async () => {
    const result = violated(await check(fixture("r2/logo.apart.sim.ts")));
    expect(result.message).toBe('answers: {"readerSees":"nothing"}');
  });
});

describe("a Durable Object class bound with script_name", () => {
  it("is the defining Worker's: both Workers reach the same object", async () => {
    const result = await check(fixture("durable-object/count.sim.ts"));
    expect(result.verdict).toBe("BOUNDED");
  });

  it("is named in each Worker's calls as its invariants name it: the callee's with its prefix", async () => {
    const result = await check(fixture("durable-object/count.faults.sim.ts"));
    expect(result.verdict).toBe("VIOLATED");
    if (result.verdict !== "VIOLATED") return;
    const calls = result.trace.filter((line) => / effect #\d+ DO:/.test(line));
    expect(calls).toEqual([
      "req-1#1 effect #0 DO:COUNTER increment: proceed",
      "req-1#1/1 effect #0 DO:counter/COUNTER count: proceed",
    ]);
  });
});

describe("shared stores on the workerd runtime", () => {
  for (const scenario of ["d1/signup.sim.ts", "d1/signup.fixed.sim.ts", "kv/flag.sim.ts"]) {
    it(`gives ${scenario} the verdict and trace Node gives it`, async () => {
      const node = await check(fixture(scenario));
      const workerd = await check(fixture(scenario), { runtime: "workerd" });
      expect(comparable(workerd)).toEqual(comparable(node));
    });
  }
});
