/**
 * Loads a scenario file (`*.sim.ts`): bundles it with esbuild, `eutaxy/cloudflare` and `eutaxy`
 * resolved to this installation's own modules, imports the bundle and checks its default export
 * field by field. Every problem is an InputError naming the scenario file and the field, and
 * every file the scenario names comes back absolute and known to exist.
 */

import { readdirSync, readFileSync, statSync } from "node:fs";
import { basename, dirname, join, relative, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build, type Plugin } from "esbuild";
import type {
  Bounds,
  CalleeStep,
  ConsumerStep,
  CustomInvariant,
  D1SchemaStep,
  Driver,
  HttpRequestSpec,
  Invariant,
  KvEntriesStep,
  OutboundHandlers,
  R2ObjectsStep,
  ResendStatus,
  Scenario,
  ServiceHandlers,
  ServiceStep,
  SetupStep,
  WorkerFiles,
} from "../cloudflare.ts";
import { CronError, parseCron } from "../drivers/cron-schedule.ts";
import { CLOCK_START_MS, REDELIVERIES_MAX } from "../engine.ts";
import { InputError, shown } from "../errors.ts";
import { buildInputError } from "./bundle.ts";
import { findWranglerConfig, readWranglerConfig } from "./wrangler.ts";

export interface LoadedScenario {
  /** The scenario file, absolute. */
  readonly file: string;
  /** The scenario as its file declares it, with every path in it absolute and every entry found. */
  readonly scenario: Scenario<WorkerFiles>;
}

export async function loadScenario(path: string): Promise<LoadedScenario> {
  const file = resolve(path);
  const found = statSync(file, { throwIfNoEntry: false });
  if (found?.isDirectory()) throw new InputError(path, aFolder(path, file));
  if (!found?.isFile()) throw new InputError(path, "no such file");
  const notModule = notAModule(file);
  if (notModule !== undefined) throw new InputError(path, notModule);
  const { code, runtimeImports } = await bundleScenario(path, file);
  const [runtimeImport] = runtimeImports;
  if (runtimeImport !== undefined) throw new InputError(path, importsRuntime(path, file, runtimeImport));
  const exports = await importBundle(path, code);
  const declared = exports.default;
  const handlers = workerHandlers(declared);
  if (handlers.length > 0) {
    const have = handlers.length === 1 ? `a ${handlers[0]} handler` : `${listOf(handlers, "and")} handlers`;
    throw new InputError(
      path,
      `is a Worker's module, not a scenario: its default export has ${have}; ${SCENARIO_IS}, which names the Worker in worker: { entry }`,
    );
  }
  if (!isObject(declared)) {
    throw new InputError(path, "the default export is not a scenario: export default defineScenario({...})");
  }
  try {
    return { file, scenario: readScenario(new Fields(declared, "", "the scenario"), dirname(file)) };
  } catch (error) {
    if (error instanceof FieldError) throw new InputError(path, error.message);
    throw error;
  }
}

/** What every message about a file that is not a scenario ends with: what a scenario is. */
const SCENARIO_IS = "a scenario is a *.sim.ts file whose default export is defineScenario({...})";

/** A file name that is a scenario's, by the convention the README and the examples follow. */
export const SCENARIO_FILE: RegExp = /\.sim\.[cm]?[jt]sx?$/;

/** The problem with a folder given as the scenario, and the scenarios in it that were meant. */
function aFolder(path: string, dir: string): string {
  const scenarios = readdirSync(dir)
    .filter((name) => SCENARIO_FILE.test(name))
    .sort()
    .map((name) => join(path, name));
  const head = "is a folder, not a scenario: a scenario is one *.sim.ts file";
  if (scenarios.length === 0) return `${head}, and this folder has none`;
  const shownMax = 3;
  const more = scenarios.length > shownMax ? ` and ${scenarios.length - shownMax} more` : "";
  return `${head}, such as ${scenarios.slice(0, shownMax).join(", ")}${more} in this folder`;
}

