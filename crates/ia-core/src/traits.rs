//! The three pieces a user writes: [`Flow`], [`Guard`] and [`Reset`].

use nalgebra::{DMatrix, DVector};
use serde::{Deserialize, Serialize};

/// The direction in which a guard must cross zero for its transition to fire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// From negative to non-negative.
    Rising,
    /// From positive to non-positive.
    Falling,
    /// Either way.
    Either,
}

impl Direction {
    /// Whether a guard whose side before the step had sign `side_before`
    /// (`+1.0` or `-1.0`) and whose value is `after` at the end of the step
    /// has crossed zero in this direction.
    ///
    /// ```
    /// use ia_core::Direction;
    /// assert!(Direction::Falling.crossed(1.0, -0.5));
    /// assert!(!Direction::Falling.crossed(-1.0, 0.5));
    /// assert!(Direction::Either.crossed(-1.0, 0.0));
    /// ```
    pub fn crossed(self, side_before: f64, after: f64) -> bool {
        match self {
            Direction::Falling => side_before > 0.0 && after <= 0.0,
            Direction::Rising => side_before < 0.0 && after >= 0.0,
            Direction::Either => {
                (side_before > 0.0 && after <= 0.0) || (side_before < 0.0 && after >= 0.0)
            }
        }
    }

    /// Whether a guard value `value` at the start of a run already lies on the
    /// side this direction crosses into (or on zero), so that the run would
    /// start inside the event.
    pub fn violated_at_start(self, value: f64) -> bool {
        match self {
            Direction::Falling => value <= 0.0,
            Direction::Rising => value >= 0.0,
            Direction::Either => value == 0.0,
        }
    }

    /// Whether a guard beyond zero in this direction (where
    /// [`Direction::violated_at_start`] holds) whose rate is `rate` heads
    /// back to the side it crosses from. Such a guard has had no crossing:
    /// after a mode switch it waits to be back on its side, then fires at
    /// its next crossing.
    ///
    /// ```
    /// use ia_core::Direction;
    /// // A falling guard below zero and rising: heading back.
    /// assert!(Direction::Falling.heads_back(0.5));
    /// assert!(!Direction::Falling.heads_back(0.0));
    /// assert!(Direction::Rising.heads_back(-0.5));
    /// ```
    pub fn heads_back(self, rate: f64) -> bool {
        match self {
            Direction::Falling => rate > 0.0,
            Direction::Rising => rate < 0.0,
            Direction::Either => false,
        }
    }
}

/// A tangent direction `(dt, dx, dp)` in the arguments `(t, x, p)` of a flow
/// or a reset, for Jacobian-vector products. `dp` is a [`ParamDirection`]:
/// zero, one unit parameter direction `e_j` (the columns of a sensitivity
/// matrix: an initial-state column carries `dx` only, a parameter column
/// `dx` and `e_j`), or any direction (a chosen tangent, a derivative probe).
///
/// ```
/// use ia_core::{ParamDirection, Tangent};
/// let dx = [1.0, 0.0];
/// let column = Tangent { t: 0.0, x: &dx, param: ParamDirection::Unit(1) };
/// assert_eq!(column.param.entry(1), 1.0);
/// assert_eq!(column.param.entry(0), 0.0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tangent<'a> {
    /// `dt`.
    pub t: f64,
    /// `dx`, one entry per state.
    pub x: &'a [f64],
    /// `dp`.
    pub param: ParamDirection<'a>,
}

/// The parameter part `dp` of a [`Tangent`].
///
/// ```
/// use ia_core::ParamDirection;
/// let dp = [0.5, -2.0];
/// assert_eq!(ParamDirection::Along(&dp).entry(1), -2.0);
/// assert_eq!(ParamDirection::Unit(0).entry(0), 1.0);
/// assert_eq!(ParamDirection::Zero.entry(0), 0.0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ParamDirection<'a> {
    /// `dp = 0`.
    Zero,
    /// `dp = e_j`.
    Unit(usize),
    /// `dp` given entry by entry (`n_p` entries).
    Along(&'a [f64]),
}

impl ParamDirection<'_> {
    /// `dp_j`: what a product linear in `dp` multiplies parameter `j`'s
    /// column by. A product written as `sum_j (v_p)_j dp_j` with this entry
    /// is exact for every kind (a unit direction gives `1.0` and `0.0`,
    /// products by which round nothing).
    #[inline]
    pub fn entry(&self, j: usize) -> f64 {
        match *self {
            Self::Zero => 0.0,
            Self::Unit(k) => {
                if k == j {
                    1.0
                } else {
                    0.0
                }
            }
            Self::Along(dp) => dp[j],
        }
    }

    /// `v_p dp` for the row `v_p` read entry by entry by `row` (`n_p`
    /// entries): the entry `row(j)` itself for `e_j`, the sum in order of
    /// the entries for a general direction.
    pub fn apply(&self, row: impl Fn(usize) -> f64) -> f64 {
        match *self {
            Self::Zero => 0.0,
            Self::Unit(j) => row(j),
            Self::Along(dp) => dp.iter().enumerate().map(|(j, d)| row(j) * d).sum(),
        }
    }
}

