/**
 * The world a scenario describes: the Worker under check, the callees that run beside it, the
 * scripted services, and every binding each Worker's env holds, resolved to what it reaches
 * and to the engine store that keeps its state. Built once per check; every problem in it is
 * bad input, reported with the file it is in.
 */

import type {
  Driver,
  KvEntriesStep,
  OutboundHandlers,
  R2ObjectsStep,
  Scenario,
  ServiceHandlers,
  WorkerFiles,
} from "../cloudflare.ts";
import { InputError, shown, shownConfig } from "../errors.ts";
import { bundleWorker, type WorkerModule } from "../load/bundle.ts";
import type { LoadedScenario } from "../load/scenario.ts";
import type {
  D1DatabaseBinding,
  KvNamespaceBinding,
  QueueConsumer,
  R2BucketBinding,
  WorkerConfig,
} from "../load/wrangler.ts";
import { readDevVars, readWranglerConfig } from "../load/wrangler.ts";
import { nodejsCompat } from "./compatibility.ts";
import { environmentHintFor } from "./environment-hint.ts";
import {
  KEY_BYTES_MAX as KV_KEY_BYTES_MAX,
  METADATA_BYTES_MAX as KV_METADATA_BYTES_MAX,
  metadataJson,
  utf8Length,
} from "./kv.ts";
import { KEY_BYTES_MAX as R2_KEY_BYTES_MAX } from "./r2.ts";
import { bindingNames, d1Store, d1StoreOf, kvStoreOf, ownerOf, r2StoreOf } from "./store-names.ts";

export type ServiceTarget =
  | {
      readonly kind: "worker";
      readonly worker: SimWorker;
      readonly entrypoint: string | undefined;
      readonly props: Readonly<Record<string, unknown>>;
    }
  | { readonly kind: "scripted"; readonly handlers: ServiceHandlers };

/** A Durable Object class and where its objects' storage lives in the engine. */
export interface DurableObjectNamespace {
  /** The Worker that defines the class. */
  readonly worker: SimWorker;
  readonly className: string;
  /** SQLite-backed (`new_sqlite_classes`): `ctx.storage.sql` is available. */
  readonly sqlite: boolean;
  /** Prefix of the engine stores of its objects: `do:<worker prefix><class>:<id>`. */
  readonly storePrefix: string;
}

/**
 * What one env name of a Worker is bound to. Vars are plain values and not listed here. A D1, KV
 * or R2 binding's `store` is the engine store of the database, namespace or bucket it reaches, named after
 * the first binding of the scenario that reaches it (see `shareStores`).
 */
export type BindingSpec =
  | { readonly kind: "d1"; readonly name: string; readonly store: string }
  | { readonly kind: "service"; readonly name: string; readonly target: ServiceTarget }
  | { readonly kind: "kv"; readonly name: string; readonly store: string }
  | { readonly kind: "r2"; readonly name: string; readonly store: string }
  | {
      readonly kind: "durableObject";
      readonly name: string;
      /** The binding as the scenario names it, as effects are labeled: `meter/COUNTERS` for a callee's. */
      readonly label: string;
      readonly namespace: DurableObjectNamespace;
    }
  | { readonly kind: "queue"; readonly name: string; readonly queue: string }
  | { readonly kind: "unsupported"; readonly name: string; readonly field: string; readonly file: string };

export interface SimWorker {
  /** The Worker's name from its wrangler config; reports and namespaces use it. */
  readonly name: string;
  /** `""` for the Worker under check, `"<name>/"` for a callee: its bindings' namespace. */
  readonly prefix: string;
  readonly entry: string;
  readonly config: WorkerConfig | undefined;
  readonly module: WorkerModule;
  /** Vars and secrets: plain values in env. */
  readonly vars: Record<string, unknown>;
  /** Env name → binding, in the order the config declares them. */
  readonly bindings: Map<string, BindingSpec>;
}

