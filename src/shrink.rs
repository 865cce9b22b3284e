//! The shrinker: from a violating run's schedule to a minimal one that breaks the same
//! invariant.
//!
//! It is a state machine that proposes candidate schedules; the check runs each with the
//! replay strategy and reports the outcome. A candidate succeeds when the same invariant (by
//! name) breaks. The first candidate is the violating schedule itself, replayed strictly: it
//! must reproduce the run's fingerprint (every decision, effect label and D1 statement with its
//! outcome), which proves the run seed replays, and it records the trace the report shows
//! (exploring runs keep none). Then, each time restarting from the newest success:
//!
//! 1. remove one event (with its faults and the scheduling choices that name its
//!    invocations; faults on invocations the platform made are kept), first to last, as long
//!    as one event is left; when that alone does not break the invariant, also with the
//!    choices and faults at the platform's work one, then up to eight effects earlier (an
//!    alarm that sends each queued job makes one call fewer without the event, a batch that
//!    handles each message in three calls three fewer, see `shifted`), then with that work
//!    renumbered;
//! 2. remove one fault, first to last; when the fault killed a delivery and the schedule names
//!    later deliveries of its event (a choice that ran the resend), first try renumbering those
//!    one down, since without the crash the client does not resend and the delivery before
//!    does what the resend did;
//! 3. remove one scheduling choice, first to last: that point then takes its default, which
//!    continues the invocation that ran the last step, so every removal is one context switch
//!    fewer and the invocation runs on towards completion;
//! 4. with two choices or more, replace several by one context switch the best run could have
//!    made (see `merges`): all of them, then each adjacent pair. Removing choices one at a time
//!    stops at a local minimum: a race found as "defer the callee's write, run the other
//!    request, then resume" needs both switches, while one switch made earlier ("start the
//!    other request before the first one's call") races as well;
//! 5. with two choices or more still, run the schedule without any (every point takes its
//!    default), then try each context switch that run could have made alone (see
//!    `one_switches`). Step 4 only knows the points of runs that already break the invariant:
//!    a random walk that switched back and forth ("deliver req-2 before req-1's check, run
//!    req-1's check before req-2's insert") never reaches "req-1 about to insert while req-2
//!    waits to be delivered", the one point where a single switch races;
//! 6. lower the redeliveries to the smallest value that still fails;
//! 7. with faults left, replace each by what it stood in for: a crash can stand in for a
//!    context switch, since the invocation it kills stops being the default and another one's
//!    step runs where the dead one's would have. Step 2 only drops a fault when the run without
//!    it breaks the invariant with the same choices, which such a run does not: it needs one
//!    switch away from the invocation the fault hit (the alarm read the hold, the confirmation
//!    runs, the alarm releases the hold), or one switch fewer (one that ran the faulted
//!    step out of turn only for the fault to end it). So, from the run
//!    without each fault that step 2 ran: that schedule without one of its choices, each in
//!    turn, then with one switch that run could have made added (see `fault_swaps`);
//! 8. move each fault made in a callee to its caller's call that hosts the callee, as
//!    `crash_after` or else `crash_before` (see `hoisted`), when that run is no larger and
//!    breaks the invariant with the same message: nothing smaller, but the report then names
//!    the call in the caller's code.
//!
//! Smaller means, in this order: fewer events, then fewer faults, then fewer context switches,
//! then fewer redeliveries. So a race of two switches and no fault is smaller than one switch
//! and a crash: a reader of the report would look for what the crash breaks, while the bug
//! needs no crash at all. A successful candidate is normalized to what its run actually did
//! (the faults that fired, the redeliveries used, the choices made), which replays identically
//! and is no larger than the candidate. Every success makes the schedule strictly smaller in
//! that order (step 7 trades a fault for at most one switch more; step 8 keeps the size and
//! moves a fault one caller up; every other step removes something and adds nothing), so
//! shrinking ends; `shrink_runs_max` bounds it regardless, and
//! each pass of steps 4, 5 and 7 runs at most `MERGES_MAX` candidates.

use std::collections::HashSet;

use crate::error::{Error, Result, OUTSIDE};
use crate::invariant::Violation;
use crate::schedule::{Choice, Fault, FaultKind, Schedule, Step};

/// Upper bound on the candidates of one pass that replaces choices, or faults, by one switch,
/// of those replacing the whole list, and of those replacing one pair: they count against
/// `shrink_runs_max` like any other, and such a pass only runs once nothing can go alone.
pub const MERGES_MAX: usize = 64;
const MERGES_OF_ALL_MAX: usize = 32;
const MERGES_OF_A_PAIR_MAX: usize = 8;

/// A schedule to run, and whether it must reproduce a recorded run exactly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub schedule: Schedule,
    pub strict: bool,
}

/// What a candidate's run did.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub violation: Option<Violation>,
    pub faults: Vec<Fault>,
    pub redeliveries_used: u32,
    /// Redeliveries the candidate's bound refused that the check's bounds allow: a client that
    /// would have resent, a platform retry Cloudflare would have made.
    pub redeliveries_refused: u32,
    /// The scheduling choices the run made that were not the default.
    pub choices: Vec<Choice>,
    /// The context switches the run could have made, in the order of its points (see
    /// `Run::switches`).
    pub switches: Vec<Choice>,
    pub trace: Vec<String>,
    /// The run's fingerprint (see `Run::fingerprint`).
    pub fingerprint: u64,
}

/// The smallest violating run found so far.
#[derive(Debug, Clone)]
pub struct Best {
    pub schedule: Schedule,
    pub message: String,
    pub trace: Vec<String>,
    pub fingerprint: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Verify,
    /// Try removing the event at this position of the best schedule; with `dropped` above 0,
    /// taking the platform work numbered `dropped` of each kind as the removed event's: what the
    /// schedule says of it goes, and the platform work numbered above it is renumbered one down
    /// (tried, from 1 up, after the plain removal fails).
    Events(usize, u32),
    /// Try removing the event at this position, with the choices and faults at the platform's
    /// steps moved this many effects earlier (see `shifted`), from one up to `SHIFT_MAX`; after
    /// the plain removal fails.
    EventShifted(usize, u32),
    /// Try removing the fault at this position; `renumbered`: the candidate that also renumbers
    /// the later deliveries of its event (tried first, when there are any).
    Faults(usize, bool),
    /// Try removing the scheduling choice at this position.
    Choices(usize),
    /// Try the choice list at this position of `Shrinker::lists`, made by `merges`.
    Merges(usize),
    /// Try the best schedule without choices, to learn the switches its run could make.
    NoSwitch,
    /// Try the choice list at this position of `Shrinker::lists`, made by `one_switches`.
    OneSwitch(usize),
    /// Try this many redeliveries.
    Redeliveries(u32),
    /// Try the schedule at this position of `Shrinker::swaps`.
    FaultSwaps(usize),
    /// Try moving the fault at this position to its invocation's caller (see `hoisted`), as
    /// `crash_before` when the flag is set, else as `crash_after`.
    Hoist(usize, bool),
    Done,
}

#[derive(Debug)]
pub struct Shrinker {
    invariant: String,
    best: Best,
    stage: Stage,
    pending: Option<Candidate>,
    /// Redelivery counts below this one are known not to break the invariant with the best
    /// schedule's events and faults.
    redeliveries_floor: u32,
    runs: u64,
    runs_max: u64,
    /// The check's event names, to find the choices that name a removed event's invocations.
    events: Vec<String>,
    /// The context switches the best run could have made.
    switches: Vec<Choice>,
    /// The choice lists the current pass of step 4 or 5 tries (see `merges` and
    /// `one_switches`); those of step 4 are kept until step 5 knows which it tried.
    lists: Vec<Vec<Choice>>,
    /// The schedules step 7 tries: made as step 2's runs without each fault fail, tried once
    /// nothing else shrinks (those with fewer switches first), forgotten when the best schedule
    /// changes.
    swaps: Vec<Swap>,
}

impl Shrinker {
    /// Starts from the violating run of `schedule`, whose fingerprint was `fingerprint`.
    pub fn new(schedule: Schedule, violation: Violation, fingerprint: u64, runs_max: u64) -> Self {
        Self {
            invariant: violation.invariant,
            best: Best {
                schedule,
                message: violation.message,
                trace: Vec::new(),
                fingerprint,
            },
            stage: Stage::Verify,
            pending: None,
            redeliveries_floor: 0,
            runs: 0,
            runs_max,
            events: Vec::new(),
            switches: Vec::new(),
            lists: Vec::new(),
            swaps: Vec::new(),
        }
    }

    /// The check's event names (without them, removing an event keeps every choice).
    pub fn for_events(self, events: Vec<String>) -> Self {
        Self { events, ..self }
    }

    pub fn invariant(&self) -> &str {
        &self.invariant
    }

    pub fn best(&self) -> &Best {
        &self.best
    }

    pub fn runs(&self) -> u64 {
        self.runs
    }

