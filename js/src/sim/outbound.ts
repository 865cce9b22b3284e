/**
 * Outbound `fetch` from Worker code: one effect of the invocation, answered by the scenario's
 * `outbound()` scripts. (Being written.)
 */

import type { RunContext } from "./context.ts";

export function outboundFetch(run: RunContext, input: unknown, init: unknown): Promise<Response> {
  void run;
  void input;
  void init;
  return Promise.reject(new Error("outbound fetch is not simulated yet"));
}
