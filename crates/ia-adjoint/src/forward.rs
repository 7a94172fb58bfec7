//! Forward sensitivities: the variational equation `S' = f_x S + f_p`
//! integrated with the state by the same stepper, chained across events by
//! `S+ = Xi S- + xi_p`, applied column by column as the reset's
//! Jacobian-vector product plus a rank-one term in the event's time shift
//! (`Xi` is never formed).
//!
//! `S` is n x m with m = n + n_p columns: the initial state entries, then the
//! parameters, so `S(t0) = [I | 0]`. It rides along as extra components of
//! the integrated vector (column-major), which makes each Runge-Kutta step of
//! `(x, S)` the exact derivative of the step of `x` with the step size held
//! fixed; this is what lets the adjoint agree with it to rounding on the same
//! steps.
//!
//! With chosen columns ([`crate::jacobian_wrt`]) or seed directions
//! ([`crate::jacobian_along`]), `S` holds only those, and its rate and its
//! jumps are formed column by column from Jacobian-vector products of the
//! flow and the reset ([`ia_core::Flow::jacobian_vector_product`],
//! [`ia_core::Reset::jacobian_vector_product`]), so the cost is proportional
//! to the number of columns; a flow or reset without the fast path falls
//! back to its dense partials. A chosen column is the seed of one input (a
//! unit direction): a seed column `(dx0, dp)` starts at `S(t0) = dx0` and
//! its parameter terms are `f_p dp`, `r_p dp`, `g_p . dp` (one column of
//! the partials for a unit `dp`, the one fast path of a `Wrt` column).

use crate::saltation::{EventAt, SaltationWorkspace};
use ia_core::{FlowPartials, HybridError, HybridSystem, ParamDirection, Tangent, Wrt};
use ia_events::{EventJump, EventRecording, ExtraState, Observer, RunContext, SpareVecs};
use nalgebra::{DMatrix, DMatrixView, DMatrixViewMut};

/// The kind of `dp` among `Zero`, `Unit` and `Along` (no offset: an
/// `Along` column's `dp` is read from the seeds when used).
#[derive(Clone, Copy, Debug, PartialEq)]
enum MoveKind {
    Zero,
    Unit(usize),
    Along,
}

/// The columns carried when not every input's: each a seed `(dx0, dp)`
/// (a [`Wrt`] is the seed of one input, a unit direction).
#[derive(Debug, Default)]
struct Seeds {
    /// `dx0` of each column, `n x m` column-major.
    x0: Vec<f64>,
    /// `dp` of each column, `n_p x m` column-major.
    params: Vec<f64>,
    /// The kind of each column's `dp`.
    kinds: Vec<MoveKind>,
}

/// `dt*/dtheta = -(g_x . s + g_p . dp) / gdot` of one sensitivity column
/// `s` whose parameter direction `dp` makes `gp = g_p . dp` (`g_p[j]` for
/// parameter `j`, zero for an initial state): the one formula of the event
/// time's derivative, for full, chosen and seeded columns and the
/// derivative probes.
pub(crate) fn event_time_derivative(guard_x: &[f64], gp: f64, guard_rate: f64, s: &[f64]) -> f64 {
    let gx_s: f64 = guard_x.iter().zip(s).map(|(a, b)| a * b).sum();
    -(gx_s + gp) / guard_rate
}

/// Carries `S` through a run (the [`ExtraState`] of the hybrid integrator;
/// [`SensitivityAt`] reads it at the observations and the end).
pub(crate) struct ForwardSensitivity {
    n: usize,
    n_params: usize,
    /// The chosen columns or seed directions; `None`: every initial-state
    /// entry, then every parameter (dense products).
    chosen: Option<Seeds>,
    error_controlled: bool,
    /// False only to show what is lost without the saltation term.
    apply_saltation: bool,
    /// Formed on first use: a flow with Jacobian-vector products never needs
    /// them for chosen columns.
    partials: Option<FlowPartials>,
    /// `w` of the event being mapped (chosen columns).
    time_shift: Vec<f64>,
    saltation: SaltationWorkspace,
    /// `dt*/dtheta` of the recorded events (the ones the trajectory keeps,
    /// [`EventRecording`]), `m` entries each, one event after the other.
    time_gradient_rows: Vec<f64>,
    /// `dt*/dtheta` of the event being mapped.
    time_gradient: Vec<f64>,
    recording: EventRecording,
    /// `dt*/dtheta` of the last located event, the time of the events of
    /// the cascade it starts, when the recording may drop it from
    /// `time_gradient_rows` (with every event recorded it is read there,
    /// saving the copy).
    cascade_time_gradient: Vec<f64>,
    /// The exact solver's stretches ([`ExtraState::advance_exact`]): the
    /// state moved by its start rate, and a parameter's source `f_p[:, j]`
    /// at the start and there.
    exact_scratch: Vec<f64>,
    /// The exact solver's linear pairs: the parameter sources `f_p` at
    /// the states zero and one on each pair's first, second entry.
    pair_scratch: Vec<f64>,
}

