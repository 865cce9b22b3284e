import { describe, expect, it } from "vitest";
import {
  MODULE_STATE_KEY,
  type ModuleStateReader,
  ModuleStateWatch,
  platformObject,
  withStateHook,
} from "./module-state.ts";

/** A bundle as esbuild prints one: a file header before each file's top-level code. */
const BUNDLE = [
  "var __defProp = Object.defineProperty;",
  "",
  "// node_modules/router/index.js",
  "var Router = class {",
  "  routes = [];",
  "  match() { this.built ??= this.routes.slice(); return this.built; }",
  "};",
  "var routerCache = new Map();",
  "",
  "// src/index.ts",
  "var src_exports = {};",
  'var import_cloudflare_workers = require("cloudflare:workers");',
  "var count = 0;",
  "var seen = new Set();",
  "var reads = { count: 0 };",
  'var locks = new Map([["export", { held: false }]]);',
  "var lazy = { get value() { reads.count++; return 1; } };",
  "var router = new Router();",
  "var client;",
  "var pending;",
  "var handler;",
  "var Thing = class {",
  "  static made = 0;",
  "};",
  "var text = `",
  "var notAVariable = 1;",
  "`;",
  'module.exports = { flip: () => { const l = locks.get("export"); l.held = !l.held; }, reads: () => reads.count, count: () => count, bump: () => { count++; }, see: (x) => seen.add(x), route: () => router.match(), make: () => { Thing.made++; }, connect: () => { client ??= new Router(); }, reconnect: () => { client = new Router(); }, load: () => { pending ??= Promise.resolve(1); }, handle: () => { handler ??= () => 1; }, keep: (x) => { client = x; } };',
].join("\n");

/** Evaluates `BUNDLE` with its hook as a Worker's factory is evaluated: its exports and its reader. */
function instantiate(): { exports: Record<string, (x?: unknown) => unknown>; reader: ModuleStateReader } {
  const module: Record<string, unknown> = { exports: {} };
  new Function("module", "require", withStateHook(BUNDLE))(module, () => ({}));
  return {
    exports: module.exports as Record<string, (x?: unknown) => unknown>,
    reader: module[MODULE_STATE_KEY] as ModuleStateReader,
  };
}

describe("withStateHook", () => {
  it("reads each variable of a module esbuild initializes lazily, all declared on one line", () => {
    const lazy = [
      "// src/cache.ts",
      "var cache_exports = {};",
      "var PRICE_KEY, cache;",
      "var init_cache = __esm({ 'src/cache.ts'() { PRICE_KEY = 'price'; cache = new Map(); } });",
      "// node_modules/lib/index.js",
      "var a, b;",
    ].join("\n");
    const module: Record<string, unknown> = { exports: {} };
    new Function("module", "require", "__esm", withStateHook(lazy))(
      module,
      () => ({}),
      () => () => {},
    );
    expect((module[MODULE_STATE_KEY] as ModuleStateReader).names).toEqual([
      "cache_exports",
      "PRICE_KEY",
      "cache",
      "init_cache",
    ]);
    expect((module[MODULE_STATE_KEY] as ModuleStateReader).files).toEqual([
      "src/cache.ts",
      "src/cache.ts",
      "src/cache.ts",
      "src/cache.ts",
    ]);
  });

  it("reads every variable of a declaration of several, however its initializers span lines", () => {
    const several = [
      "// src/index.ts",
      'let hits = 0, last = "a, b", cache = new Map([["k", { v: [1, 2] }]]);',
      "const limits = {",
      "  perMinute: 10,",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the bundle's text holds a template literal
      "  burst: `${1 + 1}, {x}`",
      "}, windowMs = 60_000, /* a, comment */ seenAt = (/* c */ 0);",
      "const { region, retries: attempts = 3 } = { region: 'x' }, [first, , third] = [1, 2, 3];",
      "var url = 'https://a.example/?q=1;2', after = 1;",
      "// node_modules/lib/index.js",
      "let libA = 1, libB = 2;",
    ].join("\n");
    const module: Record<string, unknown> = { exports: {} };
    new Function("module", "require", withStateHook(several))(module, () => ({}));
    const reader = module[MODULE_STATE_KEY] as ModuleStateReader;
    expect(reader.names).toEqual([
      "hits",
      "last",
      "cache",
      "limits",
      "windowMs",
      "seenAt",
      // A pattern's keys are read as names too: one no variable has reads undefined.
      "region",
      "retries",
      "attempts",
      "first",
      "third",
      "url",
      "after",
    ]);
    expect(reader.values()).toEqual([
      0,
      "a, b",
      new Map([["k", { v: [1, 2] }]]),
      { perMinute: 10, burst: "2, {x}" },
      60_000,
      0,
      "x",
      undefined,
      3,
      1,
      3,
      "https://a.example/?q=1;2",
      1,
    ]);
  });

  it("reads the top-level variables of the Worker's own files, not a library's or the runtime's", () => {
    const { reader } = instantiate();
    expect(reader.names).toEqual([
      "src_exports",
      "count",
      "seen",
      "reads",
      "locks",
      "lazy",
      "router",
      "client",
      "pending",
      "handler",
      "Thing",
      "text",
      "notAVariable",
    ]);
    // A line inside a template literal names no variable: it reads undefined, not a throw.
    expect(reader.values().at(-1)).toBeUndefined();
  });
});

