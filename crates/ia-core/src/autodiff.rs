//! Exact partial derivatives from one generic implementation of the value.
//!
//! A user writes the flow, guard or reset once, generic over a [`Scalar`];
//! [`Autodiff`] evaluates it with `f64` for values and with forward-mode dual
//! numbers ([`num_dual::Dual64`]) for partials, one seeded direction per
//! input. Scratch buffers live on the stack up to [`STACK_SCRATCH`] entries, so
//! small models allocate nothing per call.

use crate::traits::{
    Direction, Flow, FlowPartials, Guard, GuardPartials, ParamDirection, Partials, Reset,
    ResetPartials, Support, Tangent, Threshold,
};
use num_dual::{Dual64, DualNum};

/// A number a generic model is evaluated with: `f64` for values,
/// [`Dual64`] for derivatives.
///
/// # Constants
///
/// A `Scalar` combines with `f64` constants **on the right** (`p[1] + 1.0`,
/// `x[0] * 0.5`, `x[0] - 2.0`). A constant **on the left** (`1.0 + p[1]`)
/// does not compile for a generic `S`: Rust has no `f64 + S` for every `S`.
/// Turn the constant into an `S` first with `S::from(1.0)` (every `Scalar`
/// is `From<f64>`), or reorder:
///
/// ```
/// use ia_core::{Autodiff, Direction, GuardPartials, Guard, GuardFn, Scalar};
///
/// /// `g = (1 + e) v - 2 h`.
/// struct Mixed;
/// impl GuardFn for Mixed {
///     fn direction(&self) -> Direction { Direction::Falling }
///     fn value<S: Scalar>(&self, _t: S, x: &[S], p: &[S]) -> S {
///         let factor = S::from(1.0) + p[0]; // not `1.0 + p[0]`
///         let also = p[0] + 1.0; // a constant on the right needs nothing
///         assert_eq!(factor, also);
///         factor * x[1] - x[0] * 2.0
///     }
/// }
///
/// let mut d = GuardPartials::zeros(2, 1);
/// Autodiff(Mixed).partials(0.0, &[1.0, -3.0], &[0.5], &mut d);
/// assert_eq!(d.x[0], -2.0); // dg/dh
/// assert_eq!(d.x[1], 1.5); // dg/dv = 1 + e
/// assert_eq!(d.p[0], -3.0); // dg/de = v
/// ```
///
/// The form that does not compile:
///
/// ```compile_fail,E0277
/// use ia_core::Scalar;
/// fn factor<S: Scalar>(p: &[S]) -> S {
///     1.0 + p[0]
/// }
/// ```
pub trait Scalar: DualNum<Primitive = f64> + Copy {}
impl<T: DualNum<Primitive = f64> + Copy> Scalar for T {}

/// A flow written once, generic over [`Scalar`]. Wrap in [`Autodiff`] to get a
/// [`Flow`].
pub trait FlowFn: Send + Sync {
    /// Writes `f(t, x, p)` into `dxdt`.
    fn rate<S: Scalar>(&self, t: S, x: &[S], p: &[S], dxdt: &mut [S]);
    /// The coefficients of a decoupled linear flow, as in
    /// [`Flow::decoupled_linear`]; the default returns `false`.
    fn decoupled_linear(&self, _p: &[f64], _a: &mut [f64], _b: &mut [f64]) -> bool {
        false
    }
    /// The linear blocks of the flow, as in [`Flow::linear_blocks`]; the
    /// default declares those of [`FlowFn::decoupled_linear`] and no pair.
    fn linear_blocks(&self, p: &[f64], blocks: &mut crate::LinearBlocks) -> bool {
        blocks.pairs.clear();
        self.decoupled_linear(p, &mut blocks.a, &mut blocks.b)
    }
}

/// A guard written once, generic over [`Scalar`]. Wrap in [`Autodiff`] to get a
/// [`Guard`].
pub trait GuardFn: Send + Sync {
    /// The crossing direction that fires the transition.
    fn direction(&self) -> Direction;
    /// `g(t, x, p)`.
    fn value<S: Scalar>(&self, t: S, x: &[S], p: &[S]) -> S;
    /// The entries the guard reads, as in [`Guard::support`]; `None` (the
    /// default) means any.
    fn support(&self) -> Option<Support<'_>> {
        None
    }
    /// The threshold, as in [`Guard::threshold`]; `None` (the default)
    /// means any other form.
    fn threshold(&self, _p: &[f64]) -> Option<Threshold> {
        None
    }
    /// The threshold on time, as in [`Guard::time_threshold`]; `None` (the
    /// default) means any other form.
    fn time_threshold(&self, _p: &[f64]) -> Option<f64> {
        None
    }
}