    /// The next schedule to run, or `None` when shrinking is over.
    pub fn next_candidate(&mut self) -> Option<Candidate> {
        assert!(self.pending.is_none(), "a candidate is already running");
        if self.runs >= self.runs_max {
            self.stage = Stage::Done;
        }
        let best = &self.best.schedule;
        // Each pass either yields a candidate or moves to a later stage; there are ten.
        for _ in 0..10 {
            let candidate = match self.stage {
                Stage::Verify => Candidate {
                    schedule: best.clone(),
                    strict: true,
                },
                // At least one event stays: a run of none tests only the setup, which is no
                // counterexample to the scenario (an invariant that the setup's state breaks
                // says the events must all run, which no shrinking can keep).
                Stage::Events(at, dropped) if at < best.events.len() && best.events.len() > 1 => {
                    match without_event(best, at, dropped, &self.events) {
                        Some(schedule) => Candidate {
                            schedule,
                            strict: false,
                        },
                        None => {
                            self.stage = Stage::Events(at + 1, 0);
                            continue;
                        }
                    }
                }
                Stage::EventShifted(at, by) if at < best.events.len() && best.events.len() > 1 => {
                    match without_event(best, at, 0, &self.events)
                        .and_then(|schedule| shifted(schedule, &self.events, by))
                    {
                        Some(schedule) => Candidate {
                            schedule,
                            strict: false,
                        },
                        None => {
                            self.stage = self.after_plain_removal(at);
                            continue;
                        }
                    }
                }
                Stage::Events(..) | Stage::EventShifted(..) => {
                    self.stage = Stage::Faults(0, true);
                    continue;
                }
                Stage::Faults(at, true) if at < best.faults.len() => {
                    match without_fault_renumbered(best, at, &self.events) {
                        Some(schedule) => Candidate {
                            schedule,
                            strict: false,
                        },
                        None => {
                            self.stage = Stage::Faults(at, false);
                            continue;
                        }
                    }
                }
                Stage::Faults(at, false) if at < best.faults.len() => {
                    let mut schedule = best.clone();
                    schedule.faults.remove(at);
                    Candidate {
                        schedule,
                        strict: false,
                    }
                }
                Stage::Faults(..) => {
                    self.stage = Stage::Choices(0);
                    continue;
                }
                Stage::Choices(at) if at < best.choices.len() => {
                    let mut schedule = best.clone();
                    schedule.choices.remove(at);
                    Candidate {
                        schedule,
                        strict: false,
                    }
                }
                Stage::Choices(_) => {
                    self.lists = merges(&best.choices, &self.switches);
                    self.stage = Stage::Merges(0);
                    continue;
                }
                Stage::Merges(at) | Stage::OneSwitch(at) if at < self.lists.len() => {
                    let mut schedule = best.clone();
                    schedule.choices = self.lists[at].clone();
                    Candidate {
                        schedule,
                        strict: false,
                    }
                }
                Stage::Merges(_) => {
                    self.stage = Stage::NoSwitch;
                    continue;
                }
                Stage::NoSwitch if best.choices.len() >= 2 => {
                    let mut schedule = best.clone();
                    schedule.choices.clear();
                    Candidate {
                        schedule,
                        strict: false,
                    }
                }
                Stage::NoSwitch | Stage::OneSwitch(_) => {
                    self.lists.clear();
                    self.stage = Stage::Redeliveries(self.redeliveries_floor);
                    continue;
                }
                Stage::Redeliveries(count) if count < best.redeliveries_max => {
                    let mut schedule = best.clone();
                    schedule.redeliveries_max = count;
                    Candidate {
                        schedule,
                        strict: false,
                    }
                }
                Stage::Redeliveries(_) => {
                    // A stable sort: each group stays in the order of the faults.
                    self.swaps.sort_by_key(|s| s.one_more);
                    self.stage = Stage::FaultSwaps(0);
                    continue;
                }
                Stage::FaultSwaps(at) if at < self.swaps.len().min(MERGES_MAX) => Candidate {
                    schedule: self.swaps[at].schedule.clone(),
                    strict: false,
                },
                Stage::FaultSwaps(_) => {
                    self.stage = Stage::Hoist(0, false);
                    continue;
                }
                Stage::Hoist(at, before) if at < best.faults.len() => {
                    match hoisted(best, at, before) {
                        Some(schedule) => Candidate {
                            schedule,
                            strict: false,
                        },
                        None => {
                            self.stage = Stage::Hoist(at + 1, false);
                            continue;
                        }
                    }
                }
                Stage::Hoist(..) | Stage::Done => {
                    self.stage = Stage::Done;
                    return None;
                }
            };
            self.pending = Some(candidate.clone());
            return Some(candidate);
        }
        unreachable!("every stage yields a candidate or moves on");
    }

    /// Takes the outcome of the candidate last returned by `next_candidate`.
    pub fn report(&mut self, outcome: Outcome) -> Result<()> {
        let Some(candidate) = self.pending.take() else {
            panic!("report without a running candidate");
        };
        self.runs += 1;
        let success = outcome
            .violation
            .as_ref()
            .is_some_and(|v| v.invariant == self.invariant)
            // A candidate that refuses a redelivery the check's bounds allow (a client that stops
            // resending while it has retries) is a run the check never explores and the clients
            // the scenario describes never make: no smaller counterexample.
            && outcome.redeliveries_refused == 0;
        match self.stage {
            Stage::Verify => {
                if !success {
                    return Err(Error::new(format!(
                        "nondeterminism: replaying the violating run did not break invariant \
                         {} again; {OUTSIDE}",
                        self.invariant
                    )));
                }
                if outcome.fingerprint != self.best.fingerprint {
                    return Err(Error::new(format!(
                        "nondeterminism: replaying the violating run broke invariant {} again but \
                         did something else on the way (another effect, or a D1 statement with \
                         other parameters or another outcome); {OUTSIDE}, or a value Web Crypto \
                         randomizes itself (an ECDSA or RSA-PSS signature, a generated key). The \
                         run, which broke the invariant both times: --replay {}",
                        self.invariant,
                        self.best.schedule.encode(&self.events)
                    )));
                }
                self.accept(&candidate, outcome);
                self.stage = Stage::Events(0, 0);
            }
            Stage::Events(at, dropped) => {
                self.stage = if success {
                    self.accept(&candidate, outcome);
                    Stage::Events(0, 0)
                } else if dropped == 0 {
                    Stage::EventShifted(at, 1)
                } else if dropped < highest_platform_number(&self.best.schedule, &self.events) {
                    Stage::Events(at, dropped + 1)
                } else {
                    Stage::Events(at + 1, 0)
                };
            }
            Stage::EventShifted(at, by) => {
                self.stage = if success {
                    self.accept(&candidate, outcome);
                    Stage::Events(0, 0)
                } else if by < SHIFT_MAX {
                    Stage::EventShifted(at, by + 1)
                } else {
                    self.after_plain_removal(at)
                };
            }
            Stage::Faults(at, renumbered) => {
                if !success {
                    self.add_swaps(at, &candidate.schedule, &outcome);
                }
                self.stage = if success {
                    self.accept(&candidate, outcome);
                    Stage::Events(0, 0)
                } else if renumbered {
                    Stage::Faults(at, false)
                } else {
                    Stage::Faults(at + 1, true)
                };
            }
            Stage::Choices(at) => {
                self.stage = if success {
                    self.accept(&candidate, outcome);
                    Stage::Events(0, 0)
                } else {
                    Stage::Choices(at + 1)
                };
            }
            Stage::Merges(at) => {
                self.stage = if success {
                    self.accept(&candidate, outcome);
                    self.lists.clear();
                    Stage::Events(0, 0)
                } else {
                    Stage::Merges(at + 1)
                };
            }
            Stage::NoSwitch => {
                self.stage = if success {
                    self.accept(&candidate, outcome);
                    self.lists.clear();
                    Stage::Events(0, 0)
                } else {
                    self.lists =
                        one_switches(&self.best.schedule.choices, &outcome.switches, &self.lists);
                    Stage::OneSwitch(0)
                };
            }
            Stage::OneSwitch(at) => {
                self.stage = if success {
                    self.accept(&candidate, outcome);
                    self.lists.clear();
                    Stage::Events(0, 0)
                } else {
                    Stage::OneSwitch(at + 1)
                };
            }
            Stage::Redeliveries(count) => {
                // Either way, every count up to this one has now been tried.
                if success {
                    self.accept(&candidate, outcome);
                    self.redeliveries_floor = count;
                    self.stage = Stage::Events(0, 0);
                } else {
                    self.redeliveries_floor = count + 1;
                    self.stage = Stage::Redeliveries(count + 1);
                }
            }
            Stage::FaultSwaps(at) => {
                self.stage = if success {
                    self.accept(&candidate, outcome);
                    Stage::Events(0, 0)
                } else {
                    Stage::FaultSwaps(at + 1)
                };
            }
            Stage::Hoist(at, before) => {
                // The move is for the reader, not a trade: the run must be as small as the best
                // in every other respect and break the invariant with the same message, or the
                // report would tell another bug than the one found (a resend's double charge
                // instead of a callee's half-done write).
                let best = &self.best.schedule;
                let alike = outcome.faults.len() <= best.faults.len()
                    && outcome.choices.len() <= best.choices.len()
                    && outcome.redeliveries_used <= best.redeliveries_max
                    && outcome
                        .violation
                        .as_ref()
                        .is_some_and(|v| v.message == self.best.message);
                self.stage = if success && alike {
                    self.accept(&candidate, outcome);
                    Stage::Events(0, 0)
                } else if !before {
                    Stage::Hoist(at, true)
                } else {
                    Stage::Hoist(at + 1, false)
                };
            }
            Stage::Done => unreachable!("no candidate runs once shrinking is done"),
        }
        Ok(())
    }

    /// What step 1 tries after removing the event at `at` failed plainly and shifted: the
    /// removal with the platform's work renumbered, when there is any, else the next event.
    fn after_plain_removal(&self, at: usize) -> Stage {
        if highest_platform_number(&self.best.schedule, &self.events) > 0 {
            Stage::Events(at, 1)
        } else {
            Stage::Events(at + 1, 0)
        }
    }

