/**
 * A smoke test of the bench's floor: the example's two Workers, run bare over the D1 shim and a
 * direct service binding, answer both payments and charge each order once per run. (`pnpm bench
 * --quick` is the smoke test of the rest; it takes half a minute.)
 */

import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";
import { createFloor } from "./floor.ts";
import { orderRequests } from "./orders.ts";
import { examplePaths, loadWorker, schemaStatements } from "./workers.ts";

const example = examplePaths(fileURLToPath(new URL("../..", import.meta.url)));

it("runs the example's Workers bare, on fresh tables every run", async () => {
  const floor = await createFloor(
    [
      await loadWorker(example.checkoutFixed, example.checkoutConfig, true),
      await loadWorker(example.payments, example.paymentsConfig, true),
    ],
    schemaStatements(example.schema),
    orderRequests(2),
    "charges",
  );
  try {
    expect(await floor.charged()).toBe(2);
    await floor.run();
    expect(await floor.charged()).toBe(2);
  } finally {
    floor.close();
  }
});
