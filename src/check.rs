//! `Check`, the state machine behind the wasm `Engine`: one check of one scenario.
//!
//! The host drives it run by run:
//!
//! ```text
//! d1Open/d1Setup* seal  ( nextRun  (decide | redeliver | redeliverPlatform | fillRandom | nowMs | trace | d1*)*  endRun )*  verdict
//! ```
//!
//! Phases: Explore (exhaustive search, `dfs.rs`; or sampling, `random.rs` and `pct.rs`; or
//! `auto`, which starts exhaustive and may switch to PCT) then, on the first violation, Shrink
//! (`shrink.rs`, candidates run with `replay.rs`), then Done. With a run seed to replay:
//! Replay (one run) then Done. `nextRun` answers `None` once the check is Done, and `verdict`
//! tells how it ended.
//!
//! Limits: exploration stops at `runs_max` runs or when the host reports `budget_ms` elapsed
//! (both reported as Incomplete, never Bounded); shrinking stops after `shrink_runs_max` runs
//! and is not bound by the time budget, so that a violation is always reported shrunk as far
//! as those runs allow.
//!
//! With `maxConcurrentInvocations > 1` the host also calls `choose` before every step (even
//! one with a single option), and every `decide` must follow the `choose` of its step.

use std::collections::HashSet;

use serde::Serialize;

use crate::config::{CheckConfig, StrategyKind};
use crate::d1::{self, one_line, Databases, RawResult, Statement, Value};
use crate::dfs::Dfs;
use crate::error::{Error, Result};
use crate::invariant::{self, Violation};
use crate::pct::Pct;
use crate::random::RandomWalk;
use crate::replay::Replay;
use crate::rng::{fnv1a, stream_seed};
use crate::run::Run;
use crate::schedule::{parse_invocation, Fault, Schedule};
use crate::shrink::{Outcome, Shrinker};
use crate::strategy::{Access, ChoicePoint, Decision, Point, StepOption, Strategy};
use crate::tree::OPTIONS_MAX;
use crate::verdict::{FaultReport, IncompleteReason, StrategyName, Verdict};

/// How a replay's trace starts a line saying the run was not the one its seed was printed for:
/// a fault or a scheduling choice of the seed did not happen (the host shows these lines).
pub const REPLAY_NOT_AS_PRINTED: &str = "replay: not as printed: ";

/// Upper bound on distinct schedules remembered; past it the count stops growing (and says
/// at least that many).
pub const DISTINCT_SCHEDULES_MAX: usize = 1_000_000;

/// `auto` judges the tree only after this many runs, so that the estimate has some footing.
const AUTO_RUNS_MIN: u64 = 16;
/// How many times what the whole budget covers the estimated tree must be for `auto` to switch
/// to PCT (see `judge_auto`).
const AUTO_BEYOND: f64 = 20.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Phase {
    Explore,
    Shrink,
    Replay,
}

/// Whether a D1 statement shows in the run's trace. Those that do are a Worker's (a D1
/// binding's, a Durable Object's SQL); those that do not are the host's bookkeeping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Traced {
    Yes,
    No,
}

impl Traced {
    /// Whose statement it is, for what D1 lets it do (see `authorize.rs`).
    fn source(self) -> d1::Source {
        match self {
            Traced::Yes => d1::Source::Worker,
            Traced::No => d1::Source::Engine,
        }
    }
}

/// What the engine answers at the start of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunPlan {
    /// Indexes into the configured events, in delivery order.
    pub events: Vec<u32>,
    pub phase: Phase,
    /// Whether the run keeps a trace; when not, the host need not send its lines.
    pub trace: bool,
    /// Whether every binding call's answer is a step of its own (`Schedule::split_answers`).
    pub split_answers: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunEnd {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub violated: Option<Violation>,
}

impl Serialize for Violation {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("Violation", 2)?;
        s.serialize_field("invariant", &self.invariant)?;
        s.serialize_field("message", &self.message)?;
        s.end()
    }
}

/// The strategy exploring the tree.
enum Explorer {
    Dfs(Dfs),
    Random(RandomWalk),
    Pct(Pct),
}

impl Explorer {
    fn strategy(&mut self) -> &mut dyn Strategy {
        match self {
            Explorer::Dfs(dfs) => dfs,
            Explorer::Random(random) => random,
            Explorer::Pct(pct) => pct,
        }
    }

    fn name(&self) -> StrategyName {
        match self {
            Explorer::Dfs(_) => StrategyName::Exhaustive,
            Explorer::Random(_) => StrategyName::Random,
            Explorer::Pct(_) => StrategyName::Pct,
        }
    }
}

enum State {
    Explore(Explorer),
    // Boxed: a shrinker is several times the size of the other states.
    Shrink(Box<Shrinker>),
    Replay(Schedule),
    Done(Verdict),
}

/// The strategy and bounds of the run in progress.
struct Active {
    /// `None` while exploring: the strategy is the explorer held by `State::Explore`.
    replay: Option<Replay>,
    redeliveries_max: u32,
}

