//! The exact event-driven solver, for systems whose flows are decoupled
//! and linear and whose guards are thresholds on one state entry: spiking
//! networks of leaky integrate-and-fire neurons, thermostats, relaxation
//! oscillators.
//!
//! # Method
//!
//! In a mode whose flow declares [`Flow::decoupled_linear`](ia_core::Flow::decoupled_linear),
//! `x_i' = a_i x_i + b_i`, every component has the closed form
//!
//! ```text
//! x_i(t + s) = x_i + (a_i x_i + b_i) phi(a_i, s),   phi(a, s) = (e^{a s} - 1) / a   (s where a = 0),
//! ```
//!
//! and a guard that declares a [`Threshold`], `g = x_k - c`, crosses at the
//! delay `s` where `x_k(t + s) = c`:
//!
//! ```text
//! s = ln(1 + a (c - x_k) / (a x_k + b)) / a      ((c - x_k) / b where a = 0),
//! ```
//!
//! when that is positive and finite and the rate `a c + b` at the crossing
//! points in the guard's direction (the component is monotone in time, so
//! there is at most one crossing of a level). The run keeps every guard's
//! predicted crossing time in a priority queue. An event pops the earliest,
//! brings every component to that instant with one `phi` per distinct
//! `a_i` (one multiply-add per component), applies the reset, and predicts
//! again only the guards on the entries the reset changed: the cost of an
//! event is O(n) multiply-adds plus O(changed guards log guards), where a
//! Runge-Kutta step of the whole system costs O(n) rate evaluations per
//! stage and several steps an event.
//!
//! The event rules are the integrator's (docs/method.md, "Event
//! semantics"): of several guards due at one instant the first declared
//! fires first; after a reset a guard on an entry it changed fires at once,
//! at the same time and as a cascade of the event that started it
//! ([`EventRecord::cascade_of`]), if the reset moved it to zero or beyond
//! in its direction (the entries a reset changed are found among those it
//! declares, [`Reset::writes`](ia_core::Reset::writes), or by comparing
//! the states); after a switch to another mode every guard of the new
//! mode on zero heading into its crossing, or beyond zero and not heading
//! back, is due (one heading back is disarmed: over a stretch its component
//! is monotone, so it cannot come back and cross). The Zeno rule, `max_events`, the
//! recording options, observations, [`Problem::stop_after`] and
//! [`Problem::start_band`] are the integrator's; the progress hook is told
//! every [`PROGRESS_EVERY_STEPS`] events. The times are exact up to
//! rounding, with no time tolerance; the solver takes no steps
//! (`stats.steps` is 0).
//!
//! Components carried along with the state (an [`ExtraState`], such as
//! `ia-adjoint`'s forward sensitivities) are carried over each stretch in
//! closed form too ([`ExtraState::advance_exact`], with the factors of
//! [`ExactSpan`]) and mapped across each event by their own jump, so a
//! forward Jacobian through this solver is exact to rounding as well.
//! Each stretch is shown to the observer
//! ([`Observer::stretch_taken`]), and each
//! event's geometry is formed when the carried components or the observer
//! read it, so `ia-adjoint`'s reverse pass transposes the closed form
//! stretch by stretch (the transpose of [`ExactSpan`]'s map) and each event
//! as after a Runge-Kutta run.
//!
//! ```
//! use ia_events::{exact, simulate, Problem, SolverChoice};
//! use ia_models::Model;
//!
//! let net = ia_models::LifNetwork::new(10).unwrap();
//! let (system, spec) = (net.system(), net.spec());
//! let problem = Problem::new(&system, spec.default_state(), spec.default_params(), spec.t_end)
//!     .with_solver(SolverChoice::dopri5(1e-12));
//! let run = exact::simulate(&problem).unwrap();
//! let stepped = simulate(&problem).unwrap();
//! assert_eq!(run.events.len(), stepped.events.len());
//! for (a, b) in run.events.iter().zip(&stepped.events) {
//!     assert_eq!(a.transition, b.transition);
//!     assert!((a.time - b.time).abs() < 1e-9);
//! }
//! ```

use crate::geometry::{EventAt, GeometryWorkspace};
use crate::integrator::{trim_events, ZenoWatch};
use crate::{
    EventJump, ExtraState, NoExtraState, NoObserver, Observer, Problem, Progress, RunContext,
    PROGRESS_EVERY_STEPS,
};
use ia_core::{
    Direction, EventRecord, HybridError, Observation, Segment, SolverStats, Threshold, Trajectory,
};
use std::cmp::Ordering;

