/**
 * A Workers global that the Node versions eutaxy runs on may lack, for the Node runtime: Node has
 * `URLPattern` only from 23.8, workerd always. (Kept out of globals.ts, which the workerd host
 * bundles too, where the platform's own is there.)
 */

import { URLPattern } from "urlpattern-polyfill/urlpattern";

if (!("URLPattern" in globalThis)) {
  Object.defineProperty(globalThis, "URLPattern", { configurable: true, writable: true, value: URLPattern });
}