/** The modules esbuild reads as TypeScript or JavaScript by their extension. */
const MODULE_FILE = /\.[cm]?[jt]sx?$/;

/** Why `file` cannot be a scenario by its name alone (a wrangler config, a SQL file), if so. */
function notAModule(file: string): string | undefined {
  if (MODULE_FILE.test(file)) return undefined;
  if (/^wrangler\.(json|jsonc|toml)$/.test(basename(file))) {
    return `is a wrangler config, not a scenario: ${SCENARIO_IS}, which names this config in worker: { config: "./${basename(file)}" }`;
  }
  return `is not a scenario: ${SCENARIO_IS} (a TypeScript or JavaScript module)`;
}

/**
 * The problem with a file that imports a module only the Workers runtime has: a Worker's module
 * given in place of a scenario, or a scenario that imports a Worker's code (a scenario runs in
 * Node, outside the simulation).
 */
function importsRuntime(path: string, file: string, { specifier, importer }: RuntimeImport): string {
  // The importing module named the way `path` was written, as esbuild's errors are.
  const through =
    importer === file ? "" : ` (through ${join(dirname(path), relative(dirname(file), importer))})`;
  if (SCENARIO_FILE.test(file)) {
    return `imports ${specifier}${through}, which only a Worker's code can: a scenario runs outside the Workers' runtime, so it names a Worker's modules (worker: { entry }) instead of importing them`;
  }
  return `is a Worker's module, not a scenario: it imports ${specifier}${through}; ${SCENARIO_IS}, which names the Worker in worker: { entry }`;
}

/** The handlers a Worker's default export has (`fetch`, `queue`, …), when `value` is one. */
function workerHandlers(value: unknown): string[] {
  if (!isObject(value) || "worker" in value) return [];
  return WORKER_HANDLERS.filter((name) => typeof value[name] === "function");
}

const WORKER_HANDLERS = ["fetch", "queue", "scheduled", "email", "tail", "trace", "alarm", "test"];

/** An import of a `cloudflare:` module, and the module that imports it. */
interface RuntimeImport {
  readonly specifier: string;
  readonly importer: string;
}

async function bundleScenario(
  path: string,
  file: string,
): Promise<{ code: string; runtimeImports: RuntimeImport[] }> {
  const runtimeImports: RuntimeImport[] = [];
  // A `cloudflare:` module exists only in the Workers runtime: noted, and the file refused above.
  const runtimeModules: Plugin = {
    name: "eutaxy-runtime-modules",
    setup(b) {
      b.onResolve({ filter: /^cloudflare:/ }, (args) => {
        runtimeImports.push({ specifier: args.path, importer: args.importer });
        return { path: args.path, external: true };
      });
    },
  };
  try {
    const result = await build({
      entryPoints: [file],
      absWorkingDir: dirname(file),
      bundle: true,
      write: false,
      platform: "node",
      format: "esm",
      target: "node20",
      sourcemap: "inline",
      logLevel: "silent",
      plugins: [ownModules, runtimeModules, ownLocations],
      // A package bundled in may `require()` a Node builtin; an ES module has no `require` of its
      // own, so the bundle gets one that resolves from the scenario's folder.
      banner: {
        js: `import { createRequire as __eutaxyCreateRequire } from "node:module";\nconst require = __eutaxyCreateRequire(${JSON.stringify(file)});`,
      },
    });
    return { code: result.outputFiles[0]?.text ?? "", runtimeImports };
  } catch (error) {
    throw buildInputError(error, path);
  }
}