/// Why a system cannot be run by the exact solver, or `Ok` when it can:
/// every mode's flow must declare [`Flow::decoupled_linear`](ia_core::Flow::decoupled_linear)
/// and every guard a [`Threshold`](ia_core::Guard::threshold), at the
/// parameters `params`.
///
/// ```
/// let ball = ia_models::by_name("ball2d-flat").unwrap();
/// let (system, spec) = (ball.system(), ball.spec());
/// let err = ia_events::exact::check(&system, &spec.default_params()).unwrap_err();
/// assert!(err.to_string().contains("decoupled linear"), "{err}");
/// ```
pub fn check(system: &ia_core::HybridSystem, params: &[f64]) -> Result<(), HybridError> {
    Structure::of(system, params).map(|_| ())
}

/// The coefficients and thresholds the exact solver runs on.
struct Structure {
    /// `a` of each mode, `n` each.
    a: Vec<Vec<f64>>,
    /// `b` of each mode.
    b: Vec<Vec<f64>>,
    /// The threshold of each transition.
    thresholds: Vec<Threshold>,
    /// Per mode and state entry, the transitions out of that mode whose
    /// guard reads that entry.
    guards_on: Vec<Vec<Vec<usize>>>,
    /// Per mode, the transitions out of it.
    leaving: Vec<Vec<usize>>,
}

impl Structure {
    fn of(system: &ia_core::HybridSystem, params: &[f64]) -> Result<Self, HybridError> {
        let n = system.state_dim();
        let modes = system.modes();
        let mut a = Vec::with_capacity(modes.len());
        let mut b = Vec::with_capacity(modes.len());
        for mode in modes {
            let (mut am, mut bm) = (vec![0.0; n], vec![0.0; n]);
            if !mode.flow.decoupled_linear(params, &mut am, &mut bm) {
                return Err(HybridError::Unsupported(format!(
                    "the exact solver needs a decoupled linear flow (x_i' = a_i x_i + b_i, Flow::decoupled_linear) in every mode; the flow of mode '{}' declares none: use a Runge-Kutta solver (dopri5, dop853)",
                    mode.name
                )));
            }
            if let Some(v) = am.iter().chain(&bm).find(|v| !v.is_finite()) {
                return Err(HybridError::invalid_num(
                    format!("coefficient of the flow of mode '{}'", mode.name),
                    *v,
                    "must be finite (the parameters give a flow x_i' = a_i x_i + b_i)",
                ));
            }
            a.push(am);
            b.push(bm);
        }
        let mut thresholds = Vec::with_capacity(system.transitions().len());
        let mut guards_on = vec![vec![Vec::new(); n]; modes.len()];
        let mut leaving = vec![Vec::new(); modes.len()];
        for (k, tr) in system.transitions().iter().enumerate() {
            let threshold = tr.guard.threshold(params).ok_or_else(|| {
                HybridError::Unsupported(format!(
                    "the exact solver needs every guard to be a threshold on one state entry (x_k - level, Guard::threshold); the guard of '{}' declares none: use a Runge-Kutta solver (dopri5, dop853)",
                    tr.name
                ))
            })?;
            if threshold.state >= n || !threshold.level.is_finite() {
                return Err(HybridError::invalid_num(
                    format!("threshold of the guard of '{}'", tr.name),
                    threshold.level,
                    format!(
                        "must be a finite level on a state entry below {n} (entry {})",
                        threshold.state
                    ),
                ));
            }
            guards_on[tr.from][threshold.state].push(k);
            leaving[tr.from].push(k);
            thresholds.push(threshold);
        }
        Ok(Self {
            a,
            b,
            thresholds,
            guards_on,
            leaving,
        })
    }
}

/// One stretch between events of a decoupled linear flow,
/// `x_i' = a_i x_i + b_i`, as an [`ExtraState`] carried along needs it
/// ([`ExtraState::advance_exact`]): per component, the rate at its start
/// and the factors of the closed form over the stretch's length `s`:
///
/// ```text
/// x_i(t0 + s) = x_i + rate_i phi_i,   decay_i = e^{a_i s},
/// phi_i = (e^{a_i s} - 1) / a_i,      chi_i = int_0^s e^{a_i (s - u)} phi(a_i, u) du = (s e^{a_i s} - phi_i) / a_i
/// ```
///
/// (`s` and `s^2 / 2` where `a_i = 0`). A tangent `v` of the state with a
/// source linear in the state, `v' = a v + c + L x`, is carried by
/// `v(s) = decay v + (c + L x0) phi + L rate chi`.
#[derive(Clone, Copy, Debug)]
pub struct ExactSpan<'a> {
    /// The length of the stretch.
    pub s: f64,
    /// `a_i x_i + b_i` at its start.
    pub rate: &'a [f64],
    /// `e^{a_i s}`.
    pub decay: &'a [f64],
    /// `(e^{a_i s} - 1) / a_i`.
    pub phi: &'a [f64],
    /// `(s e^{a_i s} - phi_i) / a_i`.
    pub chi: &'a [f64],
}

