/**
 * `eutaxy/cloudflare`: the scenario API. A scenario (`*.sim.ts`) names the Worker under check,
 * what runs beside it (callees, scripted services, D1 schemas), how clients drive it, the
 * invariants that must hold over the final state, and the bounds of the search.
 *
 * Every helper here returns plain data; `eutaxy check` reads it, resolves the paths against the
 * scenario file's folder and reports a bad field with the scenario's file name.
 */

/** The Worker under check: its entry module and, optionally, its wrangler config. */
export interface WorkerSpec {
  readonly entry: string;
  readonly config?: string;
}

export interface Bounds {
  /** Faults (crashes) injected in one run at most. Default 1. */
  readonly maxFaultsPerRun?: number;
  /** Redeliveries of one event at most, whatever the client's retries. Default 3. */
  readonly maxRedeliveries?: number;
  /** Invocations live at once. Default 1 (the only value this version explores). */
  readonly maxConcurrentInvocations?: number;
  /** Wall-clock budget for exploring, in milliseconds. Default 10000. */
  readonly budgetMs?: number;
}

/** Runs the Worker behind a service binding for real, in the same simulation. */
export interface CalleeStep {
  readonly kind: "callee";
  readonly binding: string;
  readonly entry: string;
  readonly config?: string;
}

/** Scripted answers for a service binding: RPC methods by name, and `fetch`. */
export type ServiceHandlers = {
  readonly fetch?: (request: Request) => Response | Promise<Response>;
} & { readonly [method: string]: ((...args: never[]) => unknown) | undefined };

export interface ServiceStep {
  readonly kind: "service";
  readonly binding: string;
  readonly handlers: ServiceHandlers;
}

/** Applies a SQL file to a D1 binding before every run. */
export interface D1SchemaStep {
  readonly kind: "d1Schema";
  /** The binding: `DB` for the scenario's Worker, `<worker name>/DB` for a callee's. */
  readonly db: string;
  readonly file: string;
}

export type SetupStep = CalleeStep | ServiceStep | D1SchemaStep;

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

export type Invariant = UniqueInvariant;

export interface HttpRequestSpec {
  readonly path: string;
  /** Default: POST when there is a body, else GET. */
  readonly method?: string;
  /** An object is sent as JSON; a string as it is. */
  readonly body?: unknown;
  readonly headers?: Readonly<Record<string, string>>;
}

export interface HttpDriver {
  readonly kind: "http";
  readonly requests: readonly HttpRequestSpec[];
  /** How many times a client resends a request that got no answer. */
  readonly retries: number;
}

export type Driver = HttpDriver;

export interface Scenario {
  readonly name: string;
  /** The seed every run derives its randomness from. Default: the scenario's name. */
  readonly seed?: string;
  readonly worker: WorkerSpec;
  readonly setup?: readonly SetupStep[];
  readonly drive: Driver;
  readonly invariants: readonly Invariant[];
  readonly bounds?: Bounds;
}

/** Declares a scenario; the default export of a `*.sim.ts` file. */
export function defineScenario(scenario: Scenario): Scenario {
  return scenario;
}

/** Runs the Worker behind service binding `binding` for real, from its entry and wrangler config. */
export function callee(binding: string, options: { entry: string; config?: string }): CalleeStep {
  return {
    kind: "callee",
    binding,
    entry: options.entry,
    ...(options.config ? { config: options.config } : {}),
  };
}

/** Answers the calls over service binding `binding` from scripts instead of running a Worker. */
export function service(binding: string, handlers: ServiceHandlers): ServiceStep {
  return { kind: "service", binding, handlers };
}

/** Applies the SQL file `file` to D1 binding `db` (`DB`, or `<worker>/DB` for a callee's). */
export function d1Schema(db: string, file: string): D1SchemaStep {
  return { kind: "d1Schema", db, file };
}

/** The rows of `table` in D1 binding `db`, for an invariant. */
export function d1Rows(db: string, table: string): D1RowsSource {
  return { kind: "d1Rows", db, table };
}

/** A client that sends each request in order and resends one that got no answer. */
export function http(requests: readonly HttpRequestSpec[], options: { retries?: number } = {}): HttpDriver {
  return { kind: "http", requests, retries: options.retries ?? 0 };
}

/** Invariant `name`: no two rows share the values of `columns`. */
export function unique(
  name: string,
  rows: D1RowsSource,
  columns: string | readonly string[],
): UniqueInvariant {
  return { kind: "unique", name, rows, columns: typeof columns === "string" ? [columns] : columns };
}
