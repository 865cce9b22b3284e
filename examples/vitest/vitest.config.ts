import { configDefaults, defineConfig } from "vitest/config";

// Two projects: the Worker's unit tests, and eutaxy's scenario tests. They are kept apart because
// the unit tests may move to @cloudflare/vitest-pool-workers (inside workerd), where eutaxy's
// engine does not run; the scenario tests always run in plain Node. See README.md.
export default defineConfig({
  test: {
    // A check loads the Worker, its config, its schema and the scenario on its own, outside the
    // test file's imports, so watch mode would not see them change: a change to one of them
    // runs the tests again. Only at the top level: vitest reads no watch settings per project.
    forceRerunTriggers: [
      ...configDefaults.forceRerunTriggers,
      "**/*.ts",
      "**/*.sql",
      "**/wrangler.{json,jsonc,toml}",
    ],
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
