//! The Runge-Kutta engine: steps the flow of the current mode with a
//! [`Stepper`] (RK4, Dormand-Prince 5(4), DOP853 or an `ode_solvers`
//! method), detects guard crossings on every step, locates them on the
//! dense output, applies resets and switches modes, following the event
//! rules of [`crate::vocabulary`] (rules 1 to 3 are this engine's way of
//! finding a crossing). The records are kept by the shared recorder.

mod crossing;
mod guards;
mod root;
#[cfg(test)]
mod tests;

pub(crate) use guards::RkBuffers;

use crate::explicit_rk::min_step;
use crate::geometry::{EventAt, GeometryWorkspace};
use crate::problem::Problem;
use crate::recorder::{RecordBuffers, Recorder};
use crate::sized::copy_floats;
use crate::stepper::{OdeRhs, StepFailure, Stepper};
use crate::vocabulary::{EventJump, ExtraState, Observer, RunContext};
use guards::{guard_rate_at, GuardTable, JacobianBuffers, StateBuffers};
use ia_core::{
    Direction, EventRecord, GuardPartials, HybridError, HybridSystem, SolverStats, Trajectory,
};

/// Runs `problem` with `stepper` in the buffers `rk`, `records` and
/// `geometry` (a workspace's), carrying `extra` along with the state and
/// showing the run to `observer`.
pub(crate) fn run<E: ExtraState, O: Observer>(
    problem: &Problem<'_>,
    stepper: &mut dyn Stepper,
    buffers: (
        &mut RkBuffers,
        &mut RecordBuffers,
        &mut Option<GeometryWorkspace>,
    ),
    extra: &mut E,
    observer: &mut O,
) -> Result<Trajectory, HybridError> {
    let (rk, records, geometry) = buffers;
    let mut run = Run::new(problem, extra, observer, stepper, rk, records, geometry);
    let result = run.go();
    run.release(records);
    result
}

/// The flow of the current mode, with the extra components' rates.
struct HybridRhs<'a, 'b, E> {
    system: &'a HybridSystem,
    params: &'a [f64],
    mode: usize,
    n: usize,
    dim: usize,
    controlled: usize,
    extra: &'a mut E,
    /// Where the flow's Jacobian is formed (kept by the workspace).
    jacobian: &'b mut JacobianBuffers,
}

impl<E> HybridRhs<'_, '_, E> {
    fn context(&self) -> RunContext<'_> {
        RunContext {
            system: self.system,
            params: self.params,
        }
    }
}

impl<E: ExtraState> OdeRhs for HybridRhs<'_, '_, E> {
    fn dim(&self) -> usize {
        self.dim
    }

    fn controlled_dim(&self) -> usize {
        self.controlled
    }

    fn closed_dim(&self) -> usize {
        self.n
    }

    fn controlled_apart(&self) -> bool {
        self.extra.controlled_apart()
    }

    fn controlled_weight(&self) -> f64 {
        self.extra.controlled_weight()
    }

    fn eval_closed(&mut self, t: f64, x: &[f64], dx: &mut [f64]) {
        self.system.modes()[self.mode]
            .flow
            .rate(t, x, self.params, dx);
    }

    fn jacobian(&mut self, t: f64, x: &[f64], jacobian: &mut [f64]) -> bool {
        let n = self.n;
        let flow = &self.system.modes()[self.mode].flow;
        // Column by column by the flow's Jacobian-vector products where it
        // has them (`n` dual-number sweeps for an `Autodiff` flow or an
        // equation model, against `n + n_p + 1` for its full partials, of
        // which only `f_x` is wanted here).
        let JacobianBuffers { unit, partials } = &mut *self.jacobian;
        unit.resize(n, 0.0);
        let mut by_products = true;
        for (j, column) in jacobian.chunks_exact_mut(n).enumerate() {
            unit[j] = 1.0;
            let tangent = ia_core::Tangent {
                t: 0.0,
                x: unit,
                param: ia_core::ParamDirection::Zero,
            };
            by_products = flow.jacobian_vector_product(t, x, self.params, tangent, column);
            unit[j] = 0.0;
            if !by_products {
                break;
            }
        }
        if by_products {
            return true;
        }
        let partials =
            ia_core::FlowPartials::of_flow_in(partials, flow.as_ref(), t, x, self.params);
        jacobian.copy_from_slice(partials.x.as_slice());
        true
    }

