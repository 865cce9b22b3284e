//! What the sampling strategies (`random.rs`, `pct.rs`) share: where faults go in a run, and
//! how long runs are.
//!
//! A sampled run places its faults up front, as PCT places its priority change points: a
//! number of faults drawn uniformly from 0 to `maxFaultsPerRun`, each at an effect ordinal
//! drawn uniformly from the longest run seen so far, with a fault kind drawn from those the
//! effect offers. The first run has no faults, so that sampling starts from the plain run.

use crate::rng::SplitMix64;
use crate::strategy::{Decision, Point};

/// A uniform draw from `0..n` (`n > 0`). The modulo bias is below 2^-40 for the small `n`
/// used here.
pub fn below(rng: &mut SplitMix64, n: usize) -> usize {
    debug_assert!(n > 0);
    (rng.next_u64() % n as u64) as usize
}

/// The longest runs seen so far, in effects and in scheduling points.
#[derive(Debug, Default, Clone, Copy)]
pub struct Shape {
    pub effects_max: usize,
    pub points_max: usize,
    effects: usize,
    points: usize,
}

impl Shape {
    pub fn begin_run(&mut self) {
        self.effects = 0;
        self.points = 0;
    }

    pub fn effect(&mut self) {
        self.effects += 1;
    }

    pub fn point(&mut self) {
        self.points += 1;
    }

    pub fn end_run(&mut self) {
        self.effects_max = self.effects_max.max(self.effects);
        self.points_max = self.points_max.max(self.points);
    }
}

/// The faults of one sampled run: effect ordinals with a random draw for the fault kind.
#[derive(Debug, Default, Clone)]
pub struct FaultPlan {
    at: Vec<(usize, u64)>,
}

impl FaultPlan {
    pub fn draw(rng: &mut SplitMix64, faults_max: u32, effects: usize) -> Self {
        if effects == 0 || faults_max == 0 {
            return Self::default();
        }
        let count = below(rng, faults_max as usize + 1);
        let at = (0..count)
            .map(|_| (1 + below(rng, effects), rng.next_u64()))
            .collect();
        Self { at }
    }

    pub fn decide(&self, point: &Point<'_>, faults_max: u32) -> Decision {
        if point.faults_fired >= faults_max {
            return Decision::Proceed;
        }
        let Some((_, draw)) = self.at.iter().find(|(at, _)| *at == point.ordinal) else {
            return Decision::Proceed;
        };
        let alternatives = Decision::alternatives(point.transient, point.lost);
        // Alternative 0 is proceed; the others are the faults the effect offers.
        alternatives[1 + (*draw % (alternatives.len() as u64 - 1)) as usize]
    }
}
