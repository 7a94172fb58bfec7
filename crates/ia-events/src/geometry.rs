//! The geometry of an event: what every sensitivity consumer needs of it,
//! formed once, when the event fires.
//!
//! With `f-` the flow before and `f+` after the event at time `t*`, `g_x`,
//! `g_p`, `g_t` the guard's partials at `(t*, x-)` and `r_x`, `r_t` the
//! reset's:
//!
//! ```text
//! gdot = g_x f- + g_t                (the guard's rate, transversality)
//! w    = f+ - r_x f- - r_t           (the time shift of the jump)
//! ```
//!
//! The Runge-Kutta engine forms `f-`, the guard's partials and `gdot` at every event
//! (it checks transversality with them) and, when a sensitivity consumer
//! asks for it ([`crate::ExtraState::wants_event_geometry`],
//! [`crate::Observer::wants_event_geometry`]), `f+` and `w` after the reset;
//! it hands the result to every consumer in [`crate::EventJump::geometry`].
//! The saltation matrix (ia-adjoint) is a function of this geometry and the
//! reset's partials. [`GeometryWorkspace`] also answers the reset's
//! Jacobian-vector and vector-Jacobian products at the event, through the
//! reset's own fast paths where it has them and its dense partials (formed
//! once per event) where not.

use ia_core::{GuardPartials, HybridSystem, ResetPartials, Support, Tangent, Trajectory};
use nalgebra::DVector;

/// The event a geometry is formed for: from an engine's jump
/// ([`EventJump`](crate::EventJump)) or a recorded event ([`EventAt::recorded`]).
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
    /// As in [`ia_core::EventRecord::cascade_of`].
    pub cascade_of: Option<usize>,
}

impl<'a> EventAt<'a> {
    /// Event `k` of `trajectory`'s record (`trajectory.events[k]`).
    pub fn recorded(trajectory: &'a Trajectory, k: usize) -> Self {
        let e = &trajectory.events[k];
        Self {
            transition: e.transition,
            time: e.time,
            state_before: trajectory.state_before(k),
            state_after: trajectory.state_after(k),
            cascade_of: e.cascade_of,
        }
    }
}

/// What every sensitivity consumer needs of one event: the flows on both
/// sides, the guard's partials and rate, and the time shift
/// `w = f+ - r_x f- - r_t` (formed with the reset's Jacobian-vector product
/// where it has one). For a terminal event there is no flow after it:
/// `f+ = 0`.
#[derive(Clone, Debug)]
pub struct EventGeometry {
    /// `f-`, the flow of the mode before at `(t*, x-)`.
    pub flow_before: Vec<f64>,
    /// `f+`, the flow of the mode after at `(t*, x+)` (zero for a terminal
    /// event).
    pub flow_after: Vec<f64>,
    /// `g_x`, `g_p`, `g_t` at `(t*, x-)`: only the guard's support is
    /// written when it names one, the rest is zero.
    pub guard: GuardPartials,
    /// `gdot = g_x f- + g_t`.
    pub guard_rate: f64,
    /// `w = f+ - r_x f- - r_t`.
    pub time_shift: DVector<f64>,
    /// As in [`ia_core::EventRecord::cascade_of`].
    pub cascade_of: Option<usize>,
}

/// The guard's rate `g_x . f + g_t` and `|g_x|` from its partials, over its
/// support when it names one.
pub(crate) fn guard_rate(
    partials: &GuardPartials,
    f: &[f64],
    support: Option<Support<'_>>,
) -> (f64, f64) {
    let (rate, norm2) = match support {
        Some(read) => read.states.iter().fold((0.0, 0.0), |(r, n), &i| {
            (r + partials.x[i] * f[i], n + partials.x[i] * partials.x[i])
        }),
        None => partials
            .x
            .iter()
            .zip(f)
            .fold((0.0, 0.0), |(r, n), (g, v)| (r + g * v, n + g * g)),
    };
    (rate + partials.t, norm2.sqrt())
}

