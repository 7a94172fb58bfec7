//! The hybrid integrator: steps the flow of the current mode, detects guard
//! crossings on every step, locates them on the dense output, applies resets
//! and switches modes.
//!
//! # Event rules
//!
//! * Detection: after every accepted step each guard of the current mode is
//!   evaluated at the step's end; a transition fires when its guard went from
//!   the side it was on to zero or beyond in its declared direction.
//! * Location: the crossing time is found with the Illinois variant of
//!   regula falsi (the `roots` crate) on the stepper's dense output, to the
//!   problem's time tolerance.
//!   The step is then replaced by one that ends exactly at the event time, so
//!   the state before the reset is a Runge-Kutta value, not an interpolant.
//! * Several guards crossing in one step: the earliest fires. Guards crossing
//!   within the time tolerance of each other count as simultaneous; the one
//!   declared first fires first.
//! * Restart: after the reset, every guard of the new mode is re-evaluated.
//!   A guard within the rounding band of zero takes the side its rate points
//!   to; the band comes from the tolerances (the located event's residual,
//!   `4 |gdot| time_tolerance` and rounding of `g_x . x`), never from how far
//!   a reset overshot. The transition that just fired is armed on that side,
//!   so a threshold crossed with an identity reset is not fired again until
//!   it has come back to the side it crosses from; like a disarmed guard
//!   (below), a return and a new crossing inside one step are found.
//! * Cascades: a guard of the same mode fires at once, at the same time, if
//!   and only if the reset moved it from the side it crosses from to zero or
//!   beyond in its direction; a guard left short of zero does not fire.
//!   After a switch to another mode, a guard of the new mode that starts at
//!   zero heading into its crossing, or beyond zero and not heading back
//!   to its side, fires at once. One beyond zero heading back has had no
//!   crossing: it is disarmed, and fires at its first crossing after it is
//!   back on its side (a spring leg lifting off below its touchdown
//!   height touches down when it falls through that height again). Its
//!   return is found like a dip: when it comes back and crosses again
//!   inside one step, the step is ended where it is back. Of
//!   several, the first declared fires first, then the rule is applied again
//!   after its reset, until no guard is due. An event whose guard sat on zero
//!   (a simultaneous crossing) keeps its own event time; an event whose guard
//!   a reset pushed strictly past zero is part of the cascade of the located
//!   event that started it ([`EventJump::cascade_of`]): its time is that
//!   event's time, and its sensitivities are those of the composite jump at
//!   that time. Events of a cascade count towards Zeno detection like any
//!   other.
//! * A guard that crosses zero and back within one step is found from its
//!   rate: when the guard heads towards zero at the step's start and away
//!   from it at the step's end (told apart by evaluating every guard on the
//!   state pushed a small fraction of the step along the flow, formed once
//!   per step for all guards), its extremum inside the step is searched on
//!   the dense output, and a crossing there fires (or is reported as
//!   grazing) like any other. So the crossings seen no longer depend on
//!   the step sizes, and forward sensitivities (whose error control takes
//!   smaller steps) and the adjoint (which steps on the state alone) run
//!   the same event checks, down to dips about as deep as the dense
//!   output's error (near `1e-12` at tolerances `1e-12`), which one step
//!   sequence may resolve and another not. A guard with two extrema inside
//!   one step is still not seen; bound the step with `max_step` where that
//!   can happen.

use crate::geometry::{guard_rate, EventAt, EventGeometry, GeometryWorkspace};
use crate::problem::{Problem, Progress, PROGRESS_EVERY_STEPS};
use crate::stepper::{OdeRhs, StepFailure, Stepper};
use crate::workspace::{refill, with_capacity, Buffers, SpareVecs, Workspace};
use ia_core::{
    Direction, EventRecord, Guard, GuardPartials, HybridError, HybridSystem, Observation, Segment,
    SolverStats, Trajectory,
};
use roots::{find_root_regula_falsi, Convergency};
use std::mem::take;

/// A state jump as the sensitivity layer sees it.
#[derive(Debug)]
pub struct EventJump<'a> {
    /// Position in the event sequence.
    pub index: usize,
    /// Transition index in the system.
    pub transition: usize,
    /// Event time.
    pub time: f64,
    /// Mode before.
    pub from_mode: usize,
    /// Mode after.
    pub to_mode: usize,
    /// State before the reset.
    pub state_before: &'a [f64],
    /// State after the reset.
    pub state_after: &'a [f64],
    /// Whether the run ends here.
    pub terminal: bool,
    /// For an event of a cascade (its guard pushed past zero by an earlier
    /// reset at the same instant), the index of the located event that
    /// started it: see [`EventRecord::cascade_of`].
    pub cascade_of: Option<usize>,
    /// The event's geometry (flows on both sides, the guard's partials and
    /// rate, the time shift), formed once by the integrator when the extra
    /// state or the observer asks for it
    /// ([`ExtraState::wants_event_geometry`],
    /// [`Observer::wants_event_geometry`]); `None` otherwise.
    pub geometry: Option<&'a EventGeometry>,
}

/// What every callback of a run is told about it: the system being run and
/// its parameters, so an [`ExtraState`] or an [`Observer`] need not keep
/// copies of its own.
#[derive(Clone, Copy)]
pub struct RunContext<'a> {
    /// The hybrid system.
    pub system: &'a HybridSystem,
    /// The parameter values of the run.
    pub params: &'a [f64],
}

/// Extra components integrated along with the state through the same steps
/// and mapped across every event (for example forward sensitivities
/// `S = dx/dtheta`): the integrator carries `y = (x, extra)`.
///
/// The integrator calls [`ExtraState::rate`] inside every stage of every
/// step, so an implementation must not allocate there.
pub trait ExtraState {
    /// Number of extra components carried after the state.
    fn dim(&self) -> usize;
    /// Whether the step-size control covers the extra components (the
    /// steps then follow their error too; otherwise only the state's).
    fn error_controlled(&self) -> bool {
        true
    }
    /// Writes the extra components' initial values.
    fn initial(&mut self, run: RunContext<'_>, extra: &mut [f64]);
    /// Writes the extra components' rate in mode `mode` at `(t, x)`.
    fn rate(
        &mut self,
        run: RunContext<'_>,
        mode: usize,
        t: f64,
        x: &[f64],
        extra: &[f64],
        rate: &mut [f64],
    );
    /// Whether [`ExtraState::jump`] reads the event's geometry
    /// ([`EventJump::geometry`]); the integrator then forms it once per
    /// event for every consumer.
    fn wants_event_geometry(&self) -> bool {
        false
    }
    /// Maps the extra components across an event.
    fn jump(
        &mut self,
        run: RunContext<'_>,
        jump: &EventJump<'_>,
        extra_before: &[f64],
        extra_after: &mut [f64],
    ) -> Result<(), HybridError>;

    /// Optional: carries the extra components over `span` in mode `mode`,
    /// whose flow is decoupled and linear, from the state `x0` at `t0`
    /// (the exact event-driven solver, [`crate::exact`]), and returns
    /// `true`. The default returns `false`, and the exact solver refuses
    /// the run.
    fn advance_exact(
        &mut self,
        _run: RunContext<'_>,
        _mode: usize,
        _t0: f64,
        _x0: &[f64],
        _span: &crate::exact::ExactSpan<'_>,
        _extra: &mut [f64],
    ) -> bool {
        false
    }
}

/// No extra components: a plain simulation.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoExtraState;

impl ExtraState for NoExtraState {
    fn dim(&self) -> usize {
        0
    }
    fn initial(&mut self, _run: RunContext<'_>, _extra: &mut [f64]) {}
    fn rate(
        &mut self,
        _run: RunContext<'_>,
        _mode: usize,
        _t: f64,
        _x: &[f64],
        _extra: &[f64],
        _rate: &mut [f64],
    ) {
    }
    fn jump(
        &mut self,
        _run: RunContext<'_>,
        _jump: &EventJump<'_>,
        _extra_before: &[f64],
        _extra_after: &mut [f64],
    ) -> Result<(), HybridError> {
        Ok(())
    }
}

/// Sees a run without changing it: every accepted step, event and
/// observation and the end (for example the adjoint's tape). The state
/// slices passed are the full `y = (x, extra)`. Every method defaults to
/// doing nothing; `(A, B)` observes with both.
pub trait Observer {
    /// Every accepted step: mode, start time, size and the start state.
    fn step_taken(&mut self, _run: RunContext<'_>, _mode: usize, _t0: f64, _h: f64, _y0: &[f64]) {}
    /// Every stretch between events, observations and the end that the
    /// exact event-driven solver ([`crate::exact`]) carries the state over
    /// in closed form (its steps): mode, start time, length and the start
    /// state (the state only, without carried components).
    fn stretch_taken(
        &mut self,
        _run: RunContext<'_>,
        _mode: usize,
        _t0: f64,
        _s: f64,
        _x0: &[f64],
    ) {
    }
    /// Every event, after its reset.
    fn event(&mut self, _run: RunContext<'_>, _jump: &EventJump<'_>) -> Result<(), HybridError> {
        Ok(())
    }
    /// Whether [`Observer::event`] reads the event's geometry
    /// ([`EventJump::geometry`]).
    fn wants_event_geometry(&self) -> bool {
        false
    }
    /// The state at observation `index`.
    fn observed(&mut self, _run: RunContext<'_>, _index: usize, _time: f64, _y: &[f64]) {}
    /// The final state.
    fn finished(&mut self, _run: RunContext<'_>, _time: f64, _y: &[f64]) {}
}

/// Observes nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoObserver;

impl Observer for NoObserver {}

impl<A: Observer, B: Observer> Observer for (A, B) {
    fn step_taken(&mut self, run: RunContext<'_>, mode: usize, t0: f64, h: f64, y0: &[f64]) {
        self.0.step_taken(run, mode, t0, h, y0);
        self.1.step_taken(run, mode, t0, h, y0);
    }
    fn stretch_taken(&mut self, run: RunContext<'_>, mode: usize, t0: f64, s: f64, x0: &[f64]) {
        self.0.stretch_taken(run, mode, t0, s, x0);
        self.1.stretch_taken(run, mode, t0, s, x0);
    }
    fn event(&mut self, run: RunContext<'_>, jump: &EventJump<'_>) -> Result<(), HybridError> {
        self.0.event(run, jump)?;
        self.1.event(run, jump)
    }
    fn wants_event_geometry(&self) -> bool {
        self.0.wants_event_geometry() || self.1.wants_event_geometry()
    }
    fn observed(&mut self, run: RunContext<'_>, index: usize, time: f64, y: &[f64]) {
        self.0.observed(run, index, time, y);
        self.1.observed(run, index, time, y);
    }
    fn finished(&mut self, run: RunContext<'_>, time: f64, y: &[f64]) {
        self.0.finished(run, time, y);
        self.1.finished(run, time, y);
    }
}

/// Simulates `problem`: the state through every event, at every observation
/// time and at the end. With [`SolverChoice::Exact`](crate::SolverChoice::Exact) the run is the
/// exact event-driven solver's ([`crate::exact::simulate`]).
pub fn simulate(problem: &Problem<'_>) -> Result<Trajectory, HybridError> {
    simulate_in(problem, &mut Workspace::new())
}

/// Runs `problem` carrying `extra` along with the state and showing the run
/// to `observer`.
pub fn run<E: ExtraState, O: Observer>(
    problem: &Problem<'_>,
    extra: &mut E,
    observer: &mut O,
) -> Result<Trajectory, HybridError> {
    run_in(problem, &mut Workspace::new(), extra, observer)
}

/// [`simulate`] in `workspace`: its stepper and buffers are reused, and the
/// records are built in the vectors of trajectories given back with
/// [`Workspace::recycle`]. The numbers are those of [`simulate`].
pub fn simulate_in(
    problem: &Problem<'_>,
    workspace: &mut Workspace,
) -> Result<Trajectory, HybridError> {
    run_in(problem, workspace, &mut NoExtraState, &mut NoObserver)
}

/// [`run`] in `workspace` (see [`simulate_in`]). With
/// [`SolverChoice::Exact`](crate::SolverChoice::Exact) the run is the exact
/// event-driven solver's ([`crate::exact::run`]), which needs no workspace.
pub fn run_in<E: ExtraState, O: Observer>(
    problem: &Problem<'_>,
    workspace: &mut Workspace,
    extra: &mut E,
    observer: &mut O,
) -> Result<Trajectory, HybridError> {
    if problem.solver == crate::SolverChoice::Exact {
        return crate::exact::run(problem, extra, observer);
    }
    problem.validate()?;
    let (stepper, buffers) = workspace.stepper_and_buffers(&problem.solver)?;
    let mut run = Run::new(problem, extra, observer, stepper, buffers)?;
    let result = run.go();
    run.release(buffers);
    result
}

/// The flow of the current mode, with the extra components' rates.
struct HybridRhs<'a, E> {
    system: &'a HybridSystem,
    params: &'a [f64],
    mode: usize,
    n: usize,
    dim: usize,
    controlled: usize,
    extra: &'a mut E,
}

impl<E> HybridRhs<'_, E> {
    fn context(&self) -> RunContext<'_> {
        RunContext {
            system: self.system,
            params: self.params,
        }
    }
}

impl<E: ExtraState> OdeRhs for HybridRhs<'_, E> {
    fn dim(&self) -> usize {
        self.dim
    }

