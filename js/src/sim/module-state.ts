/**
 * Module-level state a Worker changes while it serves requests: a counter, a cache, a flag kept
 * in a variable of its module, which every invocation of the Worker in the run shares (one
 * isolate). Partial-order reduction orders steps by the bindings they touch and cannot see this
 * memory, so a check that sees a Worker change it explores again without the reduction.
 *
 * What is watched: the top-level variables of the Worker's own files (not `node_modules`, not a
 * module it imports from the runtime), as the bundle declares them. Their values are read through
 * a function appended to the bundle (`withStateHook`), which both runtimes evaluate with the
 * module, and compared after every step: a variable given a new value, or a plain object, array,
 * Map, Set or object of a class of the Worker's own files changed in place, at any depth. Any other object (a
 * router or client of a library, a binding, a Request) is compared by identity only: its insides
 * are not the Worker's, and a library builds them lazily on a first request.
 */

/** Where the appended function leaves what it reads, on the factory's `module` object. */
export const MODULE_STATE_KEY = "__eutaxy_module_state";

/** What a module instance gives to read its own top-level variables. */
export interface ModuleStateReader {
  /** The variables, as the bundle names them (esbuild may have renamed one: `hits2`). */
  readonly names: readonly string[];
  /**
   * The variables as the Worker's files name them, where the source map tells (`hits` for the
   * bundle's `hits2`, renamed as a library's file has a `hits` too); a report names these.
   */
  readonly declared?: readonly string[];
  /** The file each variable is declared in, as the bundle's header names it (`src/cache.ts`). */
  readonly files?: readonly string[];
  /** Their current values, in the order of `names`. */
  values(): unknown[];
  /**
   * Called, once the watch sets it, as a file esbuild initializes lazily (its top-level code in
   * an `__esm` wrapper, run on the file's first `import()` or `require()`) has run that code: with
   * the file, as `files` names it.
   */
  loaded?: (file: string) => void;
}

