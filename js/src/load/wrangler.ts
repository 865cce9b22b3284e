/**
 * Reads a Worker's wrangler config (`wrangler.jsonc`, `wrangler.json` or `wrangler.toml`) into
 * the fields a check uses: the Worker's name, its entry module, its bindings (vars, D1, KV, R2,
 * service bindings, Durable Objects, queue producers, and those of kinds eutaxy does not
 * simulate), its queue consumers and cron triggers, its module rules; at the top level, or as one of its
 * environments (`env.<name>`) with wrangler's inheritance. Also reads the local secrets
 * `wrangler dev` reads from beside the config (`.dev.vars`).
 * Fields eutaxy does not use are left alone, so a real project's config loads as it is.
 */

import { readFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { parse as parseDotenv } from "dotenv";
import { type ParseError, parse as parseJsonc, printParseErrorCode } from "jsonc-parser";
import { parse as parseToml, TomlError } from "smol-toml";
import { closest } from "../closest.ts";
import { InputError } from "../errors.ts";

export interface D1DatabaseBinding {
  readonly binding: string;
  readonly databaseName?: string;
  readonly databaseId?: string;
  /** The database `wrangler dev` uses instead of `database_id` (remotely, and locally as its key). */
  readonly previewDatabaseId?: string;
  /**
   * The folder of its D1 migrations, absolute, as `wrangler d1 migrations apply` finds it: the
   * config's `migrations_dir` (against the config's folder), else the `migrations` folder beside
   * the config when there is one.
   */
  readonly migrationsDir?: string;
}

export interface ServiceBinding {
  readonly binding: string;
  /** The name of the Worker the binding reaches. */
  readonly service: string;
  /** The named entrypoint (a `WorkerEntrypoint` class) instead of the default export. */
  readonly entrypoint?: string;
  readonly props?: Readonly<Record<string, unknown>>;
}

export interface KvNamespaceBinding {
  readonly binding: string;
  readonly id?: string;
}

export interface R2BucketBinding {
  readonly binding: string;
  readonly bucketName?: string;
  /** The bucket `wrangler dev` uses instead of `bucket_name`. */
  readonly previewBucketName?: string;
}

export interface DurableObjectBinding {
  /** The env name the namespace is bound to. */
  readonly name: string;
  readonly className: string;
  /** Another Worker's name when the class is defined there. */
  readonly scriptName?: string;
}

export interface QueueProducerBinding {
  readonly binding: string;
  readonly queue: string;
  readonly deliveryDelay?: number;
}

export interface QueueConsumer {
  readonly queue: string;
  /** Messages per batch at most; Cloudflare's default is 10. */
  readonly maxBatchSize: number;
  /** Retries of a message before it is dead-lettered or dropped; Cloudflare's default is 3. */
  readonly maxRetries: number;
  readonly deadLetterQueue?: string;
  readonly retryDelay?: number;
  /** Consumer invocations of the queue live at once at most; absent, Cloudflare scales them out. */
  readonly maxConcurrency?: number;
}

/** The types of module a wrangler module rule may give the files it matches. */
export const MODULE_RULE_TYPES = ["Text", "Data", "CompiledWasm", "ESModule", "CommonJS"] as const;
export type ModuleRuleType = (typeof MODULE_RULE_TYPES)[number];

/** A module rule of the config (`rules`): an import that matches one of `globs` is a `type` module. */
export interface ModuleRule {
  readonly type: ModuleRuleType;
  readonly globs: readonly string[];
  /** Whether later rules of the same type still apply (wrangler drops them otherwise). */
  readonly fallthrough?: boolean;
  /** Where the config declares it: `rules[0]`, or `env.staging.rules[0]` when the environment sets rules. */
  readonly at: string;
}

export interface WorkerConfig {
  /** The config file, absolute. */
  readonly file: string;
  /** The environment read (`env.<env>`, as `wrangler --env <env>` reads it); absent, the top level. */
  readonly env?: string;
  /** The Worker's name; an environment that sets none is named `<top-level name>-<env>`. */
  readonly name: string;
  /** The entry module, absolute (resolved against the config's folder). */
  readonly main?: string;
  /** `build.command`: what wrangler runs before it bundles `main` (which it may make). */
  readonly buildCommand?: string;
  readonly compatibilityDate?: string;
  readonly compatibilityFlags: readonly string[];
  readonly vars: Readonly<Record<string, unknown>>;
  /**
   * `secrets.required`: the secrets the Worker declares; when present, the only keys its local
   * secrets files give it (Cloudflare's docs: "only the keys listed … are loaded").
   */
  readonly requiredSecrets?: readonly string[];
  /** `define`: identifiers the bundle replaces with JavaScript expressions, as wrangler's does. */
  readonly define?: Readonly<Record<string, string>>;
  /** `rules`: the module rules the bundle applies before wrangler's defaults, in their order. */
  readonly rules?: readonly ModuleRule[];
  /**
   * `tsconfig`: the tsconfig the bundle reads for every file (absolute, against the config's
   * folder), as wrangler hands it to esbuild; absent, esbuild finds the one nearest each file.
   */
  readonly tsconfig?: string;
  /**
   * `alias`: imports the bundle answers with another module, each import as written → what
   * replaces it (a path against the config's folder, or a package), as wrangler's alias plugin
   * resolves it. Wrangler reads it from the top level only, whatever environment is read.
   */
  readonly alias?: Readonly<Record<string, string>>;
  /** `keep_names`: whether the bundle keeps functions' and classes' names (wrangler's default: true). */
  readonly keepNames?: boolean;
  /** `jsx_factory` and `jsx_fragment`: what classic JSX calls where no tsconfig says. */
  readonly jsxFactory?: string;
  readonly jsxFragment?: string;
  readonly d1Databases: readonly D1DatabaseBinding[];
  readonly services: readonly ServiceBinding[];
  readonly kvNamespaces: readonly KvNamespaceBinding[];
  readonly r2Buckets: readonly R2BucketBinding[];
  readonly durableObjects: readonly DurableObjectBinding[];
  /** Classes declared by `migrations` (`new_classes`, `new_sqlite_classes`) and whether SQLite-backed. */
  readonly durableObjectClasses: ReadonlyMap<string, { readonly sqlite: boolean }>;
  readonly queueProducers: readonly QueueProducerBinding[];
  readonly queueConsumers: readonly QueueConsumer[];
  readonly crons: readonly string[];
  /** Bindings of kinds eutaxy does not simulate, with the config field that declares each. */
  readonly unsupported: readonly { readonly binding: string; readonly field: string }[];
  /**
   * Bindings (and vars) the part of the config read does not declare but another part does:
   * name → where (`env.staging`, or `the top level` when an environment is read). Wrangler
   * inherits no binding between the two, so the Worker's `env` lacks them; messages use it to
   * say which environment to read.
   */
  readonly elsewhere: ReadonlyMap<string, readonly string[]>;
}

/**
 * Binding kinds eutaxy does not simulate: config field (`outer.inner` for a list inside an
 * object) → the key that names the binding. With the singles below, every binding kind of
 * wrangler's config schema (4.86) is either simulated or refused when a Worker uses it: a
 * binding left out of env would make the Worker throw on every request, which a check could
 * call BOUNDED. (`wasm_modules`, `text_blobs` and `data_blobs` are globals of a service-worker
 * Worker, which wrangler refuses for a module Worker, the only kind eutaxy runs.)
 */
const UNSUPPORTED_LISTS = {
  hyperdrive: "binding",
  analytics_engine_datasets: "binding",
  workflows: "binding",
  vectorize: "binding",
  dispatch_namespaces: "binding",
  mtls_certificates: "binding",
  send_email: "name",
  ratelimits: "name",
  secrets_store_secrets: "binding",
  pipelines: "binding",
  ai_search: "binding",
  ai_search_namespaces: "binding",
  artifacts: "binding",
  flagship: "binding",
  vpc_services: "binding",
  vpc_networks: "binding",
  worker_loaders: "binding",
  unsafe_hello_world: "binding",
  "unsafe.bindings": "name",
  "logfwdr.bindings": "name",
} as const;
const UNSUPPORTED_SINGLES = [
  "ai",
  "browser",
  "images",
  "version_metadata",
  "assets",
  "media",
  "stream",
] as const;

/** The top-level keys eutaxy reads from a config (besides the binding kinds it refuses above). */
const READ_KEYS = [
  "name",
  "main",
  "compatibility_date",
  "compatibility_flags",
  "vars",
  "secrets",
  "define",
  "rules",
  "tsconfig",
  "alias",
  "keep_names",
  "jsx_factory",
  "jsx_fragment",
  "durable_objects",
  "queues",
  "triggers",
  "d1_databases",
  "kv_namespaces",
  "r2_buckets",
  "services",
  "migrations",
  "env",
] as const;

/**
 * The other top-level keys of wrangler's config (4.86): a key that is none of these nor one
 * eutaxy reads, and is a letter or two from one eutaxy reads (`d1_database`), is a misspelling
 * wrangler would only warn of, and the bindings it meant would be missing.
 */
const OTHER_WRANGLER_KEYS = [
  "$schema",
  "account_id",
  "base_dir",
  "build",
  "cloudchamber",
  "compliance_region",
  "containers",
  "data_blobs",
  "dev",
  "find_additional_modules",
  "first_party_worker",
  "keep_vars",
  "legacy_env",
  "limits",
  "logpush",
  "minify",
  "no_bundle",
  "node_compat",
  "observability",
  "pages_build_output_dir",
  "placement",
  "preserve_file_names",
  "preview_urls",
  "python_modules",
  "route",
  "routes",
  "send_metrics",
  "site",
  "streaming_tail_consumers",
  "tail_consumers",
  "text_blobs",
  "unsafe",
  "upload_source_maps",
  "usage_model",
  "wasm_modules",
  "workers_dev",
  "zone_id",
] as const;

/** Says which read key a misspelt key of `fields` meant, at `keyPath`; nothing for keys wrangler knows. */
function refuseMisspelledKeys(
  fields: Fields,
  keyPath: (key: string) => string,
  fail: (problem: string) => never,
) {
  for (const key of Object.keys(fields)) {
    if (WRANGLER_KEYS.has(key)) continue;
    const meant = closest(key, READ_KEYS);
    if (meant !== undefined) fail(`has an unknown field ${keyPath(key)}: did you mean ${meant}?`);
  }
}

/** The config files wrangler reads, in the order it prefers them within one folder. */
const CONFIG_FILES = ["wrangler.json", "wrangler.jsonc", "wrangler.toml"] as const;

/**
 * The wrangler config (absolute) of a Worker whose entry is in `dir`, found as wrangler finds one
 * from a script it is given: in `dir`, else in the nearest folder above that has one; undefined
 * when no folder up to the root has one. Nearest first: wrangler itself looks for a
 * wrangler.json all the way up before it looks for a wrangler.jsonc, so a config far above the
 * entry could win over the one beside it.
 */
export function findWranglerConfig(dir: string): string | undefined {
  for (let folder = resolve(dir); ; folder = dirname(folder)) {
    const found = CONFIG_FILES.map((name) => join(folder, name)).find(isFile);
    if (found !== undefined || dirname(folder) === folder) return found;
  }
}

function isFile(path: string): boolean {
  return statSync(path, { throwIfNoEntry: false })?.isFile() ?? false;
}

/**
 * Reads and checks the wrangler config at `path`: its top level or, with `env`, its environment
 * `env.<env>` as `wrangler --env <env>` reads it. Every problem is an InputError naming the file.
 */
export function readWranglerConfig(path: string, env?: string): WorkerConfig {
  const file = resolve(path);
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    throw new InputError(path, "no such file");
  }
  const raw = path.endsWith(".toml") ? parseTomlConfig(path, text) : parseJsonConfig(path, text);
  return normalize(path, file, raw, env);
}

