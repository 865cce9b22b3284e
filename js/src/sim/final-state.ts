/**
 * The state at the end of a run, as custom invariants read it, and the invariants the host
 * evaluates itself (custom predicates, response checks). The engine's own invariants (unique,
 * query, conserved) are evaluated in the engine; these run first, while the run's stores still
 * exist, and the first that breaks is handed to the engine with `endRun`.
 */

import type { FinalState, Invariant, OutboundRequest } from "../cloudflare.ts";
import type { Engine } from "../engine.ts";
import { InputError, shownConfig } from "../errors.ts";
import { bodyExcerpt, type ClientResponse, statusMatches } from "./context.ts";
import { ObjectStore, seesSchema } from "./durable-object-store.ts";
import { readOne } from "./durable-object-tables.ts";
import { durableObjectStore } from "./durable-objects.ts";
import { type KvStateType, kvKeys, kvRead } from "./kv.ts";
import { withMigrationsHint } from "./migrations-hint.ts";
import { queueBodies } from "./queues.ts";
import { r2Keys, r2Read } from "./r2.ts";
import { bindingNames, d1Store, ownerOf } from "./store-names.ts";
import type { BindingSpec, World } from "./world.ts";

/** Binding kinds as wrangler configs and Cloudflare's docs name them. */
const KIND_NAMES: Readonly<Record<string, string>> = {
  d1: "D1",
  kv: "KV",
  r2: "R2",
  durableObject: "Durable Object",
  queue: "queue",
  service: "service",
};

/**
 * The final state a run left, as custom invariants read it; `nowMs` is the run's clock at its end
 * (timers, alarms and delays move it past the engine's), which decides what has expired in KV.
 */
