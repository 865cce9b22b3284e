/**
 * Service bindings. `env.PAYMENTS` is a stub: `fetch` sends a request to the target's fetch
 * handler, any other property is an RPC method. Each call is one effect of the calling
 * invocation, labelled `Service:<binding> <method>` in reports (`Service:<binding> fetch GET /path`
 * for a fetch).
 */

import type { FootprintEntry } from "../engine.ts";
import { InputError, SimulationError } from "../errors.ts";
import { cloneValue } from "./clone.ts";
import type { RunContext } from "./context.ts";
import type { EffectScope } from "./effect-scope.ts";
import { hostRead } from "./globals.ts";
import { callHandler } from "./handlers.ts";
import { fetchedOverBinding, incomingRequest, isIncomingRequest } from "./immutable-headers.ts";
import { Invocation } from "./invocation.ts";
import {
  REDIRECT_STATUSES,
  REDIRECTS_MAX,
  redirectsToGet,
  streamingInit,
  withoutBodyHeaders,
} from "./outbound.ts";
import { notImplemented, rethrownOverRpc } from "./rpc-errors.ts";
import { isEntrypointClass } from "./workers-module.ts";
import type { ServiceTarget } from "./world.ts";

/** What a call over the binding reaches: a callee Worker the run hosts, or scripted answers. */
export interface ServiceCalls {
  rpc(method: string, args: unknown[], effect: number): Promise<unknown>;
  fetch(request: Request, effect: number): Promise<Response>;
  /** What a call shares with other invocations' steps (see `EffectOptions.footprint`). */
  footprint(effect: number, invocation: string): readonly FootprintEntry[];
}

/** Scripted services are the scenario's functions, which may keep state between calls. */
const SCRIPTED: readonly FootprintEntry[] = [{ resource: "scripted-services", write: true }];

/** Properties a stub must not answer as RPC methods: `await stub` must not call `then`. */
const NOT_METHODS = new Set(["then", "catch", "finally", "toJSON", "constructor"]);

/** `rpc`: whether the calling Worker has RPC (`rpcEnabled`); without it only `fetch` and `connect` answer. */
export function createServiceBinding(
  binding: string,
  scope: EffectScope,
  calls: ServiceCalls,
  rpc = true,
): object {
  // Named by method and path, as an outbound fetch is: two fetches to one service differ.
  const send = (request: Request): Promise<Response> =>
    scope.effect(
      `Service:${binding} fetch ${request.method} ${new URL(request.url).pathname}`,
      (effect) => calls.fetch(request, effect),
      { footprint: calls.footprint },
    );
  const fetch = (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    // The request is built before the effect, as the runtime does, so a bad URL throws at once.
    const request = new Request(input, streamingInit(init));
    const again = resendable(input, init, request);
    return send(request).then((response) => followed(request, response, send, again));
  };
  const connect = () => {
    throw new Error(`Service:${binding} connect(): sockets over service bindings are not simulated`);
  };
  return new Proxy(
    {},
    {
      get(_target, key) {
        if (typeof key === "symbol" || NOT_METHODS.has(key)) return undefined;
        if (key === "fetch") return fetch;
        if (key === "connect") return connect;
        if (!rpc) return undefined;
        return (...args: unknown[]) =>
          scope.effect(`Service:${binding} ${key}`, (effect) => calls.rpc(key, args, effect), {
            footprint: calls.footprint,
          });
      },
    },
  );
}

/** workerd's error for a redirect that would send a body made from a stream again. */
const ONE_TIME_BODY =
  "A request with a one-time-use body (it was initialized from a stream, not a buffer) encountered a redirect requiring the body to be retransmitted. To avoid this error in the future, construct this request from a buffer-like body initializer.";

/** What a redirect that keeps the method sends again: no body, a body, or one it cannot. */
type Resendable =
  | { readonly body: null }
  | { readonly body: () => Promise<RequestInit["body"]> }
  | "one-time";

/**
 * Whether `fetch(input, init)`'s body can be sent again, as workerd decides it: a body made from
 * a stream (a handler's own request's, or one given as a `ReadableStream`) is sent once; one made
 * from a buffer (a string, bytes, a form) is kept. A `Request` the Worker made is taken as made
 * from a buffer, its body read from a copy when needed.
 */
function resendable(
  input: string | URL | Request,
  init: RequestInit | undefined,
  request: Request,
): Resendable {
  const given = init?.body;
  if (given !== undefined && given !== null) {
    if (given instanceof ReadableStream) return "one-time";
    return { body: async () => given };
  }
  if (!(input instanceof Request) || request.body === null) return { body: null };
  if (isIncomingRequest(input)) return "one-time";
  const copy = request.clone();
  return { body: () => hostRead<ArrayBuffer>(copy, "arrayBuffer") };
}

