//! A check of hand-written partial derivatives: every
//! [`Flow`](crate::Flow), [`Guard`](crate::Guard) and
//! [`Reset`](crate::Reset) of a [`HybridSystem`], at sampled points,
//! against a reference.
//!
//! Writing derivatives by hand is the main source of user error. One call in
//! a user's test checks them all:
//!
//! * [`check_partials`] compares with **central finite differences** of the
//!   values (Richardson-extrapolated, step `max(|v|, 0.01) * 1e-3` per
//!   input, with an error estimate per entry), so it needs nothing but the
//!   system;
//! * [`check_partials_against`] compares with the partials of a second
//!   system with the same names, typically the same model written once,
//!   generic, and wrapped in [`Autodiff`](crate::Autodiff): exact
//!   dual-number partials.
//!
//! The points are `(mode, t, x, p)` samples ([`PartialsPoint`]); at each, the
//! flow of that mode and the guard and reset of every transition leaving it
//! are checked, with respect to every state entry, parameter and time.
//! [`sample_points_around`] draws points around a typical state and
//! parameters (seeded, reproducible).
//!
//! An entry fails when `|hand - reference| > tolerance * max(|reference|, 1) +
//! 10 * estimate`, the estimate being the finite-difference error estimate (0
//! for [`check_partials_against`]). The report names the worst entry, for
//! example `flow 'flight' d f[v]/d param.g: hand 1 vs reference -1`.
//!
//! ```
//! use ia_core::check::{check_partials, sample_points_around};
//! use ia_core::{Direction, Flow, FlowPartials, FromMode, Guard, GuardPartials, HybridSystem, Identity, ToMode};
//!
//! // A falling body with hand-written partials.
//! struct Fall;
//! impl Flow for Fall {
//!     fn rate(&self, _t: f64, x: &[f64], p: &[f64], d: &mut [f64]) {
//!         d[0] = x[1];
//!         d[1] = -p[0];
//!     }
//!     fn partials(&self, _t: f64, _x: &[f64], _p: &[f64], out: &mut FlowPartials) {
//!         out.x[(0, 1)] = 1.0;
//!         out.p[(1, 0)] = -1.0;
//!     }
//! }
//! struct Floor;
//! impl Guard for Floor {
//!     fn direction(&self) -> Direction { Direction::Falling }
//!     fn value(&self, _t: f64, x: &[f64], _p: &[f64]) -> f64 { x[0] }
//!     fn partials(&self, _t: f64, _x: &[f64], _p: &[f64], out: &mut GuardPartials) {
//!         out.x[0] = 1.0;
//!     }
//! }
//! let system = HybridSystem::builder(&["h", "v"], &["g"])
//!     .mode("flight", Fall)
//!     .transition("land", FromMode("flight"), ToMode("flight"), Floor, Identity)
//!     .build()
//!     .unwrap();
//! let points = sample_points_around(1, &[1.0, 0.0], &[9.81], 2.0, 5, 42);
//! match check_partials(&system, &points, 1e-6) {
//!     Ok(report) => assert!(report.entries_checked > 0),
//!     Err(mismatch) => panic!("{mismatch}"), // names the entry: "flow 'flight' d f[v]/d param.g: ..."
//! }
//! ```

use crate::system::HybridSystem;
use crate::traits::{FlowPartials, GuardPartials, Partials, ResetPartials};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Relative step of the finite-difference reference: the step for an input
/// of value `v` is `FD_RELATIVE_STEP * max(|v|, FD_MIN_SCALE)`.
pub const FD_RELATIVE_STEP: f64 = 1e-3;

/// Smallest scale of an input for the step (so that a time constant of
/// `0.01` is stepped by `1e-5`, not by `1e-3`).
pub const FD_MIN_SCALE: f64 = 1e-2;

/// Weight of the finite-difference error estimate in the pass rule.
pub const ESTIMATE_WEIGHT: f64 = 10.0;

/// One sample point: a mode, a time, a state and parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartialsPoint {
    /// Mode index; the flow of this mode and the transitions leaving it are checked.
    pub mode: usize,
    /// Time.
    pub t: f64,
    /// State.
    pub x: Vec<f64>,
    /// Parameters.
    pub p: Vec<f64>,
}

