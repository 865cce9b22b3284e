/**
 * Module-level state a Worker changes while it serves requests: a counter, a cache, a flag kept
 * in a variable of its module, which every invocation of the Worker in the run shares (one
 * isolate). Partial-order reduction orders steps by the bindings they touch and cannot see this
 * memory, so a check that sees a Worker change it explores again without the reduction.
 *
 * What is watched: the top-level variables of the Worker's own files (not `node_modules`, not a
 * module it imports from the runtime), as the bundle declares them. Their values are read through
 * a function appended to the bundle (`withStateHook`), which both runtimes evaluate with the
 * module, and compared between steps: a variable given a new value, or a plain object, array,
 * Map, Set or object of a class of the Worker's own files changed in place. Any other object (a
 * router or client of a library, a binding, a Request) is compared by identity only: its insides
 * are not the Worker's, and a library builds them lazily on a first request.
 */

/** Where the appended function leaves what it reads, on the factory's `module` object. */
export const MODULE_STATE_KEY = "__eutaxy_module_state";

/** What a module instance gives to read its own top-level variables. */
export interface ModuleStateReader {
  /** The variables, as the bundle names them (esbuild may have renamed one: `hits2`). */
  readonly names: readonly string[];
  /** Their current values, in the order of `names`. */
  values(): unknown[];
}