pub struct Check {
    config: CheckConfig,
    base_seed: u64,
    /// The config's `split_answers`, or the replayed run seed's.
    split_answers: bool,
    databases: Databases,
    /// What each `conserved` invariant's query returned after setup, by invariant; `None` for
    /// the other kinds. Filled by `seal`.
    baselines: Vec<Option<Value>>,
    state: State,
    /// The current run's state. Before the first run it serves module initialisation, which
    /// may read the clock and random streams too.
    run: Run,
    active: Option<Active>,
    /// How far the host has moved the run's clock past the engine's (a timer, an alarm, a cron
    /// tick, a queue delay): SQL's `'now'` reads the clock the Worker reads.
    clock_skew_ms: u64,
    explore_runs: u64,
    /// Hashes of the decision paths explored, to count distinct schedules.
    distinct: HashSet<u64>,
    /// Depth-first runs made once no sampled run can follow, distinct by construction.
    distinct_depth_first: u64,
    /// Whether `auto` has judged the tree, and the runs after which it switched to PCT.
    auto_judged: bool,
    switched_after_runs: Option<u64>,
    /// Whether the last explored run was one of this shard's own leaves.
    last_owned: bool,
    /// The strategy that found the violation being shrunk or replayed.
    found_by: StrategyName,
    /// Set when the check cannot go on (nondeterminism); every later call reports it.
    broken: Option<Error>,
}

impl Check {
    pub fn new(config: CheckConfig) -> Result<Self> {
        config.validate()?;
        let base_seed = fnv1a(&config.seed);
        let found_by = match config.strategy {
            StrategyKind::Random => StrategyName::Random,
            StrategyKind::Pct => StrategyName::Pct,
            StrategyKind::Exhaustive | StrategyKind::Auto => StrategyName::Exhaustive,
        };
        let state = match &config.replay {
            Some(text) => State::Replay(Schedule::decode(text, &config.events)?),
            None => State::Explore(Self::explorer(&config, base_seed, config.strategy)),
        };
        let (init_seed, split_answers) = match &state {
            State::Replay(schedule) => (schedule.base_seed, schedule.split_answers),
            _ => (base_seed, config.split_answers),
        };
        Ok(Self {
            config,
            base_seed,
            split_answers,
            databases: Databases::new(),
            baselines: Vec::new(),
            state,
            run: Run::new(init_seed, Vec::new(), true),
            active: None,
            clock_skew_ms: 0,
            explore_runs: 0,
            distinct: HashSet::new(),
            distinct_depth_first: 0,
            auto_judged: false,
            switched_after_runs: None,
            last_owned: true,
            found_by,
            broken: None,
        })
    }

    fn explorer(config: &CheckConfig, base_seed: u64, kind: StrategyKind) -> Explorer {
        // A split into one shard is no split: the tree need not be explored differently.
        let shard = config.shard.filter(|s| s.count > 1);
        // Each shard samples its own runs.
        let sampling_seed = stream_seed(
            base_seed,
            &format!("sampling:{}", config.shard.map_or(0, |s| s.index)),
        );
        match kind {
            StrategyKind::Exhaustive | StrategyKind::Auto => Explorer::Dfs(Dfs::with(
                config.max_faults_per_run,
                config.partial_order_reduction,
                shard,
            )),
            StrategyKind::Random => {
                Explorer::Random(RandomWalk::new(sampling_seed, config.max_faults_per_run))
            }
            StrategyKind::Pct => Explorer::Pct(Pct::new(
                sampling_seed,
                config.pct_depth,
                config.max_faults_per_run,
            )),
        }
    }

    /// Whether the last explored run was a leaf of this shard's part of the tree (always
    /// without shards; sampled runs always).
    pub fn last_run_owned(&self) -> bool {
        self.last_owned
    }

    pub fn config(&self) -> &CheckConfig {
        &self.config
    }

    pub fn event_name(&self, event: u32) -> Result<&str> {
        self.config
            .events
            .get(event as usize)
            .map(String::as_str)
            .ok_or_else(|| Error::new(format!("event {event} does not exist")))
    }

    // ---- setup ----

    /// Opens a database. Before `seal` it is part of setup; during a run it starts empty and
    /// lasts until the run ends. Opening an open database is harmless.
    pub fn d1_open(&mut self, db: &str) -> Result<()> {
        self.databases.open(db)
    }

    /// `d1_open`, with how traces name the database (`DO:Room/"lobby" SQL`) in place of
    /// `D1 <db>`.
    pub fn d1_open_labeled(&mut self, db: &str, label: Option<&str>) -> Result<()> {
        self.databases.open_labeled(db, label)
    }

    pub fn d1_exists(&self, db: &str) -> bool {
        self.databases.contains(db)
    }

    pub fn d1_setup(&mut self, db: &str, sql: &str) -> std::result::Result<(), d1::SetupError> {
        d1::set_now_ms(self.sql_now_ms());
        self.databases.setup(db, sql)
    }

    /// Ends setup: checks that the invariants name existing databases, tables and columns and
    /// that their queries prepare, takes the conserved invariants' values, and snapshots the
    /// databases every run starts from. Sealing twice is harmless.
    pub fn seal(&mut self) -> Result<()> {
        if self.databases.is_sealed() {
            return Ok(());
        }
        d1::set_now_ms(self.sql_now_ms());
        let mut baselines = Vec::with_capacity(self.config.invariants.len());
        for spec in &self.config.invariants {
            baselines.push(invariant::validate(spec, &mut self.databases)?);
        }
        self.databases.seal()?;
        self.baselines = baselines;
        Ok(())
    }

    // ---- runs ----