/** jsonc-parser's error codes, said the way the rest of eutaxy's messages are. */
const JSON_ERRORS: Record<string, string> = {
  InvalidSymbol: "unexpected symbol",
  InvalidNumberFormat: "malformed number",
  PropertyNameExpected: "expected a property name",
  ValueExpected: "expected a value",
  ColonExpected: "expected a colon",
  CommaExpected: "expected a comma",
  CloseBraceExpected: "expected a closing brace",
  CloseBracketExpected: "expected a closing bracket",
  EndOfFileExpected: "expected the end of the file",
  InvalidCommentToken: "malformed comment",
  UnexpectedEndOfComment: "unterminated comment",
  UnexpectedEndOfString: "unterminated string",
  UnexpectedEndOfNumber: "unterminated number",
  InvalidUnicode: "malformed unicode escape",
  InvalidEscapeCharacter: "malformed escape character",
  InvalidCharacter: "unexpected character",
};

function parseJsonConfig(path: string, text: string): unknown {
  const errors: ParseError[] = [];
  const value: unknown = parseJsonc(text, errors, { allowTrailingComma: true, disallowComments: false });
  const first = errors[0];
  if (first) {
    const code = printParseErrorCode(first.error);
    throw new InputError(`${path}:${lineColumn(text, first.offset)}`, JSON_ERRORS[code] ?? code);
  }
  return value;
}

