/**
 * Module-level state a Worker changes while it serves requests: a counter, a cache, a flag kept
 * in a variable of its module, which every invocation of the Worker in the run shares (one
 * isolate). Partial-order reduction orders steps by the bindings they touch and cannot see this
 * memory, so a check that sees a Worker change it explores again without the reduction.
 *
 * What is watched: the top-level variables of the Worker's own files (not `node_modules`), as the
 * bundle declares them. Their values are read through a function appended to the bundle
 * (`withStateHook`), which both runtimes evaluate with the module, and compared between steps:
 * a variable given a new value, or an object, array, Map or Set of the Worker's own changed in
 * place. An object of a class from `node_modules` (a router, a client) is compared by identity
 * only: its insides are the library's, which builds them lazily on a first request.
 */

/** Where the appended function leaves what it reads, on the factory's `module` object. */
export const MODULE_STATE_KEY = "__eutaxy_module_state";

/** What a module instance gives to read its own top-level variables. */
export interface ModuleStateReader {
  /** The variables, as the bundle names them (esbuild may have renamed one: `hits2`). */
  readonly names: readonly string[];
  /** Their current values, in the order of `names`. */
  values(): unknown[];
  /** The classes the module's `node_modules` declare, whose objects are compared by identity. */
  libraryClasses(): unknown[];
}

/** A line esbuild starts each bundled file with: `// src/index.ts`, `// node_modules/hono/dist/hono.js`. */
const FILE_HEADER = /^\/\/ (\S+)$/;
/** A top-level variable, as esbuild prints one at the start of a line. */
const TOP_LEVEL_VARIABLE = /^(?:var|let|const) ([A-Za-z_$][\w$]*)\b/;
/** A top-level class, as esbuild prints one. */
const TOP_LEVEL_CLASS = /^(?:var ([A-Za-z_$][\w$]*) = class\b|class ([A-Za-z_$][\w$]*)\b)/;
/** Variables esbuild's CommonJS wrapper declares, which no Worker code changes. */
const ESBUILD_HELPER = /^__[A-Za-z]/;

/**
 * `body` (a bundle's factory body) with a function appended that reads the top-level variables
 * of the Worker's own files; nothing before it moves, so the source map still holds.
 */
export function withStateHook(body: string): string {
  const own: string[] = [];
  const classes: string[] = [];
  let ownFile = false;
  for (const line of body.split("\n")) {
    const header = FILE_HEADER.exec(line);
    if (header) {
      ownFile = !(header[1] as string).split(/[\\/]/).includes("node_modules");
      continue;
    }
    const declared = TOP_LEVEL_VARIABLE.exec(line)?.[1];
    const library = ownFile ? undefined : TOP_LEVEL_CLASS.exec(line);
    if (library) classes.push((library[1] ?? library[2]) as string);
    else if (ownFile && declared && !ESBUILD_HELPER.test(declared) && !own.includes(declared))
      own.push(declared);
  }
  // `typeof` first: a line the pattern took for a declaration (one inside a template literal)
  // names no variable, and reads undefined instead of throwing.
  const read = (name: string) => `typeof ${name} === "undefined" ? undefined : ${name}`;
  const reader = [
    `names: ${JSON.stringify(own)}`,
    `values: () => [${own.map(read).join(", ")}]`,
    `libraryClasses: () => [${classes.map(read).join(", ")}]`,
  ];
  return `${body}\n;module.${MODULE_STATE_KEY} = { ${reader.join(", ")} };\n`;
}

/** Nodes of a module's state read at most per snapshot; past them, a change goes unseen. */
const NODES_MAX = 10_000;

/**
 * Watches the module-level state of a run's Worker instances between steps: `changed` answers
 * the first variable that differs from the last time it was asked.
 */
