//! How a check ends (`EngineVerdict` in `js/src/engine.ts`); the host renders it.

use serde::{Deserialize, Serialize};

use crate::schedule::Fault;
use crate::shard::Shard;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FaultReport {
    /// `crash_before`, `crash_after` or `transient_error`.
    pub kind: String,
    pub invocation: String,
    pub effect: u32,
    pub label: String,
}

impl From<&Fault> for FaultReport {
    fn from(fault: &Fault) -> Self {
        Self {
            kind: fault.kind.as_str().to_string(),
            invocation: fault.invocation.clone(),
            effect: fault.effect,
            label: fault.label.clone(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum IncompleteReason {
    /// The time budget ran out.
    Budget,
    /// `runsMax` runs were made.
    Runs,
    /// Merged shard verdicts where a shard of the split is missing.
    Shards,
}

/// The strategy that produced a verdict. `auto` reports the strategy it ended with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StrategyName {
    #[default]
    Exhaustive,
    Random,
    Pct,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Verdict {
    /// Every schedule within the bounds was run and no invariant broke. Only the exhaustive
    /// strategy says it.
    #[serde(rename_all = "camelCase")]
    Bounded {
        runs: u64,
        #[serde(default)]
        strategy: StrategyName,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        shard: Option<Shard>,
    },
    /// Exploration stopped before the bounded space was exhausted; never a proof.
    #[serde(rename_all = "camelCase")]
    Incomplete {
        runs: u64,
        reason: IncompleteReason,
        #[serde(default)]
        strategy: StrategyName,
        /// Runs with different decision paths (for the exhaustive strategy, every run).
        #[serde(default)]
        distinct_schedules: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        shard: Option<Shard>,
        /// With strategy `auto`: the exhaustive runs made before it switched to PCT.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        switched_after_runs: Option<u64>,
    },
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
        /// Absent when the check used none of the options that came with concurrency
        /// (strategy, `maxConcurrentInvocations` above 1, shards), so that such checks report
        /// exactly as before them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        strategy: Option<StrategyName>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        shard: Option<Shard>,
        /// With strategy `auto`, when it found the violation by PCT after switching: the
        /// exhaustive runs made before the switch, which the clock decided.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        switched_after_runs: Option<u64>,
    },
    /// A replayed run in which no invariant broke.
    #[serde(rename_all = "camelCase")]
    Held {
        runs: u64,
        run_seed: String,
        trace: Vec<String>,
    },
}

impl Verdict {
    pub fn runs(&self) -> u64 {
        match self {
            Verdict::Bounded { runs, .. }
            | Verdict::Incomplete { runs, .. }
            | Verdict::Violated { runs, .. }
            | Verdict::Held { runs, .. } => *runs,
        }
    }

    pub fn strategy(&self) -> StrategyName {
        match self {
            Verdict::Bounded { strategy, .. } | Verdict::Incomplete { strategy, .. } => *strategy,
            Verdict::Violated { strategy, .. } => strategy.unwrap_or_default(),
            Verdict::Held { .. } => StrategyName::Exhaustive,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_as_the_host_expects() {
        let incomplete = Verdict::Incomplete {
            runs: 3,
            reason: IncompleteReason::Budget,
            strategy: StrategyName::Pct,
            distinct_schedules: 2,
            shard: Some(Shard { index: 1, count: 4 }),
            switched_after_runs: None,
        };
        let json = serde_json::to_string(&incomplete).unwrap();
        assert_eq!(
            json,
            r#"{"kind":"incomplete","runs":3,"reason":"budget","strategy":"pct","distinctSchedules":2,"shard":{"index":1,"count":4}}"#
        );
        assert_eq!(serde_json::from_str::<Verdict>(&json).unwrap(), incomplete);
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