    /// Makes a successful candidate the best, normalized to what its run did.
    fn accept(&mut self, candidate: &Candidate, outcome: Outcome) {
        debug_assert!(outcome.redeliveries_used <= candidate.schedule.redeliveries_max);
        debug_assert!(outcome
            .faults
            .iter()
            .all(|f| candidate
                .schedule
                .faults
                .iter()
                .any(|c| c.invocation == f.invocation
                    && c.effect == f.effect
                    && c.kind == f.kind)));
        let schedule = Schedule {
            base_seed: candidate.schedule.base_seed,
            events: candidate.schedule.events.clone(),
            faults: outcome.faults,
            redeliveries_max: outcome.redeliveries_used,
            choices: outcome.choices,
            split_answers: candidate.schedule.split_answers,
        };
        if schedule.events != self.best.schedule.events
            || schedule.faults != self.best.schedule.faults
            || schedule.choices != self.best.schedule.choices
        {
            self.redeliveries_floor = 0;
        }
        let Some(violation) = outcome.violation else {
            unreachable!("only violating runs are accepted");
        };
        self.switches = outcome.switches;
        self.swaps.clear();
        self.best = Best {
            schedule,
            message: violation.message,
            trace: outcome.trace,
            fingerprint: outcome.fingerprint,
        };
    }

    /// Adds the candidates of step 7 for the best schedule's fault at `at`, from `without`, the
    /// best schedule without that fault, whose `run` did not break the invariant: `without`
    /// less one of its choices (a switch that only ran the step the fault hit out of turn goes
    /// with it), then `fault_swaps`. The best schedule's faults share `MERGES_MAX` evenly;
    /// those of the renumbered run without a fault come before those of the plain one, as step
    /// 2 runs them.
    fn add_swaps(&mut self, at: usize, without: &Schedule, run: &Outcome) {
        let best = &self.best.schedule;
        let share = (MERGES_MAX / best.faults.len()).max(1);
        let room = share.saturating_sub(self.swaps.iter().filter(|s| s.fault == at).count());
        // The steps the best run took: at each point the default, unless a choice took another.
        let mut took: Vec<&Step> = self
            .switches
            .iter()
            .filter_map(|s| s.instead.as_ref())
            .collect();
        took.extend(best.choices.iter().map(|c| &c.take));
        let fewer = (0..without.choices.len()).map(|gone| {
            let mut choices = without.choices.clone();
            choices.remove(gone);
            (false, choices)
        });
        let more = fault_swaps(&best.faults[at], &run.choices, &run.switches, &took)
            .into_iter()
            .map(|choices| (true, choices));
        let mut added = 0;
        for (one_more, choices) in fewer.chain(more) {
            if added == room {
                break;
            }
            let schedule = Schedule {
                choices,
                ..without.clone()
            };
            if self.swaps.iter().any(|s| s.schedule == schedule) {
                continue;
            }
            self.swaps.push(Swap {
                fault: at,
                one_more,
                schedule,
            });
            added += 1;
        }
    }
}

/// A candidate of step 7.
#[derive(Debug)]
struct Swap {
    /// The position of the fault it replaces in the best schedule.
    fault: usize,
    /// Whether it adds a switch (see `fault_swaps`) rather than removing a choice: those that
    /// remove one are smaller, and run first.
    one_more: bool,
    schedule: Schedule,
}

/// Where each of `choices` was made among `switches` (every switch their run could have made,
/// in the order of its points; the choices are among them), in order; a choice past
/// `SWITCHES_MAX` is placed after them all.
fn positions(choices: &[Choice], switches: &[Choice]) -> Vec<usize> {
    let mut positions = Vec::with_capacity(choices.len());
    let mut from = 0;
    for choice in choices {
        let at = switches[from.min(switches.len())..]
            .iter()
            .position(|s| s == choice)
            .map_or(switches.len(), |at| from + at);
        positions.push(at);
        from = (at + 1).min(switches.len());
    }
    positions
}

/// Choice lists that replace `fault` by one context switch: the `choices` of the run without
/// the fault, with one of the `switches` that run could have made added at its point. The fault
/// killed its invocation, so that at the next point another invocation's step ran by default;
/// without the fault that takes a switch away from the step the fault kept from running (the
/// faulted effect for a crash before it, the effect after for any other fault) to a step the
/// faulted run took (`took`). Those switches come first, then the other switches away from the
/// faulted invocation's later steps, then those to a step the faulted run took, then the rest,
/// each group in the order of the points. At most `MERGES_MAX`; the order depends on the
/// arguments only, so shrinking the same run gives the same schedule.
fn fault_swaps(
    fault: &Fault,
    choices: &[Choice],
    switches: &[Choice],
    took: &[&Step],
) -> Vec<Vec<Choice>> {
    let first_kept = match fault.kind {
        FaultKind::CrashBefore => fault.effect,
        _ => fault.effect + 1,
    };
    // In the order of the points, so sorted: a run records up to `SWITCHES_MAX` switches, and
    // each is looked up here.
    let made = positions(choices, switches);
    let took: HashSet<(&str, Option<u32>)> = took
        .iter()
        .map(|step| (step.invocation.as_str(), step.effect))
        .collect();
    let mut order: Vec<(u8, usize)> = switches
        .iter()
        .enumerate()
        .filter(|(at, _)| made.binary_search(at).is_err())
        .map(|(at, switch)| {
            let away = switch.instead.as_ref().is_some_and(|i| {
                i.invocation == fault.invocation && i.effect.is_some_and(|e| e >= first_kept)
            });
            let taken = took.contains(&(switch.take.invocation.as_str(), switch.take.effect));
            let group = match (away, taken) {
                (true, true) => 0,
                (true, false) => 1,
                (false, true) => 2,
                (false, false) => 3,
            };
            (group, at)
        })
        .collect();
    order.sort_unstable();
    let mut lists: Vec<Vec<Choice>> = Vec::new();
    for (_, at) in order {
        if lists.len() == MERGES_MAX {
            break;
        }
        let before = made.partition_point(|&made_at| made_at < at);
        let mut list = choices[..before].to_vec();
        list.push(switches[at].clone());
        list.extend_from_slice(&choices[before..]);
        if !lists.contains(&list) {
            lists.push(list);
        }
    }
    lists
}

/// Choice lists with fewer context switches than `choices`, each replacing some of them by one
/// of `switches` (every switch their run could have made, in the order of its points): first
/// the whole list by one switch anywhere, then, with three choices or more, each adjacent pair
/// by one switch between the choices around it, so that those still apply as before. Within a
/// group, re-anchorings come first: the step a replaced choice took, taken at that choice's
/// point or at an earlier one where it was pending, nearest first (a request started earlier
/// often races as well); then every other switch of the group's points, nearest the first
/// replaced choice first. A list that is `choices` without one choice is left out (the pass
/// before tried it). At most `MERGES_OF_ALL_MAX` for the whole list, `MERGES_OF_A_PAIR_MAX`
/// for a pair, `MERGES_MAX` in all; the order depends on the arguments only, so shrinking the
/// same run gives the same schedule.
fn merges(choices: &[Choice], switches: &[Choice]) -> Vec<Vec<Choice>> {
    let count = choices.len();
    if count < 2 {
        return Vec::new();
    }
    let positions = positions(choices, switches);
    let mut groups = vec![(0, count - 1, MERGES_OF_ALL_MAX)];
    if count >= 3 {
        groups.extend((0..count - 1).map(|first| (first, first + 1, MERGES_OF_A_PAIR_MAX)));
    }
    let mut lists: Vec<Vec<Choice>> = Vec::new();
    for (first, last, group_max) in groups {
        let low = if first == 0 {
            0
        } else {
            (positions[first - 1] + 1).min(switches.len())
        };
        let high = positions.get(last + 1).copied().unwrap_or(switches.len());
        let window = low..high.max(low);
        let mut order: Vec<usize> = Vec::new();
        for k in first..=last {
            let top = positions[k].min(window.end.saturating_sub(1));
            let earlier = (window.start..=top).rev();
            order.extend(
                earlier.filter(|&at| window.contains(&at) && switches[at].take == choices[k].take),
            );
        }
        let mut rest: Vec<usize> = window.clone().collect();
        let anchor = positions[first];
        rest.sort_by_key(|&at| (at.abs_diff(anchor), at));
        order.extend(rest);
        let mut taken = 0;
        for at in order {
            if taken == group_max || lists.len() == MERGES_MAX {
                break;
            }
            let mut list = choices[..first].to_vec();
            list.push(switches[at].clone());
            list.extend_from_slice(&choices[last + 1..]);
            let one_removed = list.len() == count - 1
                && (0..count).any(|gone| {
                    let without = choices[..gone].iter().chain(&choices[gone + 1..]);
                    list.iter().eq(without)
                });
            if one_removed || lists.contains(&list) {
                continue;
            }
            lists.push(list);
            taken += 1;
        }
    }
    lists
}