/** A queue of the account: who consumes it, with the consumer's settings. */
export interface SimQueue {
  readonly name: string;
  /** The engine store holding its messages. */
  readonly store: string;
  readonly consumer: { readonly worker: SimWorker; readonly settings: QueueConsumer } | undefined;
}

export interface World {
  readonly scenario: Scenario;
  readonly file: string;
  readonly main: SimWorker;
  readonly workers: readonly SimWorker[];
  /**
   * Every D1 database's store, once each: named after the first binding that reaches it (`DB`,
   * `payments/DB`); other bindings of the same database use that store.
   */
  readonly databases: readonly string[];
  /** Every KV namespace's store, once each (`kv:CACHE`), named as a database's is. */
  readonly kvStores: readonly string[];
  /** Every R2 bucket's store, once each (`r2:BUCKET`), named as a database's is. */
  readonly r2Stores: readonly string[];
  readonly queues: ReadonlyMap<string, SimQueue>;
  /** Scripted answers for outbound `fetch`, by URL prefix. */
  readonly outbound: readonly OutboundHandlers[];
}

async function loadWorker(
  { entry, config: configPath, env }: WorkerFiles,
  prefix: (name: string) => string,
): Promise<SimWorker> {
  const config = configPath ? readWranglerConfig(configPath, env) : undefined;
  const name = config?.name ?? "worker";
  const p = prefix(name);
  const module = await bundleWorker(entry, config);
  if (config) nodeCompatible(config, module);
  const bindings = new Map<string, BindingSpec>();
  for (const d of config?.d1Databases ?? [])
    bindings.set(d.binding, { kind: "d1", name: d.binding, store: `${p}${d.binding}` });
  for (const k of config?.kvNamespaces ?? []) {
    bindings.set(k.binding, { kind: "kv", name: k.binding, store: `kv:${p}${k.binding}` });
  }
  for (const r of config?.r2Buckets ?? []) {
    bindings.set(r.binding, { kind: "r2", name: r.binding, store: `r2:${p}${r.binding}` });
  }
  for (const q of config?.queueProducers ?? []) {
    bindings.set(q.binding, { kind: "queue", name: q.binding, queue: q.queue });
  }
  for (const u of config?.unsupported ?? []) {
    bindings.set(u.binding, {
      kind: "unsupported",
      name: u.binding,
      field: u.field,
      file: config?.file ?? entry,
    });
  }
  return { name, prefix: p, entry, config, module, vars: config ? varsOf(config, bindings) : {}, bindings };
}

/**
 * A Worker's vars, and over them the local secrets `wrangler dev` reads from beside its config
 * (`.dev.vars`), as wrangler gives them; `secrets()` steps go over both later.
 */
function varsOf(config: WorkerConfig, bindings: ReadonlyMap<string, BindingSpec>): Record<string, unknown> {
  // Service and Durable Object bindings are bound once every Worker is loaded; their names are known now.
  const bound = new Set([
    ...bindings.keys(),
    ...config.services.map((s) => s.binding),
    ...config.durableObjects.map((d) => d.name),
  ]);
  const vars: Record<string, unknown> = { ...config.vars };
  for (const [key, { value, file }] of readDevVars(config)) {
    if (bound.has(key)) {
      throw new InputError(
        file,
        `${key} has the name of a binding of ${config.name} (${shownConfig(config)})`,
      );
    }
    vars[key] = value;
  }
  return vars;
}

/**
 * Cloudflare provides `node:*` modules only to a Worker with Node.js compatibility (the
 * `nodejs_compat` flag, or a compatibility date that turns it on; `nodejs_als` gives
 * `node:async_hooks` alone): without it, workerd refuses to load the
 * Worker (`No such module "node:crypto"`), so eutaxy must not run it as if it loaded.
 */