/// Reads `S` off the carried components at each observation and at the end
/// (the [`Observer`] beside [`ForwardSensitivity`]).
pub(crate) struct SensitivityAt {
    n: usize,
    columns: usize,
    /// `S` at each observation time.
    pub observation_jacobians: Vec<DMatrix<f64>>,
    /// `S` at the end.
    pub final_jacobian: Option<DMatrix<f64>>,
    /// Buffers for the matrices (see [`crate::Workspace`]).
    pub(crate) spare: SpareVecs,
}

impl SensitivityAt {
    /// Reads the `n x columns` sensitivity `S` that `carried` carries.
    pub(crate) fn of(carried: &ForwardSensitivity) -> Self {
        Self {
            n: carried.n,
            columns: carried.columns(),
            observation_jacobians: Vec::new(),
            final_jacobian: None,
            spare: SpareVecs::default(),
        }
    }

    /// `S`, the last `n x columns` carried components: after the state
    /// and any derivative probes carried before it (whose number the
    /// taped run may change when it is redone: [`crate::probe`]).
    fn matrix(&mut self, y: &[f64]) -> DMatrix<f64> {
        let start = y.len() - self.n * self.columns;
        DMatrix::from_vec(self.n, self.columns, self.spare.copy_of(&y[start..]))
    }

    /// Forgets what a run showed it (a taped run discarded to be redone:
    /// [`crate::probe`]), its matrices' buffers kept for the next.
    pub(crate) fn forget_run(&mut self) {
        for s in self.observation_jacobians.drain(..) {
            self.spare.give(s.data.into());
        }
        if let Some(s) = self.final_jacobian.take() {
            self.spare.give(s.data.into());
        }
    }
}

impl Observer for SensitivityAt {
    fn observed(&mut self, _run: RunContext<'_>, _index: usize, _time: f64, y: &[f64]) {
        let s = self.matrix(y);
        self.observation_jacobians.push(s);
    }

    fn finished(&mut self, _run: RunContext<'_>, _time: f64, y: &[f64]) {
        self.final_jacobian = Some(self.matrix(y));
    }
}

impl ForwardSensitivity {
    pub(crate) fn new(
        system: &HybridSystem,
        error_controlled: bool,
        apply_saltation: bool,
    ) -> Self {
        let (n, n_params) = (system.state_dim(), system.param_dim());
        Self {
            n,
            n_params,
            chosen: None,
            error_controlled,
            apply_saltation,
            partials: None,
            time_shift: vec![0.0; n],
            saltation: SaltationWorkspace::new(n, n_params),
            time_gradient_rows: Vec::new(),
            time_gradient: Vec::new(),
            recording: EventRecording::All,
            cascade_time_gradient: Vec::new(),
            exact_scratch: Vec::new(),
            pair_scratch: Vec::new(),
        }
    }

    /// [`ForwardSensitivity::new`] in the buffers of `self`, an earlier
    /// run's, when they have the system's shape (nothing of that run is
    /// remembered).
    pub(crate) fn renew(
        mut self,
        system: &HybridSystem,
        error_controlled: bool,
        apply_saltation: bool,
    ) -> Self {
        if (self.n, self.n_params) != (system.state_dim(), system.param_dim()) {
            let mut fresh = Self::new(system, error_controlled, apply_saltation);
            fresh.time_gradient_rows = self.time_gradient_rows;
            fresh.time_gradient = self.time_gradient;
            fresh.cascade_time_gradient = self.cascade_time_gradient;
            return fresh.renew(system, error_controlled, apply_saltation);
        }
        self.error_controlled = error_controlled;
        self.apply_saltation = apply_saltation;
        self.chosen = None;
        self.recording = EventRecording::All;
        self.forget_run();
        self
    }

