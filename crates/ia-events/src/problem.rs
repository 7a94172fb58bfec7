//! What a run needs: the system, initial values, span, observation times, the
//! solver choice and the event options.

use crate::solver::SolverChoice;
use ia_core::{short_num, HybridError, HybridSystem};
use serde::{Deserialize, Serialize};

/// The largest event-time tolerance, as a fraction of the span
/// `t_end - t0`: a looser one would place events visibly off their
/// crossings.
pub const MAX_TIME_TOLERANCE_FRACTION: f64 = 1e-6;

/// How events are located and when a run is declared pathological.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EventOptions {
    /// Event times are located to this absolute tolerance; `None` means
    /// `1e-13 * max(1, |t_end - t0|)`.
    pub time_tolerance: Option<f64>,
    /// An event whose transversality `|gdot| / (|g_x| |f| + |g_t|)` falls below
    /// this is reported as grazing.
    pub grazing_threshold: f64,
    /// More events than this is reported as Zeno.
    pub max_events: usize,
    /// A gap between consecutive firings of one transition shorter than
    /// this fraction of the span counts towards accumulation...
    pub zeno_separation: f64,
    /// ...and this many such gaps of one transition in a row, each no
    /// longer than the one before and shrinking fast enough that their
    /// geometric continuation accumulates before `t_end`, is reported as
    /// Zeno (firings converging on an accumulation point, as a bouncing
    /// ball with restitution below one does). Evenly spaced firings (an
    /// elastic ball) are not Zeno, however short their gaps, nor are
    /// distinct transitions firing close together (event rule 8,
    /// [`crate::vocabulary`]).
    pub zeno_run: usize,
    /// At most this many accepted steps ([`DEFAULT_MAX_STEPS`] by default):
    /// a run that needs more ends in [`HybridError::StepLimit`] with the
    /// trajectory so far. It bounds the time and the memory of a run with
    /// absurdly small steps (the adjoint's tape holds `(n + 4) x 8` bytes a
    /// step: 10^7 steps of a 4-state system are 640 MB).
    pub max_steps: usize,
    /// Which events (and the segments they end) the run's
    /// [`Trajectory`](ia_core::Trajectory) keeps: all of them (the default),
    /// none, or the last `K`. The final state, the observations and the
    /// statistics are always kept, and the sensitivity layers see every
    /// event whatever is recorded.
    pub record: EventRecording,
    /// Whether the kept events carry the state just before and after their
    /// reset ([`Trajectory::event_states`](ia_core::Trajectory::event_states);
    /// the default, `true`). Without them (`false`, the event records keep
    /// their times and transitions) a run copies no state per event, and the
    /// exact solver can advance only the linear blocks an event touches (see
    /// [`crate::exact`]).
    pub event_states: bool,
}

/// Which events a run's record keeps ([`EventOptions::record`]).
///
/// A run of 10^6 events keeps 10^6 event records (each with the state
/// before and after the reset) and as many segments unless told otherwise:
/// `None` and `Last(K)` bound that memory. A kept event carries its
/// position in the whole run ([`EventRecord::index`](ia_core::EventRecord::index)),
/// so the last `K` of a long run keep their numbers.
///
/// ```
/// use ia_events::{simulate, EventOptions, EventRecording, Problem};
///
/// let model = ia_models::by_name("ball1d").unwrap();
/// let (system, spec) = (model.system(), model.spec());
/// let problem = Problem::new(&system, spec.default_state(), spec.default_params(), 4.0)
///     .with_event_options(EventOptions { record: EventRecording::Last(2), ..Default::default() });
/// let run = simulate(&problem).unwrap();
/// assert_eq!(run.events.len(), 2);
/// assert_eq!(run.events[1].index + 1, run.stats.events); // the last two of the run
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventRecording {
    /// Every event and segment.
    #[default]
    All,
    /// No event and no segment.
    None,
    /// The last `K` events and the last `K` segments.
    Last(usize),
}

impl EventRecording {
    /// Trims `records`, grown one entry at a time, to what this policy keeps
    /// at the end of a run: at most twice that while running (so the cost
    /// is amortised constant per entry), exactly that when `finished`.
    pub fn trim<T>(self, records: &mut Vec<T>, finished: bool) {
        self.trim_with(records, finished, drop);
    }