function nodeCompatible(config: WorkerConfig, module: WorkerModule): void {
  if (nodejsCompat(config)) return;
  const flags = config.compatibilityFlags;
  const missing = module.nodeImports.filter(
    (m) => !(m === "node:async_hooks" && flags.includes("nodejs_als")),
  );
  if (missing.length === 0) return;
  const optedOut = flags.includes("no_nodejs_compat");
  const where = config.env === undefined ? "this config" : `its environment ${config.env}`;
  const why = optedOut
    ? `${where} turns it off with no_nodejs_compat`
    : `${where} does not set it (add "nodejs_compat" to compatibility_flags)`;
  throw new InputError(
    config.file,
    `the Worker ${shown(module.entry)} imports ${missing.join(", ")}, which Cloudflare provides only with the nodejs_compat compatibility flag (on by default from the 2026-08-04 compatibility date), and ${why}`,
  );
}

function describeServices(worker: SimWorker): string {
  const names = worker.config?.services.map((s) => s.binding) ?? [];
  return names.length ? `its service bindings are ${names.join(", ")}` : "it has no service bindings";
}

export async function buildWorld(loaded: LoadedScenario): Promise<World> {
  const { scenario, file } = loaded;
  const main = await loadWorker(scenario.worker, () => "");
  const workers: SimWorker[] = [main];
  const outbound: OutboundHandlers[] = [];
  /** The Workers `consumer()` added, with the setup step that added each. */
  const consumers: { readonly worker: SimWorker; readonly step: number }[] = [];

  for (const [i, step] of (scenario.setup ?? []).entries()) {
    if (step.kind === "d1Schema" || step.kind === "kvEntries" || step.kind === "r2Objects") continue;
    if (step.kind === "outbound") {
      outbound.push(step.handlers);
      continue;
    }
    if (step.kind === "secrets") continue;
    if (step.kind === "consumer") {
      // A Worker of its own, beside the scenario's: its bindings are named after it.
      const worker = await loadWorker(step, (name) => `${name}/`);
      const same = workers.find((w) => w.prefix === worker.prefix || w.name === worker.name);
      if (same && same.entry === worker.entry && same !== main) {
        throw new InputError(
          file,
          `setup[${i}]: ${worker.name} is already in the scenario as a callee, whose queue consumers run as they are; drop its consumer()`,
        );
      }
      if (same) {
        throw new InputError(file, `setup[${i}]: ${twoNamed(worker, same, step.kind)}`);
      }
      workers.push(worker);
      consumers.push({ worker, step: i });
      continue;
    }
    const found = ownerOf(workers, step.binding);
    if (!found) {
      throw new InputError(file, `setup[${i}]: no Worker in the scenario is named by "${step.binding}"`);
    }
    const [owner, binding] = found;
    const declared = owner.config?.services.find((s) => s.binding === binding);
    const where = owner.config ? shownConfig(owner.config) : shown(owner.entry);
    if (owner.config && !declared) {
      throw new InputError(
        file,
        `setup[${i}]: ${step.kind}("${step.binding}"): ${where} has no service binding ${binding}; ${describeServices(owner)}`,
      );
    }
    if (owner.bindings.has(binding)) {
      throw new InputError(file, `setup[${i}]: service binding ${step.binding} is given twice`);
    }
    if (step.kind === "service") {
      owner.bindings.set(binding, {
        kind: "service",
        name: binding,
        target: { kind: "scripted", handlers: step.handlers },
      });
      continue;
    }
    let callee = await loadWorker(step, (name) => `${owner.prefix}${name}/`);
    // On Cloudflare the binding reaches the Worker its `service` names; a callee of another name
    // (another environment's, say) is a pairing production never has.
    if (declared && callee.config && declared.service !== callee.name) {
      throw new InputError(
        file,
        `setup[${i}]: ${step.kind}("${step.binding}") runs Worker ${callee.name} (${shownConfig(callee.config)}), but ${shown(owner.config?.file ?? owner.entry)} binds ${binding} to service ${declared.service}, the Worker the binding reaches on Cloudflare`,
      );
    }
    const same = workers.find((w) => w.prefix === callee.prefix);
    if (same && same.entry !== callee.entry) {
      throw new InputError(file, `setup[${i}]: ${twoNamed(callee, same, step.kind)}`);
    }
    // Two bindings to one Worker (two of its entrypoints, say) reach the same Worker.
    if (same) callee = same;
    else workers.push(callee);
    owner.bindings.set(binding, {
      kind: "service",
      name: binding,
      target: {
        kind: "worker",
        worker: callee,
        entrypoint: declared?.entrypoint,
        props: declared?.props ?? {},
      },
    });
  }

  // Secrets go in after every callee is loaded, so a step may name a callee declared later.
  for (const [i, step] of (scenario.setup ?? []).entries()) {
    if (step.kind !== "secrets") continue;
    const owner = step.worker === undefined ? main : workers.find((w) => w.name === step.worker);
    if (!owner)
      throw new InputError(
        file,
        `setup[${i}]: secrets for ${step.worker}, but no Worker of the scenario has that name`,
      );
    for (const [key, value] of Object.entries(step.values)) {
      if (owner.bindings.has(key))
        throw new InputError(file, `setup[${i}]: secret ${key} has the name of a binding of ${owner.name}`);
      owner.vars[key] = value;
    }
  }

  for (const worker of workers) {
    for (const s of worker.config?.services ?? []) {
      // A binding to a service another binding of this Worker already reaches as a callee
      // (an entrypoint of the same Worker) needs no callee() of its own.
      const reached = workers.find((w) => w !== worker && w.prefix === `${worker.prefix}${s.service}/`);
      if (!worker.bindings.has(s.binding) && reached) {
        worker.bindings.set(s.binding, {
          kind: "service",
          name: s.binding,
          target: { kind: "worker", worker: reached, entrypoint: s.entrypoint, props: s.props ?? {} },
        });
      }
      if (!worker.bindings.has(s.binding)) {
        const name = `${worker.prefix}${s.binding}`;
        throw new InputError(
          file,
          `${worker.config ? shownConfig(worker.config) : shown(worker.entry)} binds service ${s.binding} (${s.service}), but the scenario gives neither callee("${name}", …) nor service("${name}", …)`,
        );
      }
    }
    bindDurableObjects(worker, workers);
  }

  const shared = shareStores(workers);
  const queues = collectQueues(workers);
  for (const { worker, step } of consumers) fedConsumer(file, step, worker, workers, scenario);
  const storesOf = (kind: "d1" | "kv" | "r2") => [
    ...new Set(
      workers.flatMap((w) => [...w.bindings.values()].flatMap((b) => (b.kind === kind ? [b.store] : []))),
    ),
  ];
  const databases = storesOf("d1");
  const kvStores = storesOf("kv");
  const r2Stores = storesOf("r2");
  const knownDb = (db: string, what: string) => {
    if (d1StoreOf(workers, db) === undefined) {
      const names = bindingNames(workers, "d1");
      const known = names.length ? `the D1 bindings are ${names.join(", ")}` : "no Worker binds D1";
      const hint = environmentHintFor(workers, db);
      throw new InputError(
        file,
        `${what} names D1 binding "${db}", but no Worker in the scenario binds it; ${known}${hint === undefined ? "" : ` (${hint})`}`,
      );
    }
  };
  for (const [i, step] of (scenario.setup ?? []).entries()) {
    if (step.kind === "d1Schema") knownDb(step.db, `setup[${i}]: d1Schema("${step.db}")`);
    if (step.kind === "kvEntries")
      kvEntriesOf(file, `setup[${i}]: kvEntries("${step.namespace}")`, step, workers);
    if (step.kind === "r2Objects")
      r2ObjectsOf(file, `setup[${i}]: r2Objects("${step.bucket}")`, step, workers);
  }
  setUpOnce(file, scenario, workers, shared);
  for (const inv of scenario.invariants) {
    if (inv.kind === "unique") knownDb(inv.rows.db, `invariant ${inv.name}`);
    if (inv.kind === "query" || inv.kind === "conserved") knownDb(inv.db, `invariant ${inv.name}`);
  }
  declaredCrons(scenario, file, main);

  return { scenario, file, main, workers, databases, kvStores, r2Stores, queues, outbound };
}

