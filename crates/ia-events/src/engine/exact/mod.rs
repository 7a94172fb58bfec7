//! The exact event-driven solver, for systems whose flows are decoupled
//! and linear (or made of 2x2 linear pairs) and whose guards are thresholds
//! on one state entry or on time: spiking
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
//! A flow may declare instead small linear blocks
//! ([`Flow::linear_blocks`](ia_core::Flow::linear_blocks)): decoupled
//! entries as above and 2x2 pairs `[x_i, x_j]' = A [x_i, x_j] + b` with real
//! rates, such as a current-based neuron (`tau_mem V' = -V + I`,
//! `tau_syn I' = -I`). A pair is carried by its matrix exponential in
//! closed form ([`advance_pair`]), and a threshold on one of its entries,
//! which may rise and fall back within a stretch, is predicted by
//! [`first_crossing`] (its one interior extremum in closed form, then a
//! bracketed root polished to the last double); a reset that moves either
//! entry of a pair predicts again the guards on both. The formulas are
//! those of [`PairRates`] and [`first_crossing`] (and the method
//! document's section on this solver).
//!
//! When nothing reads the whole state at every event (the records keep no
//! event states, [`EventOptions::event_states`](crate::EventOptions::event_states)
//! `false`; nothing is carried along; the observer reads no states,
//! [`Observer::reads_states`]) and every reset declares the entries it reads
//! and writes ([`Reset::reads`](ia_core::Reset::reads),
//! [`Reset::writes`](ia_core::Reset::writes)), each block (a decoupled entry
//! or a pair) is kept at its own last update time instead: an event brings
//! to its time only its guard's block and the blocks its reset reads and
//! writes, applies the reset in place
//! ([`Reset::apply_in_place`](ia_core::Reset::apply_in_place)) and predicts
//! again the guards on what it changed, so it costs its fan-out, not `n`
//! (a spiking network's spike: its neuron and its targets). Observations,
//! a mode switch and the end bring every block up to date. A block carried
//! over one long stretch rounds differently from one carried over the
//! several stretches between the events it took no part in: such a run
//! agrees with the eager one to rounding, not to the bit. An observer that
//! reads states may still take such a run's events
//! ([`Observer::takes_lazy_events`], the adjoint's tape): it is shown each
//! event's touched blocks ([`LazyJump`](crate::LazyJump)), when the run
//! has no mode switches and no terminal transitions.
//!
//! A guard that declares a threshold on time
//! ([`Guard::time_threshold`](ia_core::Guard::time_threshold),
//! `g = t - c`, such as an input spike) rises at rate 1: it is predicted
//! once, when its mode is entered, at `t = c` exactly if that lies ahead,
//! and no reset moves it.
//!
//! The event rules are every engine's ([`crate::vocabulary`]; what this
//! solver needs of them is said there). After a reset only the guards on
//! the entries it changed are checked for a cascade (those it declares,
//! [`Reset::writes`](ia_core::Reset::writes), or found by comparing the
//! states). The records, observations, the Zeno rule, `max_events`,
//! [`Problem::stop_after`] and the progress hook are the shared
//! recorder's (the hook is told every [`PROGRESS_EVERY_STEPS`] events).
//! The times are exact up to rounding, with no time tolerance; the solver
//! takes no steps (`stats.steps` is 0).
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

mod lazy;
mod queue;
mod structure;
mod sweep;

pub(crate) use sweep::PlanCache;

pub use crate::closed_form::{advance_state, chi, decay, phi, ExactSpan};
pub use crate::pair_form::{
    advance_pair, first_crossing, PairCotangent, PairFactors, PairRates, PairStretch,
    PairTransposeBasis,
};

use crate::closed_form::advance_component;
use crate::geometry::{EventAt, GeometryWorkspace};
use crate::pair_form::{first_crossing_from, PairStart};
use crate::problem::Problem;
#[cfg(doc)]
use crate::problem::PROGRESS_EVERY_STEPS;
use crate::recorder::{RecordBuffers, Recorder};
use crate::vocabulary::{EventJump, ExtraState, NoExtraState, NoObserver, Observer, RunContext};
use ia_core::{Direction, EventRecord, HybridError, HybridSystem, Threshold, Trajectory};
use queue::CrossingQueue;
use std::cmp::Ordering;
use structure::{crossing_delay, pushed_over, Level, Structure, NO_PAIR};

