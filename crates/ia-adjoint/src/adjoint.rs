//! Reverse mode: the discrete adjoint of the steps the forward pass took.
//!
//! The forward pass stores, for every accepted step, its start time, size
//! and (see checkpointing below) start state, and for every event its
//! transition, time, cascade root, state before the reset, time shift
//! (by its nonzero entries for a system of 16 states or more) and
//! guard partials. The backward pass walks
//! the tape in reverse: each Runge-Kutta step is transposed exactly (the
//! step size held fixed) at the stage states the taped run formed and the
//! tape kept with its start state (formed again from its start, with the
//! same method object and the same bits, in a checkpointed segment), each
//! event applies `lambda- = Xi^T lambda+` and
//! `dL/dp += xi_p^T lambda+`, and a loss that reads event times adds
//! `-(dL/dt*) g_x / gdot` to `lambda-` and `-(dL/dt*) g_p / gdot` to `dL/dp`.
//!
//! An implicit (ESDIRK) step is transposed stage by stage with transposed
//! solves of `(I - h gamma J_i)` at the stage states the taped run solved
//! to rounding and the tape kept (solved again from the step's start only
//! in a checkpointed segment: the module `implicit` of this crate says
//! what is exact).
//!
//! The exact solver's taped run is lazy when the problem keeps no event
//! states and has no mode switches or terminal transitions (and no
//! checkpoint bound is asked for): the tape then holds each event's
//! touched blocks only, and the backward pass (the module `lazy` of this
//! one) keeps each entry's cotangent at its own time, so that an event
//! costs its fan-out backward as forward.
//!
//! Because it transposes the same linear maps the forward sensitivity
//! applies, the adjoint agrees with forward sensitivities computed on the
//! same steps to rounding.
//!
//! **Checkpointing** ([`AdjointOptions::checkpoints`]) bounds the tape: it
//! keeps the start state of at most about `2 K` steps (every step at first,
//! then every second, fourth, ... as the run grows), and the backward pass
//! replays the steps between two kept states from the earlier one with the
//! same method object ([`ButcherTableau::stages`] and
//! [`ButcherTableau::solution`]), taking each event's state after from its
//! record. The replayed states are the stepped ones to the last bit, so the
//! gradient is the full tape's exactly. The replay keeps each step's stage
//! states (`s n` floats for each step of the segment being replayed) for
//! the backward step, which would otherwise form them again: a replayed
//! step costs the same rate evaluations as a kept one. The per-step entries
//! stay on the tape: 16 bytes a step (start time and size; the mode and
//! whether its state is kept are derived) against `8 n` for a kept state.
//!
//! It is on by default with a bound that small runs never reach
//! ([`AUTOMATIC_CHECKPOINT_FLOATS`]): they keep every step's state and
//! replay nothing, while a run of millions of steps stays within tens of
//! megabytes of kept states.

mod lazy;
mod stretch;

use crate::implicit::ImplicitBuffers;
pub use crate::loss::LossSeeds;
use crate::saltation::SaltationWorkspace;
pub use crate::tape::{AdjointOptions, AUTOMATIC_CHECKPOINT_FLOATS};
use crate::tape::{Cursor, Tape, TapeEntry, TapedEvent};
use ia_core::{FlowPartials, HybridError, HybridSystem, Trajectory};
use ia_events::{ButcherTableau, EsdirkTableau, Problem, SpareVecs};
use stretch::mode_linear;

/// The backward pass checks the parameters' cotangent for overflow once
/// per this many tape entries (and at the start of the tape, its last
/// entry walked).
const PARAM_CHECK_EVERY: usize = 64;

/// How the forward pass went from one entry of the tape to the next, and so
/// what the backward pass transposes.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Stepping {
    /// The Runge-Kutta steps of this method (the step size held fixed).
    RungeKutta(&'static ButcherTableau),
    /// The steps of this implicit (ESDIRK) method (the step size held
    /// fixed, the stages solved exactly: [`crate::implicit`]).
    Implicit(&'static EsdirkTableau),
    /// The exact solver's closed-form stretches of a decoupled linear flow
    /// ([`ia_events::exact`]).
    Exact,
}

impl Stepping {
    /// The floats of a step's stages the backward pass reads, per state
    /// entry: the stage states of a Runge-Kutta step, the start state of a
    /// stretch.
    fn stages(self) -> usize {
        match self {
            Stepping::RungeKutta(tableau) => tableau.solution_stages(),
            Stepping::Implicit(tableau) => tableau.stages(),
            Stepping::Exact => 1,
        }
    }
}

/// What the backward pass transposes for `problem`'s solver: its
/// Runge-Kutta steps, or the exact solver's closed-form stretches.
pub(crate) fn adjoint_stepping(problem: &Problem<'_>) -> Result<Stepping, HybridError> {
    if problem.solver == ia_events::SolverChoice::Exact {
        return Ok(Stepping::Exact);
    }
    if let Some(method) = problem.solver.implicit_method() {
        return Ok(Stepping::Implicit(method));
    }
    problem
        .solver
        .tableau()
        .map(Stepping::RungeKutta)
        .ok_or_else(|| {
            HybridError::Unsupported(
                "the adjoint transposes the Runge-Kutta steps of the forward pass, which the ode_solvers adapter does not expose; use the built-in rk4, dopri5, dop853, trbdf2, kvaerno3 or kvaerno5 solver (SolverChoice::Rk4, SolverChoice::Dopri5, SolverChoice::Dop853, SolverChoice::Trbdf2, SolverChoice::Kvaerno3 or SolverChoice::Kvaerno5), or forward sensitivities (Method::Forward)".into(),
            )
        })
}

/// Buffers of the backward pass.
pub(crate) struct Backward<'a> {
    system: &'a HybridSystem,
    params: &'a [f64],
    stepping: Stepping,
    /// With [`Stepping::Exact`], each mode's `a` then `b` of
    /// `x' = a x + b` (`2 n` floats a mode).
    linear: Vec<f64>,
    /// With [`Stepping::Exact`], each mode's linear pairs
    /// ([`ia_core::Flow::linear_blocks`]; their entries' `a` and `b` in
    /// `linear` are zero).
    pairs: Vec<Vec<ia_core::LinearPair>>,
    /// The pairs' cotangent sources: three states (zero, one on every
    /// pair's first, second entry) and the vectors transposed at each.
    pair_work: Vec<f64>,
    n: usize,
    /// The flow's dense partials, for a flow without vector-Jacobian
    /// products: formed on first use (`n (n + n_p)` floats, 96 MB for a
    /// network of 1,000 neurons and its 11,003 parameters).
    partials: Option<FlowPartials>,
    // The larger buffers boxed: a pass takes them from its
    // `BackwardBuffers` and gives them back, moving a pointer each.
    saltation: Box<SaltationWorkspace>,
    vectors: Box<BackwardVectors>,
    /// Checkpointing: the tape position of the first step whose stage
    /// states `vectors.replay` holds.
    replay_from: usize,
    /// The implicit steps' stage solves and transposed solves.
    implicit: Box<ImplicitBuffers>,
}

