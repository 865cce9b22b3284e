//! The one trait every exploration strategy implements, and the words they share.
//!
//! A strategy sees a run as a sequence of effects. At each effect the check asks it what
//! happens: the effect proceeds, or a fault fires. Strategies hold no per-run state of the
//! simulation (clock, random streams, databases); `run::Run` does.

use std::fmt;

use serde::Deserialize;

use crate::error::Result;
use crate::schedule::FaultKind;

/// What happens at an effect, before it happens. The numbers are the host's `Decision`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Decision {
    Proceed = 0,
    CrashBefore = 1,
    CrashAfter = 2,
    /// The effect does not happen; the call fails with the binding's transient error and the
    /// invocation lives on.
    Transient = 3,
    /// The effect happens, then the call fails with the binding's transient error all the same
    /// (the connection dropped before the answer came back); the invocation lives on.
    LostResponse = 4,
}

impl Decision {
    /// The alternatives at a decision point, in the order the explorer tries them. An effect
    /// whose binding documents a transient error has the first four, and all five when that
    /// error can also come after the call took effect; any other effect the first three.
    pub const ALTERNATIVES: [Decision; 5] = [
        Decision::Proceed,
        Decision::CrashBefore,
        Decision::CrashAfter,
        Decision::Transient,
        Decision::LostResponse,
    ];

    /// The alternatives at an effect: `transient` and `lost` as `Point` has them.
    pub fn alternatives(transient: bool, lost: bool) -> &'static [Decision] {
        match (transient, lost) {
            (true, true) => &Self::ALTERNATIVES,
            (true, false) => &Self::ALTERNATIVES[..4],
            (false, _) => &Self::ALTERNATIVES[..3],
        }
    }

    pub fn fault(self) -> Option<FaultKind> {
        match self {
            Decision::Proceed => None,
            Decision::CrashBefore => Some(FaultKind::CrashBefore),
            Decision::CrashAfter => Some(FaultKind::CrashAfter),
            Decision::Transient => Some(FaultKind::Transient),
            Decision::LostResponse => Some(FaultKind::LostResponse),
        }
    }

    pub fn from_fault(kind: FaultKind) -> Self {
        match kind {
            FaultKind::CrashBefore => Decision::CrashBefore,
            FaultKind::CrashAfter => Decision::CrashAfter,
            FaultKind::Transient => Decision::Transient,
            FaultKind::LostResponse => Decision::LostResponse,
        }
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.fault() {
            None => f.write_str("proceed"),
            Some(kind) => f.write_str(kind.as_str()),
        }
    }
}

/// An effect at which the check asks for a decision.
#[derive(Debug, Clone, Copy)]
pub struct Point<'a> {
    pub invocation: &'a str,
    pub effect: u32,
    /// What the effect is, e.g. `Service:PAYMENTS charge` or `D1:DB run`.
    pub label: &'a str,
    /// Whether the effect's binding documents a transient error the host can raise, which
    /// adds the transient_error alternative. Not part of the label: a replayed run is compared
    /// by labels only.
    pub transient: bool,
    /// Whether that error can also come after the call took effect (a D1 write applied, a
    /// request the other side acted on), which adds the lost_response alternative.
    pub lost: bool,
    /// The position of this effect among the run's effects, from 1.
    pub ordinal: usize,
    /// How many faults have fired earlier in this run.
    pub faults_fired: u32,
}

impl Point<'_> {
    /// The point as reports and error messages show it: `req-2#1 effect #0 (Service:PAYMENTS
    /// charge)`.
    pub fn describe(&self) -> String {
        format!(
            "{} effect #{} ({})",
            self.invocation, self.effect, self.label
        )
    }
}

/// One resource a step touches: `D1:payments/DB:charges`, read or written.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize, serde::Serialize)]
pub struct Access {
    pub resource: String,
    pub write: bool,
}

/// A pending step at a scheduling point (`StepOption` in `js/src/engine.ts`): the next effect of
/// a parked invocation, or the delivery of the next event.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct StepOption {
    /// What the step is, e.g. `req-1#1 effect #2 (D1:DB run)` or `deliver req-2#1`; compared
    /// between runs to detect nondeterminism.
    pub label: String,
    /// The invocation the step belongs to (for a delivery, the one it starts). Steps of one
    /// invocation are ordered by the program; without it, the label stands in for it.
    #[serde(default)]
    pub invocation: Option<String>,
    /// The effect index the step performs; absent for a delivery. When given, the `decide`
    /// that follows must be for this effect, unless the step is its `answer`.
    #[serde(default)]
    pub effect: Option<u32>,
    /// The step delivers the answer of effect `effect` to its invocation, which then goes on to
    /// its next effect: a binding call's answer travels back while other steps run.
    #[serde(default)]
    pub answer: bool,
    /// What the step may touch, over-approximated. Empty means it conflicts with every step.
    #[serde(default, deserialize_with = "crate::config::default_if_absent")]
    pub footprint: Vec<Access>,
}

impl StepOption {
    /// The thread of control the step belongs to, for partial-order reduction and PCT.
    pub fn process(&self) -> &str {
        self.invocation.as_deref().unwrap_or(&self.label)
    }
}

/// A scheduling point: which of the pending steps runs next.
#[derive(Debug, Clone, Copy)]
pub struct ChoicePoint<'a> {
    pub options: &'a [StepOption],
    /// The option that continues the invocation that ran the last step, else 0: taking it is
    /// no context switch, and it is what a replay takes when its schedule says nothing.
    pub current: usize,
    /// The position of this point among the run's scheduling points, from 1.
    pub ordinal: usize,
}

pub trait Strategy {
    /// Called before the first effect of every run.
    fn begin_run(&mut self);
    /// Decides what happens at `point`.
    fn decide(&mut self, point: &Point<'_>) -> Result<Decision>;
    /// Picks the step that runs next; answers an index into `point.options`.
    fn choose(&mut self, point: &ChoicePoint<'_>) -> Result<usize>;
    /// Called after the last effect of a run; returns whether the strategy has another run.
    fn end_run(&mut self) -> Result<bool>;
}