/// One compared entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartialsEntry {
    /// The piece: `flow 'flight'`, `guard 'impact'`, `reset 'impact'`.
    pub piece: String,
    /// The derivative: `d f[vy]/d param.g`, `d g/d x[y]`, `d r[vx]/d t`.
    pub derivative: String,
    /// Index of the point in the list checked.
    pub point: usize,
    /// The hand-written partial.
    pub hand: f64,
    /// The reference partial.
    pub reference: f64,
    /// The reference's error estimate (0 for an exact reference).
    pub estimate: f64,
    /// `|hand - reference|`.
    pub difference: f64,
    /// The largest difference allowed.
    pub allowed: f64,
}

impl PartialsEntry {
    /// `"flow 'flight' d f[vy]/d param.g"`.
    pub fn name(&self) -> String {
        format!("{} {}", self.piece, self.derivative)
    }

    /// Whether the entry passes.
    pub fn passes(&self) -> bool {
        self.difference <= self.allowed
    }

    /// `difference / allowed`: above 1 fails.
    pub fn ratio(&self) -> f64 {
        if self.allowed > 0.0 {
            self.difference / self.allowed
        } else if self.difference == 0.0 {
            0.0
        } else {
            f64::INFINITY
        }
    }
}

impl fmt::Display for PartialsEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: hand {:?} vs reference {:?} (|difference| {:e}, allowed {:e}) at point {}",
            self.name(),
            self.hand,
            self.reference,
            self.difference,
            self.allowed,
            self.point
        )
    }
}

/// All entries agree.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartialsReport {
    /// Points checked.
    pub points: usize,
    /// Entries compared.
    pub entries_checked: usize,
    /// The entry closest to failing (largest `difference / allowed`).
    pub worst: Option<PartialsEntry>,
}

/// Some entries disagree.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartialsMismatch {
    /// The worst failing entry (largest `difference / allowed`).
    pub worst: PartialsEntry,
    /// Every failing entry, in the order checked.
    pub failures: Vec<PartialsEntry>,
    /// Entries compared.
    pub entries_checked: usize,
    /// The point of the worst entry.
    pub point: PartialsPoint,
    /// The mode name of that point.
    pub mode: String,
}

impl fmt::Display for PartialsMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (mode '{}', t = {}, x = {:?}, p = {:?}); {} of {} entries disagree",
            self.worst,
            self.mode,
            self.point.t,
            self.point.x,
            self.point.p,
            self.failures.len(),
            self.entries_checked
        )?;
        let others: Vec<String> = self
            .failures
            .iter()
            .map(PartialsEntry::name)
            .filter(|n| *n != self.worst.name())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        if !others.is_empty() {
            write!(f, "; also: {}", others.join(", "))?;
        }
        Ok(())
    }
}

impl std::error::Error for PartialsMismatch {}

/// Where the reference partials come from.
enum Reference<'a> {
    FiniteDifference,
    System(&'a HybridSystem),
}

/// Checks every flow, guard and reset partial of `system` at `points`
/// against central finite differences of the values (Richardson
/// extrapolated). `tolerance` is relative to `max(|reference|, 1)`; `1e-6` is
/// a sensible choice for smooth models.
pub fn check_partials(
    system: &HybridSystem,
    points: &[PartialsPoint],
    tolerance: f64,
) -> Result<PartialsReport, Box<PartialsMismatch>> {
    check(system, Reference::FiniteDifference, points, tolerance)
}

/// Checks every flow, guard and reset partial of `system` at `points` against
/// the partials of `reference`: a system with the same states, parameters,
/// modes and transitions (in the same order), typically built from generic
/// [`FlowFn`](crate::FlowFn), [`GuardFn`](crate::GuardFn) and [`ResetFn`](crate::ResetFn)
/// implementations wrapped in [`Autodiff`](crate::Autodiff), whose partials are exact.
///
/// # Panics
///
/// When the two systems do not have the same dimensions, modes and
/// transitions.
pub fn check_partials_against(
    system: &HybridSystem,
    reference: &HybridSystem,
    points: &[PartialsPoint],
    tolerance: f64,
) -> Result<PartialsReport, Box<PartialsMismatch>> {
    assert_eq!(
        (
            system.state_dim(),
            system.param_dim(),
            system.mode_names(),
            system.transition_names()
        ),
        (
            reference.state_dim(),
            reference.param_dim(),
            reference.mode_names(),
            reference.transition_names()
        ),
        "check_partials_against: the reference system must have the same dimensions, modes and transitions"
    );
    check(system, Reference::System(reference), points, tolerance)
}

