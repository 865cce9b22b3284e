//! Per-run state of the simulation: random streams, the virtual clock, the trace, the faults
//! that fired and the redeliveries granted. A fresh `Run` starts every run, so nothing leaks
//! from one run into the next.

use std::collections::BTreeMap;

use crate::por::Lamport;
use crate::rng::{stream_seed, SplitMix64};
use crate::schedule::{Choice, Fault, Step};
use crate::strategy::StepOption;

/// Every run starts at 2026-01-01T00:00:00Z, so that `Date.now()` is the same in every run and
/// in every replay.
pub const CLOCK_START_MS: u64 = 1_767_225_600_000;

/// Upper bound on trace lines kept per run; a Worker that loops over effects must not exhaust
/// memory through its trace.
pub const TRACE_LINES_MAX: usize = 100_000;

/// Upper bound on distinct random streams per run.
pub const STREAMS_MAX: usize = 100_000;

/// Upper bound on the context switches a run records that it could have made (see
/// `Run::switches`): enough for every point of any counterexample worth reading.
pub const SWITCHES_MAX: usize = 10_000;

const PATH_HASH_START: u64 = 0xcbf2_9ce4_8422_2325;
const PATH_HASH_PRIME: u64 = 0x0000_0100_0000_01b3;
/// An odd 64-bit constant (2^64 over the golden ratio) for the fingerprint's mixing.
const FINGERPRINT_MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;

#[derive(Debug)]
pub struct Run {
    base_seed: u64,
    /// The events of the run's plan, as indexes into the configured events.
    events: Vec<u32>,
    streams: BTreeMap<String, SplitMix64>,
    now_ms: u64,
    /// Whether the run keeps a trace: runs whose trace may be reported (shrinking, replays)
    /// do; exploring runs do not, since a violation is replayed before it is reported.
    tracing: bool,
    trace: Vec<String>,
    trace_truncated: bool,
    /// FNV-1a over what the run did that the engine sees (each decision with its invocation,
    /// effect and label; each D1 statement with its parameters and outcome), kept whether or
    /// not the run traces: a replay that must reproduce a run compares fingerprints.
    fingerprint: u64,
    faults: Vec<Fault>,
    /// The number of decide calls so far.
    effects: usize,
    /// The highest redelivery granted per event of the plan (0: none), in plan order.
    redeliveries: Vec<u32>,
    /// The highest redelivery granted to work the platform made (queue batches, alarms).
    platform_redeliveries: u32,
    /// Redeliveries the run's bound refused (a client that would have resent, a platform retry).
    redeliveries_refused: u32,
    /// The number of scheduling points so far.
    points: usize,
    /// The scheduling choices that were not the default.
    choices: Vec<Choice>,
    /// Every choice other than the default the run could have made, in the order of its
    /// points: kept in runs that keep a trace (the shrinker's), at most `SWITCHES_MAX`.
    switches: Vec<Choice>,
    /// The process of the step that ran last, whose next step is the default choice.
    last_process: Option<String>,
    /// The step chosen last, until the `decide` of its effect.
    chosen: Option<StepOption>,
    /// FNV-1a over every choice and decision of the run: equal paths, equal hashes.
    path_hash: u64,
    /// The causal clock of runs with concurrent invocations.
    lamport: Lamport,
}

impl Run {
    pub fn new(base_seed: u64, events: Vec<u32>, tracing: bool) -> Self {
        let redeliveries = vec![0; events.len()];
        Self {
            base_seed,
            events,
            streams: BTreeMap::new(),
            now_ms: CLOCK_START_MS,
            tracing,
            trace: Vec::new(),
            trace_truncated: false,
            fingerprint: PATH_HASH_START,
            faults: Vec::new(),
            effects: 0,
            redeliveries,
            platform_redeliveries: 0,
            redeliveries_refused: 0,
            points: 0,
            choices: Vec::new(),
            switches: Vec::new(),
            last_process: None,
            chosen: None,
            path_hash: PATH_HASH_START,
            lamport: Lamport::default(),
        }
    }

    /// Counts a scheduling point and answers its ordinal, from 1, and the default option: the
    /// one that continues the process of the last step, else the first.
    pub fn begin_point(&mut self, options: &[StepOption]) -> (usize, usize) {
        self.points += 1;
        let current = self
            .last_process
            .as_deref()
            .and_then(|last| options.iter().position(|o| o.process() == last))
            .unwrap_or(0);
        (self.points, current)
    }

