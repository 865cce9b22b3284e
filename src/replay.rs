//! The replay strategy: follows a schedule instead of searching. A fault fires at the effect
//! whose invocation and effect index match one of the schedule's faults; every other effect
//! proceeds. At a scheduling point it takes the default (continue the current invocation),
//! unless the schedule's next choice is for this default step and its step is pending: then it
//! takes that step and moves on to the schedule's next choice. Replaying a recorded run, each
//! choice applies exactly where it was made (a default step runs once, so it is the default at
//! no earlier point where the run took it). The shrinker runs its candidates with it, and so
//! does `--replay <run seed>`.

use crate::error::{Error, Result};
use crate::schedule::{Choice, FaultKind, Schedule};
use crate::strategy::{ChoicePoint, Decision, Point, Strategy};

#[derive(Debug)]
pub struct Replay {
    schedule: Schedule,
    /// Whether the schedule is exactly a run seen before, so that a fault whose recorded label
    /// differs from the effect reached is divergence. A shrink candidate is not such a run:
    /// removing an event may legitimately change what an invocation does at an effect.
    strict: bool,
    /// The schedule's next choice to apply.
    next_choice: usize,
}

impl Replay {
    pub fn new(schedule: Schedule, strict: bool) -> Self {
        Self {
            schedule,
            strict,
            next_choice: 0,
        }
    }

    pub fn schedule(&self) -> &Schedule {
        &self.schedule
    }

    /// The first of the schedule's choices the run never got to apply, if any: a choice at a
    /// step the run never offered.
    pub fn unapplied_choice(&self) -> Option<&Choice> {
        self.schedule.choices.get(self.next_choice)
    }
}

impl Strategy for Replay {
    fn begin_run(&mut self) {
        self.next_choice = 0;
    }

    fn decide(&mut self, point: &Point<'_>) -> Result<Decision> {
        let Some(fault) = self
            .schedule
            .faults
            .iter()
            .find(|f| f.invocation == point.invocation && f.effect == point.effect)
        else {
            return Ok(Decision::Proceed);
        };
        if self.strict && !fault.label.is_empty() && fault.label != point.label {
            let recorded = format!(
                "{} effect #{} ({})",
                fault.invocation, fault.effect, fault.label
            );
            return Err(Error::nondeterminism(
                point.ordinal,
                &point.describe(),
                &recorded,
            ));
        }
        // A transient fault only fires where the host can raise the transient error; where it
        // cannot (a shrink candidate that moved effects around) the effect proceeds, and the
        // fault is not among the run's fired faults.
        if fault.kind == FaultKind::Transient && !point.transient
            || fault.kind == FaultKind::LostResponse && !point.lost
        {
            return Ok(Decision::Proceed);
        }
        Ok(Decision::from_fault(fault.kind))
    }

    fn choose(&mut self, point: &ChoicePoint<'_>) -> Result<usize> {
        // A run records choices only where there was one to make: a point with one pending step
        // is none of them, even where that step has the name of one (a delivery and the timers
        // of the invocation it starts share theirs).
        if point.options.len() < 2 {
            return Ok(point.current);
        }
        let Some(choice) = self.schedule.choices.get(self.next_choice) else {
            return Ok(point.current);
        };
        if choice
            .instead
            .as_ref()
            .is_some_and(|instead| !instead.is(&point.options[point.current]))
        {
            return Ok(point.current);
        }
        match point.options.iter().position(|o| choice.take.is(o)) {
            Some(taken) => {
                self.next_choice += 1;
                Ok(taken)
            }
            None => Ok(point.current),
        }
    }

    fn end_run(&mut self) -> Result<bool> {
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::Fault;

    fn schedule() -> Schedule {
        Schedule {
            base_seed: 1,
            events: vec![1],
            faults: vec![Fault {
                kind: FaultKind::CrashAfter,
                invocation: "req-2#1".into(),
                event: Some(1),
                effect: 0,
                label: "Service:PAYMENTS charge".into(),
            }],
            redeliveries_max: 1,
            choices: vec![crate::schedule::Choice {
                instead: Some(crate::schedule::Step {
                    invocation: "a".into(),
                    effect: None,
                    answer: false,
                }),
                take: crate::schedule::Step {
                    invocation: "c".into(),
                    effect: None,
                    answer: false,
                },
            }],
            split_answers: false,
        }
    }

    fn point<'a>(invocation: &'a str, effect: u32, label: &'a str) -> Point<'a> {
        Point {
            invocation,
            effect,
            label,
            transient: false,
            lost: false,
            ordinal: 1,
            faults_fired: 0,
        }
    }

    #[test]
    fn fires_the_scheduled_fault_only() {
        let mut replay = Replay::new(schedule(), true);
        replay.begin_run();
        let charge = "Service:PAYMENTS charge";
        assert_eq!(
            replay.decide(&point("req-2#1", 0, charge)).unwrap(),
            Decision::CrashAfter
        );
        assert_eq!(
            replay.decide(&point("req-2#2", 0, charge)).unwrap(),
            Decision::Proceed
        );
        assert_eq!(
            replay.decide(&point("req-2#1", 1, charge)).unwrap(),
            Decision::Proceed
        );
    }

    #[test]
    fn takes_the_scheduled_choices_and_defaults_elsewhere() {
        let options: Vec<crate::strategy::StepOption> = ["a", "b", "c"]
            .iter()
            .map(|label| crate::strategy::StepOption {
                label: (*label).into(),
                invocation: None,
                effect: None,
                footprint: vec![],
                answer: false,
            })
            .collect();
        let mut replay = Replay::new(schedule(), true);
        let point = |current, count| ChoicePoint {
            options: &options[..count],
            current,
            ordinal: 1,
        };
        // Another default: the choice waits.
        assert_eq!(replay.choose(&point(1, 3)).unwrap(), 1);
        // Its step is not pending: the choice waits.
        assert_eq!(replay.choose(&point(0, 2)).unwrap(), 0);
        assert_eq!(replay.choose(&point(0, 3)).unwrap(), 2);
        // Applied once.
        assert_eq!(replay.choose(&point(0, 3)).unwrap(), 0);
    }

    #[test]
    fn strict_replay_detects_a_different_effect() {
        let mut strict = Replay::new(schedule(), true);
        let error = strict
            .decide(&point("req-2#1", 0, "D1:DB run"))
            .unwrap_err();
        assert!(error.message().starts_with(
            "nondeterminism: at decision 1 the run reached req-2#1 effect #0 (D1:DB run) but an \
             earlier run with the same choices reached req-2#1 effect #0 (Service:PAYMENTS \
             charge)"
        ));
        let mut lenient = Replay::new(schedule(), false);
        assert_eq!(
            lenient.decide(&point("req-2#1", 0, "D1:DB run")).unwrap(),
            Decision::CrashAfter
        );
    }
}