    fn controlled_dim(&self) -> usize {
        self.controlled
    }

    fn closed_dim(&self) -> usize {
        self.n
    }

    fn eval_closed(&mut self, t: f64, x: &[f64], dx: &mut [f64]) {
        self.system.modes()[self.mode]
            .flow
            .rate(t, x, self.params, dx);
    }

    fn eval(&mut self, t: f64, y: &[f64], dydt: &mut [f64]) {
        let (x, extra) = y.split_at(self.n);
        let (dx, dextra) = dydt.split_at_mut(self.n);
        self.system.modes()[self.mode]
            .flow
            .rate(t, x, self.params, dx);
        if !extra.is_empty() {
            let run = RunContext {
                system: self.system,
                params: self.params,
            };
            self.extra.rate(run, self.mode, t, x, extra, dextra);
        }
    }
}

/// What a run knows of each transition's guard (indexed by transition):
/// the side it was last seen on, the rounding band of the last event, its
/// values at the ends of the current step, and the lists `detect` builds.
/// Kept between runs by a [`Workspace`].
#[derive(Debug, Default)]
pub(crate) struct GuardTable {
    /// Side (+1 or -1) each guard was last seen on.
    sides: Vec<f64>,
    /// The band around zero within which the guard's value is rounding
    /// noise of the last event...
    zero_bands: Vec<f64>,
    /// ...for steps starting before this time (the guard, leaving zero at
    /// its rate, clears the band by then).
    band_ends: Vec<f64>,
    /// Values at the end of the current step (or of the narrowed bracket of
    /// the crossing being located)...
    values: Vec<f64>,
    /// ...and at its start: the values at the end of the step before, or
    /// those formed after the last event or at the start of the run (the
    /// stepper starts from that very state, so they need no evaluation).
    start_values: Vec<f64>,
    /// Guards that crossed in the current bracket, in declaration order,
    /// and the next bracket's.
    crossed: Vec<usize>,
    still_crossed: Vec<usize>,
    /// Guards on their side at both ends of the step, searched for a
    /// crossing and return inside it.
    dip_candidates: Vec<usize>,
}

impl GuardTable {
    /// Ready for a run of a system with `transitions` transitions.
    fn prepare(self, transitions: usize) -> Self {
        Self {
            sides: refill(self.sides, transitions, 0.0),
            zero_bands: refill(self.zero_bands, transitions, 0.0),
            band_ends: refill(self.band_ends, transitions, f64::NEG_INFINITY),
            values: refill(self.values, transitions, 0.0),
            start_values: refill(self.start_values, transitions, 0.0),
            crossed: with_capacity(self.crossed, transitions),
            still_crossed: with_capacity(self.still_crossed, transitions),
            dip_candidates: with_capacity(self.dip_candidates, transitions),
        }
    }

    /// Records the side guard `k` is on at `t`: the sign of `heading` (its
    /// value, or its rate when it sits on zero within `band`, 0 if not) and
    /// how long the zero band lasts.
    fn take_side(&mut self, k: usize, t: f64, heading: f64, band: f64) {
        self.sides[k] = heading.signum();
        self.zero_bands[k] = band;
        self.band_ends[k] = if band > 0.0 && heading != 0.0 {
            t + 10.0 * band / heading.abs()
        } else {
            t
        };
    }

