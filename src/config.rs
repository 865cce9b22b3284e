//! What the host tells the engine once per check (`EngineConfig` in `js/src/engine.ts`).

use serde::Deserialize;

use crate::error::{Error, Result};

/// Upper bound on `maxFaultsPerRun`: the tree has 3^faults leaves per choice of points, so a
/// larger bound could never be explored anyway, and a typo (1000) should be an error.
pub const FAULTS_PER_RUN_LIMIT: u32 = 16;

/// Upper bound on `maxRedeliveries`, for the same reason.
pub const REDELIVERIES_LIMIT: u32 = 64;

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
    }
}
