//! The decision tree of the exhaustive explorer, searched statelessly as loom does: a run
//! replays the path recorded so far (the forced prefix), takes a first alternative at every new
//! branch point, and afterwards the path backtracks to the deepest branch point that still has
//! an alternative to try. The tree itself is never stored, only the current path.
//!
//! A branch point is a fault decision at an effect (proceed, crash before, crash after,
//! transient) or a scheduling choice between pending steps. At a scheduling choice the
//! alternatives to try are the node's backtrack set, which partial-order reduction (`por.rs`)
//! grows as it finds races, minus the node's sleep set; without reduction every option is
//! tried. A run that reaches a state whose every option sleeps is redundant from there on: it
//! finishes with default choices and records nothing more (`Stop::Asleep`).
//!
//! Sharding (`shard.rs`) gives each shard the alternatives it owns at the split depth; above it
//! every shard explores everything, and a run that reaches the split depth with nothing owned
//! there finishes with default choices (`Stop::NotOwned`).
//!
//! Backtracking from the deepest point means the last decisions of a run vary first, so the
//! first violation found involves the last events the driver delivers, with the earlier events
//! running fault-free.

use crate::error::{Error, Result};
use crate::por;
use crate::shard::Shard;
use crate::strategy::StepOption;

/// Upper bound on the branch points in one run, so that a Worker effect loop cannot grow the
/// path without end.
pub const BRANCHES_PER_RUN_MAX: usize = 100_000;

/// Upper bound on the options at one scheduling point.
pub const OPTIONS_MAX: usize = 1_000;

#[derive(Debug, Clone)]
pub(crate) struct Node {
    /// What the run was doing at this point, to detect a run that diverges from the path.
    pub label: String,
    pub alternatives: usize,
    pub chosen: usize,
    /// The alternatives this explorer may take: all of them, except at a shard's split point.
    pub allowed: Vec<bool>,
    /// Set for a scheduling choice.
    pub choice: Option<ChoiceState>,
}

#[derive(Debug, Clone)]
pub(crate) struct ChoiceState {
    pub options: Vec<StepOption>,
    /// Options to explore from this state (DPOR's backtrack set).
    pub backtrack: Vec<bool>,
    /// Options whose subtrees are fully explored.
    pub done: Vec<bool>,
    /// Options asleep on arrival: every run that takes them first is equivalent to one
    /// explored already.
    pub asleep: Vec<bool>,
    /// Whether every allowed option is in the backtrack set from the start, so that race
    /// analysis has nothing to add (no reduction, or above a shard's split depth).
    pub full: bool,
}

/// Why a run stopped recording branch points before its end.
#[derive(Debug, Clone)]
enum Stop {
    /// Every option at this state sleeps.
    Asleep,
    /// At the split depth no alternative belongs to this shard.
    NotOwned,
}

#[derive(Debug, Default)]
pub struct Tree {
    path: Vec<Node>,
    /// The number of branch points the current run has passed.
    position: usize,
    exhausted: bool,
    /// Partial-order reduction at scheduling choices.
    reduce: bool,
    shard: Option<Shard>,
    stop: Option<Stop>,
    /// Branch points with two or more alternatives the current run has passed, and the hash
    /// of their choices up to the split depth (for shard ownership).
    branching: usize,
    prefix_hash: u64,
    /// Whether the last finished run was a leaf this explorer owns (always, unsharded).
    last_owned: bool,
    /// Whether the last finished run stopped early because everything slept.
    last_redundant: bool,
}

impl Tree {
    pub fn new() -> Self {
        Self::with(false, None)
    }

    pub fn with(reduce: bool, shard: Option<Shard>) -> Self {
        Self {
            reduce,
            shard,
            ..Self::default()
        }
    }

    pub fn is_exhausted(&self) -> bool {
        self.exhausted
    }

    /// Whether the last run was one of this explorer's own leaves (a shard's other runs only
    /// pass through the part of the tree every shard shares).
    pub fn last_owned(&self) -> bool {
        self.last_owned
    }

    /// Whether the last run turned redundant part-way (every pending step slept).
    pub fn last_redundant(&self) -> bool {
        self.last_redundant
    }

    /// Whether the current run records no more branch points.
    pub fn is_stopped(&self) -> bool {
        self.stop.is_some()
    }

    pub fn begin_run(&mut self) {
        assert!(
            !self.exhausted,
            "a run started after the tree was exhausted"
        );
        self.position = 0;
        self.stop = None;
        self.branching = 0;
        self.prefix_hash = crate::shard::PREFIX_HASH_START;
    }