/// Draws `per_mode` points in each of `modes` modes, around state `x` and
/// parameters `p`: each state entry moved by up to `0.2 max(|v|, 0.5)`, each
/// nonzero parameter scaled by up to 20 % (a zero one moved by up to 0.1),
/// the time uniform in `[0, t_end]`. The same `seed` gives the same points.
pub fn sample_points_around(
    modes: usize,
    x: &[f64],
    p: &[f64],
    t_end: f64,
    per_mode: usize,
    seed: u64,
) -> Vec<PartialsPoint> {
    let mut rng = Lcg::new(seed);
    let mut points = Vec::with_capacity(modes * per_mode);
    for mode in 0..modes {
        for _ in 0..per_mode {
            let x = x
                .iter()
                .map(|&v| v + 0.2 * v.abs().max(0.5) * rng.symmetric())
                .collect();
            let p = p
                .iter()
                .map(|&v| {
                    if v == 0.0 {
                        0.1 * rng.symmetric()
                    } else {
                        v * (1.0 + 0.2 * rng.symmetric())
                    }
                })
                .collect();
            let t = t_end * rng.uniform();
            points.push(PartialsPoint { mode, t, x, p });
        }
    }
    points
}

/// A 64-bit linear congruential generator (Knuth's MMIX constants): enough
/// for reproducible sample points, no dependency.
#[derive(Clone, Debug)]
pub struct Lcg(u64);

impl Lcg {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        let mut g = Lcg(seed ^ 0x9E37_79B9_7F4A_7C15);
        g.next_u64();
        g
    }

    /// The next raw value.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0
    }

    /// Uniform in `[0, 1)` (from the high 53 bits).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `[-1, 1)`.
    pub fn symmetric(&mut self) -> f64 {
        2.0 * self.uniform() - 1.0
    }
}

/// The inputs a partial is taken with respect to.
#[derive(Clone, Copy)]
enum Input {
    State(usize),
    Param(usize),
    Time,
}

fn input_name(system: &HybridSystem, input: Input) -> String {
    match input {
        Input::State(j) => format!("x[{}]", system.state_names()[j]),
        Input::Param(j) => crate::names::Wrt::param_label(&system.param_names()[j]),
        Input::Time => "t".to_string(),
    }
}

fn inputs(n: usize, np: usize) -> impl Iterator<Item = Input> {
    (0..n)
        .map(Input::State)
        .chain((0..np).map(Input::Param))
        .chain(std::iter::once(Input::Time))
}

/// A vector-valued piece `(t, x, p) -> out` (a flow rate, a guard value as
/// one entry, a reset).
type Eval<'a> = dyn Fn(f64, &[f64], &[f64], &mut [f64]) + 'a;

/// Richardson-extrapolated central differences of `eval` with respect to
/// `input` at `(t, x, p)`: the derivative of each output, and its estimate.
fn fd_column(
    eval: &Eval<'_>,
    outputs: usize,
    t: f64,
    x: &[f64],
    p: &[f64],
    input: Input,
) -> Vec<(f64, f64)> {
    let base = match input {
        Input::State(j) => x[j],
        Input::Param(j) => p[j],
        Input::Time => t,
    };
    let h = base.abs().max(FD_MIN_SCALE) * FD_RELATIVE_STEP;
    let mut xs = x.to_vec();
    let mut ps = p.to_vec();
    let mut at = |step: f64| {
        let mut tt = t;
        match input {
            Input::State(j) => xs[j] = x[j] + step,
            Input::Param(j) => ps[j] = p[j] + step,
            Input::Time => tt = t + step,
        }
        let mut out = vec![0.0; outputs];
        eval(tt, &xs, &ps, &mut out);
        out
    };
    let (fp, fm, fph, fmh) = (at(h), at(-h), at(0.5 * h), at(-0.5 * h));
    (0..outputs)
        .map(|i| {
            let d1 = (fp[i] - fm[i]) / (2.0 * h);
            let d2 = (fph[i] - fmh[i]) / h;
            let scale = fp[i]
                .abs()
                .max(fm[i].abs())
                .max(fph[i].abs())
                .max(fmh[i].abs());
            let rounding = 8.0 * f64::EPSILON * scale / h;
            ((4.0 * d2 - d1) / 3.0, (d2 - d1).abs() / 3.0 + rounding)
        })
        .collect()
}