async function importBundle(path: string, code: string): Promise<Record<string, unknown>> {
  try {
    return await import(`data:text/javascript;base64,${Buffer.from(code).toString("base64")}`);
  } catch (error) {
    throw new InputError(
      path,
      `threw while loading: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}

/**
 * `import.meta.url`, `import.meta.filename` and `import.meta.dirname` in the scenario's own
 * modules (outside `node_modules`) as each module's file has them, so that a helper module in
 * another folder can name its files with `new URL("./seed.sql", import.meta.url)`: the bundle is
 * imported from a `data:` URL, which would otherwise be every module's `import.meta.url`.
 */
export const ownLocations: Plugin = {
  name: "eutaxy-module-locations",
  setup(b) {
    b.onLoad({ filter: /\.[cm]?[jt]sx?$/ }, (args) => {
      if (args.path.split(/[\\/]/).includes("node_modules")) return undefined;
      const text = readFileSync(args.path, "utf8");
      if (!text.includes("import.meta.")) return undefined;
      const contents = text
        .replace(/\bimport\.meta\.url\b/g, JSON.stringify(pathToFileURL(args.path).href))
        .replace(/\bimport\.meta\.filename\b/g, JSON.stringify(args.path))
        .replace(/\bimport\.meta\.dirname\b/g, JSON.stringify(dirname(args.path)));
      const extension = /\.[cm]?([jt]sx?)$/.exec(args.path)?.[1] as "js" | "jsx" | "ts" | "tsx";
      return { contents, loader: extension };
    });
  },
};

/** Resolves `eutaxy/cloudflare` and `eutaxy` to the modules of the eutaxy that is running. */
const ownModules: Plugin = {
  name: "eutaxy",
  setup(build) {
    build.onResolve({ filter: /^eutaxy(\/cloudflare)?$/ }, (args) => ({
      path: ownModule(args.path === "eutaxy" ? "index" : "cloudflare"),
    }));
  },
};

/**
 * Run from source, this file is `js/src/load/scenario.ts` and the module is `js/src/<name>.ts`;
 * run from the build, everything is bundled into `js/dist/` and the module is `<name>.js` there.
 */
function ownModule(name: string): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const candidates = [join(here, "..", `${name}.ts`), join(here, `${name}.js`)];
  const found = candidates.find(isFile);
  if (!found) throw new Error(`eutaxy is missing its module ${name}: none of ${candidates.join(", ")}`);
  return found;
}

function isFile(path: string): boolean {
  return statSync(path, { throwIfNoEntry: false })?.isFile() ?? false;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A problem with one field; `loadScenario` names the scenario file for it. */
class FieldError extends Error {}

function invalid(problem: string): never {
  throw new FieldError(problem);
}

/** "needs a file", "needs an entry", "needs invariants". */
function needs(field: string): string {
  if (field.endsWith("s")) return `needs ${field}`;
  return /^[aeiou]/.test(field) ? `needs an ${field}` : `needs a ${field}`;
}

/**
 * One object of the scenario, with the words its messages use: `at` is its field path
 * (`setup[1]`, empty at the top) and `owner` what it is called when a field is missing
 * (`setup[1]: d1Schema` needs a file).
 */
class Fields {
  constructor(
    readonly fields: Record<string, unknown>,
    readonly at: string,
    readonly owner: string,
  ) {}

  path(key: string): string {
    return this.at ? `${this.at}.${key}` : key;
  }

  /** Rejects fields the type does not have: a misspelt field would otherwise be ignored. */
  only(...keys: string[]): this {
    for (const key of Object.keys(this.fields)) {
      if (!keys.includes(key)) {
        invalid(`${this.at ? `${this.at}: ` : ""}unknown field ${key} (expected ${listOf(keys)})`);
      }
    }
    return this;
  }

  required(key: string): unknown {
    const value = this.fields[key];
    if (value === undefined) invalid(`${this.owner} ${needs(key)}`);
    return value;
  }

  string(key: string): string {
    return this.checkString(key, this.required(key));
  }

  optionalString(key: string): string | undefined {
    const value = this.fields[key];
    return value === undefined ? undefined : this.checkString(key, value);
  }

  private checkString(key: string, value: unknown): string {
    if (typeof value !== "string" || value === "") invalid(`${this.path(key)} must be a non-empty string`);
    return value;
  }

  object(key: string): Fields {
    const value = this.required(key);
    if (!isObject(value)) invalid(`${this.path(key)} must be an object`);
    return new Fields(value, this.path(key), this.path(key));
  }

  array(key: string): unknown[] {
    const value = this.required(key);
    if (!Array.isArray(value)) invalid(`${this.path(key)} must be an array`);
    return value;
  }

  /** The items of array `key`, each of which must be an object. */
  objects(key: string): Fields[] {
    return this.array(key).map((item, i) => {
      const at = `${this.path(key)}[${i}]`;
      if (!isObject(item)) invalid(`${at} must be an object`);
      return new Fields(item, at, at);
    });
  }

  integer(key: string, min: 0 | 1): number {
    const value = this.required(key);
    if (typeof value !== "number" || !Number.isInteger(value) || value < min) {
      invalid(`${this.path(key)} must be a ${min === 0 ? "non-negative" : "positive"} integer`);
    }
    return value;
  }

  kind<K extends string>(...kinds: K[]): K {
    const kind = this.required("kind");
    if (!kinds.includes(kind as K)) {
      invalid(`${this.at}: unknown kind ${JSON.stringify(kind)} (expected ${listOf(kinds)})`);
    }
    return kind as K;
  }

  /** The file named by `key`, resolved against `dir`, which must exist. */
  file(key: string, dir: string): string {
    return this.checkFile(key, this.string(key), dir);
  }

  optionalFile(key: string, dir: string): string | undefined {
    const value = this.optionalString(key);
    return value === undefined ? undefined : this.checkFile(key, value, dir);
  }

  /** The file or folder named by `key`, resolved against `dir`, which must exist. */
  fileOrFolder(key: string, dir: string): string {
    const value = this.string(key);
    const path = resolve(dir, value);
    if (!statSync(path, { throwIfNoEntry: false })) {
      invalid(`${this.path(key)}: no such file or folder ${value} (resolved to ${path})`);
    }
    return path;
  }

  private checkFile(key: string, value: string, dir: string): string {
    const file = resolve(dir, value);
    if (isFolder(file)) invalid(`${this.path(key)}: ${value} is a folder, not a file${modulesIn(file)}`);
    if (!isFile(file)) invalid(`${this.path(key)}: no such file ${value} (resolved to ${file})`);
    return file;
  }
}

function listOf(words: readonly string[], last: "or" | "and" = "or"): string {
  return words.length > 1 ? `${words.slice(0, -1).join(", ")} ${last} ${words.at(-1)}` : (words[0] ?? "");
}

function readScenario(scenario: Fields, dir: string): Scenario<WorkerFiles> {
  scenario.only("name", "seed", "worker", "setup", "drive", "invariants", "bounds");
  const name = scenario.string("name");
  const seed = scenario.optionalString("seed");
  const worker = readWorker(scenario.object("worker"), dir);
  const setup = scenario.fields.setup === undefined ? undefined : readSetup(scenario, dir);
  const drive = readDrive(scenario);
  const invariants = readInvariants(scenario);
  const bounds = scenario.fields.bounds === undefined ? undefined : readBounds(scenario.object("bounds"));
  return {
    name,
    ...(seed !== undefined ? { seed } : {}),
    worker,
    ...(setup !== undefined ? { setup } : {}),
    drive,
    invariants,
    ...(bounds !== undefined ? { bounds } : {}),
  };
}

/**
 * A Worker's entry and wrangler config, each found from the other as wrangler finds it: without
 * a config, the one beside the entry or in the nearest folder above (none: no bindings); without
 * an entry, the config's `main` (its environment's, with `env`).
 */
function readWorkerFiles(spec: Fields, dir: string): WorkerFiles {
  const config = spec.optionalFile("config", dir);
  const env = spec.optionalString("env");
  const selected = env !== undefined ? { env } : {};
  if (config !== undefined && spec.fields.entry === undefined) {
    return { entry: mainOf(spec, config, env), config, ...selected };
  }
  if (config === undefined && spec.fields.entry === undefined) {
    invalid(`${spec.owner} needs an entry or a config (whose main is the entry)`);
  }
  const entry = spec.file("entry", dir);
  const found = config ?? findWranglerConfig(dirname(entry));
  if (found === undefined && env !== undefined) {
    invalid(
      `${spec.path("env")}: no wrangler config to take environment ${env} from (none beside ${spec.string("entry")} or in a folder above)`,
    );
  }
  return { entry, ...(found !== undefined ? { config: found, ...selected } : {}) };
}

/**
 * The entry a config's `main` names (resolved against the config's folder), which must exist; a
 * `main` that names no file is the config's mistake, reported with the config's name first.
 */
function mainOf(spec: Fields, config: string, env: string | undefined): string {
  const { main, buildCommand } = readWranglerConfig(config, env);
  const named = spec.string("config");
  if (main === undefined) invalid(`${spec.owner} ${needs("entry")}: its config ${named} has no main`);
  if (!isFile(main)) {
    const key = env === undefined ? "main" : `main (of env.${env})`;
    const what = isFolder(main)
      ? `a folder, not a module${modulesIn(main)}`
      : buildCommand !== undefined
        ? `does not exist: its build.command (${buildCommand}) makes it, which wrangler runs before it bundles and eutaxy does not, so run it first`
        : `does not exist${modulesIn(dirname(main))}`;
    throw new InputError(
      config,
      `${key} points at ${relative(dirname(config), main)}, which ${isFolder(main) ? "is " : ""}${what}; the scenario's ${spec.path("config")} names this config and no entry, so the Worker's entry is its main`,
    );
  }
  return main;
}

function isFolder(path: string): boolean {
  return statSync(path, { throwIfNoEntry: false })?.isDirectory() === true;
}

/** The modules in `dir`, as candidates for a file that is not there: ` (src/ has index.ts)`. */
function modulesIn(dir: string): string {
  if (!isFolder(dir)) return "";
  const modules = readdirSync(dir)
    .filter((name) => MODULE_FILE.test(name) && !name.endsWith(".d.ts") && isFile(join(dir, name)))
    .sort();
  if (modules.length === 0) return "";
  const shownMax = 4;
  const more = modules.length > shownMax ? ` and ${modules.length - shownMax} more` : "";
  return ` (${shown(dir)}/ has ${modules.slice(0, shownMax).join(", ")}${more})`;
}

function readWorker(worker: Fields, dir: string): WorkerFiles {
  return readWorkerFiles(worker.only("entry", "config", "env"), dir);
}

function readSetup(scenario: Fields, dir: string): SetupStep<WorkerFiles>[] {
  // Each service binding is answered by one callee or one script; two would contradict.
  const boundAt = new Map<string, string>();
  return scenario.objects("setup").map((item): SetupStep<WorkerFiles> => {
    const step = new Fields(
      item.fields,
      item.at,
      `${item.at}: ${item.kind("callee", "consumer", "service", "d1Schema", "kvEntries", "r2Objects", "outbound", "secrets")}`,
    );
    if (step.fields.kind === "d1Schema") {
      step.only("kind", "db", "file");
      const file = step.fileOrFolder("file", dir);
      return { kind: "d1Schema", db: step.string("db"), file } satisfies D1SchemaStep;
    }
    if (step.fields.kind === "kvEntries") {
      step.only("kind", "namespace", "entries");
      const entries = step.object("entries");
      for (const [key, entry] of Object.entries(entries.fields)) {
        const at = entries.path(key);
        if (typeof entry === "string") continue;
        if (
          typeof entry !== "object" ||
          entry === null ||
          typeof (entry as { value?: unknown }).value !== "string"
        ) {
          invalid(`${at} must be a string, or { value, metadata } with a string value`);
        }
        const extra = Object.keys(entry).find((name) => name !== "value" && name !== "metadata");
        if (extra !== undefined) invalid(`${at}.${extra}: an entry has only value and metadata`);
      }
      return {
        kind: "kvEntries",
        namespace: step.string("namespace"),
        entries: entries.fields as KvEntriesStep["entries"],
      } satisfies KvEntriesStep;
    }
    if (step.fields.kind === "r2Objects") {
      step.only("kind", "bucket", "objects");
      const objects = step.object("objects");
      for (const [key, text] of Object.entries(objects.fields)) {
        if (typeof text !== "string") invalid(`${objects.path(key)} must be a string, the object's text`);
      }
      return {
        kind: "r2Objects",
        bucket: step.string("bucket"),
        objects: objects.fields as R2ObjectsStep["objects"],
      } satisfies R2ObjectsStep;
    }
    if (step.fields.kind === "outbound") {
      step.only("kind", "handlers");
      return { kind: "outbound", handlers: readHandlers(step.object("handlers")) as OutboundHandlers };
    }
    if (step.fields.kind === "consumer") {
      step.only("kind", "entry", "config", "env");
      return { kind: "consumer", ...readWorkerFiles(step, dir) } satisfies ConsumerStep<WorkerFiles>;
    }
    if (step.fields.kind === "secrets") {
      step.only("kind", "values", "worker");
      const values = step.object("values");
      for (const [key, value] of Object.entries(values.fields)) {
        if (typeof value !== "string") invalid(`${values.path(key)} must be a string`);
      }
      const worker = step.optionalString("worker");
      return {
        kind: "secrets",
        values: values.fields as Record<string, string>,
        ...(worker !== undefined ? { worker } : {}),
      };
    }
    const binding = step.string("binding");
    const earlier = boundAt.get(binding);
    if (earlier) invalid(`${step.at}: binding ${binding} is already set up by ${earlier}`);
    boundAt.set(binding, step.at);
    if (step.fields.kind === "callee") {
      step.only("kind", "binding", "entry", "config", "env");
      return { kind: "callee", binding, ...readWorkerFiles(step, dir) } satisfies CalleeStep<WorkerFiles>;
    }
    step.only("kind", "binding", "handlers");
    return {
      kind: "service",
      binding,
      handlers: readHandlers(step.object("handlers")),
    } satisfies ServiceStep;
  });
}