    /// Starts the next run, or answers `None` when the check is done. `elapsed_ms` is the
    /// wall-clock time the check has taken so far, which only the host can measure.
    pub fn next_run(&mut self, elapsed_ms: u64) -> Result<Option<RunPlan>> {
        self.ensure_whole()?;
        if self.active.is_some() {
            return Err(Error::new(
                "nextRun was called while a run is in progress; call endRun first",
            ));
        }
        self.seal()?;
        let all_events: Vec<u32> = (0..self.config.events.len() as u32).collect();
        let (events, base_seed, phase, active) = match &mut self.state {
            State::Done(_) => return Ok(None),
            State::Explore(explorer) => {
                if let Explorer::Dfs(dfs) = explorer {
                    debug_assert!(!dfs.is_exhausted(), "an exhausted explorer is Done");
                }
                if self.explore_runs >= self.config.runs_max {
                    let verdict = self.incomplete(IncompleteReason::Runs);
                    self.finish(verdict);
                    return Ok(None);
                }
                // The first run always happens, so that even a tiny budget checks the Worker
                // once; after it, an exhausted budget ends exploration honestly as Incomplete.
                if self.explore_runs > 0 && elapsed_ms >= self.config.budget_ms {
                    let verdict = self.incomplete(IncompleteReason::Budget);
                    self.finish(verdict);
                    return Ok(None);
                }
                self.judge_auto(elapsed_ms);
                let State::Explore(explorer) = &mut self.state else {
                    unreachable!("still exploring");
                };
                explorer.strategy().begin_run();
                let active = Active {
                    replay: None,
                    redeliveries_max: self.config.max_redeliveries,
                };
                (all_events, self.base_seed, Phase::Explore, active)
            }
            State::Shrink(shrinker) => {
                let Some(candidate) = shrinker.next_candidate() else {
                    let verdict = self.shrunk_verdict();
                    self.finish(verdict);
                    return Ok(None);
                };
                let schedule = candidate.schedule;
                let redeliveries_max = self.config.max_redeliveries.min(schedule.redeliveries_max);
                let events = schedule.events.clone();
                let base_seed = schedule.base_seed;
                let mut replay = Replay::new(schedule, candidate.strict);
                replay.begin_run();
                let active = Active {
                    replay: Some(replay),
                    redeliveries_max,
                };
                (events, base_seed, Phase::Shrink, active)
            }
            State::Replay(schedule) => {
                let mut replay = Replay::new(schedule.clone(), false);
                replay.begin_run();
                let active = Active {
                    redeliveries_max: self.config.max_redeliveries.min(schedule.redeliveries_max),
                    replay: Some(replay),
                };
                (
                    schedule.events.clone(),
                    schedule.base_seed,
                    Phase::Replay,
                    active,
                )
            }
        };
        self.databases.restore()?;
        self.databases.reseed(base_seed);
        // Exploring runs keep no trace: one that violates is replayed (the shrinker's first
        // candidate), and that replay's trace is the one reported.
        let trace = phase != Phase::Explore;
        self.run = Run::new(base_seed, events.clone(), trace);
        self.clock_skew_ms = 0;
        self.active = Some(active);
        Ok(Some(RunPlan {
            events,
            phase,
            trace,
            split_answers: self.split_answers,
        }))
    }

    /// Decides what happens at effect `effect` of `invocation`, before the effect happens.
    /// `transient` says whether the effect's binding documents a transient error the host can
    /// raise, which adds the transient_error alternative.
    pub fn decide(
        &mut self,
        invocation: &str,
        effect: u32,
        label: &str,
        transient: bool,
    ) -> Result<Decision> {
        self.decide_offering(invocation, effect, label, transient, false)
    }

    /// `decide`, where the binding's transient error can also come after the call took effect
    /// (`lost`, which needs `transient`): the lost_response alternative.
    pub fn decide_offering(
        &mut self,
        invocation: &str,
        effect: u32,
        label: &str,
        transient: bool,
        lost: bool,
    ) -> Result<Decision> {
        self.ensure_whole()?;
        let Some(active) = self.active.as_mut() else {
            return Err(Error::new("decide was called outside a run"));
        };
        // Invocations the platform made (`batch-1#1`) belong to no driver event.
        let event = parse_invocation(invocation, &self.config.events)?.map(|id| id.event);
        if event.is_some_and(|event| !self.run.delivers(event)) {
            return Err(Error::new(format!(
                "invocation {invocation} belongs to an event this run does not deliver"
            )));
        }
        if self
            .run
            .faults()
            .iter()
            .any(|f| f.invocation == invocation && f.effect == effect)
        {
            return Err(Error::new(format!(
                "{invocation} effect #{effect} was decided twice, after a fault at it"
            )));
        }
        let concurrent = self.config.max_concurrent_invocations > 1;
        if concurrent {
            let Some(step) = self.run.take_chosen() else {
                return Err(Error::new(format!(
                    "decide for {invocation} effect #{effect} without a step chosen for it: with \
                     maxConcurrentInvocations > 1, call choose before every step, even when \
                     only one is pending"
                )));
            };
            let other_invocation = step.invocation.as_deref().is_some_and(|i| i != invocation);
            let other_effect = step.effect.is_some_and(|e| e != effect);
            if other_invocation || other_effect {
                return Err(Error::new(format!(
                    "decide for {invocation} effect #{effect}, but the step chosen was {}",
                    step.label
                )));
            }
        }
        let point = Point {
            invocation,
            effect,
            label,
            transient,
            lost: transient && lost,
            ordinal: self.run.begin_effect(),
            faults_fired: self.run.faults_fired(),
        };
        let decided = match (&mut active.replay, &mut self.state) {
            (Some(replay), _) => replay.decide(&point),
            (None, State::Explore(explorer)) => explorer.strategy().decide(&point),
            (None, _) => unreachable!("only exploration runs without a replay"),
        };
        let decision = match decided {
            Ok(decision) => decision,
            Err(e) => return Err(self.break_with(e)),
        };
        if let Some(kind) = decision.fault() {
            self.run.record_fault(Fault {
                kind,
                invocation: invocation.to_string(),
                event,
                effect,
                label: label.to_string(),
            });
        }
        self.run
            .trace_with(|| format!("{invocation} effect #{effect} {label}: {decision}"));
        self.run.fold_path(decision as u64);
        self.run.fingerprint_bytes(invocation.as_bytes());
        self.run.fingerprint_u64(u64::from(effect));
        self.run.fingerprint_bytes(label.as_bytes());
        self.run.fingerprint_u64(decision as u64);
        // With concurrent invocations time is causal and moves at `choose`.
        if !concurrent {
            self.run.end_effect();
        }
        Ok(decision)
    }