    /// Forgets what a run carried (a taped run discarded to be redone:
    /// [`crate::probe`]), keeping the columns and the recording chosen.
    pub(crate) fn forget_run(&mut self) {
        self.cascade_time_gradient.clear();
        self.time_gradient_rows.clear();
        self.saltation.forget();
    }

    /// Keeps the event-time gradients of the events `recording` keeps (as
    /// the trajectory does).
    pub(crate) fn with_recording(mut self, recording: EventRecording) -> Self {
        self.recording = recording;
        self
    }

    /// Keeps `time_gradient`, event `jump`'s `dt*/dtheta`, as the
    /// recording says, and as the time of the cascade it starts.
    fn store_time_gradient(&mut self, jump: &EventJump<'_>) {
        if jump.cascade_of.is_none() && self.recording != EventRecording::All {
            self.cascade_time_gradient.clear();
            self.cascade_time_gradient
                .extend_from_slice(&self.time_gradient);
        }
        if self.recording.keeps_any() {
            self.time_gradient_rows
                .extend_from_slice(&self.time_gradient);
            let m = self.time_gradient.len();
            self.recording
                .trim_flat(&mut self.time_gradient_rows, m, false);
        }
    }

    /// `dt*/dtheta` of the `recorded` events the trajectory keeps, once the
    /// run is over: a `recorded x m` matrix built in a vector from `spare`.
    pub(crate) fn event_time_gradients(
        &mut self,
        recorded: usize,
        spare: &mut SpareVecs,
    ) -> DMatrix<f64> {
        let m = self.columns();
        self.recording
            .trim_flat(&mut self.time_gradient_rows, m, true);
        let rows = &self.time_gradient_rows;
        // A run that failed has fewer rows than its trajectory's events.
        let recorded = recorded.min(rows.len() / m.max(1));
        let mut data = spare.zeros(recorded * m);
        for (k, row) in rows.chunks_exact(m.max(1)).take(recorded).enumerate() {
            for (j, &v) in row.iter().enumerate() {
                data[j * recorded + k] = v;
            }
        }
        DMatrix::from_vec(recorded, m, data)
    }

    /// Sensitivities with respect to `columns` only: the seeds of those
    /// inputs (unit directions).
    pub(crate) fn with_columns(self, columns: &[Wrt]) -> Self {
        let (n, np, m) = (self.n, self.n_params, columns.len());
        let (mut x0, mut params) = (vec![0.0; n * m], vec![0.0; np * m]);
        for (c, column) in columns.iter().enumerate() {
            match *column {
                Wrt::Initial(i) => x0[c * n + i] = 1.0,
                Wrt::Param(j) => params[c * np + j] = 1.0,
            }
        }
        self.with_seeds(x0, params)
    }

    /// Sensitivities along `m` seed directions: `x0` (`n x m`) and `params`
    /// (`n_p x m`), column-major, `S(t0) = x0`. A column whose `dp` is zero
    /// or a unit direction takes the fast paths of chosen columns.
    pub(crate) fn with_seeds(mut self, x0: Vec<f64>, params: Vec<f64>) -> Self {
        let (n, np) = (self.n, self.n_params);
        let m = x0
            .len()
            .checked_div(n)
            .or_else(|| params.len().checked_div(np))
            .unwrap_or(0);
        let kinds = (0..m)
            .map(|c| {
                let dp = &params[c * np..(c + 1) * np];
                let mut moved = dp.iter().enumerate().filter(|(_, v)| **v != 0.0);
                match (moved.next(), moved.next()) {
                    (None, _) => MoveKind::Zero,
                    (Some((j, &1.0)), None) => MoveKind::Unit(j),
                    _ => MoveKind::Along,
                }
            })
            .collect();
        self.chosen = Some(Seeds { x0, params, kinds });
        self
    }

    fn columns(&self) -> usize {
        self.chosen
            .as_ref()
            .map_or(self.n + self.n_params, |c| c.kinds.len())
    }