function readHandlers(handlers: Fields): ServiceHandlers {
  for (const [method, handler] of Object.entries(handlers.fields)) {
    if (handler !== undefined && typeof handler !== "function") {
      invalid(`${handlers.path(method)} must be a function`);
    }
  }
  return handlers.fields as ServiceHandlers;
}

/** One driver, or an array of drivers whose events are delivered in order. */
function readDrive(scenario: Fields): Driver | Driver[] {
  if (!Array.isArray(scenario.fields.drive)) return readDriver(scenario.object("drive"));
  const drivers = scenario.objects("drive").map(readDriver);
  if (drivers.length === 0) invalid(`${scenario.path("drive")} must not be empty`);
  return drivers;
}

function readDriver(drive: Fields): Driver {
  const kind = drive.kind("http", "queue", "cron");
  if (kind === "queue") {
    drive.only("kind", "queue", "messages");
    const messages = drive.array("messages");
    if (messages.length === 0) invalid(`${drive.path("messages")} must not be empty`);
    return { kind: "queue", queue: drive.string("queue"), messages };
  }
  if (kind === "cron") {
    drive.only("kind", "cron", "times");
    const cron = drive.string("cron");
    try {
      parseCron(cron).atOrAfter(CLOCK_START_MS);
    } catch (error) {
      if (!(error instanceof CronError)) throw error;
      invalid(`${drive.path("cron")}: ${error.message}`);
    }
    return { kind: "cron", cron, times: drive.integer("times", 1) };
  }
  drive.only("kind", "requests", "retries", "resendOn");
  const requests = drive.objects("requests").map(readRequest);
  if (requests.length === 0) invalid(`${drive.path("requests")} must not be empty`);
  // The client sends its requests in order, so none is sent before an earlier one.
  let sentAtMs = 0;
  requests.forEach(({ atMs }, i) => {
    if (atMs === undefined) return;
    if (atMs < sentAtMs) {
      invalid(
        `${drive.path("requests")}[${i}].atMs is ${atMs}, before an earlier request's ${sentAtMs}: the client sends its requests in order`,
      );
    }
    sentAtMs = atMs;
  });
  const retries = drive.integer("retries", 0);
  if (drive.fields.resendOn === undefined) return { kind: "http", requests, retries };
  const resendOn = drive.array("resendOn").map((status, i): ResendStatus => {
    // A client resends on a failure: a 4xx or 5xx code, or the whole class.
    const valid =
      status === "4xx" ||
      status === "5xx" ||
      (Number.isInteger(status) && (status as number) >= 400 && (status as number) <= 599);
    if (!valid) invalid(`${drive.path("resendOn")}[${i}] must be a status from 400 to 599, "4xx" or "5xx"`);
    return status as ResendStatus;
  });
  return { kind: "http", requests, retries, resendOn };
}

