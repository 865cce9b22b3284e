//! Probabilistic Concurrency Testing: Burckhardt, Kothari, Musuvathi and Nagarakatte, "A
//! Randomized Scheduler with Probabilistic Guarantees of Finding Bugs", ASPLOS 2010.
//!
//! Every process (invocation) gets a random priority of at least d when it first appears; d - 1
//! priority change points are drawn uniformly among the scheduling points of a run (the most a
//! run has had so far). At every point the pending step of the highest-priority process runs;
//! at the i-th change point that process first drops to priority i, below every initial
//! priority. For a bug of depth d among n processes and k steps, one run finds it with
//! probability at least 1/(n k^(d-1)), whatever the program. Faults are placed as `sampling.rs`
//! says, independently of the priorities.
//!
//! Processes are created during a run, so priorities are drawn on first sight instead of as a
//! permutation up front; drawing from 2^56 values makes ties negligible, and a tie goes to the
//! earlier option. Like `random.rs`, PCT never exhausts the tree: its checks end INCOMPLETE or
//! VIOLATED.

use std::collections::HashMap;

use crate::error::Result;
use crate::rng::SplitMix64;
use crate::sampling::{below, FaultPlan, Shape};
use crate::strategy::{ChoicePoint, Decision, Point, Strategy};

#[derive(Debug)]
pub struct Pct {
    rng: SplitMix64,
    depth: u32,
    faults_per_run_max: u32,
    plan: FaultPlan,
    shape: Shape,
    priorities: HashMap<String, u64>,
    /// The scheduling point ordinals (from 1) of this run's change points; the i-th (from 0)
    /// lowers to priority i + 1.
    change_points: Vec<usize>,
}

impl Pct {
    pub fn new(seed: u64, depth: u32, faults_per_run_max: u32) -> Self {
        assert!(depth >= 1);
        Self {
            rng: SplitMix64::new(seed),
            depth,
            faults_per_run_max,
            plan: FaultPlan::default(),
            shape: Shape::default(),
            priorities: HashMap::new(),
            change_points: Vec::new(),
        }
    }

    fn priority(&mut self, process: &str) -> u64 {
        if let Some(priority) = self.priorities.get(process) {
            return *priority;
        }
        let priority = u64::from(self.depth) + (self.rng.next_u64() >> 8);
        self.priorities.insert(process.to_string(), priority);
        priority
    }
}

impl Strategy for Pct {
    fn begin_run(&mut self) {
        self.plan = FaultPlan::draw(
            &mut self.rng,
            self.faults_per_run_max,
            self.shape.effects_max,
        );
        self.priorities.clear();
        let points = self.shape.points_max.max(1);
        self.change_points = (1..self.depth)
            .map(|_| 1 + below(&mut self.rng, points))
            .collect();
        self.shape.begin_run();
    }

    fn decide(&mut self, point: &Point<'_>) -> Result<Decision> {
        self.shape.effect();
        Ok(self.plan.decide(point, self.faults_per_run_max))
    }

    fn choose(&mut self, point: &ChoicePoint<'_>) -> Result<usize> {
        self.shape.point();
        let priorities: Vec<u64> = point
            .options
            .iter()
            .map(|o| self.priority(o.process()))
            .collect();
        let highest = |priorities: &[u64]| {
            (0..priorities.len())
                .rev()
                .max_by_key(|&i| priorities[i])
                .unwrap_or(0)
        };
        let mut priorities = priorities;
        if let Some(i) = self.change_points.iter().position(|c| *c == point.ordinal) {
            let top = highest(&priorities);
            let lowered = i as u64 + 1;
            self.priorities
                .insert(point.options[top].process().to_string(), lowered);
            priorities[top] = lowered;
        }
        Ok(highest(&priorities))
    }

    fn end_run(&mut self) -> Result<bool> {
        self.shape.end_run();
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy::StepOption;

    fn options(processes: &[&str]) -> Vec<StepOption> {
        processes
            .iter()
            .map(|p| StepOption {
                label: format!("{p} step"),
                invocation: Some((*p).into()),
                effect: None,
                footprint: vec![],
                answer: false,
            })
            .collect()
    }

    #[test]
    fn depth_one_never_switches_while_the_process_can_run() {
        let mut pct = Pct::new(7, 1, 0);
        let both = options(&["a", "b"]);
        for run in 0..20 {
            pct.begin_run();
            let first = pct
                .choose(&ChoicePoint {
                    options: &both,
                    current: 0,
                    ordinal: 1,
                })
                .unwrap();
            for ordinal in 2..6 {
                let again = pct
                    .choose(&ChoicePoint {
                        options: &both,
                        current: first,
                        ordinal,
                    })
                    .unwrap();
                assert_eq!(again, first, "run {run}");
            }
            pct.end_run().unwrap();
        }
    }
}
