//! What the host tells the engine once per check (`EngineConfig` in `js/src/engine.ts`).

use serde::{Deserialize, Deserializer};

use crate::error::{Error, Result};
use crate::shard::Shard;

/// Upper bound on `maxFaultsPerRun`: the tree has 3^faults leaves per choice of points, so a
/// larger bound could never be explored anyway, and a typo (1000) should be an error.
pub const FAULTS_PER_RUN_LIMIT: u32 = 16;

/// Upper bound on `maxRedeliveries`, for the same reason.
pub const REDELIVERIES_LIMIT: u32 = 64;

/// Upper bound on `maxConcurrentInvocations`: each adds a factor to the interleavings.
pub const CONCURRENT_INVOCATIONS_LIMIT: u32 = 64;

/// Upper bound on `pctDepth`: PCT's guarantee shrinks exponentially with the depth.
pub const PCT_DEPTH_LIMIT: u32 = 16;

/// How the check explores the decision tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StrategyKind {
    /// Depth-first over every schedule within the bounds (with partial-order reduction).
    #[default]
    Exhaustive,
    /// Seeded random walks over the tree (`random.rs`).
    Random,
    /// Probabilistic Concurrency Testing (`pct.rs`).
    Pct,
    /// Exhaustive; after a quarter of the budget, PCT if the tree is clearly too large.
    Auto,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckConfig {
    /// The check's seed text; the base seed of every run is its FNV-1a hash.
    pub seed: String,
    /// Event ids in the driver's order; events are addressed by index everywhere else.
    pub events: Vec<String>,
    pub max_faults_per_run: u32,
    pub max_redeliveries: u32,
    pub budget_ms: u64,
    pub runs_max: u64,
    pub shrink_runs_max: u64,
    /// A run seed: replay exactly that schedule once instead of exploring.
    #[serde(default)]
    pub replay: Option<String>,
    #[serde(default)]
    pub invariants: Vec<InvariantSpec>,
    /// How many invocations may be live at once; above 1 the host calls `choose` at every
    /// step.
    #[serde(default = "one", deserialize_with = "one_if_absent")]
    pub max_concurrent_invocations: u32,
    #[serde(default, deserialize_with = "default_if_absent")]
    pub strategy: StrategyKind,
    /// PCT's bug depth d: d - 1 priority change points per run.
    #[serde(default = "three", deserialize_with = "three_if_absent")]
    pub pct_depth: u32,
    #[serde(default)]
    pub shard: Option<Shard>,
    /// Partial-order reduction in exhaustive search; off only to compare against it.
    #[serde(default = "yes", deserialize_with = "yes_if_absent")]
    pub partial_order_reduction: bool,
    /// Whether the host makes every binding call's answer a step of its own in interleaved runs
    /// (see `Schedule::split_answers`); a replay takes it from its run seed instead.
    #[serde(default, deserialize_with = "default_if_absent")]
    pub split_answers: bool,
}

// The host spells an absent optional field as `undefined` as often as it leaves it out; both
// mean the default.

fn one() -> u32 {
    1
}

fn three() -> u32 {
    3
}

fn yes() -> bool {
    true
}

fn one_if_absent<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<u32, D::Error> {
    Ok(Option::deserialize(d)?.unwrap_or_else(one))
}

fn three_if_absent<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<u32, D::Error> {
    Ok(Option::deserialize(d)?.unwrap_or_else(three))
}

fn yes_if_absent<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<bool, D::Error> {
    Ok(Option::deserialize(d)?.unwrap_or_else(yes))
}

/// `T`'s default for an absent or `undefined`/`null` field.
pub fn default_if_absent<'de, D, T>(d: D) -> std::result::Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::deserialize(d)?.unwrap_or_default())
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum InvariantSpec {
    /// No two rows of `table` in the D1 database `db` agree on all of `columns` (rows with a
    /// NULL in any of them are ignored, as a SQL UNIQUE constraint would).
    Unique {
        name: String,
        db: String,
        table: String,
        columns: Vec<String>,
    },
    /// A read-only query over `db` that finds what must not exist: violated when it returns a
    /// row.
    Query {
        name: String,
        db: String,
        sql: String,
    },
    /// A read-only query over `db` that returns one value, which every run must leave as setup
    /// left it (a total, a count).
    Conserved {
        name: String,
        db: String,
        sql: String,
    },
}

impl InvariantSpec {
    pub fn name(&self) -> &str {
        match self {
            InvariantSpec::Unique { name, .. }
            | InvariantSpec::Query { name, .. }
            | InvariantSpec::Conserved { name, .. } => name,
        }
    }
}

