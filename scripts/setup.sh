#!/usr/bin/env bash
# Installs what eutaxy needs on a fresh Debian machine, idempotently: clang-19 (sqlite-wasm-rs
# compiles SQLite's C for wasm32), chromium (the visual counterexample's screenshot test renders
# the page in it, headless), the wasm32
# Rust target, wasm-pack, pnpm, then the workspace's packages and the engine's wasm build.
# Every step is skipped when what it installs is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf 'setup: %s\n' "$*"; }
need_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

missing_debs=()
command -v clang-19 >/dev/null 2>&1 || missing_debs+=(clang-19)
command -v llvm-ar-19 >/dev/null 2>&1 || missing_debs+=(llvm-19)
command -v chromium >/dev/null 2>&1 || missing_debs+=(chromium)
if [ ${#missing_debs[@]} -gt 0 ]; then
  log "installing ${missing_debs[*]} with apt-get"
  need_root apt-get update -qq
  need_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing_debs[@]}" >/dev/null
fi

export PATH="$HOME/.cargo/bin:$PATH"
if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  log "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi
if ! command -v wasm-pack >/dev/null 2>&1; then
  log "installing wasm-pack (a few minutes)"
  cargo install wasm-pack
fi
# wasm-pack would install wasm-bindgen-cli on first use; doing it here, pinned to the version in
# Cargo.lock, keeps the first build's output readable and the versions in step.
bindgen_version=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
if [ -n "$bindgen_version" ] && ! wasm-bindgen --version 2>/dev/null | grep -q "$bindgen_version"; then
  log "installing wasm-bindgen-cli $bindgen_version (a few minutes)"
  cargo install --force wasm-bindgen-cli --version "$bindgen_version"
fi
if ! command -v pnpm >/dev/null 2>&1; then
  log "installing pnpm"
  npm install -g pnpm@9 >/dev/null
fi

log "installing the workspace's packages"
pnpm install --frozen-lockfile --reporter=silent 2>/dev/null || pnpm install --reporter=silent
log "building the engine (wasm-pack into pkg/)"
pnpm run --silent build
log "ready"
