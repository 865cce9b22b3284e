//! A simulated host for tests: it plays the role of the TypeScript host, delivering each event
//! of a plan and then the platform's work, asking for a decision at every effect, applying
//! effects to D1, asking for a redelivery when an invocation dies, and evaluating invariants of
//! its own before ending the run, so that tests drive the whole `Check` state machine.
//! `ConcurrentHost` does the same with several invocations live at once, asking `choose`
//! before every step.

use crate::check::{Check, RunEnd, RunPlan};
use crate::config::{CheckConfig, InvariantSpec};
use crate::error::Result;
use crate::invariant::Violation;
use crate::strategy::{Access, Decision, StepOption};
use crate::verdict::Verdict;

/// An effect of a fake Worker: its label, and SQL to run on a D1 database when it happens
/// (`$EVENT` in the SQL becomes the event id, `$N` its 1-based index). A transient effect can
/// fail with a transient error, which the fake Worker ignores: it goes on to its next effect.
#[derive(Debug, Clone)]
pub struct FakeEffect {
    pub label: String,
    pub sql: Option<(String, String)>,
    pub transient: bool,
    /// Its transient error can also come after it took effect (a D1 write): lost_response.
    pub lost: bool,
    /// The invocation returns after this effect when its SQL returned rows (a check before
    /// an insert).
    pub stop_if_rows: bool,
    /// The footprint of an effect without SQL (empty: conflicts with everything); an SQL
    /// effect's is `d1Footprint`'s.
    pub footprint: Vec<Access>,
    /// An RPC call over a service binding: when the effect happens it hosts a callee
    /// invocation, `<caller>/<effect>`, that makes these effects while the caller waits. A
    /// callee that dies rejects the call, and the caller goes on to its next effect.
    pub callee: Vec<FakeEffect>,
}

impl FakeEffect {
    pub fn pure(label: &str) -> Self {
        Self {
            label: label.into(),
            sql: None,
            transient: false,
            lost: false,
            stop_if_rows: false,
            footprint: Vec::new(),
            callee: Vec::new(),
        }
    }

    /// An RPC call whose callee makes `effects`.
    pub fn call(label: &str, effects: Vec<FakeEffect>) -> Self {
        Self {
            callee: effects,
            ..Self::pure(label)
        }
    }

    pub fn sql(label: &str, db: &str, sql: &str) -> Self {
        Self {
            label: label.into(),
            sql: Some((db.into(), sql.into())),
            transient: false,
            lost: false,
            stop_if_rows: false,
            footprint: Vec::new(),
            callee: Vec::new(),
        }
    }

    pub fn stop_if_rows(self) -> Self {
        Self {
            stop_if_rows: true,
            ..self
        }
    }

    pub fn transient(self) -> Self {
        Self {
            transient: true,
            ..self
        }
    }

    /// Transient, and that error can also come after the effect took place.
    pub fn lost(self) -> Self {
        Self {
            transient: true,
            lost: true,
            ..self
        }
    }
}

/// A read, then a write that depends on what was read: lost updates show in the final state.
pub fn read_then_write(table: &str) -> Vec<FakeEffect> {
    vec![
        FakeEffect::sql(
            "D1:DB read",
            "DB",
            &format!("SELECT balance FROM {table} WHERE id = 1"),
        ),
        FakeEffect::sql(
            "D1:DB write",
            "DB",
            &format!("UPDATE {table} SET balance = balance * 10 + $N WHERE id = 1"),
        ),
    ]
}