/// Partial derivatives of a vector-valued piece `v(t, x, p)` of `n` entries
/// (a flow `f` or a reset `r`): `x` is `v_x` (n x n), `p` is `v_p`
/// (n x n_p), `t` is `v_t` (n). [`FlowPartials`] and [`ResetPartials`] name
/// it for each piece.
///
/// ```
/// let mut d = ia_core::Partials::zeros(2, 1);
/// d.x[(0, 1)] = 1.0; // dv_0 / dx_1
/// d.clear();
/// assert_eq!(d, ia_core::FlowPartials::zeros(2, 1));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Partials {
    /// `dv/dx`, n x n.
    pub x: DMatrix<f64>,
    /// `dv/dp`, n x n_p.
    pub p: DMatrix<f64>,
    /// `dv/dt`, n.
    pub t: DVector<f64>,
}

impl Partials {
    /// Zeroed partials for a state of dimension `n` and `n_params` parameters.
    pub fn zeros(n: usize, n_params: usize) -> Self {
        Self {
            x: DMatrix::zeros(n, n),
            p: DMatrix::zeros(n, n_params),
            t: DVector::zeros(n),
        }
    }

    /// Sets every entry to zero (done by the library before each call of
    /// [`Flow::partials`] and [`Reset::partials`]).
    pub fn clear(&mut self) {
        self.x.as_mut_slice().fill(0.0);
        self.p.as_mut_slice().fill(0.0);
        self.t.as_mut_slice().fill(0.0);
    }

    /// `flow`'s partials at `(t, x, p)` in `kept`: made on first use and
    /// again for other dimensions (`x.len()` states, `p.len()` parameters:
    /// kept buffers outlive a run), zeroed, then filled by
    /// [`Flow::partials`].
    ///
    /// ```
    /// use ia_core::{Flow, FlowPartials};
    /// /// `x' = -k x`, parameter `k`.
    /// struct Decay;
    /// impl Flow for Decay {
    ///     fn rate(&self, _t: f64, x: &[f64], p: &[f64], dxdt: &mut [f64]) {
    ///         dxdt[0] = -p[0] * x[0];
    ///     }
    ///     fn partials(&self, _t: f64, x: &[f64], p: &[f64], out: &mut FlowPartials) {
    ///         out.x[(0, 0)] = -p[0];
    ///         out.p[(0, 0)] = -x[0];
    ///     }
    /// }
    /// let mut kept = None;
    /// let d = FlowPartials::of_flow_in(&mut kept, &Decay, 0.0, &[2.0], &[0.5]);
    /// assert_eq!((d.x[(0, 0)], d.p[(0, 0)]), (-0.5, -2.0));
    /// ```
    pub fn of_flow_in<'k, F: Flow + ?Sized>(
        kept: &'k mut Option<Self>,
        flow: &F,
        t: f64,
        x: &[f64],
        p: &[f64],
    ) -> &'k mut Self {
        let (n, np) = (x.len(), p.len());
        if !kept
            .as_ref()
            .is_some_and(|k| k.x.nrows() == n && k.p.ncols() == np)
        {
            *kept = Some(Self::zeros(n, np));
        }
        let partials = kept.get_or_insert_with(|| Self::zeros(n, np));
        partials.clear();
        flow.partials(t, x, p, partials);
        partials
    }
}

/// Partial derivatives of a flow `f(t, x, p)`: `x` is `f_x` (n x n), `p` is
/// `f_p` (n x n_p), `t` is `f_t` (n).
pub type FlowPartials = Partials;

/// Partial derivatives of a guard `g(t, x, p)`.
#[derive(Clone, Debug, PartialEq)]
pub struct GuardPartials {
    /// `dg/dx`, n.
    pub x: DVector<f64>,
    /// `dg/dp`, n_p.
    pub p: DVector<f64>,
    /// `dg/dt`.
    pub t: f64,
}

impl GuardPartials {
    /// Zeroed partials for a state of dimension `n` and `n_params` parameters.
    pub fn zeros(n: usize, n_params: usize) -> Self {
        Self {
            x: DVector::zeros(n),
            p: DVector::zeros(n_params),
            t: 0.0,
        }
    }

    /// Sets every entry to zero.
    pub fn clear(&mut self) {
        self.x.as_mut_slice().fill(0.0);
        self.p.as_mut_slice().fill(0.0);
        self.t = 0.0;
    }

    /// Sets to zero the entries of `support` (or every entry for `None`):
    /// the entries a guard with that support wrote.
    pub fn clear_support(&mut self, support: Option<Support<'_>>) {
        match support {
            None => self.clear(),
            Some(s) => {
                for &i in s.states {
                    self.x[i] = 0.0;
                }
                for &j in s.params {
                    self.p[j] = 0.0;
                }
                self.t = 0.0;
            }
        }
    }
}

/// Partial derivatives of a reset `r(t, x, p)`: `x` is `r_x` (n x n), `p`
/// is `r_p` (n x n_p), `t` is `r_t` (n).
pub type ResetPartials = Partials;