/**
 * A `kvEntries` step names a KV binding of the scenario's Workers, and writes what KV would take
 * from `put`: keys of 1 to 512 bytes other than `.` and `..`, metadata of JSON up to 1024 bytes.
 */
function kvEntriesOf(file: string, what: string, step: KvEntriesStep, workers: readonly SimWorker[]): void {
  if (kvStoreOf(workers, step.namespace) === undefined) {
    const names = bindingNames(workers, "kv");
    const known = names.length ? `the KV bindings are ${names.join(", ")}` : "no Worker binds KV";
    const hint = environmentHintFor(workers, step.namespace);
    throw new InputError(
      file,
      `${what} names KV binding "${step.namespace}", but no Worker in the scenario binds it; ${known}${hint === undefined ? "" : ` (${hint})`}`,
    );
  }
  for (const [key, entry] of Object.entries(step.entries)) {
    const bytes = utf8Length(key);
    if (key === "" || key === "." || key === ".." || bytes > KV_KEY_BYTES_MAX) {
      const why =
        bytes > KV_KEY_BYTES_MAX
          ? `is ${bytes} bytes long, over KV's ${KV_KEY_BYTES_MAX}`
          : "is not a key KV accepts";
      throw new InputError(file, `${what}: key ${JSON.stringify(key.slice(0, 40))} ${why}`);
    }
    if (typeof entry === "string") continue;
    let json: string | null | undefined;
    try {
      json = metadataJson(entry.metadata);
    } catch {
      // A cycle or a BigInt: what `put` would throw on.
      json = undefined;
    }
    if (json === undefined || (json !== null && utf8Length(json) > KV_METADATA_BYTES_MAX)) {
      throw new InputError(
        file,
        `${what}: the metadata of key ${JSON.stringify(key)} must serialize to JSON of at most ${KV_METADATA_BYTES_MAX} bytes`,
      );
    }
  }
}