    /// Records the step taken at the point `begin_point` just counted. Time becomes the step's
    /// causal time (see `por::Lamport`): with concurrent invocations it moves here, not at
    /// `decide`.
    pub fn record_choice(
        &mut self,
        options: &[StepOption],
        current: usize,
        chosen: usize,
        arrival: bool,
    ) {
        if chosen != current {
            self.choices.push(Choice {
                instead: Some(Step::of(&options[current])),
                take: Step::of(&options[chosen]),
            });
        } else if options.len() > 1 && options[current].effect.is_none() {
            // A default step without an effect to name it (a timer firing) has the same name at
            // later points: a switch made at one of those would apply here on replay. Taking it
            // is recorded too, and `choices` keeps it where such a switch follows.
            let step = Step::of(&options[current]);
            self.choices.push(Choice {
                instead: Some(step.clone()),
                take: step,
            });
        }
        if self.tracing {
            let others = options.iter().enumerate().filter(|(at, _)| *at != current);
            for (_, option) in others {
                if self.switches.len() == SWITCHES_MAX {
                    break;
                }
                self.switches.push(Choice {
                    instead: Some(Step::of(&options[current])),
                    take: Step::of(option),
                });
            }
        }
        self.fold_path(0x100 + chosen as u64);
        let step = &options[chosen];
        self.last_process = Some(step.process().to_string());
        self.chosen = Some(step.clone());
        let time = self.lamport.step(options, chosen, arrival);
        self.now_ms = CLOCK_START_MS + time;
    }

    /// The step chosen last, if its `decide` has not come yet.
    pub fn take_chosen(&mut self) -> Option<StepOption> {
        self.chosen.take()
    }

    /// The run's scheduling choices, in order: every switch away from the default step, and
    /// each default taken that has no effect to name it (written `2.1=2.1`) where the next
    /// switch is made while a step of that same name is the default, so that a replay applies
    /// that switch where the run made it and not at an earlier point of the same name.
    pub fn choices(&self) -> Vec<Choice> {
        let mut kept = Vec::with_capacity(self.choices.len());
        // The default of the next switch, walking back from the end.
        let mut next_switch_at: Option<&Step> = None;
        for choice in self.choices.iter().rev() {
            let taken_default = choice.instead.as_ref() == Some(&choice.take);
            if !taken_default {
                next_switch_at = choice.instead.as_ref();
                kept.push(choice.clone());
            } else if next_switch_at == choice.instead.as_ref() {
                kept.push(choice.clone());
            }
        }
        kept.reverse();
        kept
    }

    /// The context switches the run could have made, at most `SWITCHES_MAX`: at each point, in
    /// order, a choice of each option other than the default (so `choices` are among them).
    pub fn switches(&self) -> &[Choice] {
        &self.switches
    }

    pub fn fold_path(&mut self, value: u64) {
        for byte in value.to_le_bytes() {
            self.path_hash ^= u64::from(byte);
            self.path_hash = self.path_hash.wrapping_mul(PATH_HASH_PRIME);
        }
    }

    pub fn path_hash(&self) -> u64 {
        self.path_hash
    }