/// The vector field of one mode: `x' = f(t, x, p)`.
///
/// `partials` receives `out` zeroed, so an implementation writes only its
/// nonzero entries. For exact partials without deriving them by hand,
/// implement [`FlowFn`](crate::FlowFn) and wrap the type in
/// [`Autodiff`](crate::Autodiff).
pub trait Flow: Send + Sync {
    /// Writes `f(t, x, p)` into `dxdt`.
    fn rate(&self, t: f64, x: &[f64], p: &[f64], dxdt: &mut [f64]);
    /// Writes `f_x`, `f_p` and `f_t` at `(t, x, p)` into `out` (already zeroed).
    fn partials(&self, t: f64, x: &[f64], p: &[f64], out: &mut FlowPartials);

    /// Optional fast path of forward sensitivities: writes the variational
    /// rate `f_x S + [0 | f_p]` of the n x (n + n_p) sensitivity `s`
    /// (column-major: initial-state columns, then parameter columns) into
    /// `ds` and returns `true`. The default returns `false`, and the library
    /// forms the product from [`Flow::partials`]. Worth writing where `f_x`
    /// is sparse or `f_p` mostly zero.
    fn sensitivity_rate(
        &self,
        _t: f64,
        _x: &[f64],
        _p: &[f64],
        _s: &[f64],
        _ds: &mut [f64],
    ) -> bool {
        false
    }

    /// Optional fast path of products with the flow's Jacobian: writes
    /// `f_x dx + f_t dt + f_p dp` along `tangent = (dt, dx, dp)` into `out`
    /// and returns `true`. The default returns `false`, and the library
    /// forms the product from [`Flow::partials`].
    ///
    /// Forward sensitivities take one product per column (`dp` zero for an
    /// initial-state column, `e_j` for parameter `j`'s, any direction for a
    /// chosen column); the adjoint's derivative probes (random directions
    /// carried through its taped run) one per probe and stage, along any
    /// `dp`. One body serves every kind when written with
    /// [`ParamDirection::entry`] (`dp_j`): `f_p dp = sum_j f_p[:, j] dp_j`.
    /// A flow whose unit directions are much cheaper than a general one
    /// (many parameters, each moving few rates) may match on
    /// [`ParamDirection::Unit`] and return `false` for
    /// [`ParamDirection::Along`]. [`Autodiff`](crate::Autodiff) provides it
    /// with one dual-number evaluation.
    ///
    /// ```
    /// use ia_core::{Flow, FlowPartials, ParamDirection, Tangent};
    /// /// `x' = -k x`, parameter `k`.
    /// struct Decay;
    /// impl Flow for Decay {
    ///     fn rate(&self, _t: f64, x: &[f64], p: &[f64], dxdt: &mut [f64]) {
    ///         dxdt[0] = -p[0] * x[0];
    ///     }
    ///     fn partials(&self, _t: f64, x: &[f64], p: &[f64], out: &mut FlowPartials) {
    ///         out.x[(0, 0)] = -p[0];
    ///         out.p[(0, 0)] = -x[0];
    ///     }
    ///     fn jacobian_vector_product(
    ///         &self, _t: f64, x: &[f64], p: &[f64], tangent: Tangent<'_>, out: &mut [f64],
    ///     ) -> bool {
    ///         // f_x dx + f_p dp (autonomous: f_t = 0)
    ///         out[0] = -p[0] * tangent.x[0] - x[0] * tangent.param.entry(0);
    ///         true
    ///     }
    /// }
    /// let mut out = [0.0];
    /// let dp = [3.0];
    /// let along = Tangent { t: 0.0, x: &[1.0], param: ParamDirection::Along(&dp) };
    /// assert!(Decay.jacobian_vector_product(0.0, &[2.0], &[0.5], along, &mut out));
    /// assert_eq!(out, [-6.5]);
    /// let unit = Tangent { t: 0.0, x: &[0.0], param: ParamDirection::Unit(0) };
    /// assert!(Decay.jacobian_vector_product(0.0, &[2.0], &[0.5], unit, &mut out));
    /// assert_eq!(out, [-2.0]);
    /// ```
    fn jacobian_vector_product(
        &self,
        _t: f64,
        _x: &[f64],
        _p: &[f64],
        _tangent: Tangent<'_>,
        _out: &mut [f64],
    ) -> bool {
        false
    }

    /// Optional fast path of the adjoint: writes `f_x^T v` into `x_bar`,
    /// adds `f_p^T v` to `p_bar` and returns `true`. The default returns
    /// `false`, and the library forms the products from [`Flow::partials`].
    fn vector_jacobian_product(
        &self,
        _t: f64,
        _x: &[f64],
        _p: &[f64],
        _v: &[f64],
        _x_bar: &mut [f64],
        _p_bar: &mut [f64],
    ) -> bool {
        false
    }

