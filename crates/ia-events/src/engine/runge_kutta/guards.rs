//! What the Runge-Kutta engine knows of each guard and keeps between runs:
//! the sides the guards were last seen on, their rounding bands and values,
//! and the state-sized buffers of a run.

use crate::geometry::guard_rate;
use crate::reuse::{empty_with_room, fill};
use ia_core::{Guard, GuardPartials};

/// What a run knows of each transition's guard (indexed by transition):
/// the side it was last seen on, the rounding band of the last event, its
/// values at the ends of the current step, and the lists `detect` builds.
/// Kept between runs by a [`Workspace`](crate::Workspace).
#[derive(Debug, Default)]
pub(super) struct GuardTable {
    /// Side (+1 or -1) each guard was last seen on.
    pub(super) sides: Vec<f64>,
    /// The band around zero within which the guard's value is rounding
    /// noise of the last event...
    pub(super) zero_bands: Vec<f64>,
    /// ...for steps starting before this time (the guard, leaving zero at
    /// its rate, clears the band by then).
    pub(super) band_ends: Vec<f64>,
    /// Values at the end of the current step (or of the narrowed bracket of
    /// the crossing being located)...
    pub(super) values: Vec<f64>,
    /// ...and at its start: the values at the end of the step before, or
    /// those formed after the last event or at the start of the run (the
    /// stepper starts from that very state, so they need no evaluation).
    pub(super) start_values: Vec<f64>,
    /// Guards that crossed in the current bracket, in declaration order,
    /// and the next bracket's.
    pub(super) crossed: Vec<usize>,
    pub(super) still_crossed: Vec<usize>,
    /// Guards on their side at both ends of the step, searched for a
    /// crossing and return inside it.
    pub(super) dip_candidates: Vec<usize>,
}

impl GuardTable {
    /// Ready for a run of a system with `transitions` transitions.
    pub(super) fn prepare(&mut self, transitions: usize) {
        fill(&mut self.sides, transitions, 0.0);
        fill(&mut self.zero_bands, transitions, 0.0);
        fill(&mut self.band_ends, transitions, f64::NEG_INFINITY);
        fill(&mut self.values, transitions, 0.0);
        fill(&mut self.start_values, transitions, 0.0);
        empty_with_room(&mut self.crossed, transitions);
        empty_with_room(&mut self.still_crossed, transitions);
        empty_with_room(&mut self.dip_candidates, transitions);
    }

    /// Records the side guard `k` is on at `t`: the sign of `heading` (its
    /// value, or its rate when it sits on zero within `band`, 0 if not) and
    /// how long the zero band lasts.
    pub(super) fn take_side(&mut self, k: usize, t: f64, heading: f64, band: f64) {
        self.sides[k] = heading.signum();
        self.zero_bands[k] = band;
        self.band_ends[k] = if band > 0.0 && heading != 0.0 {
            t + 10.0 * band / heading.abs()
        } else {
            t
        };
    }

    /// The rounding band of guard `k` for a step from `t_start`.
    pub(super) fn band(&self, k: usize, t_start: f64) -> f64 {
        if t_start <= self.band_ends[k] {
            self.zero_bands[k]
        } else {
            0.0
        }
    }
}

/// A run's state-sized buffers, kept between runs by a
/// [`Workspace`](crate::Workspace).
#[derive(Debug, Default)]
pub(super) struct StateBuffers {
    /// State (full, with extras) right after the last event or at the start.
    pub(super) y: Vec<f64>,
    pub(super) y_after: Vec<f64>,
    pub(super) x_probe: Vec<f64>,
    pub(super) rate: Vec<f64>,
    /// Rates of the state at the start and end of a step, when the stepper
    /// does not keep them.
    pub(super) dip_rates: Vec<f64>,
    /// States at the start and end of a step, for the same search.
    pub(super) dip_states: Vec<f64>,
}

impl StateBuffers {
    /// Ready for a run of `n` states and `dim` components with the extras.
    pub(super) fn prepare(&mut self, n: usize, dim: usize) {
        fill(&mut self.y, dim, 0.0);
        fill(&mut self.y_after, dim, 0.0);
        fill(&mut self.x_probe, n, 0.0);
        fill(&mut self.rate, n, 0.0);
        fill(&mut self.dip_rates, 2 * n, 0.0);
        fill(&mut self.dip_states, 2 * n, 0.0);
    }
}

/// The guard's rate `gdot = g_x . f + g_t` at `(t, x)` with the state's rate
/// `f`, from its partials formed in `partials` (all zero on entry, and again
/// on return: only the guard's support is written and cleared, so the cost
/// is what the guard reads).
pub(super) fn guard_rate_at(
    guard: &dyn Guard,
    t: f64,
    x: &[f64],
    p: &[f64],
    f: &[f64],
    partials: &mut GuardPartials,
) -> f64 {
    guard.partials(t, x, p, partials);
    let support = guard.support();
    let (rate, _) = guard_rate(partials, f, support);
    partials.clear_support(support);
    rate
}

/// The Runge-Kutta engine's buffers, kept between runs by a
/// [`Workspace`](crate::Workspace): taken by a run and given back when it
/// ends.
#[derive(Debug, Default)]
pub(crate) struct RkBuffers {
    pub(super) guards: GuardTable,
    pub(super) states: StateBuffers,
    pub(super) guard_partials: Option<GuardPartials>,
    pub(super) jacobian: JacobianBuffers,
}

/// Where the right-hand side forms its flow's Jacobian for a stepper that
/// asks for it (an implicit one's Newton matrix, an explicit one's
/// stability limit), kept so that a warm run allocates nothing.
#[derive(Debug, Default)]
pub(crate) struct JacobianBuffers {
    /// The flow's partials, for a flow without Jacobian-vector products.
    pub(super) partials: Option<ia_core::FlowPartials>,
    /// A unit state tangent, for the Jacobian by Jacobian-vector products.
    pub(super) unit: Vec<f64>,
}

impl RkBuffers {
    /// The guard partials for `n` states and `n_params` parameters, the
    /// kept ones when they have that shape.
    pub(super) fn guard_partials(
        slot: &mut Option<GuardPartials>,
        n: usize,
        n_params: usize,
    ) -> &mut GuardPartials {
        match slot {
            Some(g) if g.x.len() == n && g.p.len() == n_params => {}
            _ => *slot = Some(GuardPartials::zeros(n, n_params)),
        }
        slot.as_mut().expect("made above")
    }
}
