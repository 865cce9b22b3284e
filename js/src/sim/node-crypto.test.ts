import { randomFillSync as platformFill } from "node:crypto";
import { describe, expect, it } from "vitest";
import { simulatedNodeCrypto } from "./node-crypto.ts";

const crypto = simulatedNodeCrypto(require("node:crypto") as object) as {
  randomFillSync<T>(buffer: T, offset?: number, size?: number): T;
  randomInt(min: number, max?: number): number;
  createHash(algorithm: string): { update(text: string): { digest(encoding: string): string } };
};

describe("node:crypto as Worker code gets it", () => {
  it("fills an ArrayBuffer, and counts a typed array's offset and size in elements, as Node does", () => {
    const buffer = new ArrayBuffer(64);
    crypto.randomFillSync(buffer);
    expect(new Uint8Array(buffer).some((b) => b !== 0)).toBe(true);
    const words = new Uint32Array(4);
    crypto.randomFillSync(words, 1, 1);
    expect([words[0], words[2], words[3]]).toEqual([0, 0, 0]);
    // Node fills the same element, so the shapes agree.
    const theirs = platformFill(new Uint32Array(4), 1, 1);
    expect([theirs[0], theirs[2], theirs[3]]).toEqual([0, 0, 0]);
  });

  it("draws randomInt within its range, and keeps the rest of the module", () => {
    for (let i = 0; i < 100; i++) {
      const n = crypto.randomInt(5, 8);
      expect(n >= 5 && n < 8).toBe(true);
    }
    expect(crypto.createHash("sha256").update("a").digest("hex")).toHaveLength(64);
  });
});