    /// The alternative to take at the next fault branch point, which has `alternatives`
    /// choices and is described by `label`.
    pub fn branch(&mut self, label: &str, alternatives: u8) -> Result<u8> {
        assert!(alternatives >= 1);
        if self.stop.is_some() {
            return Ok(0);
        }
        let alternatives = usize::from(alternatives);
        let chosen = if let Some(recorded) = self.path.get(self.position) {
            // Divergence is judged by labels alone; the same label with a different number of
            // alternatives is the host contradicting itself about the effect, not the Worker.
            if recorded.label != label || recorded.choice.is_some() {
                return Err(Error::nondeterminism(
                    self.position + 1,
                    label,
                    &recorded.label,
                ));
            }
            if recorded.alternatives != alternatives {
                return Err(Error::new(format!(
                    "at decision {} the host offered {alternatives} alternatives for {label}, \
                     but {} in an earlier run; an effect's transient flag must not change \
                     between runs",
                    self.position + 1,
                    recorded.alternatives
                )));
            }
            recorded.chosen
        } else {
            self.ensure_room()?;
            let allowed = self.allowed(alternatives);
            let Some(first) = allowed.iter().position(|a| *a) else {
                self.stop = Some(Stop::NotOwned);
                return Ok(0);
            };
            self.path.push(Node {
                label: label.to_string(),
                alternatives,
                chosen: first,
                allowed,
                choice: None,
            });
            first
        };
        self.pass(chosen);
        debug_assert!(chosen < alternatives);
        Ok(chosen as u8)
    }

    /// The option to run at the next scheduling point. `preferred` is the option that makes no
    /// context switch; a new point takes it unless it sleeps.
    pub fn choose(&mut self, options: &[StepOption], preferred: usize) -> Result<usize> {
        assert!(!options.is_empty() && preferred < options.len());
        if self.stop.is_some() {
            return Ok(preferred);
        }
        let label = choice_label(options);
        if let Some(recorded) = self.path.get(self.position) {
            if recorded.label != label || recorded.choice.is_none() {
                return Err(Error::nondeterminism(
                    self.position + 1,
                    &label,
                    &recorded.label,
                ));
            }
            let chosen = recorded.chosen;
            self.pass(chosen);
            return Ok(chosen);
        }
        self.ensure_room()?;
        let asleep = if self.reduce {
            por::sleeping(&self.path, options)
        } else {
            vec![false; options.len()]
        };
        let allowed = self.allowed(options.len());
        if !allowed.iter().any(|a| *a) {
            self.stop = Some(Stop::NotOwned);
            return Ok(preferred);
        }
        let awake = |i: usize| allowed[i] && !asleep[i];
        let chosen = if awake(preferred) {
            preferred
        } else if let Some(first) = (0..options.len()).find(|i| awake(*i)) {
            first
        } else {
            self.stop = Some(Stop::Asleep);
            return Ok(preferred);
        };
        // Above a shard's split depth (and at it) every shard explores every allowed option,
        // so that races found in one shard's subtrees never need another shard to backtrack.
        let full = !self.reduce
            || self
                .shard
                .is_some_and(|s| self.branching < s.split_depth() && options.len() >= 2);
        let backtrack = (0..options.len())
            .map(|i| i == chosen || (full && awake(i)))
            .collect();
        self.path.push(Node {
            label,
            alternatives: options.len(),
            chosen,
            allowed,
            choice: Some(ChoiceState {
                options: options.to_vec(),
                backtrack,
                done: vec![false; options.len()],
                asleep,
                full,
            }),
        });
        self.pass(chosen);
        Ok(chosen)
    }

    /// Ends the run and moves the path to the next one. Returns whether a next run exists.
    pub fn end_run(&mut self) -> Result<bool> {
        if self.position < self.path.len() {
            // The forced prefix is longer than what this run reached: an earlier run with the
            // same choices went further.
            return Err(Error::nondeterminism(
                self.position + 1,
                "the end of the run",
                &self.path[self.position].label,
            ));
        }
        let stop = self.stop.take();
        if self.reduce {
            por::analyze(&mut self.path);
        }
        self.last_redundant = matches!(stop, Some(Stop::Asleep));
        self.last_owned = match (&self.shard, &stop) {
            (_, Some(Stop::NotOwned)) => false,
            (Some(shard), _) if self.branching < shard.split_depth() => {
                shard.owns(self.prefix_hash)
            }
            _ => true,
        };
        while let Some(last) = self.path.last_mut() {
            let next = match &mut last.choice {
                Some(choice) => {
                    choice.done[last.chosen] = true;
                    (0..last.alternatives).find(|&i| {
                        choice.backtrack[i]
                            && !choice.done[i]
                            && !choice.asleep[i]
                            && last.allowed[i]
                    })
                }
                None => (last.chosen + 1..last.alternatives).find(|&i| last.allowed[i]),
            };
            if let Some(next) = next {
                last.chosen = next;
                return Ok(true);
            }
            self.path.pop();
        }
        self.exhausted = true;
        Ok(false)
    }

