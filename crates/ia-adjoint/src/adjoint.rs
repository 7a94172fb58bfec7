//! Reverse mode: the discrete adjoint of the steps the forward pass took.
//!
//! The forward pass stores, for every accepted step, its mode, start time,
//! size and start state (n numbers per step: the memory of a long run grows
//! as `steps x n` floats, plus the event records). The backward pass walks
//! the tape in reverse: each Runge-Kutta step's stages are recomputed from
//! its start state and the step is transposed exactly (the step size held
//! fixed), each event applies `lambda- = Xi^T lambda+` and
//! `dL/dp += xi_p^T lambda+`, and a loss that reads event times adds
//! `-(dL/dt*) g_x / gdot` to `lambda-` and `-(dL/dt*) g_p / gdot` to `dL/dp`.
//!
//! Because it transposes the same linear maps the forward sensitivity
//! applies, the adjoint agrees with forward sensitivities computed on the
//! same steps to rounding.

use crate::saltation::SaltationWorkspace;
use ia_core::{FlowPartials, HybridError, HybridSystem, Trajectory};
use ia_events::{Augmentation, ButcherTableau, EventJump};

/// One entry of the forward tape, in forward order.
#[derive(Clone, Copy, Debug)]
enum TapeEntry {
    /// An accepted step; its start state is at `offset` in the state store.
    Step {
        mode: usize,
        t0: f64,
        h: f64,
        offset: usize,
    },
    /// Event `index` of the trajectory.
    Event { index: usize },
    /// Observation `index`.
    Observation { index: usize },
}

/// Records the forward pass (an [`Augmentation`] with no extra components).
#[derive(Default)]
pub(crate) struct Tape {
    entries: Vec<TapeEntry>,
    states: Vec<f64>,
}

impl Augmentation for Tape {
    fn step_taken(&mut self, mode: usize, t0: f64, h: f64, y0: &[f64]) {
        self.entries.push(TapeEntry::Step {
            mode,
            t0,
            h,
            offset: self.states.len(),
        });
        self.states.extend_from_slice(y0);
    }

    fn jump(
        &mut self,
        jump: &EventJump<'_>,
        _before: &[f64],
        _after: &mut [f64],
    ) -> Result<(), HybridError> {
        self.entries.push(TapeEntry::Event { index: jump.index });
        Ok(())
    }

    fn observed(&mut self, index: usize, _time: f64, _y: &[f64]) {
        self.entries.push(TapeEntry::Observation { index });
    }
}

impl Tape {
    /// Number of floats held (the memory of the reverse pass, besides the
    /// trajectory's event records).
    pub(crate) fn stored_floats(&self) -> usize {
        self.states.len() + 4 * self.entries.len()
    }
}

/// Cotangents of a scalar loss with respect to what it reads: the final
/// state, the states at observation times and the event times.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LossSeeds {
    /// `dL/dx(T)`, n entries.
    pub final_state: Vec<f64>,
    /// `dL/dx(t_obs)`, one vector of n per observation.
    pub observations: Vec<Vec<f64>>,
    /// `dL/dt*`, one per event.
    pub event_times: Vec<f64>,
}

impl LossSeeds {
    /// Zero seeds shaped for `trajectory`.
    pub fn zeros(trajectory: &Trajectory) -> Self {
        let n = trajectory.final_state.len();
        Self {
            final_state: vec![0.0; n],
            observations: vec![vec![0.0; n]; trajectory.observations.len()],
            event_times: vec![0.0; trajectory.events.len()],
        }
    }
}

/// Buffers of the backward pass.
pub(crate) struct Backward<'a> {
    system: &'a HybridSystem,
    params: &'a [f64],
    tableau: &'static ButcherTableau,
    n: usize,
    partials: FlowPartials,
    saltation: SaltationWorkspace,
    stages: Vec<f64>,
    stage_states: Vec<f64>,
    stage_bars: Vec<f64>,
    state_bar: Vec<f64>,
    scratch: Vec<f64>,
}

impl<'a> Backward<'a> {
    pub(crate) fn new(
        system: &'a HybridSystem,
        params: &'a [f64],
        tableau: &'static ButcherTableau,
    ) -> Self {
        let (n, np) = (system.state_dim(), system.param_dim());
        let s = tableau.solution_stages();
        Self {
            system,
            params,
            tableau,
            n,
            partials: FlowPartials::zeros(n, np),
            saltation: SaltationWorkspace::new(n, np),
            stages: vec![0.0; s * n],
            stage_states: vec![0.0; s * n],
            stage_bars: vec![0.0; s * n],
            state_bar: vec![0.0; n],
            scratch: vec![0.0; n],
        }
    }

