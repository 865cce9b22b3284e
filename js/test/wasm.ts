/** WebAssembly for the tests of CompiledWasm modules, written out by hand so no toolchain is needed. */

/** A module exporting `add(a, b)`, the sum of two i32s. */
export const ADD_WASM: Uint8Array = Buffer.from(
  [
    "0061736d01000000", // magic, version 1
    "01070160027f7f017f", // types: (i32, i32) -> i32
    "03020100", // functions: #0 has type #0
    "070701036164640000", // exports: "add" is function #0
    "0a09010700200020016a0b", // code: local.get 0, local.get 1, i32.add
  ].join(""),
  "hex",
);