    /// The rounding band of guard `k` for a step from `t_start`.
    fn band(&self, k: usize, t_start: f64) -> f64 {
        if t_start <= self.band_ends[k] {
            self.zero_bands[k]
        } else {
            0.0
        }
    }
}

/// A run's state-sized buffers, kept between runs by a [`Workspace`].
#[derive(Debug, Default)]
pub(crate) struct StateBuffers {
    /// State (full, with extras) right after the last event or at the start.
    y: Vec<f64>,
    y_after: Vec<f64>,
    x_probe: Vec<f64>,
    rate: Vec<f64>,
    /// Rates of the state at the start and end of a step, when the stepper
    /// does not keep them.
    dip_rates: Vec<f64>,
    /// States at the start and end of a step, for the same search.
    dip_states: Vec<f64>,
}

impl StateBuffers {
    /// Ready for a run of `n` states and `dim` components with the extras.
    fn prepare(self, n: usize, dim: usize) -> Self {
        Self {
            y: refill(self.y, dim, 0.0),
            y_after: refill(self.y_after, dim, 0.0),
            x_probe: refill(self.x_probe, n, 0.0),
            rate: refill(self.rate, n, 0.0),
            dip_rates: refill(self.dip_rates, 2 * n, 0.0),
            dip_states: refill(self.dip_states, 2 * n, 0.0),
        }
    }
}

/// The guard's rate `gdot = g_x . f + g_t` at `(t, x)` with the state's rate
/// `f`, from its partials formed in `partials` (all zero on entry, and again
/// on return: only the guard's support is written and cleared, so the cost
/// is what the guard reads).
/// Trims the recorded events, and their states with them, to what
/// `recording` keeps.
pub(crate) fn trim_events(
    recording: crate::EventRecording,
    trajectory: &mut Trajectory,
    finished: bool,
) {
    recording.trim(&mut trajectory.events, finished);
    let n = trajectory.initial_state.len();
    recording.trim_flat(&mut trajectory.event_states, 2 * n, finished);
}

fn guard_rate_at(
    guard: &dyn Guard,
    t: f64,
    x: &[f64],
    p: &[f64],
    f: &[f64],
    partials: &mut GuardPartials,
) -> f64 {
    guard.partials(t, x, p, partials);
    let support = guard.support();
    let (rate, _) = guard_rate(partials, f, support);
    partials.clear_support(support);
    rate
}

/// Time tolerance as a `roots` convergence criterion: stop when the guard
/// value is within rounding noise of zero or the bracket is narrower than
/// the tolerance.
struct TimeTolerance {
    tolerance: f64,
    noise: f64,
    max_iterations: usize,
}

impl Convergency<f64> for TimeTolerance {
    fn is_root_found(&mut self, y: f64) -> bool {
        y.abs() <= self.noise
    }
    fn is_converged(&mut self, a: f64, b: f64) -> bool {
        (a - b).abs() <= self.tolerance
    }
    fn is_iteration_limit_reached(&mut self, iter: usize) -> bool {
        iter >= self.max_iterations
    }
}

/// Uniform samples of a step searched for a bracket when the step start does
/// not lie on the guard's recorded side (right after an event)...
const COARSE_SAMPLES: usize = 8;
/// ...and halvings of its first eighth searched when the guard is already
/// back past zero at the first sample.
const BRACKET_DOUBLINGS: usize = 60;
/// Events per transition beyond which a cascade at one instant is reported
/// as Zeno behaviour.
const CASCADE_EVENTS_PER_TRANSITION: usize = 4;
/// The Zeno rule over a run's events (docs/method.md, section 3 of the
/// event rules): more than `max_events` events; a cascade of more than
/// [`CASCADE_EVENTS_PER_TRANSITION`] events per transition at one instant
/// (the events of a cascade share one instant by construction, so their
/// zero gaps are no evidence by themselves); or `zeno_run` consecutive gaps
/// shorter than `zeno_separation` of the run's length, each shrinking
/// towards an accumulation point before `t_end`. Shared by every
/// integrator, so the same run is Zeno under each.
#[derive(Clone, Debug)]
pub(crate) struct ZenoWatch {
    streak: usize,
    /// Times of the last three events, oldest first (read whatever the
    /// record keeps).
    recent: [f64; 3],
}

impl Default for ZenoWatch {
    fn default() -> Self {
        Self {
            streak: 0,
            recent: [f64::NAN; 3],
        }
    }
}

impl ZenoWatch {
    /// Notes event number `count` (counting it) at `t`, of the cascade of
    /// event `cascade_of` if it is one, and returns why the run is Zeno, if
    /// it now is.
    pub(crate) fn after_event(
        &mut self,
        problem: &Problem<'_>,
        count: usize,
        t: f64,
        cascade_of: Option<usize>,
    ) -> Option<String> {
        self.recent.rotate_left(1);
        self.recent[2] = t;
        let times = &self.recent;
        let options = &problem.events;
        let cascade_limit = CASCADE_EVENTS_PER_TRANSITION * problem.system.transitions().len();
        if count > options.max_events {
            Some(format!(
                "more than max_events = {} events",
                options.max_events
            ))
        } else if let Some(root) = cascade_of {
            let length = count - root;
            (length > cascade_limit).then(|| {
                format!(
                    "a cascade of more than {cascade_limit} events at one instant: each reset pushes another guard past zero"
                )
            })
        } else {
            let span = problem.t_end - problem.t0;
            // The last gap and the one before it, from the last three event
            // times (NaN where the run has had fewer events).
            let (gap, previous_gap) = (times[2] - times[1], times[1] - times[0]);
            // A gap counts as shrinking towards an accumulation only if the
            // geometric continuation of the last two gaps (ratio r < 1, the
            // remaining gaps summing to gap r / (1 - r)) ends before t_end:
            // evenly spaced events (r = 1 up to rounding and the solver's
            // drift) never accumulate, however short their gaps.
            let shrinking = count >= 3 && {
                let ratio = gap / previous_gap;
                gap <= 0.0 || (ratio < 1.0 && t + gap * ratio / (1.0 - ratio) <= problem.t_end)
            };
            if count >= 2 && gap < options.zeno_separation * span && (shrinking || self.streak == 0)
            {
                self.streak += 1;
            } else {
                self.streak = 0;
            }
            (self.streak >= options.zeno_run).then(|| {
                format!(
                    "{} consecutive gaps between events shorter than {} ({} of the run's length), each shrinking towards an accumulation point before t_end",
                    self.streak,
                    ia_core::short_num(options.zeno_separation * span),
                    ia_core::short_num(options.zeno_separation)
                )
            })
        }
    }
}

/// The fraction of a step by which the states at its ends are pushed along
/// the flow to tell whether a guard heads towards zero or away from it.
const DIP_PROBE: f64 = 1e-6;
/// Golden-section iterations that search a step for the guard's extremum
/// (the bracket shrinks by 0.618 each: 80 iterations reach rounding of the
/// step).
const DIP_ITERATIONS: usize = 80;

/// What [`Run::detect`] found inside a step.
enum Found {
    /// Transition `k` crossed at `t`: `Crossing(t, k)`.
    Crossing(f64, usize),
    /// Transition `k`'s disarmed guard ([`Run::disarmed`]) is back on the
    /// side it crosses from at `t`, before any crossing: `BackOnSide(t, k)`.
    BackOnSide(f64, usize),
}

struct Run<'p, 's, E, O> {
    problem: &'p Problem<'p>,
    rhs: HybridRhs<'p, E>,
    observer: &'p mut O,
    stepper: &'s mut dyn Stepper,
    time_tolerance: f64,
    /// What the run knows of each guard.
    guards: GuardTable,
    /// The state-sized buffers.
    states: StateBuffers,
    guard_partials: GuardPartials,
    /// The geometry of the event being fired...
    geometry: GeometryWorkspace,
    /// ...completed after the reset when a consumer reads it.
    wants_geometry: bool,
    trajectory: Trajectory,
    /// Vectors to build records in (see [`Workspace::recycle`]).
    spare: SpareVecs,
    segment_start: f64,
    segment_steps: usize,
    next_observation: usize,
    zeno: ZenoWatch,
    /// Firings so far of [`Problem::stop_after`]'s transition.
    stop_firings: usize,
    extra_rhs_evaluations: usize,
}

impl<'p, 's, E: ExtraState, O: Observer> Run<'p, 's, E, O> {
    fn new(
        problem: &'p Problem<'p>,
        extra: &'p mut E,
        observer: &'p mut O,
        stepper: &'s mut dyn Stepper,
        buffers: &mut Buffers,
    ) -> Result<Self, HybridError> {
        let system = problem.system;
        let n = system.state_dim();
        let n_params = system.param_dim();
        let dim = n + extra.dim();
        let controlled = if extra.error_controlled() { dim } else { n };
        let b = buffers;
        let transitions = system.transitions().len();
        let mut states = take(&mut b.states).prepare(n, dim);
        states.y[..n].copy_from_slice(&problem.initial_state);
        let context = RunContext {
            system,
            params: &problem.params,
        };
        extra.initial(context, &mut states.y[n..]);
        let wants_geometry = extra.wants_event_geometry() || observer.wants_event_geometry();
        let mut spare = take(&mut b.spare);
        let trajectory = Trajectory {
            initial_time: problem.t0,
            initial_state: spare.copy_of(&problem.initial_state),
            segments: take(&mut b.segments),
            events: take(&mut b.events),
            event_states: take(&mut b.event_states),
            observations: take(&mut b.observations),
            final_time: problem.t0,
            final_state: Vec::new(),
            final_mode: problem.initial_mode,
            stats: SolverStats::default(),
        };
        Ok(Self {
            problem,
            rhs: HybridRhs {
                system,
                params: &problem.params,
                mode: problem.initial_mode,
                n,
                dim,
                controlled,
                extra,
            },
            observer,
            stepper,
            time_tolerance: problem.time_tolerance(),
            guards: take(&mut b.guards).prepare(transitions),
            states,
            guard_partials: b.take_guard_partials(n, n_params),
            geometry: b.take_geometry(n, n_params),
            wants_geometry,
            trajectory,
            spare,
            segment_start: problem.t0,
            segment_steps: 0,
            next_observation: 0,
            zeno: ZenoWatch::default(),
            stop_firings: 0,
            extra_rhs_evaluations: 0,
        })
    }

    /// Gives the buffers back to `buffers` (the records stay with the
    /// returned trajectory; after an error, what the run recorded is kept
    /// for the next).
    fn release(self, buffers: &mut Buffers) {
        let b = buffers;
        b.guards = self.guards;
        b.states = self.states;
        b.guard_partials = Some(self.guard_partials);
        b.geometry = Some(self.geometry);
        b.spare = self.spare;
        b.recycle(self.trajectory);
    }

    fn system(&self) -> &'p HybridSystem {
        self.problem.system
    }

    fn mode(&self) -> usize {
        self.rhs.mode
    }

    fn go(&mut self) -> Result<Trajectory, HybridError> {
        let t0 = self.problem.t0;
        self.check_start_guards()?;
        self.restart(t0)?;
        let mut t = t0;
        loop {
            t = self.record_observations_at(t);
            if t >= self.problem.t_end {
                let mut y = std::mem::take(&mut self.states.y_after);
                y.copy_from_slice(self.stepper.state());
                let done = self.finish(t, &y);
                self.states.y_after = y;
                return Ok(done);
            }
            let steps = self.trajectory.stats.steps;
            if let Some(hook) = self.problem.progress {
                if steps > 0 && steps % PROGRESS_EVERY_STEPS == 0 {
                    (hook.0)(&Progress {
                        t0: self.problem.t0,
                        time: t,
                        t_end: self.problem.t_end,
                        steps,
                        events: self.trajectory.stats.events,
                    });
                }
            }
            let max_steps = self.problem.events.max_steps;
            if self.trajectory.stats.steps >= max_steps {
                let x = self.stepper.state()[..self.rhs.n].to_vec();
                return Err(HybridError::StepLimit {
                    max_steps,
                    time: t,
                    t_end: self.problem.t_end,
                    trajectory: Box::new(self.snapshot_at(t, &x)),
                });
            }
            let t_limit = self
                .problem
                .observation_times
                .get(self.next_observation)
                .copied()
                .unwrap_or(self.problem.t_end)
                .min(self.problem.t_end);
            let failure = self.stepper.step(&mut self.rhs, t_limit).err();
            if let Some(f) = failure {
                return Err(self.step_failure(f));
            }
            let (t_prev, t_new) = (self.stepper.previous_time(), self.stepper.time());
            match self.detect(t_prev, t_new)? {
                Some(Found::BackOnSide(t_back, k)) => {
                    self.stop_back_on_side(t_back, k)?;
                    t = t_back;
                }
                Some(Found::Crossing(t_event, transition)) => {
                    if t_event < t_new {
                        let failure = self.stepper.truncate(&mut self.rhs, t_event).err();
                        if let Some(f) = failure {
                            return Err(self.step_failure(f));
                        }
                    }
                    self.step_taken();
                    self.states.y.copy_from_slice(self.stepper.state());
                    if let Some(done) = self.fire_cascade(t_event, transition)? {
                        return Ok(done);
                    }
                    t = t_event;
                }
                None => {
                    self.step_taken();
                    self.take_sides(t_prev);
                    t = t_new;
                }
            }
        }
    }

