/**
 * All of a scenario's events, each driver's in its own order, the drivers' merged by when they
 * send them. Each kind of driver numbers its own events from 1 across the scenario (`req-1`,
 * `req-2`, `msg-1`, `cron-1`).
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
  const each: SimEvent[][] = [];
  for (const driver of drivers) {
    const first = counts[driver.kind] + 1;
    const made =
      driver.kind === "http"
        ? httpEvents(driver, first)
        : driver.kind === "queue"
          ? queueEvents(driver, first)
          : cronEvents(driver, first);
    counts[driver.kind] += made.length;
    each.push(made);
  }
  return byTime(each);
}

/**
 * The drivers' events merged by the time each is sent: drivers are clients of their own, so a
 * request sent at 200 s comes before a cron tick at 300 s whichever driver the scenario lists
 * first. An event that names no time is sent with the one before it in its driver (at the
 * start, for the first); on a tie, the driver listed first goes first.
 */
function byTime(each: readonly (readonly SimEvent[])[]): SimEvent[] {
  const next = each.map(() => 0);
  const sentAt = each.map(() => Number.NEGATIVE_INFINITY);
  const merged: SimEvent[] = [];
  for (;;) {
    let pick = -1;
    let pickAt = Number.POSITIVE_INFINITY;
    for (const [d, events] of each.entries()) {
      const event = events[next[d] as number];
      if (!event) continue;
      const at = event.atMs ?? (sentAt[d] as number);
      if (pick < 0 || at < pickAt) {
        pick = d;
        pickAt = at;
      }
    }
    if (pick < 0) return merged;
    merged.push(each[pick]?.[next[pick] as number] as SimEvent);
    next[pick] = (next[pick] as number) + 1;
    sentAt[pick] = pickAt;
  }
}