/// Choice lists of one switch each, from `switches`, every context switch a run without
/// choices could have made (in the order of its points): each applies at the one point where
/// that run reached its default step, and the run goes on from there taking defaults. First
/// those that take a step one of `choices` took (the step the violating run ran out of turn,
/// offered where the run without choices reached it), then the others, each group in the order
/// of the points. A list the passes before tried (one of `merges`, or one of two choices left
/// after removing the other) is left out. At most `MERGES_MAX`; the order depends on the
/// arguments only, so shrinking the same run gives the same schedule.
fn one_switches(
    choices: &[Choice],
    switches: &[Choice],
    merges: &[Vec<Choice>],
) -> Vec<Vec<Choice>> {
    let tried = |switch: &Choice| {
        merges
            .iter()
            .any(|list| list.as_slice() == std::slice::from_ref(switch))
            || choices.len() == 2 && choices.contains(switch)
    };
    let took = |switch: &&Choice| choices.iter().any(|c| c.take == switch.take);
    let (anchored, others): (Vec<&Choice>, Vec<&Choice>) = switches.iter().partition(took);
    let mut lists: Vec<Vec<Choice>> = Vec::new();
    for switch in anchored.into_iter().chain(others) {
        if lists.len() == MERGES_MAX {
            break;
        }
        let list = vec![switch.clone()];
        if !tried(switch) && !lists.contains(&list) {
            lists.push(list);
        }
    }
    lists
}

/// `best` without fault `at`, with the later deliveries of the fault's event renumbered one down
/// in the other faults and in the choices (`req-1#2` becomes `req-1#1`); `None` when the fault
/// belongs to no driver event or nothing names a later delivery.
fn without_fault_renumbered(best: &Schedule, at: usize, events: &[String]) -> Option<Schedule> {
    let fault = &best.faults[at];
    let name = events.get(fault.event? as usize)?;
    let prefix = format!("{name}#");
    let killed = delivery_of(&fault.invocation, &prefix)?;
    let renumber = |invocation: &mut String| -> bool {
        match delivery_of(invocation, &prefix) {
            Some(n) if n > killed => {
                let rest = &invocation[prefix.len() + n.to_string().len()..];
                *invocation = format!("{prefix}{}{rest}", n - 1);
                true
            }
            _ => false,
        }
    };
    let mut schedule = best.clone();
    schedule.faults.remove(at);
    let mut changed = false;
    for other in &mut schedule.faults {
        changed |= renumber(&mut other.invocation);
    }
    for choice in &mut schedule.choices {
        changed |= renumber(&mut choice.take.invocation);
        if let Some(instead) = &mut choice.instead {
            changed |= renumber(&mut instead.invocation);
        }
    }
    changed.then_some(schedule)
}

/// The number of a platform invocation id (`batch-3#1/0` is 3), `None` for a driver event's.
fn platform_number(invocation: &str, events: &[String]) -> Option<(usize, u32)> {
    if events
        .iter()
        .any(|e| invocation.starts_with(&format!("{e}#")))
    {
        return None;
    }
    let hash = invocation.find('#')?;
    let dash = invocation[..hash].rfind('-')?;
    let n = invocation[dash + 1..hash].parse::<u32>().ok()?;
    Some((dash, n))
}

/// The highest number of platform work the schedule's faults and choices name.
fn highest_platform_number(schedule: &Schedule, events: &[String]) -> u32 {
    let faults = schedule.faults.iter().map(|f| f.invocation.as_str());
    let choices = schedule.choices.iter().flat_map(|c| {
        std::iter::once(c.take.invocation.as_str())
            .chain(c.instead.iter().map(|i| i.invocation.as_str()))
    });
    faults
        .chain(choices)
        .filter_map(|invocation| platform_number(invocation, events).map(|(_, n)| n))
        .max()
        .unwrap_or(0)
}

/// `best` as if the event being removed had made the platform work numbered `dropped` of each
/// kind: the platform numbers its work in the order the run made it, so without that event
/// `batch-3#1` becomes `batch-2#1` when the event made `batch-2`. The faults and choices on the
/// dropped work go, and the work numbered above it is renumbered one down. `None` when the
/// schedule names no platform work numbered `dropped` or above.
fn platform_renumbered(best: &Schedule, events: &[String], dropped: u32) -> Option<Schedule> {
    // Some(true): renumbered; Some(false): untouched; None: the dropped work's.
    let renumber = |invocation: &mut String| -> Option<bool> {
        let Some((dash, n)) = platform_number(invocation, events) else {
            return Some(false);
        };
        if n == dropped {
            return None;
        }
        if n < dropped {
            return Some(false);
        }
        let hash = dash + 1 + n.to_string().len();
        *invocation = format!("{}{}{}", &invocation[..=dash], n - 1, &invocation[hash..]);
        Some(true)
    };
    let mut schedule = best.clone();
    let mut changed = false;
    schedule.faults.retain_mut(|fault| {
        if fault.event.is_some() {
            return true;
        }
        match renumber(&mut fault.invocation) {
            Some(renumbered) => {
                changed |= renumbered;
                true
            }
            None => {
                changed = true;
                false
            }
        }
    });
    schedule.choices.retain_mut(|choice| {
        match renumber(&mut choice.take.invocation) {
            Some(renumbered) => changed |= renumbered,
            None => {
                changed = true;
                return false;
            }
        }
        if let Some(instead) = &mut choice.instead {
            match renumber(&mut instead.invocation) {
                Some(renumbered) => changed |= renumbered,
                None => {
                    changed = true;
                    choice.instead = None;
                }
            }
        }
        true
    });
    changed.then_some(schedule)
}

/// The best schedule without its event at `at` (step 1), with the platform's work numbered
/// `dropped` taken as the event's when `dropped` is above 0 (see `platform_renumbered`); `None`
/// when there is no such work.
fn without_event(best: &Schedule, at: usize, dropped: u32, events: &[String]) -> Option<Schedule> {
    let removed = best.events[at];
    let mut schedule = if dropped > 0 {
        platform_renumbered(best, events, dropped)?
    } else {
        best.clone()
    };
    schedule.events.remove(at);
    // Faults on the platform's invocations stay: they may or may not fire without the event,
    // and normalizing to the fired faults tidies up.
    schedule.faults.retain(|f| f.event != Some(removed));
    // Choices that run the removed event's steps go; those that ran another step where the
    // removed event's was the default now apply where their step is first pending.
    if let Some(name) = events.get(removed as usize) {
        let prefix = format!("{name}#");
        schedule
            .choices
            .retain(|c| !c.take.invocation.starts_with(&prefix));
        for choice in &mut schedule.choices {
            if choice
                .instead
                .as_ref()
                .is_some_and(|i| i.invocation.starts_with(&prefix))
            {
                choice.instead = None;
            }
        }
    }
    Some(schedule)
}

/// How many effects earlier step 1 moves the platform's choices and faults at most.
const SHIFT_MAX: u32 = 8;

/// `schedule` (an event removed) with every choice's step and every fault at an effect of the
/// platform's work (an alarm, a queue batch) numbered `by` lower; `None` when none is at or past
/// effect `by`. Such work often goes through what the events left (an alarm sending each queued
/// job, a batch each message), so without an event it makes the calls of one job fewer, and the
/// switch that raced, or the crash that hit, the next job's call must come that much earlier.
fn shifted(mut schedule: Schedule, events: &[String], by: u32) -> Option<Schedule> {
    let platform = |invocation: &str| {
        !events
            .iter()
            .any(|name| invocation.starts_with(&format!("{name}#")))
    };
    let mut moved = false;
    for choice in &mut schedule.choices {
        for step in choice
            .instead
            .iter_mut()
            .chain(std::iter::once(&mut choice.take))
        {
            if let Some(effect) = step
                .effect
                .filter(|&e| e >= by && platform(&step.invocation))
            {
                step.effect = Some(effect - by);
                moved = true;
            }
        }
    }
    for fault in &mut schedule.faults {
        if fault.effect >= by && platform(&fault.invocation) {
            fault.effect -= by;
            moved = true;
        }
    }
    moved.then_some(schedule)
}

/// The best schedule with its fault at `at`, made in a callee (`req-2#1/0`), moved to the
/// caller's call that hosts the callee (`req-2#1` effect #0): as `crash_after` (the callee ran
/// and its caller died before the answer) or, with `before`, as `crash_before` (the callee never
/// ran). A crash inside a service binding's callee takes its caller with it, so one of the two
/// often breaks the invariant alike, and the report then names the call the reader sees in the
/// caller's code rather than a statement deep in the callee's.
fn hoisted(best: &Schedule, at: usize, before: bool) -> Option<Schedule> {
    let fault = &best.faults[at];
    let hash = fault.invocation.find('#')?;
    let (caller, effect) = fault.invocation[hash..].rsplit_once('/')?;
    let effect: u32 = effect.parse().ok()?;
    let caller = format!("{}{caller}", &fault.invocation[..hash]);
    let mut schedule = best.clone();
    schedule.faults[at] = Fault {
        kind: if before {
            FaultKind::CrashBefore
        } else {
            FaultKind::CrashAfter
        },
        invocation: caller,
        event: fault.event,
        effect,
        label: String::new(),
    };
    Some(schedule)
}