/// The buffers of a [`Backward`] pass, kept between passes by a
/// [`crate::Workspace`].
#[derive(Default)]
pub(crate) struct BackwardBuffers {
    partials: Option<FlowPartials>,
    saltation: Option<Box<SaltationWorkspace>>,
    vectors: Option<Box<BackwardVectors>>,
    linear: Vec<f64>,
    implicit: Option<Box<ImplicitBuffers>>,
    /// The loss seeds of the last pass, for the next one's.
    seeds: Option<LossSeeds>,
}

/// The vectors of a backward pass.
#[derive(Default)]
struct BackwardVectors {
    stages: Vec<f64>,
    stage_states: Vec<f64>,
    stage_bars: Vec<f64>,
    state_bar: Vec<f64>,
    scratch: Vec<f64>,
    /// `(i, g_x[i])` over the guard's support at the event being transposed.
    guard_terms: Vec<(usize, f64)>,
    /// Checkpointing: the stage states of each step of the segment being
    /// walked back through (`s n` floats per tape entry, zeros for events
    /// and observations).
    replay: Vec<f64>,
    replay_state: Vec<f64>,
    replay_next: Vec<f64>,
    /// Vectors of results given back, for the gradients to come.
    results: SpareVecs,
    /// The lazy backward pass's per-entry vectors (`adjoint/lazy.rs`).
    lazy: lazy::LazyVectors,
}

impl BackwardBuffers {
    /// The bytes of the checkpointing replay buffer, the one of these that
    /// grows with the run (the others are a few vectors of `n` or `s n`).
    pub(crate) fn replay_bytes(&self) -> usize {
        self.vectors
            .as_ref()
            .map_or(0, |v| v.replay.capacity() * std::mem::size_of::<f64>())
    }

    /// Keeps `v`, a returned gradient's vector, for the next gradients.
    pub(crate) fn give_result(&mut self, v: Vec<f64>) {
        self.vectors
            .get_or_insert_with(Box::default)
            .results
            .give(v);
    }

    /// Zero loss seeds shaped for `trajectory` ([`LossSeeds::zeros`]), in
    /// the vectors of the last seeds kept.
    pub(crate) fn seeds_for(&mut self, trajectory: &Trajectory) -> LossSeeds {
        match self.seeds.take() {
            Some(kept) => kept.zeroed_for(trajectory),
            None => LossSeeds::zeros(trajectory),
        }
    }

    /// Keeps `seeds`' vectors for the next pass.
    pub(crate) fn keep_seeds(&mut self, seeds: LossSeeds) {
        self.seeds = Some(seeds);
    }
}

impl BackwardVectors {
    /// Ready for a pass of `n` states through a method of `s` stages (in
    /// place).
    fn prepare(&mut self, s: usize, n: usize) {
        use ia_events::workspace::refill;
        use std::mem::take;
        self.guard_terms.clear();
        self.guard_terms.reserve(n);
        for (vector, len) in [
            (&mut self.stages, s * n),
            (&mut self.stage_states, s * n),
            (&mut self.stage_bars, s * n),
            (&mut self.state_bar, n),
            (&mut self.scratch, n),
            (&mut self.replay, 0),
            (&mut self.replay_state, 0),
            (&mut self.replay_next, 0),
        ] {
            *vector = refill(take(vector), len, 0.0);
        }
    }
}

impl<'a> Backward<'a> {
    #[cfg(test)]
    pub(crate) fn new(
        system: &'a HybridSystem,
        params: &'a [f64],
        tableau: &'static ButcherTableau,
    ) -> Self {
        Self::new_in(
            system,
            params,
            Stepping::RungeKutta(tableau),
            &mut BackwardBuffers::default(),
        )
    }