/// A reset written once, generic over [`Scalar`]. Wrap in [`Autodiff`] to get a
/// [`Reset`].
pub trait ResetFn: Send + Sync {
    /// Writes `r(t, x, p)` into `x_after`.
    fn apply<S: Scalar>(&self, t: S, x: &[S], p: &[S], x_after: &mut [S]);
    /// The entries the reset may change, as in [`Reset::writes`]; `None`
    /// (the default) means any.
    fn writes(&self) -> Option<&[usize]> {
        None
    }
    /// The entries the reset reads, as in [`Reset::reads`]; `None` (the
    /// default) means any.
    fn reads(&self) -> Option<&[usize]> {
        None
    }
    /// Whether each written entry's new value reads only that entry, the
    /// time and the parameters, as in [`Reset::writes_entrywise`]; `false`
    /// (the default) means it may read any entry of [`ResetFn::reads`].
    fn writes_entrywise(&self) -> bool {
        false
    }
}

/// Wraps a generic [`FlowFn`], [`GuardFn`] or [`ResetFn`] and implements
/// [`Flow`], [`Guard`] or [`Reset`] with exact partials by dual numbers.
///
/// ```
/// use ia_core::{Autodiff, Flow, FlowFn, FlowPartials, Scalar};
/// struct Pendulum;
/// impl FlowFn for Pendulum {
///     fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], dxdt: &mut [S]) {
///         dxdt[0] = x[1];
///         dxdt[1] = -p[0] * x[0].sin();
///     }
/// }
/// let mut d = FlowPartials::zeros(2, 1);
/// Autodiff(Pendulum).partials(0.0, &[0.5, 0.0], &[9.81], &mut d);
/// assert!((d.x[(1, 0)] + 9.81 * 0.5f64.cos()).abs() < 1e-15);
/// assert!((d.p[(1, 0)] + 0.5f64.sin()).abs() < 1e-15);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Autodiff<T>(pub T);

/// Number of dual scratch entries kept on the stack before falling back to
/// the heap.
pub const STACK_SCRATCH: usize = 64;

fn with_scratch<R>(len: usize, work: impl FnOnce(&mut [Dual64]) -> R) -> R {
    let zero = Dual64::from_re(0.0);
    if len <= STACK_SCRATCH {
        let mut buffer = [zero; STACK_SCRATCH];
        work(&mut buffer[..len])
    } else {
        let mut buffer = vec![zero; len];
        work(&mut buffer)
    }
}

/// Loads `t`, `x`, `p` as constants into dual buffers.
fn load(x: &[f64], p: &[f64], xs: &mut [Dual64], ps: &mut [Dual64]) {
    for (d, &v) in xs.iter_mut().zip(x) {
        *d = Dual64::from_re(v);
    }
    for (d, &v) in ps.iter_mut().zip(p) {
        *d = Dual64::from_re(v);
    }
}

/// The inputs of a model, one of which is seeded at a time.
#[derive(Clone, Copy)]
enum Seed {
    Time,
    State(usize),
    Param(usize),
}

/// Calls `eval` once per input direction (each state entry, each parameter,
/// time) with that input seeded, and hands each result to `store`.
fn for_each_direction(
    t: f64,
    xs: &mut [Dual64],
    ps: &mut [Dual64],
    eval: impl FnMut(Dual64, &[Dual64], &[Dual64]),
    store: impl FnMut(Seed),
) {
    let seeds = (0..xs.len())
        .map(Seed::State)
        .chain((0..ps.len()).map(Seed::Param))
        .chain(std::iter::once(Seed::Time));
    for_each_seed(t, xs, ps, seeds, eval, store);
}

