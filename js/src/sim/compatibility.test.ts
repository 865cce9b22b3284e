import { describe, expect, it } from "vitest";
import { nodeGlobals, nodejsCompat, r2ListHonorsInclude } from "./compatibility.ts";

const worker = (compatibilityDate: string, ...compatibilityFlags: string[]) => ({
  compatibilityDate,
  compatibilityFlags,
});

describe("Node.js compatibility, as workerd resolves it from the date and the flags", () => {
  it.each([
    // [date, flags, node: modules, Node's globals]
    ["2024-01-01", [], false, false],
    ["2024-01-01", ["nodejs_compat"], true, false],
    ["2024-09-23", ["nodejs_compat"], true, true],
    ["2024-09-23", ["nodejs_compat", "no_nodejs_compat_v2"], true, false],
    ["2024-01-01", ["nodejs_compat_v2"], true, true],
    ["2026-08-03", [], false, false],
    // From 2026-08-04 both flags are on by default, each with its own opt-out.
    ["2026-08-04", [], true, true],
    ["2026-11-30", [], true, true],
    ["2026-11-30", ["no_nodejs_compat_v2"], true, false],
    ["2026-11-30", ["no_nodejs_compat"], true, true],
    ["2026-11-30", ["no_nodejs_compat", "no_nodejs_compat_v2"], false, false],
  ] as const)("%s %j: node: modules %s, globals %s", (date, flags, modules, globals) => {
    expect(nodejsCompat(worker(date, ...flags))).toBe(modules);
    expect(nodeGlobals(worker(date, ...flags))).toBe(globals);
  });

  it("gives a Worker without a config neither", () => {
    expect(nodejsCompat(undefined)).toBe(false);
    expect(nodeGlobals(undefined)).toBe(false);
  });
});

describe("r2_list_honor_include, as workerd resolves it from the date and the flag", () => {
  it.each([
    ["2022-08-03", [], false],
    ["2022-08-03", ["r2_list_honor_include"], true],
    ["2022-08-04", [], true],
  ] as const)("%s %j: %s", (date, flags, honored) => {
    expect(r2ListHonorsInclude(worker(date, ...flags))).toBe(honored);
  });

  it("honours it for a config without a date, which runs on the runtime's latest", () => {
    expect(r2ListHonorsInclude(undefined)).toBe(true);
    expect(r2ListHonorsInclude({})).toBe(true);
  });
});