export function finalState(
  engine: Engine,
  world: World,
  responses: readonly ClientResponse[],
  nowMs: number,
  events: readonly string[],
  outbound: readonly OutboundRequest[],
  objectTables: ObjectTableReads,
): FinalState {
  const kvEngine = { d1Run: engine.d1Run.bind(engine), trace: engine.trace.bind(engine), nowMs: () => nowMs };
  // A query the engine refuses is the scenario's mistake (a typo, a table that does not exist),
  // not a broken invariant: the check stops with it, as it does for the built-in invariants.
  // A Durable Object makes its tables as its code runs: `absent` takes a query on a table the
  // object has not made (yet, in this run), which then reads no rows.
  const rows = (
    store: string,
    sql: string,
    params: unknown[],
    named = store,
    absent?: (message: string) => void,
  ) => {
    let result: ReturnType<Engine["d1Run"]>;
    try {
      result = engine.d1Run(store, sql, params);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      if (absent && NO_SUCH_TABLE.test(reason)) {
        absent(`its query on ${named} found no table in any run: ${reason}`);
        return [];
      }
      throw new InputError(
        world.file,
        withMigrationsHint(world, named, `its query on ${named} failed: ${reason}`),
      );
    }
    return result.rows.map((row) => Object.fromEntries(result.columns.map((c, i) => [c, row[i]])));
  };
  const binding = (name: string, kind: BindingSpec["kind"]) => {
    const found = ownerOf(world.workers, name);
    const spec = found?.[0].bindings.get(found[1]);
    if (!spec || spec.kind !== kind) {
      // Say which bindings of that kind the Workers' configs do give, where the fix may be.
      const known = bindingNames(world.workers, kind);
      const configs = world.workers.flatMap((w) => (w.config ? [shownConfig(w.config)] : []));
      const what = KIND_NAMES[kind] ?? kind;
      const has = known.length
        ? `the ${what} bindings are ${known.join(", ")}`
        : `no Worker has a ${what} binding in ${configs.join(", ") || "its config"}`;
      throw new InputError(
        world.file,
        `it reads ${what} binding ${name}, which the scenario does not have; ${has}`,
      );
    }
    return spec;
  };
  // Invariants only read: what one learns of an object's tables holds for the next.
  const objectStores = new Map<string, ObjectStore>();
  const objectStore = (store: string) => {
    let found = objectStores.get(store);
    if (!found) {
      found = new ObjectStore(engine, store);
      objectStores.set(store, found);
    }
    return found;
  };
  return {
    // By any of the database's bindings: `admin/DB` reads the store it shares with `DB`.
    d1: (db, sql, ...params) => {
      binding(db, "d1");
      return rows(d1Store(world.workers, db), sql, params, db);
    },
    kv: ((name: string, key: string, type?: unknown) => {
      const spec = binding(name, "kv");
      const as = kvStateType(world.file, name, key, type);
      return spec.kind === "kv" ? kvRead(kvEngine, spec.store, key, as) : null;
    }) as FinalState["kv"],
    kvKeys: (name) => {
      const spec = binding(name, "kv");
      return spec.kind === "kv" ? kvKeys(kvEngine, spec.store) : [];
    },
    r2: (name, key) => {
      const spec = binding(name, "r2");
      return spec.kind === "r2" ? r2Read(kvEngine, spec.store, key) : null;
    },
    r2Keys: (name) => {
      const spec = binding(name, "r2");
      return spec.kind === "r2" ? r2Keys(kvEngine, spec.store) : [];
    },
    durableObject: (name, objectName, sql, ...params) => {
      const spec = binding(name, "durableObject");
      if (spec.kind !== "durableObject") return [];
      const store = durableObjectStore(spec.namespace, objectName);
      if (!engine.d1Exists(store)) return [];
      if (seesSchema(sql)) objectStore(store).showSchemaAsMade();
      // Named as the invariant names the object, not by its store.
      const named = `${name} ${JSON.stringify(objectName)}`;
      const query = `${named}\u0000${sql}`;
      let absent = false;
      const read = rows(store, sql, params, named, (message) => {
        absent = true;
        objectTables.absent(query, message);
      });
      if (!absent) objectTables.found(query);
      return read;
    },
    durableObjectStorage: (name, objectName, key) => {
      const spec = binding(name, "durableObject");
      if (spec.kind !== "durableObject") return undefined;
      const store = durableObjectStore(spec.namespace, objectName);
      // An object that never wrote with the KV-style API has no table for it: nothing is stored.
      return readOne(objectStore(store), key);
    },
    queue: (name) => {
      const queue = world.queues.get(name);
      if (!queue)
        throw new InputError(world.file, `it reads queue ${name}, which the scenario does not have`);
      return queueBodies(engine, queue.store);
    },
    events,
    responses,
    outbound,
  };
}

/** SQLite's error for a table the database does not have. */
const NO_SUCH_TABLE = /^no such table: /;

/**
 * The queries invariants make on Durable Objects' tables, over a check's runs. An object makes
 * its tables as its code runs, so in a run where it had not made one (it crashed before its
 * `CREATE TABLE`) a query on it reads no rows; one that found its table in no run at all names a
 * table no object makes (a misspelt name, or a Worker that fails before it makes it): the check
 * ends with it as bad input (`neverFound`), as it does for a D1 table no schema made.
 */
export class ObjectTableReads {
  /** The invariant being evaluated, which `hostViolation` sets. */
  invariant = "";
  private readonly missing = new Map<string, string>();
  private readonly seen = new Set<string>();

  /** `query` (the object and its SQL) found no table in a run; `message` says so. */
  absent(query: string, message: string): void {
    const key = `${this.invariant}\u0000${query}`;
    if (!this.missing.has(key)) this.missing.set(key, `invariant ${this.invariant}: ${message}`);
  }

  /** `query` found its table in a run. */
  found(query: string): void {
    this.seen.add(`${this.invariant}\u0000${query}`);
  }

  /** The first query that found its table in no run, as the message of the check's error. */
  neverFound(): string | undefined {
    for (const [key, message] of this.missing) if (!this.seen.has(key)) return message;
    return undefined;
  }
}

const KV_STATE_TYPES: readonly string[] = ["text", "json", "arrayBuffer"] satisfies KvStateType[];