/** An `r2Objects` step names an R2 binding of the scenario's Workers, and keys R2 takes (at most 1024 bytes). */
function r2ObjectsOf(file: string, what: string, step: R2ObjectsStep, workers: readonly SimWorker[]): void {
  if (r2StoreOf(workers, step.bucket) === undefined) {
    const names = bindingNames(workers, "r2");
    const known = names.length ? `the R2 bindings are ${names.join(", ")}` : "no Worker binds R2";
    const hint = environmentHintFor(workers, step.bucket);
    throw new InputError(
      file,
      `${what} names R2 binding "${step.bucket}", but no Worker in the scenario binds it; ${known}${hint === undefined ? "" : ` (${hint})`}`,
    );
  }
  for (const key of Object.keys(step.objects)) {
    const bytes = utf8Length(key);
    if (bytes > R2_KEY_BYTES_MAX) {
      throw new InputError(
        file,
        `${what}: key ${JSON.stringify(key.slice(0, 40))} is ${bytes} bytes long, over R2's ${R2_KEY_BYTES_MAX}`,
      );
    }
  }
}

/**
 * A `consumer()` Worker is there for a queue the scenario sends to; one that consumes no such
 * queue would never run, and every invariant about what it does would hold vacuously.
 */
function fedConsumer(
  file: string,
  step: number,
  consumer: SimWorker,
  workers: readonly SimWorker[],
  scenario: Scenario,
): void {
  const sent = new Set<string>();
  for (const worker of workers) {
    for (const binding of worker.bindings.values()) if (binding.kind === "queue") sent.add(binding.queue);
    // The platform sends to a dead letter queue what another consumer gave up on.
    for (const settings of worker.config?.queueConsumers ?? [])
      if (settings.deadLetterQueue) sent.add(settings.deadLetterQueue);
  }
  const drivers = Array.isArray(scenario.drive) ? scenario.drive : [scenario.drive as Driver];
  for (const driver of drivers) if (driver.kind === "queue") sent.add(driver.queue);
  const consumed = consumer.config?.queueConsumers.map((c) => c.queue) ?? [];
  if (consumed.some((queue) => sent.has(queue))) return;
  const where = consumer.config ? shownConfig(consumer.config) : shown(consumer.entry);
  const what = consumed.length
    ? `consumes ${consumed.join(", ")}, which nothing in the scenario sends to`
    : "consumes no queue (no entry of its queues.consumers has Cloudflare push batches to it)";
  const known = sent.size
    ? `the queues sent to are ${[...sent].join(", ")}`
    : "nothing in the scenario sends to a queue";
  throw new InputError(file, `setup[${step}]: consumer ${consumer.name} (${where}) ${what}; ${known}`);
}