    /// [`EventRecording::trim`], handing each dropped record to `dropped`
    /// (to keep its buffers for the records to come).
    ///
    /// ```
    /// use ia_events::EventRecording;
    ///
    /// let mut records: Vec<u32> = (0..40).collect();
    /// let mut dropped = Vec::new();
    /// EventRecording::Last(3).trim_with(&mut records, true, |r| dropped.push(r));
    /// assert_eq!(records, [37, 38, 39]);
    /// assert_eq!(dropped.len(), 37);
    /// ```
    pub fn trim_with<T>(self, records: &mut Vec<T>, finished: bool, dropped: impl FnMut(T)) {
        let surplus = self.surplus(records.len(), finished);
        records.drain(..surplus).for_each(dropped);
    }

    /// [`EventRecording::trim`] of a flat buffer holding `width` values per
    /// record, in record order (the integrator's event states, the forward
    /// pass's event-time gradients).
    ///
    /// ```
    /// use ia_events::EventRecording;
    ///
    /// let mut rows: Vec<f64> = (0..40).map(f64::from).collect(); // 20 records of 2
    /// EventRecording::Last(2).trim_flat(&mut rows, 2, true);
    /// assert_eq!(rows, [36.0, 37.0, 38.0, 39.0]);
    /// ```
    pub fn trim_flat<T>(self, values: &mut Vec<T>, width: usize, finished: bool) {
        if let Some(recorded) = values.len().checked_div(width) {
            let surplus = self.surplus(recorded, finished);
            values.drain(..surplus * width);
        }
    }

    /// How many of `recorded` records (the oldest) trimming drops.
    fn surplus(self, recorded: usize, finished: bool) -> usize {
        let keep = match self {
            EventRecording::All => return 0,
            EventRecording::None => 0,
            EventRecording::Last(k) => k,
        };
        let limit = if finished { keep } else { 2 * keep.max(16) };
        if recorded > limit {
            recorded - keep
        } else {
            0
        }
    }

    /// Whether any event is kept.
    pub fn keeps_any(self) -> bool {
        !matches!(self, EventRecording::None | EventRecording::Last(0))
    }
}

/// The default [`EventOptions::max_steps`]: 10^7 accepted steps.
pub const DEFAULT_MAX_STEPS: usize = 10_000_000;

impl Default for EventOptions {
    fn default() -> Self {
        Self {
            time_tolerance: None,
            grazing_threshold: 1e-7,
            max_events: 10_000,
            zeno_separation: 1e-5,
            zeno_run: 3,
            max_steps: DEFAULT_MAX_STEPS,
            record: EventRecording::All,
            event_states: true,
        }
    }
}

impl EventOptions {
    /// Checks the option values.
    pub fn validate(&self) -> Result<(), HybridError> {
        if let Some(tol) = self.time_tolerance {
            if !(tol.is_finite() && tol > 0.0) {
                return Err(HybridError::invalid_num(
                    "time_tolerance",
                    tol,
                    "must be a finite number greater than 0",
                ));
            }
        }
        if !(self.grazing_threshold.is_finite() && (0.0..1.0).contains(&self.grazing_threshold)) {
            return Err(HybridError::invalid_num(
                "grazing_threshold",
                self.grazing_threshold,
                "must lie in [0, 1): it bounds the cosine between flow and guard normal",
            ));
        }
        if self.max_events == 0 {
            return Err(HybridError::invalid("max_events", 0, "must be at least 1"));
        }
        if !(self.zeno_separation.is_finite() && self.zeno_separation >= 0.0) {
            return Err(HybridError::invalid_num(
                "zeno_separation",
                self.zeno_separation,
                "must be a finite number >= 0",
            ));
        }
        if self.max_steps == 0 {
            return Err(HybridError::invalid("max_steps", 0, "must be at least 1"));
        }
        if self.zeno_run == 0 {
            return Err(HybridError::invalid("zeno_run", 0, "must be at least 1"));
        }
        Ok(())
    }
}

/// How far a run has got, as a progress hook sees it
/// ([`Problem::with_progress`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progress {
    /// Start time of the run.
    pub t0: f64,
    /// The time reached.
    pub time: f64,
    /// End time of the run.
    pub t_end: f64,
    /// Accepted steps so far.
    pub steps: usize,
    /// Events so far.
    pub events: usize,
}

impl Progress {
    /// The fraction of the run's span done, in `[0, 1]`.
    pub fn fraction(&self) -> f64 {
        ((self.time - self.t0) / (self.t_end - self.t0)).clamp(0.0, 1.0)
    }
}