    /// Optional structure: when every component obeys
    /// `x_i' = a_i x_i + b_i`, with `a` and `b` depending on the parameters
    /// only (not on `t` or `x`), writes them and returns `true`. Such a flow
    /// has the closed form `x_i(t + s) = x_i + (a_i x_i + b_i) (e^{a_i s} - 1) / a_i`
    /// (`x_i + b_i s` where `a_i = 0`), which the exact event-driven solver
    /// (`ia_events::exact`) steps with. The
    /// default returns `false`. [`Flow::rate`] must agree with it.
    ///
    /// ```
    /// use ia_core::{Flow, FlowPartials};
    /// /// `V' = (I - V) / tau`: `a = -1/tau`, `b = I/tau`.
    /// struct Leak;
    /// impl Flow for Leak {
    ///     fn rate(&self, _t: f64, x: &[f64], p: &[f64], dxdt: &mut [f64]) {
    ///         dxdt[0] = (p[0] - x[0]) / p[1];
    ///     }
    ///     fn partials(&self, _t: f64, x: &[f64], p: &[f64], out: &mut FlowPartials) {
    ///         out.x[(0, 0)] = -1.0 / p[1];
    ///         out.p[(0, 0)] = 1.0 / p[1];
    ///         out.p[(0, 1)] = -(p[0] - x[0]) / (p[1] * p[1]);
    ///     }
    ///     fn decoupled_linear(&self, p: &[f64], a: &mut [f64], b: &mut [f64]) -> bool {
    ///         (a[0], b[0]) = (-1.0 / p[1], p[0] / p[1]);
    ///         true
    ///     }
    /// }
    /// let (mut a, mut b) = ([0.0], [0.0]);
    /// assert!(Leak.decoupled_linear(&[1.2, 0.01], &mut a, &mut b));
    /// assert_eq!((a[0], b[0]), (-100.0, 120.0));
    /// ```
    fn decoupled_linear(&self, _p: &[f64], _a: &mut [f64], _b: &mut [f64]) -> bool {
        false
    }

    /// Optional structure, wider than [`Flow::decoupled_linear`]: when the
    /// flow is made of small linear blocks, decoupled entries
    /// `x_i' = a_i x_i + b_i` and 2x2 pairs `[x_i, x_j]' = A [x_i, x_j] + b`
    /// ([`LinearPair`](crate::LinearPair)), with `a`, `b`, `A` depending on
    /// the parameters only, writes them into `blocks` and returns `true`.
    /// `blocks` arrives with `n` entries in `a` and `b` and no pair. The
    /// exact event-driven solver (`ia_events::exact`) steps such a flow in
    /// closed form (a pair's stretch is a 2x2 matrix exponential; it needs
    /// real rates, the eigenvalues of `A`). [`Flow::rate`] must agree with
    /// it ([`LinearBlocks::rate`](crate::LinearBlocks::rate)).
    ///
    /// The default declares the decoupled entries of
    /// [`Flow::decoupled_linear`] and no pair, so a flow that declares
    /// that need not declare this too.
    ///
    /// ```
    /// use ia_core::{Flow, FlowPartials, LinearBlocks, LinearPair};
    /// /// A current-based neuron: `tau_m V' = -V + I`, `tau_s I' = -I`,
    /// /// state `[V, I]`, parameters `[tau_m, tau_s]`.
    /// struct Neuron;
    /// impl Flow for Neuron {
    ///     fn rate(&self, _t: f64, x: &[f64], p: &[f64], dxdt: &mut [f64]) {
    ///         dxdt[0] = (-x[0] + x[1]) / p[0];
    ///         dxdt[1] = -x[1] / p[1];
    ///     }
    ///     fn partials(&self, _t: f64, x: &[f64], p: &[f64], out: &mut FlowPartials) {
    ///         out.x[(0, 0)] = -1.0 / p[0];
    ///         out.x[(0, 1)] = 1.0 / p[0];
    ///         out.x[(1, 1)] = -1.0 / p[1];
    ///         out.p[(0, 0)] = (x[0] - x[1]) / (p[0] * p[0]);
    ///         out.p[(1, 1)] = x[1] / (p[1] * p[1]);
    ///     }
    ///     fn linear_blocks(&self, p: &[f64], blocks: &mut LinearBlocks) -> bool {
    ///         let a = [[-1.0 / p[0], 1.0 / p[0]], [0.0, -1.0 / p[1]]];
    ///         blocks.pairs.push(LinearPair::new([0, 1], a, [0.0, 0.0]));
    ///         true
    ///     }
    /// }
    /// let mut blocks = LinearBlocks::new(2);
    /// assert!(Neuron.linear_blocks(&[20.0, 5.0], &mut blocks));
    /// assert_eq!(blocks.pairs[0].a[1][1], -0.2);
    /// // Its rate agrees with the blocks (to rounding).
    /// let (x, mut f, mut g) = ([0.5, 2.0], [0.0; 2], [0.0; 2]);
    /// Neuron.rate(0.0, &x, &[20.0, 5.0], &mut f);
    /// blocks.rate(&x, &mut g);
    /// assert!(f.iter().zip(&g).all(|(f, g)| (f - g).abs() < 1e-16));
    /// ```
    fn linear_blocks(&self, p: &[f64], blocks: &mut crate::LinearBlocks) -> bool {
        blocks.pairs.clear();
        self.decoupled_linear(p, &mut blocks.a, &mut blocks.b)
    }