/** How late in a run a request may be sent: ten years, far past any expiry a Worker sets. */
const SENT_AT_MS_MAX = 10 * 365 * 24 * 3600 * 1000;

function readRequest(request: Fields): HttpRequestSpec {
  request.only("path", "method", "body", "headers", "atMs", "cf");
  const path = request.string("path");
  if (!path.startsWith("/")) invalid(`${request.path("path")} must start with "/"`);
  const method = request.optionalString("method");
  const headers = request.fields.headers === undefined ? undefined : readHeaders(request.object("headers"));
  const atMs = request.fields.atMs === undefined ? undefined : request.integer("atMs", 0);
  if (atMs !== undefined && atMs > SENT_AT_MS_MAX) {
    invalid(`${request.path("atMs")} is ${atMs}: at most ${SENT_AT_MS_MAX} (ten years)`);
  }
  const body = request.fields.body;
  sendable(request, path, method, body, headers);
  return {
    path,
    ...(method !== undefined ? { method } : {}),
    ...(body !== undefined ? { body } : {}),
    ...(headers !== undefined ? { headers } : {}),
    ...(atMs !== undefined ? { atMs } : {}),
    ...(request.fields.cf !== undefined ? { cf: readCf(request.object("cf")) } : {}),
  };
}

/**
 * Checks that the driver can send the request as it will (drivers/http.ts): a body that is not a
 * string goes as JSON, and the method, headers and body make a `Request`. Said here, as the
 * scenario's mistake, rather than found by the first run that sends it.
 */