/// The delivery number of an invocation of the event whose ids start with `prefix`
/// (`req-1#`): 2 for `req-1#2` and `req-1#2/0`.
fn delivery_of(invocation: &str, prefix: &str) -> Option<u32> {
    let rest = invocation.strip_prefix(prefix)?;
    let digits = rest.split('/').next()?;
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::FaultKind;

    fn fault(kind: FaultKind, event: u32, effect: u32) -> Fault {
        Fault {
            kind,
            invocation: format!("req-{}#1", event + 1),
            event: Some(event),
            effect,
            label: "Service:PAYMENTS charge".into(),
        }
    }

    /// A system whose invariant breaks exactly when event 2 (index 1) is delivered, the
    /// crash_after at `req-2#1` effect #0 fires, and at least one redelivery is allowed. The
    /// run uses one redelivery when it can.
    fn oracle(schedule: &Schedule) -> Outcome {
        let needed = fault(FaultKind::CrashAfter, 1, 0);
        let fired: Vec<Fault> = schedule
            .faults
            .iter()
            .filter(|f| f.event.is_none_or(|e| schedule.events.contains(&e)))
            .cloned()
            .collect();
        let redelivered = fired.iter().any(|f| f.event == Some(1));
        let used = if redelivered {
            schedule.redeliveries_max.min(1)
        } else {
            0
        };
        let broken = schedule.events.contains(&1) && fired.contains(&needed) && used >= 1;
        Outcome {
            violation: broken.then(|| Violation {
                invariant: "one-charge-per-order".into(),
                message: format!("{} faults", fired.len()),
            }),
            faults: fired,
            redeliveries_used: used,
            redeliveries_refused: 0,
            choices: schedule.choices.clone(),
            switches: vec![],
            trace: vec![format!("{schedule:?}")],
            fingerprint: fingerprint_of(schedule),
        }
    }

    /// A stand-in for a run's fingerprint: the same schedule, the same run.
    fn fingerprint_of(schedule: &Schedule) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        format!("{schedule:?}").hash(&mut hasher);
        hasher.finish()
    }

    /// A run of `req-2` with one redelivery, whose invariant breaks with the message `breaks`
    /// gives the fault that fired, if any.
    fn fault_oracle(schedule: &Schedule, breaks: fn(&Fault) -> Option<&'static str>) -> Outcome {
        let fired: Vec<Fault> = schedule.faults.clone();
        let message = fired.iter().find_map(breaks);
        Outcome {
            violation: message.map(|message| Violation {
                invariant: "ledger".into(),
                message: message.into(),
            }),
            redeliveries_used: schedule.redeliveries_max.min(1),
            faults: fired,
            redeliveries_refused: 0,
            choices: vec![],
            switches: vec![],
            trace: vec![format!("{schedule:?}")],
            fingerprint: fingerprint_of(schedule),
        }
    }

    fn shrunk_faults(
        fault: Fault,
        breaks: fn(&Fault) -> Option<&'static str>,
    ) -> Vec<(FaultKind, String, u32)> {
        let original = Schedule {
            base_seed: 7,
            events: vec![1],
            faults: vec![fault],
            redeliveries_max: 1,
            choices: vec![],
            split_answers: false,
        };
        let first = fault_oracle(&original, breaks);
        let mut shrinker = Shrinker::new(
            original,
            first.violation.clone().unwrap(),
            first.fingerprint,
            1_000,
        );
        while let Some(candidate) = shrinker.next_candidate() {
            shrinker
                .report(fault_oracle(&candidate.schedule, breaks))
                .unwrap();
        }
        shrinker
            .best()
            .schedule
            .faults
            .iter()
            .map(|f| (f.kind, f.invocation.clone(), f.effect))
            .collect()
    }

    fn at(kind: FaultKind, invocation: &str, effect: u32) -> Fault {
        Fault {
            kind,
            invocation: invocation.into(),
            event: Some(1),
            effect,
            label: String::new(),
        }
    }

    #[test]
    fn keeps_a_crash_in_a_callee_when_the_callers_call_breaks_the_invariant_otherwise() {
        // The half-done write in the callee is the bug found; a crash after the call makes the
        // resend charge twice, which the report must not tell instead.
        let breaks = |f: &Fault| match (f.kind, f.invocation.as_str(), f.effect) {
            (_, "req-2#1/0", 1) => Some("a charge without its balance update"),
            (FaultKind::CrashAfter, "req-2#1", 0) => Some("charged twice"),
            _ => None,
        };
        assert_eq!(
            shrunk_faults(at(FaultKind::CrashBefore, "req-2#1/0", 1), breaks),
            vec![(FaultKind::CrashBefore, "req-2#1/0".to_string(), 1)]
        );
    }

    #[test]
    fn moves_a_crash_before_a_callees_first_call_to_before_the_callers_call() {
        let breaks = |f: &Fault| match (f.kind, f.invocation.as_str(), f.effect) {
            (FaultKind::CrashBefore, "req-2#1/0", 0) | (FaultKind::CrashBefore, "req-2#1", 0) => {
                Some("the audit row is missing")
            }
            _ => None,
        };
        assert_eq!(
            shrunk_faults(at(FaultKind::CrashBefore, "req-2#1/0", 0), breaks),
            vec![(FaultKind::CrashBefore, "req-2#1".to_string(), 0)]
        );
    }

    #[test]
    fn moves_a_crash_in_a_callee_to_the_call_that_hosts_it() {
        // A caller and its service binding's callee die together, so the invariant breaks alike
        // with a crash at the callee's second statement and after the caller's call.
        let breaks = |f: &Fault| match (f.kind, f.invocation.as_str(), f.effect) {
            (_, "req-2#1/0", 1) | (FaultKind::CrashAfter, "req-2#1", 0) => Some("2 charges"),
            _ => None,
        };
        assert_eq!(
            shrunk_faults(at(FaultKind::CrashBefore, "req-2#1/0", 1), breaks),
            vec![(FaultKind::CrashAfter, "req-2#1".to_string(), 0)]
        );
    }

    /// An alarm that sends each job the requests before `req-3` queued, one call each, and
    /// clears the list after its last call: `req-3`'s job is lost when `req-3` enqueues while
    /// the alarm waits at its last call. A choice at an alarm call the run never makes does not
    /// apply.
    fn alarm_oracle(schedule: &Schedule) -> Outcome {
        let jobs = schedule.events.iter().filter(|&&e| e < 2).count() as u32;
        let choices: Vec<Choice> = schedule
            .choices
            .iter()
            .filter(|c| {
                c.instead
                    .as_ref()
                    .is_some_and(|i| i.invocation != "alarm-1#1" || i.effect < Some(jobs))
            })
            .cloned()
            .collect();
        let race = choices.iter().any(|c| {
            c.instead.as_ref().is_some_and(|i| {
                i.invocation == "alarm-1#1" && jobs > 0 && i.effect == Some(jobs - 1)
            }) && c.take.invocation == "req-3#1"
        });
        let broken = schedule.events.contains(&2) && race;
        Outcome {
            violation: broken.then(|| Violation {
                invariant: "jobs-are-not-lost".into(),
                message: "n3 lost".into(),
            }),
            faults: vec![],
            redeliveries_used: 0,
            redeliveries_refused: 0,
            choices,
            switches: vec![],
            trace: vec![format!("{schedule:?}")],
            fingerprint: fingerprint_of(schedule),
        }
    }

    #[test]
    fn drops_an_event_whose_job_only_made_the_alarm_call_once_more() {
        let step = |invocation: &str, effect: u32| Step {
            invocation: invocation.into(),
            effect: Some(effect),
            answer: false,
        };
        let original = Schedule {
            base_seed: 7,
            events: vec![0, 1, 2],
            faults: vec![],
            redeliveries_max: 0,
            choices: vec![Choice {
                instead: Some(step("alarm-1#1", 1)),
                take: step("req-3#1", 0),
            }],
            split_answers: false,
        };
        let first = alarm_oracle(&original);
        let mut shrinker = Shrinker::new(
            original.clone(),
            first.violation.clone().unwrap(),
            first.fingerprint,
            1_000,
        )
        .for_events(vec!["req-1".into(), "req-2".into(), "req-3".into()]);
        while let Some(candidate) = shrinker.next_candidate() {
            shrinker.report(alarm_oracle(&candidate.schedule)).unwrap();
        }
        let best = &shrinker.best().schedule;
        assert_eq!(best.events, vec![1, 2]);
        assert_eq!(
            best.choices,
            vec![Choice {
                instead: Some(step("alarm-1#1", 0)),
                take: step("req-3#1", 0),
            }]
        );
    }

    /// A queue batch that handles each of its messages (one per event) in three calls, and
    /// sends an email twice when it dies before the third call of `msg-3`'s: after sending, before
    /// recording it.
    fn batch_oracle(schedule: &Schedule) -> Outcome {
        let calls = 3 * schedule.events.len() as u32;
        let faults: Vec<Fault> = schedule
            .faults
            .iter()
            .filter(|f| f.invocation == "batch-1#1" && f.effect < calls)
            .cloned()
            .collect();
        let third = schedule.events.iter().position(|&e| e == 2);
        let broken = faults.iter().any(|f| {
            f.kind == FaultKind::CrashBefore
                && third.is_some_and(|at| f.effect == 3 * at as u32 + 2)
        });
        Outcome {
            violation: broken.then(|| Violation {
                invariant: "one-email-per-order".into(),
                message: "o-3 got 2 emails".into(),
            }),
            faults,
            redeliveries_used: 0,
            redeliveries_refused: 0,
            choices: vec![],
            switches: vec![],
            trace: vec![format!("{schedule:?}")],
            fingerprint: fingerprint_of(schedule),
        }
    }

    #[test]
    fn drops_events_whose_messages_came_before_the_crash_in_a_shared_batch() {
        let crash = |effect: u32| Fault {
            kind: FaultKind::CrashBefore,
            invocation: "batch-1#1".into(),
            event: None,
            effect,
            label: "D1:DB run".into(),
        };
        let original = Schedule {
            base_seed: 7,
            events: vec![0, 1, 2],
            faults: vec![crash(8)],
            redeliveries_max: 0,
            choices: vec![],
            split_answers: false,
        };
        let first = batch_oracle(&original);
        let mut shrinker = Shrinker::new(
            original.clone(),
            first.violation.clone().unwrap(),
            first.fingerprint,
            1_000,
        )
        .for_events(vec!["msg-1".into(), "msg-2".into(), "msg-3".into()]);
        while let Some(candidate) = shrinker.next_candidate() {
            shrinker.report(batch_oracle(&candidate.schedule)).unwrap();
        }
        let best = &shrinker.best().schedule;
        assert_eq!(best.events, vec![2]);
        assert_eq!(best.faults, vec![crash(2)]);
    }

    #[test]
    fn shrinks_to_the_one_event_and_fault_that_matter() {
        let original = Schedule {
            base_seed: 7,
            events: vec![0, 1, 2],
            faults: vec![
                fault(FaultKind::CrashBefore, 0, 0),
                fault(FaultKind::CrashAfter, 1, 0),
                fault(FaultKind::CrashAfter, 2, 1),
            ],
            redeliveries_max: 3,
            choices: vec![],
            split_answers: false,
        };
        let first = oracle(&original);
        let mut shrinker = Shrinker::new(
            original.clone(),
            first.violation.clone().unwrap(),
            first.fingerprint,
            1_000,
        );
        let mut candidates = 0;
        while let Some(candidate) = shrinker.next_candidate() {
            candidates += 1;
            assert!(candidates < 100);
            shrinker.report(oracle(&candidate.schedule)).unwrap();
        }
        let best = shrinker.best();
        assert_eq!(best.schedule.events, vec![1]);
        assert_eq!(
            best.schedule.faults,
            vec![fault(FaultKind::CrashAfter, 1, 0)]
        );
        assert_eq!(best.schedule.redeliveries_max, 1);
        assert_eq!(best.message, "1 faults");
        assert_eq!(shrinker.runs(), candidates);
    }

    #[test]
    fn renumbers_the_platform_work_an_event_made_when_it_drops_the_event() {
        // Each of three messages makes one batch, numbered in the order the run made them; the
        // invariant breaks when the third message's batch dies before its acknowledgement.
        let with_events = |events: &[u32]| -> Vec<String> {
            events
                .iter()
                .enumerate()
                .map(|(n, _)| format!("batch-{}#1", n + 1))
                .collect()
        };
        let run = |schedule: &Schedule| {
            let batches = with_events(&schedule.events);
            let third = schedule
                .events
                .iter()
                .position(|e| *e == 2)
                .map(|at| batches[at].clone());
            let fired: Vec<Fault> = schedule
                .faults
                .iter()
                .filter(|f| batches.contains(&f.invocation))
                .cloned()
                .collect();
            let broken = third.is_some_and(|b| fired.iter().any(|f| f.invocation == b));
            Outcome {
                violation: broken.then(|| Violation {
                    invariant: "credited-at-most-once".into(),
                    message: "credited twice".into(),
                }),
                faults: fired,
                redeliveries_used: 0,
                redeliveries_refused: 0,
                choices: vec![],
                switches: vec![],
                trace: vec![],
                fingerprint: fingerprint_of(schedule),
            }
        };
        let platform = |invocation: &str| Fault {
            kind: FaultKind::CrashBefore,
            invocation: invocation.into(),
            event: None,
            effect: 1,
            label: "Queue:deposits ack".into(),
        };
        let original = Schedule {
            base_seed: 7,
            events: vec![0, 1, 2],
            faults: vec![platform("batch-3#1")],
            redeliveries_max: 0,
            choices: vec![],
            split_answers: false,
        };
        let first = run(&original);
        let mut shrinker = Shrinker::new(
            original,
            first.violation.clone().unwrap(),
            first.fingerprint,
            100,
        )
        .for_events(vec!["msg-1".into(), "msg-2".into(), "msg-3".into()]);
        while let Some(candidate) = shrinker.next_candidate() {
            shrinker.report(run(&candidate.schedule)).unwrap();
        }
        assert_eq!(shrinker.best().schedule.events, vec![2]);
        assert_eq!(shrinker.best().schedule.faults, vec![platform("batch-1#1")]);
    }

    #[test]
    fn renumbers_platform_work_above_the_dropped_one_and_forgets_the_dropped_one() {
        use crate::schedule::{Choice, Step};
        let step = |invocation: &str, effect: Option<u32>| Step {
            invocation: invocation.into(),
            effect,
            answer: false,
        };
        let events = vec!["msg-1".to_string(), "msg-2".into(), "msg-3".into()];
        // Batches 2 and 3 race after batch 1 ran alone; msg-3's delivery waited for batch 1.
        let best = Schedule {
            base_seed: 7,
            events: vec![0, 1, 2],
            faults: vec![],
            redeliveries_max: 0,
            choices: vec![
                Choice {
                    instead: Some(step("msg-3#1", None)),
                    take: step("batch-1#1", None),
                },
                Choice {
                    instead: Some(step("batch-2#1", Some(1))),
                    take: step("batch-3#1", None),
                },
            ],
            split_answers: false,
        };
        let renumbered = platform_renumbered(&best, &events, 1).unwrap();
        assert_eq!(
            renumbered.choices,
            vec![Choice {
                instead: Some(step("batch-1#1", Some(1))),
                take: step("batch-2#1", None),
            }]
        );
        assert_eq!(highest_platform_number(&best, &events), 3);
        assert!(platform_renumbered(&best, &events, 4).is_none());
    }

    #[test]
    fn dropping_an_event_keeps_faults_on_platform_invocations() {
        let platform = Fault {
            kind: FaultKind::Transient,
            invocation: "batch-1#1".into(),
            event: None,
            effect: 0,
            label: "Queue:JOBS ack".into(),
        };
        let original = Schedule {
            base_seed: 7,
            events: vec![0, 1],
            faults: vec![fault(FaultKind::CrashAfter, 0, 0), platform.clone()],
            redeliveries_max: 1,
            choices: vec![],
            split_answers: false,
        };
        let mut shrinker = Shrinker::new(
            original,
            Violation {
                invariant: "i".into(),
                message: "m".into(),
            },
            0,
            10,
        );
        shrinker.next_candidate().unwrap();
        shrinker
            .report(Outcome {
                violation: Some(Violation {
                    invariant: "i".into(),
                    message: "m".into(),
                }),
                faults: vec![fault(FaultKind::CrashAfter, 0, 0), platform.clone()],
                redeliveries_used: 1,
                redeliveries_refused: 0,
                choices: vec![],
                switches: vec![],
                trace: vec![],
                fingerprint: 0,
            })
            .unwrap();
        let candidate = shrinker.next_candidate().unwrap();
        assert_eq!(candidate.schedule.events, vec![1]);
        assert_eq!(candidate.schedule.faults, vec![platform]);
    }

    #[test]
    fn respects_the_run_limit() {
        let original = Schedule {
            base_seed: 7,
            events: vec![0, 1, 2],
            faults: vec![fault(FaultKind::CrashAfter, 1, 0)],
            redeliveries_max: 3,
            choices: vec![],
            split_answers: false,
        };
        let first = oracle(&original);
        let mut shrinker = Shrinker::new(original, first.violation.unwrap(), first.fingerprint, 2);
        while let Some(candidate) = shrinker.next_candidate() {
            shrinker.report(oracle(&candidate.schedule)).unwrap();
        }
        assert_eq!(shrinker.runs(), 2);
    }

    #[test]
    fn keeps_at_least_one_event() {
        // An invariant the setup's state already breaks: every schedule violates it.
        let always = |schedule: &Schedule| Outcome {
            violation: Some(Violation {
                invariant: "all-deposits-in".into(),
                message: format!("{} events", schedule.events.len()),
            }),
            faults: vec![],
            redeliveries_used: 0,
            redeliveries_refused: 0,
            choices: vec![],
            switches: vec![],
            trace: vec![],
            fingerprint: 7,
        };
        let original = Schedule {
            base_seed: 7,
            events: vec![0, 1, 2],
            faults: vec![],
            redeliveries_max: 0,
            choices: vec![],
            split_answers: false,
        };
        let first = always(&original);
        let mut shrinker = Shrinker::new(
            original,
            first.violation.clone().unwrap(),
            first.fingerprint,
            100,
        );
        while let Some(candidate) = shrinker.next_candidate() {
            assert!(!candidate.schedule.events.is_empty());
            shrinker.report(always(&candidate.schedule)).unwrap();
        }
        assert_eq!(shrinker.best().schedule.events, vec![2]);
    }

    #[test]
    fn keeps_the_resends_the_client_would_make() {
        // A crash kills req-1's first delivery; its client resends while it has retries. The
        // invariant ("nothing left pending") breaks with the resend (it takes a shortcut) and
        // also without it, but a run whose client stops resending is not one the check explores.
        let run = |schedule: &Schedule| {
            let resent = schedule.redeliveries_max >= 1;
            Outcome {
                violation: Some(Violation {
                    invariant: "no-pending-left".into(),
                    message: if resent {
                        "the resend took a shortcut"
                    } else {
                        "the client gave up"
                    }
                    .into(),
                }),
                faults: schedule.faults.clone(),
                redeliveries_used: u32::from(resent),
                redeliveries_refused: u32::from(!resent),
                choices: vec![],
                switches: vec![],
                trace: vec![],
                fingerprint: fingerprint_of(schedule),
            }
        };
        let original = Schedule {
            base_seed: 7,
            events: vec![0],
            faults: vec![fault(FaultKind::CrashBefore, 0, 2)],
            redeliveries_max: 3,
            choices: vec![],
            split_answers: false,
        };
        let first = run(&original);
        let mut shrinker = Shrinker::new(
            original,
            first.violation.clone().unwrap(),
            first.fingerprint,
            100,
        );
        while let Some(candidate) = shrinker.next_candidate() {
            shrinker.report(run(&candidate.schedule)).unwrap();
        }
        assert_eq!(shrinker.best().schedule.redeliveries_max, 1);
        assert_eq!(shrinker.best().message, "the resend took a shortcut");
    }

    /// A shrinker started on the minimal violating run of `oracle`, and that run's outcome.
    fn minimal_violation(runs_max: u64) -> (Shrinker, Outcome) {
        let original = Schedule {
            base_seed: 7,
            events: vec![1],
            faults: vec![fault(FaultKind::CrashAfter, 1, 0)],
            redeliveries_max: 1,
            choices: vec![],
            split_answers: false,
        };
        let first = oracle(&original);
        let shrinker = Shrinker::new(
            original,
            first.violation.clone().unwrap(),
            first.fingerprint,
            runs_max,
        );
        (shrinker, first)
    }

    #[test]
    fn verification_catches_a_diverging_replay() {
        let (mut shrinker, first) = minimal_violation(10);
        shrinker.next_candidate().unwrap();
        let mut replayed = first;
        replayed.fingerprint ^= 1;
        let error = shrinker.report(replayed).unwrap_err();
        assert!(
            error.message().starts_with(
                "nondeterminism: replaying the violating run broke invariant one-charge-per-order \
                 again but did something else on the way"
            ),
            "{error}"
        );
    }

    #[test]
    fn the_verifying_replay_records_the_trace_the_report_shows() {
        let (mut shrinker, first) = minimal_violation(1);
        assert!(shrinker.best().trace.is_empty());
        let candidate = shrinker.next_candidate().unwrap();
        assert!(candidate.strict);
        shrinker.report(oracle(&candidate.schedule)).unwrap();
        assert!(shrinker.next_candidate().is_none());
        assert_eq!(shrinker.best().trace, first.trace);
    }
}

