//! The exhaustive explorer: depth-first search over the decision tree (`tree.rs`).
//!
//! An effect is a fault branch point only while the run has fired fewer than
//! `faults_per_run_max` faults; past that every effect proceeds without branching. A fault
//! branch point has three alternatives, or four at an effect that can fail transiently. With
//! concurrent invocations every scheduling point with two or more pending steps is a branch
//! point too, reduced by partial-order reduction (`por.rs`) unless that is turned off. So the
//! tree has a leaf per placement of at most that many faults in every distinct interleaving,
//! and `BOUNDED` means every leaf was run (see ARCHITECTURE.md, "Partial-order reduction").

use crate::error::Result;
use crate::shard::Shard;
use crate::strategy::{ChoicePoint, Decision, Point, Strategy};
use crate::tree::Tree;

#[derive(Debug)]
pub struct Dfs {
    tree: Tree,
    faults_per_run_max: u32,
}

impl Dfs {
    pub fn new(faults_per_run_max: u32) -> Self {
        Self::with(faults_per_run_max, true, None)
    }

    /// `reduce`: partial-order reduction at scheduling points. `shard`: explore one shard's
    /// part of the tree.
    pub fn with(faults_per_run_max: u32, reduce: bool, shard: Option<Shard>) -> Self {
        Self {
            tree: Tree::with(reduce, shard),
            faults_per_run_max,
        }
    }

    pub fn is_exhausted(&self) -> bool {
        self.tree.is_exhausted()
    }

    pub fn tree(&self) -> &Tree {
        &self.tree
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
        let alternatives = Decision::alternatives(point.transient, point.lost);
        let chosen = self
            .tree
            .branch(&point.describe(), alternatives.len() as u8)?;
        Ok(alternatives[usize::from(chosen)])
    }

    fn choose(&mut self, point: &ChoicePoint<'_>) -> Result<usize> {
        self.tree.choose(point.options, point.current)
    }

    fn end_run(&mut self) -> Result<bool> {
        self.tree.end_run()
    }
}
