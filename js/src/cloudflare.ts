/**
 * `eutaxy/cloudflare`: the scenario API. A scenario (`*.sim.ts`) names the Worker under check,
 * what runs beside it (callees, scripted services, D1 schemas), how clients drive it, the
 * invariants that must hold over the final state, and the bounds of the search.
 *
 * Every helper here returns plain data; `eutaxy check` reads it, resolves the paths against the
 * scenario file's folder and reports a bad field with the scenario's file name.
 */

/**
 * A Worker of the scenario: its entry module, its wrangler config, or both, each found from the
 * other as wrangler finds it. Without a config, the one beside the entry or in the nearest folder
 * above (none: the Worker has no bindings); without an entry, the config's `main`. `env` selects
 * an environment of the config (`[env.staging]`) as `wrangler --env staging` does.
 */
export type WorkerSpec =
  | { readonly entry: string; readonly config?: string; readonly env?: string }
  | { readonly entry?: string; readonly config: string; readonly env?: string };

/**
 * A Worker as a loaded scenario names it: its entry always, its config when it has one, and the
 * environment of that config when the scenario selects one.
 */
export interface WorkerFiles {
  readonly entry: string;
  readonly config?: string;
  readonly env?: string;
}

export interface Bounds {
  /** Faults (crashes) injected in one run at most. Default 1. */
  readonly maxFaultsPerRun?: number;
  /** Redeliveries of one event at most, whatever the client's retries. Default 3. */
  readonly maxRedeliveries?: number;
  /**
   * Driver events (requests, messages, ticks) and pieces of platform work whose invocations may
   * be live at once, 1 to 64. Default 1: each runs to its end before the next starts. Above 1,
   * the invocations interleave at every binding call and every interleaving is explored.
   */
  readonly maxConcurrentInvocations?: number;
  /** Wall-clock budget for exploring, in milliseconds. Default 10000. */
  readonly budgetMs?: number;
}

/** Runs the Worker behind a service binding for real, in the same simulation. */
export type CalleeStep<Worker extends WorkerSpec = WorkerSpec> = {
  readonly kind: "callee";
  readonly binding: string;
} & Worker;

/**
 * Runs a Worker no binding of the scenario reaches, for what the platform delivers to it: the
 * consumer of a queue another Worker sends to. Its bindings are named after it (`notifier/DB`).
 */
export type ConsumerStep<Worker extends WorkerSpec = WorkerSpec> = { readonly kind: "consumer" } & Worker;

/** Scripted answers for a service binding: RPC methods by name, and `fetch`. */
export type ServiceHandlers = {
  readonly fetch?: (request: Request) => Response | Promise<Response>;
} & { readonly [method: string]: ((...args: never[]) => unknown) | undefined };

export interface ServiceStep {
  readonly kind: "service";
  readonly binding: string;
  readonly handlers: ServiceHandlers;
}

/** Applies a SQL file, or a folder of D1 migrations, to a D1 binding before every run. */
export interface D1SchemaStep {
  readonly kind: "d1Schema";
  /** The binding: `DB` for the scenario's Worker, `<worker name>/DB` for a callee's. */
  readonly db: string;
  readonly file: string;
}

/** A key's value and metadata as `put(key, value, { metadata })` would write them. */
export interface KvEntry {
  readonly value: string;
  readonly metadata?: unknown;
}

/**
 * Writes keys to a KV binding before every run, as a namespace the Workers find already
 * written long before (no read of them is stale).
 */
export interface KvEntriesStep {
  readonly kind: "kvEntries";
  /** The binding: `CACHE` for the scenario's Worker, `<worker name>/CACHE` for a callee's. */
  readonly namespace: string;
  readonly entries: Readonly<Record<string, string | KvEntry>>;
}

/**
 * Puts objects in an R2 binding's bucket before every run, as a bucket the Workers find already
 * holding them: key → the object's text.
 */
export interface R2ObjectsStep {
  readonly kind: "r2Objects";
  /** The binding: `FILES` for the scenario's Worker, `<worker name>/FILES` for a callee's. */
  readonly bucket: string;
  readonly objects: Readonly<Record<string, string>>;
}

/**
 * Scripted answers for the Workers' outbound `fetch`: URL prefix → handler. A fetch no handler
 * answers stops the check: the simulation never reaches the network.
 */
