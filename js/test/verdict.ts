/** Narrowing a check's result to the verdict a test expects, failing the test otherwise. */

import type { CheckResult } from "../src/index.ts";

export function violated(result: CheckResult): Extract<CheckResult, { verdict: "VIOLATED" }> {
  if (result.verdict !== "VIOLATED") throw new Error(`expected VIOLATED, got ${result.verdict}`);
  return result;
}
