/**
 * The world crosses from Node into workerd as JSON. Node loads, validates and resolves the
 * scenario and builds the world (`sim/world.ts`); workerd rebuilds the same world from this data,
 * with two things that cannot cross as JSON taken from its own side instead:
 *
 * - the values of the scenario that are not plain data (service and outbound handlers, custom
 *   invariants, a queue message that is a Date or a Map): workerd evaluates the scenario module
 *   itself, and each such value is taken from its export at the path it has in the validated
 *   scenario, which mirrors the declared one field by field;
 * - each Worker's module, a factory compiled into the workerd script (workerd has no eval).
 *
 * Workers refer to each other (a callee, a Durable Object's home) by their index in the world.
 */

import type { OutboundHandlers, Scenario, ServiceHandlers } from "../cloudflare.ts";
import { InputError } from "../errors.ts";
import type { WorkerModule } from "../load/bundle.ts";
import type { QueueConsumer, WorkerConfig } from "../load/wrangler.ts";
import type { BindingSpec, SimWorker, World } from "../sim/world.ts";

type Path = readonly (string | number)[];
/** Marks a value taken from workerd's own evaluation of the scenario, at `$raw`. */
interface RawRef {
  readonly $raw: Path;
}

/** Nesting the scenario encoder follows at most; a scenario is a handful of levels deep. */
const DEPTH_MAX = 64;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * The validated scenario as JSON. Plain data crosses as it is; anything else (a function, a
 * Date, a number JSON cannot carry, an object holding functions, which keeps its identity) becomes
 * a reference to where it is in the scenario.
 */
export function encodeScenario(value: unknown, path: Path = []): unknown {
  if (typeof value === "string" || typeof value === "boolean" || value === null) return value;
  if (typeof value === "number" && Number.isFinite(value) && !Object.is(value, -0)) return value;
  const raw: RawRef = { $raw: path };
  if (path.length > DEPTH_MAX) return raw;
  if (Array.isArray(value)) {
    const keys = Object.keys(value);
    if (keys.length !== value.length || keys.some((k, i) => k !== String(i))) return raw;
    return value.map((item, i) => encodeScenario(item, [...path, i]));
  }
  if (isPlainObject(value)) {
    if (Object.hasOwn(value, "$raw") || Object.values(value).some((v) => typeof v === "function")) return raw;
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, encodeScenario(v, [...path, k])]));
  }
  return raw;
}

function isRawRef(value: unknown): value is RawRef {
  return isPlainObject(value) && Array.isArray(value.$raw) && Object.keys(value).length === 1;
}

/** The scenario back from `encodeScenario`, its references resolved in `declared`. */
export function decodeScenario(data: unknown, declared: unknown): Scenario {
  return decodeValue(data, declared) as Scenario;
}

function decodeValue(data: unknown, declared: unknown): unknown {
  if (isRawRef(data)) return at(declared, data.$raw);
  if (Array.isArray(data)) return data.map((item) => decodeValue(item, declared));
  if (isPlainObject(data)) {
    return Object.fromEntries(Object.entries(data).map(([k, v]) => [k, decodeValue(v, declared)]));
  }
  return data;
}

function at(declared: unknown, path: Path): unknown {
  let value = declared;
  for (const key of path) {
    if (typeof value !== "object" || value === null || !(key in value)) {
      throw new InputError(
        undefined,
        `--runtime workerd: the scenario's default export has no ${path.join(".")} when workerd evaluates it, though it had in Node; a scenario must build the same thing wherever it runs (not from process.env or the machine)`,
      );
    }
    value = (value as Record<string | number, unknown>)[key];
  }
  return value;
}

type ConfigData = Omit<WorkerConfig, "durableObjectClasses"> & {
  readonly durableObjectClasses: [string, { readonly sqlite: boolean }][];
};

type BindingData =
  | Exclude<BindingSpec, { kind: "service" } | { kind: "durableObject" }>
  | {
      readonly kind: "service";
      readonly name: string;
      readonly target:
        | {
            readonly kind: "worker";
            readonly worker: number;
            readonly entrypoint: string | undefined;
            readonly props: Readonly<Record<string, unknown>>;
          }
        | { readonly kind: "scripted"; readonly setup: number };
    }
  | {
      readonly kind: "durableObject";
      readonly name: string;
      readonly label: string;
      readonly namespace: {
        readonly worker: number;
        readonly className: string;
        readonly sqlite: boolean;
        readonly storePrefix: string;
      };
    };

interface WorkerData {
  readonly name: string;
  readonly prefix: string;
  readonly entry: string;
  readonly config: ConfigData | undefined;
  readonly vars: Record<string, unknown>;
  readonly bindings: [string, BindingData][];
}

