import { describe, expect, it } from "vitest";
import { globPattern } from "./module-rules.ts";

describe("globPattern", () => {
  it("matches as wrangler's glob-to-regexp does: * across folders, every other character itself", () => {
    const md = globPattern("**/*.md");
    expect(["./README.md", "./docs/a/b.md", "pkg/x.md"].filter((s) => md.test(s))).toHaveLength(3);
    expect(["README.md", "./README.mdx", "./README.md?raw"].some((s) => md.test(s))).toBe(false);
    const wasm = globPattern("**/*.wasm?module");
    expect(wasm.test("./add.wasm?module")).toBe(true);
    expect(wasm.test("./add.wasmXmodule")).toBe(false);
    const braces = globPattern("**/*.{md,txt}");
    expect(braces.test("./a.md")).toBe(false);
    expect(braces.test("./a.{md,txt}")).toBe(true);
  });
});
