#!/usr/bin/env bash
# The whole test suite, as CI runs it: Rust formatting, lints and unit tests (natively, no
# wasm needed), then the wasm build, the TypeScript lint, type check and vitest suite, which
# runs the examples' checks through the built engine.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

step() { printf '\n== %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --check
step "cargo clippy (native and wasm32)"
cargo clippy --all-targets --quiet -- -D warnings
cargo clippy --all-targets --features testing --quiet -- -D warnings
cargo clippy --target wasm32-unknown-unknown --quiet -- -D warnings
step "cargo test"
cargo test --quiet
step "build (wasm-pack into pkg/, host into js/dist/)"
pnpm run --silent build
step "biome (lint and format)"
pnpm run --silent lint
step "tsc (host, tests and examples)"
pnpm run --silent typecheck
step "vitest"
results=$(mktemp)
pnpm run --silent test:js --reporter=default --reporter=json --outputFile.json="$results"
# One closing line a reader (or CI) can count, after the runners' own summaries.
node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  console.log(`vitest: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests} skipped`);' "$results"
rm -f "$results"
