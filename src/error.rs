//! The engine's one error type. Every error is a sentence a user can act on; the wasm boundary
//! turns it into a JavaScript `Error` with that sentence as its message.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    message: String,
}

/// What a run that does not repeat itself depends on, as every nondeterminism message says it:
/// the Workers' modules start afresh in every run, while the scenario's module is evaluated once
/// per check, so a script of it that keeps state between runs is the likeliest cause.
pub const OUTSIDE: &str = "the Worker, or a script of the scenario (an outbound() answer, a \
     service() method, an invariant), depends on something outside the simulation, such as state \
     a scenario script keeps from one run to the next (the scenario's module is evaluated once per \
     check; the Workers' modules, once per run)";

impl Error {
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    /// The message for a run that diverged from an earlier run with the same choices. It is
    /// the same wherever divergence is detected (the explorer's tree or a replayed schedule),
    /// so that a user learns one sentence.
    pub fn nondeterminism(decision: usize, reached: &str, recorded: &str) -> Self {
        Self::new(format!(
            "nondeterminism: at decision {decision} the run reached {reached} but an earlier run \
             with the same choices reached {recorded}; {OUTSIDE}"
        ))
    }

    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;
