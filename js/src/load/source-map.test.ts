import { build } from "esbuild";
import { describe, expect, it } from "vitest";
import { scratchFolder } from "../../test/files.ts";
import { originalPosition, type SourceMapData, splitInlineSourceMap, thrownAt } from "./source-map.ts";

const folder = scratchFolder("eutaxy-source-map-");

/**
 * `entry` bundled as a Worker is, with its map split off; `line` and `column` find where `text`
 * first is in the bundle, counting from 1 as a stack trace does.
 */
async function bundled(entry: string): Promise<{
  code: string;
  map: SourceMapData;
  line: (text: string) => number;
  column: (text: string) => number;
}> {
  const result = await build({
    entryPoints: [entry],
    absWorkingDir: folder.dir,
    bundle: true,
    write: false,
    format: "cjs",
    sourcemap: "inline",
    sourcesContent: false,
  });
  const { code, map } = splitInlineSourceMap(result.outputFiles[0]?.text ?? "");
  if (!map) throw new Error("no source map");
  const lines = code.split("\n");
  const line = (text: string) => lines.findIndex((l) => l.includes(text)) + 1;
  return { code, map, line, column: (text) => (lines[line(text) - 1] as string).indexOf(text) + 1 };
}

describe("source maps", () => {
  it("split off esbuild's inline map, leaving the code", async () => {
    const entry = folder.write("index.ts", "export const answer: number = 42;\n");
    const { code, map } = await bundled(entry);
    expect(code).not.toContain("sourceMappingURL");
    expect(code).toContain("42");
    expect(map.sources).toEqual(["index.ts"]);
  });

  it("map a bundle's line back to the module and line it came from", async () => {
    folder.write("limits.ts", '\n\nexport const LIMIT = Number("7");\n');
    const entry = folder.write("index.ts", 'import { LIMIT } from "./limits";\nexport default LIMIT;\n');
    const { map, line } = await bundled(entry);
    // `var` in the bundle is `const` in the module.
    expect(originalPosition(map, line("var LIMIT ="), 1)).toEqual({
      source: "limits.ts",
      line: 3,
      column: 8,
    });
    // esbuild's own helpers map to no file.
    expect(originalPosition(map, line("var __defProp"), 1)).toBeUndefined();
  });
});

describe("where an error was thrown", () => {
  it("is the innermost frame in the bundle outside node_modules, mapped to its file", async () => {
    folder.write(
      "node_modules/strict-env/index.js",
      'exports.need = (name) => { throw new Error(name + " missing"); };\n',
    );
    folder.write("config.ts", 'import { need } from "strict-env";\n\nexport const KEY = need("KEY");\n');
    const entry = folder.write("index.ts", 'import { KEY } from "./config";\nexport default KEY;\n');
    const { code, map, line, column } = await bundled(entry);
    const placement = {
      script: "/w/index.ts",
      lineOffset: 0,
      columnOffset: 0,
      lines: code.split("\n").length,
    };
    const error = new Error("KEY missing");
    const at = (text: string) => `/w/index.ts:${line(text)}:${column(text)}`;
    error.stack = [
      "Error: KEY missing",
      `    at need (${at("throw new Error")})`,
      `    at ${at('"KEY"')}`,
      "    at evaluateWorker (/eutaxy/host.js:10:5)",
    ].join("\n");
    // Not the package's line that threw: config.ts's call, at the frame's column (`"KEY"`).
    expect(thrownAt(error, placement, map, folder.dir)).toEqual({
      file: `${folder.dir}/config.ts`,
      line: 3,
      column: 25,
    });
  });

  it("reads frames of a bundle held further down a script, and none of another script's", async () => {
    const entry = folder.write("index.ts", 'export const A = 1;\nthrow new Error("at import");\n');
    const { code, map, line } = await bundled(entry);
    const placement = {
      script: "file:///eutaxy/main.js",
      lineOffset: 40,
      columnOffset: 0,
      lines: code.split("\n").length,
    };
    const thrown = (frame: string) => {
      const error = new Error("at import");
      error.stack = `Error: at import\n    at ${frame}`;
      return thrownAt(error, placement, map, folder.dir);
    };
    expect(thrown(`file:///eutaxy/main.js:${line("throw new Error") + 40}:7`)).toEqual({
      file: `${folder.dir}/index.ts`,
      line: 2,
      column: 7,
    });
    expect(thrown(`file:///eutaxy/other/main.js:${line("throw new Error") + 40}:7`)).toBeUndefined();
    expect(thrown("file:///eutaxy/main.js:3:1")).toBeUndefined();
    expect(thrownAt("a string", placement, map, folder.dir)).toBeUndefined();
  });
});