    /// Picks which pending step runs next; answers an index into `options`. With
    /// `maxConcurrentInvocations > 1` the host calls it before every step, with every pending
    /// step (the next effect of each parked invocation, and the delivery of the next event
    /// while fewer invocations are live than allowed), even when there is only one.
    pub fn choose(&mut self, options: &[StepOption]) -> Result<usize> {
        self.ensure_whole()?;
        let Some(active) = self.active.as_mut() else {
            return Err(Error::new("choose was called outside a run"));
        };
        if self.config.max_concurrent_invocations < 2 {
            return Err(Error::new(
                "choose was called, but maxConcurrentInvocations is 1: invocations run one at a \
                 time and there is nothing to choose",
            ));
        }
        if options.is_empty() || options.len() > OPTIONS_MAX {
            return Err(Error::new(format!(
                "choose takes 1 to {OPTIONS_MAX} options, not {}",
                options.len()
            )));
        }
        if let Some(step) = self
            .run
            .take_chosen()
            .filter(|s| s.effect.is_some() && !s.answer)
        {
            return Err(Error::new(format!(
                "choose was called before the decide of the step chosen last ({})",
                step.label
            )));
        }
        let (ordinal, current) = self.run.begin_point(options);
        let point = ChoicePoint {
            options,
            current,
            ordinal,
        };
        let chosen = match (&mut active.replay, &mut self.state) {
            (Some(replay), _) => replay.choose(&point),
            (None, State::Explore(explorer)) => explorer.strategy().choose(&point),
            (None, _) => unreachable!("only exploration runs without a replay"),
        };
        let chosen = match chosen {
            Ok(chosen) => chosen,
            Err(e) => return Err(self.break_with(e)),
        };
        assert!(chosen < options.len(), "a strategy chose a missing option");
        if options.len() > 1 {
            self.run.trace_with(|| {
                format!(
                    "schedule: {} (of {} pending)",
                    options[chosen].label,
                    options.len()
                )
            });
        }
        self.run.fingerprint_bytes(options[chosen].label.as_bytes());
        // A driver's request arriving is no I/O of the system's: it does not move the clock,
        // so two requests that arrive together read the same Date.now(), as on Cloudflare.
        let step = &options[chosen];
        let arrival = step.effect.is_none()
            && step.invocation.as_deref().is_some_and(|invocation| {
                matches!(
                    parse_invocation(invocation, &self.config.events),
                    Ok(Some(id)) if id.nested.is_empty()
                )
            });
        self.run.record_choice(options, current, chosen, arrival);
        Ok(chosen)
    }

    /// The tables a D1 statement (or script) reads and writes, as footprint entries
    /// `D1:<db>:<table>` (see `footprint.rs`).
    pub fn d1_footprint(&self, db: &str, sql: &str) -> Result<Vec<Access>> {
        self.databases.footprint(db, sql)
    }

    /// Whether the client's resend, delivery `delivery` of `event`, happens. The host asks
    /// when delivery `delivery - 1` died without an answer and the client has retries left.
    pub fn redeliver(&mut self, event: u32, delivery: u32) -> Result<bool> {
        self.ensure_whole()?;
        if self.active.is_none() {
            return Err(Error::new("redeliver was called outside a run"));
        }
        let name = self.event_name(event)?.to_string();
        if !self.run.delivers(event) {
            return Err(Error::new(format!(
                "redeliver: this run does not deliver {name}"
            )));
        }
        let granted = self.grant_redelivery("redeliver", &name, delivery)?;
        if granted {
            self.run.record_redelivery(event, delivery - 1);
        }
        Ok(granted)
    }

    /// Whether the platform's own retry, delivery `delivery` of the work named `name` (a queue
    /// batch `batch-1`, an alarm `alarm-2`: an invocation id without `#<delivery>`), happens.
    /// The host asks before every retry the platform would make, on top of its own limits
    /// (a queue's max_retries), so that platform retries are bounded by `maxRedeliveries` and
    /// shrunk like the client's resends.
    pub fn redeliver_platform(&mut self, name: &str, delivery: u32) -> Result<bool> {
        self.ensure_whole()?;
        if self.active.is_none() {
            return Err(Error::new("redeliverPlatform was called outside a run"));
        }
        if name.is_empty() || name.contains('#') {
            return Err(Error::new(format!(
                "redeliverPlatform: '{name}' is not the name of platform work (an invocation id \
                 without '#<delivery>')"
            )));
        }
        if self.config.events.iter().any(|e| e == name) {
            return Err(Error::new(format!(
                "redeliverPlatform: {name} is a driver event; ask redeliver"
            )));
        }
        let granted = self.grant_redelivery("redeliverPlatform", name, delivery)?;
        if granted {
            self.run.record_platform_redelivery(delivery - 1);
        }
        Ok(granted)
    }