/// A function told how far a run has got, every
/// [`PROGRESS_EVERY_STEPS`] accepted steps (events, for the exact solver,
/// which takes no steps).
#[derive(Clone, Copy)]
pub struct ProgressHook<'a>(pub &'a (dyn Fn(&Progress) + Sync));

impl std::fmt::Debug for ProgressHook<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProgressHook")
    }
}

/// Accepted steps between two calls of a progress hook (a call costs
/// nothing next to that many steps).
pub const PROGRESS_EVERY_STEPS: usize = 4096;

/// A run of a hybrid system: everything [`crate::simulate`] and the
/// sensitivity layer need.
///
/// ```
/// # use ia_core::{Autodiff, Direction, FlowFn, FromMode, GuardFn, HybridSystem, ResetFn, Scalar, ToMode};
/// # struct Fall;
/// # impl FlowFn for Fall {
/// #     fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], d: &mut [S]) { d[0] = x[1]; d[1] = -p[0]; }
/// # }
/// # struct Floor;
/// # impl GuardFn for Floor {
/// #     fn direction(&self) -> Direction { Direction::Falling }
/// #     fn value<S: Scalar>(&self, _t: S, x: &[S], _p: &[S]) -> S { x[0] }
/// # }
/// # struct Bounce;
/// # impl ResetFn for Bounce {
/// #     fn apply<S: Scalar>(&self, _t: S, x: &[S], p: &[S], a: &mut [S]) { a[0] = x[0]; a[1] = -p[1] * x[1]; }
/// # }
/// # let ball = HybridSystem::builder(&["h", "v"], &["g", "e"])
/// #     .mode("flight", Autodiff(Fall))
/// #     .transition("bounce", FromMode("flight"), ToMode("flight"), Autodiff(Floor), Autodiff(Bounce))
/// #     .build().unwrap();
/// use ia_events::{Problem, SolverChoice};
/// let run = Problem::new(&ball, vec![1.0, 0.0], vec![9.81, 0.8], 1.0)
///     .with_solver(SolverChoice::dopri5(1e-12))
///     .with_observations(vec![0.25]);
/// let trajectory = ia_events::simulate(&run).unwrap();
/// let first_impact = (2.0f64 / 9.81).sqrt();
/// assert!((trajectory.events[0].time - first_impact).abs() < 1e-11);
/// ```
#[derive(Clone, Debug)]
pub struct Problem<'a> {
    /// The hybrid system.
    pub system: &'a HybridSystem,
    /// Index of the initial mode.
    pub initial_mode: usize,
    /// Initial state.
    pub initial_state: Vec<f64>,
    /// Parameters.
    pub params: Vec<f64>,
    /// Start time.
    pub t0: f64,
    /// End time.
    pub t_end: f64,
    /// Times at which the state is reported, in `[t0, t_end]`, increasing.
    pub observation_times: Vec<f64>,
    /// Solver.
    pub solver: SolverChoice,
    /// Event options.
    pub events: EventOptions,
    /// Told how far the run has got, if set.
    pub progress: Option<ProgressHook<'a>>,
    /// Ends the run right after a given firing of a transition, if set
    /// ([`Problem::with_stop_after`]).
    pub stop_after: Option<StopAfter>,
    /// A positive band declares the start a state right after an event (a
    /// periodic orbit's section): a guard within this distance of zero
    /// counts as sitting on zero and takes the side its rate points to, and
    /// one beyond zero heading back to its side is disarmed, as after a
    /// mode switch ([`Problem::with_start_band`]). 0 by default: a guard
    /// on zero or beyond in its direction at the start is an error.
    pub start_band: f64,
    /// How many pseudo-random tangent directions the adjoint's taped run
    /// carries as forward sensitivities inside its error norm, so that its
    /// steps control the accuracy of the derivative the adjoint returns,
    /// not only the state's ([`Problem::with_derivative_probes`]). `None`
    /// (the default) lets `ia-adjoint` choose: one for DOPRI5 and DOP853
    /// (their taped run redone with one per input, the forward pass's error
    /// norm, when it finds the flow stiff on a system of at most 16
    /// inputs: `ia_adjoint::probe`), two for the implicit methods, when
    /// the system has at most 64 inputs (initial states and parameters),
    /// none otherwise; `Some(0)` turns the probes off, and `Some(k)`
    /// carries `k` and is never redone. A plain
    /// simulation ignores it.
    pub derivative_probes: Option<usize>,
}

