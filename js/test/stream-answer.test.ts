/**
 * A response whose body's stream fails after the status went out (a CSV export whose next page
 * fails): the client has the status and the body up to there, as workerd's client does
 * (Miniflare 4.20260426 answers 200 "chunk1\nchunk2\n"), not a 500. One whose writer gives up
 * without closing it hangs: the runtime cancels the request, and its client has the status and
 * an empty body (Miniflare: 200 ""), where eutaxy had stopped the check as stuck.
 */

import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { check } from "../src/index.ts";
import { project } from "./files.ts";

/**
 * The verdict of a check of an export Worker whose fetch handler is `handler`, under an invariant
 * that its one answer is 200 with body `body`.
 */
async function exported(
  handler: string,
  body: string,
  runtime: "node" | "workerd" = "node",
): Promise<string> {
  const dir = project(
    {
      "wrangler.jsonc": JSON.stringify({
        name: "export",
        main: "worker.ts",
        compatibility_date: "2025-09-01",
      }),
      "worker.ts": `export default { ${handler} };`,
      "s.sim.ts": `import { defineScenario, http, invariant } from "eutaxy/cloudflare";
        export default defineScenario({
          name: "export",
          worker: { config: "./wrangler.jsonc" },
          drive: http([{ path: "/" }]),
          invariants: [invariant("answer", (s) => {
            const [r] = s.responses;
            return (r?.status === 200 && r.body === ${JSON.stringify(body)}) || "answered " + r?.status + " " + JSON.stringify(r?.body);
          })],
          bounds: { maxFaultsPerRun: 0 },
        });`,
    },
    "eutaxy-stream-",
  );
  const result = await check(join(dir, "s.sim.ts"), { runtime });
  return result.verdict === "VIOLATED" ? result.message : result.verdict;
}

it("keeps the status and the body read before the stream failed", async () => {
  const handler = `async fetch(): Promise<Response> {
    let page = 0;
    const rows = new ReadableStream({
      async pull(controller) {
        await scheduler.wait(1);
        page++;
        if (page <= 2) controller.enqueue(new TextEncoder().encode("chunk" + page + "\\n"));
        else throw new Error("the next page failed");
      },
    });
    return new Response(rows, { headers: { "content-type": "text/csv" } });
  }`;
  expect(await exported(handler, "chunk1\nchunk2\n")).toBe("BOUNDED");
});

describe.each(["node", "workerd"] as const)("a streamed answer whose writer gives up (%s)", (runtime) => {
  it("is canceled as hung: the client has the status and an empty body", async () => {
    const handler = `async fetch(_request: Request, _env: unknown, ctx: ExecutionContext): Promise<Response> {
      const { readable, writable } = new TransformStream();
      const writer = writable.getWriter();
      ctx.waitUntil((async () => {
        await writer.write(new TextEncoder().encode("partial"));
        await scheduler.wait(5);
        throw new Error("the next page failed");
      })());
      return new Response(readable);
    }`;
    expect(await exported(handler, "", runtime)).toBe("BOUNDED");
  });
});