    /// Answers and traces whether delivery `delivery` of `name` is within the run's
    /// redeliveries.
    fn grant_redelivery(&mut self, call: &str, name: &str, delivery: u32) -> Result<bool> {
        let Some(active) = self.active.as_ref() else {
            unreachable!("the callers check for a run");
        };
        if delivery < 2 {
            return Err(Error::new(format!(
                "{call}: delivery {delivery} of {name} is not a redelivery (those count from 2)"
            )));
        }
        let granted = delivery - 1 <= active.redeliveries_max;
        self.run.fingerprint_bytes(name.as_bytes());
        self.run
            .fingerprint_u64(u64::from(delivery) << 1 | u64::from(granted));
        if granted {
            self.run
                .trace_with(|| format!("redeliver {name}#{delivery}"));
        } else if delivery - 1 <= self.config.max_redeliveries {
            // Refused by a shrunk schedule, not by the check's bounds: a client that stops
            // resending while the bounds would let it go on, a run the check never explores.
            self.run.record_refused_redelivery();
        }
        if !granted {
            // A shrunk schedule may allow fewer redeliveries than the bounds; say how many.
            let allowed = active.redeliveries_max;
            self.run.trace_with(|| {
                format!(
                    "redeliver {name}#{delivery}: refused, the run allows {allowed} redeliveries"
                )
            });
        }
        Ok(granted)
    }

    pub fn fill_random(&mut self, stream: &str, buf: &mut [u8]) {
        self.run.fill_random(stream, buf);
    }

    pub fn now_ms(&self) -> u64 {
        self.run.now_ms()
    }

    /// The run seed of the run under way: its events, the faults fired so far, its choices.
    pub fn run_seed(&self) -> String {
        let redeliveries_max = self
            .active
            .as_ref()
            .map_or(self.config.max_redeliveries, |a| a.redeliveries_max);
        Schedule {
            base_seed: self.run.base_seed(),
            events: self.run.events().to_vec(),
            faults: self.run.faults().to_vec(),
            redeliveries_max,
            choices: self.run.choices(),
            split_answers: self.split_answers,
        }
        .encode(&self.config.events)
    }

    /// The host has moved the run's clock `skew_ms` past the engine's; until the next run,
    /// SQL's `'now'` reads that clock.
    pub fn set_clock_skew(&mut self, skew_ms: u64) {
        self.clock_skew_ms = skew_ms;
    }

    /// The clock SQL reads: the run's, as the host moved it.
    fn sql_now_ms(&self) -> u64 {
        self.run.now_ms().saturating_add(self.clock_skew_ms)
    }

    pub fn trace(&mut self, line: &str) {
        self.run.trace(line.to_string());
    }

    /// The trace of the run in progress (or of module initialisation before the first run).
    pub fn trace_lines(&self) -> &[String] {
        self.run.trace_lines()
    }

    pub fn faults_fired(&self) -> &[Fault] {
        self.run.faults()
    }

    // D1 calls are traced with their SQL, parameters and outcome, so that two runs with the
    // same trace did the same thing to the databases, not only at the same effects.

    pub fn d1_run(&mut self, db: &str, sql: &str, params: &[Value]) -> Result<RawResult> {
        self.d1_run_as(db, sql, params, Traced::Yes)
    }

    /// `d1_run`, traced or not: the host's own bookkeeping statements (a KV namespace's table,
    /// a queue's messages) are not what a reader of the trace wants to see; the host traces
    /// the binding's call instead. Both kinds count in the run's fingerprint.
    pub fn d1_run_as(
        &mut self,
        db: &str,
        sql: &str,
        params: &[Value],
        traced: Traced,
    ) -> Result<RawResult> {
        d1::set_now_ms(self.sql_now_ms());
        let result = self.databases.run_as(db, sql, params, traced.source());
        self.fingerprint_statement(db, sql, params, result.as_ref().map_err(|_| ()));
        if traced == Traced::No {
            return result;
        }
        self.run.trace_with(|| {
            let outcome = match &result {
                Ok(r) => describe_result(r),
                Err(e) => format!("error: {e}"),
            };
            format!(
                "  {}: {}{} -> {outcome}",
                self.databases.shown(db),
                one_line(sql),
                describe_params(params)
            )
        });
        result
    }

    pub fn d1_batch(&mut self, db: &str, statements: &[Statement]) -> Result<Vec<RawResult>> {
        self.d1_batch_as(db, statements, Traced::Yes)
    }

    /// `d1_batch`, traced or not (see `d1_run_as`).
    pub fn d1_batch_as(
        &mut self,
        db: &str,
        statements: &[Statement],
        traced: Traced,
    ) -> Result<Vec<RawResult>> {
        d1::set_now_ms(self.sql_now_ms());
        let result = self.databases.batch_as(db, statements, traced.source());
        let failed = result
            .as_ref()
            .err()
            .and_then(|e| failed_statement(e.message()));
        for (i, statement) in statements.iter().enumerate() {
            let outcome = match &result {
                Ok(results) => results.get(i).ok_or(()),
                Err(_) => Err(()),
            };
            self.fingerprint_statement(db, &statement.sql, &statement.params, outcome);
            if traced == Traced::No {
                continue;
            }
            self.run.trace_with(|| {
                let outcome = match (&result, failed) {
                    (Ok(results), _) => results.get(i).map_or_else(String::new, describe_result),
                    (Err(_), Some((at, message))) if at == i => format!("error: {message}"),
                    (Err(_), Some((at, _))) => format!("rolled back: batch[{at}] failed"),
                    (Err(e), None) => format!("rolled back: {e}"),
                };
                format!(
                    "  {} batch[{i}]: {}{} -> {outcome}",
                    self.databases.shown(db),
                    one_line(&statement.sql),
                    describe_params(&statement.params)
                )
            });
        }
        result
    }

