//! Forward sensitivities: the variational equation `S' = f_x S + f_p`
//! integrated with the state by the same stepper, chained across events by
//! `S+ = Xi S- + xi_p`.
//!
//! `S` is n x m with m = n + n_p columns: the initial state entries, then the
//! parameters, so `S(t0) = [I | 0]`. It rides along as extra components of
//! the integrated vector (column-major), which makes each Runge-Kutta step of
//! `(x, S)` the exact derivative of the step of `x` with the step size held
//! fixed; this is what lets the adjoint agree with it to rounding on the same
//! steps.

use crate::saltation::{Saltation, SaltationWorkspace};
use ia_core::{FlowPartials, HybridError, HybridSystem};
use ia_events::{Augmentation, EventJump};
use nalgebra::{DMatrix, DMatrixView, DMatrixViewMut};

/// Carries `S` through a run (an [`Augmentation`] of the hybrid integrator).
pub(crate) struct ForwardSensitivity<'a> {
    system: &'a HybridSystem,
    params: &'a [f64],
    n: usize,
    n_params: usize,
    error_controlled: bool,
    /// False only to show what is lost without the saltation term.
    apply_saltation: bool,
    partials: FlowPartials,
    saltation: SaltationWorkspace,
    /// `dt*/dtheta` per event, m entries each.
    pub event_time_gradients: Vec<Vec<f64>>,
    /// The saltation of each event.
    pub saltations: Vec<Saltation>,
    /// `S` at each observation time.
    pub observation_jacobians: Vec<DMatrix<f64>>,
    /// `S` at the end.
    pub final_jacobian: Option<DMatrix<f64>>,
}

impl<'a> ForwardSensitivity<'a> {
    pub(crate) fn new(
        system: &'a HybridSystem,
        params: &'a [f64],
        error_controlled: bool,
        apply_saltation: bool,
    ) -> Self {
        let (n, n_params) = (system.state_dim(), system.param_dim());
        Self {
            system,
            params,
            n,
            n_params,
            error_controlled,
            apply_saltation,
            partials: FlowPartials::zeros(n, n_params),
            saltation: SaltationWorkspace::new(n, n_params),
            event_time_gradients: Vec::new(),
            saltations: Vec::new(),
            observation_jacobians: Vec::new(),
            final_jacobian: None,
        }
    }

    fn columns(&self) -> usize {
        self.n + self.n_params
    }

    fn matrix(&self, y: &[f64]) -> DMatrix<f64> {
        DMatrix::from_column_slice(self.n, self.columns(), &y[self.n..])
    }
}

impl Augmentation for ForwardSensitivity<'_> {
    fn extra_dim(&self) -> usize {
        self.n * self.columns()
    }

    fn error_controlled(&self) -> bool {
        self.error_controlled
    }

    fn initial_extra(&mut self, extra: &mut [f64]) {
        extra.fill(0.0);
        for i in 0..self.n {
            extra[i * self.n + i] = 1.0;
        }
    }

    fn extra_rate(&mut self, mode: usize, t: f64, x: &[f64], extra: &[f64], rate: &mut [f64]) {
        let (n, m) = (self.n, self.columns());
        let flow = &self.system.modes()[mode].flow;
        if flow.sensitivity_rate(t, x, self.params, extra, rate) {
            return;
        }
        self.partials.clear();
        flow.partials(t, x, self.params, &mut self.partials);
        let s = DMatrixView::from_slice(extra, n, m);
        let mut ds = DMatrixViewMut::from_slice(rate, n, m);
        ds.gemm(1.0, &self.partials.x, &s, 0.0);
        ds.columns_mut(n, self.n_params)
            .zip_apply(&self.partials.p, |d, fp| *d += fp);
    }

    fn jump(
        &mut self,
        jump: &EventJump<'_>,
        before: &[f64],
        after: &mut [f64],
    ) -> Result<(), HybridError> {
        let (n, m) = (self.n, self.columns());
        let sal = self.saltation.compute(
            self.system,
            self.params,
            jump.transition,
            jump.time,
            jump.state_before,
            jump.state_after,
            jump.cascade_of,
        );
        let s_minus = DMatrixView::from_slice(before, n, m);
        let mut s_plus = DMatrixViewMut::from_slice(after, n, m);
        let (jump_x, jump_p) = if self.apply_saltation {
            (&sal.xi, &sal.xi_p)
        } else {
            let reset = self.saltation.reset_partials();
            (&reset.x, &reset.p)
        };
        s_plus.gemm(1.0, jump_x, &s_minus, 0.0);
        s_plus
            .columns_mut(n, self.n_params)
            .zip_apply(jump_p, |d, v| *d += v);
        let sal = &self.saltation.saltation;
        let gradient = match jump.cascade_of {
            // dt*/dtheta = -(g_x S- + g_p) / gdot
            None => (0..m)
                .map(|j| {
                    let gx_s: f64 = (0..n).map(|i| sal.guard_x[i] * s_minus[(i, j)]).sum();
                    let gp = if j >= n { sal.guard_p[j - n] } else { 0.0 };
                    -(gx_s + gp) / sal.guard_rate
                })
                .collect::<Vec<f64>>(),
            // The cascade's time: S+ = r_x S- + r_p - w (dt*/dtheta).
            Some(root) => {
                let gradient = self.event_time_gradients[root].clone();
                if self.apply_saltation {
                    for (j, dt) in gradient.iter().enumerate() {
                        s_plus.column_mut(j).axpy(-dt, &sal.time_shift, 1.0);
                    }
                }
                gradient
            }
        };
        self.event_time_gradients.push(gradient);
        self.saltations.push(sal.clone());
        Ok(())
    }

    fn observed(&mut self, _index: usize, _time: f64, y: &[f64]) {
        let s = self.matrix(y);
        self.observation_jacobians.push(s);
    }

    fn finished(&mut self, _time: f64, y: &[f64]) {
        self.final_jacobian = Some(self.matrix(y));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::{ball, dh_final, problem, t1, G};

    #[test]
    fn carries_the_closed_form_sensitivities_through_an_impact() {
        let system = ball();
        let run = problem(&system);
        let mut aug = ForwardSensitivity::new(&system, &run.params, true, true);
        let trajectory = ia_events::run(&run, &mut aug).unwrap();
        assert_eq!(trajectory.events.len(), 1);
        assert_eq!(aug.saltations.len(), 1);
        // dt1/d(h0, v0, g, e) = (1 / (g t1), 1 / g, -t1 / (2 g), 0), from
        // t1 = (v0 + sqrt(v0^2 + 2 g h0)) / g at v0 = 0.
        let t1 = t1();
        let dt1 = [1.0 / (G * t1), 1.0 / G, -t1 / (2.0 * G), 0.0];
        for (got, want) in aug.event_time_gradients[0].iter().zip(dt1) {
            assert!((got - want).abs() < 1e-10, "{got} vs {want}");
        }
        let s = aug.final_jacobian.take().unwrap();
        assert_eq!(s.shape(), (2, 4));
        for (j, want) in dh_final().iter().enumerate() {
            assert!((s[(0, j)] - want).abs() < 1e-8, "dh/d[{j}] {}", s[(0, j)]);
        }
    }
}
