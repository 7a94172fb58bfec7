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

use ia_core::{EventRecord, GuardPartials, HybridSystem, ResetPartials, Tangent};
use ia_events::EventJump;
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

/// The event a geometry or saltation is computed for, from the integrator's
/// jump ([`EventJump`]) or a recorded event ([`EventRecord`]).
#[derive(Clone, Copy, Debug)]
pub struct EventAt<'a> {
    /// Transition index in the system.
    pub transition: usize,
    /// Event time.
    pub time: f64,
    /// State before the reset.
    pub state_before: &'a [f64],
    /// State after the reset.
    pub state_after: &'a [f64],
    /// As in [`EventRecord::cascade_of`].
    pub cascade_of: Option<usize>,
}

impl<'a> From<&'a EventRecord> for EventAt<'a> {
    fn from(e: &'a EventRecord) -> Self {
        Self {
            transition: e.transition_index,
            time: e.time,
            state_before: &e.state_before,
            state_after: &e.state_after,
            cascade_of: e.cascade_of,
        }
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

/// What every sensitivity consumer needs of one event, computed once per
/// event: the flows on both sides, the guard's partials and rate, and the
/// time shift `w = f+ - r_x f- - r_t` (formed with the reset's
/// Jacobian-vector product where it has one). The saltation matrix is a
/// function of it and the reset's partials; the adjoint applies it as a
/// rank-one update of the reset's vector-Jacobian product and never forms an
/// n x n matrix.
#[derive(Clone, Debug)]
pub struct EventGeometry {
    /// `f-`, the flow of the mode before at `(t*, x-)`.
    pub flow_before: Vec<f64>,
    /// `f+`, the flow of the mode after at `(t*, x+)` (zero for a terminal
    /// event).
    pub flow_after: Vec<f64>,
    /// `g_x`, `g_p`, `g_t` at `(t*, x-)`.
    pub guard: GuardPartials,
    /// `gdot = g_x f- + g_t`.
    pub guard_rate: f64,
    /// `w = f+ - r_x f- - r_t`.
    pub time_shift: DVector<f64>,
    /// As in [`EventRecord::cascade_of`].
    pub cascade_of: Option<usize>,
}

/// Buffers for computing event geometry and saltation matrices without
/// allocating per event. The dense parts (the reset's partials, `Xi`,
/// `xi_p`) are allocated on first use only, so a consumer that works with
/// products (the adjoint) never holds an n x n or n x n_p matrix.
#[derive(Clone, Debug)]
pub struct SaltationWorkspace {
    n: usize,
    n_params: usize,
    geometry: EventGeometry,
    /// The transition of the last geometry, whose guard's support is what
    /// its partials wrote.
    last_transition: Option<usize>,
    reset_product: Vec<f64>,
    /// The reset's partials at the event of the last call, when formed.
    reset: Option<ResetPartials>,
    reset_current: bool,
    saltation: Option<Saltation>,
}

impl SaltationWorkspace {
    /// Buffers for a system with `n` states and `n_params` parameters.
    pub fn new(n: usize, n_params: usize) -> Self {
        Self {
            n,
            n_params,
            geometry: EventGeometry {
                flow_before: vec![0.0; n],
                flow_after: vec![0.0; n],
                guard: GuardPartials::zeros(n, n_params),
                guard_rate: 0.0,
                time_shift: DVector::zeros(n),
                cascade_of: None,
            },
            last_transition: None,
            reset_product: vec![0.0; n],
            reset: None,
            reset_current: false,
            saltation: None,
        }
    }

    /// The geometry of a recorded event.
    pub fn geometry(
        &mut self,
        system: &HybridSystem,
        params: &[f64],
        event: EventAt<'_>,
    ) -> &EventGeometry {
        let tr = &system.transitions()[event.transition];
        let (time, before) = (event.time, event.state_before);
        let g = &mut self.geometry;
        system.modes()[tr.from]
            .flow
            .rate(time, before, params, &mut g.flow_before);
        if tr.terminal {
            g.flow_after.fill(0.0);
        } else {
            system.modes()[tr.to]
                .flow
                .rate(time, event.state_after, params, &mut g.flow_after);
        }
        // Zero again where the last event's guard wrote (its support).
        if let Some(last) = self.last_transition.replace(event.transition) {
            g.guard
                .clear_support(system.transitions()[last].guard.support());
        }
        tr.guard.partials(time, before, params, &mut g.guard);
        g.guard_rate = g
            .guard
            .x
            .iter()
            .zip(&g.flow_before)
            .map(|(a, b)| a * b)
            .sum::<f64>()
            + g.guard.t;
        g.cascade_of = event.cascade_of;
        // r_x f- + r_t
        self.reset_current = false;
        let along_flow = Tangent {
            t: 1.0,
            x: &g.flow_before,
            param: None,
        };
        let fast = tr.reset.jacobian_vector_product(
            time,
            before,
            params,
            along_flow,
            &mut self.reset_product,
        );
        if !fast {
            let r = dense_reset_partials(
                &mut self.reset,
                &mut self.reset_current,
                (self.n, self.n_params),
                system,
                params,
                event,
            );
            let g = &self.geometry;
            for (i, out) in self.reset_product.iter_mut().enumerate() {
                *out = (0..g.flow_before.len())
                    .map(|j| r.x[(i, j)] * g.flow_before[j])
                    .sum::<f64>()
                    + r.t[i];
            }
        }
        let g = &mut self.geometry;
        for ((w, f), rf) in g
            .time_shift
            .iter_mut()
            .zip(&g.flow_after)
            .zip(&self.reset_product)
        {
            *w = f - rf;
        }
        &self.geometry
    }

    /// The reset's dense partials at `event`, formed once per event.
    fn dense_reset(
        &mut self,
        system: &HybridSystem,
        params: &[f64],
        event: EventAt<'_>,
    ) -> &ResetPartials {
        dense_reset_partials(
            &mut self.reset,
            &mut self.reset_current,
            (self.n, self.n_params),
            system,
            params,
            event,
        )
    }

    /// Writes `r_x dx + r_t dt + r_p dp` along `tangent` at the event of
    /// the last [`Self::geometry`] call into `out` (through the reset's
    /// Jacobian-vector product where it has one).
    pub fn reset_jacobian_vector_product(
        &mut self,
        system: &HybridSystem,
        params: &[f64],
        event: EventAt<'_>,
        tangent: Tangent<'_>,
        out: &mut [f64],
    ) {
        let reset = &system.transitions()[event.transition].reset;
        if reset.jacobian_vector_product(event.time, event.state_before, params, tangent, out) {
            return;
        }
        let r = self.dense_reset(system, params, event);
        for (i, o) in out.iter_mut().enumerate() {
            *o = (0..tangent.x.len())
                .map(|j| r.x[(i, j)] * tangent.x[j])
                .sum::<f64>()
                + r.t[i] * tangent.t
                + tangent.param.map_or(0.0, |j| r.p[(i, j)]);
        }
    }

    /// Transposes the jump of the event of the last [`Self::geometry`]
    /// call: writes `r_x^T lambda` into `x_bar`, adds `r_p^T lambda` to
    /// `p_bar` (through the reset's vector-Jacobian product where it has
    /// one).
    pub fn reset_transpose(
        &mut self,
        system: &HybridSystem,
        params: &[f64],
        event: EventAt<'_>,
        lambda: &[f64],
        x_bar: &mut [f64],
        p_bar: &mut [f64],
    ) {
        let reset = &system.transitions()[event.transition].reset;
        if reset.vector_jacobian_product(
            event.time,
            event.state_before,
            params,
            lambda,
            x_bar,
            p_bar,
        ) {
            return;
        }
        let r = self.dense_reset(system, params, event);
        for (j, xb) in x_bar.iter_mut().enumerate() {
            *xb = r.x.column(j).iter().zip(lambda).map(|(a, l)| a * l).sum();
        }
        for (j, pb) in p_bar.iter_mut().enumerate() {
            *pb +=
                r.p.column(j)
                    .iter()
                    .zip(lambda)
                    .map(|(a, l)| a * l)
                    .sum::<f64>();
        }
    }

    /// The saltation matrix of an event (dense: `Xi` is n x n and
    /// `xi_p` n x n_p), from its [`EventGeometry`] and the reset's partials.
    pub fn compute_for(
        &mut self,
        system: &HybridSystem,
        params: &[f64],
        event: EventAt<'_>,
    ) -> &Saltation {
        self.geometry(system, params, event);
        self.dense_reset(system, params, event);
        let (n, np) = (self.n, self.n_params);
        let out = self.saltation.get_or_insert_with(|| Saltation {
            xi: DMatrix::zeros(n, n),
            xi_p: DMatrix::zeros(n, np),
            guard_rate: 0.0,
            guard_x: DVector::zeros(n),
            guard_p: DVector::zeros(np),
            time_shift: DVector::zeros(n),
            cascade_of: None,
        });
        let g = &self.geometry;
        let r = self.reset.as_ref().expect("formed above");
        out.xi.copy_from(&r.x);
        out.xi_p.copy_from(&r.p);
        if g.cascade_of.is_none() {
            let scale = 1.0 / g.guard_rate;
            out.xi.ger(scale, &g.time_shift, &g.guard.x, 1.0);
            out.xi_p.ger(scale, &g.time_shift, &g.guard.p, 1.0);
        }
        out.cascade_of = g.cascade_of;
        out.guard_rate = g.guard_rate;
        out.guard_x.copy_from(&g.guard.x);
        out.guard_p.copy_from(&g.guard.p);
        out.time_shift.copy_from(&g.time_shift);
        out
    }

    /// The saltation of the last [`Self::compute_for`], if any.
    pub fn saltation(&self) -> Option<&Saltation> {
        self.saltation.as_ref()
    }

    /// The reset's partials at the event of the last [`Self::compute_for`]:
    /// the jump a differentiated time-stepper applies, blind to the
    /// event-time shift.
    pub fn reset_partials(&self) -> Option<&ResetPartials> {
        self.reset.as_ref().filter(|_| self.reset_current)
    }
}

/// The reset's partials at `event` in `slot` (allocated on first use),
/// formed unless `current` says they already are.
fn dense_reset_partials<'a>(
    slot: &'a mut Option<ResetPartials>,
    current: &mut bool,
    (n, n_params): (usize, usize),
    system: &HybridSystem,
    params: &[f64],
    event: EventAt<'_>,
) -> &'a ResetPartials {
    let r = slot.get_or_insert_with(|| ResetPartials::zeros(n, n_params));
    if !*current {
        r.clear();
        system.transitions()[event.transition].reset.partials(
            event.time,
            event.state_before,
            params,
            r,
        );
        *current = true;
    }
    r
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
        let s = ws.compute_for(&system, &[G, E], event.into());
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