function parseTomlConfig(path: string, text: string): unknown {
  try {
    return parseToml(text);
  } catch (error) {
    if (!(error instanceof TomlError)) throw error;
    // smol-toml's message carries a code excerpt after its first line; the position says enough.
    const message = (error.message.split("\n")[0] ?? "").replace(/^Invalid TOML document: /, "");
    throw new InputError(`${path}:${error.line}:${error.column}`, message);
  }
}

/** `line:column`, both from 1, of `offset` in `text`. */
function lineColumn(text: string, offset: number): string {
  const lines = text.slice(0, offset).split(/\r?\n/);
  return `${lines.length}:${(lines.at(-1)?.length ?? 0) + 1}`;
}

type Fields = Record<string, unknown>;

function isObject(value: unknown): value is Fields {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === "string");
}

/**
 * The keys eutaxy reads that a wrangler environment inherits from the top level unless it sets
 * them itself (wrangler 4.86's `inheritable` fields; `name` too, below). Every other key eutaxy
 * reads, vars and every binding kind, is one of wrangler's non-inheritable keys: an environment
 * has only those it declares.
 */
const INHERITABLE = [
  "main",
  "compatibility_date",
  "compatibility_flags",
  "triggers",
  "migrations",
  "rules",
  "tsconfig",
  "keep_names",
  "jsx_factory",
  "jsx_fragment",
  "build",
  "assets",
  "logfwdr",
] as const;