/** A line esbuild starts each bundled file with: `// src/index.ts`, `// node_modules/hono/dist/hono.js`. */
const FILE_HEADER = /^\/\/ (\S+)$/;
/** A top-level declaration, as esbuild prints one at the start of a line. */
const TOP_LEVEL_DECLARATION = /^(?:var|let|const)\s/;
/** An identifier at the start of the text. */
const IDENTIFIER = /^[A-Za-z_$][\w$]*/;
/** Variables esbuild's CommonJS wrapper declares, which no Worker code changes. */
const ESBUILD_HELPER = /^__[A-Za-z]/;
/** An import of a module the bundle leaves to the runtime (`cloudflare:workers`, `node:crypto`). */
const RUNTIME_IMPORT = /\brequire\(/;
/** The object esbuild makes a file's exports on: getters of the file's variables, read on their own. */
const EXPORTS_OBJECT = /^__export\(([A-Za-z_$][\w$]*),/;
/** The start of esbuild's wrapper of a file it initializes lazily: `var init_cache = __esm({`. */
const LAZY_INIT = /^var (init_[\w$]*) = __esm\(/;
/** A call of such a wrapper by the bundle's own top-level code, at load: `init_cache();`. */
const INIT_AT_LOAD = /^(init_[\w$]*)\(\);$/;

/**
 * `body` (a bundle's factory body) with a function appended that reads the top-level variables
 * of the Worker's own files; nothing before it moves, so the source map still holds. `sourceName`
 * gives the name the Worker's file declares at a line and column of `body` (from 1), through the
 * bundle's source map: esbuild renames a variable whose name a library's file also has.
 */
export function withStateHook(
  body: string,
  sourceName?: (line: number, column: number) => string | undefined,
): string {
  const own: string[] = [];
  const fileOf = new Map<string, string>();
  const declaredAs = new Map<string, string>();
  const exportsObjects = new Set<string>();
  // The wrappers of the Worker's own files esbuild initializes lazily, with their files.
  const inits = new Map<string, string>();
  const initsAtLoad = new Set<string>();
  let ownFile = false;
  let file = "";
  let offset = 0;
  let lineNumber = 0;
  for (const line of body.split("\n")) {
    const at = offset;
    offset += line.length + 1;
    lineNumber++;
    const header = FILE_HEADER.exec(line);
    if (header) {
      file = header[1] as string;
      ownFile = !file.split(/[\\/]/).includes("node_modules");
      continue;
    }
    const exported = EXPORTS_OBJECT.exec(line)?.[1];
    if (exported) exportsObjects.add(exported);
    const init = LAZY_INIT.exec(line)?.[1];
    if (init && ownFile) inits.set(init, file);
    const atLoad = INIT_AT_LOAD.exec(line)?.[1];
    if (atLoad) initsAtLoad.add(atLoad);
    if (!ownFile || RUNTIME_IMPORT.test(line)) continue;
    if (!TOP_LEVEL_DECLARATION.test(line)) continue;
    for (const name of declaredNames(body, at)) {
      if (ESBUILD_HELPER.test(name) || own.includes(name)) continue;
      own.push(name);
      fileOf.set(name, file);
      // esbuild renames by appending a number (`hits2`): only such a name can differ.
      const original = /\d$/.test(name) ? originalName(body, at, lineNumber, name, sourceName) : undefined;
      if (original && original !== name) declaredAs.set(name, original);
    }
  }
  const watched = own.filter((name) => !exportsObjects.has(name));
  // `typeof` first: a line the pattern took for a declaration (one inside a template literal)
  // names no variable, and reads undefined instead of throwing.
  const read = (name: string) => `typeof ${name} === "undefined" ? undefined : ${name}`;
  const files = watched.map((name) => fileOf.get(name) ?? "");
  const declared = watched.map((name) => declaredAs.get(name) ?? name);
  const reader = `names: ${JSON.stringify(watched)}, declared: ${JSON.stringify(declared)}, files: ${JSON.stringify(files)}, values: () => [${watched.map(read).join(", ")}]`;
  // Each wrapper of a file whose top-level code has not run at load is wrapped in turn, to tell
  // the watch once that code has run: the values it gave are the module's, not a request's. One
  // that ran at load (another file's top-level code called it) has given its variables values by
  // the time this runs, and a request's first call of it then runs nothing.
  const unset = (of: string) =>
    watched
      .filter((name) => fileOf.get(name) === of && !inits.has(name))
      .map((name) => `(${read(name)}) === undefined`);
  const wrapped = [...inits]
    .filter(([init]) => !initsAtLoad.has(init))
    .map(
      ([init, of]) =>
        `\nif (typeof ${init} === "function") ${init} = ((init, state) => { let first = ${["true", ...unset(of)].join(" && ")}; return function () { const value = init.apply(this, arguments); if (first) { first = false; state.loaded?.(${JSON.stringify(of)}); } return value; }; })(${init}, module.${MODULE_STATE_KEY});`,
    )
    .join("");
  return `${body}\n;module.${MODULE_STATE_KEY} = { ${reader} };${wrapped}\n`;
}

/**
 * The name the Worker's file gives `name`, declared in the declaration at `start` of `body` (on
 * line `line`), as `sourceName` finds it at the name's first place there.
 */
function originalName(
  body: string,
  start: number,
  line: number,
  name: string,
  sourceName: ((line: number, column: number) => string | undefined) | undefined,
): string | undefined {
  if (!sourceName) return undefined;
  const word = new RegExp(`(?<![\\w$])${name.replace(/\$/g, "\\$")}(?![\\w$])`, "g");
  word.lastIndex = start;
  const found = word.exec(body);
  if (!found) return undefined;
  let lineOf = line;
  let lineStart = start;
  for (let i = body.indexOf("\n", start); i >= 0 && i < found.index; i = body.indexOf("\n", i + 1)) {
    lineOf++;
    lineStart = i + 1;
  }
  return sourceName(lineOf, found.index - lineStart + 1);
}

/**
 * The names the declaration at `start` of `text` (`var`, `let` or `const` and what follows, up
 * to the `;` that ends it) declares: the first and each after a comma outside brackets, strings,
 * templates and comments (`let hits = 0, cache = new Map();`, and esbuild's `var PRICE_KEY,
 * cache;` for a module it initializes lazily), and every identifier of a destructuring pattern.
 * It errs on the side of more: a pattern's keys, or a word a regular expression's brackets
 * misplace, are read as names too, and a name no variable has reads undefined; a variable left
 * out would be a change the watch never sees.
 */
function declaredNames(text: string, start: number): string[] {
  const names: string[] = [];
  let i = start + (IDENTIFIER.exec(text.slice(start, start + 5))?.[0].length ?? 0);
  let depth = 0;
  let expectName = true;
  // What encloses the scan: a template literal, or code inside one's `${…}` (its brace depth).
  const templates: number[] = [];
  while (i < text.length) {
    const c = text[i] as string;
    if (expectName && depth === 0 && templates.length === 0) {
      if (/\s/.test(c)) {
        i++;
        continue;
      }
      if (c === "/" && (text[i + 1] === "*" || text[i + 1] === "/")) {
        i = commentEnd(text, i);
        continue;
      }
      expectName = false;
      const name = IDENTIFIER.exec(text.slice(i, i + 256))?.[0];
      if (name) {
        names.push(name);
        i += name.length;
        continue;
      }
      if (c === "{" || c === "[") {
        const end = closingBracket(text, i);
        for (const word of text.slice(i, end).matchAll(/[A-Za-z_$][\w$]*/g)) names.push(word[0]);
        i = end;
        continue;
      }
    }
    if (c === '"' || c === "'") {
      i = stringEnd(text, i);
      continue;
    }
    if (c === "`") {
      templates.push(depth);
      i = templateRest(text, i + 1);
      if (text[i - 1] === "`") templates.pop();
      continue;
    }
    if (c === "/" && (text[i + 1] === "*" || text[i + 1] === "/")) {
      i = commentEnd(text, i);
      continue;
    }
    if (c === "(" || c === "[" || c === "{") depth++;
    else if (c === ")" || c === "]" || c === "}") {
      if (c === "}" && templates.length > 0 && depth === (templates.at(-1) as number)) {
        // The end of a template's `${…}`: the template goes on.
        i = templateRest(text, i + 1);
        if (text[i - 1] === "`") templates.pop();
        continue;
      }
      depth--;
    } else if (depth === 0 && templates.length === 0) {
      if (c === ",") expectName = true;
      else if (c === ";") break;
    }
    i++;
  }
  return names;
}

/** Past the comment that starts at `at` (`//` to the end of its line, or `/* … *\/`). */
function commentEnd(text: string, at: number): number {
  const end = text[at + 1] === "/" ? text.indexOf("\n", at) : text.indexOf("*/", at + 2);
  if (end < 0) return text.length;
  return text[at + 1] === "/" ? end : end + 2;
}

/** Past the string literal that starts at `at`. */
function stringEnd(text: string, at: number): number {
  const quote = text[at];
  let i = at + 1;
  while (i < text.length && text[i] !== quote && text[i] !== "\n") i += text[i] === "\\" ? 2 : 1;
  return i + 1;
}

/** Past a template literal's text from `at`: after its closing backquote, or after a `${`. */
function templateRest(text: string, at: number): number {
  let i = at;
  while (i < text.length) {
    const c = text[i];
    if (c === "\\") i += 2;
    else if (c === "`") return i + 1;
    else if (c === "$" && text[i + 1] === "{") return i + 2;
    else i++;
  }
  return i;
}

/** Past the bracket that closes the one at `at` (strings inside skipped). */
function closingBracket(text: string, at: number): number {
  let depth = 0;
  let i = at;
  while (i < text.length) {
    const c = text[i];
    if (c === '"' || c === "'") {
      i = stringEnd(text, i);
      continue;
    }
    if (c === "{" || c === "[" || c === "(") depth++;
    else if (c === "}" || c === "]" || c === ")") {
      depth--;
      if (depth === 0) return i + 1;
    }
    i++;
  }
  return i;
}

/**
 * Objects the platform hands a Worker that look like its data but are not: the env, a plain
 * object the same in every invocation of a run (as workerd gives one isolate's requests the same
 * env). A variable that keeps it (`currentEnv = env`) holds what every isolate is given alike.
 */
const PLATFORM_OBJECTS = new WeakSet<object>();

/** Takes `object` for the platform's, compared by identity only (see `PLATFORM_OBJECTS`). */
export function platformObject(object: object): void {
  PLATFORM_OBJECTS.add(object);
}

/** Values of a module's state read at most per snapshot; past them, a change goes unseen. */
const NODES_MAX = 10_000;

interface Watched {
  readonly worker: string;
  readonly reader: ModuleStateReader;
  /** The prototypes of the classes the module's own files declare: their objects are its data. */
  own: Set<unknown>;
  /** Its state as the last step left it, flattened (see `flatten`), and where each variable's ends. */
  last: unknown[];
  ends: number[];
}

/** A module-level variable a step changed: its Worker, its name, and its file when known. */
export interface ModuleStateChange {
  readonly worker: string;
  readonly variable: string;
  /** As the bundle names it, relative to the Worker's entry: `src/cache.ts`. */
  readonly file?: string;
}

/**
 * Watches the module-level state of a run's Worker instances: `changed`, asked after every step,
 * compares each variable, and everything of the Worker's own it holds, with the last step's.
 */
export class ModuleStateWatch {
  private readonly modules: Watched[] = [];
  private readonly seen = new Set<object>();

  /** Adds a Worker's module instance; one without a reader (none appended) is not watched. */
  add(worker: string, exports: Record<string, unknown>): void {
    const reader = (exports as { [MODULE_STATE_KEY]?: ModuleStateReader })[MODULE_STATE_KEY];
    if (!reader || reader.names.length === 0) return;
    const module: Watched = { worker, reader, own: new Set(), last: [], ends: [] };
    this.modules.push(module);
    reader.loaded = (file) => this.loaded(module, file);
  }

  /**
   * Takes the variables of `file`, a file esbuild initializes lazily whose top-level code just
   * ran, as they are now: a module that loaded it at the start would hold them already, and
   * one that loads it on a request holds them from then on in every isolate alike. What a
   * request does with them afterwards (`seen.add(id)`) is a change as any other.
   */
  private loaded(module: Watched, file: string): void {
    this.snapshot(module, file);
  }

  /** Takes the state as it is now as the one later steps are compared with. */
  start(): void {
    for (const module of this.modules) {
      const prototypes = (readValues(module.reader) ?? []).map((v) =>
        typeof v === "function" ? (v as { prototype?: unknown }).prototype : undefined,
      );
      module.own = new Set(prototypes.filter((p) => typeof p === "object" && p !== null));
      this.snapshot(module);
    }
  }

  /**
   * The first variable the last step changed, at any depth of the Worker's own data. A variable
   * given a library's object where it held nothing (`db ??= drizzle(env.DB)`, a client or router
   * built on the first request) is not a change: its insides are the library's, as they are when
   * the module builds it at load, and which request built it makes no other difference the
   * watch could see. Given another value after that, it is a change. A promise is a change
   * (`pending ??= load()` makes later requests wait on the first one's work), and so is a
   * function, whose closure may hold state.
   */
  changed(): ModuleStateChange | undefined {
    for (const module of this.modules) {
      const before = module.last;
      const beforeEnds = module.ends;
      if (!this.snapshot(module)) continue;
      const now = module.last;
      let from = 0;
      let fromBefore = 0;
      for (let variable = 0; variable < module.ends.length; variable++) {
        const to = module.ends[variable] as number;
        const toBefore = beforeEnds[variable] ?? before.length;
        const same = sameValues(now, from, to, before, fromBefore, toBefore);
        const built =
          !same &&
          to - from === 1 &&
          toBefore - fromBefore === 1 &&
          builtOnFirstUse(before[fromBefore], now[from]);
        if (!same && !built) {
          return {
            worker: module.worker,
            variable: (module.reader.declared?.[variable] ?? module.reader.names[variable]) as string,
            file: module.reader.files?.[variable] || undefined,
          };
        }
        from = to;
        fromBefore = toBefore;
      }
    }
    return undefined;
  }

  /**
   * Reads `module`'s state into its `last` and `ends`; with `only`, the variables of that file
   * alone, the others kept as last read. False when its reader throws.
   */
  private snapshot(module: Watched, only?: string): boolean {
    const values = readValues(module.reader);
    if (!values) return false;
    const flat: unknown[] = [];
    const ends: number[] = [];
    const budget = { nodes: NODES_MAX };
    let from = 0;
    for (const [variable, value] of values.entries()) {
      const to = module.ends[variable] ?? from;
      if (only === undefined || module.reader.files?.[variable] === only) {
        this.seen.clear();
        flatten(value, module.own, flat, this.seen, budget, true);
      } else {
        // Kept as read last, and counted as if read again, so that the next snapshot reads the same.
        budget.nodes -= to - from;
        for (let i = from; i < to; i++) flat.push(module.last[i]);
      }
      ends.push(flat.length);
      from = to;
    }
    module.last = flat;
    module.ends = ends;
    return true;
  }
}

/**
 * Appends `value` to `out` as a change would show: a primitive as it is, an object by identity,
 * and, for the Worker's own data (`ownData`), what it holds: a Map's or Set's size and entries,
 * an array's length and items, an object's own enumerable keys and data values (a getter by
 * identity: it is the Worker's code, which the watch does not run), a Date's time, bytes; for a
 * function of the module itself (`top`), its own enumerable properties (a class's static fields).
 */
function flatten(
  value: unknown,
  own: Set<unknown>,
  out: unknown[],
  seen: Set<object>,
  budget: { nodes: number },
  top = false,
): void {
  if (--budget.nodes < 0) return;
  out.push(value);
  if (value === null || (typeof value !== "object" && typeof value !== "function")) return;
  const object = value as object;
  if (seen.has(object) || (typeof value === "function" ? !top : !ownData(object, own))) return;
  seen.add(object);
  if (value instanceof Map) {
    out.push(value.size);
    for (const [key, item] of value) {
      flatten(key, own, out, seen, budget);
      flatten(item, own, out, seen, budget);
    }
  } else if (value instanceof Set) {
    out.push(value.size);
    for (const item of value) flatten(item, own, out, seen, budget);
  } else if (Array.isArray(value)) {
    out.push(value.length);
    for (const item of value) flatten(item, own, out, seen, budget);
  } else if (value instanceof Date) {
    out.push(value.getTime());
  } else if (ArrayBuffer.isView(value)) {
    const bytes = new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
    out.push(bytes.length);
    for (const byte of bytes) {
      if (--budget.nodes < 0) return;
      out.push(byte);
    }
  } else {
    let keys = 0;
    for (const key of Object.keys(object)) {
      const descriptor = Object.getOwnPropertyDescriptor(object, key);
      if (!descriptor) continue;
      keys++;
      out.push(key);
      if ("value" in descriptor) flatten(descriptor.value, own, out, seen, budget);
      else out.push(descriptor.get);
    }
    out.push(keys);
  }
}

/** Whether `a` from `fromA` to `toA` holds the same values as `b` from `fromB` to `toB`. */
function sameValues(
  a: unknown[],
  fromA: number,
  toA: number,
  b: unknown[],
  fromB: number,
  toB: number,
): boolean {
  if (toA - fromA !== toB - fromB) return false;
  for (let i = 0; i < toA - fromA; i++) if (!Object.is(a[fromA + i], b[fromB + i])) return false;
  return true;
}

/**
 * Whether a variable that held `before` and holds `now` was given a library's object where it
 * held nothing. `now` flattened to itself alone, so it is an object of none of the Worker's own
 * kinds (see `ownData`).
 */
function builtOnFirstUse(before: unknown, now: unknown): boolean {
  if (before !== undefined && before !== null) return false;
  if (typeof now !== "object" || now === null) return false;
  // Not `then` read off the object: a library's proxy would run its code for it.
  try {
    return !(now instanceof Promise);
  } catch {
    return false;
  }
}

/** What `reader` reads now; undefined when it throws (the module is then taken as unchanged). */
function readValues(reader: ModuleStateReader): unknown[] | undefined {
  try {
    return reader.values();
  } catch {
    return undefined;
  }
}

/**
 * Whether the insides of `object` are the Worker's data: a plain object, an array, a Map, a Set,
 * a Date, bytes, or an object of a class of the Worker's own files (`own` holds their prototypes);
 * not the env (`PLATFORM_OBJECTS`).
 */
function ownData(object: object, own: Set<unknown>): boolean {
  if (PLATFORM_OBJECTS.has(object)) return false;
  const proto: unknown = Object.getPrototypeOf(object);
  if (proto === null || proto === Object.prototype || Array.isArray(object)) return true;
  if (object instanceof Map || object instanceof Set || object instanceof Date) return true;
  if (ArrayBuffer.isView(object)) return true;
  for (let p = proto; p; p = Object.getPrototypeOf(p)) if (own.has(p)) return true;
  return false;
}
