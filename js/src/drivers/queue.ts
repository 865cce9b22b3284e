/**
 * The `queue` driver: a producer outside the scenario's Workers sends each message to a queue,
 * as event `msg-<i>`. The queue's consumer receives it in a batch after the event, as the
 * platform's own work.
 */

import type { QueueDriver } from "../cloudflare.ts";
import { sendFromOutside } from "../sim/queues.ts";
import type { SimEvent } from "./event.ts";

export function queueEvents(driver: QueueDriver, first: number): SimEvent[] {
  return driver.messages.map((body, i) => {
    const id = `msg-${first + i}`;
    return {
      id,
      async deliver(run) {
        sendFromOutside(run, driver.queue, body, id);
      },
    };
  });
}