    fn step_taken(&mut self) {
        let t0 = self.stepper.previous_time();
        let h = self.stepper.step_size();
        self.segment_steps += 1;
        self.trajectory.stats.steps += 1;
        let context = self.rhs.context();
        self.observer
            .step_taken(context, self.rhs.mode, t0, h, self.stepper.previous_state());
    }

    /// Records every observation due at `t` (the current time); returns `t`.
    fn record_observations_at(&mut self, t: f64) -> f64 {
        while let Some(&time) = self.problem.observation_times.get(self.next_observation) {
            if time > t {
                break;
            }
            let y = self.stepper.state();
            self.trajectory.observations.push(Observation {
                time,
                mode: self.mode(),
                state: self.spare.copy_of(&y[..self.rhs.n]),
            });
            self.observer
                .observed(self.rhs.context(), self.next_observation, time, y);
            self.next_observation += 1;
        }
        t
    }

    fn check_start_guards(&mut self) -> Result<(), HybridError> {
        let (system, p, t0) = (self.system(), &self.problem.params, self.problem.t0);
        let x0 = &self.problem.initial_state;
        for &k in &system.modes()[self.mode()].outgoing {
            let transition = &system.transitions()[k];
            let g = transition.guard.value(t0, x0, p);
            if !g.is_finite() {
                return Err(HybridError::NonFinite {
                    what: format!("guard value of transition '{}' (= {g})", transition.name),
                    time: t0,
                    trajectory: None,
                });
            }
            // With a start band the start is a state right after an event:
            // a guard within the band sits on zero and takes the side its
            // rate points to, and one beyond zero heading back is disarmed,
            // as after a mode switch.
            let band = self.problem.start_band;
            let direction = transition.guard.direction();
            let at_zero = band > 0.0 && g.abs() <= band;
            let beyond = band > 0.0 && !at_zero && direction.violated_at_start(g);
            let rate = if at_zero || beyond {
                system.modes()[self.mode()]
                    .flow
                    .rate(t0, x0, p, &mut self.states.rate);
                self.extra_rhs_evaluations += 1;
                guard_rate_at(
                    &*transition.guard,
                    t0,
                    x0,
                    p,
                    &self.states.rate,
                    &mut self.guard_partials,
                )
            } else {
                0.0
            };
            let heading = if at_zero { rate } else { g };
            let disarmed = beyond && direction.heads_back(rate);
            if direction.violated_at_start(heading) && !disarmed {
                return Err(HybridError::GuardViolatedAtStart {
                    transition: transition.name.clone(),
                    value: g,
                    direction: format!("{direction:?}").to_lowercase(),
                });
            }
            self.guards
                .take_side(k, t0, heading, if at_zero { band } else { 0.0 });
            self.guards.values[k] = g;
        }
        Ok(())
    }

    /// Starts a segment at `t` from `self.states.y`.
    fn restart(&mut self, t: f64) -> Result<(), HybridError> {
        self.segment_start = t;
        self.segment_steps = 0;
        let y = std::mem::take(&mut self.states.y);
        let result = self.stepper.start(&mut self.rhs, t, &y);
        self.states.y = y;
        result.map_err(|f| self.step_failure(f))
    }

    /// Finds the earliest transition whose guard crossed in `[t_prev, t_new]`.
    ///
    /// Only that one is located to the time tolerance: when several guards
    /// crossed, the bracket is first halved with one interpolated state per
    /// trial time, every remaining guard evaluated on it, keeping the guards
    /// already crossed at the trial time, until one is left (or the bracket
    /// is within the time tolerance: then the first declared of those left
    /// fires, the others counting as simultaneous).
    fn detect(&mut self, t_prev: f64, t_new: f64) -> Result<Option<Found>, HybridError> {
        let system = self.system();
        let n = self.rhs.n;
        let p = &self.problem.params;
        self.guards.crossed.clear();
        self.guards.dip_candidates.clear();
        for &k in &system.modes()[self.mode()].outgoing {
            let g = self.checked_guard(k, t_new, &self.stepper.state()[..n])?;
            self.guards.start_values[k] = self.guards.values[k];
            self.guards.values[k] = g;
            if self.crossed_from_side(k, t_prev, g) {
                self.guards.crossed.push(k);
            } else if g.abs() > self.guards.band(k, t_prev) && self.guards.sides[k] * g > 0.0 {
                // On its side at both ends: it may have dipped past zero
                // (or, disarmed, come back and crossed) inside the step. A
                // disarmed guard back on its side at the end has no dip:
                // the step's end arms it.
                self.guards.dip_candidates.push(k);
            }
        }
        let (mut lo, mut hi) = (t_prev, t_new);
        // A guard that crossed zero and came back inside the step: the
        // bracket ends where it is past zero, and holds every guard past
        // zero there.
        if let Some((t_past, dipped)) = self.earliest_dip(t_prev, t_new)? {
            hi = t_past;
            self.stepper
                .interpolate(&mut self.rhs, hi, &mut self.states.x_probe);
            self.trajectory.stats.root_iterations += 1;
            self.guards.crossed.clear();
            for &k in &system.modes()[self.mode()].outgoing {
                let g = system.transitions()[k]
                    .guard
                    .value(hi, &self.states.x_probe, p);
                if self.crossed_from_side(k, t_prev, g) {
                    self.guards.values[k] = g;
                    self.guards.crossed.push(k);
                }
            }
            if self.guards.crossed.is_empty() && self.disarmed(dipped) {
                return Ok(Some(Found::BackOnSide(t_past, dipped)));
            }
        }
        let mut halvings = 0;
        while self.guards.crossed.len() > 1 && hi - lo > self.time_tolerance && halvings < 200 {
            halvings += 1;
            let mid = lo + 0.5 * (hi - lo);
            if mid <= lo || mid >= hi {
                break;
            }
            // The state at the trial time, once for all remaining guards: only
            // the entries they read when each names them.
            let all_supported = self
                .guards
                .crossed
                .iter()
                .all(|&k| system.transitions()[k].guard.support().is_some());
            if all_supported {
                for &k in &self.guards.crossed {
                    let read = system.transitions()[k]
                        .guard
                        .support()
                        .map_or(&[][..], |s| s.states);
                    self.stepper.interpolate_entries(
                        &mut self.rhs,
                        mid,
                        read,
                        &mut self.states.x_probe,
                    );
                }
            } else {
                self.stepper
                    .interpolate(&mut self.rhs, mid, &mut self.states.x_probe);
            }
            self.trajectory.stats.root_iterations += 1;
            self.guards.still_crossed.clear();
            for i in 0..self.guards.crossed.len() {
                let k = self.guards.crossed[i];
                let g = self.checked_guard(k, mid, &self.states.x_probe)?;
                if self.crossed_from_side(k, t_prev, g) {
                    self.guards.values[k] = g;
                    self.guards.still_crossed.push(k);
                }
            }
            if self.guards.still_crossed.is_empty() {
                lo = mid;
            } else {
                hi = mid;
                std::mem::swap(&mut self.guards.crossed, &mut self.guards.still_crossed);
            }
        }
        match self.guards.crossed.first() {
            None => Ok(None),
            Some(&k) => Ok(Some(Found::Crossing(self.locate(k, t_prev, lo, hi)?, k))),
        }
    }

    /// Transition `k`'s guard on the dense output of the last step at `t`.
    fn guard_at(&mut self, k: usize, t: f64) -> f64 {
        let guard = &self.problem.system.transitions()[k].guard;
        self.stepper
            .interpolate(&mut self.rhs, t, &mut self.states.x_probe);
        self.trajectory.stats.root_iterations += 1;
        guard.value(t, &self.states.x_probe, &self.problem.params)
    }

    /// The earliest time inside `[t_prev, t_new]` at which a guard that is
    /// on its side at both ends is past zero (it crossed and came back), if
    /// any. Whether a guard heads towards zero at the start and away from it
    /// at the end is told by evaluating it on the states pushed a small
    /// fraction of the step along the flow from both ends, formed once for
    /// all guards, so the test costs two guard evaluations per guard; only
    /// a guard that passes it is searched on the dense output.
    fn earliest_dip(
        &mut self,
        t_prev: f64,
        t_new: f64,
    ) -> Result<Option<(f64, usize)>, HybridError> {
        if self.guards.dip_candidates.is_empty() || t_new <= t_prev {
            return Ok(None);
        }
        let n = self.rhs.n;
        let (t0, t1) = (t_prev, t_new);
        let eps = DIP_PROBE * (t1 - t0);
        let mut states = std::mem::take(&mut self.states.dip_states);
        match self.stepper.step_rates() {
            Some((f0, f1)) => {
                self.states.dip_rates[..n].copy_from_slice(&f0[..n]);
                self.states.dip_rates[n..].copy_from_slice(&f1[..n]);
            }
            None => {
                let flow = &self.problem.system.modes()[self.mode()].flow;
                let p = &self.problem.params;
                let (f0, f1) = self.states.dip_rates.split_at_mut(n);
                flow.rate(t0, &self.stepper.previous_state()[..n], p, f0);
                flow.rate(t1, &self.stepper.state()[..n], p, f1);
                self.extra_rhs_evaluations += 2;
            }
        }
        let (x0, x1) = (
            &self.stepper.previous_state()[..n],
            &self.stepper.state()[..n],
        );
        let (ahead, behind) = states.split_at_mut(n);
        for i in 0..n {
            ahead[i] = x0[i] + eps * self.states.dip_rates[i];
            behind[i] = x1[i] - eps * self.states.dip_rates[n + i];
        }
        let system = self.system();
        let p = &self.problem.params;
        // The suspects, into a buffer free until the bracket is narrowed.
        self.guards.still_crossed.clear();
        for &k in &self.guards.dip_candidates {
            let guard = &system.transitions()[k].guard;
            let side = self.guards.sides[k];
            let start = guard.value(t0 + eps, ahead, p) - self.guards.start_values[k];
            let end = self.guards.values[k] - guard.value(t1 - eps, behind, p);
            // Heading into zero at the start, away from it at the end.
            if side * start < 0.0 && side * end > 0.0 {
                self.guards.still_crossed.push(k);
            }
        }
        self.states.dip_states = states;
        let mut earliest: Option<(f64, usize)> = None;
        for c in 0..self.guards.still_crossed.len() {
            let k = self.guards.still_crossed[c];
            if let Some(t_past) = self.dip(k, t0, earliest.map_or(t1, |(t, _)| t))? {
                earliest = Some((t_past, k));
            }
        }
        Ok(earliest)
    }

