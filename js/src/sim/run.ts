/**
 * One run: the driver's events delivered to the Worker under check, one invocation at a time,
 * with every binding call an effect the engine decides on. The loop is
 *
 *   quiesce → take the oldest parked effect → engine.decide → perform → settle → quiesce …
 *
 * Quiescence means every live invocation is parked at an effect (or hosts a callee) or has
 * finished; a macrotask turn drains the microtasks that Worker code runs on, so after a turn
 * an invocation that is neither parked nor finished is waiting on something outside the
 * simulation, which is an error naming it rather than a hang.
 */

import type { HttpEvent } from "../drivers/http.ts";
import { Decision, type Engine, type RunPlan } from "../engine.ts";
import { SimulationError } from "../errors.ts";
import { createD1Database } from "./d1.ts";
import type { EffectScope } from "./effect-scope.ts";
import { activate, type DeterminismSource, real } from "./globals.ts";
import { type EffectSink, Invocation, type ParkedEffect } from "./invocation.ts";
import { createServiceBinding, lostConnection, rethrownOverRpc, type ServiceCalls } from "./service.ts";
import { type ExecutionContextLike, isEntrypointClass, workersModule } from "./workers-module.ts";
import type { ServiceTarget, SimWorker, World } from "./world.ts";

/** Macrotask turns an invocation gets to reach an effect or finish before it counts as stuck. */
const QUIESCENCE_TURNS_MAX = 64;
/** Invocations one run may start, callees included. */
const INVOCATIONS_PER_RUN_MAX = 10_000;

type Exports = Record<string, unknown>;
type FetchHandler = (
  request: Request,
  env: Record<string, unknown>,
  ctx: ExecutionContextLike,
) => Promise<Response>;

export class Run implements EffectSink, DeterminismSource {
  private readonly parked: ParkedEffect[] = [];
  private readonly live = new Set<Invocation>();
  private readonly exports = new Map<SimWorker, Exports>();
  private current: Invocation | undefined;
  private stream = "init";
  private invocations = 0;
  /**
   * The engine's virtual clock, read after every decision (the only time it moves). Reading a
   * copy matters: SQLite inside the engine asks `Date.now()` for CURRENT_TIMESTAMP while the
   * engine is busy, and that must neither re-enter the engine nor see real time.
   */
  private clockMs: number;
  /** A failure of the simulation itself, raised where Worker code could have caught it. */
  private failure: SimulationError | undefined;

  constructor(
    private readonly engine: Engine,
    private readonly world: World,
    private readonly events: readonly HttpEvent[],
  ) {
    this.clockMs = engine.nowMs();
  }

  fillRandom(buf: Uint8Array): void {
    this.engine.fillRandom(this.stream, buf);
  }

  nowMs(): number {
    return this.clockMs;
  }

  park(effect: ParkedEffect): void {
    this.parked.push(effect);
  }

  async execute(plan: RunPlan): Promise<void> {
    const deactivate = activate(this);
    try {
      for (const worker of this.world.workers) this.instantiate(worker);
      for (const event of plan.events) await this.deliverEvent(event);
    } finally {
      deactivate();
    }
  }

  /** Evaluates a Worker's module anew, so no module state survives from an earlier run. */
  private instantiate(worker: SimWorker): void {
    this.resume(undefined, `init:${worker.name}`);
    const moduleEnv = this.envFor(worker, this.ambientScope(worker));
    const exports = worker.module.instantiate({ "cloudflare:workers": workersModule(() => moduleEnv) });
    this.exports.set(worker, exports);
  }

  private async deliverEvent(index: number): Promise<void> {
    const event = this.events[index];
    if (!event) throw new Error(`the engine planned event ${index}, which the driver does not have`);
    for (let delivery = 1; ; delivery++) {
      const invocation = this.spawn(`${event.id}#${delivery}`, this.world.main, undefined);
      this.engine.trace(`deliver ${invocation.id}`);
      const request = event.request();
      const main = this.world.main;
      const response = this.handle(invocation, main, (ctx, env) =>
        this.fetchHandler(main, undefined)(request, env, ctx),
      );
      response.then(
        async (value) => {
          if (!invocation.live) return;
          const body = value instanceof Response ? await value.text() : undefined;
          if (!invocation.live) return;
          if (body === undefined) {
            invocation.state = "threw";
            this.engine.trace(`${invocation.id} threw TypeError: the handler did not return a Response`);
          } else {
            invocation.state = "answered";
            this.engine.trace(`${invocation.id} answered ${(value as Response).status} ${body}`);
          }
        },
        (error) => this.threw(invocation, error),
      );
      await this.drive();
      // An answer, even a 500 from an exception, ends the client's attempts; only silence is resent.
      if (invocation.live) return;
      if (delivery > event.retries || !this.engine.redeliver(index, delivery + 1)) return;
    }
  }