/// Why a system cannot be run by the exact solver, or `Ok` when it can:
/// every mode's flow must declare [`Flow::decoupled_linear`](ia_core::Flow::decoupled_linear)
/// or [`Flow::linear_blocks`](ia_core::Flow::linear_blocks) (pairs with
/// real rates) and every guard a [`Threshold`](ia_core::Guard::threshold)
/// or a [time threshold](ia_core::Guard::time_threshold), at the parameters
/// `params`.
///
/// ```
/// let ball = ia_models::by_name("ball2d-flat").unwrap();
/// let (system, spec) = (ball.system(), ball.spec());
/// let err = ia_events::exact::check(&system, &spec.default_params()).unwrap_err();
/// assert!(err.to_string().contains("is not of that form"), "{err}");
/// ```
pub fn check(system: &HybridSystem, params: &[f64]) -> Result<(), HybridError> {
    Structure::of(system, params).map(|_| ())
}

/// Whether [`simulate`] runs `problem` by the layered sweep (see the
/// module `sweep`): a lazy run of a feed-forward system (every transition
/// in one mode, guards on time or on entries of linear pairs, one a pair,
/// resets that write pairs only and each written entry from itself,
/// [`Reset::writes_entrywise`](ia_core::Reset::writes_entrywise), kicks
/// that reach a pair only from earlier layers; no observations and no
/// [`Problem::stop_after`]) is run one layer of blocks after another
/// instead of one event after another, with the same events, times and
/// final state to the bit. `false` also when the problem is invalid or the
/// exact solver cannot run it. A sweep may still hand the run to the
/// general one on the way (an event that makes another due at its
/// instant, a non-finite state, `max_events` or the Zeno rule), which then
/// reports it as it does.
///
/// ```
/// use ia_events::{exact, EventOptions, Problem};
/// use ia_models::Model;
///
/// let net = ia_models::CubaLif::new(2, 5, 2).unwrap();
/// let (system, spec) = (net.system(), net.spec());
/// let lazy = EventOptions { event_states: false, ..EventOptions::default() };
/// let problem = Problem::new(&system, spec.default_state(), spec.default_params(), spec.t_end)
///     .with_event_options(lazy);
/// assert!(exact::sweeps(&problem));
/// let (swept, queued) = (exact::simulate(&problem).unwrap(), exact::simulate_without_sweep(&problem).unwrap());
/// assert_eq!(swept.events, queued.events);
/// assert_eq!(swept.final_state, queued.final_state);
/// ```
pub fn sweeps(problem: &Problem<'_>) -> bool {
    if problem.validate().is_err() || !sweepable(problem, &NoExtraState, &NoObserver) {
        return false;
    }
    Structure::of(problem.system, &problem.params)
        .is_ok_and(|structure| sweep::Plan::of(problem, &structure).is_some())
}

/// [`simulate`] by the general run alone, one event after another from a
/// queue of predicted crossings, never by the layered sweep
/// ([`sweeps`]): the same events, times and final state to the bit (the
/// sweep's tests compare the two), for timing the two ways or ruling the
/// sweep out.
pub fn simulate_without_sweep(problem: &Problem<'_>) -> Result<Trajectory, HybridError> {
    let records = &mut RecordBuffers::default();
    general_run(
        problem,
        None,
        (records, &mut None),
        &mut NoExtraState,
        &mut NoObserver,
    )
}

