/**
 * What Node and the workerd host say to each other: one request with everything the exploration
 * needs, one answer with its result or the error it ended with. Errors cross as their kind and
 * parts, so Node raises the same InputError or SimulationError with the same message.
 */

import type { CarriedError } from "../errors.ts";
import type { CheckResult, ResolvedBounds, SchemaFile, Search, Shard } from "../explore.ts";
import type { BundlePlacement, SourceMapData } from "../load/source-map.ts";
import type { WorldData } from "./world-data.ts";

/** A Worker's code as the workerd script holds it, to read its stack frames back. */
export interface WorkerSource {
  readonly placement: BundlePlacement;
  readonly map: SourceMapData | undefined;
}

export interface HostRequest {
  /** Node's working folder: messages name files relative to it, as they do in Node. */
  readonly cwd: string;
  /** Where each Worker's code is in the script, and its source map, in the world's order. */
  readonly sources: readonly WorkerSource[];
  readonly world: WorldData;
  readonly seed: string;
  readonly bounds: ResolvedBounds;
  readonly replay: string | undefined;
  readonly shard: Shard | undefined;
  readonly search: Search;
  /** The SQL files of every `d1Schema` step, by the absolute path it names. */
  readonly schemas: [string, readonly SchemaFile[]][];
}

export type HostAnswer = { readonly result: CheckResult } | { readonly error: CarriedError };