    /// Searches `[t0, t1]` for a time at which transition `k`'s guard is
    /// past zero in its direction, or, for a [disarmed](Self::disarmed)
    /// guard, back on the side it crosses from (golden section for the
    /// extremum of the guard on the dense output), if there is one.
    fn dip(&mut self, k: usize, t0: f64, t1: f64) -> Result<Option<f64>, HybridError> {
        let side = self.guards.sides[k];
        let direction = self.problem.system.transitions()[k].guard.direction();
        let disarmed = self.disarmed(k);
        let past = |g: f64| {
            if disarmed {
                side * g < 0.0
            } else {
                direction.crossed(side, g)
            }
        };
        // Golden-section search for the minimum of side * g.
        let ratio = 0.5 * (5f64.sqrt() - 1.0);
        let (mut a, mut b) = (t0, t1);
        let mut c = b - ratio * (b - a);
        let mut d = a + ratio * (b - a);
        let (mut gc, mut gd) = (self.guard_at(k, c), self.guard_at(k, d));
        for _ in 0..DIP_ITERATIONS {
            if past(gc) {
                return Ok(Some(c));
            }
            if past(gd) {
                return Ok(Some(d));
            }
            if b - a <= self.time_tolerance {
                break;
            }
            if side * gc < side * gd {
                b = d;
                d = c;
                gd = gc;
                c = b - ratio * (b - a);
                gc = self.guard_at(k, c);
            } else {
                a = c;
                c = d;
                gc = gd;
                d = a + ratio * (b - a);
                gd = self.guard_at(k, d);
            }
        }
        if !(gc.is_finite() && gd.is_finite()) {
            let what = format!(
                "guard value of transition '{}' inside a step",
                self.problem.system.transitions()[k].name
            );
            return Err(self.non_finite(what, c));
        }
        Ok(None)
    }

    /// Whether transition `k`'s guard, at value `g` on a step from
    /// `t_start`, went from its recorded side to zero or beyond in its
    /// direction (a value within the rounding band of the last event is not
    /// a crossing).
    #[inline]
    fn crossed_from_side(&self, k: usize, t_start: f64, g: f64) -> bool {
        // Still strictly on its side: not crossed, whatever the direction
        // (the common case, decided without the guard's direction).
        if self.guards.sides[k] * g > 0.0 {
            return false;
        }
        g.abs() > self.guards.band(k, t_start)
            && self.system().transitions()[k]
                .guard
                .direction()
                .crossed(self.guards.sides[k], g)
    }

    /// Whether transition `k`'s guard sits beyond zero in its direction: a
    /// mode switch left it there heading back, or it fired and its reset
    /// left it there (a threshold with an identity reset). It has to come
    /// back to the side it crosses from before it can fire.
    fn disarmed(&self, k: usize) -> bool {
        let side = self.guards.sides[k];
        side != 0.0
            && self.system().transitions()[k]
                .guard
                .direction()
                .violated_at_start(side)
    }

    /// Ends the step at `t_back`, inside it, where transition `k`'s
    /// [disarmed](Self::disarmed) guard is back on the side it crosses
    /// from, and arms it there: its crossing later in the step is then
    /// found by the next one. No event: the state and the mode run on.
    fn stop_back_on_side(&mut self, t_back: f64, k: usize) -> Result<(), HybridError> {
        if let Err(f) = self.stepper.truncate(&mut self.rhs, t_back) {
            return Err(self.step_failure(f));
        }
        self.step_taken();
        let system = self.system();
        let n = self.rhs.n;
        let t_prev = self.stepper.previous_time();
        for &j in &system.modes()[self.mode()].outgoing {
            self.guards.values[j] = self.checked_guard(j, t_back, &self.stepper.state()[..n])?;
        }
        // The stepped state may still sit a rounding short of where the
        // dense output saw guard `k` back: then it stays disarmed.
        self.take_sides(t_prev);
        debug_assert!(self.guards.sides[k] != 0.0);
        Ok(())
    }

    /// At the end of a step from `t_prev` with no event, each guard takes
    /// the side of its value (`self.guards.values`), unless that is within
    /// its rounding band.
    fn take_sides(&mut self, t_prev: f64) {
        for &k in &self.system().modes()[self.mode()].outgoing {
            let g = self.guards.values[k];
            if g.abs() > self.guards.band(k, t_prev) {
                self.guards.sides[k] = g.signum();
            }
        }
    }

    /// Locates the crossing of transition `k`'s guard from its recorded side
    /// within `[t_prev, t_new]`, on a step that started at `t_start` (whose
    /// rounding band applies); its value at `t_new` is `guard_values[k]`.
    fn locate(
        &mut self,
        k: usize,
        t_start: f64,
        t_prev: f64,
        t_new: f64,
    ) -> Result<f64, HybridError> {
        let system = self.system();
        let guard = &system.transitions()[k].guard;
        let side = self.guards.sides[k];
        let band = self.guards.band(k, t_start);
        let p = &self.problem.params;
        let stepper = &mut *self.stepper;
        let rhs = &mut self.rhs;
        let x_probe = &mut self.states.x_probe;
        let mut evaluations = 0usize;
        // A guard that names the entries it reads costs their interpolation
        // only, not the state's.
        let support = guard.support();
        let mut g_at = |t: f64| {
            evaluations += 1;
            match support {
                Some(read) => stepper.interpolate_entries(rhs, t, read.states, x_probe),
                None => stepper.interpolate(rhs, t, x_probe),
            }
            guard.value(t, x_probe, p)
        };
        // Right after an event the start may sit a rounding error on the far
        // side of zero: bracket from the first point clearly on the recorded
        // side. Eight uniform samples first; if the first of them is already
        // past the crossing, the guard left zero and came back within the
        // first eighth, so search that eighth at offsets growing
        // geometrically from the start.
        // At the step's start the value is known; a bracket narrowed to a
        // later start needs the guard there.
        let g_start = if t_prev == t_start {
            self.guards.start_values[k]
        } else {
            g_at(t_prev)
        };
        let (mut lo, mut hi) = (t_prev, t_new);
        let (mut lo_value, mut hi_value) = (g_start, self.guards.values[k]);
        let mut scale = g_start.abs().max(self.guards.values[k].abs());
        if g_start * side <= band {
            let width = t_new - t_prev;
            let eighth = width / COARSE_SAMPLES as f64;
            let first_coarse_on_side = g_at(t_prev + eighth) * side > band;
            let fine = (1..=BRACKET_DOUBLINGS)
                .rev()
                .map(|i| t_prev + eighth * 0.5f64.powi(i as i32))
                .take(if first_coarse_on_side {
                    0
                } else {
                    BRACKET_DOUBLINGS
                });
            let coarse = (1..=COARSE_SAMPLES).map(|j| {
                if j == COARSE_SAMPLES {
                    t_new
                } else {
                    t_prev + eighth * j as f64
                }
            });
            let mut on_side: Option<(f64, f64)> = None;
            let mut found = None;
            for t in fine.chain(coarse) {
                let g = g_at(t);
                if g * side > band {
                    on_side = Some((t, g));
                } else if let (Some((a, g_a)), true) = (on_side, g * side <= 0.0) {
                    found = Some((a, (t, g), g_a));
                    break;
                }
            }
            match found {
                Some((a, (b, g_b), g_a)) => {
                    lo = a;
                    hi = b;
                    lo_value = g_a;
                    hi_value = g_b;
                    scale = g_a.abs().max(g_b.abs());
                }
                None => {
                    self.trajectory.stats.root_iterations += evaluations;
                    let name = system.transitions()[k].name.clone();
                    return Err(HybridError::EventLocation {
                        transition: name,
                        from: t_prev,
                        to: t_new,
                        reason: "the guard changed side but no bracket was found on the dense output; bound the step with max_step".into(),
                        trajectory: Box::new(self.snapshot()),
                    });
                }
            }
        }
        // Converged when the bracket is within the time tolerance, or when
        // the guard value is down to rounding noise of its size at the
        // bracket's ends (no sample can then tell the root apart).
        let noise = 4.0 * f64::EPSILON * scale;
        let mut convergence = TimeTolerance {
            tolerance: self.time_tolerance,
            noise,
            max_iterations: 200,
        };
        // The Illinois variant of regula falsi (`roots`): superlinear on a
        // smooth guard, and the halved weight of an end that stays moves
        // that end too, so the bracket closes from both sides. Brent's
        // method as `roots` writes it (no minimum step towards the far end)
        // took bisections to close it: 10.5 guard evaluations per
        // thermostat event against 6.3. It evaluates both ends first, whose
        // values are known here.
        let mut g_cached = |t: f64| {
            if t == lo {
                lo_value
            } else if t == hi {
                hi_value
            } else {
                g_at(t)
            }
        };
        let located = find_root_regula_falsi(lo, hi, &mut g_cached, &mut convergence);
        self.trajectory.stats.root_iterations += evaluations;
        located.map_err(|e| {
            let name = system.transitions()[k].name.clone();
            HybridError::EventLocation {
                transition: name,
                from: lo,
                to: hi,
                reason: format!(
                    "root finding failed: {}; the guard is too flat or too noisy there to locate its zero (bound the step, or start further from a tangential contact)",
                    match e {
                        roots::SearchError::NoConvergency => "no convergence",
                        roots::SearchError::NoBracketing => "the guard does not change sign",
                        roots::SearchError::ZeroDerivative => "the guard's slope is zero",
                    }
                ),
                trajectory: Box::new(self.snapshot()),
            }
        })
    }