function sendable(
  request: Fields,
  path: string,
  method: string | undefined,
  body: unknown,
  headers: Record<string, string> | undefined,
): void {
  let text: string | undefined;
  if (typeof body === "string" || body === undefined) {
    text = body;
  } else {
    try {
      text = JSON.stringify(body);
    } catch (error) {
      // V8 draws a cycle over several lines: one line here.
      const why = (error instanceof Error ? error.message : String(error)).replace(/\s*\n\s*/g, " ");
      invalid(`${request.path("body")} cannot be sent as JSON: ${why}`);
    }
    if (text === undefined) invalid(`${request.path("body")} is a ${typeof body}, which JSON cannot carry`);
  }
  try {
    new Request(`https://scenario.invalid${path}`, {
      method: method ?? (text === undefined ? "GET" : "POST"),
      ...(headers !== undefined ? { headers } : {}),
      ...(text !== undefined ? { body: text } : {}),
    });
  } catch (error) {
    // The message quotes a header as given, line breaks and all: escaped, it stays one line.
    const why = (error instanceof Error ? error.message : String(error))
      .replaceAll("\r", "\\r")
      .replaceAll("\n", "\\n");
    invalid(`${request.at}: ${why}`);
  }
}

/** A request's `cf` fields: what a structured clone copies, as the runtime's own `cf` is data. */
function readCf(cf: Fields): Record<string, unknown> {
  try {
    return structuredClone(cf.fields);
  } catch {
    return invalid(`${cf.at} must be plain data (strings, numbers, objects): it is request.cf`);
  }
}

