//! The run vocabulary every engine shares, and the one statement of the
//! event rules.
//!
//! The vocabulary: what an event looks like to the sensitivity layer
//! ([`EventJump`], with its geometry), what every callback is told of the
//! run ([`RunContext`]), the components carried along with the state
//! ([`ExtraState`]) and what sees a run without changing it ([`Observer`]).
//! Every engine (the Runge-Kutta driver and the exact event-driven solver,
//! [`crate::exact`]) speaks it, and keeps its records through one recorder,
//! so a run's records, observations, Zeno detection, `stop_after` and
//! progress are the same whichever engine ran it.
//!
//! # Event rules
//!
//! These are the rules of every engine, in the order they apply; the
//! documentation of the engines, `docs/method.md` and the other crates refer
//! to them by number. Rules 1 to 3 (detection, location, truncation) are how
//! the Runge-Kutta engine finds a crossing on its steps. The exact solver
//! ([`crate::exact`]) needs none of them: over a stretch between events each
//! guard's component is monotone, so it predicts each crossing time in
//! closed form, exact up to rounding and with no time tolerance, and a
//! disarmed guard cannot come back and cross before the next event. It
//! predicts a crossing only where the component's rate there points in the
//! guard's direction (rule 5 by construction), does not test grazing
//! (rule 6), and after an event a guard sits on zero only when it is zero (rule 7's band
//! is empty). The other rules hold for both engines.
//!
//! 1. **Detection.** After every accepted step, each guard of the current mode is
//!    evaluated at the step's end. A transition fires when its guard went from the
//!    side it was last seen on to zero or beyond, in its declared direction (zero
//!    itself reached exactly at the end of the run is not an event: the run ends
//!    first, in every engine). A
//!    guard that crosses zero and back inside one step is found from its rate:
//!    when it heads towards zero at the step's start and away from it at the
//!    step's end (told by evaluating every guard on the two end states pushed
//!    `1e-6` of the step along the flow, formed once per step, so the test costs
//!    two guard evaluations per guard), the guard's extremum inside the step is
//!    searched on the dense output (golden section), and a crossing there ends
//!    the bracket of rule 2 and fires like any other (or is reported as
//!    grazing). So the events seen do not
//!    depend on the step sizes, and forward sensitivities and the adjoint, which
//!    step differently, run the same checks. A guard with two extrema inside one
//!    step, or a dip shallower than the dense output's accuracy, is still not
//!    seen: bound the step with `max_step` where that can happen.
//! 2. **Location.** Only the earliest crossing of the step is located. When
//!    several guards crossed, the bracket is halved with one interpolated state
//!    per trial time on which every remaining guard is evaluated, keeping those
//!    already past zero, until one is left (or the bracket is within the time
//!    tolerance: then the first declared of those left fires, rule 4). No other
//!    guard is located, on this step or a later one. The crossing time is then
//!    found on the stepper's dense output, to the problem's time tolerance
//!    `EventOptions::time_tolerance`, by default `1e-13 * max(1, t_end - t0)`
//!    (or where the guard is within rounding noise of zero), by a bracketed
//!    Muller iteration: each trial time is the root inside the bracket of the
//!    parabola through the last three points (exact on a parabola, as a
//!    ball's flight is), a step not under half the one before last replaced
//!    by a bisection (Brent's safeguard), every trial time kept half the
//!    tolerance from the bracket's ends so that the bracket closes (at most
//!    200 evaluations). Right after an event the step's start sits on zero,
//!    within its rounding band (maybe a rounding error on the far side):
//!    the bracket then starts at the first eighth of the step when the guard
//!    is clearly on its side there (the start is the iteration's third
//!    point), and otherwise at the first point on its side found at offsets
//!    growing geometrically from the start within that eighth (60 halvings)
//!    and then at the other eighths, followed by one past zero. A start past
//!    zero by rounding alone with no event's band (a step that ended on the
//!    guard's zero, where the band of the event before hid the crossing) is
//!    the crossing when no point on the side is found.
//! 3. **Truncation.** The step is then *redone* from its start to exactly `t*`,
//!    so the state `x-` before the reset is a Runge-Kutta value, not an
//!    interpolant, and every step on the record (and on the adjoint's tape) is one
//!    genuine Runge-Kutta step. Where the dense output is less accurate than
//!    the step, `t*` is then refined on the step itself: Newton on the
//!    step's end time (the guard's rate along the flow at the end state),
//!    the step redone to each new end, until the guard vanishes at the
//!    step's own end state. The implicit methods always refine; DOPRI5 and
//!    DOP853 when the guard's residual at the redone step's end exceeds what
//!    their error control allows the state, `|g| > |g_x| (atol + rtol
//!    max|x_i|)` over the guard's support.
//! 4. **Simultaneous events and cascades.** When several guards cross in one
//!    step, the earliest fires; guards that cross within the time tolerance of
//!    each other count as simultaneous, and the one declared first (in the
//!    system's transition order) fires first. After its reset the guards are
//!    re-armed (rule 7), and a guard fires at once, at the same time, with its
//!    own reset, if and only if:
//!    * in the same mode (a transition back to its own mode), the reset moved it
//!      from the side it was last seen on to zero or beyond in its direction
//!      (`Direction::crossed(side, g(t*, x+))`); a guard left short of zero does
//!      not fire, however close (a neuron kicked from 0.96 to 0.99 below a
//!      threshold of 1 stays quiet);
//!    * after a switch to another mode, it starts on zero heading into its
//!      crossing, or beyond zero and not heading back to its side (its rate
//!      `gdot` zero or pointing in its direction).
//!
//!    A guard of the new mode beyond zero and heading back has had no
//!    crossing: it is **disarmed**. It takes the side it is on, and it fires at
//!    its first crossing in its direction after it is back on the side it
//!    crosses from. A spring leg that lifts off below its touchdown height
//!    touches down when the mass falls through that height again, not at
//!    once with the leg compressed. Its return is sought like a dip (rule 2):
//!    when it comes back and crosses again inside one step, the step is
//!    redone to end where it is back (a truncation as in rule 3, with no event
//!    and no reset), and the crossing is found on the next step. The exact
//!    solver needs no search: there the guard's component is monotone over a
//!    stretch, so a disarmed guard cannot cross again before the next event.
//!
//!    Of several guards due, the first declared fires first, and the rule is
//!    applied again after its reset, until none is due. A guard that was *on*
//!    zero (within the rounding band of rule 7) crossed at this instant on its
//!    own: it is a simultaneous crossing and keeps its own saltation. A guard a
//!    reset pushed *strictly past* zero did not cross: it is an event of the
//!    **cascade** of the located event that started it (`EventRecord::cascade_of`).
//!    Its time is that event's time and moves with it, its own guard plays no
//!    part in the sensitivities, and the direction and grazing checks (rules 5
//!    and 6) do not apply to it. The sensitivities of a cascade are those of the
//!    composite jump at the first event's time (section 4). Its zero gaps are not
//!    counted by the Zeno rule's gap test; a cascade longer than four events per
//!    transition of the system is reported as Zeno (the resets keep pushing
//!    guards past zero).
//! 5. **Direction check.** At the located time the guard's rate
//!    `gdot = g_x f- + g_t` must point in the guard's direction (negative for a
//!    falling guard, positive for a rising one); a rate pointing against it is
//!    reported as an event-location error, never applied.
//! 6. **Grazing.** With `f- = f_q(t*, x-, p)`, the event's *transversality* is
//!    the cosine between the flow and the guard's normal in `(t, x)`,
//!
//!    ```text
//!    |gdot| / (|g_x| |f-| + |g_t|)
//!    ```
//!
//!    If it is below `EventOptions::grazing_threshold` (default `1e-7`), or
//!    `gdot = 0`, the run stops with `HybridError::Grazing` (kind `"grazing"`),
//!    carrying the trajectory so far: the event-time sensitivity `1/gdot` is
//!    unbounded there, so no number is returned.
//! 7. **Reset and restart arming.** The reset is applied, the event recorded
//!    (`EventRecord`: time, transition, modes, `x-`, `x+`, `gdot`), and the
//!    run restarts in the new mode. Every guard of the new mode is re-evaluated
//!    at `(t*, x+)`. A guard within the location uncertainty of zero,
//!
//!    ```text
//!    residual = 2 |g(t*, x-)| + 4 |gdot| time_tolerance + 8 eps |g_x| |x+|,
//!    ```
//!
//!    of the event that just fired counts as sitting on zero and takes the side
//!    its rate points to. For an event of a cascade the first term is left out:
//!    `g(t*, x-)` is then how far a kick overshot, not a location residual, and
//!    the band comes from the tolerances alone. The
//!    transition that just fired is *armed* on that side (a threshold crossed with
//!    an identity reset is not fired again until it is back on the side it
//!    crosses from; a return and a new crossing inside one step are found as a
//!    disarmed guard's are, rule 4); which other guards fire at once is
//!    rule 4. For a guard left on
//!    zero, values within `residual` of zero are treated as rounding noise, not
//!    crossings, until `t* + 10 residual / |rate|`, by which time the guard,
//!    leaving zero at its rate, has cleared that band.
//! 8. **Zeno.** An accumulation of events is reported as `HybridError::Zeno`
//!    (kind `"zeno"`) with the trajectory so far, never looped on: either more
//!    than `max_events` events (default 10 000), or `zeno_run` (default 3)
//!    consecutive gaps between firings *of one transition*, each shorter than
//!    `zeno_separation * (t_end - t0)` (default `1e-5` of the span) and each
//!    after the first shrinking towards an accumulation point before `t_end`
//!    (ratio `r` to that transition's gap before below one, and the geometric
//!    continuation `gap r / (1 - r)` ending before `t_end`). Infinitely many
//!    events in finite time make one of the finitely many transitions fire
//!    infinitely often, so reading the gaps per transition finds every
//!    accumulation (in a chattering cycle of several transitions each of them
//!    accumulates), while distinct transitions firing close together, with
//!    gaps however short and shrinking (neurons of a network spiking
//!    microseconds apart), are no evidence of one. A bouncing ball with
//!    restitution below one trips the second rule on its way to the
//!    accumulation point; evenly spaced firings (an elastic ball, `r = 1` up
//!    to rounding) never do, however short their gaps. A run is also bounded by
//!    `max_steps` accepted steps (default 10^7), past which it ends in
//!    `HybridError::StepLimit` (kind `"step_limit"`) with the trajectory so far;
//!    a fixed step (`rk4`'s `dt`) that cannot reach `t_end` within `max_steps`
//!    is refused before the run. The Zeno rules read the last three firing
//!    times of each transition, kept apart from the record (a fixed ring per
//!    transition, allocated with the run's workspace), so they hold whatever
//!    the record keeps.
//! 9. **Start.** A guard already at or beyond zero in its direction at `t0` is an
//!    error (`guard_violated_at_start`): start strictly on the side it crosses
//!    from. A positive `Problem::start_band` declares the start a state right
//!    after an event (as a periodic orbit's section does): a guard within the
//!    band takes the side its rate points to (rule 7), and one beyond zero
//!    heading back is disarmed (rule 4); one beyond zero and not heading back
//!    is still an error. Non-finite inputs, guard values or states are errors naming the entry.
//! 10. **Records.** `EventOptions::record` (`"record": {"events": ...}` in a
//!     scenario) keeps every event and segment (the default), none, or the last
//!     `K`; a kept event carries its index in the whole run. The sensitivity
//!     layers see every event whatever is kept: the adjoint's tape holds each
//!     event's transition, time, cascade root, state and geometry itself, and the
//!     forward layer keeps the time derivative of a cascade's root apart, so
//!     the derivatives are the same to the last bit. A loss may read only
//!     recorded events (reading another is an error naming it).
//!
//!     One recorder keeps the records for every engine, in one order: at an
//!     event the reset is applied and its state checked (a non-finite one
//!     is an error ending at the state before it), the event is recorded
//!     (closing the segment that ends there), the carried components and
//!     the observer are told, then the Zeno rule (rule 8) and
//!     `Problem::stop_after` are applied; a Zeno error ends at the state
//!     after the reset, in the mode it switched to. So a run that fails
//!     returns the same partial trajectory whichever engine ran it. The last
//!     segment is closed at the end of the run unless it is empty after an
//!     event (a terminal transition, or `stop_after`). An observation is the
//!     state at its time; one within rounding of the current time `t`
//!     (closer than `8 eps max(|t|, |time|)`, the least step a Runge-Kutta
//!     stepper takes) is the current state.
//!