/// Whether a run carrying `extra` and shown to `observer` may be swept:
/// a lazy run (see the module `lazy`) that carries nothing and whose
/// observer reads no states.
fn sweepable<E: ExtraState, O: Observer>(problem: &Problem<'_>, extra: &E, observer: &O) -> bool {
    !problem.events.event_states
        && extra.dim() == 0
        && !extra.wants_event_geometry()
        && !observer.reads_states()
        && !observer.wants_event_geometry()
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
    /// The pairs of [`ExactSpan::pairs`], when components are carried.
    span_pairs: Vec<PairStretch>,
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
    /// The factors of the mode's distinct pair matrices for the delay
    /// being taken.
    pair_factors: Vec<PairFactors>,
    queue: CrossingQueue,
    /// Transitions due at once (a cascade), by index, and a list holding
    /// at least those.
    due: Vec<bool>,
    due_list: Vec<usize>,
    changed: Vec<usize>,
    /// The values before the reset of the entries in `changed`.
    changed_before: Vec<f64>,
    /// Whether each linear block is kept at its own last update time (see
    /// the module `lazy`): then `entry_time` holds each entry's.
    lazy: bool,
    entry_time: Vec<f64>,
    /// In a lazy run, the lengths `phis` and `pair_factors` were last
    /// formed for (blocks last touched together are brought up together:
    /// their factors are formed once).
    phi_lengths: Vec<f64>,
    factor_lengths: Vec<f64>,
    /// In a lazy run, per matrix, the length and factors formed before
    /// those in `factor_lengths` and `pair_factors` (the two most recent:
    /// an input reaching a layer brings most neurons over one length and
    /// those that fired since over others, alternately).
    spare_factors: Vec<(f64, PairFactors)>,
    /// In a lazy run, per transition, whether its queued time is exact or
    /// a lower bound ([`crate::rough_crossing`]), to be made tighter or
    /// found exactly when it comes first.
    queued: Vec<lazy::Queued>,
    /// In a lazy run whose observer takes its events
    /// ([`Observer::takes_lazy_events`]), what it is shown of each.
    taping: Option<lazy::LazyTaping>,
    /// The records, observations, Zeno watch, `stop_after` and progress.
    recorder: Recorder<'p>,
    /// Each event's geometry, formed when the carried components or the
    /// observer read it.
    geometry: Option<GeometryWorkspace>,
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
    let records = &mut RecordBuffers::default();
    run_in(problem, (records, &mut None), None, extra, observer)
}

/// [`run`] in a workspace's buffers: its records' and its event
/// geometry's, and its structure and sweep plan kept from its previous run (`plans`;
/// `None`: a one-off run, whose plan is found and dropped).
pub(crate) fn run_in<E: ExtraState, O: Observer>(
    problem: &Problem<'_>,
    buffers: (&mut RecordBuffers, &mut Option<GeometryWorkspace>),
    plans: Option<&mut PlanCache>,
    extra: &mut E,
    observer: &mut O,
) -> Result<Trajectory, HybridError> {
    if sweepable(problem, extra, observer) {
        problem.validate()?;
        let structure = match plans {
            Some(plans) => {
                let (structure, plan, sweep_buffers) = plans.structure_and_plan(problem)?;
                let swept = sweep_on(problem, structure, plan, sweep_buffers, buffers.0, observer);
                if let Some(swept) = swept {
                    return swept;
                }
                match plans.take_structure() {
                    Some(structure) => structure,
                    None => Structure::of(problem.system, &problem.params)?,
                }
            }
            None => {
                let structure = Structure::of(problem.system, &problem.params)?;
                let plan = sweep::Plan::of(problem, &structure);
                let mut sweep_buffers = sweep::SweepBuffers::default();
                let (records, plan) = (&mut *buffers.0, plan.as_ref());
                let swept = sweep_on(
                    problem,
                    &structure,
                    plan,
                    &mut sweep_buffers,
                    records,
                    observer,
                );
                if let Some(swept) = swept {
                    return swept;
                }
                structure
            }
        };
        // The problem is valid and its structure built: the general run
        // takes both as they are.
        return general_run(problem, Some(structure), buffers, extra, observer);
    }
    general_run(problem, None, buffers, extra, observer)
}

/// The run of `problem` by the layered sweep `plan` over `structure`, or
/// `None` where there is no plan or the sweep hands the run over (see the
/// module `sweep`).
fn sweep_on<O: Observer>(
    problem: &Problem<'_>,
    structure: &Structure,
    plan: Option<&sweep::Plan>,
    sweep_buffers: &mut sweep::SweepBuffers,
    records: &mut RecordBuffers,
    observer: &mut O,
) -> Option<Result<Trajectory, HybridError>> {
    let plan = plan?;
    if let Err(e) = check_start(problem, structure, &problem.initial_state) {
        return Some(Err(e));
    }
    sweep::run(problem, (structure, plan), sweep_buffers, records, observer).ok()
}