/// Buffers that form an event's [`EventGeometry`] and the reset's products
/// at it without allocating per event. Each part is allocated on its first
/// use only: the reset's dense partials in particular (a reset with its own products never needs
/// them), so a consumer working with products never holds an n x n matrix.
///
/// ```
/// use ia_events::{simulate, EventAt, GeometryWorkspace, Problem};
/// # use ia_core::{Autodiff, Direction, FlowFn, FromMode, GuardFn, HybridSystem, ResetFn, Scalar, ToMode};
/// # struct Fall;
/// # impl FlowFn for Fall {
/// #     fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], d: &mut [S]) { d[0] = x[1]; d[1] = -p[0]; }
/// # }
/// # struct Floor;
/// # impl GuardFn for Floor {
/// #     fn direction(&self) -> Direction { Direction::Falling }
/// #     fn value<S: Scalar>(&self, _t: S, x: &[S], _p: &[S]) -> S { x[0] }
/// # }
/// # struct Bounce;
/// # impl ResetFn for Bounce {
/// #     fn apply<S: Scalar>(&self, _t: S, x: &[S], p: &[S], a: &mut [S]) { a[0] = x[0]; a[1] = -p[1] * x[1]; }
/// # }
/// # let system = HybridSystem::builder(&["h", "v"], &["g", "e"])
/// #     .mode("air", Autodiff(Fall))
/// #     .transition("bounce", FromMode("air"), ToMode("air"), Autodiff(Floor), Autodiff(Bounce))
/// #     .build()
/// #     .unwrap();
/// // A ball dropped from 1 m (g = 9.81, e = 0.8) hits the floor once.
/// let (g, e) = (9.81, 0.8);
/// let problem = Problem::new(&system, vec![1.0, 0.0], vec![g, e], 0.5);
/// let trajectory = simulate(&problem).unwrap();
/// let mut workspace = GeometryWorkspace::new(2, 2);
/// let geometry = workspace.compute(&system, &[g, e], EventAt::recorded(&trajectory, 0));
/// // gdot = v- and w = f+ - r_x f- = (v+ - v-, -g - e g).
/// let v_minus = trajectory.state_before(0)[1];
/// assert!((geometry.guard_rate - v_minus).abs() < 1e-12);
/// assert!((geometry.time_shift[1] + (1.0 + e) * g).abs() < 1e-12);
/// ```
#[derive(Clone, Debug)]
pub struct GeometryWorkspace {
    n: usize,
    n_params: usize,
    geometry: EventGeometry,
    /// The transition of the last geometry, whose guard's support is what
    /// its partials wrote.
    last_transition: Option<usize>,
    reset_product: Vec<f64>,
    /// The reset's dense partials, when formed, and the event they were
    /// formed at.
    reset: Option<ResetPartials>,
    reset_at: ResetKey,
}

/// Which event the dense reset partials of a [`GeometryWorkspace`] belong
/// to: transition, time and state before (two events of one cascade may
/// share the transition and the time).
#[derive(Clone, Debug, Default)]
struct ResetKey {
    formed: bool,
    transition: usize,
    time: f64,
    state_before: Vec<f64>,
}

impl ResetKey {
    fn matches(&self, event: &EventAt<'_>) -> bool {
        self.formed
            && self.transition == event.transition
            && self.time == event.time
            && self.state_before == event.state_before
    }

    fn set(&mut self, event: &EventAt<'_>) {
        self.formed = true;
        self.transition = event.transition;
        self.time = event.time;
        self.state_before.clear();
        self.state_before.extend_from_slice(event.state_before);
    }
}

impl GeometryWorkspace {
    /// Buffers for a system with `n` states and `n_params` parameters.
    pub fn new(n: usize, n_params: usize) -> Self {
        Self {
            n,
            n_params,
            geometry: EventGeometry {
                flow_before: Vec::new(),
                flow_after: Vec::new(),
                guard: GuardPartials::zeros(0, 0),
                guard_rate: 0.0,
                time_shift: DVector::zeros(0),
                cascade_of: None,
            },
            last_transition: None,
            reset_product: Vec::new(),
            reset: None,
            reset_at: ResetKey::default(),
        }
    }

    /// The buffers kept in `slot` (with nothing remembered of an earlier
    /// run) when they are for `n` states and `n_params` parameters, new
    /// ones otherwise: how a workspace's buffers serve the next run.
    pub(crate) fn reuse(slot: &mut Option<Self>, n: usize, n_params: usize) -> Self {
        Self::reuse_in(slot, n, n_params);
        slot.take().expect("reuse_in fills the slot")
    }

    /// [`GeometryWorkspace::reuse`] where the kept one is: the workspace in
    /// `slot`, forgotten, or a new one put there.
    pub(crate) fn reuse_in(slot: &mut Option<Self>, n: usize, n_params: usize) -> &mut Self {
        match slot {
            Some(g) if g.dims() == (n, n_params) => g.forget(),
            _ => *slot = Some(Self::new(n, n_params)),
        }
        slot.as_mut().expect("made above")
    }

    /// The state and parameter dimensions the buffers are for.
    pub fn dims(&self) -> (usize, usize) {
        (self.n, self.n_params)
    }

    /// Forgets the events seen so far (the reset partials kept for the last
    /// one), keeping the buffers: for a new run, whose parameters may
    /// differ.
    pub fn forget(&mut self) {
        self.reset_at.formed = false;
        // The last guard's partials are still in the buffer, and the next
        // run (perhaps of another system of the same size) cannot know
        // that guard's support: zero them all, once per run.
        if self.last_transition.take().is_some() {
            self.geometry.guard.clear();
        }
    }

    /// The geometry of the last [`Self::compute`] (or [`Self::crossing`]
    /// and [`Self::complete`]).
    pub fn geometry(&self) -> &EventGeometry {
        &self.geometry
    }