    /// Optional structure: the entries of the state Jacobian `f_x` that may
    /// be non-zero ([`Sparsity`](crate::Sparsity), the state's dimension
    /// square), the same at every `(t, x, p)`. The implicit methods
    /// (`ia_events::implicit_rk`) then factorise `I - h gamma f_x` as a
    /// sparse matrix when the state is large and the pattern sparse, and
    /// read `f_x` from [`Flow::sparse_state_partials`]. The default, `None`,
    /// declares nothing (dense). [`Flow::partials`] must write no entry of
    /// `f_x` outside it.
    ///
    /// ```
    /// use ia_core::{Flow, FlowPartials, Sparsity};
    /// /// A chain `x_i' = x_{i-1} - x_i` (`x_0' = -x_0`).
    /// struct Chain(Sparsity);
    /// impl Flow for Chain {
    ///     fn rate(&self, _t: f64, x: &[f64], _p: &[f64], dxdt: &mut [f64]) {
    ///         for i in 0..x.len() {
    ///             dxdt[i] = if i > 0 { x[i - 1] } else { 0.0 } - x[i];
    ///         }
    ///     }
    ///     fn partials(&self, _t: f64, x: &[f64], _p: &[f64], out: &mut FlowPartials) {
    ///         for i in 0..x.len() {
    ///             out.x[(i, i)] = -1.0;
    ///             if i > 0 {
    ///                 out.x[(i, i - 1)] = 1.0;
    ///             }
    ///         }
    ///     }
    ///     fn state_sparsity(&self) -> Option<&Sparsity> {
    ///         Some(&self.0)
    ///     }
    ///     fn sparse_state_partials(&self, _t: f64, _x: &[f64], _p: &[f64], values: &mut [f64]) -> bool {
    ///         // Column by column: (j, j) = -1, then (j + 1, j) = 1.
    ///         for (col, v) in self.0.col_ptr().windows(2).enumerate() {
    ///             values[v[0]] = -1.0;
    ///             if v[1] - v[0] == 2 {
    ///                 values[v[0] + 1] = 1.0;
    ///             }
    ///         }
    ///         true
    ///     }
    /// }
    /// let n = 5;
    /// let entries = (0..n).flat_map(|j| [(j, j), ((j + 1).min(n - 1), j)]);
    /// let chain = Chain(Sparsity::from_entries(n, entries).unwrap());
    /// assert_eq!(chain.state_sparsity().unwrap().nnz(), 9);
    /// ```
    fn state_sparsity(&self) -> Option<&crate::Sparsity> {
        None
    }

    /// Optional fast path of the sparse state Jacobian: writes the entries
    /// of `f_x` at `(t, x, p)` in the order of
    /// [`Flow::state_sparsity`]'s pattern into `values` (one per entry) and
    /// returns `true`, in time proportional to the entries. The default
    /// returns `false`, and the library gathers them from
    /// [`Flow::partials`] (time proportional to the square of the state's
    /// dimension).
    fn sparse_state_partials(&self, _t: f64, _x: &[f64], _p: &[f64], _values: &mut [f64]) -> bool {
        false
    }

    /// Whether the state Jacobian `f_x(t, x, p)` is the same at every
    /// `(t, x)` for fixed parameters `p`: the flow is affine in the state
    /// with time-free coefficients, `f(t, x, p) = A(p) x + b(t, p)`. The
    /// implicit methods (`ia_events::implicit_rk`) then evaluate `f_x` once
    /// per segment (at its start and after each reset) and factorise
    /// `I - h gamma f_x` once per distinct `h gamma`, for the Newton
    /// iterations and for the exact stage solves of forward sensitivities,
    /// instead of at every stage; for such a flow this reuse is exact (the
    /// matrices are the ones evaluating at each stage would give, to the
    /// bit up to the order of the floating-point operations), and each
    /// stage, linear with that exact matrix, is solved by one Newton
    /// increment (no convergence check).
    ///
    /// This is the implementer's contract, checked only in part: the
    /// stages are solved by one increment once a stage of the segment has
    /// shown it (a second increment within rounding), so a flow that
    /// answers `true` while `f_x` varies has its stages iterated and
    /// checked (with the Jacobian at the segment's start, never refreshed:
    /// Newton may fail), and its sensitivities come from that Jacobian and
    /// are then not the derivatives of the steps taken. The default,
    /// `false`, claims nothing. Equation models answer it from their
    /// expressions.
    fn state_jacobian_is_constant(&self) -> bool {
        false
    }
}

/// A guard of the form `g = x_k - level`: a threshold on one state entry
/// (see [`Guard::threshold`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Threshold {
    /// The state entry `k`.
    pub state: usize,
    /// The level it crosses.
    pub level: f64,
}

/// The event surface of one transition: it fires when `g(t, x, p)` crosses
/// zero in [`Guard::direction`].
pub trait Guard: Send + Sync {
    /// The crossing direction that fires the transition.
    fn direction(&self) -> Direction;
    /// `g(t, x, p)`.
    fn value(&self, t: f64, x: &[f64], p: &[f64]) -> f64;
    /// Writes `g_x`, `g_p` and `g_t` into `out` (already zeroed).
    fn partials(&self, t: f64, x: &[f64], p: &[f64], out: &mut GuardPartials);