    /// Runs the backward pass over `tape` with `seeds`; returns
    /// `(dL/dx0, dL/dp)`.
    pub(crate) fn gradient(
        &mut self,
        tape: &Tape,
        trajectory: &Trajectory,
        seeds: &LossSeeds,
    ) -> Result<(Vec<f64>, Vec<f64>), HybridError> {
        let mut lambda = seeds.final_state.clone();
        let mut param_bar = vec![0.0; self.system.param_dim()];
        for entry in tape.entries.iter().rev() {
            let time = match *entry {
                TapeEntry::Step { t0, .. } => t0,
                TapeEntry::Event { index } => trajectory.events[index].time,
                TapeEntry::Observation { index } => trajectory.observations[index].time,
            };
            match *entry {
                TapeEntry::Observation { index } => {
                    for (l, s) in lambda.iter_mut().zip(&seeds.observations[index]) {
                        *l += s;
                    }
                }
                TapeEntry::Event { index } => {
                    let event = &trajectory.events[index];
                    let time_seed = seeds.event_times.get(index).copied().unwrap_or(0.0);
                    self.event(event, time_seed, &mut lambda, &mut param_bar);
                }
                TapeEntry::Step {
                    mode,
                    t0,
                    h,
                    offset,
                } => {
                    let y0 = &tape.states[offset..offset + self.n];
                    self.step(mode, t0, h, y0, &mut lambda, &mut param_bar);
                }
            }
            // The adjoint of a violently unstable flow overflows as the
            // forward sensitivities do: the same error, not NaN derivatives.
            if !lambda.iter().chain(&param_bar).all(|v| v.is_finite()) {
                return Err(HybridError::NonFinite {
                    what: "derivative (the adjoint, integrated backward, overflowed)".into(),
                    time,
                    trajectory: Some(Box::new(trajectory.clone())),
                });
            }
        }
        Ok((lambda, param_bar))
    }

    fn event(
        &mut self,
        event: &ia_core::EventRecord,
        time_seed: f64,
        lambda: &mut [f64],
        param_bar: &mut [f64],
    ) {
        let sal = self.saltation.compute_for(self.system, self.params, event);
        for (j, pb) in param_bar.iter_mut().enumerate() {
            let xi_p_l: f64 = lambda
                .iter()
                .enumerate()
                .map(|(i, l)| sal.xi_p[(i, j)] * l)
                .sum();
            *pb += xi_p_l - time_seed * sal.guard_p[j] / sal.guard_rate;
        }
        for (j, s) in self.scratch.iter_mut().enumerate() {
            let xi_l: f64 = lambda
                .iter()
                .enumerate()
                .map(|(i, l)| sal.xi[(i, j)] * l)
                .sum();
            *s = xi_l - time_seed * sal.guard_x[j] / sal.guard_rate;
        }
        lambda.copy_from_slice(&self.scratch);
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
        let n = self.n;
        let tab = self.tableau;
        let s = tab.solution_stages();
        let system = self.system;
        let flow = &system.modes()[mode].flow;
        // Recompute the stages exactly as the forward step formed them.
        for i in 0..s {
            let (done, rest) = self.stages.split_at_mut(i * n);
            let yi = &mut self.stage_states[i * n..(i + 1) * n];
            yi.copy_from_slice(y0);
            for (j, &a) in tab.a[i].iter().enumerate() {
                if a != 0.0 {
                    for (y, &k) in yi.iter_mut().zip(&done[j * n..(j + 1) * n]) {
                        *y += h * a * k;
                    }
                }
            }
            flow.rate(t0 + tab.c[i] * h, yi, self.params, &mut rest[..n]);
        }
        for i in 0..s {
            for (kb, &l) in self.stage_bars[i * n..(i + 1) * n]
                .iter_mut()
                .zip(lambda.iter())
            {
                *kb = h * tab.b[i] * l;
            }
        }
        self.state_bar.copy_from_slice(lambda);
        for i in (0..s).rev() {
            let k_bar = &self.stage_bars[i * n..(i + 1) * n];
            if k_bar.iter().all(|&v| v == 0.0) {
                continue;
            }
            let stage_time = t0 + tab.c[i] * h;
            let stage_state = &self.stage_states[i * n..(i + 1) * n];
            // Y_bar = f_x^T K_bar; p_bar += f_p^T K_bar
            let fast = flow.vector_jacobian_product(
                stage_time,
                stage_state,
                self.params,
                k_bar,
                &mut self.scratch,
                param_bar,
            );
            if !fast {
                self.partials.clear();
                flow.partials(stage_time, stage_state, self.params, &mut self.partials);
                let k_bar = nalgebra::DVectorView::from_slice(k_bar, n);
                for (c, yb) in self.scratch.iter_mut().enumerate() {
                    *yb = self.partials.x.column(c).dot(&k_bar);
                }
                for (c, pb) in param_bar.iter_mut().enumerate() {
                    *pb += self.partials.p.column(c).dot(&k_bar);
                }
            }
            for (sb, &yb) in self.state_bar.iter_mut().zip(&self.scratch) {
                *sb += yb;
            }
            let (before, _) = self.stage_bars.split_at_mut(i * n);
            for (j, &a) in tab.a[i].iter().enumerate() {
                if a != 0.0 {
                    for (kb, &yb) in before[j * n..(j + 1) * n].iter_mut().zip(&self.scratch) {
                        *kb += h * a * yb;
                    }
                }
            }
        }
        lambda.copy_from_slice(&self.state_bar);
    }
}