/// A check for an order's charge, then its insert when there was none: the race of two such
/// invocations charges twice.
pub fn check_then_insert() -> Vec<FakeEffect> {
    vec![
        FakeEffect::sql(
            "D1:DB check",
            "DB",
            "SELECT 1 FROM charges WHERE order_id = 'o-1'",
        )
        .stop_if_rows(),
        FakeEffect::sql(
            "D1:DB insert",
            "DB",
            "INSERT INTO charges (order_id) VALUES ('o-1')",
        ),
    ]
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
    /// The labels of the steps run, in order, with the virtual time each ran at (concurrent
    /// hosts only).
    pub steps: Vec<String>,
    /// What the host's `final_state` read at the end of the run.
    pub state: String,
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
            let decision = check.decide_offering(
                invocation,
                index,
                &effect.label,
                effect.transient,
                effect.lost,
            )?;
            decisions.push((invocation.to_string(), index, decision));
            match decision {
                Decision::CrashBefore => return Ok(true),
                Decision::Transient => continue,
                // The effect happens; the invocation sees the error and goes on.
                Decision::Proceed | Decision::CrashAfter | Decision::LostResponse => {}
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
            if !effect.callee.is_empty() {
                // A callee that dies rejects the call; the fake Worker goes on.
                let callee = format!("{invocation}/{index}");
                Self::invoke(check, &callee, &effect.callee, name, number, decisions)?;
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
            steps: Vec::new(),
            state: String::new(),
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

/// The checkout systems' invariant: no two rows of `charges` in D1 database `DB` share an order.
pub fn one_charge_per_order() -> InvariantSpec {
    InvariantSpec::Unique {
        name: "one-charge-per-order".into(),
        db: "DB".into(),
        table: "charges".into(),
        columns: vec!["order_id".into()],
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
        max_concurrent_invocations: 1,
        strategy: crate::config::StrategyKind::Exhaustive,
        pct_depth: 3,
        shard: None,
        partial_order_reduction: true,
        split_answers: false,
    }
}

/// A host with up to `max_concurrent` invocations of driver events live at once. At every step
/// it offers the next effect of every live invocation that is not waiting on a callee, in the
/// order they started (a callee starts when its caller's call happens), then the delivery of
/// the next event while fewer than `max_concurrent` deliveries are live; it calls `choose` even
/// for one option. A crashed delivery's resend starts within the crash's step.
pub struct ConcurrentHost {
    pub effects: Vec<Vec<FakeEffect>>,
    pub retries: u32,
    pub max_concurrent: usize,
    pub invariant: Option<HostInvariant>,
    pub final_state: Option<fn(&mut Check) -> String>,
}

struct Live {
    id: String,
    event: u32,
    delivery: u32,
    effects: Vec<FakeEffect>,
    next: usize,
    /// The caller's id, for a callee.
    caller: Option<String>,
    /// Whether it waits for the callee its last effect hosts.
    waiting: bool,
}

/// No test run takes more steps than this.
const STEPS_MAX: usize = 10_000;

impl ConcurrentHost {
    pub fn new(effects: Vec<Vec<FakeEffect>>, max_concurrent: usize) -> Self {
        Self {
            effects,
            retries: 0,
            max_concurrent,
            invariant: None,
            final_state: None,
        }
    }

    fn footprint(check: &Check, effect: &FakeEffect, name: &str, number: u32) -> Vec<Access> {
        match &effect.sql {
            Some((db, sql)) => check
                .d1_footprint(db, &expand(sql, name, number))
                .unwrap_or_default(),
            None => effect.footprint.clone(),
        }
    }

    pub fn play_run(&self, check: &mut Check, plan: RunPlan) -> Result<PlayedRun> {
        let mut decisions = Vec::new();
        let mut steps = Vec::new();
        let mut live: Vec<Live> = Vec::new();
        let mut delivered = 0;
        for _ in 0..STEPS_MAX {
            let mut options = Vec::new();
            // The live invocation each option steps; `None` for the delivery.
            let mut stepping = Vec::new();
            for (at, invocation) in live.iter().enumerate().filter(|(_, i)| !i.waiting) {
                let name = check.event_name(invocation.event)?.to_string();
                let effect = &invocation.effects[invocation.next];
                options.push(StepOption {
                    label: format!(
                        "{} effect #{} ({})",
                        invocation.id, invocation.next, effect.label
                    ),
                    invocation: Some(invocation.id.clone()),
                    effect: Some(invocation.next as u32),
                    footprint: Self::footprint(check, effect, &name, invocation.event + 1),
                    answer: false,
                });
                stepping.push(Some(at));
            }
            let deliveries = live.iter().filter(|i| i.caller.is_none()).count();
            if deliveries < self.max_concurrent && delivered < plan.events.len() {
                let id = format!("{}#1", check.event_name(plan.events[delivered])?);
                options.push(StepOption {
                    label: format!("deliver {id}"),
                    invocation: Some(id),
                    effect: None,
                    footprint: vec![Access {
                        resource: "deliveries".into(),
                        write: true,
                    }],
                    answer: false,
                });
                stepping.push(None);
            }
            if options.is_empty() {
                break;
            }
            let chosen = check.choose(&options)?;
            let time = check.now_ms() - crate::run::CLOCK_START_MS;
            steps.push(format!("{} at {time}", options[chosen].label));
            let Some(at) = stepping[chosen] else {
                if let Some(&event) = plan.events.get(delivered) {
                    delivered += 1;
                    self.start(check, &mut live, event, 1)?;
                }
                continue;
            };
            let invocation = &mut live[at];
            let name = check.event_name(invocation.event)?.to_string();
            let effect = invocation.effects[invocation.next].clone();
            let index = invocation.next as u32;
            let decision = check.decide_offering(
                &invocation.id,
                index,
                &effect.label,
                effect.transient,
                effect.lost,
            )?;
            decisions.push((invocation.id.clone(), index, decision));
            let mut died = decision == Decision::CrashBefore;
            let mut finished = false;
            if matches!(
                decision,
                Decision::Proceed | Decision::CrashAfter | Decision::LostResponse
            ) {
                if let Some((db, sql)) = &effect.sql {
                    let result = check.d1_run(db, &expand(sql, &name, invocation.event + 1), &[]);
                    finished = effect.stop_if_rows && result.is_ok_and(|r| !r.rows.is_empty());
                }
                died = decision == Decision::CrashAfter;
            }
            invocation.next += 1;
            let hosts = !died && !effect.callee.is_empty();
            if hosts {
                invocation.waiting = true;
                let callee = Live {
                    id: format!("{}/{index}", invocation.id),
                    event: invocation.event,
                    delivery: invocation.delivery,
                    effects: effect.callee.clone(),
                    next: 0,
                    caller: Some(invocation.id.clone()),
                    waiting: false,
                };
                live.push(callee);
            } else if died || finished || invocation.next == invocation.effects.len() {
                self.end(check, &mut live, at, died)?;
            }
        }
        let state = self
            .final_state
            .map_or_else(String::new, |read| read(check));
        let host_violation = self.invariant.and_then(|invariant| invariant(check));
        let end = check.end_run(host_violation)?;
        Ok(PlayedRun {
            plan,
            decisions,
            end,
            steps,
            state,
        })
    }

    /// Ends the live invocation at `at`: a callee's caller goes on (and ends too when that was
    /// its last effect); a delivery that died is resent while the client has retries.
    fn end(&self, check: &mut Check, live: &mut Vec<Live>, at: usize, died: bool) -> Result<()> {
        let ended = live.remove(at);
        match ended.caller {
            Some(caller) => {
                let Some(at) = live.iter().position(|i| i.id == caller) else {
                    return Ok(());
                };
                live[at].waiting = false;
                if live[at].next == live[at].effects.len() {
                    self.end(check, live, at, false)?;
                }
            }
            None => {
                let (event, delivery) = (ended.event, ended.delivery);
                if died && delivery <= self.retries && check.redeliver(event, delivery + 1)? {
                    self.start(check, live, event, delivery + 1)?;
                }
            }
        }
        Ok(())
    }

    fn start(&self, check: &Check, live: &mut Vec<Live>, event: u32, delivery: u32) -> Result<()> {
        let effects = &self.effects[event as usize];
        if effects.is_empty() {
            return Ok(());
        }
        live.push(Live {
            id: format!("{}#{delivery}", check.event_name(event)?),
            event,
            delivery,
            effects: effects.clone(),
            next: 0,
            caller: None,
            waiting: false,
        });
        Ok(())
    }

    pub fn check(&self, check: &mut Check) -> Result<(Vec<PlayedRun>, Verdict)> {
        let mut runs = Vec::new();
        while let Some(plan) = check.next_run(0)? {
            assert!(runs.len() < RUNS_MAX, "the check does not end");
            runs.push(self.play_run(check, plan)?);
        }
        Ok((runs, check.verdict()?))
    }
}

fn expand(sql: &str, name: &str, number: u32) -> String {
    sql.replace("$EVENT", name)
        .replace("$N", &number.to_string())
}