    /// `Backward::new` (a test constructor) in the buffers of `kept` (taken from it; give them
    /// back with [`Backward::release`]). Nothing of an earlier pass is
    /// remembered.
    pub(crate) fn new_in(
        system: &'a HybridSystem,
        params: &'a [f64],
        stepping: Stepping,
        kept: &mut BackwardBuffers,
    ) -> Self {
        use std::mem::take;
        let (n, np) = (system.state_dim(), system.param_dim());
        let s = stepping.stages();
        let mut linear = take(&mut kept.linear);
        linear.clear();
        let mut pairs = Vec::new();
        if let Stepping::Exact = stepping {
            // The forward run checked that every mode declares its form.
            linear.resize(2 * n * system.modes().len(), 0.0);
            for (mode, ab) in system.modes().iter().zip(linear.chunks_exact_mut(2 * n)) {
                let mut blocks = ia_core::LinearBlocks::new(n);
                let declared = mode.flow.linear_blocks(params, &mut blocks);
                debug_assert!(declared, "the exact run checked every mode");
                for pair in &blocks.pairs {
                    for &i in &pair.entries {
                        (blocks.a[i], blocks.b[i]) = (0.0, 0.0);
                    }
                }
                let (a, b) = ab.split_at_mut(n);
                a.copy_from_slice(&blocks.a);
                b.copy_from_slice(&blocks.b);
                pairs.push(blocks.pairs);
            }
        }
        let pair_work = if pairs.iter().any(|p| !p.is_empty()) {
            vec![0.0; 6 * n]
        } else {
            Vec::new()
        };
        let partials = kept
            .partials
            .take()
            .filter(|p| p.x.nrows() == n && p.p.ncols() == np);
        let saltation = match kept.saltation.take() {
            Some(mut w) if w.dims() == (n, np) => {
                w.forget();
                w
            }
            _ => Box::new(SaltationWorkspace::new(n, np)),
        };
        Self {
            system,
            params,
            stepping,
            linear,
            pairs,
            pair_work,
            n,
            partials,
            saltation,
            vectors: {
                let mut vectors = kept.vectors.take().unwrap_or_default();
                vectors.prepare(s, n);
                vectors
            },
            replay_from: 0,
            implicit: {
                let mut implicit = kept.implicit.take().unwrap_or_default();
                implicit.begin();
                implicit
            },
        }
    }

    /// Gives the buffers back to `kept`.
    pub(crate) fn release(self, kept: &mut BackwardBuffers) {
        *kept = BackwardBuffers {
            partials: self.partials,
            saltation: Some(self.saltation),
            vectors: Some(self.vectors),
            linear: self.linear,
            implicit: Some(self.implicit),
            seeds: kept.seeds.take(),
        };
    }

    /// Makes sure `self.vectors.replay` holds the stage states of the step at tape
    /// `position`, step number `step` in `mode`, whose start state was not
    /// kept: if not, replays the segment from the last kept state before it
    /// up to it, keeping `s n` floats per tape entry from `replay_from` on.
    fn replay_segment(&mut self, tape: &Tape, position: usize, step: usize, mut mode: usize) {
        let n = self.n;
        let width = self.stepping.stages() * n;
        if self.replay_from <= position
            && (position - self.replay_from + 1) * width <= self.vectors.replay.len()
        {
            return;
        }
        // Back to the kept step, `step % stride` steps earlier, taking the
        // mode back across the events on the way.
        let mut start = position;
        let mut to_go = step % tape.stride;
        while to_go > 0 {
            start -= 1;
            match tape.entries[start].unpack() {
                TapeEntry::Step { .. } => to_go -= 1,
                TapeEntry::Event { index } => {
                    mode = self.system.transitions()[tape.events[index].transition as usize].from;
                }
                TapeEntry::Observation { .. } => {}
            }
        }
        let kept = tape
            .kept_state(step - step % tape.stride, n)
            .expect("a multiple of the stride is kept");
        self.vectors.replay.clear();
        self.replay_from = start;
        let mut y = std::mem::take(&mut self.vectors.replay_state);
        let mut next = std::mem::take(&mut self.vectors.replay_next);
        y.clear();
        y.extend_from_slice(kept);
        next.resize(n, 0.0);
        let params = self.params;
        for entry in &tape.entries[start..=position] {
            match (entry.unpack(), self.stepping) {
                (TapeEntry::Step { h, .. }, Stepping::Exact) => {
                    // The backward stretch reads its start state.
                    self.vectors.replay.extend_from_slice(&y);
                    let (a, b) = mode_linear(&self.linear, self.n, mode);
                    ia_events::exact::advance_state(a, b, h, &mut y);
                    for pair in &self.pairs[mode] {
                        let rates = ia_events::exact::PairRates::of(&pair.a);
                        let [i, j] = pair.entries;
                        let mut yp = [y[i], y[j]];
                        let factors = rates.factors(h);
                        ia_events::exact::advance_pair(&pair.a, &pair.b, &rates, &factors, &mut yp);
                        (y[i], y[j]) = (yp[0], yp[1]);
                    }
                }
                (TapeEntry::Step { t0, h }, Stepping::RungeKutta(tab)) => {
                    let flow = &self.system.modes()[mode].flow;
                    tab.stages(
                        &mut |t, y, out| flow.rate(t, y, params, out),
                        t0,
                        h,
                        &y,
                        0,
                        &mut self.vectors.stages,
                        &mut self.vectors.stage_states,
                    );
                    // The backward step reads these stage states, so it
                    // need not form them again.
                    self.vectors
                        .replay
                        .extend_from_slice(&self.vectors.stage_states);
                    tab.solution(h, &y, &self.vectors.stages, &mut next);
                    std::mem::swap(&mut y, &mut next);
                }
                (TapeEntry::Step { t0, h }, Stepping::Implicit(tab)) => {
                    let flow = &*self.system.modes()[mode].flow;
                    // The stages as the backward step solves them (a
                    // function of the start alone, so the same to the bit).
                    self.implicit.solve_stages(
                        tab,
                        (flow, params),
                        (t0, h, &y),
                        &mut self.vectors.stage_states,
                        &mut self.vectors.stages,
                    );
                    self.vectors
                        .replay
                        .extend_from_slice(&self.vectors.stage_states);
                    let last = self.vectors.stage_states.len() - n;
                    y.copy_from_slice(&self.vectors.stage_states[last..]);
                }
                (TapeEntry::Event { index }, _) => {
                    self.vectors
                        .replay
                        .resize(self.vectors.replay.len() + width, 0.0);
                    // The state after the reset, formed as the integrator
                    // formed it (the same function of the same state).
                    let event = tape.events[index];
                    let transition = &self.system.transitions()[event.transition as usize];
                    let before = &tape.event_states[n * index..n * (index + 1)];
                    transition.reset.apply(event.time, before, params, &mut y);
                    mode = transition.to;
                }
                (TapeEntry::Observation { .. }, _) => {
                    self.vectors
                        .replay
                        .resize(self.vectors.replay.len() + width, 0.0);
                }
            }
        }
        self.vectors.replay_state = y;
        self.vectors.replay_next = next;
    }

