import { describe, expect, it } from "vitest";
import { InputError } from "../errors.ts";
import type { RunContext } from "./context.ts";
import type { EffectScope } from "./effect-scope.ts";
import { createServiceBinding, type ServiceCalls, serviceCalls } from "./service.ts";
import type { ServiceTarget } from "./world.ts";

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

describe("a scripted service's fetch", () => {
  it("ends the check as the scenario's mistake when its script answers something other than a Response", async () => {
    const failures: Error[] = [];
    const run = {
      world: { file: "/scenarios/pay.sim.ts" },
      fail: (error: Error) => failures.push(error),
    } as unknown as RunContext;
    const scope: EffectScope = {
      invocation: "req-1#1",
      effect: (_label, perform) => Promise.resolve(perform(0)),
    };
    const target = { kind: "scripted", handlers: { fetch: () => "charged" } } as unknown as ServiceTarget;
    const calls = serviceCalls(run, scope, target, "PAYMENTS");
    const answered = calls.fetch(new Request("https://payments.internal/charge", { method: "POST" }), 0);
    await expect(answered).rejects.toBeInstanceOf(InputError);
    expect(failures.map((f) => (f as InputError).problem)).toEqual([
      "the service script for PAYMENTS answered POST /charge with string, not a Response",
    ]);
  });
});
