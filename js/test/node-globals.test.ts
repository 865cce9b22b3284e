/**
 * Node's globals (`Buffer`, `process`, `global`, `setImmediate`, `clearImmediate`) as a Worker
 * sees them, by its compatibility flags and date: one Worker reports what each name is and what
 * using it does, and the check holds it, on both runtimes, to what Miniflare's workerd answers
 * when it runs the same Worker with the same flags and date. Without Node.js compatibility's
 * second version workerd defines none of them, so `Buffer.from("x")` throws a ReferenceError
 * there; eutaxy's runtimes, whose host has them all, must throw it too, or a Worker that crashes
 * on every request in production passes the check.
 */

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Miniflare } from "miniflare";
import { describe, expect, it } from "vitest";
import { check } from "../src/index.ts";
import { tempFolder } from "./files.ts";

/**
 * The Worker: what each name is, what reading it, a property of it and `typeof` of that do, and
 * what the global object has under the names.
 */
const WORKER = `
function outcome(use) {
  try {
    return typeof use();
  } catch (error) {
    return error.constructor.name + ": " + error.message;
  }
}

function shadowed(Buffer, process) {
  return typeof Buffer + " " + typeof process;
}

export default {
  async fetch() {
    return Response.json({
      typeofs: [typeof Buffer, typeof process, typeof global, typeof setImmediate, typeof clearImmediate],
      buffer: outcome(() => Buffer.from("x")),
      process: outcome(() => process.env),
      global: outcome(() => global.Object),
      setImmediate: outcome(() => setImmediate.name),
      clearImmediate: outcome(() => clearImmediate.name),
      member: outcome(() => typeof Buffer.from),
      feature: typeof Buffer !== "undefined" ? "node" : "web",
      shadowed: shadowed(1, "p"),
      onGlobal: [typeof globalThis.Buffer, typeof globalThis.process, typeof self.setImmediate],
      detected: globalThis.process?.env ? "node" : "web",
    });
  },
};
`;

/** What workerd answers for the Worker with `date` and `flags`, run by Miniflare as it is. */
async function workerdAnswer(date: string, flags: readonly string[]): Promise<string> {
  const mf = new Miniflare({
    modules: true,
    script: WORKER,
    compatibilityDate: date,
    compatibilityFlags: [...flags],
    cf: false,
  });
  try {
    return await (await mf.dispatchFetch("http://worker.invalid/")).text();
  } finally {
    await mf.dispose();
  }
}

/** A scenario that holds the Worker, with `date` and `flags`, to the answer `expected`. */
function scenario(date: string, flags: readonly string[], expected: string): string {
  const dir = tempFolder("eutaxy-node-globals-");
  writeFileSync(join(dir, "worker.js"), WORKER);
  writeFileSync(
    join(dir, "wrangler.json"),
    JSON.stringify({
      name: "globals",
      main: "worker.js",
      compatibility_date: date,
      compatibility_flags: flags,
    }),
  );
  const file = join(dir, "globals.sim.ts");
  writeFileSync(
    file,
    `import { defineScenario, http, invariant } from "eutaxy/cloudflare";
     export default defineScenario({
       name: "node-globals",
       worker: { entry: "./worker.js", config: "./wrangler.json" },
       drive: http([{ path: "/" }], { retries: 0 }),
       invariants: [
         invariant("as-workerd-answers", (state) => {
           const body = state.responses[0]?.body;
           return body === ${JSON.stringify(expected)} || \`the Worker answered \${body}\`;
         }),
       ],
       bounds: { maxFaultsPerRun: 0 },
     });`,
  );
  return file;
}

const CASES: readonly (readonly [string, string, readonly string[]])[] = [
  ["no flags", "2025-09-01", []],
  ["nodejs_compat", "2025-09-01", ["nodejs_compat"]],
  ["nodejs_compat before 2024-09-23, its first version", "2024-09-01", ["nodejs_compat"]],
  ["nodejs_compat held back by no_nodejs_compat_v2", "2025-09-01", ["nodejs_compat", "no_nodejs_compat_v2"]],
  ["nodejs_compat_v2 before 2024-09-23", "2024-09-01", ["nodejs_compat_v2"]],
  ["nodejs_als alone", "2025-09-01", ["nodejs_als"]],
];

describe.each(CASES)("a Worker with %s", (_, date, flags) => {
  it("sees Node's globals as workerd gives them, on both runtimes", async () => {
    const expected = await workerdAnswer(date, flags);
    const file = scenario(date, flags, expected);
    for (const runtime of ["node", "workerd"] as const) {
      const result = await check(file, { runtime });
      expect(result, `--runtime ${runtime}`).toMatchObject({ verdict: "BOUNDED" });
    }
  });
});

it("workerd answers a Worker without Node.js compatibility with ReferenceErrors", async () => {
  // The premise of the cases above, so that a workerd that changed its answer shows up here.
  expect(JSON.parse(await workerdAnswer("2025-09-01", []))).toEqual({
    typeofs: ["undefined", "undefined", "undefined", "undefined", "undefined"],
    buffer: "ReferenceError: Buffer is not defined",
    process: "ReferenceError: process is not defined",
    global: "ReferenceError: global is not defined",
    setImmediate: "ReferenceError: setImmediate is not defined",
    clearImmediate: "ReferenceError: clearImmediate is not defined",
    member: "ReferenceError: Buffer is not defined",
    feature: "web",
    shadowed: "number string",
    onGlobal: ["undefined", "undefined", "undefined"],
    detected: "web",
  });
});
