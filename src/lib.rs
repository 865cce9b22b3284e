//! eutaxy's engine: the deterministic core of the checker.
//!
//! The TypeScript host runs the Workers' JavaScript; this crate owns every decision and every
//! piece of per-run state: the decision tree of the exhaustive explorer, the replayed schedules
//! of the shrinker, the random streams, the virtual clock, the SQLite stores (D1, and the KV,
//! Durable Object and queue state the host keeps in them) and the trace. `check::Check` is the
//! state machine; `wasm` is the only module that knows about JavaScript, so everything else is
//! tested natively with `cargo test`.

pub mod authorize;
pub mod check;
pub mod config;
pub mod d1;
pub mod dfs;
pub mod error;
pub mod footprint;
pub mod invariant;
pub mod pct;
pub mod por;
pub mod random;
pub mod replay;
pub mod rng;
pub mod run;
pub mod sampling;
pub mod schedule;
pub mod script;
pub mod shard;
pub mod shrink;
pub mod strategy;
pub mod tree;
pub mod verdict;

#[cfg(target_arch = "wasm32")]
pub mod wasm;

/// The simulated host: the tests' driver of a whole `Check`, and the benches' (`cargo bench
/// --features testing`). Not part of the engine's API.
#[cfg(any(test, feature = "testing"))]
pub mod testing;