    pub fn d1_exec(&mut self, db: &str, sql: &str) -> Result<u64> {
        self.d1_exec_as(db, sql, Traced::Yes)
    }

    /// `d1_exec`, traced or not (see `d1_run_as`).
    pub fn d1_exec_as(&mut self, db: &str, sql: &str, traced: Traced) -> Result<u64> {
        d1::set_now_ms(self.sql_now_ms());
        let result = self.databases.exec_as(db, sql, traced.source());
        self.run.fingerprint_bytes(db.as_bytes());
        self.run.fingerprint_bytes(sql.as_bytes());
        self.run
            .fingerprint_u64(result.as_ref().map_or(u64::MAX, |count| *count));
        if traced == Traced::No {
            return result;
        }
        self.run.trace_with(|| {
            let outcome = match &result {
                Ok(count) => format!("{count} statements"),
                Err(e) => format!("error: {e}"),
            };
            format!(
                "  {} exec: {} -> {outcome}",
                self.databases.shown(db),
                one_line(sql)
            )
        });
        result
    }

    /// Folds a D1 statement, its parameters and what it answered (rows, changes, the last
    /// row id; `Err` for an error) into the run's fingerprint.
    fn fingerprint_statement(
        &mut self,
        db: &str,
        sql: &str,
        params: &[Value],
        outcome: std::result::Result<&RawResult, ()>,
    ) {
        let run = &mut self.run;
        run.fingerprint_bytes(db.as_bytes());
        run.fingerprint_bytes(sql.as_bytes());
        for value in params {
            fingerprint_value(run, value);
        }
        let Ok(result) = outcome else {
            run.fingerprint_u64(u64::MAX);
            return;
        };
        run.fingerprint_u64(result.changes);
        run.fingerprint_u64(result.last_row_id as u64);
        run.fingerprint_u64(result.rows.len() as u64);
        for value in result.rows.iter().flatten() {
            fingerprint_value(run, value);
        }
    }

    /// Ends the run: evaluates the invariants in order and moves the check on. `host` is the
    /// first violated invariant among the host's own, which the host evaluated before calling;
    /// it is the run's violation when every invariant of the engine holds.
    pub fn end_run(&mut self, host: Option<Violation>) -> Result<RunEnd> {
        self.ensure_whole()?;
        let Some(active) = self.active.take() else {
            return Err(Error::new("endRun was called outside a run"));
        };
        let mut unapplied = None;
        if let Some(mut replay) = active.replay {
            let more = replay.end_run()?;
            debug_assert!(!more, "a replay is one run");
            unapplied = replay.unapplied_choice().cloned();
        }
        let violation = self.first_violation()?.or(host);
        let state = std::mem::replace(
            &mut self.state,
            State::Done(Verdict::Held {
                runs: 0,
                run_seed: String::new(),
                trace: Vec::new(),
            }),
        );
        self.state = match state {
            State::Explore(mut explorer) => {
                let more = match explorer.strategy().end_run() {
                    Ok(more) => more,
                    Err(e) => return Err(self.break_with(e)),
                };
                self.explore_runs += 1;
                // Depth-first runs never repeat a schedule: remember hashes only where a
                // schedule can come again (sampling, or auto before it has judged the tree),
                // so that memory stays flat over a long exhaustive check.
                let sampling = !matches!(explorer, Explorer::Dfs(_));
                let may_switch = self.config.strategy == StrategyKind::Auto && !self.auto_judged;
                if !(sampling || may_switch) {
                    self.distinct_depth_first += 1;
                } else if self.distinct.len() < DISTINCT_SCHEDULES_MAX {
                    self.distinct.insert(self.run.path_hash());
                }
                self.last_owned = match &explorer {
                    Explorer::Dfs(dfs) => dfs.tree().last_owned(),
                    _ => true,
                };
                if let Some(violation) = &violation {
                    let schedule = Schedule {
                        base_seed: self.run.base_seed(),
                        events: self.run.events().to_vec(),
                        faults: self.run.faults().to_vec(),
                        redeliveries_max: self.config.max_redeliveries,
                        choices: self.run.choices(),
                        split_answers: self.split_answers,
                    };
                    self.found_by = explorer.name();
                    State::Shrink(Box::new(
                        Shrinker::new(
                            schedule,
                            violation.clone(),
                            self.run.fingerprint(),
                            self.config.shrink_runs_max,
                        )
                        .for_events(self.config.events.clone()),
                    ))
                } else if more {
                    State::Explore(explorer)
                } else {
                    State::Done(Verdict::Bounded {
                        runs: self.explore_runs,
                        strategy: explorer.name(),
                        shard: self.config.shard,
                    })
                }
            }
            State::Shrink(mut shrinker) => {
                let outcome = Outcome {
                    violation: violation.clone(),
                    faults: self.run.faults().to_vec(),
                    redeliveries_used: self.run.redeliveries_used(),
                    redeliveries_refused: self.run.redeliveries_refused(),
                    choices: self.run.choices(),
                    switches: self.run.switches().to_vec(),
                    trace: self.run.trace_lines().to_vec(),
                    fingerprint: self.run.fingerprint(),
                };
                if let Err(e) = shrinker.report(outcome) {
                    return Err(self.break_with(e));
                }
                State::Shrink(shrinker)
            }
            State::Replay(schedule) => {
                // A run seed printed before the Worker changed may name a fault at an effect the
                // Worker no longer makes (a fix that batches two statements), or a scheduling
                // choice at a step it no longer offers. The replay runs without them, which is
                // what replaying a counterexample against a fix asks, and its trace ends saying
                // so, lest a HELD read as this very counterexample holding.
                let fired = self.run.faults().to_vec();
                for missed in schedule.faults.iter().filter(|planned| {
                    !fired
                        .iter()
                        .any(|f| f.invocation == planned.invocation && f.effect == planned.effect)
                }) {
                    self.run.trace(format!(
                        "{REPLAY_NOT_AS_PRINTED}the seed's {} at {} effect #{} did not happen: \
                         this run never reached that effect, or that fault cannot happen there",
                        missed.kind.as_str(),
                        missed.invocation,
                        missed.effect
                    ));
                }
                if let Some(choice) = unapplied {
                    let step = |step: &crate::schedule::Step| match step.effect {
                        Some(effect) if step.answer => {
                            format!("the answer of {} effect #{effect}", step.invocation)
                        }
                        Some(effect) => format!("{} effect #{effect}", step.invocation),
                        None => format!("the delivery of {}", step.invocation),
                    };
                    let instead = choice
                        .instead
                        .as_ref()
                        .map_or_else(String::new, |i| format!(" instead of {}", step(i)));
                    self.run.trace(format!(
                        "{REPLAY_NOT_AS_PRINTED}the seed's scheduling choice, {}{instead}, did \
                         not happen: this run never offered it",
                        step(&choice.take)
                    ));
                }
                let run_seed = schedule.encode(&self.config.events);
                let trace = self.run.trace_lines().to_vec();
                State::Done(match &violation {
                    Some(violation) => Verdict::Violated {
                        runs: 1,
                        shrink_runs: 0,
                        invariant: violation.invariant.clone(),
                        message: violation.message.clone(),
                        run_seed,
                        events_kept: self.event_names(&schedule.events),
                        faults: self.run.faults().iter().map(FaultReport::from).collect(),
                        trace,
                        strategy: self.reported_strategy(),
                        shard: None,
                        switched_after_runs: None,
                    },
                    None => Verdict::Held {
                        runs: 1,
                        run_seed,
                        trace,
                    },
                })
            }
            State::Done(_) => unreachable!("no run is active once the check is done"),
        };
        Ok(RunEnd {
            violated: violation,
        })
    }