/** Every top-level key of wrangler's config. */
const WRANGLER_KEYS: ReadonlySet<string> = new Set<string>([
  ...READ_KEYS,
  ...OTHER_WRANGLER_KEYS,
  ...UNSUPPORTED_SINGLES,
  ...Object.keys(UNSUPPORTED_LISTS).map((field) => field.split(".")[0] as string),
  ...INHERITABLE,
]);

/** The fields of a config as `env` selects them, and where each top-level key was written. */
interface Selected {
  readonly config: Fields;
  /** `vars` for a key of the top level, `env.staging.vars` for one the environment sets. */
  readonly keyPath: (key: string) => string;
}

/**
 * Environment `env` of `config` as wrangler reads it: the keys it sets, the inheritable keys it
 * does not set from the top level, and the top level's name with `-<env>` unless it names
 * itself, as wrangler deploys it as a Worker of its own.
 */
function selectEnvironment(config: Fields, env: string, fail: (problem: string) => never): Selected {
  const environments = config.env ?? {};
  if (!isObject(environments)) fail("env must be an object");
  if (!Object.hasOwn(environments, env)) {
    const known = Object.keys(environments);
    fail(
      `has no environment ${env} (env.${env}); ${known.length ? `its environments are ${known.join(", ")}` : "it has none"}`,
    );
  }
  const selected = environments[env];
  if (!isObject(selected)) fail(`env.${env} must be an object`);
  // Wrangler takes a key the environment leaves null as one it does not set, as `??` does.
  const sets = (key: string) => selected[key] !== undefined && selected[key] !== null;
  const fields: Fields = { ...selected };
  for (const key of INHERITABLE) if (!sets(key)) fields[key] = config[key];
  if (!sets("name") && typeof config.name === "string" && config.name !== "") {
    fields.name = `${config.name}-${env}`;
  }
  return { config: fields, keyPath: (key) => (sets(key) ? `env.${env}.${key}` : key) };
}

/** Where `wrangler d1 migrations apply` reads a database's migrations from, if anywhere. */
function migrationsFolder(configFile: string, declared: string | undefined): string | undefined {
  if (declared !== undefined) return resolve(dirname(configFile), declared);
  const folder = join(dirname(configFile), "migrations");
  return statSync(folder, { throwIfNoEntry: false })?.isDirectory() ? folder : undefined;
}