function readHeaders(headers: Fields): Record<string, string> {
  for (const [name, value] of Object.entries(headers.fields)) {
    if (typeof value !== "string") invalid(`${headers.path(name)} must be a string`);
  }
  return headers.fields as Record<string, string>;
}

function readInvariants(scenario: Fields): Invariant[] {
  const declared = scenario.objects("invariants");
  // With nothing to check, every run would pass and the check say BOUNDED.
  if (declared.length === 0) {
    invalid(`${scenario.path("invariants")} must not be empty: a check needs at least one invariant`);
  }
  // Reports name a violated invariant, so a name must say which one.
  const namedAt = new Map<string, string>();
  return declared.map((invariant): Invariant => {
    const kind = invariant.kind("unique", "query", "conserved", "custom", "answered");
    const name = invariant.string("name");
    const earlier = namedAt.get(name);
    if (earlier) invalid(`${invariant.at}: the name ${name} is taken by ${earlier}`);
    namedAt.set(name, invariant.at);
    if (kind === "query" || kind === "conserved") {
      invariant.only("kind", "name", "db", "sql");
      return { kind, name, db: invariant.string("db"), sql: invariant.string("sql") };
    }
    if (kind === "custom") {
      invariant.only("kind", "name", "check");
      const check = invariant.required("check");
      if (typeof check !== "function") invalid(`${invariant.path("check")} must be a function`);
      return { kind, name, check: check as CustomInvariant["check"] };
    }
    if (kind === "answered") {
      invariant.only("kind", "name", "status");
      const status = invariant.string("status");
      if (!/^([1-5]xx|[1-5]\d\d)$/.test(status))
        invalid(`${invariant.path("status")} must be a status like "2xx" or "201"`);
      return { kind, name, status };
    }
    invariant.only("kind", "name", "rows", "columns");
    const rows = invariant.object("rows");
    rows.kind("d1Rows");
    rows.only("kind", "db", "table");
    const columns = invariant.array("columns");
    if (columns.length === 0 || columns.some((column) => typeof column !== "string" || column === "")) {
      invalid(`${invariant.path("columns")} must be a non-empty array of column names`);
    }
    return {
      kind: "unique",
      name,
      rows: { kind: "d1Rows", db: rows.string("db"), table: rows.string("table") },
      columns: columns as string[],
    };
  });
}