    /// Fires `transition` at `t` from `self.states.y`, then every guard due at once
    /// after its reset (see the module's event rules). Returns the finished
    /// trajectory when a terminal transition fired.
    fn fire_cascade(
        &mut self,
        t: f64,
        mut transition: usize,
    ) -> Result<Option<Trajectory>, HybridError> {
        let root = self.trajectory.stats.events;
        let mut cascade_of = None;
        loop {
            let from = self.mode();
            let residual = self.fire(t, transition, cascade_of)?;
            let tr = &self.system().transitions()[transition];
            if tr.terminal || self.stops_after(transition) {
                self.rhs.mode = tr.to;
                let y = std::mem::take(&mut self.states.y);
                return Ok(Some(self.finish(t, &y)));
            }
            self.rhs.mode = tr.to;
            match self.arm_guards(t, residual, transition, from == tr.to)? {
                Some((next, pushed_past)) => {
                    transition = next;
                    // A guard pushed past zero fires because of the reset, at
                    // the time of the event that started the cascade.
                    cascade_of = if pushed_past {
                        Some(cascade_of.unwrap_or(root))
                    } else {
                        None
                    };
                }
                None => {
                    self.restart(t)?;
                    return Ok(None);
                }
            }
        }
    }

    /// Whether the firing of `transition` just recorded is the one
    /// [`Problem::stop_after`] ends the run at.
    /// Counts the firing (whatever the record keeps).
    fn stops_after(&mut self, transition: usize) -> bool {
        match self.problem.stop_after {
            Some(stop) if stop.transition == transition => {
                self.stop_firings += 1;
                self.stop_firings == stop.firings
            }
            _ => false,
        }
    }

    /// Applies transition `k` at `t` to `self.states.y` (state and extras). Returns
    /// the rounding band within which a guard counts as sitting on zero
    /// after the reset: the located event's residual and the uncertainty of
    /// its time, never the overshoot of a guard pushed past zero (an event
    /// of a cascade, `cascade_of` set, whose guard is not checked for
    /// crossing direction or transversality: it did not cross).
    fn fire(&mut self, t: f64, k: usize, cascade_of: Option<usize>) -> Result<f64, HybridError> {
        let system = self.system();
        let n = self.rhs.n;
        let p = &self.problem.params;
        let transition = &system.transitions()[k];
        let from = self.mode();
        let x_minus = &self.states.y[..n];
        let (crossing, gx_norm) = self.geometry.crossing(system, p, k, t, x_minus);
        self.extra_rhs_evaluations += 1;
        let (guard_rate, gt) = (crossing.guard_rate, crossing.guard.t);
        let rate_norm = crossing
            .flow_before
            .iter()
            .map(|v| v * v)
            .sum::<f64>()
            .sqrt();
        let g_minus = transition.guard.value(t, x_minus, p);
        let scale = gx_norm * rate_norm + gt.abs();
        let transversality = if scale > 0.0 {
            guard_rate.abs() / scale
        } else {
            0.0
        };
        let direction = transition.guard.direction();
        let against = match direction {
            Direction::Falling => guard_rate > 0.0,
            Direction::Rising => guard_rate < 0.0,
            Direction::Either => false,
        };
        if against && cascade_of.is_none() {
            return Err(HybridError::EventLocation {
                transition: transition.name.clone(),
                from: t,
                to: t,
                reason: format!(
                    "at the event the guard's rate {guard_rate:e} points against its direction ({direction:?}): the guard is moving back out of its crossing, so this is no {direction:?} crossing (after a reset, a guard left beyond zero and moving away from it causes this)"
                ),
                trajectory: Box::new(self.snapshot()),
            });
        }
        let transversal = transversality >= self.problem.events.grazing_threshold;
        if cascade_of.is_none() && (!transversal || guard_rate == 0.0) {
            return Err(HybridError::Grazing {
                transition: transition.name.clone(),
                time: t,
                guard_rate,
                transversality,
                threshold: self.problem.events.grazing_threshold,
                trajectory: Box::new(self.snapshot()),
            });
        }
        let (y_minus, y_after) = (&self.states.y, &mut self.states.y_after);
        transition
            .reset
            .apply(t, &y_minus[..n], p, &mut y_after[..n]);
        if let Some(i) = y_after[..n].iter().position(|v| !v.is_finite()) {
            let what = format!(
                "state '{}' after the reset of transition '{}'",
                system.state_names()[i],
                transition.name
            );
            return Err(self.non_finite(what, t));
        }
        let index = self.trajectory.stats.events;
        let (x_after, extra_after) = y_after.split_at_mut(n);
        let geometry = if self.wants_geometry {
            let event = EventAt {
                transition: k,
                time: t,
                state_before: &y_minus[..n],
                state_after: x_after,
                cascade_of,
            };
            self.extra_rhs_evaluations += usize::from(!transition.terminal);
            Some(self.geometry.complete(system, p, event))
        } else {
            None
        };
        let jump = EventJump {
            index,
            transition: k,
            time: t,
            from_mode: from,
            to_mode: transition.to,
            state_before: &y_minus[..n],
            state_after: x_after,
            terminal: transition.terminal,
            cascade_of,
            geometry,
        };
        let context = RunContext { system, params: p };
        self.rhs
            .extra
            .jump(context, &jump, &y_minus[n..], extra_after)?;
        self.observer.event(context, &jump)?;
        self.close_segment(t);
        let recording = self.problem.events.record;
        if recording.keeps_any() {
            self.trajectory.events.push(EventRecord {
                index,
                time: t,
                transition: k,
                from_mode: from,
                to_mode: transition.to,
                guard_rate,
                terminal: transition.terminal,
                cascade_of,
            });
            let states = &mut self.trajectory.event_states;
            // Room for as many events as the records have: the states grow
            // in step with them, not by doubling on their own.
            let room = self.trajectory.events.capacity() * 2 * n;
            if states.capacity() < room {
                states.reserve_exact(room - states.len());
            }
            states.extend_from_slice(&self.states.y[..n]);
            states.extend_from_slice(&self.states.y_after[..n]);
            trim_events(recording, &mut self.trajectory, false);
        }
        self.trajectory.stats.events += 1;
        std::mem::swap(&mut self.states.y, &mut self.states.y_after);
        self.check_zeno(t, cascade_of)?;
        let x_scale: f64 = self.states.y[..n].iter().map(|v| v * v).sum::<f64>().sqrt();
        let location_residual = if cascade_of.is_none() {
            2.0 * g_minus.abs()
        } else {
            0.0
        };
        Ok(location_residual
            + 4.0 * guard_rate.abs() * self.time_tolerance
            + 8.0 * f64::EPSILON * gx_norm * x_scale)
    }

    /// Sets each guard's side in the new mode at `t` from `self.states.y`; returns a
    /// transition that must fire at once, if any (the first declared), and
    /// whether the reset pushed its guard strictly past zero (a cascade)
    /// rather than leaving it on zero (a simultaneous crossing).
    ///
    /// A guard within `band` of zero counts as sitting on zero and takes the
    /// side its rate points to. The transition that just `fired` is then
    /// armed on that side (it has had its event; an identity reset on a
    /// threshold lets the state run on through). In the same mode
    /// (`same_mode`), any other guard fires when it went from the side it
    /// was last seen on to zero or beyond in its direction; after a mode
    /// switch, a guard of the new mode fires when it starts on zero heading
    /// into its crossing, or beyond zero and not heading back (one heading
    /// back is [disarmed](Self::disarmed)).
    fn arm_guards(
        &mut self,
        t: f64,
        band: f64,
        fired: usize,
        same_mode: bool,
    ) -> Result<Option<(usize, bool)>, HybridError> {
        let system = self.system();
        let n = self.rhs.n;
        let p = &self.problem.params;
        let mode = self.mode();
        let x = &self.states.y[..n];
        let mut rate_ready = false;
        for &k in &system.modes()[mode].outgoing {
            let guard = &system.transitions()[k].guard;
            let g = self.checked_guard(k, t, x)?;
            let at_zero = g.abs() <= band;
            let direction = guard.direction();
            let beyond_after_switch = !same_mode && !at_zero && direction.violated_at_start(g);
            let rate = if at_zero || beyond_after_switch {
                if !rate_ready {
                    system.modes()[mode]
                        .flow
                        .rate(t, x, p, &mut self.states.rate);
                    self.extra_rhs_evaluations += 1;
                    rate_ready = true;
                }
                guard_rate_at(
                    &**guard,
                    t,
                    x,
                    p,
                    &self.states.rate,
                    &mut self.guard_partials,
                )
            } else {
                0.0
            };
            let heading = if at_zero { rate } else { g };
            let due = if k == fired && at_zero {
                false
            } else if same_mode {
                direction.crossed(self.guards.sides[k], heading)
            } else if beyond_after_switch {
                // Heading back, it is disarmed until it is back on its side.
                !direction.heads_back(rate)
            } else {
                direction.violated_at_start(heading)
            };
            if due {
                return Ok(Some((k, !at_zero)));
            }
            self.guards
                .take_side(k, t, heading, if at_zero { band } else { 0.0 });
            self.guards.values[k] = g;
        }
        Ok(None)
    }