#[cfg(test)]
mod choice_tests {
    use super::*;
    use crate::schedule::{Choice, FaultKind, Step};

    /// Instead of `instead`'s next effect, `take`'s.
    pub(super) fn choice(instead: &str, take: &str) -> Choice {
        let step = |invocation: &str| Step {
            invocation: invocation.into(),
            effect: Some(0),
            answer: false,
        };
        Choice {
            instead: Some(step(instead)),
            take: step(take),
        }
    }

    /// Breaks exactly when req-2 runs instead of req-1, and shows the choices made.
    fn oracle(schedule: &Schedule) -> Outcome {
        let broken = schedule.choices.contains(&choice("req-1#1", "req-2#1"));
        Outcome {
            violation: broken.then(|| Violation {
                invariant: "i".into(),
                message: format!("{} switches", schedule.choices.len()),
            }),
            faults: vec![],
            redeliveries_used: 0,
            redeliveries_refused: 0,
            choices: schedule.choices.clone(),
            switches: vec![],
            trace: vec![format!("{:?}", schedule.choices)],
            fingerprint: 0,
        }
    }

    #[test]
    fn removes_context_switches_that_do_not_matter() {
        let original = Schedule {
            base_seed: 7,
            events: vec![],
            faults: vec![],
            redeliveries_max: 0,
            choices: vec![
                choice("req-3#1", "req-1#1"),
                choice("req-1#1", "req-2#1"),
                choice("req-2#1", "req-3#1"),
            ],
            split_answers: false,
        };
        let first = oracle(&original);
        let mut shrinker =
            Shrinker::new(original, first.violation.unwrap(), first.fingerprint, 100);
        while let Some(candidate) = shrinker.next_candidate() {
            shrinker.report(oracle(&candidate.schedule)).unwrap();
        }
        assert_eq!(
            shrinker.best().schedule.choices,
            vec![choice("req-1#1", "req-2#1")]
        );
        assert_eq!(shrinker.best().message, "1 switches");
    }