    /// Optional: the state entries and parameters the guard reads, when it
    /// reads few of them (a threshold on one neuron, a gap between two
    /// balls). The integrator then interpolates only those state entries
    /// while it locates the guard's crossing, and clears only those entries
    /// of the partials, so an event of a large system costs what the guard
    /// reads, not the size of the state. The default, `None`, means any.
    /// [`Guard::partials`] must write nowhere else.
    fn support(&self) -> Option<Support<'_>> {
        None
    }

    /// Optional structure: when `g(t, x, p) = x_k - level(p)`, the
    /// threshold at these parameters; the exact event-driven solver
    /// predicts its crossings from it. The default, `None`, means any
    /// other form. [`Guard::value`] must agree with it.
    fn threshold(&self, _p: &[f64]) -> Option<Threshold> {
        None
    }

    /// Optional structure: when `g(t, x, p) = t - level(p)`, a threshold on
    /// time (a guard that fires at a given instant, such as an input spike
    /// at `t_in`), the level at these parameters; the exact event-driven
    /// solver fires it at `t = level` exactly. The default, `None`, means
    /// any other form. [`Guard::value`] must agree with it, and its
    /// [`Guard::partials`] are `g_t = 1`, `g_p = -dlevel/dp`, `g_x = 0`.
    ///
    /// ```
    /// use ia_core::{Direction, Guard, GuardPartials};
    /// struct At;
    /// impl Guard for At {
    ///     fn direction(&self) -> Direction { Direction::Rising }
    ///     fn value(&self, t: f64, _x: &[f64], p: &[f64]) -> f64 { t - p[0] }
    ///     fn partials(&self, _t: f64, _x: &[f64], _p: &[f64], out: &mut GuardPartials) {
    ///         out.t = 1.0;
    ///         out.p[0] = -1.0;
    ///     }
    ///     fn time_threshold(&self, p: &[f64]) -> Option<f64> { Some(p[0]) }
    /// }
    /// assert_eq!(At.time_threshold(&[2.5]), Some(2.5));
    /// assert_eq!(At.threshold(&[2.5]), None);
    /// ```
    fn time_threshold(&self, _p: &[f64]) -> Option<f64> {
        None
    }
}

/// The entries a guard reads: see [`Guard::support`].
///
/// ```
/// use ia_core::Support;
/// let threshold = Support { states: &[3], params: &[7] };
/// assert_eq!(threshold.states, [3]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Support<'a> {
    /// Indices of the state entries read.
    pub states: &'a [usize],
    /// Indices of the parameters read.
    pub params: &'a [usize],
}

/// The jump of one transition: `x+ = r(t, x-, p)`.
///
/// What a reset declares of its structure ([`Reset::writes`],
/// [`Reset::reads`], [`Reset::writes_entrywise`]) is the object's for life,
/// the same at every call: a solver keeps what it found from them for the
/// next runs of the same system ([`HybridSystem::id`](crate::HybridSystem::id)).
pub trait Reset: Send + Sync {
    /// Writes `r(t, x, p)` into `x_after`.
    fn apply(&self, t: f64, x: &[f64], p: &[f64], x_after: &mut [f64]);

    /// Optional: the state entries the reset may change, when it changes
    /// few (a spike resets its neuron and kicks its targets); every other
    /// entry of `x_after` is `x`'s. The exact event-driven solver then
    /// looks only there for what an event moved. The default, `None`,
    /// means any.
    fn writes(&self) -> Option<&[usize]> {
        None
    }

    /// Optional: the state entries the reset reads (a superset will do),
    /// declared with [`Reset::writes`] when both are few. The exact
    /// event-driven solver then keeps each linear block of the state at its
    /// own last update time and brings up to an event's time only the blocks
    /// of the entries read and written, so an event costs its fan-out, not
    /// the state's size. The default, `None`, means any (every entry is kept
    /// up to date at every event).
    ///
    /// ```
    /// use ia_core::{Reset, ResetPartials};
    ///
    /// /// Adds 1 to entry 2, reading and writing nothing else.
    /// struct Kick;
    /// impl Reset for Kick {
    ///     fn apply(&self, _t: f64, x: &[f64], _p: &[f64], x_after: &mut [f64]) {
    ///         x_after.copy_from_slice(x);
    ///         x_after[2] += 1.0;
    ///     }
    ///     fn writes(&self) -> Option<&[usize]> { Some(&[2]) }
    ///     fn reads(&self) -> Option<&[usize]> { Some(&[2]) }
    ///     fn apply_in_place(&self, _t: f64, x: &mut [f64], _p: &[f64]) -> bool {
    ///         x[2] += 1.0;
    ///         true
    ///     }
    ///     fn partials(&self, _t: f64, _x: &[f64], _p: &[f64], out: &mut ResetPartials) {
    ///         out.x.fill_with_identity();
    ///     }
    /// }
    /// let mut x = [0.0, 0.0, 5.0];
    /// assert!(Kick.apply_in_place(0.0, &mut x, &[]));
    /// assert_eq!(x, [0.0, 0.0, 6.0]);
    /// ```
    fn reads(&self) -> Option<&[usize]> {
        None
    }

