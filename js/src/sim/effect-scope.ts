/**
 * What a binding sees of the invocation that calls it. Each call across a binding boundary is
 * one effect: the invocation parks, the engine decides (proceed, crash before, crash after),
 * and only then does `perform` run. A crashed invocation never sees the promise settle.
 */
export interface EffectScope {
  /** The invocation's id, as reports show it: `req-2#1`, or `req-2#1/0` for a callee. */
  readonly invocation: string;
  /**
   * Runs `perform` as the invocation's next effect; `label` names it in reports. `perform`
   * gets the effect's index in the invocation (a callee it hosts is named after it).
   */
  effect<T>(label: string, perform: (effect: number) => T | Promise<T>, options?: EffectOptions): Promise<T>;
}

import type { FootprintEntry } from "../engine.ts";

/**
 * The resource of the platform's queue of its own work (queue batches, alarms): the order in
 * which steps queue work is the order the work is offered in, so steps that may queue work
 * write it.
 */
export const PLATFORM_WORK = "platform-work";

export interface EffectOptions {
  /**
   * What the call does instead when it misbehaves as Cloudflare documents it may: D1 rejects
   * with "Network connection lost.", KV reads a stale value, a Durable Object resets. When
   * given, the engine may choose it as a fault (a `transient` decision): `perform` does not
   * run and the call settles with what this returns or throws; the invocation lives on.
   */
  readonly transient?: (effect: number) => unknown;
  /**
   * Whether the misbehaviour is possible when the call happens (a stale read needs a recent
   * write by another request), asked right before the engine decides; offered always if absent.
   */
  readonly transientOffered?: () => boolean;
  /**
   * Whether the call can also fail after it took effect, the answer lost on its way back (a D1
   * write that committed, a request the other side acted on): the engine may then choose a
   * `lost_response` fault, where `perform` runs and the call settles with what `lostResponse`
   * returns or throws (`transient`'s, if absent). Asked right before the engine decides;
   * never offered if absent, nor without `transient`.
   */
  readonly lostResponseOffered?: () => boolean;
  readonly lostResponse?: (effect: number) => unknown;
  /**
   * The shared state the call reads and writes (`D1:<db>:<table>`, `KV:<store>`, `DO:<object>`…),
   * for partial-order reduction when invocations interleave: calls of different invocations
   * whose footprints do not conflict are not permuted. Absent means unknown, which conflicts
   * with every other step. Asked only when invocations interleave, with the effect's index and
   * the id of the invocation that makes it.
   */
  readonly footprint?: (effect: number, invocation: string) => readonly FootprintEntry[] | undefined;
}
