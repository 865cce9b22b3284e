//! How a check ends (`EngineVerdict` in `js/src/engine.ts`); the host renders it.

use serde::Serialize;

use crate::schedule::Fault;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FaultReport {
    /// `crash_before`, `crash_after` or `transient_error`.
    pub kind: &'static str,
    pub invocation: String,
    pub effect: u32,
    pub label: String,
}

impl From<&Fault> for FaultReport {
    fn from(fault: &Fault) -> Self {
        Self {
            kind: fault.kind.as_str(),
            invocation: fault.invocation.clone(),
            effect: fault.effect,
            label: fault.label.clone(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum IncompleteReason {
    /// The time budget ran out.
    Budget,
    /// `runsMax` runs were made.
    Runs,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Verdict {
    /// Every schedule within the bounds was run and no invariant broke.
    Bounded { runs: u64 },
    /// Exploration stopped before the bounded space was exhausted; never a proof.
    Incomplete { runs: u64, reason: IncompleteReason },
    /// An invariant broke; the schedule is the shrunk one and `run_seed` replays it.
    #[serde(rename_all = "camelCase")]
    Violated {
        /// Runs made before the violation was found (1 for a replay).
        runs: u64,
        shrink_runs: u64,
        invariant: String,
        message: String,
        run_seed: String,
        events_kept: Vec<String>,
        faults: Vec<FaultReport>,
        trace: Vec<String>,
    },
    /// A replayed run in which no invariant broke.
    #[serde(rename_all = "camelCase")]
    Held {
        runs: u64,
        run_seed: String,
        trace: Vec<String>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_as_the_host_expects() {
        let incomplete = Verdict::Incomplete {
            runs: 3,
            reason: IncompleteReason::Budget,
        };
        assert_eq!(
            serde_json::to_string(&incomplete).unwrap(),
            r#"{"kind":"incomplete","runs":3,"reason":"budget"}"#
        );
        let held = Verdict::Held {
            runs: 1,
            run_seed: "s".into(),
            trace: vec![],
        };
        assert_eq!(
            serde_json::to_string(&held).unwrap(),
            r#"{"kind":"held","runs":1,"runSeed":"s","trace":[]}"#
        );
    }
}