/** The engine explores at most this many invocations live at once. */
const CONCURRENT_INVOCATIONS_MAX = 64;
/** The engine's limits on faults per run and redeliveries per event. */
const FAULTS_PER_RUN_MAX = 16;
/** A budget the engine can hold; about 285 millennia, so never a limit in practice. */
export const BUDGET_MS_MAX: number = Number.MAX_SAFE_INTEGER;

const BOUNDS = ["maxFaultsPerRun", "maxRedeliveries", "maxConcurrentInvocations", "budgetMs"] as const;

function readBounds(bounds: Fields): Bounds {
  bounds.only(...BOUNDS);
  const read: Partial<Record<(typeof BOUNDS)[number], number>> = {};
  for (const key of BOUNDS) {
    // A budget of nothing would end every check before its first run.
    if (bounds.fields[key] !== undefined) {
      read[key] = bounds.integer(key, key === "budgetMs" || key === "maxConcurrentInvocations" ? 1 : 0);
    }
  }
  if ((read.maxConcurrentInvocations ?? 1) > CONCURRENT_INVOCATIONS_MAX) {
    invalid(`bounds.maxConcurrentInvocations must be at most ${CONCURRENT_INVOCATIONS_MAX}`);
  }
  if ((read.maxFaultsPerRun ?? 0) > FAULTS_PER_RUN_MAX) {
    invalid(`bounds.maxFaultsPerRun must be at most ${FAULTS_PER_RUN_MAX}`);
  }
  if ((read.maxRedeliveries ?? 0) > REDELIVERIES_MAX) {
    invalid(`bounds.maxRedeliveries must be at most ${REDELIVERIES_MAX}`);
  }
  if ((read.budgetMs ?? 1) > BUDGET_MS_MAX) {
    invalid(`bounds.budgetMs must be at most ${BUDGET_MS_MAX}`);
  }
  return read;
}