    fn jacobian_is_constant(&mut self) -> bool {
        self.system.modes()[self.mode]
            .flow
            .state_jacobian_is_constant()
    }

    fn sparsity(&mut self) -> Option<&ia_core::Sparsity> {
        self.system.modes()[self.mode].flow.state_sparsity()
    }

    fn sparse_jacobian(&mut self, t: f64, x: &[f64], values: &mut [f64]) -> bool {
        let flow = &self.system.modes()[self.mode].flow;
        let Some(pattern) = flow.state_sparsity() else {
            return false;
        };
        if flow.sparse_state_partials(t, x, self.params, values) {
            return true;
        }
        // Gathered from the dense partials (the flow has no fast path).
        let partials = ia_core::FlowPartials::of_flow_in(
            &mut self.jacobian.partials,
            flow.as_ref(),
            t,
            x,
            self.params,
        );
        pattern.gather(partials.x.as_slice(), values);
        true
    }

    fn eval_after_closed(&mut self, t: f64, y: &[f64], after: &mut [f64]) -> bool {
        let (x, extra) = y.split_at(self.n);
        if !extra.is_empty() {
            let run = RunContext {
                system: self.system,
                params: self.params,
            };
            self.extra.rate(run, self.mode, t, x, extra, after);
        }
        true
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

/// The recorder's counts `counts` with the stepper's and the engine's
/// (`extra_rhs` flow evaluations outside the stepper).
fn merged_stats(stepper: &dyn Stepper, extra_rhs: usize, counts: SolverStats) -> SolverStats {
    let counters = stepper.counters();
    SolverStats {
        rhs_evaluations: counters.rhs_evaluations + extra_rhs,
        rejected_steps: counters.rejected_steps,
        stiff_steps: counters.stiff_steps,
        ..counts
    }
}

/// Whether `time` is at or before `t`, or after it by no more than the
/// least step a [`crate::RkStepper`] takes between them (rounding of the
/// times).
fn within_rounding(t: f64, time: f64) -> bool {
    time - t <= min_step(t, time)
}

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
    rhs: HybridRhs<'p, 's, E>,
    observer: &'p mut O,
    stepper: &'s mut dyn Stepper,
    time_tolerance: f64,
    /// What the run knows of each guard.
    guards: &'s mut GuardTable,
    /// The state-sized buffers.
    states: &'s mut StateBuffers,
    guard_partials: &'s mut GuardPartials,
    /// The geometry of the event being fired...
    geometry: &'s mut GeometryWorkspace,
    /// ...completed after the reset when a consumer reads it.
    wants_geometry: bool,
    /// The records, observations, Zeno watch, `stop_after` and progress.
    recorder: Recorder<'p>,
    extra_rhs_evaluations: usize,
}

impl<'p, 's, E: ExtraState, O: Observer> Run<'p, 's, E, O> {
    fn new(
        problem: &'p Problem<'p>,
        extra: &'p mut E,
        observer: &'p mut O,
        stepper: &'s mut dyn Stepper,
        rk: &'s mut RkBuffers,
        records: &mut RecordBuffers,
        geometry: &'s mut Option<GeometryWorkspace>,
    ) -> Self {
        let system = problem.system;
        let n = system.state_dim();
        let n_params = system.param_dim();
        let dim = n + extra.dim();
        let controlled = n + extra.controlled_dim().min(dim - n);
        // The kept buffers are prepared and used where they are kept (the
        // run borrows them): a run moves none of them in or out.
        let RkBuffers {
            guards,
            states,
            guard_partials,
            jacobian,
        } = rk;
        guards.prepare(system.transitions().len());
        states.prepare(n, dim);
        states.y[..n].copy_from_slice(&problem.initial_state);
        let context = RunContext {
            system,
            params: &problem.params,
        };
        extra.initial(context, &mut states.y[n..]);
        let wants_geometry = extra.wants_event_geometry() || observer.wants_event_geometry();
        stepper.set_stages_to_rounding(observer.wants_step_stages());
        Self {
            problem,
            rhs: HybridRhs {
                system,
                params: &problem.params,
                mode: problem.initial_mode,
                n,
                dim,
                controlled,
                extra,
                jacobian,
            },
            observer,
            stepper,
            time_tolerance: problem.time_tolerance(),
            guards,
            states,
            guard_partials: RkBuffers::guard_partials(guard_partials, n, n_params),
            geometry: GeometryWorkspace::reuse_in(geometry, n, n_params),
            wants_geometry,
            recorder: Recorder::new(problem, records),
            extra_rhs_evaluations: 0,
        }
    }