/// `(s e^{a s} - phi(a, s)) / a`, `s^2 / 2` where `a = 0`: the weight of a
/// source growing like `phi` in a tangent carried over `s` (a series where
/// `a s` is small, which the difference would cancel). [`ExactSpan::chi`]
/// per component.
///
/// ```
/// use ia_events::exact::chi;
/// assert_eq!(chi(0.0, 2.0), 2.0);
/// let (a, s) = (-3.0f64, 0.5f64);
/// assert!((chi(a, s) - (s * (a * s).exp() - (a * s).exp_m1() / a) / a).abs() < 1e-15);
/// ```
pub fn chi(a: f64, s: f64) -> f64 {
    let z = a * s;
    if z.abs() < 1e-2 {
        s * s
            * (0.5
                + z * (1.0 / 3.0
                    + z * (1.0 / 8.0 + z * (1.0 / 30.0 + z * (1.0 / 144.0 + z / 840.0)))))
    } else {
        (s * z.exp() - phi(a, s)) / a
    }
}

/// `(e^{a s} - 1) / a`, `s` where `a = 0`: the factor by which the rate
/// `a x + b` carries `x` over a delay `s` ([`ExactSpan::phi`] per
/// component).
///
/// ```
/// use ia_events::exact::phi;
/// assert_eq!(phi(0.0, 0.25), 0.25);
/// assert!((phi(-2.0, 0.5) - (1.0 - (-1.0f64).exp()) / 2.0).abs() < 1e-16);
/// ```
pub fn phi(a: f64, s: f64) -> f64 {
    if a == 0.0 {
        s
    } else {
        (a * s).exp_m1() / a
    }
}

/// `e^{a s}` from `phi = phi(a, s)`, as `1 + a phi`: the factor by which a
/// stretch carries a tangent of the state ([`ExactSpan::decay`]), and its
/// transpose a cotangent; formed this way (not by `exp`) so that forward
/// and reverse passes multiply by the same number.
///
/// ```
/// use ia_events::exact::{decay, phi};
/// let (a, s) = (-2.0f64, 0.5f64);
/// assert!((decay(a, phi(a, s)) - (a * s).exp()).abs() < 1e-16);
/// ```
pub fn decay(a: f64, phi: f64) -> f64 {
    1.0 + a * phi
}

/// Carries `x` over a stretch of length `s` of `x_i' = a_i x_i + b_i`:
/// `x_i += (a_i x_i + b_i) phi(a_i, s)`, the arithmetic of the exact run,
/// so a state carried again (an adjoint replaying the run from a kept
/// state) is the run's to the last bit.
///
/// ```
/// let (a, b) = ([-2.0, 0.0], [2.0, 1.0]);
/// let mut x = [0.0, 1.0];
/// ia_events::exact::advance_state(&a, &b, 0.5, &mut x);
/// assert!((x[0] - (1.0 - (-1.0f64).exp())).abs() < 1e-16); // relaxes towards 1
/// assert_eq!(x[1], 1.5);
/// ```
pub fn advance_state(a: &[f64], b: &[f64], s: f64, x: &mut [f64]) {
    // The factor of the last rate met: a network's components share one.
    let mut last: Option<(f64, f64)> = None;
    for ((x, &ai), &bi) in x.iter_mut().zip(a).zip(b) {
        let factor = match last {
            Some((rate, factor)) if rate.to_bits() == ai.to_bits() => factor,
            _ => {
                let factor = phi(ai, s);
                last = Some((ai, factor));
                factor
            }
        };
        advance_component(x, ai, bi, factor);
    }
}

/// One component of `x' = a x + b` carried over a stretch whose
/// `phi(a, s)` is `phi`: the one formula the run and [`advance_state`]
/// share, so that their states agree to the bit.
#[inline(always)]
fn advance_component(x: &mut f64, a: f64, b: f64, phi: f64) {
    *x += (a * *x + b) * phi;
}

/// The delay after which `x' = a x + b` from `x` reaches `level` with a
/// rate that `direction` fires on, if it does.
fn crossing_delay(x: f64, a: f64, b: f64, level: f64, direction: Direction) -> Option<f64> {
    let rate = a * x + b;
    let delay = if a == 0.0 {
        (level - x) / b
    } else {
        (a * (level - x) / rate).ln_1p() / a
    };
    let rate_there = a * level + b;
    let fires = match direction {
        Direction::Rising => rate_there > 0.0,
        Direction::Falling => rate_there < 0.0,
        Direction::Either => rate_there != 0.0,
    };
    (delay > 0.0 && delay.is_finite() && fires).then_some(delay)
}

/// Whether a guard of `direction` whose value was `before` (on the side it
/// crosses from, or on zero) is at or beyond zero in its direction at
/// `after`.
fn pushed_over(direction: Direction, before: f64, after: f64) -> bool {
    match direction {
        Direction::Rising => after >= 0.0,
        Direction::Falling => after <= 0.0,
        Direction::Either => before != 0.0 && (after == 0.0 || (after > 0.0) != (before > 0.0)),
    }
}

