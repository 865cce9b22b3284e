/**
 * The `http` driver: a client that sends each request in order to the Worker under check and
 * resends a request that got no answer, or an answer among `resendOn`, while it has retries
 * left. Request `i` is event `req-<i>`; its deliveries are `req-<i>#1`, `req-<i>#2`, ….
 */

import type { HttpDriver, HttpRequestSpec, ResendStatus } from "../cloudflare.ts";
import { CLOCK_START_MS } from "../engine.ts";
import { type RunContext, statusMatches } from "../sim/context.ts";
import { callHandler } from "../sim/handlers.ts";
import { incomingRequest } from "../sim/immutable-headers.ts";
import type { Invocation } from "../sim/invocation.ts";
import { summarize } from "../sim/run.ts";
import { UNCAUGHT } from "../trace.ts";
import { DELIVERY_ORDER, type SimEvent } from "./event.ts";
import { requestCf } from "./request-cf.ts";

export function httpEvents(driver: HttpDriver, first: number): SimEvent[] {
  return driver.requests.map((spec, i) => {
    const id = `req-${first + i}`;
    const request = requestParts(spec);
    return {
      id,
      footprint: DELIVERY_ORDER,
      ...(spec.atMs !== undefined ? { atMs: CLOCK_START_MS + spec.atMs } : {}),
      deliver: (run, index) => deliverRequest(run, index, id, request, driver.retries, driver.resendOn ?? []),
    };
  });
}

async function deliverRequest(
  run: RunContext,
  index: number,
  id: string,
  parts: RequestParts,
  retries: number,
  resendOn: readonly ResendStatus[],
): Promise<void> {
  const main = run.world.main;
  const url = `https://${main.name}.example.workers.dev${parts.path}`;
  for (let delivery = 1; ; delivery++) {
    const invocation = `${id}#${delivery}`;
    // A new Request per delivery: a resend carries the same request, its body unread, with the
    // immutable headers workerd gives a handler.
    const request = incomingRequest(url, parts.init);
    let cf: Record<string, unknown> | undefined;
    Object.defineProperty(request, "cf", { get: () => (cf ??= requestCf(parts.cf)), enumerable: true });
    const outcome = await run.deliver(invocation, {
      worker: main,
      // The body is read inside the invocation, so a body the Worker streams is part of it.
      body: async (ctx, env) => {
        // The invocation this body runs as, which the run loop may cancel while its answer is read.
        const answering = run.current;
        const response = await callHandler(run, main, undefined, "fetch", request, env, ctx);
        if (!(response instanceof Response)) {
          throw new TypeError("Incorrect type for Promise: the Promise did not resolve to 'Response'.");
        }
        const { text, failed } = await bodyOf(response, answering);
        const answer = { status: response.status, body: text };
        // The status went out before the body's stream failed: the client has it and a cut body.
        if (failed !== undefined && run.tracing) {
          run.trace(`${invocation} response body failed after ${text.length} characters: ${String(failed)}`);
        }
        // Traced as it goes out, before any later step of the invocation's ctx.waitUntil work.
        if (run.tracing)
          run.trace(`${invocation} answered ${answer.status}${answer.body === "" ? "" : ` ${answer.body}`}`);
        return answer;
      },
    });
    // The runtime answers an uncaught exception with a 500. The client resends when it got no
    // answer, or one it resends on, while it has retries left; the check's bounds may stop it.
    const { status, body } =
      outcome.kind === "returned"
        ? (outcome.value as { status: number; body: string })
        : { status: outcome.kind === "threw" ? 500 : 0, body: "" };
    if (outcome.kind === "threw" && run.tracing) run.trace(`${invocation} answered 500: ${UNCAUGHT}`);
    const resends = delivery <= retries && (status === 0 || resendOn.some((on) => statusMatches(status, on)));
    const resent = resends && run.engine.redeliver(index, delivery + 1);
    const unfinished = resends && !resent;
    run.respond({
      event: id,
      delivery,
      status,
      body,
      ...(outcome.kind === "threw" ? { error: thrown(outcome.error) } : {}),
      ...(unfinished ? { unfinished } : {}),
    });
    if (!resent) return;
  }
}

/**
 * What the client reads of an answer's body: all of it, or what came before its stream failed;
 * nothing of it once the runtime canceled `answering`, whose code would never end it
 * (`stopAnswer`): workerd's client then gets the status and an empty body (Miniflare 4.20260426).
 */
async function bodyOf(
  response: Response,
  answering: Invocation | undefined,
): Promise<{ text: string; failed?: unknown }> {
  if (response.body === null) return { text: "" };
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let canceled: Error | undefined;
  // Canceling the read ends the pending one at once, as done.
  if (answering) {
    answering.stopAnswer = (error) => {
      canceled = error;
      reader.cancel(error).catch(() => {});
    };
  }
  let text = "";
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (canceled) return { text: "", failed: canceled };
      if (done) return { text: text + decoder.decode() };
      text += decoder.decode(value, { stream: true });
    }
  } catch (failed) {
    return { text: text + decoder.decode(), failed };
  } finally {
    if (answering) answering.stopAnswer = undefined;
  }
}

/** A request of the scenario as every delivery sends it: its path and its `RequestInit`. */
interface RequestParts {
  readonly path: string;
  readonly init: RequestInit;
  /** The scenario's `request.cf` fields, over the default. */
  readonly cf: Readonly<Record<string, unknown>> | undefined;
}

/**
 * Made once per request of the scenario: the body serialized (JSON for anything but a string,
 * with `content-type: application/json` unless the scenario sets a content type) and the
 * headers as a plain record, which `Request` takes in faster than a `Headers`.
 */
function requestParts(spec: HttpRequestSpec): RequestParts {
  const headers: Record<string, string> = { ...spec.headers };
  let body: string | undefined;
  if (spec.body !== undefined) {
    if (typeof spec.body === "string") {
      body = spec.body;
    } else {
      body = JSON.stringify(spec.body);
      const typed = Object.keys(headers).some((name) => name.toLowerCase() === "content-type");
      if (!typed) headers["content-type"] = "application/json";
    }
  }
  const method = spec.method ?? (body === undefined ? "GET" : "POST");
  // As workerd gives a handler its request: `redirect: "manual"`, so a Worker that passes it to
  // fetch() hands a redirect back to its client instead of following it.
  const init: RequestInit = { method, headers, redirect: "manual", ...(body === undefined ? {} : { body }) };
  return { path: spec.path, init, cf: spec.cf };
}

/** An uncaught exception as `state.responses` gives it: its first line, `Error: …`. */
function thrown(error: unknown): string {
  const text =
    error instanceof Error ? `${error.name}: ${error.message}` : `a non-Error value: ${summarize(error)}`;
  return text.split("\n")[0] ?? text;
}