    /// How the check ended; an error until `next_run` has answered `None`.
    pub fn verdict(&self) -> Result<Verdict> {
        self.ensure_whole()?;
        match &self.state {
            State::Done(verdict) => Ok(verdict.clone()),
            _ => Err(Error::new(
                "the check is not done: call nextRun until it returns undefined",
            )),
        }
    }

    fn first_violation(&mut self) -> Result<Option<Violation>> {
        d1::set_now_ms(self.sql_now_ms());
        for (spec, baseline) in self.config.invariants.iter().zip(&self.baselines) {
            // A run that keeps a trace shows what each invariant's query read (the scenario's,
            // or the one a `unique` invariant makes), as the reads of its custom invariants
            // show: the rows that break it are the story's end.
            let run = &mut self.run;
            let violation = invariant::evaluate_reading(
                spec,
                baseline.as_ref(),
                &mut self.databases,
                |db, sql, result| {
                    run.trace_with(|| {
                        format!(
                            "  D1 {db}: {} -> {}",
                            one_line(sql),
                            describe_result(result)
                        )
                    });
                },
            )?;
            if let Some(violation) = violation {
                return Ok(Some(violation));
            }
        }
        Ok(None)
    }

    fn shrunk_verdict(&self) -> Verdict {
        let State::Shrink(shrinker) = &self.state else {
            unreachable!("called while shrinking");
        };
        let best = shrinker.best();
        Verdict::Violated {
            runs: self.explore_runs,
            shrink_runs: shrinker.runs(),
            invariant: shrinker.invariant().to_string(),
            message: best.message.clone(),
            run_seed: best.schedule.encode(&self.config.events),
            events_kept: self.event_names(&best.schedule.events),
            faults: best.schedule.faults.iter().map(FaultReport::from).collect(),
            trace: best.trace.clone(),
            strategy: self.reported_strategy(),
            shard: self.config.shard,
            // Exploration stops at the first violation, so one found after the switch was PCT's.
            switched_after_runs: self.switched_after_runs,
        }
    }

    /// The strategy a VIOLATED verdict names: none for a check that uses no option that came
    /// with concurrency, whose verdict reads exactly as before them.
    fn reported_strategy(&self) -> Option<StrategyName> {
        let plain = self.config.strategy == StrategyKind::Exhaustive
            && self.config.max_concurrent_invocations == 1
            && self.config.shard.is_none();
        (!plain).then_some(self.found_by)
    }