/// The predicted crossings, earliest first (then the first declared
/// transition): a binary heap indexed by transition, so a new prediction
/// replaces the old one in place and the heap never holds more than one
/// entry a transition.
#[derive(Debug, Default)]
struct CrossingQueue {
    /// Transitions, in heap order.
    heap: Vec<usize>,
    /// Each transition's place in `heap` (`usize::MAX`: not queued).
    place: Vec<usize>,
    /// Each transition's predicted time.
    time: Vec<f64>,
}

impl CrossingQueue {
    fn new(transitions: usize) -> Self {
        Self {
            heap: Vec::with_capacity(transitions),
            place: vec![usize::MAX; transitions],
            time: vec![f64::INFINITY; transitions],
        }
    }

    fn clear(&mut self) {
        for &k in &self.heap {
            self.place[k] = usize::MAX;
        }
        self.heap.clear();
    }

    fn before(&self, i: usize, j: usize) -> bool {
        let (k, l) = (self.heap[i], self.heap[j]);
        match self.time[k].total_cmp(&self.time[l]) {
            Ordering::Equal => k < l,
            order => order == Ordering::Less,
        }
    }

    fn swap(&mut self, i: usize, j: usize) {
        self.heap.swap(i, j);
        self.place[self.heap[i]] = i;
        self.place[self.heap[j]] = j;
    }

    fn sift_up(&mut self, mut i: usize) {
        while i > 0 {
            let parent = (i - 1) / 2;
            if !self.before(i, parent) {
                break;
            }
            self.swap(i, parent);
            i = parent;
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        loop {
            let (left, right) = (2 * i + 1, 2 * i + 2);
            let mut first = i;
            if left < self.heap.len() && self.before(left, first) {
                first = left;
            }
            if right < self.heap.len() && self.before(right, first) {
                first = right;
            }
            if first == i {
                break;
            }
            self.swap(i, first);
            i = first;
        }
    }

    /// Transition `k` predicted to cross at `time`, or not at all (`None`).
    fn set(&mut self, k: usize, time: Option<f64>) {
        let i = self.place[k];
        match (time, i == usize::MAX) {
            (Some(time), true) => {
                self.time[k] = time;
                self.heap.push(k);
                self.place[k] = self.heap.len() - 1;
                self.sift_up(self.heap.len() - 1);
            }
            (Some(time), false) => {
                self.time[k] = time;
                self.sift_up(i);
                self.sift_down(self.place[k]);
            }
            (None, false) => {
                let last = self.heap.len() - 1;
                self.swap(i, last);
                self.heap.pop();
                self.place[k] = usize::MAX;
                if i < self.heap.len() {
                    let moved = self.heap[i];
                    self.sift_up(i);
                    self.sift_down(self.place[moved]);
                }
            }
            (None, true) => {}
        }
    }

    /// The earliest predicted crossing: its time and transition.
    fn first(&self) -> Option<(f64, usize)> {
        self.heap.first().map(|&k| (self.time[k], k))
    }
}

/// The run in progress.
struct Run<'p, E, O> {
    problem: &'p Problem<'p>,
    extra: &'p mut E,
    observer: &'p mut O,
    /// The extra components ([`ExtraState`]) after the state, before and
    /// after an event's jump.
    carried: Vec<f64>,
    carried_after: Vec<f64>,
    /// The factors of [`ExactSpan`], per component, when components are
    /// carried.
    span_rate: Vec<f64>,
    span_decay: Vec<f64>,
    span_phi: Vec<f64>,
    span_chi: Vec<f64>,
    structure: Structure,
    mode: usize,
    t: f64,
    x: Vec<f64>,
    x_after: Vec<f64>,
    /// Per component, the index of its `a` in `rates` (the distinct `a` of
    /// the mode), and those rates' `phi` for the delay being taken.
    rate_of: Vec<usize>,
    rates: Vec<f64>,
    phis: Vec<f64>,
    /// The rates' `chi` ([`ExactSpan`]), when components are carried.
    chis: Vec<f64>,
    queue: CrossingQueue,
    /// Transitions due at once (a cascade), by index, and a list holding
    /// at least those.
    due: Vec<bool>,
    due_list: Vec<usize>,
    changed: Vec<usize>,
    trajectory: Trajectory,
    segment_start: f64,
    next_observation: usize,
    zeno: ZenoWatch,
    stop_firings: usize,
    /// Each event's geometry, formed when the carried components or the
    /// observer read it.
    geometry: Option<GeometryWorkspace>,
    /// The event count at which the progress hook is told next.
    next_progress: usize,
}

/// Runs `problem` with the exact solver (see the [module
/// documentation](self)); the problem's solver choice is not used.
pub fn simulate(problem: &Problem<'_>) -> Result<Trajectory, HybridError> {
    run(problem, &mut NoExtraState, &mut NoObserver)
}

