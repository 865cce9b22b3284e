import { describe, expect, it } from "vitest";
import { parseCron } from "./cron-schedule.ts";

/** 2026-01-01T00:00:00Z, a Thursday: where the simulation's clock starts. */
const START = Date.UTC(2026, 0, 1);
const first = (expression: string, from = START) =>
  new Date(parseCron(expression).atOrAfter(from)).toISOString();

describe("parseCron: when a trigger fires, as Cloudflare reads the expression", () => {
  it("reads minutes, hours, steps, ranges and lists", () => {
    expect(first("*/5 * * * *")).toBe("2026-01-01T00:00:00.000Z");
    expect(first("*/5 * * * *", START + 1)).toBe("2026-01-01T00:05:00.000Z");
    expect(first("0 3 * * *")).toBe("2026-01-01T03:00:00.000Z");
    expect(first("15,45 */6 * * *", START + 20 * 60_000)).toBe("2026-01-01T00:45:00.000Z");
    expect(first("0 15 1 * *", START + 16 * 3_600_000)).toBe("2026-02-01T15:00:00.000Z");
  });

  it("counts weekdays from 1 = Sunday, and takes names in any case", () => {
    expect(first("0 17 * * sun")).toBe("2026-01-04T17:00:00.000Z");
    expect(first("0 17 * * 1")).toBe("2026-01-04T17:00:00.000Z");
    expect(first("10 7 * * mon-fri")).toBe("2026-01-01T07:10:00.000Z");
    expect(first("10 7 * * 2-6", START + 8 * 3_600_000)).toBe("2026-01-02T07:10:00.000Z");
    expect(first("0 0 1 Aug *")).toBe("2026-08-01T00:00:00.000Z");
  });

  it("reads the Quartz extensions Cloudflare documents: L, LW, W and #", () => {
    expect(first("0 18 * * 6L")).toBe("2026-01-30T18:00:00.000Z");
    expect(first("0 18 * * friL")).toBe("2026-01-30T18:00:00.000Z");
    expect(first("59 23 LW * *")).toBe("2026-01-30T23:59:00.000Z");
    expect(first("0 0 L * *")).toBe("2026-01-31T00:00:00.000Z");
    // The 15th of February 2026 is a Sunday: the nearest weekday is Monday the 16th.
    expect(first("0 0 15W 2 *")).toBe("2026-02-16T00:00:00.000Z");
    expect(first("0 0 * * fri#2")).toBe("2026-01-09T00:00:00.000Z");
  });

  it("fires on a day either day field accepts when both are restricted", () => {
    expect(first("0 0 10 * mon")).toBe("2026-01-05T00:00:00.000Z");
  });

  it("refuses what Cloudflare would not run, saying why", () => {
    expect(() => parseCron("not a cron")).toThrow('"not a cron" has 3 fields; a cron expression has five');
    expect(() => parseCron("61 * * * *")).toThrow('minute "61" is out of its range 0-59');
    expect(() => parseCron("0 9 * * 0")).toThrow('weekday "0" is out of its range 1-7');
    expect(() => parseCron("0 9 * * mo")).toThrow('weekday "mo" is not a cron field Cloudflare accepts');
    expect(() => parseCron("0 0 31 2 *").atOrAfter(START)).toThrow('"0 0 31 2 *" never fires');
  });
});
