//! Partial-order reduction for the exhaustive explorer: source-set dynamic partial-order
//! reduction (Abdulla, Aronis, Jonsson and Sagonas, "Optimal dynamic partial order reduction",
//! POPL 2014; "Source Sets: A Foundation for Optimal Dynamic Partial Order Reduction", JACM
//! 2017, Algorithm 1, "Source-DPOR") with sleep sets (Godefroid, "Partial-Order Methods for the
//! Verification of Concurrent Systems", LNCS 1032, 1996). The stateless search itself is
//! `tree.rs`; this module says which steps commute, which options sleep at a new scheduling
//! point, and, after every run, where the run's races ask for more exploration.
//!
//! # The model
//!
//! A run is a sequence of steps. A step is what happens between two scheduling points: one
//! pending option runs (an invocation's parked effect, decided and performed, with the
//! JavaScript the invocation then runs until it parks again; or the delivery of an event, up to
//! its first effect). Each option names its process (the invocation) and a footprint: the
//! resources it may touch, each read or written. Two steps are *dependent* when they belong to
//! the same invocation family (an invocation, its callees, and every delivery of its event: a
//! crash of one kills or replaces the others), when either has an empty footprint (unknown: it
//! conflicts with everything), or when both touch a resource and one of them writes it.
//! Otherwise they are *independent*. Happens-before is the transitive closure of program order,
//! dependence between steps in run order, and enabling (A3 below).
//!
//! # Why BOUNDED still means every distinct behaviour was covered
//!
//! Assumptions: (A1) a step's footprint over-approximates every piece of shared state the step
//! reads or writes, including what the JavaScript it runs until it parks again shares with
//! other invocations (module globals are not tracked: they must not be shared mutable state;
//! the virtual clock is causal, see `Lamport`, and SQLite's PRNG is a resource of its own);
//! (A2) a fault decision is part of the step of its own invocation, and a crash touches nothing
//! outside that step's footprint except its own family (callees it kills, the resend that
//! replaces it); (A3) an option that appears at a scheduling point was enabled by the step just
//! before it (the host offers every pending step at every point); (A4) the host calls `choose`
//! before every step, so that the engine sees every step's footprint.
//!
//! Under (A1) and (A2), independent steps commute: run in either order from the same state
//! they see the same results, park at the same next effects, and leave the same state; neither
//! disables the other (only a crash removes pending steps, and only its family's). So runs that
//! differ only by swapping adjacent independent steps (the same Mazurkiewicz trace) end in the
//! same state with the same answers, and an invariant breaks in all of them or in none.
//!
//! Fix the fault decisions as a function F from (invocation, effect) to a decision, with at
//! most `maxFaultsPerRun` faults. Under F every process is deterministic, and the explorer's
//! runs that agree with F form a Source-DPOR exploration of that system: every scheduling point
//! explores its backtrack set, which holds, for every race found in any explored run through
//! the point, including every run that agrees with F, one of the race's initials (or one of
//! them sleeps there). Source-DPOR's correctness theorem (with sleep sets, every maximal trace
//! of a terminating system has an explored run equivalent to it) then covers every trace of
//! the F-system. Sleep sets stay sound with faults because a sleeping option's subtree was
//! explored with all its fault alternatives, within the same fault budget: the budget counts
//! faults, not their order. Every run within the bounds agrees with some such F, so every
//! trace, hence every distinct final state and every violation, within the bounds is explored.
//!
//! The analysis runs at the end of every run over the whole run, which adds the same backtrack
//! entries as the algorithm's analysis step by step (all additions are to points of the current
//! path, made before the search backtracks to them). For each step n and each earlier step i
//! in a race with it (dependent, of another process, with no step between them on a
//! happens-before path from i to n), v is the steps after i that do not happen after i,
//! followed by n; if no initial of v (a step of v that no step of v happens before) is in the
//! backtrack set at the point before i, or asleep there, the first initial is added. Options
//! added above a shard's split depth are already explored (`tree.rs`). A run with more than
//! `STEPS_ANALYZED_MAX` steps gives up on reduction (every option of every point is explored),
//! which is sound.