    /// Zeno detection after an event at `t` ([`ZenoWatch`]).
    fn check_zeno(&mut self, t: f64, cascade_of: Option<usize>) -> Result<(), HybridError> {
        let count = self.trajectory.stats.events;
        match self.zeno.after_event(self.problem, count, t, cascade_of) {
            None => Ok(()),
            Some(reason) => Err(HybridError::Zeno {
                reason,
                last_event_time: t,
                trajectory: Box::new(self.snapshot_at(t, &self.states.y[..self.rhs.n])),
            }),
        }
    }

    fn close_segment(&mut self, t: f64) {
        let recording = self.problem.events.record;
        if recording.keeps_any() {
            self.trajectory.segments.push(Segment {
                mode: self.mode(),
                start_time: self.segment_start,
                end_time: t,
                steps: self.segment_steps,
            });
            recording.trim(&mut self.trajectory.segments, false);
        }
        self.segment_start = t;
        self.segment_steps = 0;
    }

    fn stats(&self) -> SolverStats {
        let counters = self.stepper.counters();
        SolverStats {
            rhs_evaluations: counters.rhs_evaluations + self.extra_rhs_evaluations,
            rejected_steps: counters.rejected_steps,
            ..self.trajectory.stats
        }
    }

    /// The trajectory so far, ending at the stepper's current point.
    fn snapshot(&self) -> Trajectory {
        let x = self.stepper.state()[..self.rhs.n].to_vec();
        self.snapshot_at(self.stepper.time(), &x)
    }

    fn snapshot_at(&self, t: f64, x: &[f64]) -> Trajectory {
        let mut trajectory = self.trajectory.clone();
        trajectory.final_time = t;
        trajectory.final_state = x.to_vec();
        trajectory.final_mode = self.mode();
        trajectory.stats = self.stats();
        trajectory
    }

    fn finish(&mut self, t: f64, y: &[f64]) -> Trajectory {
        self.close_segment(t);
        self.observer.finished(self.rhs.context(), t, y);
        let stats = self.stats();
        let final_mode = self.mode();
        let final_state = self.spare.copy_of(&y[..self.rhs.n]);
        let recording = self.problem.events.record;
        recording.trim(&mut self.trajectory.segments, true);
        trim_events(recording, &mut self.trajectory, true);
        Trajectory {
            segments: std::mem::take(&mut self.trajectory.segments),
            events: std::mem::take(&mut self.trajectory.events),
            event_states: std::mem::take(&mut self.trajectory.event_states),
            observations: std::mem::take(&mut self.trajectory.observations),
            initial_state: std::mem::take(&mut self.trajectory.initial_state),
            initial_time: self.trajectory.initial_time,
            final_time: t,
            final_state,
            final_mode,
            stats,
        }
    }

    /// Transition `k`'s guard at `(t, x)`, or the error naming it when that
    /// is not finite.
    fn checked_guard(&self, k: usize, t: f64, x: &[f64]) -> Result<f64, HybridError> {
        let transition = &self.system().transitions()[k];
        let g = transition.guard.value(t, x, &self.problem.params);
        if g.is_finite() {
            Ok(g)
        } else {
            let what = format!("guard value of transition '{}' (= {g})", transition.name);
            Err(self.non_finite(what, t))
        }
    }

    fn non_finite(&self, what: String, time: f64) -> HybridError {
        HybridError::NonFinite {
            what,
            time,
            trajectory: Some(Box::new(self.snapshot())),
        }
    }

    fn step_failure(&self, failure: StepFailure) -> HybridError {
        match failure {
            StepFailure::Underflow {
                time,
                step,
                min_step,
            } => HybridError::StepSizeUnderflow {
                time,
                step,
                min_step,
                trajectory: Box::new(self.snapshot()),
            },
            StepFailure::NonFinite { time } => self.non_finite(
                "value during a step (the state, its rate or a sensitivity carried with it)"
                    .to_string(),
                time,
            ),
            StepFailure::Solver(message) => HybridError::Unsupported(message),
        }
    }
}

#[cfg(test)]
mod tests {
    //! The integrator on a ball dropped from rest (h0 = 1) under g = 9.81,
    //! bouncing with restitution e = 0.8. References derived by hand: impacts
    //! at `t1 = sqrt(2 h0 / g)` and `t2 = t1 (1 + 2 e)`, impact speed
    //! `w = g t1`, rebound speed `e w`.
    use super::*;
    use crate::problem::{EventOptions, SolverChoice};
    use ia_core::{Autodiff, FlowFn, FromMode, GuardFn, ResetFn, Scalar, ToMode};

    const G: f64 = 9.81;
    const E: f64 = 0.8;