    /// Folds `bytes` into the run's fingerprint eight at a time, then their length, so that
    /// consecutive strings cannot run into each other. Every statement's SQL goes through here.
    pub fn fingerprint_bytes(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            let mut full = [0; 8];
            full.copy_from_slice(word);
            self.fingerprint_u64(u64::from_le_bytes(full));
        }
        let mut tail = [0; 8];
        tail[..words.remainder().len()].copy_from_slice(words.remainder());
        self.fingerprint_u64(u64::from_le_bytes(tail));
        self.fingerprint_u64(bytes.len() as u64);
    }

    /// Folds one word into the fingerprint. Each step (xor, odd multiply, xorshift) is a
    /// bijection, so runs that differ in one word have different fingerprints.
    pub fn fingerprint_u64(&mut self, value: u64) {
        let mixed = (self.fingerprint ^ value).wrapping_mul(FINGERPRINT_MULTIPLIER);
        self.fingerprint = mixed ^ (mixed >> 32);
    }

    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    pub fn base_seed(&self) -> u64 {
        self.base_seed
    }

    pub fn events(&self) -> &[u32] {
        &self.events
    }

    /// Fills `buf` from the stream named `stream`, creating the stream on first use.
    pub fn fill_random(&mut self, stream: &str, buf: &mut [u8]) {
        if let Some(rng) = self.streams.get_mut(stream) {
            rng.fill(buf);
            return;
        }
        let mut rng = SplitMix64::new(stream_seed(self.base_seed, stream));
        rng.fill(buf);
        // Past the limit a stream is still deterministic, just not remembered: it restarts at
        // every call. That keeps runs reproducible instead of failing them.
        if self.streams.len() < STREAMS_MAX {
            self.streams.insert(stream.to_string(), rng);
        }
    }

    pub fn now_ms(&self) -> u64 {
        self.now_ms
    }

    /// Counts an effect and returns its ordinal in the run, from 1.
    pub fn begin_effect(&mut self) -> usize {
        self.effects += 1;
        self.effects
    }

    /// Time passes only at effects, after the decision: `Date.now()` is frozen while an
    /// invocation computes, as it is in production between I/O.
    pub fn end_effect(&mut self) {
        self.now_ms += 1;
    }

    /// Whether the run keeps a trace; when it does not, callers need not build their lines.
    pub fn tracing(&self) -> bool {
        self.tracing
    }

    /// Appends the line `line()` makes, if the run keeps a trace (it is not built otherwise).
    pub fn trace_with(&mut self, line: impl FnOnce() -> String) {
        if self.tracing {
            self.trace(line());
        }
    }

    pub fn trace(&mut self, line: String) {
        if !self.tracing {
            return;
        }
        if self.trace.len() < TRACE_LINES_MAX {
            self.trace.push(line);
        } else if !self.trace_truncated {
            self.trace_truncated = true;
            self.trace
                .push(format!("(trace truncated after {TRACE_LINES_MAX} lines)"));
        }
    }

    pub fn trace_lines(&self) -> &[String] {
        &self.trace
    }

    pub fn take_trace(&mut self) -> Vec<String> {
        std::mem::take(&mut self.trace)
    }

    pub fn record_fault(&mut self, fault: Fault) {
        debug_assert!(!self
            .faults
            .iter()
            .any(|f| f.invocation == fault.invocation && f.effect == fault.effect));
        self.faults.push(fault);
    }

    pub fn faults(&self) -> &[Fault] {
        &self.faults
    }

    pub fn faults_fired(&self) -> u32 {
        u32::try_from(self.faults.len()).unwrap_or(u32::MAX)
    }

    /// Whether `event` is in the run's plan.
    pub fn delivers(&self, event: u32) -> bool {
        self.events.contains(&event)
    }

    pub fn record_redelivery(&mut self, event: u32, redelivery: u32) {
        if let Some(at) = self.events.iter().position(|e| *e == event) {
            self.redeliveries[at] = self.redeliveries[at].max(redelivery);
        }
    }

    pub fn record_platform_redelivery(&mut self, redelivery: u32) {
        self.platform_redeliveries = self.platform_redeliveries.max(redelivery);
    }

    pub fn record_refused_redelivery(&mut self) {
        self.redeliveries_refused += 1;
    }

    pub fn redeliveries_refused(&self) -> u32 {
        self.redeliveries_refused
    }

    /// The most redeliveries any event, or any work of the platform, used in the run.
    pub fn redeliveries_used(&self) -> u32 {
        let events = self.redeliveries.iter().copied().max().unwrap_or(0);
        events.max(self.platform_redeliveries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_continue_within_a_run_and_restart_with_a_new_run() {
        let mut first = Run::new(42, vec![0], true);
        let (mut a, mut b) = ([0u8; 8], [0u8; 8]);
        first.fill_random("req-1#1", &mut a);
        first.fill_random("req-1#1", &mut b);
        assert_ne!(a, b);
        let mut second = Run::new(42, vec![0], true);
        let mut c = [0u8; 8];
        second.fill_random("req-1#1", &mut c);
        assert_eq!(a, c);
    }

    #[test]
    fn clock_moves_only_at_effects() {
        let mut run = Run::new(0, vec![], true);
        assert_eq!(run.now_ms(), CLOCK_START_MS);
        assert_eq!(run.begin_effect(), 1);
        assert_eq!(run.now_ms(), CLOCK_START_MS);
        run.end_effect();
        assert_eq!(run.now_ms(), CLOCK_START_MS + 1);
    }
}