function normalize(path: string, file: string, raw: unknown, env: string | undefined): WorkerConfig {
  function fail(problem: string): never {
    throw new InputError(path, problem);
  }
  if (!isObject(raw)) fail("the config must be an object");
  refuseMisspelledKeys(raw, (key) => key, fail);
  const { config, keyPath }: Selected =
    env === undefined ? { config: raw, keyPath: (key) => key } : selectEnvironment(raw, env, fail);
  if (env !== undefined) refuseMisspelledKeys(config, keyPath, fail);

  const optionalString = (value: unknown, field: string): string | undefined => {
    if (value !== undefined && typeof value !== "string") fail(`${field} must be a string`);
    return value;
  };
  const requiredString = (value: unknown, field: string): string => {
    if (typeof value !== "string" || value === "") fail(`${field} must be a non-empty string`);
    return value;
  };
  const optionalObject = (value: unknown, field: string): Fields | undefined => {
    if (value !== undefined && !isObject(value)) fail(`${field} must be an object`);
    return value;
  };
  const optionalNumber = (value: unknown, field: string): number | undefined => {
    if (value !== undefined && (typeof value !== "number" || !Number.isFinite(value) || value < 0)) {
      fail(`${field} must be a non-negative number`);
    }
    return value;
  };
  const entries = (field: string, within: Fields = config, at = keyPath(field)): Fields[] => {
    const value = within[field] ?? [];
    if (!Array.isArray(value)) fail(`${at} must be an array`);
    return value.map((entry: unknown, i) => {
      if (!isObject(entry)) fail(`${at}[${i}] must be an object`);
      return entry;
    });
  };

  const name = requiredString(config.name, keyPath("name"));
  const main = optionalString(config.main, keyPath("main"));
  const compatibilityDate = optionalString(config.compatibility_date, keyPath("compatibility_date"));
  const flags: unknown = config.compatibility_flags ?? [];
  if (!isStringArray(flags)) fail(`${keyPath("compatibility_flags")} must be an array of strings`);
  const vars = optionalObject(config.vars, keyPath("vars")) ?? {};
  const secrets = optionalObject(config.secrets, keyPath("secrets"));
  const required: unknown = secrets?.required;
  if (required !== undefined && !isStringArray(required)) {
    fail(`${keyPath("secrets")}.required must be an array of strings`);
  }
  const define = optionalObject(config.define, keyPath("define"));
  for (const [key, value] of Object.entries(define ?? {})) {
    if (typeof value !== "string") {
      fail(`${keyPath("define")}.${key} must be a string: the JavaScript expression that replaces ${key}`);
    }
  }

  const build = optionalObject(config.build, keyPath("build"));
  const buildCommand = optionalString(build?.command, `${keyPath("build")}.command`);
  const tsconfig = optionalString(config.tsconfig, keyPath("tsconfig"));
  // Wrangler reads `alias` from the top level alone: an environment's own is not read.
  const alias = optionalObject(raw.alias, "alias");
  for (const [key, value] of Object.entries(alias ?? {})) {
    if (typeof value !== "string") fail(`alias["${key}"] must be a string: the module that replaces ${key}`);
  }
  const keepNames: unknown = config.keep_names;
  if (keepNames !== undefined && typeof keepNames !== "boolean")
    fail(`${keyPath("keep_names")} must be true or false`);
  const jsxFactory = optionalString(config.jsx_factory, keyPath("jsx_factory"));
  const jsxFragment = optionalString(config.jsx_fragment, keyPath("jsx_fragment"));

  const rules =
    config.rules === undefined || config.rules === null
      ? undefined
      : entries("rules").map((entry, i): ModuleRule => {
          const at = `${keyPath("rules")}[${i}]`;
          const type: unknown = entry.type;
          if (!MODULE_RULE_TYPES.includes(type as ModuleRuleType)) {
            fail(
              `${at}.type is ${JSON.stringify(type)}; a module rule's type must be one of ${MODULE_RULE_TYPES.join(", ")}, as wrangler's config allows`,
            );
          }
          const globs: unknown = entry.globs;
          if (!isStringArray(globs)) fail(`${at}.globs must be an array of strings`);
          const fallthrough: unknown = entry.fallthrough;
          if (fallthrough !== undefined && typeof fallthrough !== "boolean") {
            fail(`${at}.fallthrough must be true or false`);
          }
          return {
            type: type as ModuleRuleType,
            globs,
            ...(fallthrough !== undefined ? { fallthrough } : {}),
            at,
          };
        });

  const d1Databases = entries("d1_databases").map((entry, i): D1DatabaseBinding => {
    const at = `${keyPath("d1_databases")}[${i}]`;
    const databaseName = optionalString(entry.database_name, `${at}.database_name`);
    const databaseId = optionalString(entry.database_id, `${at}.database_id`);
    const previewDatabaseId = optionalString(entry.preview_database_id, `${at}.preview_database_id`);
    const migrationsDir = migrationsFolder(
      file,
      optionalString(entry.migrations_dir, `${at}.migrations_dir`),
    );
    return {
      binding: requiredString(entry.binding, `${at}.binding`),
      ...(databaseName !== undefined ? { databaseName } : {}),
      ...(databaseId !== undefined ? { databaseId } : {}),
      ...(previewDatabaseId !== undefined ? { previewDatabaseId } : {}),
      ...(migrationsDir !== undefined ? { migrationsDir } : {}),
    };
  });
  const services = entries("services").map((entry, i): ServiceBinding => {
    const at = `${keyPath("services")}[${i}]`;
    const entrypoint = optionalString(entry.entrypoint, `${at}.entrypoint`);
    const props = optionalObject(entry.props, `${at}.props`);
    return {
      binding: requiredString(entry.binding, `${at}.binding`),
      service: requiredString(entry.service, `${at}.service`),
      ...(entrypoint !== undefined ? { entrypoint } : {}),
      ...(props !== undefined ? { props } : {}),
    };
  });

  const kvNamespaces = entries("kv_namespaces").map((entry, i): KvNamespaceBinding => {
    const at = `${keyPath("kv_namespaces")}[${i}]`;
    const id = optionalString(entry.id, `${at}.id`);
    return { binding: requiredString(entry.binding, `${at}.binding`), ...(id !== undefined ? { id } : {}) };
  });

  const r2Buckets = entries("r2_buckets").map((entry, i): R2BucketBinding => {
    const at = `${keyPath("r2_buckets")}[${i}]`;
    const bucketName = optionalString(entry.bucket_name, `${at}.bucket_name`);
    const previewBucketName = optionalString(entry.preview_bucket_name, `${at}.preview_bucket_name`);
    return {
      binding: requiredString(entry.binding, `${at}.binding`),
      ...(bucketName !== undefined ? { bucketName } : {}),
      ...(previewBucketName !== undefined ? { previewBucketName } : {}),
    };
  });

  const durableObjectsAt = `${keyPath("durable_objects")}.bindings`;
  const durableObjectsField = optionalObject(config.durable_objects, keyPath("durable_objects")) ?? {};
  const durableObjects = entries("bindings", durableObjectsField, durableObjectsAt).map(
    (entry, i): DurableObjectBinding => {
      const at = `${durableObjectsAt}[${i}]`;
      const scriptName = optionalString(entry.script_name, `${at}.script_name`);
      return {
        name: requiredString(entry.name, `${at}.name`),
        className: requiredString(entry.class_name, `${at}.class_name`),
        ...(scriptName !== undefined ? { scriptName } : {}),
      };
    },
  );
  const durableObjectClasses = new Map<string, { sqlite: boolean }>();
  for (const [i, migration] of entries("migrations").entries()) {
    for (const [field, sqlite] of [
      ["new_classes", false],
      ["new_sqlite_classes", true],
    ] as const) {
      const classes: unknown = migration[field] ?? [];
      if (!isStringArray(classes))
        fail(`${keyPath("migrations")}[${i}].${field} must be an array of strings`);
      for (const className of classes) durableObjectClasses.set(className, { sqlite });
    }
  }

  const queuesAt = keyPath("queues");
  const queuesField = optionalObject(config.queues, queuesAt) ?? {};
  const queueProducers = entries("producers", queuesField, `${queuesAt}.producers`).map(
    (entry, i): QueueProducerBinding => {
      const at = `${queuesAt}.producers[${i}]`;
      const deliveryDelay = optionalNumber(entry.delivery_delay, `${at}.delivery_delay`);
      return {
        binding: requiredString(entry.binding, `${at}.binding`),
        queue: requiredString(entry.queue, `${at}.queue`),
        ...(deliveryDelay !== undefined ? { deliveryDelay } : {}),
      };
    },
  );
  const consumerEntries = entries("consumers", queuesField, `${queuesAt}.consumers`);
  const queueConsumers = consumerEntries.flatMap((entry, i): QueueConsumer[] => {
    const at = `${queuesAt}.consumers[${i}]`;
    // An HTTP pull consumer reads the queue over HTTP; Cloudflare never invokes the Worker.
    if (entry.type === "http_pull") return [];
    const queue = requiredString(entry.queue, `${at}.queue`);
    const deadLetterQueue = optionalString(entry.dead_letter_queue, `${at}.dead_letter_queue`);
    if (deadLetterQueue === queue) fail(`${at}.dead_letter_queue must be another queue than ${queue}`);
    const retryDelay = optionalNumber(entry.retry_delay, `${at}.retry_delay`);
    const maxBatchSize = optionalNumber(entry.max_batch_size, `${at}.max_batch_size`) ?? 10;
    if (!Number.isInteger(maxBatchSize) || maxBatchSize < 1 || maxBatchSize > 100) {
      fail(`${at}.max_batch_size must be a whole number from 1 to 100`);
    }
    const maxRetries = optionalNumber(entry.max_retries, `${at}.max_retries`) ?? 3;
    if (!Number.isInteger(maxRetries) || maxRetries > 100)
      fail(`${at}.max_retries must be a whole number up to 100`);
    // null is wrangler's way of asking for the default, autoscaling.
    const maxConcurrency =
      entry.max_concurrency === null
        ? undefined
        : optionalNumber(entry.max_concurrency, `${at}.max_concurrency`);
    if (
      maxConcurrency !== undefined &&
      (!Number.isInteger(maxConcurrency) || maxConcurrency < 1 || maxConcurrency > 250)
    )
      fail(`${at}.max_concurrency must be a whole number from 1 to 250`);
    return [
      {
        queue,
        maxBatchSize,
        maxRetries,
        ...(deadLetterQueue !== undefined ? { deadLetterQueue } : {}),
        ...(retryDelay !== undefined ? { retryDelay } : {}),
        ...(maxConcurrency !== undefined ? { maxConcurrency } : {}),
      },
    ];
  });

  const unsupported: { binding: string; field: string }[] = [];
  for (const [field, key] of Object.entries(UNSUPPORTED_LISTS)) {
    const [outer, inner] = field.split(".") as [string, string | undefined];
    const at = inner === undefined ? keyPath(outer) : `${keyPath(outer)}.${inner}`;
    const within = inner === undefined ? config : (optionalObject(config[outer], keyPath(outer)) ?? {});
    for (const [i, entry] of entries(inner ?? outer, within, at).entries()) {
      const binding = entry[key];
      if (typeof binding === "string") unsupported.push({ binding, field: `${at}[${i}]` });
    }
  }
  for (const field of UNSUPPORTED_SINGLES) {
    const binding = optionalObject(config[field], keyPath(field))?.binding;
    if (typeof binding === "string") unsupported.push({ binding, field: keyPath(field) });
  }

  const triggers = optionalObject(config.triggers, keyPath("triggers")) ?? {};
  const crons: unknown = triggers.crons ?? [];
  if (!isStringArray(crons)) fail(`${keyPath("triggers")}.crons must be an array of strings`);

  // A Worker's env has one value per name, so two bindings of one name cannot both be honoured.
  const declaredAt = new Map<string, string>();
  const declare = (binding: string, at: string) => {
    const earlier = declaredAt.get(binding);
    if (earlier) fail(`binding ${binding} is declared twice: ${earlier} and ${at}`);
    declaredAt.set(binding, at);
  };
  for (const [i, d1] of d1Databases.entries()) declare(d1.binding, `${keyPath("d1_databases")}[${i}]`);
  for (const [i, service] of services.entries()) declare(service.binding, `${keyPath("services")}[${i}]`);
  for (const key of Object.keys(vars)) declare(key, `${keyPath("vars")}.${key}`);
  for (const [i, kv] of kvNamespaces.entries()) declare(kv.binding, `${keyPath("kv_namespaces")}[${i}]`);
  for (const [i, r2] of r2Buckets.entries()) declare(r2.binding, `${keyPath("r2_buckets")}[${i}]`);
  for (const [i, object] of durableObjects.entries()) declare(object.name, `${durableObjectsAt}[${i}]`);
  for (const [i, producer] of queueProducers.entries())
    declare(producer.binding, `${queuesAt}.producers[${i}]`);
  for (const { binding, field } of unsupported) declare(binding, field);

  return {
    file,
    ...(env !== undefined ? { env } : {}),
    name,
    ...(main !== undefined ? { main: resolve(dirname(file), main) } : {}),
    ...(buildCommand !== undefined ? { buildCommand } : {}),
    ...(compatibilityDate !== undefined ? { compatibilityDate } : {}),
    compatibilityFlags: flags,
    vars,
    ...(define !== undefined ? { define: define as Record<string, string> } : {}),
    ...(rules !== undefined ? { rules } : {}),
    ...(tsconfig !== undefined ? { tsconfig: resolve(dirname(file), tsconfig) } : {}),
    ...(alias !== undefined ? { alias: alias as Record<string, string> } : {}),
    ...(keepNames !== undefined ? { keepNames } : {}),
    ...(jsxFactory !== undefined ? { jsxFactory } : {}),
    ...(jsxFragment !== undefined ? { jsxFragment } : {}),
    ...(required !== undefined ? { requiredSecrets: required } : {}),
    d1Databases,
    services,
    kvNamespaces,
    r2Buckets,
    durableObjects,
    durableObjectClasses,
    queueProducers,
    queueConsumers,
    crons,
    unsupported,
    elsewhere: declaredElsewhere(raw, env, declaredAt),
  };
}

