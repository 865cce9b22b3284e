import { describe, expect, it } from "vitest";
import type { EffectScope } from "./effect-scope.ts";
import { createServiceBinding, type ServiceCalls } from "./service.ts";

describe("a service binding's effects", () => {
  it("are labelled by RPC method, and a fetch by its method and path", async () => {
    const labels: string[] = [];
    const scope: EffectScope = {
      invocation: "req-1#1",
      effect: (label, perform) => {
        labels.push(label);
        return Promise.resolve(perform(labels.length - 1));
      },
    };
    const calls: ServiceCalls = {
      rpc: async () => 1,
      fetch: async () => new Response("ok"),
      footprint: () => [],
    };
    const stub = createServiceBinding("COUNTER", scope, calls) as {
      fetch(input: string, init?: RequestInit): Promise<Response>;
      bump(): Promise<number>;
    };
    await stub.fetch("https://counter.example/count?by=1", { method: "PUT" });
    await stub.fetch("https://counter.example/count");
    await stub.bump();
    expect(labels).toEqual([
      "Service:COUNTER fetch PUT /count",
      "Service:COUNTER fetch GET /count",
      "Service:COUNTER bump",
    ]);
  });
});
