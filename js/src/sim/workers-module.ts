/**
 * The `cloudflare:workers` module as Worker code imports it in the simulation: the entrypoint
 * base classes, and `env`, which resolves to the bindings of the invocation that is running.
 */

/** Base class of a named entrypoint, reached over a service binding by RPC. */
export class WorkerEntrypoint<Env = unknown, Props = unknown> {
  // Assigned, not declared as class fields: a Worker's classes are new in every run, and
  // defining fields on instances of ever-new classes is V8's slow path.
  declare readonly ctx: ExecutionContextLike<Props>;
  declare readonly env: Env;

  constructor(ctx: ExecutionContextLike<Props>, env: Env) {
    this.ctx = ctx;
    this.env = env;
  }
}

/** Present so Worker modules that also declare Durable Object classes load. */
export class DurableObject<Env = unknown> {
  declare readonly ctx: unknown;
  declare readonly env: Env;

  constructor(ctx: unknown, env: Env) {
    this.ctx = ctx;
    this.env = env;
  }
}

/** Present so Worker modules that also declare Workflows load. */
export class WorkflowEntrypoint<Env = unknown> {
  declare readonly ctx: unknown;
  declare readonly env: Env;

  constructor(ctx: unknown, env: Env) {
    this.ctx = ctx;
    this.env = env;
  }
}

/** Objects that are passed by reference over RPC in production; here a marker class. */
export class RpcTarget {}

export interface ExecutionContextLike<Props = unknown> {
  waitUntil(promise: Promise<unknown>): void;
  passThroughOnException(): void;
  readonly props: Props;
}

/** True when `value` is a class Worker code derived from one of the entrypoint bases. */
export function isEntrypointClass(value: unknown): value is new (ctx: unknown, env: unknown) => object {
  return (
    typeof value === "function" &&
    (value.prototype instanceof WorkerEntrypoint || value.prototype instanceof DurableObject)
  );
}

/** The module object for one Worker in one run; `env` reads through `currentEnv`. */
export function workersModule(currentEnv: () => Record<string, unknown>): Record<string, unknown> {
  const env = new Proxy(
    {},
    {
      get: (_target, key) => (typeof key === "string" ? currentEnv()[key] : undefined),
      has: (_target, key) => typeof key === "string" && key in currentEnv(),
      ownKeys: () => Reflect.ownKeys(currentEnv()),
      getOwnPropertyDescriptor: (_target, key) => {
        const value = typeof key === "string" ? currentEnv()[key] : undefined;
        return value === undefined ? undefined : { value, enumerable: true, configurable: true };
      },
    },
  );
  return { WorkerEntrypoint, DurableObject, WorkflowEntrypoint, RpcTarget, env };
}