    /// How much of the tree the runs so far have covered, as a fraction, assuming sibling
    /// subtrees are alike (Knuth's estimate along the current path). At a scheduling choice it
    /// counts the options the search knows it must run: those done, the one under way, and
    /// those race analysis has put in the backtrack set (every awake option without
    /// reduction). Races found later add options, so with reduction this may read less of the
    /// tree than remains; counting every awake option instead read several times too much on
    /// trees that reduction keeps small.
    pub fn progress(&self) -> f64 {
        let mut weight = 1.0;
        let mut progress = 0.0;
        for node in &self.path {
            let (completed, total) = match &node.choice {
                Some(choice) => {
                    let open = |i: usize| {
                        node.allowed[i]
                            && !choice.asleep[i]
                            && (choice.done[i] || choice.backtrack[i] || i == node.chosen)
                    };
                    let total = (0..node.alternatives).filter(|&i| open(i)).count();
                    let completed = (0..node.alternatives)
                        .filter(|&i| open(i) && choice.done[i])
                        .count();
                    (completed, total)
                }
                None => {
                    let total = node.allowed.iter().filter(|a| **a).count();
                    let completed = (0..node.chosen).filter(|&i| node.allowed[i]).count();
                    (completed, total)
                }
            };
            let total = total.max(1) as f64;
            progress += weight * completed as f64 / total;
            weight /= total;
        }
        progress
    }

    fn ensure_room(&self) -> Result<()> {
        if self.path.len() >= BRANCHES_PER_RUN_MAX {
            return Err(Error::new(format!(
                "a run reached more than {BRANCHES_PER_RUN_MAX} decisions"
            )));
        }
        Ok(())
    }

    /// The alternatives a new branch point lets this explorer take.
    fn allowed(&self, alternatives: usize) -> Vec<bool> {
        match &self.shard {
            Some(shard) if alternatives >= 2 && self.branching + 1 == shard.split_depth() => (0
                ..alternatives)
                .map(|a| shard.owns(crate::shard::extend(self.prefix_hash, a)))
                .collect(),
            _ => vec![true; alternatives],
        }
    }

    /// Moves past the branch point at `position`, which took `chosen`.
    fn pass(&mut self, chosen: usize) {
        let alternatives = self.path[self.position].alternatives;
        if alternatives >= 2 {
            let split = self.shard.map_or(0, |s| s.split_depth());
            if self.branching < split {
                self.prefix_hash = crate::shard::extend(self.prefix_hash, chosen);
            }
            self.branching += 1;
        }
        self.position += 1;
    }
}

/// A scheduling point as the path records it: its options' labels.
fn choice_label(options: &[StepOption]) -> String {
    let labels: Vec<&str> = options.iter().map(|o| o.label.as_str()).collect();
    format!("one of [{}]", labels.join(" | "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Explores a tree with `depth` binary points, returning the choices of every run.
    fn explore(depth: usize) -> Vec<Vec<u8>> {
        let mut tree = Tree::new();
        let mut runs = Vec::new();
        loop {
            tree.begin_run();
            let choices: Vec<u8> = (0..depth)
                .map(|i| tree.branch(&format!("p{i}"), 2).unwrap())
                .collect();
            runs.push(choices);
            if !tree.end_run().unwrap() {
                break;
            }
        }
        runs
    }

    #[test]
    fn visits_every_leaf_deepest_first() {
        assert_eq!(
            explore(2),
            vec![vec![0, 0], vec![0, 1], vec![1, 0], vec![1, 1]]
        );
        assert_eq!(explore(0), vec![Vec::<u8>::new()]);
        assert_eq!(explore(5).len(), 32);
    }

    #[test]
    fn detects_a_diverging_label() {
        let mut tree = Tree::new();
        tree.begin_run();
        tree.branch("a", 2).unwrap();
        assert!(tree.end_run().unwrap());
        tree.begin_run();
        let error = tree.branch("b", 2).unwrap_err();
        assert_eq!(
            error.message(),
            format!(
                "nondeterminism: at decision 1 the run reached b but an earlier run with the same \
                 choices reached a; {}",
                crate::error::OUTSIDE
            )
        );
    }

    #[test]
    fn detects_a_run_that_stops_early() {
        let mut tree = Tree::new();
        tree.begin_run();
        tree.branch("a", 2).unwrap();
        tree.branch("b", 2).unwrap();
        assert!(tree.end_run().unwrap());
        tree.begin_run();
        tree.branch("a", 2).unwrap();
        assert!(tree.end_run().is_err());
    }

    #[test]
    fn progress_grows_to_one() {
        let mut tree = Tree::new();
        let mut last = -1.0;
        for run in 0..8 {
            tree.begin_run();
            for i in 0..3 {
                tree.branch(&format!("p{i}"), 2).unwrap();
            }
            let more = tree.end_run().unwrap();
            assert_eq!(more, run < 7);
            let progress = if more { tree.progress() } else { 1.0 };
            assert!((progress - f64::from(run + 1) / 8.0).abs() < 1e-9);
            assert!(progress > last);
            last = progress;
        }
    }
}
