/**
 * All of a scenario's events, in the order its drivers give them. Each kind of driver numbers
 * its own events from 1 across the scenario (`req-1`, `req-2`, `msg-1`, `cron-1`).
 */

import type { Driver } from "../cloudflare.ts";
import { cronEvents } from "./cron.ts";
import type { SimEvent } from "./event.ts";
import { httpEvents } from "./http.ts";
import { queueEvents } from "./queue.ts";

export type { SimEvent } from "./event.ts";

export function eventsOf(drive: Driver | readonly Driver[]): SimEvent[] {
  const drivers: readonly Driver[] = Array.isArray(drive) ? drive : [drive as Driver];
  const counts = { http: 0, queue: 0, cron: 0 };
  const events: SimEvent[] = [];
  for (const driver of drivers) {
    const first = counts[driver.kind] + 1;
    const made =
      driver.kind === "http"
        ? httpEvents(driver, first)
        : driver.kind === "queue"
          ? queueEvents(driver, first)
          : cronEvents(driver, first);
    counts[driver.kind] += made.length;
    events.push(...made);
  }
  return events;
}