export type OutboundHandlers = Readonly<Record<string, (request: Request) => Response | Promise<Response>>>;

export interface OutboundStep {
  readonly kind: "outbound";
  readonly handlers: OutboundHandlers;
}

/** Secrets, added to a Worker's env like vars (the Worker under check unless `worker` names one). */
export interface SecretsStep {
  readonly kind: "secrets";
  readonly values: Readonly<Record<string, string>>;
  readonly worker?: string;
}

/** A step of a scenario's setup; `Worker` is how its Workers are named (`WorkerFiles` once loaded). */
export type SetupStep<Worker extends WorkerSpec = WorkerSpec> =
  | CalleeStep<Worker>
  | ConsumerStep<Worker>
  | ServiceStep
  | D1SchemaStep
  | KvEntriesStep
  | R2ObjectsStep
  | OutboundStep
  | SecretsStep;

/** The rows of a D1 table at the end of a run. */
export interface D1RowsSource {
  readonly kind: "d1Rows";
  readonly db: string;
  readonly table: string;
}

/** No two rows share the values of `columns` (rows with a NULL among them are not compared). */
export interface UniqueInvariant {
  readonly kind: "unique";
  readonly name: string;
  readonly rows: D1RowsSource;
  readonly columns: readonly string[];
}

/** No row may come back from `sql` over D1 binding `db`; each row that does is a violation. */
export interface QueryInvariant {
  readonly kind: "query";
  readonly name: string;
  readonly db: string;
  readonly sql: string;
}

/** `sql` returns one value that must be the same at the end of every run as after setup. */
export interface ConservedInvariant {
  readonly kind: "conserved";
  readonly name: string;
  readonly db: string;
  readonly sql: string;
}

/** The final state a custom invariant reads. */
export interface FinalState {
  /** Rows of a query over a D1 binding (`DB`, `payments/DB`). */
  d1(db: string, sql: string, ...params: unknown[]): Record<string, unknown>[];
  /**
   * A KV namespace's value for `key` (`CACHE`, `payments/CACHE`), or null when it has none, in
   * the type asked for as `KV.get(key, type)` takes it (`"text"` or `{ type: "text" }`): text by
   * default (bytes that are not UTF-8 read as U+FFFD, as `get` reads them), or its parsed JSON.
   */
  kv(binding: string, key: string, type?: "text" | { type?: "text" }): string | null;
  kv<T = unknown>(binding: string, key: string, type: "json" | { type: "json" }): T | null;
  /**
   * The value as an ArrayBuffer of the bytes exactly as they were put (a string put as its
   * UTF-8 bytes). `"stream"` is refused: an invariant reads the final state synchronously.
   */
  kv(binding: string, key: string, type: "arrayBuffer" | { type: "arrayBuffer" }): ArrayBuffer | null;
  /** A KV namespace's keys, sorted. */
  kvKeys(binding: string): string[];
  /**
   * An R2 bucket's object `key` (`BUCKET`, `media/BUCKET`) as text (its bytes decoded as UTF-8,
   * as `text()` decodes them), or null when the bucket has no such object.
   */
  r2(binding: string, key: string): string | null;
  /** An R2 bucket's keys, sorted as R2 lists them. */
  r2Keys(binding: string): string[];
  /** Rows of a query over the SQLite storage of the Durable Object `binding` names by `name`. */
  durableObject(binding: string, name: string, sql: string, ...params: unknown[]): Record<string, unknown>[];
  /** A value the Durable Object `binding` names by `name` keeps with `ctx.storage.put(key, …)`. */
  durableObjectStorage(binding: string, name: string, key: string): unknown;
  /** Messages still waiting in a queue (bodies), and those dead-lettered. */
  queue(name: string): unknown[];
  /**
   * The driver's events this run delivered, in order (`req-1`, `msg-3`): all of them when
   * exploring, those a counterexample keeps once it is shrunk. An invariant that compares the
   * state with what was sent counts only these.
   */
  readonly events: readonly string[];
  /**
   * What every client got: one entry per delivery (status 0 when it got no answer).
   * `unfinished`: the delivery got no answer and the client had retries left, but the check's
   * bounds (`maxRedeliveries`, or a schedule the shrinker cut down) allowed no resend, so
   * whether the client would have got its answer is not known.
   */
  readonly responses: readonly {
    event: string;
    delivery: number;
    status: number;
    body: string;
    unfinished?: true;
  }[];
  /**
   * Every outbound request the scenario's `outbound()` scripts answered, in order: what the other
   * side was asked, so an invariant can count what a provider did (two charges for one order).
   * A request that reached the script counts even where the Worker never saw the answer (a
   * `lost_response`, a deadline that passed); one a fault kept from leaving (`network_error`)
   * does not. `body` is the request's body as text (`null` without one).
   */
  readonly outbound: readonly OutboundRequest[];
}

