/**
 * Redirects a service binding's fetch follows with a body (js/test/fixtures/binding-redirects,
 * whose Worker answers 200 in Miniflare 4.20260426 only when every case goes as in workerd): a
 * 307 or 308 sends the body again, unless it was made from a stream; a stream body goes over a
 * binding on the Node runtime as in workerd.
 */

import { expect, it } from "vitest";
import { check } from "../src/index.ts";

const fixture = new URL("./fixtures/binding-redirects/redirects.sim.ts", import.meta.url).pathname;

it.each(["node", "workerd"] as const)("follows them as workerd does (Worker code in %s)", async (runtime) => {
  const result = await check(fixture, { runtime });
  expect(result.verdict, result.verdict === "VIOLATED" ? result.message : "").toBe("BOUNDED");
});