/** A line esbuild starts each bundled file with: `// src/index.ts`, `// node_modules/hono/dist/hono.js`. */
const FILE_HEADER = /^\/\/ (\S+)$/;
/** A top-level variable, as esbuild prints one at the start of a line. */
const TOP_LEVEL_VARIABLE = /^(?:var|let|const) ([A-Za-z_$][\w$]*)\b/;
/** Variables esbuild's CommonJS wrapper declares, which no Worker code changes. */
const ESBUILD_HELPER = /^__[A-Za-z]/;
/** An import of a module the bundle leaves to the runtime (`cloudflare:workers`, `node:crypto`). */
const RUNTIME_IMPORT = /\brequire\(/;
/** The object esbuild makes a file's exports on: getters of the file's variables, read on their own. */
const EXPORTS_OBJECT = /^__export\(([A-Za-z_$][\w$]*),/;

/**
 * `body` (a bundle's factory body) with a function appended that reads the top-level variables
 * of the Worker's own files; nothing before it moves, so the source map still holds.
 */
export function withStateHook(body: string): string {
  const own: string[] = [];
  const exportsObjects = new Set<string>();
  let ownFile = false;
  for (const line of body.split("\n")) {
    const header = FILE_HEADER.exec(line);
    if (header) {
      ownFile = !(header[1] as string).split(/[\\/]/).includes("node_modules");
      continue;
    }
    const exported = EXPORTS_OBJECT.exec(line)?.[1];
    if (exported) exportsObjects.add(exported);
    const declared = ownFile ? TOP_LEVEL_VARIABLE.exec(line)?.[1] : undefined;
    if (!declared || ESBUILD_HELPER.test(declared) || RUNTIME_IMPORT.test(line) || own.includes(declared)) {
      continue;
    }
    own.push(declared);
  }
  const watched = own.filter((name) => !exportsObjects.has(name));
  // `typeof` first: a line the pattern took for a declaration (one inside a template literal)
  // names no variable, and reads undefined instead of throwing.
  const read = (name: string) => `typeof ${name} === "undefined" ? undefined : ${name}`;
  const reader = `names: ${JSON.stringify(watched)}, values: () => [${watched.map(read).join(", ")}]`;
  return `${body}\n;module.${MODULE_STATE_KEY} = { ${reader} };\n`;
}

/** Nodes of a module's state read at most per snapshot; past them, a change goes unseen. */
const NODES_MAX = 10_000;

interface Watched {
  readonly worker: string;
  readonly reader: ModuleStateReader;
  /** The prototypes of the classes the module's own files declare: their objects are its data. */
  own: Set<unknown>;
}

/**
 * Watches the module-level state of a run's Worker instances: `changed`, asked after every step,
 * compares each variable's value with the last step's, and a Map's or Set's size, an array's
 * length and a plain object's own values one level down, which is cheap; `finished`, asked at
 * the end of the run, compares everything of the Worker's own they hold with how it started.
 */
export class ModuleStateWatch {
  private readonly modules: Watched[] = [];
  /** Identities of the objects seen, kept for the run, so that a new object never reads as an old one. */
  private readonly ids = new WeakMap<object, number>();
  private objects = 0;
  /** Each module's digests as the run started. */
  private first: string[][] = [];
  /** Each module's values as the last step left them, one level down. */
  private last: unknown[][] = [];

  /** Adds a Worker's module instance; one without a reader (none appended) is not watched. */
  add(worker: string, exports: Record<string, unknown>): void {
    const reader = (exports as { [MODULE_STATE_KEY]?: ModuleStateReader })[MODULE_STATE_KEY];
    if (!reader || reader.names.length === 0) return;
    this.modules.push({ worker, reader, own: new Set() });
  }

  /** Takes the state as it is now as the one later steps are compared with. */
  start(): void {
    for (const module of this.modules) {
      const prototypes = (readValues(module.reader) ?? []).map((v) =>
        typeof v === "function" ? (v as { prototype?: unknown }).prototype : undefined,
      );
      module.own = new Set(prototypes.filter((p) => typeof p === "object" && p !== null));
    }
    this.first = this.modules.map((m) => this.snapshot(m) ?? []);
    this.last = this.modules.map((m) => shallow(readValues(m.reader) ?? []));
  }

  /** The first variable the last step changed, one level down, naming its Worker. */
  changed(): { readonly worker: string; readonly variable: string } | undefined {
    for (let i = 0; i < this.modules.length; i++) {
      const module = this.modules[i] as Watched;
      const values = readValues(module.reader);
      if (!values) continue;
      const now = shallow(values);
      const before = this.last[i] as unknown[];
      this.last[i] = now;
      if (now.length !== before.length) return this.named(module, values, before);
      for (let j = 0; j < now.length; j++) {
        if (!Object.is(now[j], before[j])) return this.named(module, values, before);
      }
    }
    return undefined;
  }

  /** The first variable the run changed, at any depth of the Worker's own data, as it ends. */
  finished(): { readonly worker: string; readonly variable: string } | undefined {
    for (const [i, module] of this.modules.entries()) {
      const now = this.snapshot(module);
      const at = now ? now.findIndex((digest, j) => digest !== this.first[i]?.[j]) : -1;
      if (at >= 0) return { worker: module.worker, variable: module.reader.names[at] as string };
    }
    return undefined;
  }

  /** Which variable of `module` a shallow change of `before` is in. */
  private named(
    module: Watched,
    values: readonly unknown[],
    before: readonly unknown[],
  ): { readonly worker: string; readonly variable: string } {
    let offset = 0;
    for (const [j, value] of values.entries()) {
      const part = shallow([value]);
      if (part.some((p, k) => !Object.is(p, before[offset + k]))) {
        return { worker: module.worker, variable: module.reader.names[j] as string };
      }
      offset += part.length;
    }
    return { worker: module.worker, variable: module.reader.names.at(-1) as string };
  }

  /** One digest per variable of `module`; undefined when its reader throws. */
  private snapshot(module: Watched): string[] | undefined {
    const values = readValues(module.reader);
    if (!values) return undefined;
    const budget = { nodes: NODES_MAX };
    return values.map((value) => this.digest(value, module.own, budget));
  }

  private id(object: object): number {
    let id = this.ids.get(object);
    if (id === undefined) {
      id = ++this.objects;
      this.ids.set(object, id);
    }
    return id;
  }

  /** A text that differs when `value` or any data of the Worker's own it holds differs. */
  private digest(value: unknown, own: Set<unknown>, budget: { nodes: number }): string {
    const parts: string[] = [];
    const seen = new Set<object>();
    const properties = (object: object, skip?: ReadonlySet<string>) => {
      // Data properties only: a getter may do anything, and esbuild's exports are getters of
      // variables read on their own.
      for (const [key, descriptor] of Object.entries(Object.getOwnPropertyDescriptors(object))) {
        if (!("value" in descriptor) || skip?.has(key)) continue;
        parts.push(key);
        visit(descriptor.value);
      }
    };
    const visit = (v: unknown, top = false): void => {
      if (--budget.nodes < 0) return;
      if (v === null || (typeof v !== "object" && typeof v !== "function")) {
        parts.push(typeof v === "string" ? JSON.stringify(v) : `${typeof v}:${String(v)}`);
        return;
      }
      const object = v as object;
      parts.push(`#${this.id(object)}`);
      // A function's insides only for the module's own (a class's static fields); an object's
      // only for data of the Worker's own kinds.
      if (seen.has(object) || (typeof v === "function" ? !top : !ownData(object, own))) return;
      seen.add(object);
      if (typeof v === "function") {
        // Most functions and classes have only what the language gives them.
        if (Object.getOwnPropertyNames(object).some((key) => !FUNCTION_OWN.has(key))) {
          properties(object, FUNCTION_OWN);
        }
      } else if (v instanceof Map) {
        parts.push(`Map${v.size}`);
        for (const [key, item] of v) {
          visit(key);
          visit(item);
        }
      } else if (v instanceof Set) {
        parts.push(`Set${v.size}`);
        for (const item of v) visit(item);
      } else if (v instanceof Date) {
        parts.push(`Date${v.getTime()}`);
      } else if (ArrayBuffer.isView(v)) {
        parts.push(`bytes${new Uint8Array(v.buffer, v.byteOffset, v.byteLength).join(",")}`);
      } else {
        properties(object);
      }
    };
    visit(value, true);
    return parts.join(" ");
  }
}

/** A function's own properties that are not state: what the language gives every function. */
const FUNCTION_OWN: ReadonlySet<string> = new Set(["prototype", "length", "name"]);

/**
 * `values` one level down, flat: each value, then for a Map or Set its size, for an array its
 * length, for a plain object its own enumerable keys and data values (a getter by identity).
 */
function shallow(values: readonly unknown[]): unknown[] {
  const flat: unknown[] = [];
  for (const value of values) {
    flat.push(value);
    if (value === null || typeof value !== "object") continue;
    if (value instanceof Map || value instanceof Set) flat.push(value.size);
    else if (Array.isArray(value)) flat.push(value.length);
    else if (Object.getPrototypeOf(value) === Object.prototype) {
      let keys = 0;
      for (const key in value) {
        // A getter is not read: it is the Worker's code, which would run outside any invocation.
        const descriptor = Object.getOwnPropertyDescriptor(value, key);
        if (!descriptor) continue;
        keys++;
        flat.push(key, "value" in descriptor ? descriptor.value : descriptor.get);
      }
      flat.push(keys);
    }
  }
  return flat;
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
 * a Date, bytes, or an object of a class of the Worker's own files (`own` holds their prototypes).
 */
function ownData(object: object, own: Set<unknown>): boolean {
  const proto: unknown = Object.getPrototypeOf(object);
  if (proto === null || proto === Object.prototype || Array.isArray(object)) return true;
  if (object instanceof Map || object instanceof Set || object instanceof Date) return true;
  if (ArrayBuffer.isView(object)) return true;
  for (let p = proto; p; p = Object.getPrototypeOf(p)) if (own.has(p)) return true;
  return false;
}