    /// Breaks when req-2 runs before req-1's delivery finishes its effect #0, whichever
    /// delivery of req-1 that is; faults are reported as they fire.
    fn race_oracle(schedule: &Schedule) -> Outcome {
        let broken = schedule
            .choices
            .iter()
            .any(|c| c.take.invocation == "req-2#1" && c.instead.is_some());
        Outcome {
            violation: broken.then(|| Violation {
                invariant: "i".into(),
                message: format!("{} faults", schedule.faults.len()),
            }),
            faults: schedule.faults.clone(),
            redeliveries_used: schedule.redeliveries_max,
            redeliveries_refused: 0,
            choices: schedule.choices.clone(),
            switches: vec![],
            trace: vec![format!("{:?} {:?}", schedule.faults, schedule.choices)],
            fingerprint: 0,
        }
    }

    #[test]
    fn drops_a_crash_whose_resend_only_carried_the_race() {
        let crash = Fault {
            kind: FaultKind::CrashBefore,
            invocation: "req-1#1".into(),
            event: Some(0),
            effect: 1,
            label: "D1:DB run".into(),
        };
        let original = Schedule {
            base_seed: 7,
            events: vec![0, 1],
            faults: vec![crash],
            redeliveries_max: 1,
            // The race as found: between the resend's steps.
            choices: vec![choice("req-1#2", "req-2#1")],
            split_answers: false,
        };
        let first = race_oracle(&original);
        let mut shrinker =
            Shrinker::new(original, first.violation.unwrap(), first.fingerprint, 100)
                .for_events(vec!["req-1".into(), "req-2".into()]);
        while let Some(candidate) = shrinker.next_candidate() {
            shrinker.report(race_oracle(&candidate.schedule)).unwrap();
        }
        let best = &shrinker.best().schedule;
        assert_eq!(best.faults, vec![]);
        assert_eq!(best.choices, vec![choice("req-1#1", "req-2#1")]);
        assert_eq!(best.redeliveries_max, 0);
    }
}

#[cfg(test)]
mod merge_tests {
    use super::choice_tests::choice as switch;
    use super::*;
    use crate::schedule::Step;

    /// A run that breaks the invariant with one of `breaking` as its choices and could have
    /// switched as `switches` say, whatever its choices.
    pub(super) fn run(
        schedule: &Schedule,
        breaking: &[Vec<Choice>],
        switches: &[Choice],
    ) -> Outcome {
        let broken = breaking.contains(&schedule.choices);
        Outcome {
            violation: broken.then(|| Violation {
                invariant: "no-money-lost".into(),
                message: "balance 400 + purchases 1200 is not 1000".into(),
            }),
            faults: vec![],
            redeliveries_used: 0,
            redeliveries_refused: 0,
            choices: schedule.choices.clone(),
            switches: switches.to_vec(),
            trace: vec![],
            fingerprint: 0,
        }
    }

    /// Shrinks `choices`; answers the best choices and every candidate's.
    fn shrink(
        choices: Vec<Choice>,
        breaking: &[Vec<Choice>],
        switches: &[Choice],
    ) -> (Vec<Choice>, Vec<Vec<Choice>>) {
        let original = Schedule {
            base_seed: 7,
            events: vec![0],
            faults: vec![],
            redeliveries_max: 0,
            choices,
            split_answers: false,
        };
        let first = run(&original, breaking, switches);
        let mut shrinker = Shrinker::new(original, first.violation.unwrap(), 0, 1_000);
        let mut tried = Vec::new();
        while let Some(candidate) = shrinker.next_candidate() {
            tried.push(candidate.schedule.choices.clone());
            shrinker
                .report(run(&candidate.schedule, breaking, switches))
                .unwrap();
        }
        (shrinker.best().schedule.choices.clone(), tried)
    }

    #[test]
    fn replaces_two_choices_by_one_switch_made_earlier() {
        // The race as found: deliver req-2 while req-1's callee waits, then run req-2's callee
        // ahead of it. Delivering req-2 one point earlier races as well.
        let deferred = switch("req-1#1/2", "req-2#1");
        let resumed = switch("req-1#1/2", "req-2#1/1");
        let earlier = switch("req-1#1", "req-2#1");
        let switches = vec![
            switch("req-1#1", "req-2#1"),
            earlier.clone(),
            deferred.clone(),
            switch("req-2#1", "req-1#1/2"),
            resumed.clone(),
        ];
        let breaking = [
            vec![deferred.clone(), resumed.clone()],
            vec![earlier.clone()],
        ];
        let (best, tried) = shrink(vec![deferred, resumed], &breaking, &switches);
        assert_eq!(best, vec![earlier.clone()]);
        // The verifying replay, each choice dropped alone, then the re-anchored switch (the
        // choice that deferred the callee, taken one point earlier).
        assert_eq!(tried[3], vec![earlier], "{tried:?}");
    }

    #[test]
    fn replaces_a_pair_of_choices_by_one() {
        let first = switch("a", "b");
        let second = switch("b", "c");
        let third = switch("c", "a");
        let merged = switch("b", "a");
        let switches = vec![
            first.clone(),
            switch("a", "c"),
            merged.clone(),
            second.clone(),
            third.clone(),
        ];
        let breaking = [
            vec![first.clone(), second.clone(), third.clone()],
            vec![first.clone(), merged.clone()],
        ];
        let (best, _) = shrink(vec![first.clone(), second, third], &breaking, &switches);
        assert_eq!(best, vec![first, merged]);
    }