/// Where a run ends early: right after firing number `firings` (counted
/// from one) of transition `transition`, as if that firing were terminal
/// (but with the flow after it kept in the saltation, so the final
/// sensitivities are those at fixed time just after the event). The
/// periodic-orbit solver runs one period this way: from just after a
/// firing of the section's transition to just after its `k`-th next one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StopAfter {
    /// Index of the transition in the system.
    pub transition: usize,
    /// Which of its firings ends the run, from 1.
    pub firings: usize,
}

impl<'a> Problem<'a> {
    /// A run from `t0 = 0` to `t_end` in the first mode, with the default solver
    /// (Dormand-Prince, `rtol = atol = 1e-10`) and event options.
    pub fn new(
        system: &'a HybridSystem,
        initial_state: Vec<f64>,
        params: Vec<f64>,
        t_end: f64,
    ) -> Self {
        Self {
            system,
            initial_mode: 0,
            initial_state,
            params,
            t0: 0.0,
            t_end,
            observation_times: Vec::new(),
            solver: SolverChoice::default(),
            events: EventOptions::default(),
            progress: None,
            stop_after: None,
            start_band: 0.0,
            derivative_probes: None,
        }
    }

    /// Calls `hook` every [`PROGRESS_EVERY_STEPS`] accepted steps with how
    /// far the run has got (a command line's progress bar).
    ///
    /// ```
    /// # use ia_core::*;
    /// # struct Drift;
    /// # impl FlowFn for Drift { fn rate<S: Scalar>(&self, _t: S, _x: &[S], _p: &[S], d: &mut [S]) { d[0] = S::from(1.0); } }
    /// # struct Never;
    /// # impl GuardFn for Never { fn direction(&self) -> Direction { Direction::Rising }
    /// #     fn value<S: Scalar>(&self, _t: S, x: &[S], _p: &[S]) -> S { x[0] - 1e9 } }
    /// # struct Keep;
    /// # impl ResetFn for Keep { fn apply<S: Scalar>(&self, _t: S, x: &[S], _p: &[S], a: &mut [S]) { a[0] = x[0]; } }
    /// # let system = HybridSystem::builder(&["x"], &[]).mode("m", Autodiff(Drift))
    /// #     .transition("never", FromMode("m"), ToMode("m"), Autodiff(Never), Autodiff(Keep)).build().unwrap();
    /// use ia_events::{Problem, Progress, SolverChoice};
    /// use std::sync::Mutex;
    /// let seen = Mutex::new(Vec::new());
    /// let hook = |p: &Progress| seen.lock().unwrap().push(p.fraction());
    /// let run = Problem::new(&system, vec![0.0], vec![], 1.0)
    ///     .with_solver(SolverChoice::Rk4 { dt: 1e-5 })
    ///     .with_progress(&hook);
    /// ia_events::simulate(&run).unwrap();
    /// let seen = seen.into_inner().unwrap();
    /// assert_eq!(seen.len(), 100_000 / 4096);
    /// assert!(seen.windows(2).all(|w| w[0] < w[1]));
    /// ```
    pub fn with_progress(mut self, hook: &'a (dyn Fn(&Progress) + Sync)) -> Self {
        self.progress = Some(ProgressHook(hook));
        self
    }

