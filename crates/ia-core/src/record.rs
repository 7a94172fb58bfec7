//! Records of a run: what leaves the process (serde).
//!
//! A record holds indices into its [`HybridSystem`](crate::HybridSystem),
//! never names: a mode is `system.modes()[m]`, a transition
//! `system.transitions()[k]`, a state entry `system.state_names()[i]`. Names
//! are resolved by whoever writes the record for a reader (the command line,
//! the Python package), so a run allocates nothing per event for them.

use serde::{Deserialize, Serialize};

/// One event: a transition that fired. Its states `x-` and `x+` are in the
/// run's one buffer of event states:
/// [`Trajectory::state_before`] and [`Trajectory::state_after`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EventRecord {
    /// Position in the run's event sequence, from 0.
    pub index: usize,
    /// Event time `t*`.
    pub time: f64,
    /// Index of the transition that fired, in
    /// [`HybridSystem::transitions`](crate::HybridSystem::transitions).
    pub transition: usize,
    /// Index of the mode before the event.
    pub from_mode: usize,
    /// Index of the mode after the event.
    pub to_mode: usize,
    /// Guard rate `gdot = g_x f- + g_t` at the event.
    pub guard_rate: f64,
    /// Whether the transition ends the run.
    pub terminal: bool,
    /// For an event fired at once because a reset at the same instant moved
    /// its guard strictly past zero (a cascade: a kick over threshold), the
    /// index of the located event that started the cascade. Its time is that
    /// event's time and moves with it, not with this guard; `None` for an
    /// event whose own guard crossed zero.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cascade_of: Option<usize>,
}

/// A stretch of flow in one mode between two events (or the run's ends).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Segment {
    /// Index of the mode, in [`HybridSystem::modes`](crate::HybridSystem::modes).
    pub mode: usize,
    /// Start time.
    pub start_time: f64,
    /// End time.
    pub end_time: f64,
    /// Accepted steps taken in the segment.
    pub steps: usize,
}

/// The state at a caller-given observation time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    /// Observation time.
    pub time: f64,
    /// Index of the mode at that time.
    pub mode: usize,
    /// State at that time.
    pub state: Vec<f64>,
}

/// Work done by the solver.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SolverStats {
    /// Accepted steps (the truncated steps that end on events included).
    pub steps: usize,
    /// Rejected step attempts.
    pub rejected_steps: usize,
    /// Evaluations of a right-hand side (state, or state with sensitivities).
    pub rhs_evaluations: usize,
    /// Events applied.
    pub events: usize,
    /// Guard evaluations spent locating events.
    pub root_iterations: usize,
    /// Accepted steps taken while the explicit method's stiffness test
    /// (DOPRI5's and DOP853's: Hairer's test on their last two stages, a
    /// step held inside the stability boundary from beyond it counting as
    /// beyond) declared the flow stiff: steps whose size stability set,
    /// not accuracy. Zero for the other methods and for non-stiff flows.
    #[serde(default)]
    pub stiff_steps: usize,
    /// Accepted steps of an adjoint's taped run that was discarded and
    /// redone: an explicit method's taped run that found the flow stiff
    /// is run again with one derivative probe per input, the forward
    /// pass's error norm (`ia_adjoint`'s `probe` module says when and
    /// why). Zero when the run was not redone, and for every run that is
    /// not an adjoint's taped run; the other counts are the second run's.
    #[serde(default)]
    pub redone_steps: usize,
}

/// The record of a run: segments, events, observations and the final state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trajectory {
    /// Start time.
    pub initial_time: f64,
    /// Initial state.
    pub initial_state: Vec<f64>,
    /// Segments of flow, in time order.
    pub segments: Vec<Segment>,
    /// Events, in the order they were applied.
    pub events: Vec<EventRecord>,
    /// The state just before and just after each event of `events`, in
    /// their order: `2 n` numbers an event, `x-` then `x+` (one buffer for
    /// the run, not two vectors an event). Read with
    /// [`Trajectory::state_before`] and [`Trajectory::state_after`]. Empty
    /// when the run was told to keep no event states (`ia_events`'
    /// `EventOptions::event_states`).
    pub event_states: Vec<f64>,
    /// States at the observation times reached.
    pub observations: Vec<Observation>,
    /// Time reached: the end of the span, a terminal event's time, or the
    /// time of a failure.
    pub final_time: f64,
    /// State at `final_time`.
    pub final_state: Vec<f64>,
    /// Index of the mode at `final_time`.
    pub final_mode: usize,
    /// Solver work.
    pub stats: SolverStats,
}

impl Trajectory {
    /// The state `x-` just before the reset of `events[k]`.
    ///
    /// # Panics
    ///
    /// When there is no `events[k]`, as `events[k]` would.
    pub fn state_before(&self, k: usize) -> &[f64] {
        let n = self.initial_state.len();
        &self.event_states[2 * k * n..(2 * k + 1) * n]
    }

    /// The state `x+` just after the reset of `events[k]`.
    ///
    /// # Panics
    ///
    /// When there is no `events[k]`, as `events[k]` would.
    pub fn state_after(&self, k: usize) -> &[f64] {
        let n = self.initial_state.len();
        &self.event_states[(2 * k + 1) * n..(2 * k + 2) * n]
    }

    /// Event times in order.
    pub fn event_times(&self) -> Vec<f64> {
        self.events.iter().map(|e| e.time).collect()
    }

    /// The run-wide index of the first recorded event: the record keeps the
    /// last `events.len()` of the run's `stats.events` events (all of them
    /// unless the run was told to keep fewer).
    pub fn first_recorded_event(&self) -> usize {
        self.stats.events - self.events.len()
    }

    /// Where in [`Trajectory::events`] transition `transition` first fired:
    /// [`FirstFiring::At`] that position, [`FirstFiring::Never`] when it did
    /// not fire in the run, or [`FirstFiring::NotRecorded`] when it does not
    /// fire among the recorded events and earlier events were not kept.
    pub fn first_firing(&self, transition: usize) -> FirstFiring {
        match self.events.iter().position(|e| e.transition == transition) {
            Some(k) if self.first_recorded_event() == 0 => FirstFiring::At(k),
            None if self.first_recorded_event() == 0 => FirstFiring::Never,
            _ => FirstFiring::NotRecorded,
        }
    }
}

/// The answer of [`Trajectory::first_firing`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FirstFiring {
    /// The transition first fired at this position of [`Trajectory::events`].
    At(usize),
    /// The transition did not fire in the run.
    Never,
    /// The record does not hold the run's first events, so which of them
    /// was the transition's first firing is unknown.
    NotRecorded,
}