impl CheckConfig {
    /// Rejects configurations the engine cannot honour, with the field named as the host
    /// spells it.
    pub fn validate(&self) -> Result<()> {
        if self.max_faults_per_run > FAULTS_PER_RUN_LIMIT {
            return Err(Error::new(format!(
                "maxFaultsPerRun is {} but must be at most {FAULTS_PER_RUN_LIMIT}",
                self.max_faults_per_run
            )));
        }
        if self.max_redeliveries > REDELIVERIES_LIMIT {
            return Err(Error::new(format!(
                "maxRedeliveries is {} but must be at most {REDELIVERIES_LIMIT}",
                self.max_redeliveries
            )));
        }
        if !(1..=CONCURRENT_INVOCATIONS_LIMIT).contains(&self.max_concurrent_invocations) {
            return Err(Error::new(format!(
                "maxConcurrentInvocations is {} but must be between 1 and \
                 {CONCURRENT_INVOCATIONS_LIMIT}",
                self.max_concurrent_invocations
            )));
        }
        if !(1..=PCT_DEPTH_LIMIT).contains(&self.pct_depth) {
            return Err(Error::new(format!(
                "pctDepth is {} but must be between 1 and {PCT_DEPTH_LIMIT}",
                self.pct_depth
            )));
        }
        if let Some(shard) = self.shard {
            shard.validate()?;
        }
        if self.runs_max == 0 {
            return Err(Error::new("runsMax must be at least 1"));
        }
        if u32::try_from(self.events.len()).is_err() {
            return Err(Error::new("too many events"));
        }
        for (index, event) in self.events.iter().enumerate() {
            if event.is_empty() || event.contains(['#', ':', ',', '/']) {
                return Err(Error::new(format!(
                    "event id '{event}' must be non-empty and free of '#', ':', ',' and '/'"
                )));
            }
            if self.events[..index].contains(event) {
                return Err(Error::new(format!("event id '{event}' appears twice")));
            }
        }
        let mut names: Vec<&str> = Vec::with_capacity(self.invariants.len());
        for invariant in &self.invariants {
            if names.contains(&invariant.name()) {
                return Err(Error::new(format!(
                    "invariant name '{}' appears twice",
                    invariant.name()
                )));
            }
            names.push(invariant.name());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(events: &[&str]) -> CheckConfig {
        CheckConfig {
            seed: "checkout".into(),
            events: events.iter().map(|e| (*e).to_string()).collect(),
            max_faults_per_run: 1,
            max_redeliveries: 1,
            budget_ms: 60_000,
            runs_max: 10_000,
            shrink_runs_max: 1_000,
            replay: None,
            invariants: vec![],
            max_concurrent_invocations: 1,
            strategy: StrategyKind::Exhaustive,
            pct_depth: 3,
            shard: None,
            partial_order_reduction: true,
            split_answers: false,
        }
    }

    #[test]
    fn parses_the_host_shape() {
        let json = r#"{"seed":"checkout","events":["req-1","req-2"],"maxFaultsPerRun":1,
            "maxRedeliveries":2,"budgetMs":30000,"runsMax":100,"shrinkRunsMax":50,
            "invariants":[{"kind":"unique","name":"one-charge-per-order","db":"payments/DB",
            "table":"charges","columns":["order_id"]},
            {"kind":"query","name":"no-negative","db":"DB","sql":"SELECT 1"},
            {"kind":"conserved","name":"total","db":"DB","sql":"SELECT 2"}]}"#;
        let parsed: CheckConfig = serde_json::from_str(json).unwrap();
        assert_eq!(parsed.max_redeliveries, 2);
        assert_eq!(parsed.replay, None);
        assert_eq!(parsed.max_concurrent_invocations, 1);
        assert_eq!(parsed.strategy, StrategyKind::Exhaustive);
        assert_eq!(parsed.pct_depth, 3);
        assert!(parsed.partial_order_reduction);
        assert_eq!(
            parsed.invariants,
            vec![
                InvariantSpec::Unique {
                    name: "one-charge-per-order".into(),
                    db: "payments/DB".into(),
                    table: "charges".into(),
                    columns: vec!["order_id".into()],
                },
                InvariantSpec::Query {
                    name: "no-negative".into(),
                    db: "DB".into(),
                    sql: "SELECT 1".into(),
                },
                InvariantSpec::Conserved {
                    name: "total".into(),
                    db: "DB".into(),
                    sql: "SELECT 2".into(),
                }
            ]
        );
        parsed.validate().unwrap();
    }

    #[test]
    fn rejects_bad_event_ids_and_bounds() {
        assert!(config(&["req#1"]).validate().is_err());
        assert!(config(&["a", "a"]).validate().is_err());
        let mut too_many = config(&["a"]);
        too_many.max_faults_per_run = 100;
        assert!(too_many.validate().is_err());
        let mut concurrent = config(&["a"]);
        concurrent.max_concurrent_invocations = 0;
        assert!(concurrent.validate().is_err());
        concurrent.max_concurrent_invocations = 2;
        concurrent.shard = Some(Shard { index: 3, count: 3 });
        assert!(concurrent.validate().is_err());
        let json = r#"{"seed":"s","events":["a"],"maxFaultsPerRun":1,"maxRedeliveries":0,
            "budgetMs":1,"runsMax":1,"shrinkRunsMax":1,"maxConcurrentInvocations":2,
            "strategy":"auto","pctDepth":2,"shard":{"index":1,"count":2}}"#;
        let parsed: CheckConfig = serde_json::from_str(json).unwrap();
        assert_eq!(parsed.strategy, StrategyKind::Auto);
        let nulls = r#"{"seed":"s","events":["a"],"maxFaultsPerRun":1,"maxRedeliveries":0,
            "budgetMs":1,"runsMax":1,"shrinkRunsMax":1,"maxConcurrentInvocations":null,
            "strategy":null,"pctDepth":null,"shard":null,"partialOrderReduction":null}"#;
        let defaults: CheckConfig = serde_json::from_str(nulls).unwrap();
        assert_eq!(
            (
                defaults.max_concurrent_invocations,
                defaults.strategy,
                defaults.pct_depth,
                defaults.partial_order_reduction
            ),
            (1, StrategyKind::Exhaustive, 3, true)
        );
        assert_eq!(parsed.shard, Some(Shard { index: 1, count: 2 }));
        parsed.validate().unwrap();
    }
}
