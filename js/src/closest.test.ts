import { describe, expect, it } from "vitest";
import { closest, editDistance } from "./closest.ts";

describe("closest", () => {
  const options = ["seed", "replay", "budget-ms", "json", "junit", "workers", "shard", "trace"];

  it("finds the word a swap, a missing or an extra letter misspells", () => {
    expect(closest("jsno", options)).toBe("json");
    expect(closest("worker", options)).toBe("workers");
    expect(closest("seeed", options)).toBe("seed");
    expect(closest("chekc", ["check", "replay", "merge"])).toBe("check");
  });

  it("takes the one word a prefix starts", () => {
    expect(closest("budget", options)).toBe("budget-ms");
  });

  it("suggests nothing for a word far from every candidate", () => {
    expect(closest("frobnicate", options)).toBeUndefined();
    expect(closest("x", options)).toBeUndefined();
  });

  it("counts a swap of neighbours as one edit", () => {
    expect(editDistance("jsno", "json")).toBe(1);
    expect(editDistance("", "abc")).toBe(3);
    expect(editDistance("kitten", "sitting")).toBe(3);
  });
});