    /// Runs the backward pass over the whole of `tape` with `seeds`;
    /// returns `(dL/dx0, dL/dp)`.
    pub(crate) fn gradient(
        &mut self,
        tape: &Tape,
        trajectory: &Trajectory,
        seeds: &LossSeeds,
    ) -> Result<(Vec<f64>, Vec<f64>), HybridError> {
        self.gradient_from(tape, trajectory, seeds, tape.end())
    }

    /// Runs the backward pass from cursor `end` of `tape` (its entries
    /// before that position, in reverse) with `seeds`, which must seed
    /// nothing after it (no final-state seed unless `end` is the whole
    /// tape, [`Tape::end`]); returns `(dL/dx0, dL/dp)`. The entries after
    /// `end` would only carry a zero adjoint, so the result is that of the
    /// whole pass, at the cost of the steps before the seeded output.
    pub(crate) fn gradient_from(
        &mut self,
        tape: &Tape,
        trajectory: &Trajectory,
        seeds: &LossSeeds,
        end: Cursor,
    ) -> Result<(Vec<f64>, Vec<f64>), HybridError> {
        if tape.lazy {
            return self.lazy_gradient_from(tape, trajectory, seeds, end);
        }
        let (end, mut step) = (end.position.min(tape.entries.len()), end.steps);
        let mut mode = tape.mode_before(self.system, end);
        let first_recorded = trajectory.first_recorded_event();
        let mut lambda = self.vectors.results.copy_of(&seeds.final_state);
        let mut param_bar = self.vectors.results.zeros(self.system.param_dim());
        // dL/dt* of the located event that started the cascade being walked
        // back through, gathered from the events of that cascade.
        let mut cascade_time_bar = 0.0;
        // Where the guard partials of the events met so far end (walking
        // back, each event's begin where the next one's end).
        let mut guard_end = tape.guard_terms_before(self.system, end);
        self.vectors.replay.clear();
        self.replay_from = usize::MAX;
        for position in (0..end).rev() {
            let entry = tape.entries[position].unpack();
            let time = match entry {
                TapeEntry::Step { t0, .. } => t0,
                TapeEntry::Event { index } => tape.events[index].time,
                TapeEntry::Observation { index } => trajectory.observations[index].time,
            };
            match entry {
                TapeEntry::Observation { index } => {
                    for (l, s) in lambda.iter_mut().zip(&seeds.observations[index]) {
                        *l += s;
                    }
                }
                TapeEntry::Event { index } => {
                    // The seeds follow the recorded events, the last ones of
                    // the run when not all are kept.
                    let time_seed = index
                        .checked_sub(first_recorded)
                        .and_then(|k| seeds.event_times.get(k))
                        .copied()
                        .unwrap_or(0.0);
                    guard_end -= tape.guard_term_count(self.system, index);
                    let event = tape.event(index, self.n, guard_end);
                    self.event(
                        event,
                        time_seed,
                        &mut cascade_time_bar,
                        &mut lambda,
                        &mut param_bar,
                    );
                    mode = self.system.transitions()[event.transition].from;
                }
                TapeEntry::Step { t0, h } => {
                    step -= 1;
                    if let Some(y0) = tape.kept_state(step, self.n) {
                        match self.stepping {
                            Stepping::RungeKutta(tab) => match tape.kept_stages(step, self.n) {
                                // The stage states the forward step formed
                                // (the same function of its start as
                                // `Backward::step` forms: the same bits).
                                Some(stages) if stages.len() == tab.solution_stages() * self.n => {
                                    self.transpose_step(
                                        (mode, t0, h),
                                        stages,
                                        &mut lambda,
                                        &mut param_bar,
                                    );
                                }
                                _ => self.step(mode, t0, h, y0, &mut lambda, &mut param_bar),
                            },
                            Stepping::Implicit(tab) => {
                                match tape.kept_stages(step, self.n) {
                                    // The stages the forward pass solved
                                    // to rounding, as it kept them.
                                    Some(stages) if stages.len() == tab.stages() * self.n => {
                                        self.vectors.stage_states.copy_from_slice(stages);
                                    }
                                    _ => {
                                        let flow = &*self.system.modes()[mode].flow;
                                        self.implicit.solve_stages(
                                            tab,
                                            (flow, self.params),
                                            (t0, h, y0),
                                            &mut self.vectors.stage_states,
                                            &mut self.vectors.stages,
                                        );
                                    }
                                }
                                self.transpose_implicit(
                                    tab,
                                    mode,
                                    t0,
                                    h,
                                    &mut lambda,
                                    &mut param_bar,
                                );
                            }
                            Stepping::Exact => {
                                self.vectors.stage_states.copy_from_slice(y0);
                                self.transpose_stretch(mode, t0, h, &mut lambda, &mut param_bar);
                            }
                        }
                    } else {
                        self.replay_segment(tape, position, step, mode);
                        let width = self.vectors.stage_states.len();
                        let at = (position - self.replay_from) * width;
                        match self.stepping {
                            Stepping::RungeKutta(_) => {
                                // Read in place: the replay's vector is
                                // lent out for the step, not copied.
                                let replay = std::mem::take(&mut self.vectors.replay);
                                self.transpose_step(
                                    (mode, t0, h),
                                    &replay[at..at + width],
                                    &mut lambda,
                                    &mut param_bar,
                                );
                                self.vectors.replay = replay;
                            }
                            Stepping::Implicit(tab) => {
                                self.vectors
                                    .stage_states
                                    .copy_from_slice(&self.vectors.replay[at..at + width]);
                                self.transpose_implicit(
                                    tab,
                                    mode,
                                    t0,
                                    h,
                                    &mut lambda,
                                    &mut param_bar,
                                );
                            }
                            Stepping::Exact => {
                                self.vectors
                                    .stage_states
                                    .copy_from_slice(&self.vectors.replay[at..at + width]);
                                self.transpose_stretch(mode, t0, h, &mut lambda, &mut param_bar);
                            }
                        }
                    }
                    let mode_name = &self.system.modes()[mode].name;
                    self.implicit.check(t0, mode_name, h)?;
                }
            }
            // The adjoint of a violently unstable flow overflows as the
            // forward sensitivities do: the same error, not NaN derivatives.
            // The parameters' cotangent only accumulates, so a non-finite
            // entry stays so: checking it every few entries and at the end
            // finds it, where checking it after each entry cost more than
            // the entries themselves on a network's 10^4 parameters.
            let check_params = position % PARAM_CHECK_EVERY == 0;
            if !lambda.iter().all(|v| v.is_finite())
                || (check_params && !param_bar.iter().all(|v| v.is_finite()))
            {
                return Err(HybridError::NonFinite {
                    what: "derivative (the adjoint, integrated backward, overflowed)".into(),
                    time,
                    trajectory: Some(Box::new(trajectory.clone())),
                });
            }
        }
        Ok((lambda, param_bar))
    }