    /// Gives the records' buffers back to `records` (the records stay with
    /// the returned trajectory; after an error, what the run recorded is
    /// kept for the next); the other buffers were borrowed where they are
    /// kept.
    fn release(self, records: &mut RecordBuffers) {
        self.recorder.release(records);
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
                copy_floats(&mut y, self.stepper.state());
                let done = self.finish(t, &y);
                self.states.y_after = y;
                return Ok(done);
            }
            let steps = self.recorder.stats().steps;
            self.recorder.progress(t, steps);
            let max_steps = self.problem.events.max_steps;
            if steps >= max_steps {
                let x = self.stepper.state()[..self.rhs.n].to_vec();
                return Err(HybridError::StepLimit {
                    max_steps,
                    time: t,
                    t_end: self.problem.t_end,
                    trajectory: Box::new(self.snapshot_at(t, &x)),
                });
            }
            let t_limit = self
                .recorder
                .next_observation_time()
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
                Some(Found::Crossing(t_located, transition)) => {
                    let mut t_event = t_located;
                    let mut known_crossing = None;
                    if t_event < t_new {
                        let failure = self.stepper.truncate(&mut self.rhs, t_event).err();
                        if let Some(f) = failure {
                            return Err(self.step_failure(f));
                        }
                        let within = if self.stepper.refine_events_on_steps() {
                            Some(None)
                        } else {
                            self.problem.solver.explicit_tolerances().map(Some)
                        };
                        if let Some(within) = within {
                            (t_event, known_crossing) =
                                self.refine_on_steps(transition, t_event, t_new, within)?;
                        }
                    }
                    self.step_taken();
                    copy_floats(&mut self.states.y, self.stepper.state());
                    if let Some(done) = self.fire_cascade(t_event, transition, known_crossing)? {
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
        self.recorder.step_taken();
        let context = self.rhs.context();
        self.observer
            .step_taken(context, self.rhs.mode, t0, h, self.stepper.previous_state());
        if let Some((stages, block)) = self.stepper.stage_states() {
            self.observer.step_stages(context, stages, block);
        }
    }

    /// Records every observation due at `t` (the current time); returns `t`.
    /// An observation within rounding of `t` (closer than
    /// `8 eps max(|t|, |time|)`, and than `8 eps` of the least normal
    /// number: the least step the stepper takes, [`within_rounding`]) is
    /// due too: the state there is the current one to rounding, and a step
    /// to it would leave the stepper a step size it cannot grow back from
    /// (rule 10 of the event rules).
    fn record_observations_at(&mut self, t: f64) -> f64 {
        while self
            .recorder
            .next_observation_time()
            .is_some_and(|time| within_rounding(t, time))
        {
            let run = self.rhs.context();
            let (mode, n) = (self.rhs.mode, self.rhs.n);
            self.recorder
                .observe(self.observer, run, mode, self.stepper.state(), n);
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
                    self.guard_partials,
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

    /// Starts the stepper at `t` from `self.states.y` (the recorder's
    /// segment starts there: at the run's start, or closed by the event).
    fn restart(&mut self, t: f64) -> Result<(), HybridError> {
        let y = std::mem::take(&mut self.states.y);
        let result = self.stepper.start(&mut self.rhs, t, &y);
        self.states.y = y;
        result.map_err(|f| self.step_failure(f))
    }

    /// Fires `transition` at `t` from `self.states.y`, then every guard due at once
    /// after its reset (see the module's event rules). Returns the finished
    /// trajectory when a terminal transition fired.
    fn fire_cascade(
        &mut self,
        t: f64,
        mut transition: usize,
        mut known_crossing: Option<f64>,
    ) -> Result<Option<Trajectory>, HybridError> {
        let root = self.recorder.next_event_index();
        let mut cascade_of = None;
        loop {
            let from = self.mode();
            let (residual, stops) = self.fire(t, transition, cascade_of, known_crossing.take())?;
            let tr = &self.system().transitions()[transition];
            if stops {
                let y = std::mem::take(&mut self.states.y);
                return Ok(Some(self.finish(t, &y)));
            }
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

    /// Applies transition `k` at `t` to `self.states.y` (state and extras)
    /// and switches to its mode. Returns whether the run ends here (a
    /// terminal transition, or [`Problem::stop_after`]) and the rounding band within which a guard counts as sitting on zero
    /// after the reset: the located event's residual and the uncertainty of
    /// its time, never the overshoot of a guard pushed past zero (an event
    /// of a cascade, `cascade_of` set, whose guard is not checked for
    /// crossing direction or transversality: it did not cross).
    /// `known_crossing` is `|g_x|` when the geometry workspace holds this
    /// event's crossing already (formed at this time and state by the
    /// refinement on the step, `refine_on_steps`).
    fn fire(
        &mut self,
        t: f64,
        k: usize,
        cascade_of: Option<usize>,
        known_crossing: Option<f64>,
    ) -> Result<(f64, bool), HybridError> {
        let system = self.system();
        let n = self.rhs.n;
        let p = &self.problem.params;
        let transition = &system.transitions()[k];
        let from = self.mode();
        let x_minus = &self.states.y[..n];
        let (crossing, gx_norm) = match known_crossing {
            Some(gx_norm) => (self.geometry.geometry(), gx_norm),
            None => {
                self.extra_rhs_evaluations += 1;
                self.geometry.crossing(system, p, k, t, x_minus)
            }
        };
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
        let index = self.recorder.next_event_index();
        // Recorded first, then shown to the carried components and the
        // observer, then the Zeno rule and `stop_after` (the recorder's
        // order, every engine's).
        self.recorder.record_event(
            EventRecord {
                index,
                time: t,
                transition: k,
                from_mode: from,
                to_mode: transition.to,
                guard_rate,
                terminal: transition.terminal,
                cascade_of,
            },
            &y_minus[..n],
            &y_after[..n],
        );
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
        std::mem::swap(&mut self.states.y, &mut self.states.y_after);
        self.rhs.mode = transition.to;
        let (stepper, extra_rhs) = (&*self.stepper, self.extra_rhs_evaluations);
        let stats = |counts| merged_stats(stepper, extra_rhs, counts);
        let stops = self.recorder.after_event(
            t,
            k,
            cascade_of,
            &self.states.y[..n],
            transition.to,
            stats,
        )?;
        let x_scale: f64 = self.states.y[..n].iter().map(|v| v * v).sum::<f64>().sqrt();
        let location_residual = if cascade_of.is_none() {
            2.0 * g_minus.abs()
        } else {
            0.0
        };
        let band = location_residual
            + 4.0 * guard_rate.abs() * self.time_tolerance
            + 8.0 * f64::EPSILON * gx_norm * x_scale;
        Ok((band, transition.terminal || stops))
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
                guard_rate_at(&**guard, t, x, p, &self.states.rate, self.guard_partials)
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

    fn stats(&self) -> SolverStats {
        merged_stats(
            self.stepper,
            self.extra_rhs_evaluations,
            self.recorder.stats(),
        )
    }

    /// The trajectory so far, ending at the stepper's current point.
    fn snapshot(&self) -> Trajectory {
        let x = self.stepper.state()[..self.rhs.n].to_vec();
        self.snapshot_at(self.stepper.time(), &x)
    }

    fn snapshot_at(&self, t: f64, x: &[f64]) -> Trajectory {
        self.recorder.snapshot(t, x, self.mode(), self.stats())
    }

    fn finish(&mut self, t: f64, y: &[f64]) -> Trajectory {
        self.observer.finished(self.rhs.context(), t, y);
        let stats = self.stats();
        let (mode, n) = (self.mode(), self.rhs.n);
        self.recorder.finish(t, &y[..n], mode, stats)
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
            StepFailure::NewtonFailure { time, step } => HybridError::NewtonFailure {
                time,
                mode: self.problem.system.modes()[self.rhs.mode].name.clone(),
                step,
                trajectory: Box::new(self.snapshot()),
            },
            StepFailure::Solver(message) => HybridError::Unsupported(message),
        }
    }
}
