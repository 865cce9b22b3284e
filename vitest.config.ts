import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["js/**/*.test.ts"],
    // A check runs many simulated runs in-process; the budgets in the scenarios bound them.
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
