/**
 * An invocation: one execution of a handler for one delivery of an event (`req-2#1`), or a
 * callee's execution hosted by one of its caller's effects (`req-2#1/0`). It is the
 * `EffectScope` its bindings call through: every effect parks the invocation until the run
 * loop executes it.
 */

import type { FootprintEntry } from "../engine.ts";
import { SimulationError } from "../errors.ts";
import type { EffectOptions, EffectScope } from "./effect-scope.ts";
import { lostConnection } from "./rpc-errors.ts";

/** A limit on the effects of one invocation, so a Worker looping over a binding ends. */
export const EFFECTS_PER_INVOCATION_MAX = 10_000;

/** An effect the invocation has made and the run loop has not executed yet. */
export interface ParkedEffect {
  readonly invocation: Invocation;
  readonly index: number;
  readonly label: string;
  readonly perform: (effect: number) => unknown;
  readonly transient: ((effect: number) => unknown) | undefined;
  readonly transientOffered: (() => boolean) | undefined;
  readonly lostResponseOffered: (() => boolean) | undefined;
  readonly lostResponse: ((effect: number) => unknown) | undefined;
  readonly footprint:
    | ((effect: number, invocation: string) => readonly FootprintEntry[] | undefined)
    | undefined;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
}

/** Where an invocation's effects go: the run loop. */
export interface EffectSink {
  park(effect: ParkedEffect): void;
}

export type InvocationState = "running" | "answered" | "threw" | "dead";

export class Invocation implements EffectScope {
  state: InvocationState = "running";
  /** Effects made and not yet settled: parked, or executing (a callee running). */
  pending = 0;
  /** `ctx.waitUntil` promises not yet settled. */
  waitingUntil = 0;
  /** Timers set and not yet fired or cleared: while it has one, it waits on the run's clock. */
  timers = 0;
  /**
   * Set while the invocation's call waits to enter a Durable Object that a critical section
   * (`blockConcurrencyWhile`, `storage.transaction()`) holds: the object, as messages name it.
   */
  waitingFor: string | undefined;
  /** Its `waitUntil` work was canceled (`cancelWaitUntil`). */
  private waitUntilCanceled = false;
  /** When its handler answered or threw, on the run's clock; its `waitUntil` work runs on. */
  endedAtMs: number | undefined = undefined;
  /**
   * The shared state the invocation's own code runs inside of, `DO:<object>` for a Durable
   * Object's: every step of it or of its callees may touch that state as it resumes.
   */
  resource: string | undefined = undefined;
  /** Callees this invocation hosts that are still live; they die with it. */
  readonly callees = new Set<Invocation>();
  /**
   * Set when the Durable Object instance it was serving a call on was reset under it (its caller
   * got the reset's error then), or when its caller died: what it answers now reaches no one
   * (see `orphan`). `orphanedBecause` says which, as the trace words it.
   */
  orphaned = false;
  orphanedBecause = "its object was reset";
  /**
   * Set when its call, still waiting at a Durable Object's gate, was dropped: the one who made
   * it is gone (see `dropCallsAtGates`), and the call never goes in.
   */
  droppedAtGate = false;
  /** Wakes the call's wait at the gate, while it waits there. */
  wakeAtGate: (() => void) | undefined;
  /**
   * Set while the client reads the body of the answer this invocation sent: stops that read with
   * `error`, as the runtime cancels a request whose code hung after its status went out.
   */
  stopAnswer: ((error: Error) => void) | undefined;
  private effects = 0;
  private readonly onDeath: (() => void)[] = [];
  private readonly onOver: (() => void)[] = [];
  private onCancel: ((error: Error) => void) | undefined;
  private onOrphan: ((error: Error) => void) | undefined;

  constructor(
    readonly id: string,
    /** The Worker whose code this invocation runs, as reports name it. */
    readonly worker: string,
    private readonly sink: EffectSink,
    readonly parent?: Invocation,
  ) {}

  get invocation(): string {
    return this.id;
  }

  get live(): boolean {
    return this.state !== "dead";
  }

  /** Live and with nothing left to do: its handler settled and its `waitUntil` work too. */
  get finished(): boolean {
    return this.state !== "running" && this.state !== "dead" && this.waitingUntil === 0 && this.pending === 0;
  }

