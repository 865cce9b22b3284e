/**
 * The `cron` driver: ticks of a cron trigger, each delivered to the Worker's `scheduled`
 * handler as event `cron-<i>` (one delivery: Cloudflare does not retry a failed cron run). The
 * ticks are the expression's first times from where the clock starts (cron-schedule.ts): tick
 * `i` is scheduled for the `i`-th, and comes then, as a request sent at a given time does: the
 * run loop delivers it once nothing can run before that time, so a tick overlaps the one before
 * it only if that one still waits (on a timer, a slow `outbound()` answer) when the next is due.
 */

import type { CronDriver } from "../cloudflare.ts";
import { CLOCK_START_MS } from "../engine.ts";
import { callHandler } from "../sim/handlers.ts";
import { parseCron } from "./cron-schedule.ts";
import { DELIVERY_ORDER, type SimEvent } from "./event.ts";

export function cronEvents(driver: CronDriver, first: number): SimEvent[] {
  const schedule = parseCron(driver.cron);
  const times: number[] = [];
  for (let at = CLOCK_START_MS; times.length < driver.times; at = (times.at(-1) as number) + 1) {
    times.push(schedule.atOrAfter(at));
  }
  return times.map((scheduledTime, i) => {
    const id = `cron-${first + i}`;
    return {
      id,
      footprint: DELIVERY_ORDER,
      atMs: scheduledTime,
      arrives: "scheduled",
      async deliver(run) {
        const main = run.world.main;
        run.advanceClockTo(scheduledTime);
        const controller = { cron: driver.cron, scheduledTime, type: "scheduled", noRetry: () => {} };
        const outcome = await run.deliver(`${id}#1`, {
          worker: main,
          work: `cron tick (${driver.cron})`,
          body: (ctx, env) => callHandler(run, main, undefined, "scheduled", controller, env, ctx),
        });
        // A run that died in its ctx.waitUntil work after the handler returned did not finish.
        if (outcome.kind === "returned" && !outcome.diedAfter) run.trace(`${id}#1 finished`);
      },
    };
  });
}