/** The keys that name a binding, per binding kind eutaxy simulates (`outer.inner` for a list in an object). */
const SIMULATED_LISTS = {
  d1_databases: "binding",
  kv_namespaces: "binding",
  r2_buckets: "binding",
  services: "binding",
  "durable_objects.bindings": "name",
  "queues.producers": "binding",
} as const;

/**
 * The bindings and vars the other parts of `config` declare (its top level when `env` is read,
 * its other environments) and the part read does not, with the parts that declare each. Read
 * loosely: those parts are not checked, as `wrangler --env` checks only the one it reads.
 */
function declaredElsewhere(
  config: Fields,
  env: string | undefined,
  declared: ReadonlyMap<string, string>,
): Map<string, string[]> {
  const parts: [string, unknown][] = env === undefined ? [] : [["the top level", config]];
  if (isObject(config.env)) {
    for (const [name, part] of Object.entries(config.env))
      if (name !== env) parts.push([`env.${name}`, part]);
  }
  const elsewhere = new Map<string, string[]>();
  const note = (binding: unknown, where: string) => {
    if (typeof binding !== "string" || declared.has(binding)) return;
    const places = elsewhere.get(binding) ?? [];
    if (!places.includes(where)) places.push(where);
    elsewhere.set(binding, places);
  };
  for (const [where, part] of parts) {
    if (!isObject(part)) continue;
    if (isObject(part.vars)) for (const key of Object.keys(part.vars)) note(key, where);
    for (const [field, key] of Object.entries(SIMULATED_LISTS)) {
      const [outer, inner] = field.split(".") as [string, string | undefined];
      const holder = inner === undefined ? part : part[outer];
      const list = isObject(holder) ? holder[inner ?? outer] : undefined;
      if (Array.isArray(list)) for (const entry of list) if (isObject(entry)) note(entry[key], where);
    }
  }
  return elsewhere;
}