/**
 * The type `state.kv` was asked for, given as `KV.get` takes it: a string, or `{ type }`; text
 * when none is given. A type `get` knows but an invariant cannot use, or one it does not know, is
 * the scenario's mistake.
 */
function kvStateType(file: string, binding: string, key: string, type: unknown): KvStateType {
  const given = typeof type === "object" && type !== null ? (type as { type?: unknown }).type : type;
  if (given === undefined || given === null) return "text";
  if (KV_STATE_TYPES.includes(given as string)) return given as KvStateType;
  const read = `it reads KV ${binding} ${JSON.stringify(key)}`;
  if (given === "stream") {
    throw new InputError(
      file,
      `${read} as "stream", which an invariant cannot read (it reads the final state synchronously); ask for "arrayBuffer" to get its bytes`,
    );
  }
  throw new InputError(
    file,
    `${read} as ${typeof given === "string" ? JSON.stringify(given) : String(given)}, which is not a type: ask for "text" (the default), "json" or "arrayBuffer"`,
  );
}

/** The first host-evaluated invariant that breaks, with its message. */
export function hostViolation(
  invariants: readonly Invariant[],
  state: FinalState,
  file: string,
  objectTables: ObjectTableReads,
): { invariant: string; message: string } | undefined {
  for (const invariant of invariants) {
    if (invariant.kind === "custom") {
      objectTables.invariant = invariant.name;
      let verdict: true | string;
      try {
        verdict = invariant.check(state);
      } catch (error) {
        // A read of the final state the scenario cannot make: bad input, named after the invariant.
        if (error instanceof InputError)
          throw new InputError(error.file, `invariant ${invariant.name}: ${error.problem}`);
        verdict = `the invariant threw ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`;
      }
      if ((verdict as unknown) instanceof Promise) {
        throw new InputError(
          file,
          `invariant ${invariant.name} returned a Promise: invariants read the final state synchronously and return true or a message`,
        );
      }
      if (verdict === true) continue;
      if (typeof verdict !== "string") {
        // `false` reads as "broken" to some and as "nothing wrong" to others (`bad && "why"`),
        // and `undefined` is a forgotten `return`: none of them says what the invariant meant.
        throw new InputError(
          file,
          `invariant ${invariant.name} returned ${describeReturned(verdict)}: return true when it holds, or a message saying what broke`,
        );
      }
      return { invariant: invariant.name, message: verdict };
    }
    if (invariant.kind === "answered") {
      const message = unanswered(state.responses, invariant.status);
      if (message) return { invariant: invariant.name, message };
    }
  }
  return undefined;
}

/**
 * Says which request did not end with a `status` answer, or undefined when all did. A request
 * whose client still had retries when the check's bounds stopped its resends is not judged:
 * its answer would have come from a resend the bounds do not explore.
 */
function unanswered(responses: readonly ClientResponse[], status: string): string | undefined {
  const last = new Map<string, ClientResponse>();
  for (const response of responses) last.set(response.event, response);
  for (const [event, response] of last) {
    if (statusMatches(response.status, status) || response.unfinished) continue;
    return response.status === 0
      ? `${event} got no answer after ${response.delivery} deliveries`
      : `${event}#${response.delivery} was answered ${response.status}, not ${status}${
          // The runtime's 500 for an uncaught exception has no body: the exception says why.
          response.error === undefined ? bodyShown(response.body) : `: its handler threw ${response.error}`
        }`;
  }
  return undefined;
}

/**
 * The body an answer came with, as the message of a broken `answered` ends with it
 * (`: {"error":"busy"}`), or nothing: long enough for an error's whole sentence.
 */
function bodyShown(body: string): string {
  const excerpt = bodyExcerpt(body, 200);
  return excerpt === "" ? "" : `: ${excerpt}`;
}

/** What an invariant returned, for the message that refuses it: `false`, `undefined`, `0`, `an object`. */
function describeReturned(value: unknown): string {
  if (value === null || typeof value !== "object")
    return typeof value === "function" ? "a function" : String(value);
  return Array.isArray(value) ? "an array" : "an object";
}