    /// Optional, for a reset that declares [`Reset::writes`]: whether each
    /// entry it writes takes a new value that depends on the time, the
    /// parameters and that entry's own value alone, never on another entry
    /// (a spike's kick `x_s += w`, a reset `x_r = 0`). The exact solver
    /// may then apply it to some of its entries at a time (its layered
    /// sweep runs a feed-forward network one layer after another, each
    /// entry at its own kicks). The default, `false`, means a written
    /// entry may read any entry of [`Reset::reads`].
    ///
    /// ```
    /// use ia_core::{Reset, ResetPartials};
    ///
    /// /// Sets entry 0 to 0 and adds 1 to entry 2: each from itself.
    /// struct Spike;
    /// impl Reset for Spike {
    ///     fn apply(&self, _t: f64, x: &[f64], _p: &[f64], x_after: &mut [f64]) {
    ///         x_after.copy_from_slice(x);
    ///         x_after[0] = 0.0;
    ///         x_after[2] += 1.0;
    ///     }
    ///     fn writes(&self) -> Option<&[usize]> { Some(&[0, 2]) }
    ///     fn writes_entrywise(&self) -> bool { true }
    ///     fn partials(&self, _t: f64, _x: &[f64], _p: &[f64], out: &mut ResetPartials) {
    ///         out.x.fill_with_identity();
    ///         out.x[(0, 0)] = 0.0;
    ///     }
    /// }
    /// assert!(Spike.writes_entrywise());
    /// ```
    fn writes_entrywise(&self) -> bool {
        false
    }

    /// Optional fast path for a reset that declares [`Reset::reads`] and
    /// [`Reset::writes`]: applies `r(t, x, p)` over `x` in place, changing
    /// only the entries of `writes` and reading only those of `reads` (the
    /// others may be stale), and returns `true`. The default returns
    /// `false`, and the exact solver calls [`Reset::apply`] into a copy
    /// instead (a copy of the whole state per event).
    fn apply_in_place(&self, _t: f64, _x: &mut [f64], _p: &[f64]) -> bool {
        false
    }

    /// Optional fast path for a reset that declares [`Reset::reads`] and
    /// [`Reset::writes`]: replaces the written entries of `v`, a tangent
    /// of the state read on the entries of `reads` (the others may be
    /// stale), by those of `r_x v + r_t dt`, leaving the others, and
    /// returns `true`; `x` is read on `reads` only. The default returns
    /// `false`, and the library calls [`Reset::jacobian_vector_product`]
    /// into a copy (a copy of the whole state). The exact solver's lazy
    /// taped run forms an event's time shift with it at the cost of the
    /// entries the event touches.
    fn jacobian_vector_product_in_place(
        &self,
        _t: f64,
        _x: &[f64],
        _p: &[f64],
        _dt: f64,
        _v: &mut [f64],
    ) -> bool {
        false
    }

    /// Optional fast path of the adjoint for a reset that declares
    /// [`Reset::reads`] and [`Reset::writes`]: replaces `v` by `r_x^T v`
    /// in place (its entries off `reads` and `writes` unchanged: those
    /// rows of `r_x` are the identity's), adds `r_p^T v` to `p_bar` and
    /// returns `true`, reading `v` on `writes` and `x` on `reads` only.
    /// The default returns `false`, and the library calls
    /// [`Reset::vector_jacobian_product`] into a copy. The adjoint of the
    /// exact solver's lazy taped run transposes each event with it at the
    /// cost of the entries the event touches.
    ///
    /// ```
    /// use ia_core::{Reset, ResetPartials};
    ///
    /// /// Sets entry 0 to 0 and adds parameter 0 to entry 2.
    /// struct Spike;
    /// impl Reset for Spike {
    ///     fn apply(&self, _t: f64, x: &[f64], p: &[f64], x_after: &mut [f64]) {
    ///         x_after.copy_from_slice(x);
    ///         x_after[0] = 0.0;
    ///         x_after[2] += p[0];
    ///     }
    ///     fn writes(&self) -> Option<&[usize]> { Some(&[0, 2]) }
    ///     fn reads(&self) -> Option<&[usize]> { Some(&[0, 2]) }
    ///     fn partials(&self, _t: f64, _x: &[f64], _p: &[f64], out: &mut ResetPartials) {
    ///         out.x.fill_with_identity();
    ///         out.x[(0, 0)] = 0.0;
    ///         out.p[(2, 0)] = 1.0;
    ///     }
    ///     fn vector_jacobian_product_in_place(
    ///         &self, _t: f64, _x: &[f64], _p: &[f64], v: &mut [f64], p_bar: &mut [f64],
    ///     ) -> bool {
    ///         p_bar[0] += v[2];
    ///         v[0] = 0.0;
    ///         true
    ///     }
    /// }
    /// let (mut v, mut p_bar) = ([1.0, 2.0, 3.0], [0.0]);
    /// assert!(Spike.vector_jacobian_product_in_place(0.0, &[0.0; 3], &[0.5], &mut v, &mut p_bar));
    /// assert_eq!((v, p_bar), ([0.0, 2.0, 3.0], [3.0]));
    /// ```
    fn vector_jacobian_product_in_place(
        &self,
        _t: f64,
        _x: &[f64],
        _p: &[f64],
        _v: &mut [f64],
        _p_bar: &mut [f64],
    ) -> bool {
        false
    }
    /// Writes `r_x`, `r_p` and `r_t` into `out` (already zeroed).
    fn partials(&self, t: f64, x: &[f64], p: &[f64], out: &mut ResetPartials);

