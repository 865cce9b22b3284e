import { defineConfig } from "vitest/config";

// Two projects: the Worker's unit tests, and eutaxy's scenario tests. They are kept apart because
// the unit tests may move to @cloudflare/vitest-pool-workers (inside workerd), where eutaxy's
// engine does not run; the scenario tests always run in plain Node. See README.md.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "unit",
          include: ["test/**/*.test.ts"],
          exclude: ["test/**/*.sim.test.ts"],
        },
      },
      {
        test: {
          name: "eutaxy",
          include: ["test/**/*.sim.test.ts"],
          environment: "node",
          // A check explores for up to its scenario's budgetMs, then shrinks what it found.
          testTimeout: 60_000,
        },
      },
    ],
  },
});
