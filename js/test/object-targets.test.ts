/**
 * An RpcTarget a Durable Object hands out (js/test/fixtures/object-targets): its code is the
 * object's, so a call through its stub is a call on the object, hosted there like the object's
 * own methods, with faults at it and at what it calls; a crash inside resets the object, memory
 * and all, rather than leaving it halfway through the call.
 */

import { describe, expect, it } from "vitest";
import { check } from "../src/index.ts";

const fixture = (file: string) => new URL(`./fixtures/object-targets/${file}`, import.meta.url).pathname;

describe.each(["node", "workerd"] as const)(
  "a call through an RpcTarget of a Durable Object (%s)",
  (runtime) => {
    it("runs in the object: a crash in it leaves no flag of the object's raised", async () => {
      const result = await check(fixture("session.sim.ts"), { runtime });
      expect(result.verdict === "VIOLATED" ? result.message : result.verdict).toBe("BOUNDED");
    });

    it("is disposed when the request that holds its stub ends, as workerd disposes it", async () => {
      const result = await check(fixture("hold.sim.ts"), { runtime });
      expect(result.verdict === "VIOLATED" ? result.message : result.verdict).toBe("BOUNDED");
    });
  },
);