    struct Fall;
    impl FlowFn for Fall {
        fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], d: &mut [S]) {
            d[0] = x[1];
            d[1] = -p[0];
        }
    }
    struct Floor;
    impl GuardFn for Floor {
        fn direction(&self) -> Direction {
            Direction::Falling
        }
        fn value<S: Scalar>(&self, _t: S, x: &[S], _p: &[S]) -> S {
            x[0]
        }
    }
    struct Bounce;
    impl ResetFn for Bounce {
        fn apply<S: Scalar>(&self, _t: S, x: &[S], p: &[S], a: &mut [S]) {
            a[0] = x[0];
            a[1] = -p[1] * x[1];
        }
    }

    fn ball(terminal: bool) -> HybridSystem {
        let builder =
            HybridSystem::builder(&["h", "v"], &["g", "e"]).mode("flight", Autodiff(Fall));
        let (from, to) = (FromMode("flight"), ToMode("flight"));
        let builder = if terminal {
            builder.terminal_transition("land", from, to, Autodiff(Floor), Autodiff(Bounce))
        } else {
            builder.transition("bounce", from, to, Autodiff(Floor), Autodiff(Bounce))
        };
        builder.build().unwrap()
    }

    fn t1() -> f64 {
        (2.0f64 / G).sqrt()
    }

    #[test]
    fn locates_the_impacts_of_a_bouncing_ball() {
        let system = ball(false);
        let problem = Problem::new(&system, vec![1.0, 0.0], vec![G, E], 1.5)
            .with_solver(SolverChoice::dopri5(1e-12));
        let trajectory = simulate(&problem).unwrap();
        let times = trajectory.event_times();
        assert_eq!(times.len(), 2, "{times:?}");
        assert!((times[0] - t1()).abs() < 1e-10, "{}", times[0]);
        assert!(
            (times[1] - t1() * (1.0 + 2.0 * E)).abs() < 1e-9,
            "{}",
            times[1]
        );
        let first = &trajectory.events[0];
        let w = G * t1();
        let (before, after) = (trajectory.state_before(0), trajectory.state_after(0));
        assert!(before[0].abs() < 1e-10);
        assert!((before[1] + w).abs() < 1e-9);
        assert!((after[1] - E * w).abs() < 1e-9);
        assert!(first.guard_rate < 0.0);
        assert_eq!(trajectory.segments.len(), 3);
    }

    /// Issue 9: equal gaps counted towards Zeno, so an elastic ball (e = 1,
    /// impacts every 2 t1 = 0.903 s, evenly spaced by construction) whose
    /// gaps fell below `zeno_separation * span` ended in a false Zeno error
    /// once rounding made three gaps in a row non-increasing. Here
    /// `zeno_separation * span = 1 s` exceeds the gap, as the default
    /// `1e-5` does on a run of 1e5 s.
    #[test]
    fn evenly_spaced_events_are_not_zeno() {
        let system = ball(false);
        let t_end = 100.0;
        let problem = Problem::new(&system, vec![1.0, 0.0], vec![G, 1.0], t_end)
            .with_solver(SolverChoice::dopri5(1e-12))
            .with_event_options(EventOptions {
                zeno_separation: 0.01,
                ..EventOptions::default()
            });
        let trajectory = simulate(&problem).unwrap();
        assert_eq!(trajectory.final_time, t_end);
        // Impacts at t1 (1 + 2k): floor((t_end / t1 - 1) / 2) + 1 of them.
        let expected = ((t_end / t1() - 1.0) / 2.0).floor() as usize + 1;
        assert_eq!(trajectory.events.len(), expected);
        let last = trajectory.events.last().unwrap().time;
        let exact = t1() * (1.0 + 2.0 * (expected - 1) as f64);
        assert!((last - exact).abs() < 1e-8, "{last} vs {exact}");
    }

    /// The same detector still catches accumulating impacts (e = 0.5, rest
    /// at 3 t1, from t1 (1 + 2e / (1 - e))) under the same options.
    #[test]
    fn accumulating_events_are_still_zeno_with_a_wide_separation() {
        let system = ball(false);
        let problem = Problem::new(&system, vec![1.0, 0.0], vec![G, 0.5], 100.0)
            .with_solver(SolverChoice::dopri5(1e-12))
            .with_event_options(EventOptions {
                zeno_separation: 0.01,
                ..EventOptions::default()
            });
        let err = simulate(&problem).unwrap_err();
        assert_eq!(err.kind(), "zeno", "{err}");
        let HybridError::Zeno {
            last_event_time, ..
        } = err
        else {
            unreachable!()
        };
        assert!(last_event_time < 3.0 * t1(), "{last_event_time}");
    }

    /// The step limit: DOPRI5 with steps of at most 1e-3 needs more than 100
    /// steps to reach the first impact (t = 0.45), so `max_steps = 100` stops
    /// a run to t = 1 before it, with the trajectory so far. (A fixed step
    /// too small for the limit is refused up front, `Problem::validate`.)
    #[test]
    fn the_step_limit_ends_the_run_with_the_trajectory_so_far() {
        let system = ball(false);
        let options = |max_steps| EventOptions {
            max_steps,
            ..EventOptions::default()
        };
        let problem = Problem::new(&system, vec![1.0, 0.0], vec![G, E], 1.0)
            .with_solver(SolverChoice::Dopri5 {
                rtol: 1e-10,
                atol: 1e-10,
                max_step: Some(1e-3),
            })
            .with_event_options(options(100));
        let err = simulate(&problem).unwrap_err();
        assert_eq!(err.kind(), "step_limit", "{err}");
        let text = err.to_string();
        assert!(text.contains("max_steps = 100"), "{text}");
        assert!(text.contains("t_end = 1"), "{text}");
        let trajectory = err.trajectory().expect("the run so far");
        assert_eq!(trajectory.stats.steps, 100);
        let t = trajectory.final_time;
        assert!(t > 0.0 && t <= 0.1 + 1e-12, "{t}");
        // h = 1 - g t^2 / 2 before the first impact (DOPRI5 is exact on a
        // parabola).
        assert!((trajectory.final_state[0] - (1.0 - G * t * t / 2.0)).abs() < 1e-12);
        // A limit the run stays within changes nothing.
        let problem = problem.with_event_options(options(2000));
        let run = simulate(&problem).unwrap();
        assert_eq!(run.final_time, 1.0);
        assert!(run.stats.steps <= 2000);
        assert_eq!(EventOptions::default().max_steps, crate::DEFAULT_MAX_STEPS);
    }

    #[test]
    fn a_terminal_transition_ends_the_run_at_the_event() {
        let system = ball(true);
        let problem = Problem::new(&system, vec![1.0, 0.0], vec![G, E], 5.0)
            .with_solver(SolverChoice::dopri5(1e-12));
        let trajectory = simulate(&problem).unwrap();
        assert_eq!(trajectory.events.len(), 1);
        assert!(trajectory.events[0].terminal);
        assert!((trajectory.final_time - t1()).abs() < 1e-10);
        // The reset is applied to the final state.
        assert!((trajectory.final_state[1] - E * G * t1()).abs() < 1e-9);
    }

    /// Reference: the ball from rest at h0 = 1 lands at t1 = sqrt(2 h0 / g),
    /// then bounces every 2 e g t1 / g = 2 e t1.
    #[test]
    fn a_run_stops_after_the_chosen_firing_or_at_t_end() {
        let system = ball(false);
        let run = |t_end: f64, firings: usize| {
            let problem = Problem::new(&system, vec![1.0, 0.0], vec![G, E], t_end)
                .with_solver(SolverChoice::dopri5(1e-12))
                .with_stop_after("bounce", firings)
                .unwrap();
            simulate(&problem).unwrap()
        };
        let trajectory = run(5.0, 2);
        assert_eq!(trajectory.events.len(), 2);
        assert!(!trajectory.events[1].terminal);
        let t2 = t1() * (1.0 + 2.0 * E);
        assert!((trajectory.final_time - t2).abs() < 1e-10);
        assert_eq!(trajectory.final_state, trajectory.state_after(1));
        // Not reached by t_end: the run ends at t_end as usual.
        let trajectory = run(1.2 * t1(), 2);
        assert_eq!(trajectory.events.len(), 1);
        assert_eq!(trajectory.final_time, 1.2 * t1());
        let e = Problem::new(&system, vec![1.0, 0.0], vec![G, E], 1.0)
            .with_stop_after("land", 1)
            .unwrap_err();
        assert!(e.to_string().contains("bounce"), "{e}");
    }

    #[test]
    fn a_start_band_makes_the_start_a_state_right_after_an_event() {
        let system = ball(false);
        // 1e-9 below the floor, moving up: inside the band, it starts.
        let up = Problem::new(&system, vec![-1e-9, 3.0], vec![G, E], 1.0)
            .with_solver(SolverChoice::dopri5(1e-12));
        assert!(matches!(
            simulate(&up),
            Err(HybridError::GuardViolatedAtStart { .. })
        ));
        let trajectory = simulate(&up.clone().with_start_band(1e-6)).unwrap();
        assert!((trajectory.events[0].time - 6.0 / G).abs() < 1e-8);
        // Beyond the band moving up: disarmed, as after a mode switch; it
        // bounces when it falls through the floor again (by hand, the
        // falling root of -1e-3 + 3 t - G t^2 / 2).
        let below = Problem::new(&system, vec![-1e-3, 3.0], vec![G, E], 1.0)
            .with_solver(SolverChoice::dopri5(1e-12))
            .with_start_band(1e-6);
        let trajectory = simulate(&below).unwrap();
        let falling_root = (3.0 + (9.0 - 2.0 * G * 1e-3f64).sqrt()) / G;
        assert!((trajectory.events[0].time - falling_root).abs() < 1e-8);
        // Heading into the floor, on it or beyond it: refused.
        for (h, v) in [(0.0, -3.0), (-1e-3, -3.0)] {
            let problem = Problem::new(&system, vec![h, v], vec![G, E], 1.0).with_start_band(1e-6);
            assert!(matches!(
                simulate(&problem),
                Err(HybridError::GuardViolatedAtStart { .. })
            ));
        }
        let bad = Problem::new(&system, vec![1.0, 0.0], vec![G, E], 1.0).with_start_band(-1.0);
        assert!(simulate(&bad)
            .unwrap_err()
            .to_string()
            .contains("start_band"));
    }

    /// Counts what the integrator shows an observer.
    #[derive(Default)]
    struct Counter {
        steps: usize,
        jumps: Vec<(usize, f64)>,
        observed: Vec<f64>,
        finished_at: Option<f64>,
    }
    impl Observer for Counter {
        fn event(&mut self, run: RunContext<'_>, jump: &EventJump<'_>) -> Result<(), HybridError> {
            assert_eq!(run.params, [G, E]);
            self.jumps.push((jump.transition, jump.time));
            Ok(())
        }
        fn step_taken(
            &mut self,
            _run: RunContext<'_>,
            _mode: usize,
            _t0: f64,
            h: f64,
            _y0: &[f64],
        ) {
            assert!(h > 0.0);
            self.steps += 1;
        }
        fn observed(&mut self, _run: RunContext<'_>, _index: usize, time: f64, _y: &[f64]) {
            self.observed.push(time);
        }
        fn finished(&mut self, _run: RunContext<'_>, time: f64, _y: &[f64]) {
            self.finished_at = Some(time);
        }
    }

    #[test]
    fn an_observer_sees_every_step_event_and_observation() {
        let system = ball(false);
        let problem = Problem::new(&system, vec![1.0, 0.0], vec![G, E], 1.0)
            .with_solver(SolverChoice::Rk4 { dt: 0.01 })
            .with_observations(vec![0.25, 0.75]);
        // Two observers at once see the same run.
        let mut counters = (Counter::default(), Counter::default());
        let trajectory = run(&problem, &mut NoExtraState, &mut counters).unwrap();
        assert_eq!(counters.0.jumps, counters.1.jumps);
        let counter = counters.0;
        let steps: usize = trajectory.segments.iter().map(|s| s.steps).sum();
        assert_eq!(counter.steps, steps);
        assert_eq!(counter.jumps, vec![(0, trajectory.events[0].time)]);
        assert_eq!(counter.observed, [0.25, 0.75]);
        assert_eq!(counter.finished_at, Some(1.0));
        // Before the impact, h(0.25) = 1 - g 0.25^2 / 2 (RK4 is exact on a
        // quadratic).
        let h = trajectory.observations[0].state[0];
        assert!((h - (1.0 - G * 0.0625 / 2.0)).abs() < 1e-12, "{h}");
    }

    /// A ceiling at `h = c`: `c - h`, falling.
    struct Ceiling;
    impl GuardFn for Ceiling {
        fn direction(&self) -> Direction {
            Direction::Falling
        }
        fn value<S: Scalar>(&self, _t: S, x: &[S], p: &[S]) -> S {
            -x[0] + p[1]
        }
    }
    /// The ball bounces off the ceiling: `v <- -v`.
    struct Reflect;
    impl ResetFn for Reflect {
        fn apply<S: Scalar>(&self, _t: S, x: &[S], _p: &[S], a: &mut [S]) {
            a[0] = x[0];
            a[1] = -x[1];
        }
    }

    /// Issue 10: a guard that crosses zero and comes back within one step
    /// was not seen, so forward sensitivities (small steps) and the adjoint
    /// (large steps) disagreed on the events. One RK4 step of 0.2 s covers
    /// the whole flight of a ball thrown up at 1 m/s past a ceiling 1 mm
    /// below its peak; the crossing is found and located. Reference: the
    /// closed form `t* = (v0 - sqrt(v0^2 - 2 g c)) / g` (RK4 and its cubic
    /// Hermite dense output are exact on this quadratic flight).
    #[test]
    fn a_crossing_inside_one_step_is_found() {
        let sys = HybridSystem::builder(&["h", "v"], &["g", "c"])
            .mode("flight", Autodiff(Fall))
            .transition(
                "ceiling",
                FromMode("flight"),
                ToMode("flight"),
                Autodiff(Ceiling),
                Autodiff(Reflect),
            )
            .build()
            .unwrap();
        let (g, v0): (f64, f64) = (9.81, 1.0);
        let c = v0 * v0 / (2.0 * g) - 1e-3;
        let reference = (v0 - (v0 * v0 - 2.0 * g * c).sqrt()) / g;
        for solver in [SolverChoice::Rk4 { dt: 0.2 }, SolverChoice::dopri5(1e-10)] {
            let problem =
                Problem::new(&sys, vec![0.0, v0], vec![g, c], 0.2).with_solver(solver.clone());
            let run = crate::simulate(&problem).unwrap();
            assert_eq!(run.events.len(), 1, "{solver:?}");
            assert!(
                (run.events[0].time - reference).abs() < 1e-9,
                "{solver:?}: {} vs {reference}",
                run.events[0].time
            );
        }
        // A ceiling above the peak is never reached.
        let problem = Problem::new(&sys, vec![0.0, v0], vec![g, c + 2e-3], 0.2)
            .with_solver(SolverChoice::Rk4 { dt: 0.2 });
        assert!(crate::simulate(&problem).unwrap().events.is_empty());
    }
}