  private threw(invocation: Invocation, error: unknown): void {
    if (!invocation.live) return;
    invocation.state = "threw";
    this.engine.trace(`${invocation.id} threw ${describe(error)}`);
  }

  private spawn(id: string, worker: SimWorker, parent: Invocation | undefined): Invocation {
    if (++this.invocations > INVOCATIONS_PER_RUN_MAX) {
      throw new SimulationError(
        `a run started more than ${INVOCATIONS_PER_RUN_MAX} invocations; eutaxy stops it there`,
      );
    }
    const invocation = new Invocation(id, worker.name, this, parent);
    parent?.callees.add(invocation);
    this.live.add(invocation);
    return invocation;
  }

  /** Runs a handler as `invocation`: its env and ctx, its random stream. */
  private handle(
    invocation: Invocation,
    worker: SimWorker,
    body: (ctx: ExecutionContextLike, env: Record<string, unknown>) => unknown,
    props: Readonly<Record<string, unknown>> = {},
  ): Promise<unknown> {
    const ctx = {
      waitUntil: (promise: Promise<unknown>) => invocation.waitUntil(promise),
      passThroughOnException: () => {},
      props,
    } as ExecutionContextLike;
    const env = this.envFor(worker, invocation);
    this.resume(invocation);
    try {
      return Promise.resolve(body(ctx, env));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private resume(invocation: Invocation | undefined, stream?: string): void {
    this.current = invocation;
    this.stream = invocation?.id ?? stream ?? "init";
  }

  /** The fetch handler of a Worker's default export, or of the named entrypoint. */
  private fetchHandler(
    worker: SimWorker,
    entrypoint: string | undefined,
  ): (request: Request, env: Record<string, unknown>, ctx: ExecutionContextLike) => Promise<Response> {
    const target = this.exports.get(worker)?.[entrypoint ?? "default"];
    return async (request, env, ctx) => {
      if (isEntrypointClass(target)) {
        const instance = new target(ctx, env) as { fetch?: (r: Request) => Promise<Response> };
        if (typeof instance.fetch !== "function")
          throw new TypeError(`Worker ${worker.name} has no fetch handler`);
        return instance.fetch(request);
      }
      const handler = target as { fetch?: FetchHandler } | undefined;
      if (typeof handler?.fetch !== "function")
        throw new TypeError(`Worker ${worker.name} has no fetch handler`);
      return handler.fetch(request, env, ctx);
    };
  }

  private envFor(worker: SimWorker, scope: EffectScope): Record<string, unknown> {
    const env: Record<string, unknown> = { ...worker.vars };
    for (const [binding, db] of worker.d1) env[binding] = createD1Database(db, scope, this.engine);
    for (const [binding, target] of worker.services) {
      env[binding] = createServiceBinding(
        `${worker.prefix}${binding}`,
        scope,
        this.serviceCalls(scope, target),
      );
    }
    return env;
  }

  /**
   * The scope of bindings reached through `env` from `cloudflare:workers`: calls belong to the
   * invocation that is running; at import time there is none, and I/O is refused as it is in
   * production.
   */
  private ambientScope(worker: SimWorker): EffectScope {
    const run = this;
    return {
      get invocation() {
        return run.current?.id ?? `init:${worker.name}`;
      },
      effect(label, perform) {
        if (!run.current) {
          return Promise.reject(new Error(`Disallowed operation called within global scope: ${label}`));
        }
        return run.current.effect(label, perform);
      },
    };
  }

  private serviceCalls(caller: EffectScope, target: ServiceTarget): ServiceCalls {
    if (target.kind === "scripted") {
      const { handlers } = target;
      return {
        rpc: async (method, args) => {
          const handler = handlers[method];
          if (typeof handler !== "function") throw notImplemented(method);
          return structuredClone(await (handler as (...a: unknown[]) => unknown)(...structuredClone(args)));
        },
        fetch: async (request) => {
          if (!handlers.fetch) throw notImplemented("fetch");
          return handlers.fetch(request);
        },
      };
    }
    const hosting = () => {
      const parent = caller instanceof Invocation ? caller : this.current;
      if (!parent) throw new Error("a service binding was called outside any invocation");
      return parent;
    };
    return {
      rpc: (method, args, effect) =>
        this.host(hosting(), effect, target, (instance) => {
          const fn = (instance as Record<string, unknown>)[method];
          if (typeof fn !== "function" || method === "constructor") throw notImplemented(method);
          return fn.apply(instance, structuredClone(args));
        }).then((value) => structuredClone(value)),
      fetch: (request, effect) => this.host(hosting(), effect, target, null, request) as Promise<Response>,
    };
  }

  /**
   * Hosts a callee invocation in the caller's effect: it runs the target's entrypoint method
   * (or its fetch handler when `call` is null) and settles the caller's call with its outcome.
   * When the callee dies, the caller's call fails as a lost connection.
   */
  private host(
    caller: Invocation,
    effect: number,
    target: Extract<ServiceTarget, { kind: "worker" }>,
    call: ((instance: object) => unknown) | null,
    request?: Request,
  ): Promise<unknown> {
    const callee = this.spawn(`${caller.id}/${effect}`, target.worker, caller);
    return new Promise((resolve, reject) => {
      callee.whenDead(() => reject(lostConnection()));
      const outcome = this.handle(
        callee,
        target.worker,
        (ctx, env) => {
          if (call === null)
            return this.fetchHandler(target.worker, target.entrypoint)(request as Request, env, ctx);
          const name = target.entrypoint ?? "default";
          const entry = this.exports.get(target.worker)?.[name];
          if (!isEntrypointClass(entry)) {
            throw new TypeError(
              `Worker ${target.worker.name} has no entrypoint class "${name}" to call over RPC (export class ${name} extends WorkerEntrypoint)`,
            );
          }
          return call(new entry(ctx, env));
        },
        target.props,
      );
      outcome.then(
        (value) => {
          if (!callee.live) return;
          callee.state = "answered";
          this.engine.trace(`${callee.id} returned ${summarize(value)}`);
          resolve(value);
        },
        (error) => {
          if (!callee.live) return;
          this.threw(callee, error);
          reject(rethrownOverRpc(error));
        },
      );
    });
  }

  /** Runs effects until every invocation of the delivery has finished or died. */
  private async drive(): Promise<void> {
    for (;;) {
      await this.quiesce();
      const next = this.nextParked();
      if (!next) return;
      this.executeEffect(next);
    }
  }

  private nextParked(): ParkedEffect | undefined {
    while (this.parked.length > 0) {
      const next = this.parked.shift() as ParkedEffect;
      if (next.invocation.live) return next;
    }
    return undefined;
  }

  private executeEffect(effect: ParkedEffect): void {
    const { invocation } = effect;
    let decision: Decision;
    try {
      decision = this.engine.decide(invocation.id, effect.index, effect.label);
    } catch (error) {
      throw new SimulationError(error instanceof Error ? error.message : String(error));
    }
    this.clockMs = this.engine.nowMs();
    if (decision === Decision.CrashBefore) {
      this.die(invocation);
      return;
    }
    this.resume(invocation);
    let outcome: Promise<unknown>;
    try {
      outcome = Promise.resolve(effect.perform(effect.index));
    } catch (error) {
      outcome = Promise.reject(error);
    }
    outcome.then(
      (value) => this.settle(effect, decision, true, value),
      (error) => this.settle(effect, decision, false, error),
    );
  }

  private settle(effect: ParkedEffect, decision: Decision, ok: boolean, value: unknown): void {
    const { invocation } = effect;
    invocation.pending--;
    if (value instanceof SimulationError) this.failure ??= value;
    if (!invocation.live) return;
    if (decision === Decision.CrashAfter) {
      this.die(invocation);
      return;
    }
    this.resume(invocation);
    if (ok) effect.resolve(value);
    else effect.reject(value);
  }

  private die(invocation: Invocation): void {
    this.engine.trace(`${invocation.id} died`);
    invocation.kill();
  }

  private async quiesce(): Promise<void> {
    let stuck: Invocation | undefined;
    for (let turn = 0; turn < QUIESCENCE_TURNS_MAX; turn++) {
      await new Promise((resolve) => real.setImmediate(resolve));
      if (this.failure) throw this.failure;
      stuck = this.firstStuck();
      if (!stuck) return;
    }
    const what = stuck as Invocation;
    throw new SimulationError(
      `invocation ${what.id} of Worker ${what.worker} is waiting on something outside the simulation ` +
        "(a real timer, a socket, or a promise nothing settles); eutaxy can only schedule binding calls",
    );
  }

  private firstStuck(): Invocation | undefined {
    for (const invocation of this.live) {
      if (!invocation.live || invocation.finished) {
        this.live.delete(invocation);
        continue;
      }
      if (invocation.pending === 0) return invocation;
    }
    return undefined;
  }
}

function notImplemented(method: string): TypeError {
  return new TypeError(`The RPC receiver does not implement the method "${method}".`);
}

function describe(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return `a non-Error value: ${summarize(error)}`;
}

function summarize(value: unknown): string {
  try {
    const text = JSON.stringify(value);
    return text === undefined ? String(value) : text;
  } catch {
    return String(value);
  }
}
