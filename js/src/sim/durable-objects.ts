/**
 * Durable Objects as their callers see them: namespaces, ids (durable-object-id.ts) and stubs.
 * The object's side is durable-object-instance.ts (instances, `ctx`, resets, alarms); its storage
 * is durable-object-storage.ts (key-value API, transactions, the alarm record; values and keys in
 * durable-object-values.ts) and durable-object-sql.ts (`ctx.storage.sql`), both over the
 * object's engine store (durable-object-store.ts).
 *
 * Sources: Cloudflare's docs, "Durable Object Namespace", "Durable Object ID", "Durable Object
 * Stub", "Durable Object State", "Alarms", "Lifecycle of a Durable Object" (in-memory state lives
 * as long as the instance; an object can be reset at any time, and its storage survives),
 * "Durable Objects code updates" and "Troubleshooting" (the error of a call in flight when the
 * object resets), "Known issues" (one instance at a time; a superseded one's storage throws);
 * workerd's actor-id-impl for ids and its texts for refused calls.
 *
 * The model:
 * - A stub call is ONE effect of the caller, labelled `DO:<binding> <method>`; its `perform`
 *   hosts the object's invocation (`<caller>/<effect>`) through `run.host`. crash_before: the
 *   object never sees the call. crash_after: the object ran, wrote what it wrote, and the caller
 *   died before it saw the answer.
 * - The transient alternative of a stub call is a reset: the live instance is discarded (its
 *   in-memory state is lost; storage stays) and the call rejects with the reset error. The next
 *   call constructs a fresh instance inside its own invocation.
 * - One instance per object per run, kept in `run.memo`, constructed `new Class(ctx, env)` on the
 *   first call. An invocation of the object that dies (a fault at one of its own effects) takes
 *   the instance with it: the isolate holding its memory is gone, as on Cloudflare.
 * - Never two instances ("Known issues", global uniqueness): a reset fails every call in flight on
 *   the old instance, those waiting at its gate too, and its storage refuses whatever the old
 *   instance still does; durable-object-instance.ts (`reset`) says how each kind of reset ends
 *   the old instance's code.
 * - Input gates: storage calls are local to the object, not effects, so nothing interleaves
 *   with them; with several invocations live, another call reaches the object only while one
 *   awaits an effect (a fetch, another binding). `blockConcurrencyWhile` holds every new call
 *   until its callback settles.
 * - Alarms run as platform work after the event that set them (the virtual clock does not wait
 *   for their time): `alarm-<n>#<attempt>`, retried when the handler throws or dies, at most 6
 *   times (docs: "up to 6 retries"), each retry as the engine's redeliveries allow.
 */

import { cloneValue, refuseOverRpc, type StubHome } from "./clone.ts";
import type { RunContext } from "./context.ts";
import {
  hexFromName,
  idFromName,
  idFromString,
  newUniqueId,
  otherNamespace,
  SimDurableObjectId,
} from "./durable-object-id.ts";
import { type Instance, objectResource, reset, serveCall, slotOf } from "./durable-object-instance.ts";
import { type EffectScope, PLATFORM_WORK } from "./effect-scope.ts";
import { fetchedOverBinding, incomingRequest } from "./immutable-headers.ts";
import { Invocation } from "./invocation.ts";
import { anew, breaksStub, lostConnection, notImplemented } from "./rpc-errors.ts";
import { DurableObject } from "./workers-module.ts";
import type { BindingSpec, DurableObjectNamespace } from "./world.ts";

/**
 * The error a call gets when the object resets while the call is in flight (Cloudflare's
 * Troubleshooting and code-updates pages; workerd raises it for every reset of a live object).
 */
export const RESET_MESSAGE = "Durable Object reset because its code was updated.";

/** The reset error, flagged as workerd flags it: an infrastructure error (retryable) that reset the object. */
function codeUpdated(): Error {
  return Object.assign(new Error(RESET_MESSAGE), { retryable: true, durableObjectReset: true });
}

/** workerd's refusal of an RPC call to a class that does not extend DurableObject. */
const NO_RPC =
  "The receiving Durable Object does not support RPC, because its class was not declared with " +
  "`extends DurableObject`. In order to enable RPC, make sure your class extends the special " +
  'class `DurableObject`, which can be imported from the module "cloudflare:workers".';

/** Properties a stub must not answer as RPC methods: `await stub` must not call `then`. */
const NOT_METHODS = new Set(["then", "catch", "finally", "toJSON", "constructor"]);

/** `rpc`: whether the calling Worker has RPC (`rpcEnabled`); without it a stub has no methods. */
export function createDurableObjectNamespace(
  spec: Extract<BindingSpec, { kind: "durableObject" }>,
  scope: EffectScope,
  run: RunContext,
  rpc = true,
): object {
  return new SimDurableObjectNamespace(spec, scope, run, rpc);
}

/** The engine store of the object `idFromName(name)` names in `namespace`. */
export function durableObjectStore(namespace: DurableObjectNamespace, name: string): string {
  return `${namespace.storePrefix}${hexFromName(namespace.storePrefix, name)}`;
}

class SimDurableObjectNamespace {
  readonly #spec: Extract<BindingSpec, { kind: "durableObject" }>;
  readonly #scope: EffectScope;
  readonly #run: RunContext;
  readonly #key: string;
  readonly #rpc: boolean;

  constructor(
    spec: Extract<BindingSpec, { kind: "durableObject" }>,
    scope: EffectScope,
    run: RunContext,
    rpc: boolean,
  ) {
    this.#spec = spec;
    this.#scope = scope;
    this.#run = run;
    this.#key = spec.namespace.storePrefix;
    this.#rpc = rpc;
  }