    /// The flow's dense partials at `(t, x)` in `mode`, formed in a buffer
    /// allocated on first use.
    fn dense_partials(
        &mut self,
        run: RunContext<'_>,
        mode: usize,
        t: f64,
        x: &[f64],
    ) -> &FlowPartials {
        form_partials(&mut self.partials, (self.n, self.n_params), run, mode, t, x)
    }

    /// `dS = f_x S + f_p` from the flow's dense partials, for a flow
    /// without a sensitivity rate of its own. Kept out of line: the rate of
    /// a flow that has one runs in every stage and should stay small.
    #[inline(never)]
    fn dense_rate(
        &mut self,
        run: RunContext<'_>,
        mode: usize,
        t: f64,
        x: &[f64],
        extra: &[f64],
        rate: &mut [f64],
    ) {
        let (n, m, np) = (self.n, self.columns(), self.n_params);
        let partials = self.dense_partials(run, mode, t, x);
        let s = DMatrixView::from_slice(extra, n, m);
        let mut ds = DMatrixViewMut::from_slice(rate, n, m);
        ds.gemm(1.0, &partials.x, &s, 0.0);
        ds.columns_mut(n, np)
            .zip_apply(&partials.p, |d, fp| *d += fp);
    }

    /// `dS = f_x S + f_p dp`, column by column, for chosen columns and
    /// seeds: a column moving no parameter or one is the flow's
    /// Jacobian-vector product, any other (or where the flow has no
    /// product) from its dense partials, formed once for the stage.
    #[inline(never)]
    fn chosen_rate(
        &mut self,
        run: RunContext<'_>,
        mode: usize,
        t: f64,
        x: &[f64],
        extra: &[f64],
        rate: &mut [f64],
    ) {
        let (n, np) = (self.n, self.n_params);
        let chosen = self.chosen.as_ref().expect("chosen columns");
        let flow = &run.system.modes()[mode].flow;
        let mut formed = false;
        for c in 0..chosen.kinds.len() {
            let param = param_move(Some(chosen), n, np, c);
            let s = &extra[c * n..(c + 1) * n];
            let out = &mut rate[c * n..(c + 1) * n];
            let tangent = Tangent {
                t: 0.0,
                x: s,
                param,
            };
            if flow.jacobian_vector_product(t, x, run.params, tangent, out) {
                continue;
            }
            if !formed {
                form_partials(&mut self.partials, (n, np), run, mode, t, x);
                formed = true;
            }
            let partials = self.partials.as_ref().expect("formed above");
            let s = nalgebra::DVectorView::from_slice(s, n);
            let mut ds = nalgebra::DVectorViewMut::from_slice(out, n);
            ds.gemv(1.0, &partials.x, &s, 0.0);
            match param {
                ParamDirection::Zero => {}
                ParamDirection::Unit(j) => ds += partials.p.column(j),
                ParamDirection::Along(dp) => {
                    let dp = nalgebra::DVectorView::from_slice(dp, np);
                    ds.gemv(1.0, &partials.p, &dp, 1.0);
                }
            }
        }
    }