/** A value for a Worker's env from a file of local secrets, and the file it comes from. */
export interface DevVar {
  readonly value: string;
  readonly file: string;
}

/**
 * What dotenv-expand, which wrangler runs over `.env` files (not over `.dev.vars`), replaces:
 * `${NAME}` (with its `:-` defaults), `$NAME`, and `\$` for a `$`.
 */
const EXPANDED = /\$\{[^{}]+\}|\$[A-Za-z_]|\\\$/;

/**
 * The local secrets `wrangler dev` gives a Worker besides its vars, read from the folder of its
 * config as wrangler 4.86 reads them (`getVarsForDev`): `.dev.vars.<env>` when an environment is
 * selected and that file exists, else `.dev.vars`; when neither exists, `.env`, `.env.local`,
 * `.env.<env>` and `.env.<env>.local`, each over the ones before. The files are dotenv text,
 * their values strings. A `.env` value wrangler would expand is refused: eutaxy does not expand,
 * and the Worker would see another value than under wrangler. With `secrets.required`, only the
 * keys it lists.
 */
export function readDevVars(config: WorkerConfig): Map<string, DevVar> {
  const read = readLocalSecrets(config);
  const required = config.requiredSecrets;
  if (required !== undefined) for (const key of read.keys()) if (!required.includes(key)) read.delete(key);
  return read;
}