/// Reads the partial of output `i` with respect to `input` from a Jacobian
/// laid out as (x: n x n or 1 x n, p, t).
trait PartialsTable {
    fn entry(&self, i: usize, input: Input) -> f64;
}

impl PartialsTable for Partials {
    fn entry(&self, i: usize, input: Input) -> f64 {
        match input {
            Input::State(j) => self.x[(i, j)],
            Input::Param(j) => self.p[(i, j)],
            Input::Time => self.t[i],
        }
    }
}

impl PartialsTable for GuardPartials {
    fn entry(&self, _i: usize, input: Input) -> f64 {
        match input {
            Input::State(j) => self.x[j],
            Input::Param(j) => self.p[j],
            Input::Time => self.t,
        }
    }
}

/// Compares one piece at one point and appends its entries.
#[allow(clippy::too_many_arguments)]
fn compare_piece(
    system: &HybridSystem,
    piece: &str,
    output_name: &dyn Fn(usize) -> String,
    outputs: usize,
    hand: &dyn PartialsTable,
    reference: Option<&dyn PartialsTable>,
    eval: &Eval<'_>,
    point_index: usize,
    point: &PartialsPoint,
    tolerance: f64,
    entries: &mut Vec<PartialsEntry>,
) {
    let (n, np) = (system.state_dim(), system.param_dim());
    for input in inputs(n, np) {
        let fd = match reference {
            Some(_) => None,
            None => Some(fd_column(eval, outputs, point.t, &point.x, &point.p, input)),
        };
        for i in 0..outputs {
            let (reference_value, estimate) = match (reference, &fd) {
                (Some(r), _) => (r.entry(i, input), 0.0),
                (None, Some(fd)) => fd[i],
                (None, None) => unreachable!("one reference is always given"),
            };
            let hand_value = hand.entry(i, input);
            let difference = (hand_value - reference_value).abs();
            let allowed = tolerance * reference_value.abs().max(1.0) + ESTIMATE_WEIGHT * estimate;
            entries.push(PartialsEntry {
                piece: piece.to_string(),
                derivative: format!("d {}/d {}", output_name(i), input_name(system, input)),
                point: point_index,
                hand: hand_value,
                reference: reference_value,
                estimate,
                difference: if difference.is_nan() {
                    f64::INFINITY
                } else {
                    difference
                },
                allowed,
            });
        }
    }
}

