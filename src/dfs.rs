//! The exhaustive explorer: depth-first search over the decision tree (`tree.rs`).
//!
//! An effect is a branch point only while the run has fired fewer than `faults_per_run_max`
//! faults; past that every effect proceeds without branching. So the tree has one leaf per
//! placement of at most that many faults, and `BOUNDED` means every leaf was run. A branch
//! point has three alternatives, or four at an effect that can fail transiently.

use crate::error::Result;
use crate::strategy::{Decision, Point, Strategy};
use crate::tree::Tree;

#[derive(Debug)]
pub struct Dfs {
    tree: Tree,
    faults_per_run_max: u32,
}

impl Dfs {
    pub fn new(faults_per_run_max: u32) -> Self {
        Self {
            tree: Tree::new(),
            faults_per_run_max,
        }
    }

    pub fn is_exhausted(&self) -> bool {
        self.tree.is_exhausted()
    }
}

impl Strategy for Dfs {
    fn begin_run(&mut self) {
        self.tree.begin_run();
    }

    fn decide(&mut self, point: &Point<'_>) -> Result<Decision> {
        debug_assert!(point.faults_fired <= self.faults_per_run_max);
        if point.faults_fired >= self.faults_per_run_max {
            return Ok(Decision::Proceed);
        }
        let alternatives = Decision::alternatives(point.transient);
        let chosen = self
            .tree
            .branch(&point.describe(), alternatives.len() as u8)?;
        Ok(alternatives[usize::from(chosen)])
    }

    fn end_run(&mut self) -> Result<bool> {
        self.tree.end_run()
    }
}