use std::collections::HashMap;

use crate::strategy::{Access, StepOption};
use crate::tree::Node;

/// Upper bound on the steps of one run that race analysis looks at (it is quadratic).
pub const STEPS_ANALYZED_MAX: usize = 1_000;

/// The invocation family of a process: an invocation id up to its first `#` or `/`, i.e. the
/// event or the platform's work it belongs to. A label without either is its own family.
pub fn family(process: &str) -> &str {
    let end = process.find(['#', '/']).unwrap_or(process.len());
    &process[..end]
}

/// Whether two steps may not be swapped.
pub fn dependent(a: &StepOption, b: &StepOption) -> bool {
    if family(a.process()) == family(b.process()) {
        return true;
    }
    if a.footprint.is_empty() || b.footprint.is_empty() {
        return true;
    }
    conflicts(&a.footprint, &b.footprint)
}

fn conflicts(a: &[Access], b: &[Access]) -> bool {
    a.iter().any(|x| {
        b.iter()
            .any(|y| x.resource == y.resource && (x.write || y.write))
    })
}

/// The sleep set of a new scheduling point whose options are `options`, as one flag per option:
/// the options asleep at the previous point, and those already explored there, that are
/// independent of the step the previous point took (Godefroid's sleep set propagation).
pub(crate) fn sleeping(path: &[Node], options: &[StepOption]) -> Vec<bool> {
    let mut asleep = vec![false; options.len()];
    let Some((parent, state)) = path
        .iter()
        .rev()
        .find_map(|node| node.choice.as_ref().map(|c| (node, c)))
    else {
        return asleep;
    };
    let taken = &state.options[parent.chosen];
    for (j, option) in state.options.iter().enumerate() {
        let sleeps = j != parent.chosen && (state.asleep[j] || state.done[j]);
        if !sleeps || dependent(option, taken) {
            continue;
        }
        // The same process at the same step: independence kept it pending and unchanged.
        if let Some(i) = options
            .iter()
            .position(|o| o.process() == option.process() && o.label == option.label)
        {
            asleep[i] = true;
        }
    }
    asleep
}

/// Race analysis over the run that just ended (see the module comment).
pub(crate) fn analyze(path: &mut [Node]) {
    let choices: Vec<usize> = (0..path.len())
        .filter(|&i| path[i].choice.is_some())
        .collect();
    if choices.len() > STEPS_ANALYZED_MAX {
        explore_everything(path);
        return;
    }
    let options: Vec<Vec<StepOption>> = choices
        .iter()
        .map(|&node| {
            path[node]
                .choice
                .as_ref()
                .map_or_else(Vec::new, |c| c.options.clone())
        })
        .collect();
    let steps: Vec<StepOption> = choices
        .iter()
        .zip(&options)
        .map(|(&node, options)| options[path[node].chosen].clone())
        .collect();
    // Interns processes so that clocks are vectors.
    let mut ids: HashMap<String, usize> = HashMap::new();
    for option in options.iter().flatten() {
        let next = ids.len();
        ids.entry(option.process().to_string()).or_insert(next);
    }
    let id = |option: &StepOption| ids[option.process()];
    // Clocks hold, per process, 1 + the index of the latest step of that process that
    // happens before; 0 for none. `clock` is each process's, `vc` each step's.
    let mut clock: Vec<Vec<u32>> = vec![vec![0; ids.len()]; ids.len()];
    let mut vc: Vec<Vec<u32>> = Vec::with_capacity(steps.len());
    for n in 0..steps.len() {
        if n > 0 {
            // (A3): an option new at this point was enabled by the step just taken.
            let before: Vec<usize> = options[n - 1].iter().map(id).collect();
            for option in &options[n] {
                let p = id(option);
                if !before.contains(&p) {
                    join(&mut clock[p], &vc[n - 1]);
                }
            }
        }
        let p = id(&steps[n]);
        let preds: Vec<usize> = (0..n)
            .filter(|&j| dependent(&steps[j], &steps[n]))
            .collect();
        let mut now = clock[p].clone();
        for &j in &preds {
            join(&mut now, &vc[j]);
        }
        now[p] = n as u32 + 1;
        for &i in &preds {
            let q = id(&steps[i]);
            let after_i = |clock: &[u32]| clock[q] > i as u32;
            // A race is a dependent pair with nothing in between on the way from i to n.
            if q == p || after_i(&clock[p]) || preds.iter().any(|&j| j > i && after_i(&vc[j])) {
                continue;
            }
            // v = the steps after i that do not happen after it, then step n: the steps that
            // could run before i. Its initials are its steps that nothing in it precedes.
            let v: Vec<usize> = (i + 1..n).filter(|&k| !after_i(&vc[k])).collect();
            let clock_of = |k: usize| if k == n { &now } else { &vc[k] };
            let initials: Vec<usize> = v
                .iter()
                .copied()
                .chain(std::iter::once(n))
                .filter(|&k| {
                    v.iter()
                        .all(|&j| j >= k || clock_of(k)[id(&steps[j])] <= j as u32)
                })
                .map(|k| id(&steps[k]))
                .collect();
            let node = &mut path[choices[i]];
            let at: Vec<Option<usize>> = initials
                .iter()
                .map(|&initial| options[i].iter().position(|o| id(o) == initial))
                .collect();
            add_backtrack(node, &at);
        }
        clock[p] = now.clone();
        vc.push(now);
    }
}