/// [`simulate`] carrying `extra` along with the state (it must carry itself
/// over each stretch between events, [`ExtraState::advance_exact`]) and
/// showing the run to `observer` (which sees no steps, there are none, but
/// each stretch carried in closed form, [`Observer::stretch_taken`]).
pub fn run<E: ExtraState, O: Observer>(
    problem: &Problem<'_>,
    extra: &mut E,
    observer: &mut O,
) -> Result<Trajectory, HybridError> {
    problem.validate()?;
    let structure = Structure::of(problem.system, &problem.params)?;
    Run::new(problem, structure, extra, observer)?.go()
}

impl<'p, E: ExtraState, O: Observer> Run<'p, E, O> {
    fn new(
        problem: &'p Problem<'p>,
        structure: Structure,
        extra: &'p mut E,
        observer: &'p mut O,
    ) -> Result<Self, HybridError> {
        let system = problem.system;
        let n = system.state_dim();
        let transitions = system.transitions().len();
        let dim = extra.dim();
        let per_component = if dim > 0 { n } else { 0 };
        let mut carried = vec![0.0; dim];
        extra.initial(
            RunContext {
                system,
                params: &problem.params,
            },
            &mut carried,
        );
        let mut run = Self {
            problem,
            extra,
            observer,
            carried,
            carried_after: vec![0.0; dim],
            span_rate: vec![0.0; per_component],
            span_decay: vec![0.0; per_component],
            span_phi: vec![0.0; per_component],
            span_chi: vec![0.0; per_component],
            structure,
            mode: problem.initial_mode,
            t: problem.t0,
            x: problem.initial_state.clone(),
            x_after: vec![0.0; n],
            rate_of: vec![0; n],
            rates: Vec::new(),
            phis: Vec::new(),
            chis: Vec::new(),
            queue: CrossingQueue::new(transitions),
            due: vec![false; transitions],
            due_list: Vec::new(),
            changed: Vec::new(),
            trajectory: Trajectory {
                initial_time: problem.t0,
                initial_state: problem.initial_state.clone(),
                segments: Vec::new(),
                events: Vec::new(),
                event_states: Vec::new(),
                observations: Vec::new(),
                final_time: problem.t0,
                final_state: Vec::new(),
                final_mode: problem.initial_mode,
                stats: SolverStats::default(),
            },
            segment_start: problem.t0,
            next_observation: 0,
            zeno: ZenoWatch::default(),
            stop_firings: 0,
            geometry: None,
            next_progress: PROGRESS_EVERY_STEPS,
        };
        if run.extra.wants_event_geometry() || run.observer.wants_event_geometry() {
            run.geometry = Some(GeometryWorkspace::new(n, system.param_dim()));
        }
        for &k in &run.structure.leaving[run.mode] {
            let tr = &system.transitions()[k];
            let g = run.guard_value(k);
            // As in the integrator, with a start band a guard within it sits
            // on zero and takes the side its rate points to (`g_x = 1`), and
            // one beyond zero heading back is disarmed. A guard heading away
            // is never predicted to cross: its entry is monotone.
            let direction = tr.guard.direction();
            let band = problem.start_band;
            let heading = if band > 0.0 && g.abs() <= band {
                run.guard_rate(k)
            } else {
                g
            };
            let disarmed = band > 0.0
                && g.abs() > band
                && direction.violated_at_start(g)
                && direction.heads_back(run.guard_rate(k));
            if direction.violated_at_start(heading) && !disarmed {
                return Err(HybridError::GuardViolatedAtStart {
                    transition: tr.name.clone(),
                    value: g,
                    direction: format!("{:?}", tr.guard.direction()).to_lowercase(),
                });
            }
        }
        run.enter_mode();
        Ok(run)
    }

    /// The rate of transition `k`'s guard in the current mode: that of its
    /// threshold's entry, `a x + b` (`g_x` is 1 there).
    fn guard_rate(&self, k: usize) -> f64 {
        let i = self.structure.thresholds[k].state;
        self.structure.a[self.mode][i] * self.x[i] + self.structure.b[self.mode][i]
    }

    fn guard_value(&self, k: usize) -> f64 {
        let threshold = self.structure.thresholds[k];
        self.x[threshold.state] - threshold.level
    }

    /// Groups the components by their `a` in the current mode and predicts
    /// every guard leaving it.
    fn enter_mode(&mut self) {
        let a = &self.structure.a[self.mode];
        self.rates.clear();
        self.rates.extend_from_slice(a);
        self.rates.sort_by(f64::total_cmp);
        self.rates
            .dedup_by(|p, q| p.total_cmp(q) == Ordering::Equal);
        for (slot, ai) in self.rate_of.iter_mut().zip(a) {
            *slot = self
                .rates
                .binary_search_by(|r| r.total_cmp(ai))
                .expect("every rate is listed");
        }
        self.phis.resize(self.rates.len(), 0.0);
        self.chis.resize(self.rates.len(), 0.0);
        self.queue.clear();
        for k in 0..self.structure.leaving[self.mode].len() {
            let k = self.structure.leaving[self.mode][k];
            self.predict(k);
        }
    }