    /// Transposes one event's jump. An event of a cascade
    /// (`S+ = r_x S- + r_p - w dt*/dtheta`, sharing the time of the event
    /// that started it) passes `time_seed - w . lambda+` on through
    /// `cascade_time_bar`; the located event adds it to its own time seed.
    /// A reset with the in-place product
    /// ([`ia_core::Reset::vector_jacobian_product_in_place`]) touches only
    /// the entries it reads and writes (its transpose is the identity off
    /// them), which is all a lazy pass holds up to date.
    fn event(
        &mut self,
        event: TapedEvent<'_>,
        time_seed: f64,
        cascade_time_bar: &mut f64,
        lambda: &mut [f64],
        param_bar: &mut [f64],
    ) {
        let coefficient = self.time_terms(event, time_seed, cascade_time_bar, lambda, param_bar);
        let reset = &self.system.transitions()[event.transition].reset;
        let (t, x) = (event.time, event.state_before);
        if !reset.vector_jacobian_product_in_place(t, x, self.params, lambda, param_bar) {
            self.saltation.reset_transpose(
                self.system,
                self.params,
                event.at(),
                lambda,
                &mut self.vectors.scratch,
                param_bar,
            );
            lambda.copy_from_slice(&self.vectors.scratch);
        }
        for &(i, gx) in &self.vectors.guard_terms {
            lambda[i] += coefficient * gx;
        }
    }