function readLocalSecrets(config: WorkerConfig): Map<string, DevVar> {
  const dir = dirname(config.file);
  const env = config.env;
  const existing = (names: readonly string[]) => names.map((name) => join(dir, name)).filter(isFile);
  const [devVars] = existing(env !== undefined ? [`.dev.vars.${env}`, ".dev.vars"] : [".dev.vars"]);
  if (devVars) return readDotenv([devVars]);
  const read = readDotenv(
    existing([".env", ".env.local", ...(env !== undefined ? [`.env.${env}`, `.env.${env}.local`] : [])]),
  );
  for (const [key, { value, file }] of read) {
    if (EXPANDED.test(value)) {
      throw new InputError(
        file,
        `${key}: wrangler expands the $ in this value (dotenv-expand), which eutaxy does not; write the value it should have in .dev.vars, which wrangler then reads instead of .env files`,
      );
    }
  }
  return read;
}

/**
 * The values of dotenv `files`, each file's over the ones before, read by dotenv's parser as
 * wrangler reads them (its `KEY: value` lines, quotes, comments and multi-line values).
 */
function readDotenv(files: readonly string[]): Map<string, DevVar> {
  const read = new Map<string, DevVar>();
  for (const file of files) {
    for (const [key, value] of Object.entries(parseDotenv(readFileSync(file, "utf8")))) {
      read.set(key, { value, file });
    }
  }
  return read;
}