export interface WorldData {
  readonly file: string;
  readonly scenario: unknown;
  readonly main: number;
  readonly workers: WorkerData[];
  readonly databases: readonly string[];
  readonly kvStores: readonly string[];
  readonly r2Stores: readonly string[];
  readonly queues: {
    readonly name: string;
    readonly store: string;
    readonly consumer: { readonly worker: number; readonly settings: QueueConsumer } | undefined;
  }[];
  /** Indexes of the `outbound` steps of the scenario's setup, in the world's order. */
  readonly outbound: number[];
}

/** The world as data; Workers' modules stay behind (their factories cross as code). */
export function encodeWorld(world: World): WorldData {
  const index = (worker: SimWorker) => world.workers.indexOf(worker);
  const setup = world.scenario.setup ?? [];
  const stepOf = (handlers: ServiceHandlers | OutboundHandlers) =>
    setup.findIndex((step) => "handlers" in step && step.handlers === handlers);
  const binding = (spec: BindingSpec): BindingData => {
    if (spec.kind === "service") {
      const { target } = spec;
      return {
        kind: "service",
        name: spec.name,
        target:
          target.kind === "worker"
            ? {
                kind: "worker",
                worker: index(target.worker),
                entrypoint: target.entrypoint,
                props: target.props,
              }
            : { kind: "scripted", setup: stepOf(target.handlers) },
      };
    }
    if (spec.kind === "durableObject") {
      const { namespace } = spec;
      return {
        kind: "durableObject",
        name: spec.name,
        label: spec.label,
        namespace: { ...namespace, worker: index(namespace.worker) },
      };
    }
    return spec;
  };
  return {
    file: world.file,
    scenario: encodeScenario(world.scenario),
    main: index(world.main),
    workers: world.workers.map((worker) => ({
      name: worker.name,
      prefix: worker.prefix,
      entry: worker.entry,
      config: worker.config && {
        ...worker.config,
        durableObjectClasses: [...worker.config.durableObjectClasses],
      },
      vars: worker.vars,
      bindings: [...worker.bindings].map(([name, spec]) => [name, binding(spec)]),
    })),
    databases: world.databases,
    kvStores: world.kvStores,
    r2Stores: world.r2Stores,
    queues: [...world.queues.values()].map((queue) => ({
      name: queue.name,
      store: queue.store,
      consumer: queue.consumer && { worker: index(queue.consumer.worker), settings: queue.consumer.settings },
    })),
    outbound: world.outbound.map(stepOf),
  };
}

/**
 * The world back from `encodeWorld`, inside workerd: `declared` is the scenario module's default
 * export as workerd evaluated it, `modules` each Worker's module by its index.
 */
export function decodeWorld(data: WorldData, declared: unknown, modules: readonly WorkerModule[]): World {
  const scenario = decodeScenario(data.scenario, declared);
  const setup = scenario.setup ?? [];
  const handlersAt = (i: number) => {
    const step = setup[i];
    if (!step || !("handlers" in step))
      throw new Error(`setup[${i}] of the scenario has no handlers in workerd`);
    return step.handlers;
  };
  const workers: SimWorker[] = data.workers.map((w, i) => {
    const module = modules[i];
    if (!module) throw new Error(`no module for Worker ${w.name} in the workerd script`);
    return {
      name: w.name,
      prefix: w.prefix,
      entry: w.entry,
      config: w.config && { ...w.config, durableObjectClasses: new Map(w.config.durableObjectClasses) },
      module,
      vars: w.vars,
      bindings: new Map(),
    };
  });
  const worker = (i: number): SimWorker => {
    const found = workers[i];
    if (!found) throw new Error(`the world names Worker ${i}, which it does not have`);
    return found;
  };
  data.workers.forEach((w, i) => {
    for (const [name, spec] of w.bindings) {
      let decoded: BindingSpec;
      if (spec.kind === "service") {
        const { target } = spec;
        decoded = {
          kind: "service",
          name: spec.name,
          target:
            target.kind === "worker"
              ? {
                  kind: "worker",
                  worker: worker(target.worker),
                  entrypoint: target.entrypoint,
                  props: target.props,
                }
              : { kind: "scripted", handlers: handlersAt(target.setup) as ServiceHandlers },
        };
      } else if (spec.kind === "durableObject") {
        decoded = {
          kind: "durableObject",
          name: spec.name,
          label: spec.label,
          namespace: { ...spec.namespace, worker: worker(spec.namespace.worker) },
        };
      } else decoded = spec;
      worker(i).bindings.set(name, decoded);
    }
  });
  return {
    scenario,
    file: data.file,
    main: worker(data.main),
    workers,
    databases: data.databases,
    kvStores: data.kvStores,
    r2Stores: data.r2Stores,
    queues: new Map(
      data.queues.map((q) => [
        q.name,
        {
          name: q.name,
          store: q.store,
          consumer: q.consumer && { worker: worker(q.consumer.worker), settings: q.consumer.settings },
        },
      ]),
    ),
    outbound: data.outbound.map((i) => handlersAt(i) as OutboundHandlers),
  };
}