/** A cron driver ticks only a cron the Worker declares: Cloudflare runs no other. */
function declaredCrons(scenario: Scenario, file: string, main: SimWorker): void {
  const config = main.config;
  if (!config) return;
  const drivers = Array.isArray(scenario.drive) ? scenario.drive : [scenario.drive as Driver];
  for (const driver of drivers) {
    if (driver.kind !== "cron" || config.crons.includes(driver.cron)) continue;
    const declared = config.crons.length ? config.crons.map((c) => `"${c}"`).join(", ") : "none";
    throw new InputError(
      file,
      `drive: cron("${driver.cron}") is not among the crons ${shownConfig(config)} declares (triggers.crons: ${declared}); Cloudflare runs only those`,
    );
  }
}

/** One database or namespace that several bindings reach, for messages. */
interface SharedStore {
  /** What makes them one: `database_id f1111111-…`, as `StoreKey.why`. */
  readonly why: string;
}

/** What a binding of a database or namespace is keyed by, as wrangler dev keys it. */
interface StoreKey {
  readonly key: string;
  /** What the bindings that share it have, for messages: `database_id f1111111-…`. */
  readonly why: string;
  /** The config field a user gives each database its own value in. */
  readonly field: string;
}

/**
 * Which D1 database a binding reaches. wrangler dev gives Miniflare a local database per
 * `preview_database_id ?? database_id`, and the binding's name when there is neither
 * (workers-sdk, packages/wrangler/src/dev/miniflare: `d1DatabaseEntry`); Miniflare keeps one
 * SQLite database per such key, which every Worker of the session binding it shares. eutaxy
 * keys by `database_id` first: with both ids, `preview_database_id` is the database `wrangler
 * dev` develops against, and `database_id` the one the deployed Worker reaches, which is what
 * the check is about. Without either, two Workers' `DB`s are one database in wrangler dev, and so
 * here. `database_name` identifies nothing: wrangler's `d1` commands only look the id up by it.
 */
function d1Key(d: D1DatabaseBinding): StoreKey {
  return idKey("database_id", d.databaseId, "preview_database_id", d.previewDatabaseId, d.binding);
}

/**
 * The key of a store a binding names by `field` (the one the deployed Worker reaches), else by
 * `previewField`, else by its binding name, as `wrangler dev` keys D1 databases and R2 buckets.
 */
function idKey(
  field: string,
  id: string | undefined,
  previewField: string,
  previewId: string | undefined,
  binding: string,
): StoreKey {
  if (id !== undefined) return { key: id, why: `${field} ${id}`, field };
  if (previewId !== undefined) {
    return { key: previewId, why: `${previewField} ${previewId} and no ${field}`, field };
  }
  return {
    key: binding,
    why: `no ${field}, so wrangler dev keys both by the binding name ${binding}`,
    field,
  };
}

