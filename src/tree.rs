//! The decision tree of the exhaustive explorer, searched statelessly as loom does: a run
//! replays the path recorded so far (the forced prefix), takes alternative 0 at every new
//! branch point, and afterwards the path backtracks to the deepest branch point that still has
//! an untried alternative. The tree itself is never stored, only the current path.
//!
//! Backtracking from the deepest point means the last decisions of a run vary first, so the
//! first violation found involves the last events the driver delivers, with the earlier events
//! running fault-free.

use crate::error::{Error, Result};

/// Upper bound on the branch points in one run, so that a Worker effect loop cannot grow the
/// path without end.
pub const BRANCHES_PER_RUN_MAX: usize = 100_000;

#[derive(Debug, Clone, PartialEq, Eq)]
struct Branch {
    chosen: u8,
    alternatives: u8,
    /// What the run was doing at this point, to detect a run that diverges from the path.
    label: String,
}

#[derive(Debug, Default)]
pub struct Tree {
    path: Vec<Branch>,
    /// The number of branch points the current run has passed.
    position: usize,
    exhausted: bool,
}

impl Tree {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn is_exhausted(&self) -> bool {
        self.exhausted
    }

    pub fn begin_run(&mut self) {
        assert!(
            !self.exhausted,
            "a run started after the tree was exhausted"
        );
        self.position = 0;
    }

    /// The alternative to take at the next branch point, which has `alternatives` choices and
    /// is described by `label`.
    pub fn branch(&mut self, label: &str, alternatives: u8) -> Result<u8> {
        assert!(alternatives >= 1);
        let chosen = if let Some(recorded) = self.path.get(self.position) {
            // Divergence is judged by labels alone; the same label with a different number of
            // alternatives is the host contradicting itself about the effect, not the Worker.
            if recorded.label != label {
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
            if self.path.len() >= BRANCHES_PER_RUN_MAX {
                return Err(Error::new(format!(
                    "a run reached more than {BRANCHES_PER_RUN_MAX} decisions"
                )));
            }
            self.path.push(Branch {
                chosen: 0,
                alternatives,
                label: label.to_string(),
            });
            0
        };
        self.position += 1;
        debug_assert!(chosen < alternatives);
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
        while let Some(last) = self.path.last_mut() {
            if last.chosen + 1 < last.alternatives {
                last.chosen += 1;
                return Ok(true);
            }
            self.path.pop();
        }
        self.exhausted = true;
        Ok(false)
    }
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
            "nondeterminism: at decision 1 the run reached b but an earlier run with the same \
             choices reached a; the Worker depends on something outside the simulation"
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
}
