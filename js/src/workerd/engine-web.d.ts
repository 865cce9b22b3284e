/**
 * The engine as wasm-bindgen builds it for the web target (`pkg/web/`), which workerd loads from
 * a compiled wasm module. The host's bundle resolves this specifier to `pkg/web/engine.js`; the
 * host asserts the class's contract (`Engine` in `engine.ts`), as `engine.ts` does for Node's.
 */
declare module "eutaxy:engine-web" {
  export function initSync(options: { module: WebAssembly.Module }): unknown;
  export const Engine: new (config: unknown) => unknown;
}