    /// The verdict of exploration that stopped early.
    fn incomplete(&self, reason: IncompleteReason) -> Verdict {
        let strategy = match &self.state {
            State::Explore(explorer) => explorer.name(),
            _ => self.found_by,
        };
        Verdict::Incomplete {
            runs: self.explore_runs,
            reason,
            strategy,
            distinct_schedules: self.distinct.len() as u64 + self.distinct_depth_first,
            shard: self.config.shard,
            switched_after_runs: self.switched_after_runs,
        }
    }

    /// With strategy `auto`, once two thirds of the budget (in time or in runs) are spent:
    /// estimates the exhaustive tree's size from the progress so far (`Tree::progress`), and
    /// restarts as PCT when it is far more than the whole budget would cover (twenty times as
    /// many runs). The estimate takes sibling subtrees to be alike, but depth-first search takes
    /// the largest first (no fault fired yet, the first ordering before the reduction prunes the
    /// others), so it reads many times the tree's size until the first of them finish: on a
    /// tree of 3,508 runs that took 83% of its budget, 30 times at a quarter of it, 9 times at
    /// half, 1.2 times at two thirds; on one of 332, under four times at half; on one of 1,006
    /// (two Workers racing over RPC), four to six times through most of the search, until 85%
    /// of it. With six times, that last tree was sampled and INCOMPLETE on a loaded machine
    /// that still had the time to search it all, so the verdict changed with the load; the
    /// trees `auto` is for (a sampled 10-order check) read millions of times. Judged at a
    /// quarter, trees the budget covers were sampled instead of BOUNDED.
    fn judge_auto(&mut self, elapsed_ms: u64) {
        if self.config.strategy != StrategyKind::Auto || self.auto_judged {
            return;
        }
        let runs = self.explore_runs;
        let late = elapsed_ms > 0 && elapsed_ms.saturating_mul(3) >= self.config.budget_ms * 2;
        let late_runs = runs.saturating_mul(3) >= self.config.runs_max * 2;
        if runs < AUTO_RUNS_MIN || !(late || late_runs) {
            return;
        }
        self.auto_judged = true;
        let State::Explore(Explorer::Dfs(dfs)) = &self.state else {
            return;
        };
        let progress = dfs.tree().progress();
        let estimated = if progress > 0.0 {
            runs as f64 / progress
        } else {
            f64::INFINITY
        };
        let by_time = if elapsed_ms > 0 {
            runs as f64 * self.config.budget_ms as f64 / elapsed_ms as f64
        } else {
            f64::INFINITY
        };
        let affordable = by_time.min(self.config.runs_max as f64);
        if estimated > AUTO_BEYOND * affordable {
            self.switched_after_runs = Some(runs);
            self.state = State::Explore(Self::explorer(
                &self.config,
                self.base_seed,
                StrategyKind::Pct,
            ));
        }
    }

    fn event_names(&self, events: &[u32]) -> Vec<String> {
        events
            .iter()
            .filter_map(|e| self.config.events.get(*e as usize).cloned())
            .collect()
    }

    fn finish(&mut self, verdict: Verdict) {
        self.state = State::Done(verdict);
    }

    fn break_with(&mut self, error: Error) -> Error {
        self.active = None;
        self.broken = Some(error.clone());
        error
    }

    fn ensure_whole(&self) -> Result<()> {
        match &self.broken {
            Some(error) => Err(error.clone()),
            None => Ok(()),
        }
    }
}

/// The statement a batch failed at, counted from 0 as a batch's trace lines are, and its error
/// without the `statement <n>: ` the engine prefixes it with (counted from 1, as D1's are).
fn failed_statement(message: &str) -> Option<(usize, &str)> {
    let rest = message.strip_prefix("statement ")?;
    let (number, error) = rest.split_once(": ")?;
    let number: usize = number.parse().ok()?;
    Some((number.checked_sub(1)?, error))
}

#[cfg(test)]
mod tests;

fn fingerprint_value(run: &mut Run, value: &Value) {
    match value {
        Value::Null => run.fingerprint_u64(0),
        Value::Integer(i) => {
            run.fingerprint_u64(1);
            run.fingerprint_u64(*i as u64);
        }
        Value::Real(r) => {
            run.fingerprint_u64(2);
            run.fingerprint_u64(r.to_bits());
        }
        Value::Text(text) => {
            run.fingerprint_u64(3);
            run.fingerprint_bytes(text.as_bytes());
        }
        Value::Blob(bytes) => {
            run.fingerprint_u64(4);
            run.fingerprint_bytes(bytes);
        }
    }
}

fn describe_params(params: &[Value]) -> String {
    if params.is_empty() {
        return String::new();
    }
    let values: Vec<String> = params.iter().map(ToString::to_string).collect();
    format!(" [{}]", values.join(", "))
}

fn describe_result(result: &RawResult) -> String {
    if result.columns.is_empty() {
        return format!("{} changed", result.changes);
    }
    // A few rows are enough to tell runs apart; the count covers the rest.
    const ROWS_SHOWN_MAX: usize = 5;
    let rows: Vec<String> = result
        .rows
        .iter()
        .take(ROWS_SHOWN_MAX)
        .map(|row| {
            let values: Vec<String> = row.iter().map(ToString::to_string).collect();
            format!("({})", values.join(", "))
        })
        .collect();
    let more = if result.rows.len() > ROWS_SHOWN_MAX {
        " …"
    } else {
        ""
    };
    if rows.is_empty() {
        return "0 rows".to_string();
    }
    let count = match result.rows.len() {
        1 => "1 row".to_string(),
        n => format!("{n} rows"),
    };
    format!("{count} {}{more}", rows.join(" "))
}

#[cfg(test)]
mod concurrency_tests;