fn check(
    system: &HybridSystem,
    reference: Reference<'_>,
    points: &[PartialsPoint],
    tolerance: f64,
) -> Result<PartialsReport, Box<PartialsMismatch>> {
    let (n, np) = (system.state_dim(), system.param_dim());
    let state_names = system.state_names();
    let mut entries = Vec::new();
    for (k, point) in points.iter().enumerate() {
        assert!(
            point.mode < system.modes().len() && point.x.len() == n && point.p.len() == np,
            "partials point {k} does not fit the system (mode index, state or parameter length)"
        );
        let (t, x, p) = (point.t, point.x.as_slice(), point.p.as_slice());
        let mode = &system.modes()[point.mode];

        let mut hand = FlowPartials::zeros(n, np);
        mode.flow.partials(t, x, p, &mut hand);
        let reference_flow = match reference {
            Reference::System(r) => {
                let mut out = FlowPartials::zeros(n, np);
                r.modes()[point.mode].flow.partials(t, x, p, &mut out);
                Some(out)
            }
            Reference::FiniteDifference => None,
        };
        let flow_eval =
            |t: f64, x: &[f64], p: &[f64], out: &mut [f64]| mode.flow.rate(t, x, p, out);
        compare_piece(
            system,
            &format!("flow '{}'", mode.name),
            &|i| format!("f[{}]", state_names[i]),
            n,
            &hand,
            reference_flow.as_ref().map(|r| r as &dyn PartialsTable),
            &flow_eval,
            k,
            point,
            tolerance,
            &mut entries,
        );

        for &index in &mode.outgoing {
            let tr = &system.transitions()[index];
            let mut hand = GuardPartials::zeros(n, np);
            tr.guard.partials(t, x, p, &mut hand);
            let reference_guard = match reference {
                Reference::System(r) => {
                    let mut out = GuardPartials::zeros(n, np);
                    r.transitions()[index].guard.partials(t, x, p, &mut out);
                    Some(out)
                }
                Reference::FiniteDifference => None,
            };
            let guard_eval =
                |t: f64, x: &[f64], p: &[f64], out: &mut [f64]| out[0] = tr.guard.value(t, x, p);
            compare_piece(
                system,
                &format!("guard '{}'", tr.name),
                &|_| "g".to_string(),
                1,
                &hand,
                reference_guard.as_ref().map(|r| r as &dyn PartialsTable),
                &guard_eval,
                k,
                point,
                tolerance,
                &mut entries,
            );

            let mut hand = ResetPartials::zeros(n, np);
            tr.reset.partials(t, x, p, &mut hand);
            let reference_reset = match reference {
                Reference::System(r) => {
                    let mut out = ResetPartials::zeros(n, np);
                    r.transitions()[index].reset.partials(t, x, p, &mut out);
                    Some(out)
                }
                Reference::FiniteDifference => None,
            };
            let reset_eval =
                |t: f64, x: &[f64], p: &[f64], out: &mut [f64]| tr.reset.apply(t, x, p, out);
            compare_piece(
                system,
                &format!("reset '{}'", tr.name),
                &|i| format!("r[{}]", state_names[i]),
                n,
                &hand,
                reference_reset.as_ref().map(|r| r as &dyn PartialsTable),
                &reset_eval,
                k,
                point,
                tolerance,
                &mut entries,
            );
        }
    }
    let by_ratio = |a: &&PartialsEntry, b: &&PartialsEntry| a.ratio().total_cmp(&b.ratio());
    let failures: Vec<PartialsEntry> = entries.iter().filter(|e| !e.passes()).cloned().collect();
    let worst = entries.iter().max_by(by_ratio).cloned();
    match worst {
        Some(worst) if !worst.passes() => {
            let point = points[worst.point].clone();
            Err(Box::new(PartialsMismatch {
                mode: system.modes()[point.mode].name.clone(),
                point,
                worst,
                failures,
                entries_checked: entries.len(),
            }))
        }
        worst => Ok(PartialsReport {
            points: points.len(),
            entries_checked: entries.len(),
            worst,
        }),
    }
}

#[cfg(test)]
mod tests {
    //! A falling body `h' = v, v' = -g` with a floor guard `g = h` and a
    //! bounce `v <- -e v`: partials derived by hand, once right and once with
    //! a sign error in `d f[v]/d param.g` (the true value is -1).
    use super::*;
    use crate::{
        Autodiff, Direction, Flow, FlowFn, FromMode, Guard, GuardFn, Reset, ResetFn, Scalar, ToMode,
    };

    struct Fall {
        sign_error: bool,
    }
    impl Flow for Fall {
        fn rate(&self, _t: f64, x: &[f64], p: &[f64], d: &mut [f64]) {
            d[0] = x[1];
            d[1] = -p[0];
        }
        fn partials(&self, _t: f64, _x: &[f64], _p: &[f64], out: &mut FlowPartials) {
            out.x[(0, 1)] = 1.0;
            out.p[(1, 0)] = if self.sign_error { 1.0 } else { -1.0 };
        }
    }
    struct Floor;
    impl Guard for Floor {
        fn direction(&self) -> Direction {
            Direction::Falling
        }
        fn value(&self, _t: f64, x: &[f64], _p: &[f64]) -> f64 {
            x[0]
        }
        fn partials(&self, _t: f64, _x: &[f64], _p: &[f64], out: &mut GuardPartials) {
            out.x[0] = 1.0;
        }
    }
    struct Bounce;
    impl Reset for Bounce {
        fn apply(&self, _t: f64, x: &[f64], p: &[f64], a: &mut [f64]) {
            a[0] = x[0];
            a[1] = -p[1] * x[1];
        }
        fn partials(&self, _t: f64, x: &[f64], p: &[f64], out: &mut ResetPartials) {
            out.x[(0, 0)] = 1.0;
            out.x[(1, 1)] = -p[1];
            out.p[(1, 1)] = -x[1];
        }
    }

