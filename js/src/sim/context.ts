/**
 * What bindings, drivers and the platform's own work (queue batches, alarms) see of a run.
 * The run loop (`run.ts`) implements it; each binding kind is a module that only needs this.
 */

import type { OutboundRequest } from "../cloudflare.ts";
import type { Engine } from "../engine.ts";
import type { Invocation } from "./invocation.ts";
import type { ExecutionContextLike } from "./workers-module.ts";
import type { SimWorker, World } from "./world.ts";

export type Exports = Record<string, unknown>;
export type Env = Record<string, unknown>;

/** A handler call that runs as one invocation of `worker`. */
export interface InvocationCall {
  readonly worker: SimWorker;
  readonly body: (ctx: ExecutionContextLike, env: Env, invocation: Invocation) => unknown;
  /** `ctx.props`, from the caller's binding. */
  readonly props?: Readonly<Record<string, unknown>>;
  /** The shared state the invocation runs inside of (`DO:<object>`), see `Invocation.resource`. */
  readonly resource?: string;
  /**
   * The platform's work it does, as a warning names it (`queue batch of orders`), when the check
   * should say that none of it ever ran without an exception.
   */
  readonly work?: string;
}

/** How a top-level invocation ended. */
export type Outcome =
  /** `diedAfter`: it died after its handler returned, in its `ctx.waitUntil` work. */
  | { readonly kind: "returned"; readonly value: unknown; readonly diedAfter?: true }
  | { readonly kind: "threw"; readonly error: unknown }
  | { readonly kind: "died" };

/** Work the platform does on its own after the current event: a queue batch, an alarm. */
export interface PlatformWork {
  /** Names the invocation: `batch` gives `batch-1#1`, `batch-2#1`, … in the run. */
  readonly kind: string;
  /**
   * The invocation the work starts, when it is not `<kind>-<n>#1` (a queue batch's retry is
   * `batch-1#2`): interleaved runs name the step that starts the work after it.
   */
  readonly invocation?: string;
  /**
   * Work that may not run more than `max` at once with the other work of its `group` (a queue
   * consumer's `max_concurrency`): it waits, in order, until one of them is over.
   */
  readonly limit?: { readonly group: string; readonly max: number };
  /**
   * When the work is due on the run's clock (an alarm's time, the end of a queue message's
   * delay); undefined when it is due now. Work due now starts in the order it was scheduled;
   * otherwise the work due first starts first, and a driver's event goes before work due after it.
   */
  dueMs?(): number | undefined;
  /** Whether the work has nothing left to do (its alarm deleted or set anew): then it never starts. */
  gone?(): boolean;
  run(context: RunContext, id: string): Promise<void>;
}

/** A response a client of the scenario got, for response invariants. */
export interface ClientResponse {
  readonly event: string;
  readonly delivery: number;
  /** 0 when the delivery died without an answer. */
  readonly status: number;
  readonly body: string;
  /**
   * For the 500 the runtime answers an uncaught exception with: the exception (`Error: …`),
   * which its empty body does not say.
   */
  readonly error?: string;
  /** No answer, retries left, and no resend within the check's bounds (see `FinalState`). */
  readonly unfinished?: true;
}

/** An answer's body as messages quote it: on one line, cut after `max` characters. */
export function bodyExcerpt(body: string, max: number): string {
  const line = body.replace(/\s+/g, " ").trim();
  return line.length > max ? `${line.slice(0, max)}…` : line;
}

/** Whether answer `code` is `pattern`: a code (`409`, `"409"`) or a class of them (`"5xx"`). */
export function statusMatches(code: number, pattern: string | number): boolean {
  const text = String(pattern);
  if (/^[1-5]xx$/.test(text)) return Math.floor(code / 100) === Number(text[0]);
  return code === Number(text);
}

export interface RunContext {
  readonly engine: Engine;
  readonly world: World;
  /** The invocation whose code is running, if any. */
  readonly current: Invocation | undefined;
  /**
   * `invocation`'s code runs from here on: its binding calls, timers and random draws are its
   * own. For code that another invocation's step woke (a call let in at a Durable Object's gate).
   */
  resume(invocation: Invocation): void;
  /** The run's virtual clock. */
  nowMs(): number;
  /**
   * How many macrotask turns the run loop has taken: Worker code that runs while it stays the
   * same has not waited on anything the simulation schedules (a binding call, a timer), only on
   * microtasks, so it never let the event loop run.
   */
  readonly eventLoopTurns: number;
  /**
   * Moves the run's clock forward to `ms` (epoch milliseconds) if it is earlier: the platform's
   * own work starts at its time (an alarm at the time it was set for).
   */
  advanceClockTo(ms: number): void;
  /**
   * Calls `reach` when the clock gets to `atMs` (epoch milliseconds), as it moves past it, before
   * what moved it runs (a timer due later); answers a function that cancels it. Nothing happens
   * if the clock never gets there.
   */
  deadline?(atMs: number, reach: () => void): () => void;
  /** The module exports of `worker` in this run. */
  exportsOf(worker: SimWorker): Exports;
  /**
   * Runs `call` as an invocation hosted by effect `effect` of `caller` (an RPC to a callee or a
   * Durable Object). Resolves with what it returns; rejects with its exception as it crosses an
   * RPC boundary, or with `Network connection lost.` when it dies.
   */
  host(caller: Invocation, effect: number, call: InvocationCall): Promise<unknown>;
  /**
   * `invocation` dies now, as a crash kills it (its parked effects never run, its callees die
   * with it): for one whose Durable Object instance went down under it. `why` follows "died" in
   * the trace (`with its Durable Object instance`).
   */
  die(invocation: Invocation, why?: string): void;
  /** Runs `call` as top-level invocation `id`, drives it to its end, and says how it ended. */
  deliver(id: string, call: InvocationCall): Promise<Outcome>;
  /** Queues platform work to run after the current event's deliveries. */
  later(work: PlatformWork): void;
  /** Per-run memory of a binding kind, created on first use and gone with the run. */
  memo<T>(key: string, create: () => T): T;
  /**
   * Ends the check with `error` at the next quiescence: for misuse the Worker's code could
   * otherwise catch, such as an outbound fetch the scenario scripts no answer for.
   */
  fail(error: Error): void;
  /** Records a client's response. */
  respond(response: ClientResponse): void;
  /**
   * The run's bound refused delivery `delivery` of platform work `work` (`batch-1`, `alarm-2`),
   * a retry Cloudflare would have made, of `deliveries` it makes at most: what follows it
   * (`follows`: "more retries, dead-lettering") was not explored in this run.
   */
  retryRefused?(work: string, delivery: number, deliveries: number, follows: string): void;
  /**
   * A Worker sent to `queue` through `binding`, and no Worker of the scenario consumes that
   * queue: its messages are never delivered in this run.
   */
  sentUnconsumed?(queue: string, binding: string): void;
  /**
   * A Worker opened a D1 session through `binding` that may read a replica
   * (`withSession("first-unconstrained")`), which the simulation answers from the primary.
   */
  replicaSession?(binding: string): void;
  /** An outbound request a scenario's script answered, for the final state (`FinalState.outbound`). */
  outboundAnswered?(request: OutboundRequest): void;
  /** Whether this run keeps a trace (see `RunPlan.trace`); lines sent when not are dropped. */
  readonly tracing: boolean;
  trace(line: string): void;
}