    /// The event-time part of an event's transpose: returns the
    /// coefficient `c` of `g_x` in `lambda-` (with `(i, g_x[i])` over the
    /// guard's support left in `self.vectors.guard_terms`, empty when `c`
    /// is zero), having added `g_p c` to `param_bar`.
    fn time_terms(
        &mut self,
        event: TapedEvent<'_>,
        time_seed: f64,
        cascade_time_bar: &mut f64,
        lambda: &[f64],
        param_bar: &mut [f64],
    ) -> f64 {
        let w_lambda: f64 = if event.shift_entries.is_empty() {
            event
                .shift_values
                .iter()
                .zip(lambda.iter())
                .map(|(w, l)| w * l)
                .sum()
        } else {
            event
                .shift_entries
                .iter()
                .zip(event.shift_values)
                .map(|(&i, w)| w * lambda[i as usize])
                .sum()
        };
        // lambda- = r_x^T lambda+ + g_x c and p_bar += r_p^T lambda+ + g_p c,
        // with c = (w . lambda+ - dL/dt*) / gdot for a crossing; an event of
        // a cascade passes dL/dt* - w . lambda+ on to the event that started
        // it instead.
        let coefficient = if event.cascade_of.is_some() {
            *cascade_time_bar += time_seed - w_lambda;
            0.0
        } else {
            let time_seed = time_seed + std::mem::take(cascade_time_bar);
            (w_lambda - time_seed) / event.guard_rate
        };
        // g_x c and g_p c over what the guard reads (its support, or every
        // entry), as the tape keeps them.
        self.vectors.guard_terms.clear();
        if coefficient != 0.0 {
            let terms = event.guard_terms;
            match self.system.transitions()[event.transition].guard.support() {
                Some(read) => {
                    let (gx, gp) = terms.split_at(read.states.len());
                    self.vectors
                        .guard_terms
                        .extend(read.states.iter().copied().zip(gx.iter().copied()));
                    for (&j, g) in read.params.iter().zip(gp) {
                        param_bar[j] += coefficient * g;
                    }
                }
                None => {
                    let (gx, gp) = terms.split_at(self.n);
                    self.vectors
                        .guard_terms
                        .extend(gx.iter().copied().enumerate());
                    for (pb, g) in param_bar.iter_mut().zip(gp) {
                        *pb += coefficient * g;
                    }
                }
            }
        }
        coefficient
    }

    /// Transposes one Runge-Kutta step `y1 = y0 + h sum b_i K_i`.
    fn step(
        &mut self,
        mode: usize,
        t0: f64,
        h: f64,
        y0: &[f64],
        lambda: &mut [f64],
        param_bar: &mut [f64],
    ) {
        let Stepping::RungeKutta(tableau) = self.stepping else {
            unreachable!("a Runge-Kutta step on the tape of a Runge-Kutta run")
        };
        let flow = &self.system.modes()[mode].flow;
        // Recompute the stages exactly as the forward step formed them: the
        // same method object, the same arithmetic.
        let params = self.params;
        tableau.stages(
            &mut |t, y, out| flow.rate(t, y, params, out),
            t0,
            h,
            y0,
            0,
            &mut self.vectors.stages,
            &mut self.vectors.stage_states,
        );
        let stage_states = std::mem::take(&mut self.vectors.stage_states);
        self.transpose_step((mode, t0, h), &stage_states, lambda, param_bar);
        self.vectors.stage_states = stage_states;
    }

    /// Transposes the step `(mode, t0, h)` of [`Backward::step`] whose
    /// stage states are `stage_states` (read where they are kept: the
    /// tape's, the replay's or the step's vector). A state of one of the explicit
    /// stepper's small sizes (`ia_events::sized!`'s `explicit`, as the
    /// forward step) is transposed by a copy of the same arithmetic made for
    /// its size (its loops unrolled: the same operations in the same order,
    /// so the same bits), any other by the general one.
    fn transpose_step(
        &mut self,
        step: (usize, f64, f64),
        stage_states: &[f64],
        lambda: &mut [f64],
        param_bar: &mut [f64],
    ) {
        ia_events::sized!(explicit, n = self.n => {
            self.transpose_step_of(n, step, stage_states, lambda, param_bar)
        })
    }

    /// [`Backward::transpose_step`] of a state of `n` entries (`self.n`;
    /// inlined into each of its callers, so that a constant `n` sizes its
    /// loops).
    #[inline(always)]
    fn transpose_step_of(
        &mut self,
        n: usize,
        (mode, t0, h): (usize, f64, f64),
        stage_states: &[f64],
        lambda: &mut [f64],
        param_bar: &mut [f64],
    ) {
        let Stepping::RungeKutta(tab) = self.stepping else {
            unreachable!("a Runge-Kutta step on the tape of a Runge-Kutta run")
        };
        let s = tab.solution_stages();
        let flow = &self.system.modes()[mode].flow;
        let lambda = &mut lambda[..n];
        let vectors = &mut *self.vectors;
        let scratch = &mut vectors.scratch[..n];
        // A small state's cotangents in local arrays (registers, and no
        // slice of the stage cotangents can alias them, so the compiler
        // pairs the updates below); a larger one's in the kept vectors.
        let (mut local_state_bar, mut local_y_bar) = (
            [0.0; TRANSPOSED_IN_REGISTERS],
            [0.0; TRANSPOSED_IN_REGISTERS],
        );
        let state_bar = if n <= TRANSPOSED_IN_REGISTERS {
            &mut local_state_bar[..n]
        } else {
            &mut vectors.state_bar[..n]
        };
        for (i, k_bar) in vectors.stage_bars[..s * n].chunks_exact_mut(n).enumerate() {
            for (kb, &l) in k_bar.iter_mut().zip(lambda.iter()) {
                *kb = h * tab.b[i] * l;
            }
        }
        state_bar.copy_from_slice(lambda);
        for i in (0..s).rev() {
            let (before, rest) = vectors.stage_bars.split_at_mut(i * n);
            let k_bar = &rest[..n];
            if k_bar.iter().all(|&v| v == 0.0) {
                continue;
            }
            let stage_time = t0 + tab.c[i] * h;
            let stage_state = &stage_states[i * n..(i + 1) * n];
            // Y_bar = f_x^T K_bar; p_bar += f_p^T K_bar
            flow_transpose(
                &**flow,
                &mut self.partials,
                (stage_time, stage_state, self.params),
                k_bar,
                scratch,
                param_bar,
            );
            let y_bar: &[f64] = if n <= TRANSPOSED_IN_REGISTERS {
                local_y_bar[..n].copy_from_slice(scratch);
                &local_y_bar[..n]
            } else {
                scratch
            };
            for (sb, &yb) in state_bar.iter_mut().zip(y_bar) {
                *sb += yb;
            }
            for (&a, kb_j) in tab.a[i].iter().zip(before.chunks_exact_mut(n)) {
                if a != 0.0 {
                    for (kb, &yb) in kb_j.iter_mut().zip(y_bar) {
                        *kb += h * a * yb;
                    }
                }
            }
        }
        lambda.copy_from_slice(state_bar);
    }
}