    /// Optional fast path: writes the directional derivative
    /// `r_x dx + r_t dt + r_p dp` along `tangent = (dt, dx, dp)` into `out`
    /// and returns `true`. The default returns `false`, and the library
    /// forms it from [`Reset::partials`]. `dp` is any [`ParamDirection`]; as
    /// for [`Flow::jacobian_vector_product`], one body written with
    /// [`ParamDirection::entry`] serves every kind, and a reset may return
    /// `false` for [`ParamDirection::Along`] alone. Worth writing where `r_x`
    /// is sparse (a reset that changes a few entries of a large state);
    /// [`Autodiff`](crate::Autodiff) provides it with one dual-number
    /// evaluation.
    fn jacobian_vector_product(
        &self,
        _t: f64,
        _x: &[f64],
        _p: &[f64],
        _tangent: Tangent<'_>,
        _out: &mut [f64],
    ) -> bool {
        false
    }

    /// Optional fast path of the adjoint: writes `r_x^T v` into `x_bar`,
    /// adds `r_p^T v` to `p_bar` and returns `true`. The default returns
    /// `false`, and the library forms the products from [`Reset::partials`].
    fn vector_jacobian_product(
        &self,
        _t: f64,
        _x: &[f64],
        _p: &[f64],
        _v: &[f64],
        _x_bar: &mut [f64],
        _p_bar: &mut [f64],
    ) -> bool {
        false
    }
}

/// The reset that leaves the state unchanged (a pure mode switch).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Identity;

impl Reset for Identity {
    fn apply(&self, _t: f64, x: &[f64], _p: &[f64], x_after: &mut [f64]) {
        x_after.copy_from_slice(x);
    }

    fn partials(&self, _t: f64, _x: &[f64], _p: &[f64], out: &mut ResetPartials) {
        out.x.fill_with_identity();
    }

    /// `r_x dx = dx`: no matrix formed.
    fn jacobian_vector_product(
        &self,
        _t: f64,
        _x: &[f64],
        _p: &[f64],
        tangent: Tangent<'_>,
        out: &mut [f64],
    ) -> bool {
        out.copy_from_slice(tangent.x);
        true
    }

    /// `r_x^T v = v`, and no parameter term.
    fn vector_jacobian_product(
        &self,
        _t: f64,
        _x: &[f64],
        _p: &[f64],
        v: &[f64],
        x_bar: &mut [f64],
        _p_bar: &mut [f64],
    ) -> bool {
        x_bar.copy_from_slice(v);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    /// Reference: the products formed from `Identity::partials` (the dense
    /// `r_x`, `r_p`, `r_t`), as the library does for a reset without fast
    /// paths.
    #[rstest]
    #[case(ParamDirection::Zero, 0.0)]
    #[case(ParamDirection::Unit(1), 0.7)]
    #[case(ParamDirection::Along(&[0.5, -3.0]), 0.7)]
    fn identity_products_equal_those_of_its_partials(
        #[case] param: ParamDirection<'static>,
        #[case] dt: f64,
    ) {
        let (x, p) = ([0.3, -1.2, 2.5], [4.0, 5.0]);
        let dx = [1.5, -0.25, 3.0];
        let mut dense = ResetPartials::zeros(3, 2);
        Identity.partials(0.1, &x, &p, &mut dense);
        let tangent = Tangent {
            t: dt,
            x: &dx,
            param,
        };
        let mut jvp = [f64::NAN; 3];
        assert!(Identity.jacobian_vector_product(0.1, &x, &p, tangent, &mut jvp));
        let dp = DVector::from_fn(3, |i, _| param.apply(|j| dense.p[(i, j)]));
        let want = &dense.x * DVector::from_row_slice(&dx) + &dense.t * dt + dp;
        assert_eq!(jvp.as_slice(), want.as_slice());

        let v = [0.5, 2.0, -1.0];
        let (mut x_bar, mut p_bar) = ([f64::NAN; 3], [0.25, -0.5]);
        assert!(Identity.vector_jacobian_product(0.1, &x, &p, &v, &mut x_bar, &mut p_bar));
        let v = DVector::from_row_slice(&v);
        assert_eq!(x_bar.as_slice(), (dense.x.transpose() * &v).as_slice());
        let want_p = DVector::from_row_slice(&[0.25, -0.5]) + dense.p.transpose() * &v;
        assert_eq!(p_bar.as_slice(), want_p.as_slice());
    }
}
