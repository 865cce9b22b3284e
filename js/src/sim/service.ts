/**
 * Service bindings. `env.PAYMENTS` is a stub: `fetch` sends a request to the target's fetch
 * handler, any other property is an RPC method. Each call is one effect of the calling
 * invocation, labelled `Service:<binding> <method>` in reports.
 */

import type { EffectScope } from "./effect-scope.ts";

/** What a call over the binding reaches: a callee Worker the run hosts, or scripted answers. */
export interface ServiceCalls {
  rpc(method: string, args: unknown[], effect: number): Promise<unknown>;
  fetch(request: Request, effect: number): Promise<Response>;
}

/** Properties a stub must not answer as RPC methods: `await stub` must not call `then`. */
const NOT_METHODS = new Set(["then", "catch", "finally", "toJSON", "constructor"]);

export function createServiceBinding(binding: string, scope: EffectScope, calls: ServiceCalls): object {
  const fetch = (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    // The request is built before the effect, as the runtime does, so a bad URL throws at once.
    const request = new Request(input, init);
    return scope.effect(`Service:${binding} fetch`, (effect) => calls.fetch(request, effect));
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
        return (...args: unknown[]) =>
          scope.effect(`Service:${binding} ${key}`, (effect) => calls.rpc(key, args, effect));
      },
    },
  );
}

/** The error a caller sees when the invocation it called over RPC dies before answering. */
export function lostConnection(): Error {
  return new Error("Network connection lost.");
}

/** Errors cross an RPC boundary by value: the caller gets a new Error with name and message. */
export function rethrownOverRpc(error: unknown): Error {
  if (error instanceof Error) {
    const copy = new Error(error.message);
    copy.name = error.name;
    return copy;
  }
  return new Error(String(error));
}