use crate::closed_form::ExactSpan;
use crate::geometry::{EventAt, EventGeometry};
use ia_core::{HybridError, HybridSystem};

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
    /// started it: see [`EventRecord::cascade_of`](ia_core::EventRecord::cascade_of).
    pub cascade_of: Option<usize>,
    /// The event's geometry (flows on both sides, the guard's partials and
    /// rate, the time shift), formed once by the engine when the extra
    /// state or the observer asks for it
    /// ([`ExtraState::wants_event_geometry`],
    /// [`Observer::wants_event_geometry`]); `None` otherwise.
    pub geometry: Option<&'a EventGeometry>,
}

/// What a lazy run of the exact solver ([`crate::exact`]) tells an observer
/// that takes its events ([`Observer::takes_lazy_events`]) about one event,
/// besides its [`EventJump`] (whose states are empty and whose geometry is
/// `None`): the entries of the blocks the event brought to its time (its
/// guard's block and the blocks of the entries its reset reads and writes,
/// both entries of a pair), their values before and after the reset, and
/// the event's time shift `w = f+ - r_x f- - r_t` on them (zero elsewhere:
/// the other blocks' states and flows did not change). The blocks not
/// listed are at their own last update times.
#[derive(Clone, Copy, Debug)]
pub struct LazyJump<'a> {
    /// The entries brought to the event's time, each once.
    pub entries: &'a [usize],
    /// Their values before the reset.
    pub before: &'a [f64],
    /// Their values after the reset.
    pub after: &'a [f64],
    /// The time shift on them.
    pub time_shift: &'a [f64],
    /// `gdot = g_x f- + g_t`, the guard's rate at the event.
    pub guard_rate: f64,
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
/// `S = dx/dtheta`): the engine carries `y = (x, extra)`.
///
/// The Runge-Kutta engine calls [`ExtraState::rate`] inside every stage of every
/// step, so an implementation must not allocate there.
pub trait ExtraState {
    /// Number of extra components carried after the state.
    fn dim(&self) -> usize;
    /// Whether the step-size control covers the extra components (the
    /// steps then follow their error too; otherwise only the state's).
    fn error_controlled(&self) -> bool {
        true
    }
    /// How many leading extra components the step-size control covers:
    /// all of them when [`ExtraState::error_controlled`], none otherwise.
    /// An extra state made of a controlled part followed by an uncontrolled
    /// one (derivative probes before forward sensitivities that ride on
    /// their steps) returns the controlled part's length.
    fn controlled_dim(&self) -> usize {
        if self.error_controlled() {
            self.dim()
        } else {
            0
        }
    }
    /// Whether the step's error norm keeps the state and each column of
    /// the controlled extra components (a block of the state's length)
    /// apart, the largest of their norms (so that the extra components
    /// tighten the state's control and never loosen it), rather than one
    /// norm over all; false unless the extra state says otherwise (see
    /// [`crate::OdeRhs::controlled_apart`]).
    fn controlled_apart(&self) -> bool {
        false
    }
    /// The factor on the error norm of each controlled column after the
    /// state when they are normed apart ([`ExtraState::controlled_apart`]):
    /// a column's error is held to the tolerance divided by it. 1 unless
    /// the extra state says otherwise (derivative probes: a safety factor
    /// on a random projection; see [`crate::OdeRhs::controlled_weight`]).
    fn controlled_weight(&self) -> f64 {
        1.0
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
    /// ([`EventJump::geometry`]); the engine then forms it once per
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
        _span: &ExactSpan<'_>,
        _extra: &mut [f64],
    ) -> bool {
        false
    }

