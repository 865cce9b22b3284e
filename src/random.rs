//! The random strategy: seeded random walks over the decision tree. At every scheduling point
//! a pending step is drawn uniformly; faults are placed as `sampling.rs` says. It never
//! exhausts the tree, so a check with it ends at the budget or at `runsMax`, INCOMPLETE with
//! the distinct schedules it ran, or VIOLATED; the run seed of a violation records the choices
//! made, so it shrinks and replays like any other.

use crate::error::Result;
use crate::rng::SplitMix64;
use crate::sampling::{below, FaultPlan, Shape};
use crate::strategy::{ChoicePoint, Decision, Point, Strategy};

#[derive(Debug)]
pub struct RandomWalk {
    rng: SplitMix64,
    faults_per_run_max: u32,
    plan: FaultPlan,
    shape: Shape,
}

impl RandomWalk {
    pub fn new(seed: u64, faults_per_run_max: u32) -> Self {
        Self {
            rng: SplitMix64::new(seed),
            faults_per_run_max,
            plan: FaultPlan::default(),
            shape: Shape::default(),
        }
    }
}

impl Strategy for RandomWalk {
    fn begin_run(&mut self) {
        self.plan = FaultPlan::draw(
            &mut self.rng,
            self.faults_per_run_max,
            self.shape.effects_max,
        );
        self.shape.begin_run();
    }

    fn decide(&mut self, point: &Point<'_>) -> Result<Decision> {
        self.shape.effect();
        Ok(self.plan.decide(point, self.faults_per_run_max))
    }

    fn choose(&mut self, point: &ChoicePoint<'_>) -> Result<usize> {
        self.shape.point();
        Ok(below(&mut self.rng, point.options.len()))
    }

    fn end_run(&mut self) -> Result<bool> {
        self.shape.end_run();
        Ok(true)
    }
}