fn join(into: &mut [u32], other: &[u32]) {
    for (a, b) in into.iter_mut().zip(other) {
        *a = (*a).max(*b);
    }
}

/// Makes sure one of the initials (as options of the node) is explored from the node: nothing
/// to do if one is in the backtrack set already or asleep (its traces are explored from an
/// earlier sibling), else the first is added. An initial the node does not offer breaks
/// assumption A3; then every option is explored, which is sound.
fn add_backtrack(node: &mut Node, initials: &[Option<usize>]) {
    let Some(choice) = node.choice.as_mut() else {
        return;
    };
    if choice.full {
        return;
    }
    if initials.iter().any(Option::is_none) {
        for (slot, allowed) in choice.backtrack.iter_mut().zip(&node.allowed) {
            *slot |= *allowed;
        }
        return;
    }
    let initials: Vec<usize> = initials.iter().flatten().copied().collect();
    if initials
        .iter()
        .any(|&k| choice.backtrack[k] || choice.asleep[k])
    {
        return;
    }
    if let Some(&k) = initials.iter().find(|&&k| node.allowed[k]) {
        choice.backtrack[k] = true;
    }
}

fn explore_everything(path: &mut [Node]) {
    for node in path.iter_mut() {
        let allowed = node.allowed.clone();
        if let Some(choice) = node.choice.as_mut() {
            for (i, slot) in choice.backtrack.iter_mut().enumerate() {
                *slot |= allowed[i];
            }
        }
    }
}

/// A causal virtual clock for runs with concurrent invocations: a step's time is one more than
/// the latest time among the steps it depends on (Lamport, "Time, clocks, and the ordering of
/// events in a distributed system", CACM 1978), except the arrival of a driver's request,
/// which takes that latest time itself: it is no I/O of the system, and two requests that
/// arrive together read the same `Date.now()`, as they may on Cloudflare. Runs of the same
/// trace give every step the same time, so `Date.now()` does not tell equivalent interleavings
/// apart (assumption A1), and time still only moves forward within an invocation and along
/// every causal chain.
#[derive(Debug, Default)]
pub struct Lamport {
    /// The time of each process's latest step, or of the step that enabled it.
    process: HashMap<String, u64>,
    family: HashMap<String, u64>,
    written: HashMap<String, u64>,
    read: HashMap<String, u64>,
    /// The latest step with an empty footprint: every later step depends on it.
    barrier: u64,
    /// The latest time of any step.
    latest: u64,
    last_time: u64,
    last_options: Vec<String>,
}

