/**
 * An invariant's query on a Durable Object's tables: the object makes them as its code runs, so
 * a run in which it had not made one yet reads no rows from it, while a query that found its
 * table in no run of the check is bad input (js/test/fixtures/object-tables).
 */

import { describe, expect, it } from "vitest";
import { InputError } from "../src/errors.ts";
import { check } from "../src/index.ts";

const fixture = (file: string) => new URL(`./fixtures/object-tables/${file}`, import.meta.url).pathname;

async function inputError(file: string): Promise<InputError> {
  const error = await check(fixture(file)).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(InputError);
  return error as InputError;
}

describe("an invariant's query on a table a Durable Object makes itself", () => {
  it("reads no rows in a run whose object crashed before making it, and the check goes on", async () => {
    const result = await check(fixture("ledger.sim.ts"));
    expect(result.verdict).toBe("BOUNDED");
    // A crash at the audit call, before the table, is among the schedules run.
    expect(result.verdict === "BOUNDED" && result.runs).toBeGreaterThan(2);
  });

  it("ends the check as bad input when no run's object had the table, naming the invariant and the object", async () => {
    const error = await inputError("misspelt.sim.ts");
    expect(error.file).toBe(fixture("misspelt.sim.ts"));
    expect(error.problem).toBe(
      'invariant at-most-one-entry: its query on LEDGER "main" found no table in any run: no such table: entrys: SQLITE_ERROR',
    );
  });

  it("says so when the Worker failed every request, which may be why the object never made it", async () => {
    const error = await inputError("failing.sim.ts");
    expect(error.problem).toMatch(
      /^invariant at-most-one-entry: its query on LEDGER "main" found no table in any run: no such table: entries: SQLITE_ERROR \(no request got an answer below 500 in any run, first: .*the ledger's setup failed \(\d+ tables\)\)$/,
    );
  });
});
