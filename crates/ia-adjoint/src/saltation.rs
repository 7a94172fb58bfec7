//! The saltation matrix of an event: how a perturbation of the state just
//! before the event maps to one just after, including the shift of the event
//! time.
//!
//! With `f-` the flow before and `f+` after the event, `g_x`, `g_p`, `g_t` the
//! guard's partials, `r_x`, `r_p`, `r_t` the reset's and
//! `gdot = g_x f- + g_t`:
//!
//! ```text
//! Xi   = r_x + (f+ - r_x f- - r_t) g_x^T / gdot
//! xi_p = r_p + (f+ - r_x f- - r_t) g_p^T / gdot
//! dt*/dtheta = -(g_x^T S- + g_p) / gdot
//! ```
//!
//! Written with the time shift `w = f+ - r_x f- - r_t` and the event-time
//! gradient `dt*/dtheta`, the jump of the sensitivity is
//!
//! ```text
//! S+ = r_x S- + [0 | r_p] - w (dt*/dtheta)
//! ```
//!
//! which is the form that also covers an event of a cascade (a guard pushed
//! past zero by an earlier reset at the same instant): its time is the time
//! of the located event that started the cascade, so `dt*/dtheta` is that
//! event's, and its own guard plays no part. For such an event `Xi = r_x`
//! and `xi_p = r_p`, and the `w` term is applied with the cascade's
//! event-time gradient.
//!
//! A terminal event ends the run at the (moving) event time, so there is no
//! flow after it: `f+ = 0`, and `Xi S- + xi_p` is the derivative of the final
//! state `r(t*, x(t*))` itself.

use ia_core::{EventRecord, GuardPartials, HybridSystem, ResetPartials};
use nalgebra::{DMatrix, DVector};
use serde::{Deserialize, Serialize};

/// The saltation matrix of one event and the quantities it is built from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Saltation {
    /// `Xi`, n x n: maps the state sensitivity across the event.
    pub xi: DMatrix<f64>,
    /// `xi_p`, n x n_p: the parameter column of the jump.
    pub xi_p: DMatrix<f64>,
    /// `gdot = g_x f- + g_t`.
    pub guard_rate: f64,
    /// `g_x` at the event.
    pub guard_x: DVector<f64>,
    /// `g_p` at the event.
    pub guard_p: DVector<f64>,
    /// The time shift `w = f+ - r_x f- - r_t`.
    pub time_shift: DVector<f64>,
    /// For an event of a cascade, the index of the located event whose time
    /// it shares (then `xi = r_x`, `xi_p = r_p`); `None` for a crossing.
    pub cascade_of: Option<usize>,
}

/// Buffers for computing saltation matrices without allocating.
#[derive(Clone, Debug)]
pub struct SaltationWorkspace {
    flow_minus: Vec<f64>,
    flow_plus: Vec<f64>,
    mismatch: DVector<f64>,
    guard: GuardPartials,
    reset: ResetPartials,
    /// The most recent result.
    pub saltation: Saltation,
}

impl SaltationWorkspace {
    /// Buffers for a system with `n` states and `n_params` parameters.
    pub fn new(n: usize, n_params: usize) -> Self {
        Self {
            flow_minus: vec![0.0; n],
            flow_plus: vec![0.0; n],
            mismatch: DVector::zeros(n),
            guard: GuardPartials::zeros(n, n_params),
            reset: ResetPartials::zeros(n, n_params),
            saltation: Saltation {
                xi: DMatrix::zeros(n, n),
                xi_p: DMatrix::zeros(n, n_params),
                guard_rate: 0.0,
                guard_x: DVector::zeros(n),
                guard_p: DVector::zeros(n_params),
                time_shift: DVector::zeros(n),
                cascade_of: None,
            },
        }
    }