    /// Replaces transition `k`'s predicted crossing by one from the
    /// current state.
    fn predict(&mut self, k: usize) {
        let threshold = self.structure.thresholds[k];
        let i = threshold.state;
        let direction = self.problem.system.transitions()[k].guard.direction();
        let (a, b) = (
            self.structure.a[self.mode][i],
            self.structure.b[self.mode][i],
        );
        let delay = crossing_delay(self.x[i], a, b, threshold.level, direction);
        self.queue.set(k, delay.map(|s| self.t + s));
    }

    fn context(&self) -> RunContext<'p> {
        RunContext {
            system: self.problem.system,
            params: &self.problem.params,
        }
    }

    /// Brings every component from `self.t` to `t`, and the carried ones
    /// with them.
    fn advance(&mut self, t: f64) -> Result<(), HybridError> {
        let s = t - self.t;
        if s > 0.0 {
            self.observer
                .stretch_taken(self.context(), self.mode, self.t, s, &self.x);
            for (phi_r, &a) in self.phis.iter_mut().zip(&self.rates) {
                *phi_r = phi(a, s);
            }
            // The carried components read the state at the stretch's start.
            if !self.carried.is_empty() {
                self.carry(s)?;
            }
            let (a, b) = (&self.structure.a[self.mode], &self.structure.b[self.mode]);
            if let [phi] = self.phis[..] {
                // One rate for all (a network with a shared time constant).
                for ((x, &ai), &bi) in self.x.iter_mut().zip(a).zip(b) {
                    advance_component(x, ai, bi, phi);
                }
            } else {
                for (((x, &ai), &bi), &r) in self.x.iter_mut().zip(a).zip(b).zip(&self.rate_of) {
                    advance_component(x, ai, bi, self.phis[r]);
                }
            }
        }
        self.t = t;
        Ok(())
    }

    /// Carries the extra components over `s` from the current state, with
    /// `self.phis` already formed for `s`.
    fn carry(&mut self, s: f64) -> Result<(), HybridError> {
        let (a, b) = (&self.structure.a[self.mode], &self.structure.b[self.mode]);
        for (chi_r, &r) in self.chis.iter_mut().zip(&self.rates) {
            *chi_r = chi(r, s);
        }
        for i in 0..self.x.len() {
            let r = self.rate_of[i];
            self.span_rate[i] = a[i] * self.x[i] + b[i];
            self.span_decay[i] = decay(a[i], self.phis[r]);
            self.span_phi[i] = self.phis[r];
            self.span_chi[i] = self.chis[r];
        }
        let span = ExactSpan {
            s,
            rate: &self.span_rate,
            decay: &self.span_decay,
            phi: &self.span_phi,
            chi: &self.span_chi,
        };
        let run = self.context();
        if self
            .extra
            .advance_exact(run, self.mode, self.t, &self.x, &span, &mut self.carried)
        {
            Ok(())
        } else {
            Err(HybridError::Unsupported(
                "the exact solver cannot carry these extra components between events (ExtraState::advance_exact)".into(),
            ))
        }
    }

    /// The state and the carried components, as an [`Observer`] reads them.
    fn full_state(&self) -> Vec<f64> {
        self.x.iter().chain(&self.carried).copied().collect()
    }

    /// Records the observations due before `t` (or at it, when `through`).
    fn observe_until(&mut self, t: f64, through: bool) -> Result<(), HybridError> {
        let times = &self.problem.observation_times;
        while let Some(&time) = times.get(self.next_observation) {
            if time > t || (time == t && !through) {
                break;
            }
            self.advance(time)?;
            self.trajectory.observations.push(Observation {
                time,
                mode: self.mode,
                state: self.x.clone(),
            });
            let index = self.next_observation;
            let full = self.full_state();
            self.observer.observed(self.context(), index, time, &full);
            self.next_observation += 1;
        }
        Ok(())
    }

    fn go(mut self) -> Result<Trajectory, HybridError> {
        let t_end = self.problem.t_end;
        loop {
            let next = self.queue.first().filter(|&(time, _)| time < t_end);
            let Some((time, transition)) = next else {
                self.observe_until(t_end, true)?;
                self.advance(t_end)?;
                return Ok(self.finish());
            };
            self.observe_until(time, true)?;
            self.queue.set(transition, None);
            self.advance(time)?;
            if self.fire_cascade(transition)? {
                return Ok(self.finish());
            }
            self.report_progress();
        }
    }

    /// Tells the progress hook, if there is one, every
    /// [`PROGRESS_EVERY_STEPS`] events (the exact solver's unit of work; it
    /// takes no steps).
    fn report_progress(&mut self) {
        let events = self.trajectory.stats.events;
        let Some(hook) = self.problem.progress else {
            return;
        };
        if events >= self.next_progress {
            self.next_progress = events + PROGRESS_EVERY_STEPS;
            (hook.0)(&Progress {
                t0: self.problem.t0,
                time: self.t,
                t_end: self.problem.t_end,
                steps: 0,
                events,
            });
        }
    }

    /// Fires `k` at `self.t`, then every transition it makes due, first
    /// declared first. Returns whether the run ended (a terminal
    /// transition, or [`Problem::stop_after`]).
    fn fire_cascade(&mut self, mut k: usize) -> Result<bool, HybridError> {
        let root = self.trajectory.stats.events;
        let mut cascade_of = None;
        loop {
            if self.fire(k, cascade_of)? {
                return Ok(true);
            }
            let due = &self.due;
            self.due_list.retain(|&j| due[j]);
            match self.due_list.iter().copied().min() {
                Some(next) => {
                    self.due[next] = false;
                    k = next;
                    cascade_of = Some(root);
                }
                None => return Ok(false),
            }
        }
    }

    /// Applies transition `k` at `self.t`.
    fn fire(&mut self, k: usize, cascade_of: Option<usize>) -> Result<bool, HybridError> {
        let system = self.problem.system;
        let tr = &system.transitions()[k];
        let (t, from) = (self.t, self.mode);
        let guard_rate = self.guard_rate(k);
        tr.reset
            .apply(t, &self.x, &self.problem.params, &mut self.x_after);
        self.changed.clear();
        match tr.reset.writes() {
            Some(writes) => self.changed.extend(
                writes
                    .iter()
                    .copied()
                    .filter(|&j| self.x[j].to_bits() != self.x_after[j].to_bits()),
            ),
            None => {
                let moved = self.x.iter().zip(&self.x_after).enumerate();
                let moved = moved.filter(|(_, (a, b))| a.to_bits() != b.to_bits());
                self.changed.extend(moved.map(|(j, _)| j));
            }
        }
        // Only what the reset changed can have become non-finite.
        if let Some(&j) = self.changed.iter().find(|&&j| !self.x_after[j].is_finite()) {
            return Err(HybridError::NonFinite {
                what: format!(
                    "state after the reset of '{}' (= {})",
                    tr.name, self.x_after[j]
                ),
                time: t,
                trajectory: Some(Box::new(self.snapshot())),
            });
        }
        self.close_segment();
        let recording = self.problem.events.record;
        if recording.keeps_any() {
            let index = self.trajectory.stats.events;
            self.trajectory.events.push(EventRecord {
                index,
                time: t,
                transition: k,
                from_mode: from,
                to_mode: tr.to,
                guard_rate,
                terminal: tr.terminal,
                cascade_of,
            });
            let states = &mut self.trajectory.event_states;
            states.extend_from_slice(&self.x);
            states.extend_from_slice(&self.x_after);
            trim_events(recording, &mut self.trajectory, false);
        }
        self.trajectory.stats.events += 1;
        let event = EventAt {
            transition: k,
            time: t,
            state_before: &self.x,
            state_after: &self.x_after,
            cascade_of,
        };
        let geometry = self
            .geometry
            .as_mut()
            .map(|g| g.compute(system, &self.problem.params, event));
        let jump = EventJump {
            index: self.trajectory.stats.events - 1,
            transition: k,
            time: t,
            from_mode: from,
            to_mode: tr.to,
            state_before: &self.x,
            state_after: &self.x_after,
            terminal: tr.terminal,
            cascade_of,
            geometry,
        };
        let run = RunContext {
            system,
            params: &self.problem.params,
        };
        if !self.carried.is_empty() {
            self.extra
                .jump(run, &jump, &self.carried, &mut self.carried_after)?;
            std::mem::swap(&mut self.carried, &mut self.carried_after);
        }
        self.observer.event(run, &jump)?;
        // The guards' values before the reset, for the ones it moves.
        std::mem::swap(&mut self.x, &mut self.x_after);
        self.mode = tr.to;
        let count = self.trajectory.stats.events;
        if let Some(reason) = self.zeno.after_event(self.problem, count, t, cascade_of) {
            return Err(HybridError::Zeno {
                reason,
                last_event_time: t,
                trajectory: Box::new(self.snapshot()),
            });
        }
        let stops = match self.problem.stop_after {
            Some(stop) if stop.transition == k => {
                self.stop_firings += 1;
                self.stop_firings == stop.firings
            }
            _ => false,
        };
        if tr.terminal || stops {
            return Ok(true);
        }
        if tr.to != from {
            self.due.fill(false);
            self.due_list.clear();
            self.enter_mode();
            for j in 0..self.structure.leaving[self.mode].len() {
                let j = self.structure.leaving[self.mode][j];
                let direction = system.transitions()[j].guard.direction();
                let g = self.guard_value(j);
                // Beyond zero and heading back, a guard is disarmed: it has
                // not crossed, and its component, monotone over the
                // stretch, cannot come back to cross in its direction.
                self.due[j] = if g == 0.0 {
                    self.heads_into(j, direction)
                } else {
                    direction.violated_at_start(g) && !direction.heads_back(self.guard_rate(j))
                };
                if self.due[j] {
                    self.due_list.push(j);
                }
            }
            return Ok(false);
        }
        for c in 0..self.changed.len() {
            let state = self.changed[c];
            for g in 0..self.structure.guards_on[self.mode][state].len() {
                let j = self.structure.guards_on[self.mode][state][g];
                let direction = system.transitions()[j].guard.direction();
                let level = self.structure.thresholds[j].level;
                let (before, after) = (self.x_after[state] - level, self.x[state] - level);
                // Beyond zero and not due, a guard is disarmed (a mode
                // switch left it there heading back): a reset that leaves
                // it beyond does not fire it, as in the integrator.
                let disarmed = !self.due[j] && before != 0.0 && direction.violated_at_start(before);
                let due = !disarmed && pushed_over(direction, before, after);
                if due && !self.due[j] {
                    self.due_list.push(j);
                }
                self.due[j] = due;
                self.predict(j);
            }
        }
        Ok(false)
    }

    /// Whether guard `j`, on zero, heads into its crossing direction.
    fn heads_into(&self, j: usize, direction: Direction) -> bool {
        let rate = self.guard_rate(j);
        match direction {
            Direction::Rising => rate > 0.0,
            Direction::Falling => rate < 0.0,
            Direction::Either => rate != 0.0,
        }
    }

    fn close_segment(&mut self) {
        let recording = self.problem.events.record;
        if recording.keeps_any() {
            self.trajectory.segments.push(Segment {
                mode: self.mode,
                start_time: self.segment_start,
                end_time: self.t,
                steps: 0,
            });
            recording.trim(&mut self.trajectory.segments, false);
        }
        self.segment_start = self.t;
    }

    /// The run so far, for an error.
    fn snapshot(&self) -> Trajectory {
        let mut trajectory = self.trajectory.clone();
        trajectory.final_time = self.t;
        trajectory.final_state = self.x.clone();
        trajectory.final_mode = self.mode;
        trajectory
    }

    fn finish(mut self) -> Trajectory {
        let full = self.full_state();
        self.observer.finished(self.context(), self.t, &full);
        if self.segment_start < self.t || self.trajectory.stats.events == 0 {
            self.close_segment();
        }
        let recording = self.problem.events.record;
        trim_events(recording, &mut self.trajectory, true);
        recording.trim(&mut self.trajectory.segments, true);
        self.trajectory.final_time = self.t;
        self.trajectory.final_mode = self.mode;
        self.trajectory.final_state = self.x;
        self.trajectory
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference: the closed form `x(s) = x_inf + (x - x_inf) e^{a s}`,
    /// `x_inf = -b / a`, solved for `x(s) = c` by hand.
    #[test]
    fn crossing_delays_match_the_closed_form() {
        // Relaxing up towards 1.2 from 0: reaches 1 after tau ln(1.2/0.2).
        let (a, b) = (-100.0, 120.0);
        let s = crossing_delay(0.0, a, b, 1.0, Direction::Rising).unwrap();
        assert!((s - 0.01 * (1.2f64 / 0.2).ln()).abs() < 1e-15);
        // Never reaches a level beyond its equilibrium, nor one behind it.
        assert_eq!(crossing_delay(0.0, a, b, 1.3, Direction::Rising), None);
        assert_eq!(crossing_delay(0.5, a, b, 0.2, Direction::Rising), None);
        // Falling through a level, and the direction check.
        let s = crossing_delay(1.0, -2.0, 0.0, 0.5, Direction::Falling).unwrap();
        assert!((s - 0.5 * 2f64.ln()).abs() < 1e-15);
        assert_eq!(crossing_delay(1.0, -2.0, 0.0, 0.5, Direction::Rising), None);
        // Growing away from its equilibrium, and a constant rate.
        let s = crossing_delay(1.0, 1.0, 0.0, std::f64::consts::E, Direction::Either).unwrap();
        assert!((s - 1.0).abs() < 1e-15);
        assert_eq!(
            crossing_delay(1.0, 0.0, 2.0, 3.0, Direction::Rising),
            Some(1.0)
        );
        assert_eq!(crossing_delay(1.0, 0.0, 0.0, 3.0, Direction::Rising), None);
    }

    /// Reference: `phi(a, s) = (e^{a s} - 1) / a` and its limit `s`.
    #[test]
    fn phi_carries_the_rate_exactly() {
        assert_eq!(phi(0.0, 0.25), 0.25);
        assert!((phi(-100.0, 0.01) - (1.0 - (-1.0f64).exp()) / 100.0).abs() < 1e-17);
        // Tiny a s: no cancellation.
        assert!((phi(1e-12, 1.0) - 1.0).abs() < 1e-12);
    }
}