    #[test]
    fn tries_each_switch_a_run_without_choices_could_make() {
        // The race as a random walk found it: deliver req-2 instead of req-1's check, then
        // run req-1's check instead of req-2's insert. Both checks come before both inserts;
        // so they do with the one switch "deliver req-2 instead of req-1's insert", offered
        // only where req-1 is about to insert with req-2 not yet delivered, a point the walk's
        // runs never reach.
        let step = |invocation: &str, effect: Option<u32>| Step {
            invocation: invocation.into(),
            effect,
            answer: false,
        };
        let switch = |instead: Step, take: Step| Choice {
            instead: Some(instead),
            take,
        };
        let found = vec![
            switch(step("req-1#1", Some(0)), step("req-2#1", None)),
            switch(step("req-2#1", Some(1)), step("req-1#1", Some(0))),
        ];
        let single = switch(step("req-1#1", Some(1)), step("req-2#1", None));
        let inserts_swapped = switch(step("req-1#1", Some(1)), step("req-2#1", Some(1)));
        let race = |schedule: &Schedule| {
            let switches = if schedule.choices.is_empty() {
                vec![found[0].clone(), single.clone()]
            } else {
                vec![found[0].clone(), found[1].clone(), inserts_swapped.clone()]
            };
            Outcome {
                switches,
                ..run(schedule, &[found.clone(), vec![single.clone()]], &[])
            }
        };
        let original = Schedule {
            base_seed: 7,
            events: vec![0],
            faults: vec![],
            redeliveries_max: 0,
            choices: found.clone(),
            split_answers: false,
        };
        let first = race(&original);
        let mut shrinker = Shrinker::new(original, first.violation.unwrap(), 0, 1_000);
        let mut tried = Vec::new();
        while let Some(candidate) = shrinker.next_candidate() {
            tried.push(candidate.schedule.choices.clone());
            shrinker.report(race(&candidate.schedule)).unwrap();
        }
        assert_eq!(shrinker.best().schedule.choices, vec![single.clone()]);
        assert_eq!(
            tried,
            [
                // The verifying replay, each choice dropped alone, and the one merge left (the
                // best run's other switches are its choices).
                found.clone(),
                vec![found[1].clone()],
                vec![found[0].clone()],
                vec![inserts_swapped],
                // The run without choices, then its switches alone but the first, which
                // dropping the second choice tried.
                vec![],
                vec![single],
                // From the new best: its one choice dropped.
                vec![],
            ],
            "{tried:?}"
        );
    }

    #[test]
    fn bounds_the_merge_candidates_and_orders_them_the_same_every_time() {
        let switches: Vec<Choice> = (0..1_000)
            .map(|n| switch(&format!("s-{n}"), &format!("t-{}", n % 7)))
            .collect();
        let choices: Vec<Choice> = switches.iter().step_by(100).cloned().collect();
        let breaking = [choices.clone()];
        let (best, tried) = shrink(choices.clone(), &breaking, &switches);
        assert_eq!(best, choices);
        // The verifying replay, ten removals, the merges, the run without choices, then the
        // switches that run could have made, each alone.
        let merges = &tried[1 + choices.len()..1 + choices.len() + MERGES_MAX];
        assert!(merges.iter().all(|c| c.len() < choices.len()));
        let (no_switch, one_switch) = tried[1 + choices.len() + MERGES_MAX..]
            .split_first()
            .unwrap();
        assert_eq!(no_switch, &Vec::<Choice>::new());
        assert_eq!(one_switch.len(), MERGES_MAX);
        assert!(one_switch
            .iter()
            .all(|c| c.len() == 1 && !merges.contains(c)));
        assert_eq!(shrink(choices, &breaking, &switches).1, tried);
    }
}

#[cfg(test)]
mod fault_swap_tests {
    use super::choice_tests::choice as switch;
    use super::*;

    /// A crash before the alarm's first effect: the alarm dies, and its retry runs after the
    /// other request's step.
    fn crash(invocation: &str) -> Fault {
        Fault {
            kind: FaultKind::CrashBefore,
            invocation: invocation.into(),
            event: None,
            effect: 0,
            label: "fetch POST https://notify.example/hold-expired".into(),
        }
    }

    /// Shrinks `original` against `run`; answers the best schedule and every candidate's faults
    /// and choices.
    fn shrink(
        original: Schedule,
        run: impl Fn(&Schedule) -> Outcome,
    ) -> (Schedule, Vec<(usize, Vec<Choice>)>) {
        let first = run(&original);
        let mut shrinker = Shrinker::new(original, first.violation.unwrap(), 0, 1_000);
        let mut tried = Vec::new();
        while let Some(candidate) = shrinker.next_candidate() {
            let schedule = &candidate.schedule;
            tried.push((schedule.faults.len(), schedule.choices.clone()));
            shrinker.report(run(schedule)).unwrap();
        }
        (shrinker.best().schedule.clone(), tried)
    }

    #[test]
    fn replaces_a_crash_by_the_context_switch_it_stood_in_for() {
        // The alarm is delivered instead of the confirmation, and reads a hold. With the crash
        // the confirmation runs next, then the alarm's retry releases the hold it read again;
        // without it, the confirmation runs only with a switch away from the alarm's notice.
        let delivered = switch("req-2#1", "alarm-1#1");
        let confirmed = switch("alarm-1#1", "req-2#1");
        let other_first = switch("req-2#1", "req-3#1");
        let away_elsewhere = switch("alarm-1#1", "req-3#1");
        let confirmed_later = switch("req-3#1", "req-2#1");
        let fault = crash("alarm-1#1");
        let run = |schedule: &Schedule| {
            let crashed = schedule.faults.contains(&fault);
            let broken = if crashed {
                schedule.choices == [delivered.clone()]
            } else {
                schedule.choices == [delivered.clone(), confirmed.clone()]
            };
            Outcome {
                violation: broken.then(|| Violation {
                    invariant: "confirmed-never-released".into(),
                    message: "reservation #1 (s1, ada) was confirmed and is now released".into(),
                }),
                faults: schedule.faults.clone(),
                redeliveries_used: 0,
                redeliveries_refused: 0,
                choices: schedule.choices.clone(),
                switches: if crashed {
                    vec![delivered.clone(), confirmed.clone()]
                } else {
                    vec![
                        delivered.clone(),
                        other_first.clone(),
                        confirmed.clone(),
                        confirmed_later.clone(),
                        away_elsewhere.clone(),
                    ]
                },
                trace: vec![],
                fingerprint: 0,
            }
        };
        let original = Schedule {
            base_seed: 7,
            events: vec![0],
            faults: vec![fault.clone()],
            redeliveries_max: 0,
            choices: vec![delivered.clone()],
            split_answers: false,
        };
        let (best, tried) = shrink(original.clone(), run);
        assert_eq!(best.faults, vec![]);
        assert_eq!(best.choices, vec![delivered.clone(), confirmed.clone()]);
        assert_eq!(
            tried[..5],
            [
                // The verifying replay, the crash dropped, the switch dropped.
                (1, vec![delivered.clone()]),
                (0, vec![delivered.clone()]),
                (1, vec![]),
                // Without the crash and the switch, then with the switch away from the alarm's
                // notice to the step the crashed run took.
                (0, vec![]),
                (0, vec![delivered.clone(), confirmed.clone()]),
            ],
            "{tried:?}"
        );
        assert_eq!(shrink(original, run).1, tried);
    }

    #[test]
    fn orders_the_switches_that_replace_a_crash() {
        let fault = crash("alarm-1#1");
        let delivered = switch("req-2#1", "alarm-1#1");
        let took = [&delivered.instead.clone().unwrap(), &delivered.take];
        let confirmed = switch("alarm-1#1", "req-2#1");
        let away = switch("alarm-1#1", "req-3#1");
        let toward = switch("req-3#1", "req-2#1");
        let neither = switch("req-3#1", "req-4#1");
        let switches = [
            neither.clone(),
            delivered.clone(),
            toward.clone(),
            away.clone(),
            confirmed.clone(),
        ];
        let lists = fault_swaps(&fault, std::slice::from_ref(&delivered), &switches, &took);
        assert_eq!(
            lists,
            [
                vec![delivered.clone(), confirmed],
                vec![delivered.clone(), away],
                vec![delivered.clone(), toward],
                vec![neither, delivered],
            ]
        );
    }

    #[test]
    fn bounds_the_candidates_that_replace_faults() {
        // Two faults that the invariant needs, and a run without either that could have
        // switched at a thousand points.
        let faults = vec![crash("alarm-1#1"), crash("alarm-2#1")];
        let switches: Vec<Choice> = (0..1_000)
            .map(|n| switch(&format!("s-{n}"), &format!("t-{}", n % 7)))
            .collect();
        let run = |schedule: &Schedule| Outcome {
            violation: (schedule.faults.len() == 2).then(|| Violation {
                invariant: "i".into(),
                message: "m".into(),
            }),
            faults: schedule.faults.clone(),
            redeliveries_used: 0,
            redeliveries_refused: 0,
            choices: schedule.choices.clone(),
            switches: switches.clone(),
            trace: vec![],
            fingerprint: 0,
        };
        let original = Schedule {
            base_seed: 7,
            events: vec![0],
            faults,
            redeliveries_max: 0,
            choices: vec![],
            split_answers: false,
        };
        let (best, tried) = shrink(original.clone(), run);
        assert_eq!(best, original);
        // The verifying replay, each fault dropped, then the candidates that replace one.
        assert_eq!(tried.len(), 1 + 2 + MERGES_MAX, "{tried:?}");
        assert!(tried[3..]
            .iter()
            .all(|(faults, choices)| *faults == 1 && choices.len() == 1));
        assert_eq!(shrink(original, run).1, tried);
    }
}
