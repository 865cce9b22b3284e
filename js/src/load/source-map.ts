/**
 * Where in a Worker's own files an exception was thrown, read back from its stack through the
 * bundle's source map: a Worker runs as one bundle, so its stack frames name the bundle's lines,
 * not the module the user wrote. Portable: the same code answers in Node and inside workerd.
 */

import { resolve } from "node:path";

/** What of a source map (version 3, as esbuild writes it) a position is looked up in. */
export interface SourceMapData {
  /** The bundled files, relative to the folder the bundle was built in. */
  readonly sources: readonly string[];
  readonly mappings: string;
}

/** A place in a file; line and column count from 1, as editors and stack traces do. */
export interface SourceLocation {
  readonly file: string;
  readonly line: number;
  readonly column: number;
}

/** Where a script that evaluates a bundle holds it, to read the script's stack frames back. */
export interface BundlePlacement {
  /** The script's name, as its stack frames print it. */
  readonly script: string;
  /** The script's lines before the bundle's first. */
  readonly lineOffset: number;
  /** The script's characters before the bundle on the bundle's first line. */
  readonly columnOffset: number;
  /** The bundle's lines. */
  readonly lines: number;
}

const INLINE_MAP = /\n\/\/# sourceMappingURL=data:application\/json;base64,([A-Za-z0-9+/=]+)\s*$/;

/** esbuild's output without its inline source map, and the map (undefined when there is none). */
export function splitInlineSourceMap(output: string): { code: string; map: SourceMapData | undefined } {
  const found = INLINE_MAP.exec(output);
  if (!found) return { code: output, map: undefined };
  const bytes = Uint8Array.from(atob(found[1] as string), (char) => char.charCodeAt(0));
  const { sources, mappings } = JSON.parse(new TextDecoder().decode(bytes)) as SourceMapData;
  return { code: output.slice(0, found.index), map: { sources, mappings } };
}

const BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/** The numbers of one segment of `mappings`, each a base64 VLQ: 5 bits a digit, sign bit last. */
function segmentFields(segment: string): number[] {
  const fields: number[] = [];
  let value = 0;
  let scale = 1;
  for (const char of segment) {
    const digit = BASE64.indexOf(char);
    if (digit < 0) return [];
    value += (digit & 31) * scale;
    if (digit & 32) {
      scale *= 32;
      continue;
    }
    fields.push(value % 2 === 1 ? -Math.floor(value / 2) : value / 2);
    value = 0;
    scale = 1;
  }
  return fields;
}

/**
 * The original position of generated `line` and `column` (from 1): that of the last mapping at
 * or before it on the same line, undefined when there is none or it maps no source (esbuild's
 * own helpers).
 */
export function originalPosition(
  map: SourceMapData,
  line: number,
  column: number,
): { source: string; line: number; column: number } | undefined {
  const lines = map.mappings.split(";");
  if (line < 1 || line > lines.length) return undefined;
  // The source, line and column fields are relative to the previous segment's, across lines.
  let source = 0;
  let sourceLine = 0;
  let sourceColumn = 0;
  let found: { source: string; line: number; column: number } | undefined;
  for (let at = 0; at < line; at++) {
    let generatedColumn = 0;
    for (const segment of (lines[at] as string).split(",")) {
      if (segment === "") continue;
      const [columnDelta = 0, sourceDelta, lineDelta = 0, columnInSourceDelta = 0] = segmentFields(segment);
      generatedColumn += columnDelta;
      const here = at === line - 1 && generatedColumn <= column - 1;
      if (sourceDelta === undefined) {
        if (here) found = undefined;
        continue;
      }
      source += sourceDelta;
      sourceLine += lineDelta;
      sourceColumn += columnInSourceDelta;
      const name = map.sources[source];
      if (here)
        found =
          name === undefined ? undefined : { source: name, line: sourceLine + 1, column: sourceColumn + 1 };
    }
  }
  return found;
}

/**
 * Where `error` was thrown in the files of a bundle built in `dir`: the innermost frame of its
 * stack in the bundle, outside `node_modules` when there is one there (the Worker's own line that
 * called a package that threw), mapped through `map`. Undefined for a value without a stack, or
 * one thrown outside the bundle's mapped code.
 */
export function thrownAt(
  error: unknown,
  placement: BundlePlacement,
  map: SourceMapData,
  dir: string,
): SourceLocation | undefined {
  const stack = error instanceof Error && typeof error.stack === "string" ? error.stack : "";
  const places: SourceLocation[] = [];
  for (const frame of stack.split("\n")) {
    if (!/^\s+at /.test(frame)) continue;
    // The script's name may hold spaces and colons; the line and column follow it.
    const at = frame.lastIndexOf(`${placement.script}:`);
    // The name whole, not the end of a longer one: `(/w/index.ts:…` is not `/index.ts`'s.
    if (at < 0 || !/[\s(]/.test(frame[at - 1] ?? "")) continue;
    const numbers = /^(\d+):(\d+)/.exec(frame.slice(at + placement.script.length + 1));
    if (!numbers) continue;
    const line = Number(numbers[1]) - placement.lineOffset;
    if (line < 1 || line > placement.lines) continue;
    const column = Number(numbers[2]) - (line === 1 ? placement.columnOffset : 0);
    const original = originalPosition(map, line, column);
    if (original)
      places.push({ file: resolve(dir, original.source), line: original.line, column: original.column });
  }
  return places.find((place) => !/[\\/]node_modules[\\/]/.test(place.file)) ?? places[0];
}