/** An outbound request a script answered (`FinalState.outbound`). */
export interface OutboundRequest {
  /** The invocation that sent it: `req-2#1`. */
  readonly invocation: string;
  readonly method: string;
  readonly url: string;
  /** Its headers, names in lower case. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string | null;
}

/** A custom invariant: returns true when it holds, or a message saying what is wrong. */
export interface CustomInvariant {
  readonly kind: "custom";
  readonly name: string;
  readonly check: (state: FinalState) => true | string;
}

/** Every request of the http driver ends with an answer of status `status` (a class like "2xx" or a code). */
export interface AnsweredInvariant {
  readonly kind: "answered";
  readonly name: string;
  readonly status: string;
}

export type Invariant =
  | UniqueInvariant
  | QueryInvariant
  | ConservedInvariant
  | CustomInvariant
  | AnsweredInvariant;

export interface HttpRequestSpec {
  readonly path: string;
  /** Default: POST when there is a body, else GET. */
  readonly method?: string;
  /** An object is sent as JSON; a string as it is. */
  readonly body?: unknown;
  readonly headers?: Readonly<Record<string, string>>;
  /**
   * When the client sends the request, in milliseconds after the run starts: the clock moves
   * there once every invocation is done or waits for a time (a binding call takes none), and
   * the timers and alarms due before it go first. Left out, the client sends it as soon as the
   * request before it was sent. Not below an earlier request's.
   */
  readonly atMs?: number;
  /**
   * `request.cf` as the Worker reads it: these fields over Miniflare's default (a client in
   * Austin, Texas: `country: "US"`, `colo: "DFW"`, …), for a Worker that answers by country.
   */
  readonly cf?: Readonly<Record<string, unknown>>;
}

export interface HttpDriver {
  readonly kind: "http";
  readonly requests: readonly HttpRequestSpec[];
  /** How many times a client resends a request that got no answer (or an answer of `resendOn`). */
  readonly retries: number;
  /**
   * Answers the client also resends on, as webhook senders and retrying HTTP clients do: a
   * status (`429`) or a class (`"5xx"`). None by default: only a request with no answer.
   */
  readonly resendOn?: readonly ResendStatus[];
}

/** A status a client resends on: a code, or a class of them. */
export type ResendStatus = number | "4xx" | "5xx";

/** Messages a producer outside the scenario sends to a queue; message `i` is event `msg-i`. */
export interface QueueDriver {
  readonly kind: "queue";
  readonly queue: string;
  readonly messages: readonly unknown[];
}

/** Cron ticks delivered to the Worker's `scheduled` handler; tick `i` is event `cron-i`. */
export interface CronDriver {
  readonly kind: "cron";
  readonly cron: string;
  readonly times: number;
}

export type Driver = HttpDriver | QueueDriver | CronDriver;

/** A scenario; `Worker` is how its Workers are named (`WorkerFiles` once loaded). */
export interface Scenario<Worker extends WorkerSpec = WorkerSpec> {
  readonly name: string;
  /** The seed every run derives its randomness from. Default: the scenario's name. */
  readonly seed?: string;
  readonly worker: Worker;
  readonly setup?: readonly SetupStep<Worker>[];
  /** One driver, or several whose events are delivered in the order given. */
  readonly drive: Driver | readonly Driver[];
  readonly invariants: readonly Invariant[];
  readonly bounds?: Bounds;
}

/** Declares a scenario; the default export of a `*.sim.ts` file. */
export function defineScenario(scenario: Scenario): Scenario {
  return scenario;
}

/** Runs the Worker behind service binding `binding` for real, from its entry and wrangler config. */
export function callee(binding: string, options: WorkerSpec): CalleeStep {
  // Left out, the scenario's checks say what is missing (not a TypeError from here).
  return { kind: "callee", binding, ...options };
}

/**
 * Runs a Worker of the system that no binding reaches, from its entry and wrangler config: the
 * consumer of a queue the scenario's Worker sends to.
 */
export function consumer(options: WorkerSpec): ConsumerStep {
  // Left out, the scenario's checks say what is missing (not a TypeError from here).
  return { kind: "consumer", ...options };
}

/** Answers the calls over service binding `binding` from scripts instead of running a Worker. */
export function service(binding: string, handlers: ServiceHandlers): ServiceStep {
  return { kind: "service", binding, handlers };
}

/**
 * Applies the SQL file `file` to D1 binding `db` (`DB`, or `<worker>/DB` for a callee's); a
 * folder of migrations (`./migrations`) has its `.sql` files applied in wrangler's order.
 */
export function d1Schema(db: string, file: string): D1SchemaStep {
  return { kind: "d1Schema", db, file };
}

/**
 * Puts each key of `objects` in R2 binding `bucket` (`FILES`, or `<worker>/FILES` for a callee's)
 * before every run, its value the object's text, as `put(key, text)` stores it.
 */
export function r2Objects(bucket: string, objects: Readonly<Record<string, string>>): R2ObjectsStep {
  return { kind: "r2Objects", bucket, objects };
}

/**
 * Writes each key of `entries` to KV binding `namespace` (`CACHE`, or `<worker>/CACHE` for a
 * callee's) before every run: a string value, or `{ value, metadata }`.
 */
export function kvEntries(
  namespace: string,
  entries: Readonly<Record<string, string | KvEntry>>,
): KvEntriesStep {
  return { kind: "kvEntries", namespace, entries };
}

/** The rows of `table` in D1 binding `db`, for an invariant. */
export function d1Rows(db: string, table: string): D1RowsSource {
  return { kind: "d1Rows", db, table };
}

/**
 * A client that sends each request in order and resends one that got no answer, or one whose
 * answer is among `resendOn`, up to `retries` times.
 */
export function http(
  requests: readonly HttpRequestSpec[],
  options: { retries?: number; resendOn?: readonly ResendStatus[] } = {},
): HttpDriver {
  return {
    kind: "http",
    requests,
    retries: options.retries ?? 0,
    ...(options.resendOn ? { resendOn: options.resendOn } : {}),
  };
}

/** Answers outbound `fetch` calls whose URL starts with a key of `handlers`. */
export function outbound(handlers: OutboundHandlers): OutboundStep {
  return { kind: "outbound", handlers };
}

/** Adds secrets to the env of the Worker under check, or of the callee named `options.worker`. */
export function secrets(
  values: Readonly<Record<string, string>>,
  options: { worker?: string } = {},
): SecretsStep {
  return { kind: "secrets", values, ...(options.worker === undefined ? {} : { worker: options.worker }) };
}

/** A producer that sends `messages` to queue `queue`, one event each. */
export function queue(name: string, messages: readonly unknown[]): QueueDriver {
  return { kind: "queue", queue: name, messages };
}

/** `times` ticks of cron trigger `cron`, each delivered to the Worker's `scheduled` handler. */
export function cron(expression: string, options: { times?: number } = {}): CronDriver {
  return { kind: "cron", cron: expression, times: options.times ?? 1 };
}

/** Invariant `name`: `sql` over D1 binding `db` returns no rows. */
export function query(name: string, db: string, sql: string): QueryInvariant {
  return { kind: "query", name, db, sql };
}

/** Invariant `name`: the one value `sql` returns over D1 binding `db` never changes. */
export function conserved(name: string, db: string, sql: string): ConservedInvariant {
  return { kind: "conserved", name, db, sql };
}

/** Invariant `name`: a predicate over the final state; true, or a message saying what broke. */
export function invariant(name: string, check: (state: FinalState) => true | string): CustomInvariant {
  return { kind: "custom", name, check };
}

/**
 * Invariant `name`: every http request is eventually answered with `status`: a class ("2xx", the
 * default) or a code (`"201"` or `201`).
 */
export function answered(name: string, options: { status?: string | number } = {}): AnsweredInvariant {
  return { kind: "answered", name, status: String(options.status ?? "2xx") };
}

/** Invariant `name`: no two rows share the values of `columns`. */
export function unique(
  name: string,
  rows: D1RowsSource,
  columns: string | readonly string[],
): UniqueInvariant {
  return { kind: "unique", name, rows, columns: typeof columns === "string" ? [columns] : columns };
}
