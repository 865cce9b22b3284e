//! A simulated host for tests: it plays the role of the TypeScript host, delivering each event
//! of a plan and then the platform's work, asking for a decision at every effect, applying
//! effects to D1, asking for a redelivery when an invocation dies, and evaluating invariants of
//! its own before ending the run, so that tests drive the whole `Check` state machine.

use crate::check::{Check, RunEnd, RunPlan};
use crate::config::CheckConfig;
use crate::error::Result;
use crate::invariant::Violation;
use crate::strategy::Decision;
use crate::verdict::Verdict;

/// An effect of a fake Worker: its label, and SQL to run on a D1 database when it happens
/// (`$EVENT` in the SQL becomes the event id, `$N` its 1-based index). A transient effect can
/// fail with a transient error, which the fake Worker ignores: it goes on to its next effect.
#[derive(Debug, Clone)]
pub struct FakeEffect {
    pub label: String,
    pub sql: Option<(String, String)>,
    pub transient: bool,
}

impl FakeEffect {
    pub fn pure(label: &str) -> Self {
        Self {
            label: label.into(),
            sql: None,
            transient: false,
        }
    }

    pub fn sql(label: &str, db: &str, sql: &str) -> Self {
        Self {
            label: label.into(),
            sql: Some((db.into(), sql.into())),
            transient: false,
        }
    }

    pub fn transient(self) -> Self {
        Self {
            transient: true,
            ..self
        }
    }
}

/// Work the platform makes after the driver's events (a queue batch): its name, the effects of
/// each delivery, and how often the platform retries it when a delivery dies.
#[derive(Debug, Clone)]
pub struct FakeWork {
    pub name: String,
    pub effects: Vec<FakeEffect>,
    pub retries: u32,
}

/// The host's own invariant: reads the state through the check, answers a violation.
pub type HostInvariant = fn(&mut Check) -> Option<Violation>;

/// What one run looked like from the host's side.
#[derive(Debug, Clone, PartialEq)]
pub struct PlayedRun {
    pub plan: RunPlan,
    /// Every decision, with the invocation and effect it was made at.
    pub decisions: Vec<(String, u32, Decision)>,
    pub end: RunEnd,
}

pub struct FakeHost {
    /// The effects an invocation of each event makes, by event index.
    pub effects: Vec<Vec<FakeEffect>>,
    /// How many times the driver's client resends a request that got no answer.
    pub retries: u32,
    pub platform: Vec<FakeWork>,
    pub invariant: Option<HostInvariant>,
}

/// A host loop never needs more runs than this in tests.
const RUNS_MAX: usize = 100_000;

impl FakeHost {
    /// The same effects for every one of `events` events.
    pub fn uniform(events: usize, effects: &[FakeEffect], retries: u32) -> Self {
        Self {
            effects: vec![effects.to_vec(); events],
            retries,
            platform: Vec::new(),
            invariant: None,
        }
    }

    /// Plays one invocation's effects; answers whether it died.
    fn invoke(
        check: &mut Check,
        invocation: &str,
        effects: &[FakeEffect],
        name: &str,
        number: u32,
        decisions: &mut Vec<(String, u32, Decision)>,
    ) -> Result<bool> {
        for (index, effect) in effects.iter().enumerate() {
            let index = index as u32;
            let decision = check.decide(invocation, index, &effect.label, effect.transient)?;
            decisions.push((invocation.to_string(), index, decision));
            match decision {
                Decision::CrashBefore => return Ok(true),
                Decision::Transient => continue,
                Decision::Proceed | Decision::CrashAfter => {}
            }
            if let Some((db, sql)) = &effect.sql {
                // A failing statement throws in the Worker, which answers an error: the
                // invocation ends, it does not die.
                let _ = check.d1_run(
                    db,
                    &sql.replace("$EVENT", name)
                        .replace("$N", &number.to_string()),
                    &[],
                );
            }
            if decision == Decision::CrashAfter {
                return Ok(true);
            }
        }
        Ok(false)
    }

    pub fn play_run(&self, check: &mut Check, plan: RunPlan) -> Result<PlayedRun> {
        let mut decisions = Vec::new();
        for &event in &plan.events {
            let name = check.event_name(event)?.to_string();
            let mut delivery: u32 = 1;
            loop {
                let invocation = format!("{name}#{delivery}");
                let effects = &self.effects[event as usize];
                let died = Self::invoke(
                    check,
                    &invocation,
                    effects,
                    &name,
                    event + 1,
                    &mut decisions,
                )?;
                if !died || delivery > self.retries || !check.redeliver(event, delivery + 1)? {
                    break;
                }
                delivery += 1;
            }
        }
        for (number, work) in self.platform.iter().enumerate() {
            let mut delivery: u32 = 1;
            loop {
                let invocation = format!("{}#{delivery}", work.name);
                let number = number as u32 + 1;
                let died = Self::invoke(
                    check,
                    &invocation,
                    &work.effects,
                    &work.name,
                    number,
                    &mut decisions,
                )?;
                if !died
                    || delivery > work.retries
                    || !check.redeliver_platform(&work.name, delivery + 1)?
                {
                    break;
                }
                delivery += 1;
            }
        }
        let host_violation = self.invariant.and_then(|invariant| invariant(check));
        let end = check.end_run(host_violation)?;
        Ok(PlayedRun {
            plan,
            decisions,
            end,
        })
    }

    /// Runs a whole check, returning every run and the verdict.
    pub fn check(&self, check: &mut Check) -> Result<(Vec<PlayedRun>, Verdict)> {
        let mut runs = Vec::new();
        while let Some(plan) = check.next_run(0)? {
            assert!(runs.len() < RUNS_MAX, "the check does not end");
            runs.push(self.play_run(check, plan)?);
        }
        Ok((runs, check.verdict()?))
    }
}

pub fn config(events: usize, max_faults_per_run: u32, max_redeliveries: u32) -> CheckConfig {
    CheckConfig {
        seed: "checkout".into(),
        events: (1..=events).map(|i| format!("req-{i}")).collect(),
        max_faults_per_run,
        max_redeliveries,
        budget_ms: 60_000,
        runs_max: 1_000_000,
        shrink_runs_max: 1_000,
        replay: None,
        invariants: vec![],
    }
}
