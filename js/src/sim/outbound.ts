/**
 * Outbound `fetch` from Worker code. While a run is active the global `fetch` comes here
 * (globals.ts); it never reaches the network. Each call is ONE effect of the invocation that is
 * running, labelled `fetch <METHOD> <origin><pathname>`, and the scenario's `outbound({...})`
 * scripts answer it: the handler whose URL prefix is the longest that the request's URL starts
 * with gets the request and returns the Response the Worker sees.
 *
 * Sources for the behaviour below:
 * - Cloudflare's docs, "Fetch" (developers.cloudflare.com/workers/runtime-apis/fetch/) and
 *   "Handlers": I/O is only allowed inside a handler, never at import time.
 * - workerd, src/workerd/jsg/util.c++ (`decodeTunneledException`): a subrequest whose connection
 *   drops rejects with a plain `Error("Network connection lost.")` (not a TypeError) that
 *   carries `retryable: true`. That is the transient fault offered here.
 * - The Fetch standard's "HTTP-redirect fetch": `redirect: "follow"` (the default) follows up
 *   to 20 redirects, and 301/302 turn a POST into a GET, 303 turns anything but HEAD into a GET.
 */

import type { OutboundHandlers } from "../cloudflare.ts";
import type { FootprintEntry } from "../engine.ts";
import { InputError, SimulationError } from "../errors.ts";
import { reasonFromRuntime } from "./abort.ts";
import { cacheRefusal } from "./compatibility.ts";
import type { RunContext } from "./context.ts";
import { GLOBAL_SCOPE, hostRead, withHostReads } from "./globals.ts";
import { fetched } from "./immutable-headers.ts";

/** Redirects one fetch follows at most, as the Fetch standard says. */
export const REDIRECTS_MAX = 20;

const OUTBOUND: readonly FootprintEntry[] = [{ resource: "outbound", write: true }];

export const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/** Methods that change nothing on the other side (RFC 9110, "Safe Methods"). */
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS", "TRACE"]);

/** Headers a redirect to GET drops along with the body (Fetch standard, "request-body-header name"). */
const REQUEST_BODY_HEADERS = ["content-encoding", "content-language", "content-location", "content-type"];

type OutboundHandler = OutboundHandlers[string];

/** The handler that answers `url`, with the prefix it was registered under. */
interface Match {
  readonly prefix: string;
  readonly handler: OutboundHandler;
}

/**
 * The global `fetch` while a run is active: one effect of `run.current`, answered by the
 * scenario's scripts. A URL no script answers ends the check with an InputError.
 */
export function outboundFetch(run: RunContext, input: unknown, init: unknown): Promise<Response> {
  const invocation = run.current;
  if (!invocation) return refusedAtImport();
  const worker = run.world.workers.find((w) => w.name === invocation.worker);
  const refused = cacheRefusal(worker?.config, (init as { cache?: unknown } | null | undefined)?.cache);
  if (refused) return Promise.reject(refused);
  let request: Request;
  try {
    // Built before the effect, as the runtime does: a bad URL or init rejects at once.
    request = new Request(
      input as ConstructorParameters<typeof Request>[0],
      streamingInit(init) as RequestInit | undefined,
    );
  } catch (error) {
    return Promise.reject(error);
  }
  // A signal that has already aborted (a deadline that passed) rejects the fetch at once.
  if (request.signal.aborted) return Promise.reject(request.signal.reason);
  const url = new URL(request.url);
  const match = findHandler(run.world.outbound, request.url);
  if (!match) {
    const error = unscripted(run, invocation.id, request.method, request.url);
    return Promise.reject(error);
  }
  return invocation.effect(
    `fetch ${request.method} ${url.origin}${url.pathname}`,
    // A signal aborted after the call was made and before it went out stops it there.
    () =>
      request.signal.aborted
        ? Promise.reject(request.signal.reason)
        : untilAborted(answer(run, invocation.id, request, match), request.signal),
    // The scenario's outbound handlers are its functions, which may keep state between calls.
    {
      transient: () => Promise.reject(connectionLost()),
      footprint: () => OUTBOUND,
      // A request that may change something on the other side may also have done so before the
      // connection dropped: the provider acted, and the Worker sees the same lost connection.
      lostResponseOffered: () => !SAFE_METHODS.has(request.method),
    },
  );
}

/**
 * What `fetch` gives a module that calls it while it loads, as workerd gives it (compared with
 * Miniflare's): a promise rejected with the runtime's message, and the module loads. It is
 * marked handled, so a module that never awaits it does not take the process down with it.
 */
export function refusedAtImport(): Promise<never> {
  const refused = Promise.reject(new Error(GLOBAL_SCOPE));
  refused.catch(() => {});
  return refused;
}

/**
 * `answer`, unless `signal` aborts first (a deadline that passes while a script takes its time):
 * then the fetch rejects with the signal's reason as workerd gives it back from the request it
 * had sent, a copy (`reasonFromRuntime`).
 */
function untilAborted<T>(answer: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(reasonFromRuntime(signal.reason));
    signal.addEventListener("abort", abort, { once: true });
    answer.then(
      (value) => {
        signal.removeEventListener("abort", abort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", abort);
        reject(error);
      },
    );
  });
}

/** The handler with the longest prefix of `url`; the first one given wins a tie. */
export function findHandler(scripts: readonly OutboundHandlers[], url: string): Match | undefined {
  let best: Match | undefined;
  for (const handlers of scripts) {
    for (const [prefix, handler] of Object.entries(handlers)) {
      if (typeof handler !== "function" || !url.startsWith(prefix)) continue;
      if (!best || prefix.length > best.prefix.length) best = { prefix, handler };
    }
  }
  return best;
}