/// The dense partials of a vector-valued piece (a flow's rate, a reset's
/// state after), one dual evaluation of `eval` per input direction.
fn vector_partials(
    t: f64,
    x: &[f64],
    p: &[f64],
    out: &mut Partials,
    eval: impl Fn(Dual64, &[Dual64], &[Dual64], &mut [Dual64]),
) {
    let (n, np) = (x.len(), p.len());
    with_scratch(2 * n + np, |buffer| {
        let (xs, rest) = buffer.split_at_mut(n);
        let (ps, value) = rest.split_at_mut(np);
        load(x, p, xs, ps);
        let value = std::cell::RefCell::new(value);
        for_each_direction(
            t,
            xs,
            ps,
            |td, xs, ps| eval(td, xs, ps, &mut value.borrow_mut()),
            |seed| {
                for (i, r) in value.borrow().iter().enumerate() {
                    match seed {
                        Seed::State(j) => out.x[(i, j)] = r.eps,
                        Seed::Param(j) => out.p[(i, j)] = r.eps,
                        Seed::Time => out.t[i] = r.eps,
                    }
                }
            },
        );
    });
}

/// [`for_each_direction`] over the given seeds only (a guard's support).
fn for_each_seed(
    t: f64,
    xs: &mut [Dual64],
    ps: &mut [Dual64],
    seeds: impl Iterator<Item = Seed>,
    mut eval: impl FnMut(Dual64, &[Dual64], &[Dual64]),
    mut store: impl FnMut(Seed),
) {
    for seed in seeds {
        let mut td = Dual64::from_re(t);
        match seed {
            Seed::State(j) => xs[j].eps = 1.0,
            Seed::Param(j) => ps[j].eps = 1.0,
            Seed::Time => td.eps = 1.0,
        }
        eval(td, xs, ps);
        match seed {
            Seed::State(j) => xs[j].eps = 0.0,
            Seed::Param(j) => ps[j].eps = 0.0,
            Seed::Time => {}
        }
        store(seed);
    }
}

impl<T: FlowFn> Flow for Autodiff<T> {
    fn rate(&self, t: f64, x: &[f64], p: &[f64], dxdt: &mut [f64]) {
        self.0.rate(t, x, p, dxdt);
    }

    fn decoupled_linear(&self, p: &[f64], a: &mut [f64], b: &mut [f64]) -> bool {
        self.0.decoupled_linear(p, a, b)
    }

    fn linear_blocks(&self, p: &[f64], blocks: &mut crate::LinearBlocks) -> bool {
        self.0.linear_blocks(p, blocks)
    }

    fn partials(&self, t: f64, x: &[f64], p: &[f64], out: &mut FlowPartials) {
        vector_partials(t, x, p, out, |td, xs, ps, rate| {
            self.0.rate(td, xs, ps, rate)
        });
    }

    /// One dual-number evaluation seeded with the tangent.
    fn jacobian_vector_product(
        &self,
        t: f64,
        x: &[f64],
        p: &[f64],
        tangent: Tangent<'_>,
        out: &mut [f64],
    ) -> bool {
        along_tangent(t, x, p, tangent, out, |td, xs, ps, o| {
            self.0.rate(td, xs, ps, o)
        });
        true
    }
}

impl<T: GuardFn> Guard for Autodiff<T> {
    fn direction(&self) -> Direction {
        self.0.direction()
    }

    fn support(&self) -> Option<Support<'_>> {
        self.0.support()
    }

    fn threshold(&self, p: &[f64]) -> Option<Threshold> {
        self.0.threshold(p)
    }
    fn time_threshold(&self, p: &[f64]) -> Option<f64> {
        self.0.time_threshold(p)
    }

    fn value(&self, t: f64, x: &[f64], p: &[f64]) -> f64 {
        self.0.value(t, x, p)
    }

    /// One dual-number evaluation per entry the guard reads: its support's
    /// when it declares one (the others are zero), every entry otherwise.
    fn partials(&self, t: f64, x: &[f64], p: &[f64], out: &mut GuardPartials) {
        let (n, np) = (x.len(), p.len());
        with_scratch(n + np, |buffer| {
            let (xs, ps) = buffer.split_at_mut(n);
            load(x, p, xs, ps);
            let last = std::cell::Cell::new(0.0);
            let eval = |td, xs: &[Dual64], ps: &[Dual64]| last.set(self.0.value(td, xs, ps).eps);
            let store = |seed| match seed {
                Seed::State(j) => out.x[j] = last.get(),
                Seed::Param(j) => out.p[j] = last.get(),
                Seed::Time => out.t = last.get(),
            };
            match self.0.support() {
                Some(read) => {
                    let seeds = (read.states.iter().map(|&j| Seed::State(j)))
                        .chain(read.params.iter().map(|&j| Seed::Param(j)))
                        .chain(std::iter::once(Seed::Time));
                    for_each_seed(t, xs, ps, seeds, eval, store);
                }
                None => for_each_direction(t, xs, ps, eval, store),
            }
        });
    }
}