    /// Carries the columns over the stretch's linear pairs
    /// ([`ExactSpan::pairs`](ia_events::exact::ExactSpan::pairs)): a pair's
    /// rows obey `S' = A S + f_p[:, j](y)`, with `f_p[:, j](y) = E y + beta`
    /// linear in the pair's entries `y` (its rows read no other entry), so
    /// `beta = f_p(0)` and `E`'s columns `f_p(e_k) - f_p(0)` from the
    /// sources at three states (zero, and one on every pair's first or
    /// second entry); each pair then carries its tangent
    /// ([`PairStretch::carry_tangent`](ia_events::exact::PairStretch::carry_tangent)).
    fn advance_pairs(
        &mut self,
        run: RunContext<'_>,
        mode: usize,
        t0: f64,
        x0: &[f64],
        span: &ia_events::exact::ExactSpan<'_>,
        extra: &mut [f64],
    ) {
        if span.pairs.is_empty() {
            return;
        }
        let (n, m) = (self.n, self.columns());
        let all_columns = self.chosen.is_none();
        let width = if all_columns { n * m } else { n };
        let mut scratch = std::mem::take(&mut self.pair_scratch);
        scratch.clear();
        scratch.resize(3 * n + 4 * width, 0.0);
        let (states, rest) = scratch.split_at_mut(3 * n);
        let (zero, sources) = rest.split_at_mut(width);
        for pair in span.pairs {
            states[n + pair.entries[0]] = 1.0;
            states[2 * n + pair.entries[1]] = 1.0;
        }
        let flow = &run.system.modes()[mode].flow;
        let batched = all_columns
            && (0..3).all(|k| {
                let state = &states[k * n..(k + 1) * n];
                let out = &mut sources[k * width..(k + 1) * width];
                flow.sensitivity_rate(t0, state, run.params, zero, out)
            });
        for c in 0..m {
            let param = param_move(self.chosen.as_ref(), n, self.n_params, c);
            let base = if batched { c * n } else { 0 };
            let mut moved = param != ParamDirection::Zero;
            if moved && !batched {
                for k in 0..3 {
                    let state = &states[k * n..(k + 1) * n];
                    let out = &mut sources[k * width..k * width + n];
                    moved = param_source(
                        &mut self.partials,
                        (n, self.n_params),
                        (run, mode, t0, state),
                        param,
                        &zero[..n],
                        out,
                    );
                }
            }
            let column = &mut extra[c * n..(c + 1) * n];
            for pair in span.pairs {
                let [p, q] = pair.entries;
                let y0 = [x0[p], x0[q]];
                let mut v = [column[p], column[q]];
                let (mut e, mut beta) = ([[0.0; 2]; 2], [0.0; 2]);
                if moved {
                    let at = |k: usize, i: usize| sources[k * width + base + i];
                    for (row, &i) in pair.entries.iter().enumerate() {
                        beta[row] = at(0, i);
                        e[row] = [at(1, i) - beta[row], at(2, i) - beta[row]];
                    }
                }
                pair.carry_tangent(span.s, y0, e, beta, &mut v);
                (column[p], column[q]) = (v[0], v[1]);
            }
        }
        self.pair_scratch = scratch;
    }

    /// `S+[:, c] = r_x S-[:, c] + r_p[:, j] - w dt*_c` column by column: the
    /// saltation `Xi = r_x + w g_x / gdot` applied as the reset's
    /// Jacobian-vector product plus a rank-one term, never formed.
    /// Returns `dt*/dtheta` of the columns.
    fn map_columns(
        &mut self,
        run: RunContext<'_>,
        jump: &EventJump<'_>,
        before: &[f64],
        after: &mut [f64],
    ) {
        let (n, np, m) = (self.n, self.n_params, self.columns());
        let chosen = self.chosen.as_ref();
        let param = |c| param_move(chosen, n, np, c);
        let at: EventAt<'_> = jump.into();
        let geometry = match jump.geometry {
            Some(geometry) => geometry,
            None => self.saltation.geometry(run.system, run.params, at),
        };
        self.time_shift
            .copy_from_slice(geometry.time_shift.as_slice());
        let gradient = &mut self.time_gradient;
        gradient.clear();
        match jump.cascade_of {
            None => {
                gradient.resize(m, 0.0);
                for (c, dt) in gradient.iter_mut().enumerate() {
                    *dt = event_time_derivative(
                        geometry.guard.x.as_slice(),
                        param(c).apply(|j| geometry.guard.p[j]),
                        geometry.guard_rate,
                        &before[c * n..(c + 1) * n],
                    );
                }
            }
            // The time of a cascade is that of the located event starting it.
            Some(root) => gradient.extend_from_slice(match self.recording {
                EventRecording::All => &self.time_gradient_rows[root * m..(root + 1) * m],
                _ => &self.cascade_time_gradient,
            }),
        }
        for (c, dt) in gradient.iter().enumerate() {
            let tangent = Tangent {
                t: 0.0,
                x: &before[c * n..(c + 1) * n],
                param: param(c),
            };
            let out = &mut after[c * n..(c + 1) * n];
            self.saltation
                .reset_jacobian_vector_product(run.system, run.params, at, tangent, out);
            if self.apply_saltation {
                for (o, w) in out.iter_mut().zip(&self.time_shift) {
                    *o -= w * dt;
                }
            }
        }
    }
}

