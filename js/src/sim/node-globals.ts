/**
 * Workers globals that the Node versions eutaxy runs on may lack, for the Node runtime: Node has
 * `URLPattern` only from 23.8, the iterator helpers (`Iterator`, `.map()`, `.toArray()` … on
 * every iterator) from 22, and the other built-ins of ES2024 and ES2025 below from 21 to 25;
 * workerd has them all. (Kept out of globals.ts, which the workerd host bundles too, where the
 * platform's own are there.)
 */

import { createRequire } from "node:module";
import { URLPattern } from "urlpattern-polyfill/urlpattern";

if (!("URLPattern" in globalThis)) {
  Object.defineProperty(globalThis, "URLPattern", { configurable: true, writable: true, value: URLPattern });
}

/**
 * The iterator helpers of ES2025, as workerd's V8 has them: core-js's, only where the platform
 * has none. A Worker calls them on the iterators a binding returns (`sql.exec(…).raw().toArray()`,
 * as Drizzle does) and on its own (`map.values().filter(…)`).
 */
const ITERATOR_HELPERS = [
  "constructor",
  "from",
  "drop",
  "every",
  "filter",
  "find",
  "flat-map",
  "for-each",
  "map",
  "reduce",
  "some",
  "take",
  "to-array",
];

if (!("Iterator" in globalThis)) {
  const require = createRequire(import.meta.url);
  for (const helper of ITERATOR_HELPERS) require(`core-js/modules/es.iterator.${helper}.js`);
}

/**
 * The built-ins of ES2024 and ES2025 (and those of the proposals V8 ships) that workerd's V8 has
 * and Node 20 lacks, compared with Miniflare 4.20260426.0: a Worker written for Cloudflare calls
 * them (`Object.groupBy`, `Promise.withResolvers`, `new Set(a).union(b)`, `bytes.toHex()`), and
 * on Node 20 each would throw `TypeError: … is not a function`, reported as the Worker's bug.
 * core-js's, each defined only where the platform has none, so a newer Node keeps its own.
 * (`Float16Array`, `JSON.rawJSON` and `Intl.DurationFormat` are not among them: core-js has no
 * polyfill of the first and third, and its `JSON.rawJSON` replaces `JSON.stringify`.)
 */
const ES_BUILT_INS = [
  "object.group-by",
  "map.group-by",
  "promise.with-resolvers",
  "promise.try",
  "array.from-async",
  "set.union.v2",
  "set.intersection.v2",
  "set.difference.v2",
  "set.symmetric-difference.v2",
  "set.is-subset-of.v2",
  "set.is-superset-of.v2",
  "set.is-disjoint-from.v2",
  "array-buffer.transfer",
  "array-buffer.transfer-to-fixed-length",
  "uint8-array.from-base64",
  "uint8-array.from-hex",
  "uint8-array.to-base64",
  "uint8-array.to-hex",
  "uint8-array.set-from-base64",
  "uint8-array.set-from-hex",
  "regexp.escape",
  "error.is-error",
  "math.sum-precise",
  "math.f16round",
  "iterator.concat",
  "suppressed-error.constructor",
  "disposable-stack.constructor",
  "async-disposable-stack.constructor",
];

{
  const require = createRequire(import.meta.url);
  for (const module of ES_BUILT_INS) require(`core-js/modules/es.${module}.js`);
}