  effect<T>(
    label: string,
    perform: (effect: number) => T | Promise<T>,
    options: EffectOptions = {},
  ): Promise<T> {
    if (!this.live || this.waitUntilCanceled) return new Promise<T>(() => {});
    const index = this.effects++;
    if (this.effects > EFFECTS_PER_INVOCATION_MAX) {
      throw new SimulationError(
        `invocation ${this.id} made more than ${EFFECTS_PER_INVOCATION_MAX} effects; eutaxy stops a run there`,
      );
    }
    this.pending++;
    return new Promise<T>((resolve, reject) => {
      this.sink.park({
        invocation: this,
        index,
        label,
        perform,
        transient: options.transient,
        transientOffered: options.transientOffered,
        lostResponseOffered: options.lostResponseOffered,
        lostResponse: options.lostResponse,
        footprint: options.footprint,
        resolve: resolve as (value: unknown) => void,
        reject,
      });
    });
  }

  /**
   * The runtime cancels the `waitUntil` work left: the invocation is finished, and what that
   * work would still do (a call it was making) never happens.
   */
  cancelWaitUntil(): void {
    this.waitingUntil = 0;
    this.waitUntilCanceled = true;
  }

  /** Tracks a `ctx.waitUntil` promise: the invocation is not finished before it settles. */
  waitUntil(promise: unknown): void {
    if (!this.live) return;
    this.waitingUntil++;
    const settled = () => {
      // Work the runtime canceled no longer counts.
      if (this.waitingUntil > 0) this.waitingUntil--;
    };
    Promise.resolve(promise).then(settled, settled);
  }

  /**
   * Calls `callback` once, when the invocation dies: a callee fails its caller's call so, and a
   * Durable Object undoes the transaction the invocation had open.
   */
  whenDead(callback: () => void): void {
    if (this.live) this.onDeath.push(callback);
  }

  /**
   * Calls `callback` once the invocation is over, finished or dead: the runtime then disposes
   * the stubs it still holds (`over`, which the run loop calls as it drops the invocation).
   */
  whenOver(callback: () => void): void {
    this.onOver.push(callback);
  }

  /** Runs what `whenOver` was given, once; says whether there was anything. */
  over(): boolean {
    const callbacks = this.onOver.splice(0);
    for (const callback of callbacks) callback();
    return callbacks.length > 0;
  }

  /** Called once, if the runtime cancels the invocation (see `cancel`). */
  whenCanceled(callback: (error: Error) => void): void {
    this.onCancel = callback;
  }

  /** Called once, if the invocation is orphaned (see `orphan`). */
  whenOrphaned(callback: (error: Error) => void): void {
    this.onOrphan = callback;
  }

  /**
   * The Durable Object instance this invocation serves a call on was reset, or the invocation
   * that called it died: whoever awaits the invocation gets `error` now, as Cloudflare fails
   * every call in flight to a reset object. The invocation itself lives on unless it is killed as
   * well; what it answers reaches no one.
   */
  orphan(error: Error, because?: string): void {
    if (!this.live || this.orphaned) return;
    this.orphaned = true;
    if (because !== undefined) this.orphanedBecause = because;
    this.onOrphan?.(error);
  }

  /**
   * The calls this invocation made to Durable Objects that still wait at the object's gate
   * (behind a critical section) are dropped: the runtime cancels a call not yet delivered when
   * the one who made it dies or its own object is reset, where a call already going on runs on.
   */
  dropCallsAtGates(because: string): void {
    for (const callee of this.callees) {
      if (callee.resource === undefined || callee.waitingFor === undefined || !callee.live) continue;
      callee.droppedAtGate = true;
      callee.orphan(lostConnection(), because);
      callee.wakeAtGate?.();
    }
  }

  /**
   * The runtime cancels the invocation because its code hung: it ends as if it threw `error`
   * (its `waitUntil` work is dropped), and whoever awaits it gets `error`.
   */
  cancel(error: Error): void {
    if (!this.live) return;
    if (this.state === "running") this.state = "threw";
    this.waitingUntil = 0;
    this.onCancel?.(error);
  }

  /**
   * The invocation dies: it never answers, its parked effects never run, its callees die. A
   * Durable Object's invocation serving one of its calls is no callee of its machine: the object
   * runs on where it lives, unheard, as Cloudflare lets an object finish after its client left.
   */
  kill(): void {
    if (!this.live) return;
    this.state = "dead";
    this.dropCallsAtGates("its caller died");
    for (const callee of this.callees) {
      if (callee.resource === undefined) callee.kill();
      else callee.orphan(lostConnection(), "its caller died");
    }
    this.callees.clear();
    this.parent?.callees.delete(this);
    for (const callback of this.onDeath.splice(0)) callback();
  }
}