describe("ModuleStateWatch", () => {
  const watching = () => {
    const { exports, reader } = instantiate();
    const watch = new ModuleStateWatch();
    watch.add("w", { [MODULE_STATE_KEY]: reader } as unknown as Record<string, unknown>);
    watch.start();
    return { exports, watch };
  };

  it("sees a variable given a new value, once", () => {
    const { exports, watch } = watching();
    expect(watch.changed()).toBeUndefined();
    exports.bump?.();
    expect(watch.changed()).toEqual({ worker: "w", variable: "count", file: "src/index.ts" });
    expect(watch.changed()).toBeUndefined();
  });

  it("sees a Set of the Worker's grow after the step", () => {
    const { exports, watch } = watching();
    exports.see?.("x");
    expect(watch.changed()).toEqual({ worker: "w", variable: "seen", file: "src/index.ts" });
  });

  it("sees a change deeper down: a class's static field, a value in a Map", () => {
    const { exports, watch } = watching();
    exports.make?.();
    expect(watch.changed()).toEqual({ worker: "w", variable: "Thing", file: "src/index.ts" });
    exports.flip?.();
    expect(watch.changed()).toEqual({ worker: "w", variable: "locks", file: "src/index.ts" });
    exports.flip?.();
    expect(watch.changed()).toEqual({ worker: "w", variable: "locks", file: "src/index.ts" });
  });

  it("runs no getter of the Worker's: that would be its code, outside any invocation", () => {
    const { exports, watch } = watching();
    expect(watch.changed()).toBeUndefined();
    expect(exports.reads?.()).toBe(0);
  });

  it("takes a library's object built on first use for one built at load, until it is replaced", () => {
    const { exports, watch } = watching();
    exports.connect?.();
    expect(watch.changed()).toBeUndefined();
    exports.connect?.();
    expect(watch.changed()).toBeUndefined();
    exports.reconnect?.();
    expect(watch.changed()).toEqual({ worker: "w", variable: "client", file: "src/index.ts" });
  });

  it("sees a promise or a function kept on first use: later requests share what it holds", () => {
    const { exports, watch } = watching();
    exports.load?.();
    expect(watch.changed()).toEqual({ worker: "w", variable: "pending", file: "src/index.ts" });
    exports.handle?.();
    expect(watch.changed()).toEqual({ worker: "w", variable: "handler", file: "src/index.ts" });
  });

  /** A bundle whose src/pricing.ts esbuild initializes lazily, watched from its load on. */
  const lazilyLoading = (loadedAtLoad = false) => {
    const bundle = [
      "var __esm = (fn, res) => function __init() {",
      "  return fn && (res = (0, fn[Object.getOwnPropertyNames(fn)[0]])(fn = 0)), res;",
      "};",
      "",
      "// src/pricing.ts",
      "var PRICE_KEY, TAX, cache, hits;",
      "var init_pricing = __esm({",
      '  "src/pricing.ts"() {',
      '    PRICE_KEY = "price:v1";',
      '    TAX = { rate: 0.2, regions: ["eu"] };',
      "    cache = new Map();",
      "  }",
      "});",
      loadedAtLoad ? "(() => {\n  init_pricing();\n})();" : "",
      "module.exports = { load: () => init_pricing(), remember: (x) => cache.set(x, 1), hit: () => { hits = 1; } };",
    ].join("\n");
    const module: Record<string, unknown> = { exports: {} };
    new Function("module", "require", withStateHook(bundle))(module, () => ({}));
    const watch = new ModuleStateWatch();
    watch.add("w", { [MODULE_STATE_KEY]: module[MODULE_STATE_KEY] } as unknown as Record<string, unknown>);
    watch.start();
    return { exports: module.exports as Record<string, (x?: unknown) => unknown>, watch };
  };

  it("takes the first values a lazily initialized file's top-level code gives for its load, not a change", () => {
    const { exports, watch } = lazilyLoading();
    exports.load?.();
    expect(watch.changed()).toBeUndefined();
    exports.remember?.("x");
    expect(watch.changed()).toEqual({ worker: "w", variable: "cache", file: "src/pricing.ts" });
    // A variable the file's top-level code leaves alone is the requests' own.
    exports.hit?.();
    expect(watch.changed()).toEqual({ worker: "w", variable: "hits", file: "src/pricing.ts" });
  });

  it("sees what requests do with a lazily initialized file whose top-level code ran at load", () => {
    // Another file's top-level code ran it (esbuild's `init_pricing()` inside that file's own
    // wrapper): a request's first call of it runs nothing, and takes no baseline.
    const { exports, watch } = lazilyLoading(true);
    exports.remember?.("x");
    exports.load?.();
    expect(watch.changed()).toEqual({ worker: "w", variable: "cache", file: "src/pricing.ts" });
  });

  it("sees what a request does with a lazily initialized file's variables in the step that loads it", () => {
    const { exports, watch } = lazilyLoading();
    // One invocation at a time, the watch compares once over the run: the load and the request's
    // use of what it loaded come between two comparisons.
    exports.load?.();
    exports.remember?.("x");
    expect(watch.changed()).toEqual({ worker: "w", variable: "cache", file: "src/pricing.ts" });
  });

  it("takes the env kept in a variable for the platform's, as it is the same in every isolate", () => {
    const { exports, watch } = watching();
    const env = { API_LEVEL: "3", DB: new Map() };
    platformObject(env);
    exports.keep?.(env);
    expect(watch.changed()).toBeUndefined();
    exports.keep?.(env);
    expect(watch.changed()).toBeUndefined();
    // A plain object the platform did not hand over is the Worker's data.
    exports.keep?.({ API_LEVEL: "3" });
    expect(watch.changed()).toEqual({ worker: "w", variable: "client", file: "src/index.ts" });
  });

  it("leaves the insides of a library's object to the library", () => {
    const { exports, watch } = watching();
    exports.route?.();
    expect(watch.changed()).toBeUndefined();
  });
});