/** Which KV namespace a binding reaches: its `id`, else its binding name (`kvNamespaceEntry`). */
function kvKey(k: KvNamespaceBinding): StoreKey {
  if (k.id !== undefined) return { key: k.id, why: `id ${k.id}`, field: "id" };
  return {
    key: k.binding,
    why: `no id, so wrangler dev keys both by the binding name ${k.binding}`,
    field: "id",
  };
}

/**
 * Which R2 bucket a binding reaches: its `bucket_name`, else its `preview_bucket_name`, else its
 * binding name, as `d1Key` keys a database (`bucket_name` is the bucket the deployed Worker
 * reaches, which is what the check is about).
 */
function r2Key(r: R2BucketBinding): StoreKey {
  return idKey("bucket_name", r.bucketName, "preview_bucket_name", r.previewBucketName, r.binding);
}

/**
 * Bindings that reach one D1 database, one KV namespace or one R2 bucket (`d1Key`, `kvKey`,
 * `r2Key`) share one engine
 * store, as they share it on Cloudflare: a row one Worker inserts is there for the other's next
 * query, and their statements touch the same tables, so partial-order reduction orders them
 * against each other. The store is named after the first of those bindings in the scenario's
 * order: the scenario's Worker first, then the Workers setup adds, each binding in its config's
 * order (`DB` before `admin/DB`). Two D1 bindings of one id under different `database_name`s
 * are bad input: one id is one database, so one of the names is wrong, and most likely the id
 * was copied from the other Worker's config. Queues are shared by name already
 * (`collectQueues`), and a Durable Object namespace bound with `script_name` by the Worker that
 * defines its class (`bindDurableObjects`).
 */
function shareStores(workers: readonly SimWorker[]): Map<string, SharedStore> {
  const first = new Map<
    string,
    { readonly store: string; readonly worker: SimWorker; readonly d1?: D1DatabaseBinding }
  >();
  const shared = new Map<string, SharedStore>();
  const share = (
    worker: SimWorker,
    kind: "d1" | "kv" | "r2",
    name: string,
    key: StoreKey,
    d1?: D1DatabaseBinding,
  ) => {
    const spec = worker.bindings.get(name);
    if (spec?.kind !== kind) return;
    const known = first.get(`${kind}:${key.key}`);
    if (!known) {
      first.set(`${kind}:${key.key}`, { store: spec.store, worker, ...(d1 ? { d1 } : {}) });
      return;
    }
    const names = [known.d1?.databaseName, d1?.databaseName];
    if (d1 && known.d1 && names[0] !== undefined && names[1] !== undefined && names[0] !== names[1]) {
      const config = worker.config as WorkerConfig;
      const other = known.worker.config as WorkerConfig;
      throw new InputError(
        config.file,
        `d1_databases binds ${name} (database_name "${names[1]}") to the D1 database ${known.worker.name} binds as ${known.d1.binding} (database_name "${names[0]}", ${shownConfig(other)}): both have ${key.why}, and one ${key.field} is one database, shared by every Worker that binds it; give each database its own ${key.field}, or both bindings the same database_name`,
      );
    }
    worker.bindings.set(name, { ...spec, store: known.store });
    shared.set(known.store, { why: key.why });
  };
  for (const worker of workers) {
    for (const d of worker.config?.d1Databases ?? []) share(worker, "d1", d.binding, d1Key(d), d);
    for (const k of worker.config?.kvNamespaces ?? []) share(worker, "kv", k.binding, kvKey(k));
    for (const r of worker.config?.r2Buckets ?? []) share(worker, "r2", r.binding, r2Key(r));
  }
  return shared;
}

/**
 * A database is set up through one of its names. `d1Schema("admin/DB", …)` after
 * `d1Schema("DB", …)` of the same database would apply a schema to it a second time (`table
 * users already exists`), and a scenario that does so was written taking them for two
 * databases; several files through one name are applied in order, as always.
 */