    /// Optional: whether [`ExtraState::advance_exact`] carries the linear
    /// pairs of a flow of blocks too ([`ExactSpan::pairs`]). The default,
    /// `false`, makes the exact solver refuse to carry these components
    /// through a flow with pairs.
    fn carries_pairs(&self) -> bool {
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
    /// Right after [`Observer::step_taken`], for a step of an implicit
    /// method whose stages were solved to rounding, or of an explicit
    /// Runge-Kutta method when [`Observer::wants_step_stages`]
    /// ([`crate::Stepper::stage_states`]): its stage states, stage by stage,
    /// `block` floats each (the state first, then any carried components),
    /// stage 0 the step's start state.
    fn step_stages(&mut self, _run: RunContext<'_>, _stages: &[f64], _block: usize) {}
    /// Whether [`Observer::step_stages`] is read: an implicit method then
    /// solves every stage to rounding (its steps' stages are then those of
    /// the stage equations solved exactly, whether or not sensitivities
    /// are carried), an explicit one keeps its stage states (the same
    /// numbers). The default is `false`.
    fn wants_step_stages(&self) -> bool {
        false
    }
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
    /// Whether the observer reads the states of stretches and events (the
    /// start state of [`Observer::stretch_taken`], the states of
    /// [`Observer::event`]'s jump). The default is `true`. An observer that
    /// answers `false` lets the exact solver keep each linear block at its
    /// own last update time (see [`crate::exact`]): it is then not shown the
    /// stretches, and its events carry empty states.
    fn reads_states(&self) -> bool {
        true
    }
    /// Whether the observer takes the events of a lazy run of the exact
    /// solver ([`Observer::lazy_event`]): then that solver keeps each
    /// linear block at its own last update time although the observer
    /// reads states, when the run is otherwise lazy (see [`crate::exact`])
    /// and has no mode switches and no terminal transitions. The default
    /// is `false`.
    fn takes_lazy_events(&self) -> bool {
        false
    }
    /// Called once at the start of a run whose events come to
    /// [`Observer::lazy_event`] (and whose stretches are not shown).
    fn starts_lazily(&mut self, _run: RunContext<'_>) {}
    /// Every event of a lazy run of the exact solver: `jump` with empty
    /// states and no geometry, and the blocks it touched in `lazy`. The
    /// default calls [`Observer::event`] with `jump`.
    fn lazy_event(
        &mut self,
        run: RunContext<'_>,
        jump: &EventJump<'_>,
        _lazy: &LazyJump<'_>,
    ) -> Result<(), HybridError> {
        self.event(run, jump)
    }
    /// The state at observation `index`.
    fn observed(&mut self, _run: RunContext<'_>, _index: usize, _time: f64, _y: &[f64]) {}
    /// The final state.
    fn finished(&mut self, _run: RunContext<'_>, _time: f64, _y: &[f64]) {}
}

/// Observes nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoObserver;

impl Observer for NoObserver {
    fn reads_states(&self) -> bool {
        false
    }
}

impl<A: Observer, B: Observer> Observer for (A, B) {
    fn step_taken(&mut self, run: RunContext<'_>, mode: usize, t0: f64, h: f64, y0: &[f64]) {
        self.0.step_taken(run, mode, t0, h, y0);
        self.1.step_taken(run, mode, t0, h, y0);
    }
    fn step_stages(&mut self, run: RunContext<'_>, stages: &[f64], block: usize) {
        self.0.step_stages(run, stages, block);
        self.1.step_stages(run, stages, block);
    }
    fn wants_step_stages(&self) -> bool {
        self.0.wants_step_stages() || self.1.wants_step_stages()
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
    fn reads_states(&self) -> bool {
        self.0.reads_states() || self.1.reads_states()
    }
    fn takes_lazy_events(&self) -> bool {
        (self.0.takes_lazy_events() || self.1.takes_lazy_events())
            && (self.0.takes_lazy_events()
                || !(self.0.reads_states() || self.0.wants_event_geometry()))
            && (self.1.takes_lazy_events()
                || !(self.1.reads_states() || self.1.wants_event_geometry()))
    }
    fn starts_lazily(&mut self, run: RunContext<'_>) {
        self.0.starts_lazily(run);
        self.1.starts_lazily(run);
    }
    fn lazy_event(
        &mut self,
        run: RunContext<'_>,
        jump: &EventJump<'_>,
        lazy: &LazyJump<'_>,
    ) -> Result<(), HybridError> {
        self.0.lazy_event(run, jump, lazy)?;
        self.1.lazy_event(run, jump, lazy)
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

impl<'a> From<&EventJump<'a>> for EventAt<'a> {
    fn from(e: &EventJump<'a>) -> Self {
        Self {
            transition: e.transition,
            time: e.time,
            state_before: e.state_before,
            state_after: e.state_after,
            cascade_of: e.cascade_of,
        }
    }
}
