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

use ia_core::{HybridSystem, ResetPartials, Tangent};
use ia_events::GeometryWorkspace;
pub use ia_events::{EventAt, EventGeometry};
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

/// Buffers for the dense saltation matrix of an event, a function of its
/// [`EventGeometry`] and the reset's partials, and for the reset's products
/// at an event ([`GeometryWorkspace`], ia-events' one owner of that
/// arithmetic). The dense parts are allocated on first use only.
#[derive(Clone, Debug)]
pub struct SaltationWorkspace {
    n: usize,
    n_params: usize,
    /// Allocated on first use: a consumer handed the integrator's geometry,
    /// with resets that have their own products, never needs it.
    events: Option<GeometryWorkspace>,
    saltation: Option<Saltation>,
}

impl SaltationWorkspace {
    /// Buffers for a system with `n` states and `n_params` parameters.
    pub fn new(n: usize, n_params: usize) -> Self {
        Self {
            n,
            n_params,
            events: None,
            saltation: None,
        }
    }

    /// The state and parameter dimensions the buffers are for.
    pub fn dims(&self) -> (usize, usize) {
        (self.n, self.n_params)
    }

    /// Forgets the events seen so far, keeping the buffers (for a new run,
    /// whose parameters may differ).
    pub fn forget(&mut self) {
        if let Some(events) = &mut self.events {
            events.forget();
        }
    }

    /// The geometry of a recorded event, formed here (the integrator hands
    /// the geometry of the event it fires to its consumers in
    /// [`ia_events::EventJump::geometry`]).
    pub fn geometry(
        &mut self,
        system: &HybridSystem,
        params: &[f64],
        event: EventAt<'_>,
    ) -> &EventGeometry {
        self.events().compute(system, params, event)
    }

    /// Writes `r_x dx + r_t dt + r_p dp` along `tangent` at `event` into
    /// `out` (through the reset's Jacobian-vector product where it has one).
    pub fn reset_jacobian_vector_product(
        &mut self,
        system: &HybridSystem,
        params: &[f64],
        event: EventAt<'_>,
        tangent: Tangent<'_>,
        out: &mut [f64],
    ) {
        self.events()
            .reset_jacobian_vector_product(system, params, event, tangent, out);
    }

    /// Transposes the reset's jump at `event`: writes `r_x^T lambda` into
    /// `x_bar`, adds `r_p^T lambda` to `p_bar` (through the reset's
    /// vector-Jacobian product where it has one).
    pub fn reset_transpose(
        &mut self,
        system: &HybridSystem,
        params: &[f64],
        event: EventAt<'_>,
        lambda: &[f64],
        x_bar: &mut [f64],
        p_bar: &mut [f64],
    ) {
        self.events()
            .reset_transpose(system, params, event, lambda, x_bar, p_bar);
    }

    /// The saltation matrix of an event (dense: `Xi` is n x n and
    /// `xi_p` n x n_p), its geometry formed here.
    pub fn compute_for(
        &mut self,
        system: &HybridSystem,
        params: &[f64],
        event: EventAt<'_>,
    ) -> &Saltation {
        let (n, np) = (self.n, self.n_params);
        let events = self
            .events
            .get_or_insert_with(|| GeometryWorkspace::new(n, np));
        events.compute(system, params, event);
        events.reset_partials(system, params, event);
        let reset = events.formed_reset_partials().expect("formed above");
        fill_saltation(&mut self.saltation, (n, np), events.geometry(), reset)
    }

    /// The saltation matrix of `event` from its `geometry` (as the
    /// integrator formed it) and the reset's partials:
    /// `Xi = r_x + w g_x^T / gdot`, `xi_p = r_p + w g_p^T / gdot`, or the
    /// reset's partials alone for an event of a cascade.
    pub fn saltation_of(
        &mut self,
        system: &HybridSystem,
        params: &[f64],
        event: EventAt<'_>,
        geometry: &EventGeometry,
    ) -> &Saltation {
        let (n, np) = (self.n, self.n_params);
        let events = self
            .events
            .get_or_insert_with(|| GeometryWorkspace::new(n, np));
        let reset = events.reset_partials(system, params, event);
        fill_saltation(&mut self.saltation, (n, np), geometry, reset)
    }

    /// The saltation of the last [`Self::compute_for`] or
    /// [`Self::saltation_of`], if any.
    pub fn saltation(&self) -> Option<&Saltation> {
        self.saltation.as_ref()
    }

    /// The reset's dense partials at `event` (formed once per event): the
    /// jump a differentiated time-stepper applies, blind to the event-time
    /// shift.
    pub fn reset_partials(
        &mut self,
        system: &HybridSystem,
        params: &[f64],
        event: EventAt<'_>,
    ) -> &ResetPartials {
        self.events().reset_partials(system, params, event)
    }

    /// The reset's dense partials as last formed, if any.
    pub fn formed_reset_partials(&self) -> Option<&ResetPartials> {
        self.events.as_ref()?.formed_reset_partials()
    }

    fn events(&mut self) -> &mut GeometryWorkspace {
        let (n, n_params) = (self.n, self.n_params);
        self.events
            .get_or_insert_with(|| GeometryWorkspace::new(n, n_params))
    }
}

/// The saltation of an event from its geometry `g` and the reset's
/// partials `r`, into `slot` (allocated on first use).
fn fill_saltation<'s>(
    slot: &'s mut Option<Saltation>,
    (n, np): (usize, usize),
    g: &EventGeometry,
    r: &ResetPartials,
) -> &'s Saltation {
    let out = slot.get_or_insert_with(|| Saltation {
        xi: DMatrix::zeros(n, n),
        xi_p: DMatrix::zeros(n, np),
        guard_rate: 0.0,
        guard_x: DVector::zeros(n),
        guard_p: DVector::zeros(np),
        time_shift: DVector::zeros(n),
        cascade_of: None,
    });
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

/// The dense saltation matrix of every event of `trajectory`, a run of
/// `problem`.
pub fn event_saltations(
    problem: &ia_events::Problem<'_>,
    trajectory: &ia_core::Trajectory,
) -> Vec<Saltation> {
    let sys = problem.system;
    let mut ws = SaltationWorkspace::new(sys.state_dim(), sys.param_dim());
    (0..trajectory.events.len())
        .map(|k| {
            let at = ia_events::EventAt::recorded(trajectory, k);
            ws.compute_for(sys, &problem.params, at).clone()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{ball, problem, E, G};

    /// The saltation of a ball's impact, derived by hand from
    /// `Xi = r_x + (f+ - r_x f- - r_t) g_x / gdot` with `g = h`,
    /// `r = (h, -e v)`, `f = (v, -g)` and impact velocity `v- = -w`:
    /// `Xi = [[-e, 0], [(1 + e) g / w, -e]]`, `xi_p = [[0, 0], [0, w]]`.
    #[test]
    fn ball_impact_saltation_matches_the_hand_derivation() {
        let system = ball();
        let trajectory = ia_events::simulate(&problem(&system)).unwrap();
        let w = -trajectory.state_before(0)[1];
        let mut ws = SaltationWorkspace::new(2, 2);
        let event = ia_events::EventAt::recorded(&trajectory, 0);
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