/** What a script is asked: the request's parts, its body read once so redirects can resend it. */
interface Outgoing {
  readonly url: string;
  readonly method: string;
  readonly headers: Headers;
  readonly redirect: Request["redirect"];
  readonly body: ArrayBuffer | null;
}

/**
 * Runs the scripts for `request`, following redirects as `redirect: "follow"` does. The Worker
 * gets a clone of what the script returned, so a script may return one Response for every call.
 */
async function answer(run: RunContext, invocation: string, first: Request, match: Match): Promise<Response> {
  let request: Outgoing = {
    url: first.url,
    method: first.method,
    headers: first.headers,
    redirect: first.redirect,
    // eutaxy's read, not the Worker's: it waits for no turn of an object.
    body: first.body === null ? null : await hostRead<ArrayBuffer>(first, "arrayBuffer"),
  };
  let current = match;
  for (let redirects = 0; ; redirects++) {
    run.outboundAnswered?.({
      invocation,
      method: request.method,
      url: request.url,
      headers: Object.fromEntries(request.headers),
      body: request.body === null ? null : new TextDecoder().decode(request.body),
    });
    let response: unknown;
    try {
      // The scenario's script reads the body as eutaxy's code does: no turn of an object.
      response = await current.handler(withHostReads(toRequest(request)));
    } catch (thrown) {
      if (thrown instanceof InputError || thrown instanceof SimulationError) throw thrown;
      // The scenario's own code failed, not the network: the Worker must not get the blame (a
      // script answers with a Response; the fetch failing is the network_error fault's part).
      const error = new InputError(
        run.world.file,
        `the outbound script for "${current.prefix}" threw on ${request.method} ${request.url}: ${thrown instanceof Error ? `${thrown.name}: ${thrown.message}` : String(thrown)}`,
      );
      run.fail(error);
      throw error;
    }
    if (!(response instanceof Response)) {
      const error = new InputError(
        run.world.file,
        `the outbound script for "${current.prefix}" answered ${request.method} ${request.url} with ${typeof response}, not a Response`,
      );
      run.fail(error);
      throw error;
    }
    const location = response.headers.get("location");
    if (run.tracing) {
      const url = new URL(request.url);
      run.trace(`  Fetch:${url.origin} ${request.method} ${url.pathname}${url.search} -> ${response.status}`);
    }
    if (request.redirect === "manual" || !REDIRECT_STATUSES.has(response.status) || location === null) {
      return fetched(response.clone(), request.url, redirects > 0);
    }
    if (request.redirect === "error") throw new TypeError("Fetch failed: the response was a redirect.");
    if (redirects + 1 > REDIRECTS_MAX) throw new TypeError("Too many redirects.");
    request = redirected(request, response.status, new URL(location, request.url).href);
    const next = findHandler(run.world.outbound, request.url);
    if (!next) throw unscripted(run, invocation, request.method, request.url);
    current = next;
  }
}

/** A fresh Request for a script: its own copy of the body, so no script consumes another's. */
function toRequest(request: Outgoing): Request {
  const bodiless = request.body === null || request.method === "GET" || request.method === "HEAD";
  return new Request(request.url, {
    method: request.method,
    headers: request.headers,
    redirect: request.redirect,
    ...(bodiless ? {} : { body: (request.body as ArrayBuffer).slice(0) }),
  });
}

/** The request a redirect leads to, with the Fetch standard's method rewrites. */
function redirected(request: Outgoing, status: number, location: string): Outgoing {
  if (!redirectsToGet(status, request.method)) return { ...request, url: location };
  return {
    ...request,
    url: location,
    method: "GET",
    headers: withoutBodyHeaders(request.headers),
    body: null,
  };
}

/**
 * `init` as Node's `Request` takes it: a body given as a stream needs `duplex: "half"` there,
 * which workerd neither needs nor checks. An init that is not a plain object (a `Request`) is
 * left as it is.
 */
export function streamingInit<T>(init: T): T {
  if (typeof init !== "object" || init === null || Object.getPrototypeOf(init) !== Object.prototype)
    return init;
  const { body, duplex } = init as { body?: unknown; duplex?: unknown };
  return body instanceof ReadableStream && duplex === undefined ? { ...init, duplex: "half" } : init;
}

/** Whether a redirect of `status` turns a `method` request into a GET without its body (Fetch standard). */
export function redirectsToGet(status: number, method: string): boolean {
  return ((status === 301 || status === 302) && method === "POST") || (status === 303 && method !== "HEAD");
}

/** A copy of `headers` without those that describe a body, for a redirect that drops it. */
export function withoutBodyHeaders(headers: Headers): Headers {
  const kept = new Headers(headers);
  for (const name of REQUEST_BODY_HEADERS) kept.delete(name);
  return kept;
}

/** Misuse of eutaxy: the scenario scripts no answer, so the check ends with exit 2. */
function unscripted(run: RunContext, invocation: string, method: string, url: string): InputError {
  const origin = new URL(url).origin;
  const error = new InputError(
    run.world.file,
    `${invocation} fetched ${method} ${url}, but the scenario scripts no answer for it: add outbound({ "${origin}/": (request) => … }) to its setup`,
  );
  (run as { fail?(e: Error): void }).fail?.(error);
  return error;
}

/** What a subrequest rejects with when its connection drops (workerd: DISCONNECTED). */
export function connectionLost(): Error {
  const error = new Error("Network connection lost.");
  Object.defineProperty(error, "retryable", { value: true, enumerable: true });
  return error;
}