export class ModuleStateWatch {
  private readonly modules: {
    readonly worker: string;
    readonly reader: ModuleStateReader;
    readonly library: Set<unknown>;
  }[] = [];
  /** Identities of the objects seen, kept for the run, so that a new object never reads as an old one. */
  private readonly ids = new WeakMap<object, number>();
  private objects = 0;
  private last: string[][] = [];

  /** Adds a Worker's module instance; one without a reader (none appended) is not watched. */
  add(worker: string, exports: Record<string, unknown>): void {
    const reader = (exports as { [MODULE_STATE_KEY]?: ModuleStateReader })[MODULE_STATE_KEY];
    if (!reader || reader.names.length === 0) return;
    try {
      this.modules.push({ worker, reader, library: new Set(reader.libraryClasses()) });
    } catch {
      // A name the hook reads that is not a variable after all: this module is not watched.
    }
  }

  /** Takes the state as it is now as the one later steps are compared with. */
  start(): void {
    this.last = this.modules.map((m) => this.snapshot(m));
  }

  /** The first variable whose value differs from the last snapshot, naming its Worker. */
  changed(): { readonly worker: string; readonly variable: string } | undefined {
    for (const [i, module] of this.modules.entries()) {
      const now = this.snapshot(module);
      const before = this.last[i] ?? [];
      const at = now.findIndex((digest, j) => digest !== before[j]);
      this.last[i] = now;
      if (at >= 0) return { worker: module.worker, variable: module.reader.names[at] as string };
    }
    return undefined;
  }

  /** One digest per variable of `module`; a module whose reader throws reads as unchanged. */
  private snapshot(module: (typeof this.modules)[number]): string[] {
    let values: unknown[];
    try {
      values = module.reader.values();
    } catch {
      return this.last[this.modules.indexOf(module)] ?? [];
    }
    const budget = { nodes: NODES_MAX };
    return values.map((value) => this.digest(value, module.library, budget));
  }

  private id(object: object): number {
    let id = this.ids.get(object);
    if (id === undefined) {
      id = ++this.objects;
      this.ids.set(object, id);
    }
    return id;
  }

  /** A text that differs when `value` or anything of the Worker's own it holds differs. */
  private digest(value: unknown, library: Set<unknown>, budget: { nodes: number }): string {
    const parts: string[] = [];
    const seen = new Set<object>();
    const visit = (v: unknown): void => {
      if (--budget.nodes < 0) return;
      if (v === null || (typeof v !== "object" && typeof v !== "function")) {
        parts.push(typeof v === "string" ? JSON.stringify(v) : `${typeof v}:${String(v)}`);
        return;
      }
      const object = v as object;
      parts.push(`#${this.id(object)}`);
      if (seen.has(object) || fromLibrary(object, library)) return;
      seen.add(object);
      if (typeof v === "function") {
        // A class's static fields, a function's own properties.
        for (const [key, descriptor] of Object.entries(Object.getOwnPropertyDescriptors(v))) {
          if (!("value" in descriptor) || FUNCTION_OWN.has(key)) continue;
          parts.push(key);
          visit(descriptor.value);
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
        // Data properties only: a getter may do anything, and esbuild's exports are getters of
        // variables read on their own.
        for (const [key, descriptor] of Object.entries(Object.getOwnPropertyDescriptors(v))) {
          if (!("value" in descriptor)) continue;
          parts.push(key);
          visit(descriptor.value);
        }
      }
    };
    visit(value);
    return parts.join(" ");
  }
}

/** A function's own properties that are not state: what the language gives every function. */
const FUNCTION_OWN = new Set(["prototype", "length", "name"]);

/** Whether `object` is an instance of a class `library` holds, or of a subclass of one. */
function fromLibrary(object: object, library: Set<unknown>): boolean {
  if (library.size === 0) return false;
  for (let proto = Object.getPrototypeOf(object); proto; proto = Object.getPrototypeOf(proto)) {
    if (library.has((proto as { constructor?: unknown }).constructor)) return true;
  }
  return false;
}
