/**
 * The `cron` driver: ticks of a cron trigger, each delivered to the Worker's `scheduled`
 * handler as event `cron-<i>` (one delivery: Cloudflare does not retry a failed cron run).
 */

import type { CronDriver } from "../cloudflare.ts";
import { callHandler } from "../sim/handlers.ts";
import { DELIVERY_ORDER, type SimEvent } from "./event.ts";

export function cronEvents(driver: CronDriver, first: number): SimEvent[] {
  return Array.from({ length: driver.times }, (_, i) => {
    const id = `cron-${first + i}`;
    return {
      id,
      footprint: DELIVERY_ORDER,
      async deliver(run) {
        const main = run.world.main;
        const scheduledTime = run.nowMs();
        const controller = { cron: driver.cron, scheduledTime, type: "scheduled", noRetry: () => {} };
        const outcome = await run.deliver(`${id}#1`, {
          worker: main,
          body: (ctx, env) => callHandler(run, main, undefined, "scheduled", controller, env, ctx),
        });
        if (outcome.kind === "returned") run.trace(`${id}#1 finished`);
      },
    };
  });
}