/**
 * A service binding's `fetch` follows the redirects its callee answers with, as workerd's does
 * (compared with Miniflare), each hop another call over the binding, with the Fetch standard's
 * method rewrites; `redirect: "manual"` hands the redirect back, `"error"` rejects. A 307 or 308
 * keeps the method and sends the body again, which a body made from a stream cannot be: that
 * rejects with workerd's TypeError.
 */
async function followed(
  first: Request,
  answer: Response,
  send: (request: Request) => Promise<Response>,
  again: Resendable,
): Promise<Response> {
  let request = first;
  let response = answer;
  for (let redirects = 0; ; redirects++) {
    const location = response.headers.get("location");
    if (request.redirect === "manual" || !REDIRECT_STATUSES.has(response.status) || location === null) {
      if (redirects > 0) Object.defineProperty(response, "redirected", { value: true, enumerable: true });
      return response;
    }
    if (request.redirect === "error") throw new TypeError("Fetch failed: the response was a redirect.");
    if (redirects + 1 > REDIRECTS_MAX) throw new TypeError("Too many redirects.");
    const url = new URL(location, request.url).href;
    const toGet = redirectsToGet(response.status, request.method);
    const withBody = !toGet && request.method !== "GET" && request.method !== "HEAD";
    if (withBody && again === "one-time") throw new TypeError(ONE_TIME_BODY);
    const body = withBody && again !== "one-time" && again.body !== null ? await again.body() : null;
    request = new Request(url, {
      method: toGet ? "GET" : request.method,
      headers: toGet ? withoutBodyHeaders(request.headers) : request.headers,
      redirect: request.redirect,
      body,
    });
    response = await send(request);
  }
}

/**
 * What calls over a binding to `target` do: a scripted service answers from its handlers; a
 * callee Worker runs as an invocation hosted by the caller's effect.
 */
export function serviceCalls(
  run: RunContext,
  caller: EffectScope,
  target: ServiceTarget,
  binding: string,
): ServiceCalls {
  if (target.kind === "scripted") {
    const { handlers } = target;
    // A scripted service stands for another Worker: what it throws crosses as that Worker's would.
    return {
      rpc: (method, args) =>
        crossing(async () => {
          const handler = handlers[method];
          if (typeof handler !== "function") throw notImplemented(method);
          return cloneValue(await (handler as (...a: unknown[]) => unknown)(...cloneValue(args)));
        }),
      fetch: (request) =>
        crossing(async () => {
          if (!handlers.fetch) throw notImplemented("fetch");
          const response: unknown = await handlers.fetch(request);
          if (response instanceof Response) return fetchedOverBinding(response, request);
          // The scenario's mistake, not the Worker's: a Worker's fetch handler answers a Response.
          const error = new InputError(
            run.world.file,
            `the service script for ${binding} answered ${request.method} ${new URL(request.url).pathname} with ${typeof response}, not a Response`,
          );
          run.fail(error);
          throw error;
        }) as Promise<Response>,
      footprint: () => SCRIPTED,
    };
  }
  const { worker, entrypoint, props } = target;
  // Bindings made from cloudflare:workers' env belong to whichever invocation is running.
  const hosting = (): Invocation => {
    const parent = caller instanceof Invocation ? caller : run.current;
    if (!parent) throw new Error("a service binding was called outside any invocation");
    return parent;
  };
  return {
    rpc: (method, args, effect) =>
      run
        .host(hosting(), effect, {
          worker,
          props,
          body: (ctx, env) => {
            const name = entrypoint ?? "default";
            const Entry = run.exportsOf(worker)[name];
            if (!isEntrypointClass(Entry)) {
              throw new TypeError(
                `Worker ${worker.name} has no entrypoint class "${name}" to call over RPC (export class ${name} extends WorkerEntrypoint)`,
              );
            }
            const instance = new Entry(ctx, env) as Record<string, unknown>;
            const fn = instance[method];
            if (typeof fn !== "function" || method === "constructor") throw notImplemented(method);
            return fn.apply(instance, cloneValue(args));
          },
        })
        .then((value) => cloneValue(value)),
    // The callee gets a request of its own, and the caller a response of its own, both with the
    // immutable headers workerd gives them.
    fetch: (request, effect) =>
      (
        run.host(hosting(), effect, {
          worker,
          props,
          body: (ctx, env) =>
            callHandler(run, worker, entrypoint, "fetch", incomingRequest(request), env, ctx),
        }) as Promise<unknown>
      ).then((response) =>
        response instanceof Response ? fetchedOverBinding(response, request) : response,
      ) as Promise<Response>,
    // The call starts the callee, whose own calls are its own steps: it shares nothing more.
    footprint: (effect, invocation) => [{ resource: `call:${invocation}/${effect}`, write: true }],
  };
}

/** `call`'s result, or what it threw as a caller over a binding gets it; the check's own errors pass. */
async function crossing<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof SimulationError || error instanceof InputError) throw error;
    throw rethrownOverRpc(error);
  }
}