    /// The whole geometry of `event`: [`Self::crossing`] then
    /// [`Self::complete`].
    pub fn compute(
        &mut self,
        system: &HybridSystem,
        params: &[f64],
        event: EventAt<'_>,
    ) -> &EventGeometry {
        self.crossing(
            system,
            params,
            event.transition,
            event.time,
            event.state_before,
        );
        self.complete(system, params, event)
    }

    /// The part of the geometry known before the reset: `f-`, the guard's
    /// partials and `gdot` of `transition` at `(time, state_before)`. Also
    /// returns `|g_x|` (over the guard's support), for a transversality
    /// test.
    pub fn crossing(
        &mut self,
        system: &HybridSystem,
        params: &[f64],
        transition: usize,
        time: f64,
        state_before: &[f64],
    ) -> (&EventGeometry, f64) {
        let tr = &system.transitions()[transition];
        let g = &mut self.geometry;
        // Sized on first use: a workspace kept only for the reset's
        // products never holds these.
        if g.flow_before.len() != self.n {
            g.flow_before = vec![0.0; self.n];
            g.guard = GuardPartials::zeros(self.n, self.n_params);
            self.last_transition = None;
        }
        system.modes()[tr.from]
            .flow
            .rate(time, state_before, params, &mut g.flow_before);
        // Zero again where the last event's guard wrote (its support).
        if let Some(last) = self.last_transition.replace(transition) {
            g.guard
                .clear_support(system.transitions()[last].guard.support());
        }
        tr.guard.partials(time, state_before, params, &mut g.guard);
        let (rate, gx_norm) = guard_rate(&g.guard, &g.flow_before, tr.guard.support());
        g.guard_rate = rate;
        (&self.geometry, gx_norm)
    }

    /// The rest of the geometry of `event`, whose [`Self::crossing`] was the
    /// last one formed: `f+` and `w = f+ - r_x f- - r_t`.
    pub fn complete(
        &mut self,
        system: &HybridSystem,
        params: &[f64],
        event: EventAt<'_>,
    ) -> &EventGeometry {
        let tr = &system.transitions()[event.transition];
        let time = event.time;
        let g = &mut self.geometry;
        if g.flow_after.len() != self.n {
            g.flow_after = vec![0.0; self.n];
            g.time_shift = DVector::zeros(self.n);
            self.reset_product = vec![0.0; self.n];
        }
        if tr.terminal {
            g.flow_after.fill(0.0);
        } else {
            system.modes()[tr.to]
                .flow
                .rate(time, event.state_after, params, &mut g.flow_after);
        }
        g.cascade_of = event.cascade_of;
        // r_x f- + r_t
        let along_flow = Tangent {
            t: 1.0,
            x: &g.flow_before,
            param: ia_core::ParamDirection::Zero,
        };
        let fast = tr.reset.jacobian_vector_product(
            time,
            event.state_before,
            params,
            along_flow,
            &mut self.reset_product,
        );
        if !fast {
            let r = dense_reset_partials(
                &mut self.reset,
                &mut self.reset_at,
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
    pub fn reset_partials(
        &mut self,
        system: &HybridSystem,
        params: &[f64],
        event: EventAt<'_>,
    ) -> &ResetPartials {
        dense_reset_partials(
            &mut self.reset,
            &mut self.reset_at,
            (self.n, self.n_params),
            system,
            params,
            event,
        )
    }

    /// The reset's dense partials as last formed by
    /// [`Self::reset_partials`], if any.
    pub fn formed_reset_partials(&self) -> Option<&ResetPartials> {
        self.reset.as_ref().filter(|_| self.reset_at.formed)
    }

    /// Writes `r_x dx + r_t dt + r_p dp` along `tangent` at `event` into
    /// `out`, through the reset's
    /// Jacobian-vector product where it has one.
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
        let r = self.reset_partials(system, params, event);
        for (i, o) in out.iter_mut().enumerate() {
            *o = (0..tangent.x.len())
                .map(|j| r.x[(i, j)] * tangent.x[j])
                .sum::<f64>()
                + r.t[i] * tangent.t
                + tangent.param.apply(|j| r.p[(i, j)]);
        }
    }

    /// Transposes the reset's jump at `event`: writes `r_x^T lambda` into
    /// `x_bar` and adds `r_p^T lambda` to `p_bar`, through the reset's
    /// vector-Jacobian product where it has one. Only the event's
    /// transition, time and state before are read.
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
        let r = self.reset_partials(system, params, event);
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
}

/// The reset's partials at `event` in `slot` (allocated on first use),
/// formed unless `formed_at` says they already are.
fn dense_reset_partials<'a>(
    slot: &'a mut Option<ResetPartials>,
    formed_at: &mut ResetKey,
    (n, n_params): (usize, usize),
    system: &HybridSystem,
    params: &[f64],
    event: EventAt<'_>,
) -> &'a ResetPartials {
    let r = slot.get_or_insert_with(|| ResetPartials::zeros(n, n_params));
    if !formed_at.matches(&event) {
        r.clear();
        system.transitions()[event.transition].reset.partials(
            event.time,
            event.state_before,
            params,
            r,
        );
        formed_at.set(&event);
    }
    r
}
