/**
 * An event of a scenario's driver: `req-2`, `msg-1`, `cron-3`. Its id is fixed by the driver's
 * order and survives shrinking; `deliver` runs it (and any resends) in one run.
 */

import type { FootprintEntry } from "../engine.ts";
import type { RunContext } from "../sim/context.ts";

/**
 * The footprint of starting an event that touches no shared state: only its place in the
 * driver's order, which every delivery writes.
 */
export const DELIVERY_ORDER: readonly FootprintEntry[] = [{ resource: "deliveries", write: true }];

export interface SimEvent {
  readonly id: string;
  /**
   * The shared state starting the event touches besides the invocation it starts (which only
   * orders it among the driver's deliveries), for interleaved runs; absent means unknown.
   */
  readonly footprint?: readonly FootprintEntry[];
  /**
   * When the event happens on the run's clock, if the driver says (a request sent `atMs` after
   * the start): the run loop delivers it once the clock can move there (see `Run`).
   */
  readonly atMs?: number;
  /** How the trace says the event came at `atMs`: `sent` (a request) or `scheduled` (a cron tick). */
  readonly arrives?: "sent" | "scheduled";
  /** Runs the event; `index` is its place among all the scenario's events (for the engine). */
  deliver(run: RunContext, index: number): Promise<void>;
}
