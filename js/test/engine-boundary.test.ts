/**
 * The wasm boundary's own checks: what `choose` accepts from the host, and what it says when the
 * host sends something else (a bug of the host, never of a Worker, but it must be named).
 */

import { describe, expect, it } from "vitest";
import { createEngine, type Engine, type StepOption } from "../src/engine.ts";

function interleavingEngine(): Engine {
  const engine = createEngine({
    seed: "boundary",
    events: ["req-1", "req-2"],
    maxFaultsPerRun: 0,
    maxRedeliveries: 0,
    budgetMs: 10_000,
    runsMax: 10,
    shrinkRunsMax: 1,
    invariants: [],
    maxConcurrentInvocations: 2,
  });
  engine.seal();
  engine.nextRun(0);
  return engine;
}

const deliveries: StepOption[] = [
  { label: "deliver req-1#1", invocation: "req-1#1", footprint: [{ resource: "deliveries", write: true }] },
  { label: "deliver req-2#1", invocation: "req-2#1", footprint: [{ resource: "deliveries", write: true }] },
];

describe("choose", () => {
  it("takes the pending steps and answers the index of one", () => {
    const engine = interleavingEngine();
    try {
      expect([0, 1]).toContain(engine.choose(deliveries));
    } finally {
      engine.free();
    }
  });

  const malformed: [string, unknown, RegExp][] = [
    ["not an array", { label: "deliver req-1#1" }, /not an array/],
    ["a label that is not a string", [{ label: 7 }], /option 0: label must be a string/],
    ["an effect that is not an index", [{ label: "x", effect: -1 }], /option 0: effect must be an integer/],
    [
      "a footprint that is not an array",
      [{ label: "x", footprint: "DB" }],
      /option 0: footprint must be an array/,
    ],
    [
      "a footprint entry without write",
      [deliveries[0], { label: "x", footprint: [{ resource: "D1:DB:t" }] }],
      /option 1: a footprint entry is \{ resource: string, write: boolean \}/,
    ],
  ];
  for (const [what, options, message] of malformed) {
    it(`names ${what}`, () => {
      const engine = interleavingEngine();
      try {
        expect(() => engine.choose(options as StepOption[])).toThrow(message);
        expect(() => engine.choose(options as StepOption[])).toThrow(/^choose takes an array of/);
      } finally {
        engine.free();
      }
    });
  }
});