/// How column `c` of `S` moves the parameters: with every column (no
/// `chosen`), the initial-state entries, then the parameters.
fn param_move(chosen: Option<&Seeds>, n: usize, n_params: usize, c: usize) -> ParamDirection<'_> {
    match chosen {
        None if c < n => ParamDirection::Zero,
        None => ParamDirection::Unit(c - n),
        Some(seeds) => match seeds.kinds[c] {
            MoveKind::Zero => ParamDirection::Zero,
            MoveKind::Unit(j) => ParamDirection::Unit(j),
            MoveKind::Along => {
                ParamDirection::Along(&seeds.params[c * n_params..(c + 1) * n_params])
            }
        },
    }
}

/// The flow's dense partials at `(t, x)` in `mode`, formed in `slot`
/// (allocated on first use) for `(n, n_params)`.
fn form_partials<'a>(
    slot: &'a mut Option<FlowPartials>,
    (n, np): (usize, usize),
    run: RunContext<'_>,
    mode: usize,
    t: f64,
    x: &[f64],
) -> &'a FlowPartials {
    let partials = slot.get_or_insert_with(|| FlowPartials::zeros(n, np));
    partials.clear();
    run.system.modes()[mode]
        .flow
        .partials(t, x, run.params, partials);
    partials
}

/// The source `f_p dp` of a column moving the parameters by `param`, at
/// `(t, x)` of `mode`, into `out` (`n` entries): the flow's
/// Jacobian-vector product along `(0, 0, dp)` (the dense partials times `dp`
/// where it has none). `false` (nothing written) for a column moving none.
fn param_source(
    partials: &mut Option<FlowPartials>,
    sizes: (usize, usize),
    (run, mode, t, x): (RunContext<'_>, usize, f64, &[f64]),
    param: ParamDirection<'_>,
    zero: &[f64],
    out: &mut [f64],
) -> bool {
    if param == ParamDirection::Zero {
        return false;
    }
    let tangent = Tangent {
        t: 0.0,
        x: zero,
        param,
    };
    let flow = &run.system.modes()[mode].flow;
    if !flow.jacobian_vector_product(t, x, run.params, tangent, out) {
        let formed = form_partials(partials, sizes, run, mode, t, x);
        for (i, o) in out.iter_mut().enumerate() {
            *o = param.apply(|j| formed.p[(i, j)]);
        }
    }
    true
}

impl ExtraState for ForwardSensitivity {
    fn dim(&self) -> usize {
        self.n * self.columns()
    }

    fn error_controlled(&self) -> bool {
        self.error_controlled
    }

    fn initial(&mut self, _run: RunContext<'_>, extra: &mut [f64]) {
        extra.fill(0.0);
        let n = self.n;
        match &self.chosen {
            None => (0..n).for_each(|i| extra[i * n + i] = 1.0),
            Some(seeds) => extra.copy_from_slice(&seeds.x0),
        }
    }

    #[inline]
    fn rate(
        &mut self,
        run: RunContext<'_>,
        mode: usize,
        t: f64,
        x: &[f64],
        extra: &[f64],
        rate: &mut [f64],
    ) {
        if self.chosen.is_some() {
            return self.chosen_rate(run, mode, t, x, extra, rate);
        }
        let flow = &run.system.modes()[mode].flow;
        if !flow.sensitivity_rate(t, x, run.params, extra, rate) {
            self.dense_rate(run, mode, t, x, extra, rate);
        }
    }

    fn wants_event_geometry(&self) -> bool {
        true
    }

    /// Over a stretch of a decoupled linear flow, `x' = a x + b`, a column
    /// obeys `S' = a S + f_p[:, j](x)` (no source for an initial-state
    /// column), and `f_p[:, j](x) = f_p[:, j](x0) + (da/dp_j) (x - x0)` with
    /// `x - x0 = rate0 phi(u)`: so `S(s) = decay S + f_p[:, j](x0) phi +
    /// (f_p[:, j](x0 + rate0) - f_p[:, j](x0)) chi` ([`ExactSpan`]), with
    /// `f_p` of every column from the flow's variational rate at `S = 0`
    /// (one call at each end) when all columns are carried, and otherwise
    /// `f_p[:, j]` from its Jacobian-vector product (its dense partials
    /// where it has neither).
    ///
    /// [`ExactSpan`]: ia_events::exact::ExactSpan
    fn advance_exact(
        &mut self,
        run: RunContext<'_>,
        mode: usize,
        t0: f64,
        x0: &[f64],
        span: &ia_events::exact::ExactSpan<'_>,
        extra: &mut [f64],
    ) -> bool {
        let (n, m) = (self.n, self.columns());
        // With every column, each end's sources come from one call of the
        // flow's variational rate at S = 0 ([0 | f_p], n x m); otherwise
        // column by column, n at a time.
        let all_columns = self.chosen.is_none();
        let width = if all_columns { n * m } else { n };
        let mut scratch = std::mem::take(&mut self.exact_scratch);
        scratch.clear();
        scratch.resize(n + 3 * width, 0.0);
        let (shifted, rest) = scratch.split_at_mut(n);
        let (zero, rest) = rest.split_at_mut(width);
        let (at_start, at_shifted) = rest.split_at_mut(width);
        for ((x, x0), r) in shifted.iter_mut().zip(x0).zip(span.rate) {
            *x = x0 + r;
        }
        let flow = &run.system.modes()[mode].flow;
        let batched = all_columns
            && flow.sensitivity_rate(t0, x0, run.params, zero, at_start)
            && flow.sensitivity_rate(t0, shifted, run.params, zero, at_shifted);
        for c in 0..m {
            let param = param_move(self.chosen.as_ref(), n, self.n_params, c);
            for (v, d) in extra[c * n..(c + 1) * n].iter_mut().zip(span.decay) {
                *v *= d;
            }
            if param == ParamDirection::Zero {
                continue;
            }
            let sources = if batched {
                c * n..(c + 1) * n
            } else {
                for (x, out) in [(x0, &mut at_start[..n]), (&*shifted, &mut at_shifted[..n])] {
                    param_source(
                        &mut self.partials,
                        (n, self.n_params),
                        (run, mode, t0, x),
                        param,
                        &zero[..n],
                        out,
                    );
                }
                0..n
            };
            let (from_start, from_shifted) = (&at_start[sources.clone()], &at_shifted[sources]);
            let column = &mut extra[c * n..(c + 1) * n];
            for i in 0..n {
                column[i] +=
                    from_start[i] * span.phi[i] + (from_shifted[i] - from_start[i]) * span.chi[i];
            }
        }
        self.exact_scratch = scratch;
        self.advance_pairs(run, mode, t0, x0, span, extra);
        true
    }

    fn carries_pairs(&self) -> bool {
        true
    }

    fn jump(
        &mut self,
        run: RunContext<'_>,
        jump: &EventJump<'_>,
        before: &[f64],
        after: &mut [f64],
    ) -> Result<(), HybridError> {
        self.map_columns(run, jump, before, after);
        self.store_time_gradient(jump);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{ball, dh_final, problem, t1, G};

    #[test]
    fn carries_the_closed_form_sensitivities_through_an_impact() {
        let system = ball();
        let run = problem(&system);
        let mut aug = ForwardSensitivity::new(&system, true, true);
        let mut at = SensitivityAt::of(&aug);
        let trajectory = ia_events::run(&run, &mut aug, &mut at).unwrap();
        assert_eq!(trajectory.events.len(), 1);
        // dt1/d(h0, v0, g, e) = (1 / (g t1), 1 / g, -t1 / (2 g), 0), from
        // t1 = (v0 + sqrt(v0^2 + 2 g h0)) / g at v0 = 0.
        let t1 = t1();
        let dt1 = [1.0 / (G * t1), 1.0 / G, -t1 / (2.0 * G), 0.0];
        let gradients = aug.event_time_gradients(1, &mut SpareVecs::default());
        for (got, want) in gradients.row(0).iter().zip(dt1) {
            assert!((got - want).abs() < 1e-10, "{got} vs {want}");
        }
        let s = at.final_jacobian.take().unwrap();
        assert_eq!(s.shape(), (2, 4));
        for (j, want) in dh_final().iter().enumerate() {
            assert!((s[(0, j)] - want).abs() < 1e-8, "dh/d[{j}] {}", s[(0, j)]);
        }
    }
}