impl<T: ResetFn> Reset for Autodiff<T> {
    fn apply(&self, t: f64, x: &[f64], p: &[f64], x_after: &mut [f64]) {
        self.0.apply(t, x, p, x_after);
    }

    fn writes(&self) -> Option<&[usize]> {
        self.0.writes()
    }

    fn reads(&self) -> Option<&[usize]> {
        self.0.reads()
    }

    fn writes_entrywise(&self) -> bool {
        self.0.writes_entrywise()
    }

    fn partials(&self, t: f64, x: &[f64], p: &[f64], out: &mut ResetPartials) {
        vector_partials(t, x, p, out, |td, xs, ps, after| {
            self.0.apply(td, xs, ps, after)
        });
    }

    /// One dual-number evaluation seeded with the tangent.
    fn jacobian_vector_product(
        &self,
        t: f64,
        x: &[f64],
        p: &[f64],
        tangent: Tangent<'_>,
        out: &mut [f64],
    ) -> bool {
        along_tangent(t, x, p, tangent, out, |td, xs, ps, o| {
            self.0.apply(td, xs, ps, o)
        });
        true
    }
}

/// Evaluates `eval` once on dual numbers seeded with `tangent` (time `dt`,
/// state `dx`, parameters `dp`: every entry of a general direction, the one
/// of a unit direction) and writes the derivative parts of its `x.len()`
/// outputs into `out`: the product of `eval`'s Jacobian with the tangent.
fn along_tangent(
    t: f64,
    x: &[f64],
    p: &[f64],
    tangent: Tangent<'_>,
    out: &mut [f64],
    eval: impl FnOnce(Dual64, &[Dual64], &[Dual64], &mut [Dual64]),
) {
    let (n, np) = (x.len(), p.len());
    with_scratch(2 * n + np, |buffer| {
        let (xs, rest) = buffer.split_at_mut(n);
        let (ps, result) = rest.split_at_mut(np);
        load(x, p, xs, ps);
        for (d, &v) in xs.iter_mut().zip(tangent.x) {
            d.eps = v;
        }
        match tangent.param {
            ParamDirection::Zero => {}
            ParamDirection::Unit(j) => ps[j].eps = 1.0,
            ParamDirection::Along(dp) => {
                for (d, &v) in ps.iter_mut().zip(dp) {
                    d.eps = v;
                }
            }
        }
        eval(Dual64::new(t, tangent.t), xs, ps, result);
        for (o, r) in out.iter_mut().zip(result.iter()) {
            *o = r.eps;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A flow with every kind of dependence: on state, parameter and time.
    struct Mixed;
    impl FlowFn for Mixed {
        fn rate<S: Scalar>(&self, t: S, x: &[S], p: &[S], dxdt: &mut [S]) {
            dxdt[0] = x[1] * p[0] + t.sin();
            dxdt[1] = -(x[0] * x[0]) * p[1] + x[1].exp();
        }
    }

    #[test]
    fn flow_jacobian_vector_product_equals_the_partials_applied() {
        // Reference: the dense partials, checked by hand in the next test.
        let (t, x, p) = (0.3, [0.7, -0.2], [1.5, 2.5]);
        let mut d = FlowPartials::zeros(2, 2);
        Autodiff(Mixed).partials(t, &x, &p, &mut d);
        let dx = [0.4, -1.1];
        let mut out = [0.0; 2];
        let tangent = Tangent {
            t: 0.0,
            x: &dx,
            param: ParamDirection::Unit(1),
        };
        assert!(Autodiff(Mixed).jacobian_vector_product(t, &x, &p, tangent, &mut out));
        for (i, o) in out.iter().enumerate() {
            let dense = d.x[(i, 0)] * dx[0] + d.x[(i, 1)] * dx[1] + d.p[(i, 1)];
            assert!((o - dense).abs() < 1e-15, "{i}: {o} vs {dense}");
        }
    }

    #[test]
    fn flow_product_along_a_parameter_direction_equals_the_partials_applied() {
        // Reference: the dense partials (checked by hand in the next test),
        // `f_x dx + f_p dp`, and the sum of the unit-parameter products
        // weighted by `dp` (what the library forms without this product).
        let (t, x, p) = (0.3, [0.7, -0.2], [1.5, 2.5]);
        let mut d = FlowPartials::zeros(2, 2);
        Autodiff(Mixed).partials(t, &x, &p, &mut d);
        let (dx, dp) = ([0.4, -1.1], [-0.6, 2.3]);
        let mut out = [f64::NAN; 2];
        let along = Tangent {
            t: 0.0,
            x: &dx,
            param: ParamDirection::Along(&dp),
        };
        assert!(Autodiff(Mixed).jacobian_vector_product(t, &x, &p, along, &mut out));
        let mut by_units = [0.0; 2];
        for (j, &weight) in dp.iter().enumerate() {
            let mut column = [0.0; 2];
            let zeros = [0.0; 2];
            let tangent = Tangent {
                t: 0.0,
                x: &zeros,
                param: ParamDirection::Unit(j),
            };
            assert!(Autodiff(Mixed).jacobian_vector_product(t, &x, &p, tangent, &mut column));
            for (b, c) in by_units.iter_mut().zip(column) {
                *b += weight * c;
            }
        }
        for (i, o) in out.iter().enumerate() {
            let dense = d.x[(i, 0)] * dx[0]
                + d.x[(i, 1)] * dx[1]
                + d.p[(i, 0)] * dp[0]
                + d.p[(i, 1)] * dp[1];
            assert!((o - dense).abs() < 1e-15, "{i}: {o} vs {dense}");
            let tangent = Tangent {
                t: 0.0,
                x: &dx,
                param: ParamDirection::Zero,
            };
            let mut state_part = [0.0; 2];
            assert!(Autodiff(Mixed).jacobian_vector_product(t, &x, &p, tangent, &mut state_part));
            let units = state_part[i] + by_units[i];
            assert!((o - units).abs() < 1e-15, "{i}: {o} vs {units}");
        }
    }

    #[test]
    fn flow_partials_match_hand_derivation() {
        let (t, x, p) = (0.3, [0.7, -0.2], [1.5, 2.5]);
        let mut d = FlowPartials::zeros(2, 2);
        Autodiff(Mixed).partials(t, &x, &p, &mut d);
        // Derived by hand from the rate above.
        assert_eq!(d.x[(0, 0)], 0.0);
        assert_eq!(d.x[(0, 1)], p[0]);
        assert_eq!(d.x[(1, 0)], -2.0 * x[0] * p[1]);
        assert!((d.x[(1, 1)] - x[1].exp()).abs() < 1e-15);
        assert_eq!(d.p[(0, 0)], x[1]);
        assert_eq!(d.p[(1, 1)], -x[0] * x[0]);
        assert!((d.t[0] - t.cos()).abs() < 1e-15);
        assert_eq!(d.t[1], 0.0);
    }

    struct Bowl;
    impl GuardFn for Bowl {
        fn direction(&self) -> Direction {
            Direction::Falling
        }
        fn value<S: Scalar>(&self, _t: S, x: &[S], p: &[S]) -> S {
            x[1] - p[0] * x[0] * x[0]
        }
    }

    #[test]
    fn guard_partials_match_hand_derivation() {
        let mut d = GuardPartials::zeros(2, 1);
        Autodiff(Bowl).partials(0.0, &[0.4, 1.0], &[0.5], &mut d);
        assert_eq!(d.x[0], -2.0 * 0.5 * 0.4);
        assert_eq!(d.x[1], 1.0);
        assert_eq!(d.p[0], -0.16000000000000003);
        assert_eq!(d.t, 0.0);
    }

    /// A guard reading `x1`, `x3`, `p1` and time of four states and three
    /// parameters, with and without declaring it.
    struct Gap {
        declared: bool,
    }
    impl GuardFn for Gap {
        fn direction(&self) -> Direction {
            Direction::Falling
        }
        fn value<S: Scalar>(&self, t: S, x: &[S], p: &[S]) -> S {
            x[3] - x[1] * p[1] + t * t
        }
        fn support(&self) -> Option<Support<'_>> {
            self.declared.then_some(Support {
                states: &[1, 3],
                params: &[1],
            })
        }
    }

    /// Reference: the same guard differentiated in every direction (which
    /// finds zeros off its support). With its support declared, the
    /// partials are those on the support and nothing is written elsewhere
    /// (the NaN left there shows it).
    #[test]
    fn guard_partials_seed_only_a_declared_support() {
        let (t, x, p) = (0.5, [9.0, 0.4, 8.0, 1.0], [7.0, 0.5, 6.0]);
        let mut every = GuardPartials::zeros(4, 3);
        Autodiff(Gap { declared: false }).partials(t, &x, &p, &mut every);
        assert_eq!(every.x.as_slice(), [0.0, -0.5, 0.0, 1.0]);
        assert_eq!(every.p.as_slice(), [0.0, -0.4, 0.0]);
        assert_eq!(every.t, 1.0);
        let mut on_support = GuardPartials::zeros(4, 3);
        on_support.x.fill(f64::NAN);
        on_support.p.fill(f64::NAN);
        Autodiff(Gap { declared: true }).partials(t, &x, &p, &mut on_support);
        for (i, (&a, &b)) in on_support.x.iter().zip(every.x.iter()).enumerate() {
            assert!(
                if [1, 3].contains(&i) {
                    a == b
                } else {
                    a.is_nan()
                },
                "x{i}"
            );
        }
        for (j, (&a, &b)) in on_support.p.iter().zip(every.p.iter()).enumerate() {
            assert!(if j == 1 { a == b } else { a.is_nan() }, "p{j}");
        }
        assert_eq!(on_support.t, every.t);
    }

    struct Kick;
    impl ResetFn for Kick {
        fn apply<S: Scalar>(&self, t: S, x: &[S], p: &[S], a: &mut [S]) {
            a[0] = x[0] * x[1] + t * p[0];
            a[1] = -p[1] * x[1];
        }
    }

    #[test]
    fn reset_jacobian_vector_product_equals_the_partials_applied() {
        // Reference: the dense partials (themselves checked by hand above for
        // the flow and guard) applied to the direction.
        let (t, x, p) = (0.4, [0.3, -1.2], [2.0, 0.8]);
        let mut d = ResetPartials::zeros(2, 2);
        Autodiff(Kick).partials(t, &x, &p, &mut d);
        let (dx, dt) = ([0.7, -0.1], 0.25);
        let along = [-0.6, 2.3];
        for param in [
            ParamDirection::Zero,
            ParamDirection::Unit(0),
            ParamDirection::Unit(1),
            ParamDirection::Along(&along),
        ] {
            let mut out = [0.0; 2];
            let tangent = Tangent {
                t: dt,
                x: &dx,
                param,
            };
            assert!(Autodiff(Kick).jacobian_vector_product(t, &x, &p, tangent, &mut out));
            for (i, o) in out.iter().enumerate() {
                let dp = param.apply(|j| d.p[(i, j)]);
                let dense = d.x[(i, 0)] * dx[0] + d.x[(i, 1)] * dx[1] + d.t[i] * dt + dp;
                assert!((o - dense).abs() < 1e-15, "{i}: {o} vs {dense}");
            }
        }
    }

    #[test]
    fn large_models_fall_back_to_heap_scratch() {
        struct Sum;
        impl GuardFn for Sum {
            fn direction(&self) -> Direction {
                Direction::Either
            }
            fn value<S: Scalar>(&self, _t: S, x: &[S], _p: &[S]) -> S {
                x.iter().fold(S::from(0.0), |a, &b| a + b * b)
            }
        }
        let n = STACK_SCRATCH + 10;
        let x: Vec<f64> = (0..n).map(|i| i as f64).collect();
        let mut d = GuardPartials::zeros(n, 0);
        Autodiff(Sum).partials(0.0, &x, &[], &mut d);
        for i in 0..n {
            assert_eq!(d.x[i], 2.0 * i as f64);
        }
    }
}