    /// Ends the run right after the `firings`-th firing (from 1) of the
    /// transition named `transition`, with the state just after its reset
    /// as the final state (and the sensitivities there as the final ones);
    /// the run still ends at `t_end` if that firing has not come by then.
    ///
    /// ```
    /// # use ia_core::*;
    /// # struct Fall;
    /// # impl FlowFn for Fall {
    /// #     fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], d: &mut [S]) { d[0] = x[1]; d[1] = -p[0]; }
    /// # }
    /// # struct Floor;
    /// # impl GuardFn for Floor {
    /// #     fn direction(&self) -> Direction { Direction::Falling }
    /// #     fn value<S: Scalar>(&self, _t: S, x: &[S], _p: &[S]) -> S { x[0] }
    /// # }
    /// # struct Bounce;
    /// # impl ResetFn for Bounce {
    /// #     fn apply<S: Scalar>(&self, _t: S, x: &[S], p: &[S], a: &mut [S]) { a[0] = x[0]; a[1] = -p[1] * x[1]; }
    /// # }
    /// # let ball = HybridSystem::builder(&["h", "v"], &["g", "e"])
    /// #     .mode("flight", Autodiff(Fall))
    /// #     .transition("bounce", FromMode("flight"), ToMode("flight"), Autodiff(Floor), Autodiff(Bounce))
    /// #     .build().unwrap();
    /// use ia_events::Problem;
    /// // An elastic ball dropped from 1 m bounces every 2 sqrt(2/g) after the first.
    /// let run = Problem::new(&ball, vec![1.0, 0.0], vec![9.81, 1.0], 10.0)
    ///     .with_stop_after("bounce", 2)
    ///     .unwrap();
    /// let trajectory = ia_events::simulate(&run).unwrap();
    /// assert_eq!(trajectory.events.len(), 2);
    /// assert!((trajectory.final_time - 3.0 * (2.0f64 / 9.81).sqrt()).abs() < 1e-8);
    /// assert!(trajectory.final_state[1] > 0.0); // just after the reset
    /// ```
    pub fn with_stop_after(
        mut self,
        transition: &str,
        firings: usize,
    ) -> Result<Self, HybridError> {
        let index = self.system.transition_index(transition)?;
        if firings == 0 {
            return Err(HybridError::invalid(
                "firings",
                0,
                "must be at least 1 (the run ends after that firing)",
            ));
        }
        self.stop_after = Some(StopAfter {
            transition: index,
            firings,
        });
        Ok(self)
    }

    /// Lets the initial state sit on a guard, as the state just after an
    /// event does: a guard within `band` of zero at the start takes the side
    /// its rate points to (a ball starting on the floor moving up starts
    /// fine; one moving down is still refused), and one beyond zero heading
    /// back to its side is disarmed, as after a mode switch: it fires at
    /// its first crossing once it is back (rules 4 and 9 of the event
    /// rules, [`crate::vocabulary`]). A start beyond zero and not heading
    /// back is still refused.
    ///
    /// ```
    /// # use ia_core::*;
    /// # struct Fall;
    /// # impl FlowFn for Fall {
    /// #     fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], d: &mut [S]) { d[0] = x[1]; d[1] = -p[0]; }
    /// # }
    /// # struct Floor;
    /// # impl GuardFn for Floor {
    /// #     fn direction(&self) -> Direction { Direction::Falling }
    /// #     fn value<S: Scalar>(&self, _t: S, x: &[S], _p: &[S]) -> S { x[0] }
    /// # }
    /// # struct Bounce;
    /// # impl ResetFn for Bounce {
    /// #     fn apply<S: Scalar>(&self, _t: S, x: &[S], p: &[S], a: &mut [S]) { a[0] = x[0]; a[1] = -p[1] * x[1]; }
    /// # }
    /// # let ball = HybridSystem::builder(&["h", "v"], &["g", "e"])
    /// #     .mode("flight", Autodiff(Fall))
    /// #     .transition("bounce", FromMode("flight"), ToMode("flight"), Autodiff(Floor), Autodiff(Bounce))
    /// #     .build().unwrap();
    /// use ia_events::Problem;
    /// let up = Problem::new(&ball, vec![0.0, 3.0], vec![9.81, 1.0], 1.0);
    /// assert!(ia_events::simulate(&up).is_err());
    /// let trajectory = ia_events::simulate(&up.with_start_band(1e-9)).unwrap();
    /// assert!((trajectory.events[0].time - 6.0 / 9.81).abs() < 1e-8);
    /// let down = Problem::new(&ball, vec![0.0, -3.0], vec![9.81, 1.0], 1.0).with_start_band(1e-9);
    /// assert!(ia_events::simulate(&down).is_err());
    /// ```
    pub fn with_start_band(mut self, band: f64) -> Self {
        self.start_band = band;
        self
    }

    /// Sets [`Problem::derivative_probes`]: `Some(0)` turns the adjoint's
    /// derivative probes off (its taped run then controls the state's
    /// error only), `Some(k)` carries `k` of them, `None` lets the adjoint
    /// choose.
    ///
    /// ```
    /// let model = ia_models::by_name("ball1d").unwrap();
    /// let system = model.system();
    /// let problem = ia_events::Problem::new(&system, vec![1.0, 0.0], vec![9.81, 0.8, 0.0], 1.0)
    ///     .with_derivative_probes(Some(0));
    /// assert_eq!(problem.derivative_probes, Some(0));
    /// ```
    pub fn with_derivative_probes(mut self, probes: Option<usize>) -> Self {
        self.derivative_probes = probes;
        self
    }