/// The largest state whose Runge-Kutta steps [`Backward::transpose_step`]
/// transposes with its state cotangents in local arrays (the largest of
/// the sizes it has a copy for).
const TRANSPOSED_IN_REGISTERS: usize = 8;

impl Backward<'_> {
    /// Transposes one implicit step whose stage states are in
    /// `self.vectors.stage_states` ([`crate::implicit`] states the map).
    fn transpose_implicit(
        &mut self,
        tab: &'static EsdirkTableau,
        mode: usize,
        t0: f64,
        h: f64,
        lambda: &mut [f64],
        param_bar: &mut [f64],
    ) {
        let n = self.n;
        let s = tab.stages();
        let hg = h * tab.gamma;
        let flow = &*self.system.modes()[mode].flow;
        let vectors = &mut *self.vectors;
        // K_bar: h gamma lambda on the last stage (y_1 = W_s + h gamma K_s).
        vectors.stage_bars.iter_mut().for_each(|v| *v = 0.0);
        for (kb, &l) in vectors.stage_bars[(s - 1) * n..]
            .iter_mut()
            .zip(lambda.iter())
        {
            *kb = hg * l;
        }
        vectors.state_bar.iter_mut().for_each(|v| *v = 0.0);
        for i in (0..s).rev() {
            let stage_time = t0 + tab.c[i] * h;
            let stage_state = &vectors.stage_states[i * n..(i + 1) * n];
            let (before, rest) = vectors.stage_bars.split_at_mut(i * n);
            let k_bar = &mut rest[..n];
            // u = (I - h gamma J_i)^{-T} K_bar_i, in place, for an
            // implicit stage (K_1 = f(y_0) for the first).
            let formed = if i > 0 {
                self.implicit.transposed_solve(
                    (flow, mode),
                    (stage_time, stage_state, self.params),
                    hg,
                    k_bar,
                )
            } else {
                None
            };
            // W_bar_i = J_i^T u (p_bar += f_p^T u): from the partials the
            // solve formed at the stage, if it did.
            match formed {
                Some(partials) => {
                    partials_transpose(partials, k_bar, &mut vectors.scratch, param_bar);
                }
                None => flow_transpose(
                    flow,
                    &mut self.partials,
                    (stage_time, stage_state, self.params),
                    k_bar,
                    &mut vectors.scratch,
                    param_bar,
                ),
            }
            if i == s - 1 {
                for (w, &l) in vectors.scratch.iter_mut().zip(lambda.iter()) {
                    *w += l;
                }
            }
            for (sb, &wb) in vectors.state_bar.iter_mut().zip(&vectors.scratch) {
                *sb += wb;
            }
            if i > 0 {
                for (j, &a) in tab.a[i].iter().enumerate() {
                    if a != 0.0 {
                        for (kb, &wb) in before[j * n..(j + 1) * n].iter_mut().zip(&vectors.scratch)
                        {
                            *kb += h * a * wb;
                        }
                    }
                }
            }
        }
        lambda.copy_from_slice(&vectors.state_bar);
    }
}

/// `x_bar = f_x^T v` and `p_bar += f_p^T v` at `(t, x, p)`: the flow's
/// vector-Jacobian product, or its dense partials (kept in `kept`, formed on
/// first use) where it has none.
fn flow_transpose(
    flow: &dyn ia_core::Flow,
    kept: &mut Option<FlowPartials>,
    (t, x, p): (f64, &[f64], &[f64]),
    v: &[f64],
    x_bar: &mut [f64],
    p_bar: &mut [f64],
) {
    if flow.vector_jacobian_product(t, x, p, v, x_bar, p_bar) {
        return;
    }
    let partials = FlowPartials::of_flow_in(kept, flow, t, x, p);
    partials_transpose(partials, v, x_bar, p_bar);
}