function setUpOnce(
  file: string,
  scenario: Scenario,
  workers: readonly SimWorker[],
  shared: ReadonlyMap<string, SharedStore>,
): void {
  const setUp = new Map<string, { readonly db: string; readonly step: number }>();
  for (const [i, step] of (scenario.setup ?? []).entries()) {
    if (step.kind !== "d1Schema") continue;
    const store = d1Store(workers, step.db);
    const earlier = setUp.get(store);
    if (!earlier) setUp.set(store, { db: step.db, step: i });
    if (!earlier || earlier.db === step.db) continue;
    const why = shared.get(store)?.why ?? "the same database";
    throw new InputError(
      file,
      `setup[${i}]: d1Schema("${step.db}", "${shown(step.file)}") sets up the D1 database that setup[${earlier.step}] set up as ${earlier.db}: ${earlier.db} and ${step.db} are one database (${why}), shared as on Cloudflare; apply each schema to it once, through one of its names (d1Schema("${earlier.db}", …))`,
    );
  }
}

/** Binds each Durable Object namespace of `worker` to the Worker that defines its class. */
function bindDurableObjects(worker: SimWorker, workers: readonly SimWorker[]): void {
  for (const binding of worker.config?.durableObjects ?? []) {
    const home = binding.scriptName ? workers.find((w) => w.name === binding.scriptName) : worker;
    const where = shown(worker.config?.file ?? worker.entry);
    if (!home) {
      throw new InputError(
        where,
        `durable_objects binding ${binding.name} names script ${binding.scriptName}, which is not a Worker of the scenario (run it with callee())`,
      );
    }
    const declared = home.config?.durableObjectClasses.get(binding.className);
    worker.bindings.set(binding.name, {
      kind: "durableObject",
      name: binding.name,
      label: `${worker.prefix}${binding.name}`,
      namespace: {
        worker: home,
        className: binding.className,
        // Without a migration entry the class is taken as SQLite-backed, the default for new classes.
        sqlite: declared?.sqlite ?? true,
        storePrefix: `do:${home.prefix}${binding.className}:`,
      },
    });
  }
}

/** Queues are the account's: a producer in one Worker reaches the consumer in another. */
function collectQueues(workers: readonly SimWorker[]): Map<string, SimQueue> {
  const queues = new Map<string, SimQueue>();
  const add = (name: string, consumer: SimQueue["consumer"]) => {
    const known = queues.get(name);
    if (known?.consumer && consumer) {
      throw new InputError(
        shown(consumer.worker.config?.file ?? consumer.worker.entry),
        `queue ${name} has two consumers (${known.consumer.worker.name} and ${consumer.worker.name}); Cloudflare allows one`,
      );
    }
    queues.set(name, { name, store: `queue:${name}`, consumer: consumer ?? known?.consumer });
  };
  for (const worker of workers) {
    for (const settings of worker.config?.queueConsumers ?? []) add(settings.queue, { worker, settings });
    for (const binding of worker.bindings.values())
      if (binding.kind === "queue" && !queues.has(binding.queue)) add(binding.queue, undefined);
  }
  for (const queue of [...queues.values()]) {
    const dlq = queue.consumer?.settings.deadLetterQueue;
    if (dlq && !queues.has(dlq)) add(dlq, undefined);
  }
  return queues;
}

/**
 * Two Workers of one name, each with where its name came from: most often a `consumer()` or
 * `callee()` given an entry alone, whose config wrangler's search found above it, the other
 * Worker's.
 */
function twoNamed(added: SimWorker, present: SimWorker, step: string): string {
  const named = (worker: SimWorker) =>
    worker.config ? `${shown(worker.entry)}, named in ${shownConfig(worker.config)}` : shown(worker.entry);
  const shared = added.config && present.config && added.config.file === present.config.file;
  return (
    `two Workers in the scenario are named ${added.name}: ${named(added)}, and ${named(present)}` +
    (shared ? `; give ${step}() the config its Worker is deployed with: ${step}({ entry, config })` : "")
  );
}