    /// Computes the saltation of transition `transition` fired at `time`
    /// from `state_before` to `state_after`, into `self.saltation`;
    /// `cascade_of` as in [`EventRecord::cascade_of`].
    #[allow(clippy::too_many_arguments)]
    pub fn compute(
        &mut self,
        system: &HybridSystem,
        params: &[f64],
        transition: usize,
        time: f64,
        state_before: &[f64],
        state_after: &[f64],
        cascade_of: Option<usize>,
    ) -> &Saltation {
        let tr = &system.transitions()[transition];
        system.modes()[tr.from]
            .flow
            .rate(time, state_before, params, &mut self.flow_minus);
        if tr.terminal {
            self.flow_plus.fill(0.0);
        } else {
            system.modes()[tr.to]
                .flow
                .rate(time, state_after, params, &mut self.flow_plus);
        }
        self.guard.clear();
        tr.guard
            .partials(time, state_before, params, &mut self.guard);
        self.reset.clear();
        tr.reset
            .partials(time, state_before, params, &mut self.reset);
        let g = &self.guard;
        let r = &self.reset;
        let guard_rate =
            g.x.iter()
                .zip(&self.flow_minus)
                .map(|(a, b)| a * b)
                .sum::<f64>()
                + g.t;
        let out = &mut self.saltation;
        // w = f+ - r_x f- - r_t
        for i in 0..self.mismatch.len() {
            let rx_f: f64 = (0..self.flow_minus.len())
                .map(|j| r.x[(i, j)] * self.flow_minus[j])
                .sum();
            out.time_shift[i] = self.flow_plus[i] - rx_f - r.t[i];
        }
        out.xi.copy_from(&r.x);
        out.xi_p.copy_from(&r.p);
        if cascade_of.is_none() {
            self.mismatch.copy_from(&out.time_shift);
            self.mismatch /= guard_rate;
            out.xi.ger(1.0, &self.mismatch, &g.x, 1.0);
            out.xi_p.ger(1.0, &self.mismatch, &g.p, 1.0);
        }
        out.cascade_of = cascade_of;
        out.guard_rate = guard_rate;
        out.guard_x.copy_from(&g.x);
        out.guard_p.copy_from(&g.p);
        out
    }

    /// The reset's partials at the last computed event: the jump a
    /// differentiated time-stepper applies, blind to the event-time shift.
    pub fn reset_partials(&self) -> &ResetPartials {
        &self.reset
    }

    /// Computes the saltation of a recorded event.
    pub fn compute_for(
        &mut self,
        system: &HybridSystem,
        params: &[f64],
        event: &EventRecord,
    ) -> &Saltation {
        self.compute(
            system,
            params,
            event.transition_index,
            event.time,
            &event.state_before,
            &event.state_after,
            event.cascade_of,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::{ball, problem, E, G};

    /// The saltation of a ball's impact, derived by hand from
    /// `Xi = r_x + (f+ - r_x f- - r_t) g_x / gdot` with `g = h`,
    /// `r = (h, -e v)`, `f = (v, -g)` and impact velocity `v- = -w`:
    /// `Xi = [[-e, 0], [(1 + e) g / w, -e]]`, `xi_p = [[0, 0], [0, w]]`.
    #[test]
    fn ball_impact_saltation_matches_the_hand_derivation() {
        let system = ball();
        let trajectory = ia_events::simulate(&problem(&system)).unwrap();
        let event = &trajectory.events[0];
        let w = -event.state_before[1];
        let mut ws = SaltationWorkspace::new(2, 2);
        let s = ws.compute_for(&system, &[G, E], event);
        let expected_xi = [[-E, 0.0], [(1.0 + E) * G / w, -E]];
        for (i, row) in expected_xi.iter().enumerate() {
            for (j, want) in row.iter().enumerate() {
                assert!(
                    (s.xi[(i, j)] - want).abs() < 1e-9,
                    "xi[{i},{j}] = {}",
                    s.xi[(i, j)]
                );
            }
        }
        assert_eq!(s.xi_p[(0, 0)], 0.0);
        assert!((s.xi_p[(1, 1)] - w).abs() < 1e-12);
        assert!((s.guard_rate + w).abs() < 1e-12);
        assert!((s.time_shift[1] + (1.0 + E) * G).abs() < 1e-12);
        assert_eq!(s.cascade_of, None);
    }
}