  idFromName(name: string): SimDurableObjectId {
    return idFromName(this.#key, String(name));
  }

  newUniqueId(_options?: unknown): SimDurableObjectId {
    return newUniqueId(this.#key);
  }

  idFromString(id: string): SimDurableObjectId {
    return idFromString(this.#key, id);
  }

  get(id: SimDurableObjectId, _options?: unknown): object {
    if (!(id instanceof SimDurableObjectId)) {
      throw new TypeError("get() takes a DurableObjectId made by this namespace");
    }
    if (!id.belongsTo(this.#key)) throw otherNamespace();
    return createStub(this.#spec, this.#scope, this.#run, id, this.#rpc);
  }

  getByName(name: string, options?: unknown): object {
    return this.get(this.idFromName(name), options);
  }

  /** Jurisdictions restrict where an object runs; the simulation runs everything in one place. */
  jurisdiction(_jurisdiction: string): this {
    return this;
  }
}

function createStub(
  spec: Extract<BindingSpec, { kind: "durableObject" }>,
  scope: EffectScope,
  run: RunContext,
  id: SimDurableObjectId,
  rpcMethods: boolean,
): object {
  const { namespace } = spec;
  // Stubs made from cloudflare:workers' env belong to whichever invocation is running.
  const hosting = (): Invocation => {
    const parent = scope instanceof Invocation ? scope : run.current;
    if (!parent) throw new Error(`Durable Object binding ${spec.name} was called outside any invocation`);
    return parent;
  };
  // Set by the first error that breaks the stub; every later call fails with it, at once.
  let broken: Error | undefined;
  const call = <T>(method: string, serve: (instance: Instance) => unknown): Promise<T> => {
    if (broken) {
      if (run.tracing) {
        run.trace(
          `${run.current?.id ?? "init"} DO:${spec.label} ${method} fails at once: the stub is broken (${broken.message})`,
        );
      }
      return Promise.reject(anew(broken));
    }
    const called = scope.effect(
      `DO:${spec.label} ${method}`,
      (effect) => {
        const slot = slotOf(run, namespace, id);
        return run.host(hosting(), effect, {
          worker: namespace.worker,
          resource: objectResource(slot),
          body: (_ctx, _env, invocation) => serveCall(run, slot, invocation, serve),
        }) as Promise<T>;
      },
      {
        transient: () => {
          // A code update: the calls in flight on the old instance fail with the same error, and
          // its code runs on, no longer the object's, until it ends.
          reset(run, slotOf(run, namespace, id), `a transient fault at the call ${method}`, {
            error: codeUpdated,
            kill: false,
          });
          throw codeUpdated();
        },
        // The object ran the call, and the connection dropped before its answer came back: the
        // documented reason to retry only idempotent calls on a retryable error.
        lostResponseOffered: () => true,
        lostResponse: () => {
          throw lostConnection();
        },
        // The call constructs the object or runs its code, which may also set its alarm.
        footprint: () => [
          { resource: objectResource(slotOf(run, namespace, id)), write: true },
          { resource: PLATFORM_WORK, write: true },
        ],
      },
    );
    return called.catch((error: unknown) => {
      if (breaksStub(error)) broken ??= error as Error;
      throw error;
    }) as Promise<T>;
  };

  const fetch = (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    // The request is built before the effect, as the runtime does, so a bad URL throws at once.
    const request = new Request(input, init);
    // The object gets a request of its own, and the caller a response of its own, both with the
    // immutable headers workerd gives them.
    return call<Response>("fetch", async (instance) => {
      const handler = instance.fetch;
      if (typeof handler !== "function") throw new TypeError("Handler does not export a fetch() function.");
      const response = await handler.call(instance, incomingRequest(request));
      if (!(response instanceof Response)) {
        throw new TypeError("Incorrect type for Promise: the Promise did not resolve to 'Response'.");
      }
      return fetchedOverBinding(response, request);
    });
  };
  const rpc =
    (method: string) =>
    (...args: unknown[]): Promise<unknown> => {
      let served: Instance | undefined;
      const caller = scope instanceof Invocation ? scope : run.current;
      // The stubs the answer holds (an RpcTarget, a function) run their code in this instance:
      // each call through one is a call on the object, which a reset since ends. The caller
      // holds them until it ends.
      const home: StubHome = {
        call: (label, serve) =>
          call(label, (instance) => {
            if (instance !== served) throw lostConnection();
            return serve();
          }),
        whenOver: (dispose) => caller?.whenOver(dispose),
      };
      return call<unknown>(method, (instance) => {
        if (!(instance instanceof DurableObject)) throw new TypeError(NO_RPC);
        const fn = instance[method];
        if (typeof fn !== "function") throw notImplemented(method);
        served = instance;
        return fn.apply(instance, cloneValue(args));
      }).then((value) => cloneValue(value, home));
    };

  const stub = new Proxy(
    {},
    {
      get(_target, key) {
        if (typeof key === "symbol" || NOT_METHODS.has(key)) return undefined;
        if (key === "id") return id;
        if (key === "name") return id.name;
        if (key === "fetch") return fetch;
        if (key === "connect") {
          return () => {
            throw new Error(`DO:${spec.label} connect(): sockets to Durable Objects are not simulated`);
          };
        }
        return rpcMethods ? rpc(key) : undefined;
      },
    },
  );
  // Workers RPC does not carry a stub as an argument or a result (compared with Miniflare's
  // workerd): pass the object's name and make a stub there.
  refuseOverRpc(stub, "DurableObject");
  return stub;
}
