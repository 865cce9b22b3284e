/**
 * An event of a scenario's driver: `req-2`, `msg-1`, `cron-3`. Its id is fixed by the driver's
 * order and survives shrinking; `deliver` runs it (and any resends) in one run.
 */

import type { RunContext } from "../sim/context.ts";

export interface SimEvent {
  readonly id: string;
  /** Runs the event; `index` is its place among all the scenario's events (for the engine). */
  deliver(run: RunContext, index: number): Promise<void>;
}