    /// Starts in the mode named `mode`.
    pub fn with_mode(mut self, mode: &str) -> Result<Self, HybridError> {
        self.initial_mode = self.system.mode_index(mode)?;
        Ok(self)
    }

    /// Starts at `t0` instead of 0.
    pub fn with_initial_time(mut self, t0: f64) -> Self {
        self.t0 = t0;
        self
    }

    /// Uses `solver`.
    pub fn with_solver(mut self, solver: SolverChoice) -> Self {
        self.solver = solver;
        self
    }

    /// Reports the state at `times`.
    pub fn with_observations(mut self, times: Vec<f64>) -> Self {
        self.observation_times = times;
        self
    }

    /// Uses `events` for event location and pathology detection.
    pub fn with_event_options(mut self, events: EventOptions) -> Self {
        self.events = events;
        self
    }

    /// The event-time tolerance in effect.
    pub fn time_tolerance(&self) -> f64 {
        self.events
            .time_tolerance
            .unwrap_or(1e-13 * (self.t_end - self.t0).abs().max(1.0))
    }

    /// Checks dimensions, finiteness, the span, observation times and options.
    pub fn validate(&self) -> Result<(), HybridError> {
        let sys = self.system;
        let dims = [
            ("initial state", sys.state_dim(), self.initial_state.len()),
            ("parameters", sys.param_dim(), self.params.len()),
        ];
        for (what, expected, found) in dims {
            if expected != found {
                return Err(HybridError::DimensionMismatch {
                    what: what.to_string(),
                    expected,
                    found,
                });
            }
        }
        if self.initial_mode >= sys.modes().len() {
            return Err(HybridError::invalid(
                "initial mode index",
                self.initial_mode,
                format!("must be below the number of modes, {}", sys.modes().len()),
            ));
        }
        HybridError::check_finite(
            "initial state",
            sys.state_names(),
            &self.initial_state,
            self.t0,
        )?;
        HybridError::check_finite("parameter", sys.param_names(), &self.params, self.t0)?;
        for (name, t) in [("t0", self.t0), ("t_end", self.t_end)] {
            if !t.is_finite() {
                return Err(HybridError::NonFinite {
                    what: format!("{name} (= {t})"),
                    time: self.t0,
                    trajectory: None,
                });
            }
        }
        if self.t_end <= self.t0 {
            return Err(HybridError::invalid_num(
                "t_end",
                self.t_end,
                format!("must be greater than t0 = {}", short_num(self.t0)),
            ));
        }
        let mut last = self.t0;
        for &t in &self.observation_times {
            if !(t.is_finite() && t >= last && t <= self.t_end) {
                return Err(HybridError::invalid_num(
                    "observation time",
                    t,
                    format!(
                        "observation times must be finite, non-decreasing and within [{}, {}]",
                        short_num(self.t0),
                        short_num(self.t_end)
                    ),
                ));
            }
            last = t;
        }
        if !(self.start_band.is_finite() && self.start_band >= 0.0) {
            return Err(HybridError::invalid_num(
                "start_band",
                self.start_band,
                "must be a finite number >= 0",
            ));
        }
        if let Some(stop) = self.stop_after {
            if stop.transition >= sys.transitions().len() || stop.firings == 0 {
                return Err(HybridError::invalid(
                    "stop_after",
                    format!("{stop:?}"),
                    format!(
                        "must name a transition index below {} and a firing count of at least 1",
                        sys.transitions().len()
                    ),
                ));
            }
        }
        self.solver.validate()?;
        self.solver.validate_for_span(self.t_end - self.t0)?;
        self.events.validate()?;
        // A fixed step that needs more steps than the step limit would only
        // run into it after all that work: refused up front.
        if let SolverChoice::Rk4 { dt } = self.solver {
            let steps = (self.t_end - self.t0) / dt;
            if steps > self.events.max_steps as f64 {
                return Err(HybridError::invalid_num(
                    "dt",
                    dt,
                    format!(
                        "the run of length {} takes {} steps of dt, more than max_steps = {}; use dt of at least {} or raise max_steps",
                        short_num(self.t_end - self.t0),
                        short_num(steps),
                        self.events.max_steps,
                        short_num((self.t_end - self.t0) / self.events.max_steps as f64)
                    ),
                ));
            }
        }
        let span = self.t_end - self.t0;
        if let Some(tol) = self.events.time_tolerance {
            if tol > MAX_TIME_TOLERANCE_FRACTION * span {
                return Err(HybridError::invalid_num(
                    "time_tolerance",
                    tol,
                    format!(
                        "must be greater than 0 and at most {} of the span t_end - t0 = {} (at most {}): events are located to this tolerance",
                        short_num(MAX_TIME_TOLERANCE_FRACTION),
                        short_num(span),
                        short_num(MAX_TIME_TOLERANCE_FRACTION * span)
                    ),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ode_solvers_adapter::OdeSolversMethod;
    use ia_core::{Autodiff, Direction, FlowFn, GuardFn, ResetFn, Scalar};

    /// `h' = v, v' = -g`, bounce `v <- -e v` on `h = 0`.
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

    fn ball() -> HybridSystem {
        HybridSystem::builder(&["h", "v"], &["g", "e"])
            .mode("flight", Autodiff(Fall))
            .transition(
                "bounce",
                ia_core::FromMode("flight"),
                ia_core::ToMode("flight"),
                Autodiff(Floor),
                Autodiff(Bounce),
            )
            .build()
            .unwrap()
    }

    /// Issue 10: `time_tolerance: 1e300` was accepted and the ball ended
    /// 18.6 m under the floor; the tolerance is bounded by the span.
    #[test]
    fn time_tolerance_is_bounded_by_the_span() {
        let sys = ball();
        let with_tolerance = |tol: f64| {
            Problem::new(&sys, vec![1.0, 0.0], vec![9.81, 0.8], 1.0).with_event_options(
                EventOptions {
                    time_tolerance: Some(tol),
                    ..EventOptions::default()
                },
            )
        };
        for tol in [1e300, 1.0, 2e-6] {
            let err = with_tolerance(tol).validate().unwrap_err();
            let msg = err.to_string();
            assert!(
                msg.contains("time_tolerance") && msg.contains("span"),
                "{msg}"
            );
            assert!(!msg.contains("000000000"), "number printed long: {msg}");
        }
        with_tolerance(1e-6).validate().unwrap();
        // The run with the largest accepted tolerance places the first
        // impact within it (reference: t1 = sqrt(2 h0 / g)).
        let run = crate::simulate(&with_tolerance(1e-6)).unwrap();
        assert!((run.events[0].time - (2.0f64 / 9.81).sqrt()).abs() < 2e-6);
    }

    /// Issue 10: an `ode_solvers` `macro_step` of 1e-16 or 2.2e-308 never
    /// finished; fixed steps are bounded by the run up front.
    #[test]
    fn tiny_fixed_steps_are_refused_up_front() {
        let sys = ball();
        let solvers = [
            SolverChoice::OdeSolvers {
                integrator: OdeSolversMethod::Rk4,
                rtol: 1e-10,
                atol: 1e-10,
                macro_step: 1e-16,
            },
            SolverChoice::OdeSolvers {
                integrator: OdeSolversMethod::Dopri5,
                rtol: 1e-10,
                atol: 1e-10,
                macro_step: 2.2e-308,
            },
            SolverChoice::Rk4 { dt: 1e-12 },
        ];
        for solver in solvers {
            let problem =
                Problem::new(&sys, vec![1.0, 0.0], vec![9.81, 0.8], 1.0).with_solver(solver);
            let msg = crate::simulate(&problem).unwrap_err().to_string();
            assert!(
                (msg.contains("macro_step") || msg.contains("dt")) && msg.contains("at least 1e-8"),
                "{msg}"
            );
        }
        // The bound itself is accepted (a step of span / 1e8 is valid).
        SolverChoice::Rk4 { dt: 1e-8 }
            .validate_for_span(1.0)
            .unwrap();
    }

    #[test]
    fn a_fixed_step_past_the_step_limit_is_refused_up_front() {
        let sys = ball();
        let run = |dt: f64, max_steps: usize| {
            Problem::new(&sys, vec![1.0, 0.0], vec![9.81, 0.8], 2.0)
                .with_solver(SolverChoice::Rk4 { dt })
                .with_event_options(EventOptions {
                    max_steps,
                    ..Default::default()
                })
                .validate()
        };
        let msg = run(1e-4, 1000).unwrap_err().to_string();
        for part in ["dt", "20000 steps", "max_steps = 1000", "at least 0.002"] {
            assert!(msg.contains(part), "{part}: {msg}");
        }
        run(2e-3, 1000).unwrap();
    }
}