    struct FallFn;
    impl FlowFn for FallFn {
        fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], d: &mut [S]) {
            d[0] = x[1];
            d[1] = -p[0];
        }
    }
    struct FloorFn;
    impl GuardFn for FloorFn {
        fn direction(&self) -> Direction {
            Direction::Falling
        }
        fn value<S: Scalar>(&self, _t: S, x: &[S], _p: &[S]) -> S {
            x[0]
        }
    }
    struct BounceFn;
    impl ResetFn for BounceFn {
        fn apply<S: Scalar>(&self, _t: S, x: &[S], p: &[S], a: &mut [S]) {
            a[0] = x[0];
            a[1] = -p[1] * x[1];
        }
    }

    fn by_hand(sign_error: bool) -> HybridSystem {
        HybridSystem::builder(&["h", "v"], &["g", "e"])
            .mode("flight", Fall { sign_error })
            .transition(
                "bounce",
                FromMode("flight"),
                ToMode("flight"),
                Floor,
                Bounce,
            )
            .build()
            .unwrap()
    }

    fn generic() -> HybridSystem {
        HybridSystem::builder(&["h", "v"], &["g", "e"])
            .mode("flight", Autodiff(FallFn))
            .transition(
                "bounce",
                FromMode("flight"),
                ToMode("flight"),
                Autodiff(FloorFn),
                Autodiff(BounceFn),
            )
            .build()
            .unwrap()
    }

    fn points() -> Vec<PartialsPoint> {
        sample_points_around(1, &[1.0, -0.5], &[9.81, 0.8], 2.0, 4, 3)
    }

    #[test]
    fn right_partials_pass_against_finite_differences_and_dual_numbers() {
        let system = by_hand(false);
        let report = check_partials(&system, &points(), 1e-6).unwrap();
        // Per point: flow 2 x 5, guard 1 x 5, reset 2 x 5 entries (inputs h,
        // v, g, e, t).
        assert_eq!(report.entries_checked, 4 * 25);
        let report = check_partials_against(&system, &generic(), &points(), 1e-14).unwrap();
        assert_eq!(report.worst.unwrap().difference, 0.0);
    }

    #[test]
    fn a_sign_error_is_named() {
        let mismatch = check_partials(&by_hand(true), &points(), 1e-6).unwrap_err();
        assert_eq!(mismatch.worst.name(), "flow 'flight' d f[v]/d param.g");
        assert_eq!(mismatch.worst.hand, 1.0);
        assert!((mismatch.worst.reference + 1.0).abs() < 1e-9);
        assert_eq!(mismatch.failures.len(), 4, "one per point");
        assert!(mismatch.to_string().contains("mode 'flight'"));
        let against = check_partials_against(&by_hand(true), &generic(), &points(), 1e-12);
        assert_eq!(
            against.unwrap_err().worst.name(),
            "flow 'flight' d f[v]/d param.g"
        );
    }

    #[test]
    fn sample_points_are_reproducible_and_stay_near_the_centre() {
        let a = sample_points_around(2, &[1.0, 0.0], &[9.81, 0.0], 3.0, 5, 11);
        assert_eq!(
            a,
            sample_points_around(2, &[1.0, 0.0], &[9.81, 0.0], 3.0, 5, 11)
        );
        assert_ne!(
            a,
            sample_points_around(2, &[1.0, 0.0], &[9.81, 0.0], 3.0, 5, 12)
        );
        assert_eq!(a.len(), 10);
        for p in &a {
            // Bounds from the documented draws: 0.2 max(|v|, 0.5), 20 %,
            // 0.1 for a zero parameter, t in [0, t_end).
            assert!((p.x[0] - 1.0).abs() <= 0.2 && p.x[1].abs() <= 0.1);
            assert!((p.p[0] / 9.81 - 1.0).abs() <= 0.2 && p.p[1].abs() <= 0.1);
            assert!((0.0..3.0).contains(&p.t));
        }
    }
}