/// `x_bar = f_x^T v` and `p_bar += f_p^T v` from the flow's dense
/// `partials`.
fn partials_transpose(partials: &FlowPartials, v: &[f64], x_bar: &mut [f64], p_bar: &mut [f64]) {
    let v = nalgebra::DVectorView::from_slice(v, v.len());
    for (c, xb) in x_bar.iter_mut().enumerate() {
        *xb = partials.x.column(c).dot(&v);
    }
    for (c, pb) in p_bar.iter_mut().enumerate() {
        *pb += partials.p.column(c).dot(&v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{ball, dh_final, problem, E, G, H0};
    use ia_events::{Problem, SolverChoice};

    /// Reference: the pass over the whole tape (how every row was computed
    /// before passes started at their outputs); the entries after an output
    /// carry a zero adjoint, so the two agree to rounding.
    #[test]
    fn a_pass_from_an_output_equals_the_whole_pass() {
        let system = ball();
        // Three impacts before t = 2 (at 0.4515, 1.174, 1.752).
        let run = Problem::new(&system, vec![H0, 0.0], vec![G, E], 2.0)
            .with_solver(SolverChoice::dopri5(1e-12))
            .with_observations(vec![0.3, 1.0, 1.9]);
        let mut tape = Tape::default();
        let trajectory = ia_events::run(&run, &mut ia_events::NoExtraState, &mut tape).unwrap();
        assert_eq!(trajectory.events.len(), 3);
        let tableau = run.solver.tableau().unwrap();
        let mut backward = Backward::new(&system, &run.params, tableau);
        let mut rows = Vec::new();
        for k in 0..3 {
            let mut seeds = LossSeeds::zeros(&trajectory);
            seeds.event_times[k] = 1.0;
            rows.push((seeds, tape.event_end(k)));
            let mut seeds = LossSeeds::zeros(&trajectory);
            seeds.observations[k][1] = 1.0;
            rows.push((seeds, tape.observation_end(k)));
        }
        let mut ends = Vec::new();
        for (seeds, end) in &rows {
            let whole = backward.gradient(&tape, &trajectory, seeds).unwrap();
            let from = backward
                .gradient_from(&tape, &trajectory, seeds, *end)
                .unwrap();
            for (a, b) in whole
                .0
                .iter()
                .chain(&whole.1)
                .zip(from.0.iter().chain(&from.1))
            {
                assert!((a - b).abs() <= 1e-14 * a.abs().max(1.0), "{a} vs {b}");
            }
            ends.push(*end);
        }
        // The passes start inside the tape, earlier for earlier outputs.
        assert!(ends.iter().all(|&e| e < tape.end()), "{ends:?}");
        assert!(ends[0] < ends[2] && ends[2] < ends[4], "{ends:?}");
    }

    /// Reference: the same backward pass with the stage states formed
    /// again from each step's kept start (`Backward::step`, what the pass
    /// did before the tape kept an explicit method's stages: the tape's
    /// stage slots set to NaN, which it reads as not kept). The stages the
    /// taped run formed are the same function of the same start, so the
    /// gradients are the same to the bit, with and without derivative
    /// probes carried after the state.
    #[rstest::rstest]
    fn kept_stage_states_give_the_gradient_of_stages_formed_again(
        #[values(
            SolverChoice::dopri5(1e-10),
            SolverChoice::Dop853 { rtol: 1e-10, atol: 1e-10, max_step: None },
            SolverChoice::Rk4 { dt: 1e-2 }
        )]
        solver: SolverChoice,
        #[values(true, false)] probes: bool,
    ) {
        let system = ball();
        let run = Problem::new(&system, vec![H0, 0.0], vec![G, E], 2.0)
            .with_solver(solver)
            .with_observations(vec![0.3, 1.0]);
        let mut workspace = crate::Workspace::new();
        let mut tape = Tape::default();
        let trajectory = if probes {
            workspace.run_on_taped_steps(
                &run,
                &mut ia_events::NoExtraState,
                &mut tape,
                |_, tape| tape.forget_run(),
            )
        } else {
            ia_events::run(&run, &mut ia_events::NoExtraState, &mut tape)
        }
        .unwrap();
        assert_eq!(trajectory.events.len(), 3);
        let tableau = run.solver.tableau().unwrap();
        let (n, s) = (2, tableau.solution_stages());
        assert_eq!(tape.width, s * n, "the records carry the stages");
        let mut seeds = LossSeeds::zeros(&trajectory);
        seeds.final_state[0] = 1.0;
        seeds.observations[1][1] = 0.5;
        seeds.event_times[1] = -0.25;
        let mut backward = Backward::new(&system, &run.params, tableau);
        let kept = backward.gradient(&tape, &trajectory, &seeds).unwrap();
        for record in tape.states.chunks_exact_mut(s * n) {
            record[n..].fill(f64::NAN);
        }
        assert!(tape.kept_stages(0, n).is_none());
        let formed = backward.gradient(&tape, &trajectory, &seeds).unwrap();
        assert_eq!(kept, formed);
    }

    #[test]
    fn seeds_are_shaped_for_the_trajectory() {
        let system = ball();
        let run = problem(&system).with_observations(vec![0.1, 0.2, 0.3]);
        let trajectory = ia_events::simulate(&run).unwrap();
        let seeds = LossSeeds::zeros(&trajectory);
        assert_eq!(seeds.final_state, [0.0, 0.0]);
        assert_eq!(seeds.observations, vec![vec![0.0; 2]; 3]);
        assert_eq!(seeds.event_times, [0.0]);
    }

    #[test]
    fn one_backward_pass_gives_the_closed_form_gradient() {
        let system = ball();
        let run = problem(&system);
        let mut tape = Tape::default();
        let trajectory = ia_events::run(&run, &mut ia_events::NoExtraState, &mut tape).unwrap();
        assert!(tape.stored_floats() > 0);
        let mut seeds = LossSeeds::zeros(&trajectory);
        seeds.final_state[0] = 1.0;
        let tableau = run.solver.tableau().unwrap();
        let (dx0, dp) = Backward::new(&system, &run.params, tableau)
            .gradient(&tape, &trajectory, &seeds)
            .unwrap();
        let got: Vec<f64> = dx0.into_iter().chain(dp).collect();
        for (j, want) in dh_final().iter().enumerate() {
            assert!(
                (got[j] - want).abs() < 1e-8,
                "dh/d[{j}] {} vs {want}",
                got[j]
            );
        }
    }
}