impl Lamport {
    /// Times the step `options[chosen]` (an `arrival` does not move the clock) and answers its
    /// time.
    pub fn step(&mut self, options: &[StepOption], chosen: usize, arrival: bool) -> u64 {
        for option in options {
            if !self.last_options.iter().any(|p| p == option.process()) {
                let at = self
                    .process
                    .entry(option.process().to_string())
                    .or_default();
                *at = (*at).max(self.last_time);
            }
        }
        let step = &options[chosen];
        let process = step.process();
        let family_name = family(process);
        let mut time = self
            .barrier
            .max(self.process.get(process).copied().unwrap_or(0));
        time = time.max(self.family.get(family_name).copied().unwrap_or(0));
        if step.footprint.is_empty() {
            time = time.max(self.latest);
        }
        for access in &step.footprint {
            time = time.max(self.written.get(&access.resource).copied().unwrap_or(0));
            if access.write {
                time = time.max(self.read.get(&access.resource).copied().unwrap_or(0));
            }
        }
        let time = if arrival { time } else { time + 1 };
        for access in &step.footprint {
            let slot = if access.write {
                self.written.entry(access.resource.clone()).or_default()
            } else {
                self.read.entry(access.resource.clone()).or_default()
            };
            *slot = (*slot).max(time);
        }
        if step.footprint.is_empty() {
            self.barrier = time;
        }
        self.process.insert(process.to_string(), time);
        self.family.insert(family_name.to_string(), time);
        self.latest = self.latest.max(time);
        self.last_time = time;
        self.last_options = options.iter().map(|o| o.process().to_string()).collect();
        time
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn option(invocation: &str, footprint: &[(&str, bool)]) -> StepOption {
        StepOption {
            label: format!("{invocation} step"),
            invocation: Some(invocation.into()),
            effect: None,
            footprint: footprint
                .iter()
                .map(|(resource, write)| Access {
                    resource: (*resource).into(),
                    write: *write,
                })
                .collect(),
            answer: false,
        }
    }

    #[test]
    fn dependence_follows_footprints_and_families() {
        let read_a = option("req-1#1", &[("D1:DB:a", false)]);
        let read_a2 = option("req-2#1", &[("D1:DB:a", false)]);
        let write_a = option("req-2#1", &[("D1:DB:a", true)]);
        let write_b = option("req-2#1", &[("D1:DB:b", true)]);
        assert!(!dependent(&read_a, &read_a2), "two reads commute");
        assert!(dependent(&read_a, &write_a));
        assert!(!dependent(&read_a, &write_b), "different tables commute");
        assert!(
            dependent(&read_a, &option("req-2#1", &[])),
            "unknown conflicts"
        );
        let callee = option("req-1#1/0", &[("D1:DB:b", true)]);
        assert!(
            dependent(&read_a, &callee),
            "a callee is its caller's family"
        );
        assert!(dependent(&option("req-1#2", &[("x", false)]), &read_a));
    }

    #[test]
    fn lamport_time_ignores_the_order_of_independent_steps() {
        let a = option("req-1#1", &[("D1:DB:a", true)]);
        let b = option("req-2#1", &[("D1:DB:b", true)]);
        let both = [a.clone(), b.clone()];
        let mut first = Lamport::default();
        let times_ab = (
            first.step(&both, 0, false),
            first.step(std::slice::from_ref(&b), 0, false),
        );
        let mut second = Lamport::default();
        let times_ba = (
            second.step(&both, 1, false),
            second.step(std::slice::from_ref(&a), 0, false),
        );
        assert_eq!(times_ab, (1, 1));
        assert_eq!(times_ba, (1, 1));
        // A step on the same resource comes after.
        let mut third = Lamport::default();
        let c = option("req-2#1", &[("D1:DB:a", false)]);
        assert_eq!(third.step(&[a.clone(), c.clone()], 0, false), 1);
        assert_eq!(third.step(&[c], 0, false), 2);
    }
}