/// [`run_in`] by the general run (one event after another), on
/// `structure` when the caller has validated `problem` and built it.
fn general_run<E: ExtraState, O: Observer>(
    problem: &Problem<'_>,
    structure: Option<Structure>,
    buffers: (&mut RecordBuffers, &mut Option<GeometryWorkspace>),
    extra: &mut E,
    observer: &mut O,
) -> Result<Trajectory, HybridError> {
    let structure = match structure {
        Some(structure) => structure,
        None => {
            problem.validate()?;
            Structure::of(problem.system, &problem.params)?
        }
    };
    let carried = (extra.dim() > 0 || extra.wants_event_geometry()) && !extra.carries_pairs();
    if structure.has_pairs() && carried {
        return Err(HybridError::Unsupported(
            "these extra components cannot be carried through a flow of linear pairs (Flow::linear_blocks) by the exact solver (ExtraState::carries_pairs): use a Runge-Kutta solver (dopri5, dop853)".into(),
        ));
    }
    let (records, geometry) = buffers;
    let mut run = Run::new(problem, structure, extra, observer, records, geometry);
    let result = match run.start() {
        Ok(()) => run.go(),
        Err(e) => Err(e),
    };
    run.release(records, geometry);
    result
}

impl<'p, E: ExtraState, O: Observer> Run<'p, E, O> {
    fn new(
        problem: &'p Problem<'p>,
        structure: Structure,
        extra: &'p mut E,
        observer: &'p mut O,
        records: &mut RecordBuffers,
        geometry: &mut Option<GeometryWorkspace>,
    ) -> Self {
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
            span_pairs: Vec::new(),
            structure,
            mode: problem.initial_mode,
            t: problem.t0,
            x: problem.initial_state.clone(),
            x_after: vec![0.0; n],
            rate_of: vec![0; n],
            rates: Vec::new(),
            phis: Vec::new(),
            chis: Vec::new(),
            pair_factors: Vec::new(),
            queue: CrossingQueue::new(transitions),
            due: vec![false; transitions],
            due_list: Vec::new(),
            changed: Vec::new(),
            changed_before: Vec::new(),
            lazy: false,
            entry_time: Vec::new(),
            phi_lengths: Vec::new(),
            factor_lengths: Vec::new(),
            spare_factors: Vec::new(),
            queued: vec![lazy::Queued::Exact; transitions],
            taping: None,
            recorder: Recorder::new(problem, records),
            geometry: None,
        };
        run.lazy = run.can_be_lazy();
        if !run.lazy && (run.extra.wants_event_geometry() || run.observer.wants_event_geometry()) {
            run.geometry = Some(GeometryWorkspace::reuse(geometry, n, system.param_dim()));
        }
        if run.lazy {
            run.entry_time = vec![problem.t0; n];
            if run.observer.takes_lazy_events() {
                run.taping = Some(lazy::LazyTaping::new(n));
                let context = run.context();
                run.observer.starts_lazily(context);
            }
        }
        run
    }

    /// Gives the buffers back to `records` and `geometry`.
    fn release(self, records: &mut RecordBuffers, geometry: &mut Option<GeometryWorkspace>) {
        if self.geometry.is_some() {
            *geometry = self.geometry;
        }
        self.recorder.release(records);
    }

    /// Checks the guards at the start (rule 9 of the event rules,
    /// [`check_start`]) and predicts their crossings.
    fn start(&mut self) -> Result<(), HybridError> {
        check_start(self.problem, &self.structure, &self.x)?;
        self.enter_mode();
        Ok(())
    }

    /// The rate of transition `k`'s guard in the current mode
    /// ([`guard_rate`]).
    fn guard_rate(&self, k: usize) -> f64 {
        guard_rate(&self.structure, self.mode, &self.x, k)
    }

    /// The rate of entry `i` from its block's state ([`entry_rate`]).
    fn entry_rate(&self, i: usize) -> f64 {
        entry_rate(&self.structure, self.mode, &self.x, i)
    }

    fn guard_value(&self, k: usize) -> f64 {
        match self.structure.thresholds[k] {
            Level::State(threshold) => self.x[threshold.state] - threshold.level,
            Level::Time(level) => self.t - level,
        }
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
        let zero = PairFactors {
            e0: 0.0,
            e1: 0.0,
            p0: 0.0,
            p1: 0.0,
        };
        self.pair_factors.clear();
        self.pair_factors
            .resize(self.structure.matrices[self.mode].len(), zero);
        self.phi_lengths.clear();
        self.phi_lengths.resize(self.rates.len(), f64::NAN);
        self.factor_lengths.clear();
        self.factor_lengths
            .resize(self.structure.matrices[self.mode].len(), f64::NAN);
        self.spare_factors.clear();
        self.spare_factors
            .resize(self.structure.matrices[self.mode].len(), (f64::NAN, zero));
        self.queue.clear();
        self.queue
            .begin_batch(self.structure.leaving[self.mode].len());
        for k in 0..self.structure.leaving[self.mode].len() {
            let k = self.structure.leaving[self.mode][k];
            self.predict(k);
        }
        self.queue.end_batch();
    }

    /// Replaces transition `k`'s predicted crossing by one from the
    /// current state.
    fn predict(&mut self, k: usize) {
        self.queued[k] = lazy::Queued::Exact;
        let direction = self.structure.directions[k];
        let threshold = match self.structure.thresholds[k] {
            Level::State(threshold) => threshold,
            Level::Time(level) => {
                // `g = t - level` rises at rate 1: it crosses once, at the
                // level exactly, when that is ahead.
                let fires = direction != Direction::Falling && level > self.t;
                self.queue.set(k, fires.then_some(level));
                return;
            }
        };
        let i = threshold.state;
        let (pair, slot) = self.structure.pair_of[self.mode][i];
        if pair != NO_PAIR {
            if self.lazy {
                self.predict_roughly(k, pair, slot, threshold, direction);
                return;
            }
            let delay = self.pair_crossing(pair, slot, threshold, direction);
            self.queue.set(k, delay.map(|s| self.t + s));
            return;
        }
        let (a, b) = (
            self.structure.a[self.mode][i],
            self.structure.b[self.mode][i],
        );
        let delay = crossing_delay(self.x[i], a, b, threshold.level, direction);
        self.queue.set(k, delay.map(|s| self.t + s));
    }

    /// The exact delay to the crossing of `threshold` (entry `slot` of pair
    /// `pair` of the mode) in `direction`, from the pair's state.
    fn pair_crossing(
        &self,
        pair: usize,
        slot: usize,
        threshold: Threshold,
        direction: Direction,
    ) -> Option<f64> {
        first_crossing_from(&self.pair_start(pair), slot, threshold.level, direction)
    }

    /// The stretch of pair `pair` of the mode from its state
    /// ([`PairStart`]), for its crossing searches.
    fn pair_start(&self, pair: usize) -> PairStart<'_> {
        let pair = &self.structure.pairs[self.mode][pair];
        let y = [self.x[pair.entries[0]], self.x[pair.entries[1]]];
        PairStart::new(&pair.a, &pair.b, &pair.rates, y)
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
        if self.lazy {
            self.flush(t);
            return Ok(());
        }
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
            self.advance_pairs(s);
        }
        self.t = t;
        Ok(())
    }

    /// Carries the mode's linear pairs over `s` (their entries' decoupled
    /// coefficients are zero, so the loop over components left them).
    fn advance_pairs(&mut self, s: f64) {
        let pairs = &self.structure.pairs[self.mode];
        if pairs.is_empty() {
            return;
        }
        for (f, rates) in self
            .pair_factors
            .iter_mut()
            .zip(&self.structure.matrices[self.mode])
        {
            *f = rates.factors(s);
        }
        for pair in pairs {
            let [i, j] = pair.entries;
            let mut y = [self.x[i], self.x[j]];
            advance_pair(
                &pair.a,
                &pair.b,
                &pair.rates,
                &self.pair_factors[pair.matrix],
                &mut y,
            );
            (self.x[i], self.x[j]) = (y[0], y[1]);
        }
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
        self.span_pairs.clear();
        for pair in &self.structure.pairs[self.mode] {
            for &i in &pair.entries {
                (self.span_rate[i], self.span_decay[i]) = (0.0, 1.0);
                (self.span_phi[i], self.span_chi[i]) = (0.0, 0.0);
            }
            self.span_pairs.push(PairStretch {
                entries: pair.entries,
                a: pair.a,
                b: pair.b,
                rates: pair.rates,
                factors: pair.rates.factors(s),
            });
        }
        let span = ExactSpan {
            s,
            rate: &self.span_rate,
            decay: &self.span_decay,
            phi: &self.span_phi,
            chi: &self.span_chi,
            pairs: &self.span_pairs,
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

    /// Records the observations due up to `t` (included), each at its own
    /// time.
    fn observe_until(&mut self, t: f64) -> Result<(), HybridError> {
        while let Some(time) = self.recorder.next_observation_time() {
            if time > t {
                break;
            }
            self.advance(time)?;
            let full = self.full_state();
            let run = self.context();
            self.recorder
                .observe(self.observer, run, self.mode, &full, self.x.len());
        }
        Ok(())
    }

    fn go(&mut self) -> Result<Trajectory, HybridError> {
        let t_end = self.problem.t_end;
        loop {
            if self.lazy {
                self.refine_first();
            }
            let next = self.queue.first().filter(|&(time, _)| time < t_end);
            let Some((time, transition)) = next else {
                self.observe_until(t_end)?;
                self.advance(t_end)?;
                return Ok(self.finish());
            };
            self.observe_until(time)?;
            self.queue.set(transition, None);
            if self.lazy {
                // Each block is brought to `time` when the event touches it.
                self.t = time;
            } else {
                self.advance(time)?;
            }
            if self.fire_cascade(transition)? {
                return Ok(self.finish());
            }
            let events = self.recorder.stats().events;
            self.recorder.progress(self.t, events);
        }
    }

    /// Fires `k` at `self.t`, then every transition it makes due, first
    /// declared first. Returns whether the run ended (a terminal
    /// transition, or [`Problem::stop_after`]).
    fn fire_cascade(&mut self, mut k: usize) -> Result<bool, HybridError> {
        let root = self.recorder.next_event_index();
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
        if self.lazy {
            self.bring_touched(k, tr.to != from);
        }
        let guard_rate = self.guard_rate(k);
        if self.taping.is_some() {
            self.touch_before(k, cascade_of, guard_rate);
        }
        self.changed.clear();
        self.changed_before.clear();
        if self.lazy {
            self.reset_in_place(k);
        } else {
            tr.reset
                .apply(t, &self.x, &self.problem.params, &mut self.x_after);
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
            let x = &self.x;
            self.changed_before
                .extend(self.changed.iter().map(|&j| x[j]));
        }
        // Only what the reset changed can have become non-finite.
        let after = if self.lazy { &self.x } else { &self.x_after };
        if let Some(&j) = self.changed.iter().find(|&&j| !after[j].is_finite()) {
            let value = after[j];
            if self.lazy {
                self.undo_reset();
            }
            return Err(HybridError::NonFinite {
                what: format!("state after the reset of '{}' (= {value})", tr.name),
                time: t,
                trajectory: Some(Box::new(self.snapshot())),
            });
        }
        if self.taping.is_some() {
            self.touch_after();
        }
        // Recorded first, then shown to the carried components and the
        // observer, then the Zeno rule and `stop_after` (the recorder's
        // order, every engine's).
        let index = self.recorder.next_event_index();
        let record = EventRecord {
            index,
            time: t,
            transition: k,
            from_mode: from,
            to_mode: tr.to,
            guard_rate,
            terminal: tr.terminal,
            cascade_of,
        };
        // A lazy run keeps no state per event (its blocks are at their own
        // times): its records and its observer get none.
        let (before, after): (&[f64], &[f64]) = if self.lazy {
            (&[], &[])
        } else {
            (&self.x, &self.x_after)
        };
        self.recorder.record_event(record, before, after);
        let event = EventAt {
            transition: k,
            time: t,
            state_before: before,
            state_after: after,
            cascade_of,
        };
        let geometry = self
            .geometry
            .as_mut()
            .map(|g| g.compute(system, &self.problem.params, event));
        let jump = EventJump {
            index,
            transition: k,
            time: t,
            from_mode: from,
            to_mode: tr.to,
            state_before: before,
            state_after: after,
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
        match &self.taping {
            Some(taping) => self.observer.lazy_event(run, &jump, &taping.jump())?,
            None => self.observer.event(run, &jump)?,
        }
        if !self.lazy {
            std::mem::swap(&mut self.x, &mut self.x_after);
        }
        self.mode = tr.to;
        let stops = self
            .recorder
            .after_event(t, k, cascade_of, &self.x, self.mode, |counts| counts);
        let stops = match stops {
            Err(e) if self.lazy => return Err(self.caught_up(e)),
            stops => stops?,
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
                let direction = self.structure.directions[j];
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
        self.queue.begin_batch(self.changed.len());
        for c in 0..self.changed.len() {
            let state = self.changed[c];
            for g in 0..self.structure.guards_on[self.mode].on(state).len() {
                let j = self.structure.guards_on[self.mode].on(state)[g];
                let direction = self.structure.directions[j];
                // Only state thresholds are listed in `guards_on`.
                let Level::State(threshold) = self.structure.thresholds[j] else {
                    continue;
                };
                if threshold.state != state {
                    // The reset moved the other entry of the guard's pair:
                    // its entry did not jump, its course did.
                    self.predict(j);
                    continue;
                }
                let level = threshold.level;
                let before = self.changed_before[c] - level;
                let after = self.x[state] - level;
                // Beyond zero and not due, a guard is disarmed (a mode
                // switch left it there heading back): a reset that leaves
                // it beyond does not fire it, as in the Runge-Kutta engine.
                let disarmed = !self.due[j] && before != 0.0 && direction.violated_at_start(before);
                let due = !disarmed && pushed_over(direction, before, after);
                if due && !self.due[j] {
                    self.due_list.push(j);
                }
                self.due[j] = due;
                self.predict(j);
            }
        }
        self.queue.end_batch();
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

    /// The run so far, for an error.
    fn snapshot(&mut self) -> Trajectory {
        if self.lazy {
            self.flush(self.t);
        }
        let stats = self.recorder.stats();
        self.recorder.snapshot(self.t, &self.x, self.mode, stats)
    }

    fn finish(&mut self) -> Trajectory {
        if self.lazy {
            self.flush(self.t);
        }
        let full = self.full_state();
        self.observer.finished(self.context(), self.t, &full);
        let stats = self.recorder.stats();
        self.recorder.finish(self.t, &self.x, self.mode, stats)
    }
}

/// Checks the guards leaving the initial mode at the start, from the state
/// `x` (rule 9 of the event rules): with a start band a guard within it
/// sits on zero and takes the side its rate points to (`g_x = 1`), and one
/// beyond zero heading back is disarmed. A guard heading away is never
/// predicted to cross: its entry is monotone.
fn check_start(problem: &Problem<'_>, structure: &Structure, x: &[f64]) -> Result<(), HybridError> {
    let (system, mode, t) = (problem.system, problem.initial_mode, problem.t0);
    for &k in &structure.leaving[mode] {
        let tr = &system.transitions()[k];
        let g = match structure.thresholds[k] {
            Level::State(threshold) => x[threshold.state] - threshold.level,
            Level::Time(level) => t - level,
        };
        let direction = tr.guard.direction();
        let band = problem.start_band;
        let rate = || guard_rate(structure, mode, x, k);
        let heading = if band > 0.0 && g.abs() <= band {
            rate()
        } else {
            g
        };
        let disarmed = band > 0.0
            && g.abs() > band
            && direction.violated_at_start(g)
            && direction.heads_back(rate());
        if direction.violated_at_start(heading) && !disarmed {
            return Err(HybridError::GuardViolatedAtStart {
                transition: tr.name.clone(),
                value: g,
                direction: format!("{:?}", tr.guard.direction()).to_lowercase(),
            });
        }
    }
    Ok(())
}

/// The rate of transition `k`'s guard in mode `mode` at the state `x`:
/// that of its threshold's entry ([`entry_rate`], `g_x` is 1 there), or 1
/// for a threshold on time.
fn guard_rate(structure: &Structure, mode: usize, x: &[f64], k: usize) -> f64 {
    match structure.thresholds[k] {
        Level::State(threshold) => entry_rate(structure, mode, x, threshold.state),
        Level::Time(_) => 1.0,
    }
}

/// The rate of entry `i` in mode `mode` from its block's state in `x`.
fn entry_rate(structure: &Structure, mode: usize, x: &[f64], i: usize) -> f64 {
    let (pair, slot) = structure.pair_of[mode][i];
    if pair != NO_PAIR {
        let pair = &structure.pairs[mode][pair];
        let [p, q] = pair.entries;
        let row = pair.a[slot];
        return row[0] * x[p] + row[1] * x[q] + pair.b[slot];
    }
    structure.a[mode][i] * x[i] + structure.b[mode][i]
}
