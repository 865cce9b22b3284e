/**
 * Workers globals that the Node versions eutaxy runs on may lack, for the Node runtime: Node has
 * `URLPattern` only from 23.8, and the iterator helpers (`Iterator`, `.map()`, `.toArray()` … on
 * every iterator) from 22; workerd always has both. (Kept out of globals.ts, which the workerd
 * host bundles too, where the platform's own are there.)
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
