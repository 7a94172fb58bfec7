//! The two naive approaches of the three-ways study, differentiated with dual
//! numbers.
//!
//! The study compares three ways of getting `d x(T) / d theta` for a planar
//! ball bouncing on the ground:
//!
//! 1. [`naive_time_stepping`]: fixed-step RK4; after each step, if the ball is
//!    below the ground and moving into it, apply the reset at the grid point.
//!    Automatic differentiation of this program never sees the event time
//!    move: the reset happens at a grid time that does not depend on the
//!    inputs. On flat ground `x(T)` is `sum_k vx_k h_k` with `vx_k` depending
//!    on `vx_0` and `mu` only, so `d x(T) / d vy_0` is **exactly 0.0**, a
//!    finite, confident and wrong answer (the true value is not 0: the impact
//!    times, where `vx` drops by `mu`, depend on `vy_0`). In the bowl it is
//!    nonzero but still wrong, and does not converge as `dt -> 0`.
//! 2. [`interpolated_crossing`]: the same RK4, but when the guard changes sign
//!    within a step the crossing fraction `theta = g_0 / (g_0 - g_1)` is found by
//!    linear interpolation of the guard between the step ends, the state is
//!    interpolated linearly to that fraction, the reset applied there, and the
//!    rest of the step re-integrated with RK4 from the reset state. Since
//!    `theta` depends on the inputs (it is a dual number here), the derivative
//!    now carries an approximate event-time term; it converges to the exact
//!    one with a `dt`-dependent error, from the interpolation.
//! 3. The event-aware sensitivities of this workspace, checked against
//!    [`crate::references::closed_form`].
//!
//! The flow (`x' = vx`, `y' = vy`, `vx' = 0`, `vy' = -g`) has a solution
//! quadratic in time, which RK4 reproduces exactly: every error of these
//! baselines comes from the way they treat the events, none from the
//! integration between them.
//!
//! States `(x, y, vx, vy)`; parameters `(g, e, mu)` on [`Ground::Flat`],
//! `(g, e, c)` in [`Ground::Bowl`]. Results use the layout of
//! [`crate::references::closed_form::ClosedFormSolution`]: Jacobian rows are the final
//! state entries, columns `"initial.<state>"` then `"param.<p>"`.
//!
//! ```
//! use ia_verify::baselines::{naive_time_stepping, Ground};
//! let sol = naive_time_stepping(Ground::Flat, &[0.0, 1.0, 1.0, 0.0], &[9.81, 0.8, 0.7], 2.0, 1e-3)
//!     .unwrap();
//! // d x(T) / d vy0: exactly zero, which is wrong.
//! assert_eq!(sol.jacobian[0][3], 0.0);
//! ```

use crate::references::closed_form::{ClosedFormModel, BALL2D_BOWL, BALL2D_FLAT};
use ia_core::num_dual::Dual64;
use ia_core::Scalar;
use serde::{Deserialize, Serialize};

/// Most resets applied within one time step by [`interpolated_crossing`]
/// before it gives up (events accumulating within a step).
pub const MAX_RESETS_PER_STEP: usize = 64;

/// The ground the planar ball bounces on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Ground {
    /// `y = 0`; parameters `(g, e, mu)`; reset `vx <- mu vx`, `vy <- -e vy`.
    Flat,
    /// `y = c x^2`; parameters `(g, e, c)`; with
    /// `n = (-2 c x, 1) / |(-2 c x, 1)|` the reset is
    /// `v <- v - (1 + e)(v.n) n`.
    Bowl,
}

impl Ground {
    /// The closed-form model of this ground: `"ball2d-flat"` or `"ball2d-bowl"`.
    pub fn model(self) -> &'static str {
        self.spec().name
    }

    /// The ground of a closed-form model name (`"ball2d-flat"`, `"ball2d-bowl"`;
    /// underscores are accepted for hyphens).
    pub fn from_model(model: &str) -> Result<Self, BaselineError> {
        let normalized = model.replace('_', "-");
        [Ground::Flat, Ground::Bowl]
            .into_iter()
            .find(|ground| ground.model() == normalized)
            .ok_or_else(|| BaselineError::UnknownModel {
                name: model.to_string(),
            })
    }

    /// The closed form of this ground's model: its state, parameter and
    /// column names.
    pub fn spec(self) -> &'static ClosedFormModel {
        match self {
            Ground::Flat => &BALL2D_FLAT,
            Ground::Bowl => &BALL2D_BOWL,
        }
    }

    /// Ground height at `x`: `0` or `c x^2`.
    pub fn height<S: Scalar>(self, x: S, p: &[S]) -> S {
        match self {
            Ground::Flat => S::from(0.0),
            Ground::Bowl => p[2] * x * x,
        }
    }

    /// The guard `y - height(x)`: positive above the ground.
    pub fn guard<S: Scalar>(self, state: &[S; 4], p: &[S]) -> S {
        state[1] - self.height(state[0], p)
    }

    /// The guard's rate along the flow, `vy - height'(x) vx`: negative when
    /// the ball moves into the ground.
    pub fn guard_rate<S: Scalar>(self, state: &[S; 4], p: &[S]) -> S {
        match self {
            Ground::Flat => state[3],
            Ground::Bowl => state[3] - p[2] * state[0] * state[2] * 2.0,
        }
    }

    /// The impact reset; position unchanged.
    pub fn reset<S: Scalar>(self, state: &[S; 4], p: &[S]) -> [S; 4] {
        let [x, y, vx, vy] = *state;
        let e = p[1];
        match self {
            Ground::Flat => [x, y, p[2] * vx, -e * vy],
            Ground::Bowl => {
                // n = (-m, 1)/sqrt(1 + m^2), m = 2 c x:
                // v.n n = (vy - m vx)/(1 + m^2) (-m, 1).
                let m = p[2] * x * 2.0;
                let k = (e + 1.0) * (vy - m * vx) / (m * m + 1.0);
                [x, y, vx + k * m, vy - k]
            }
        }
    }
}

/// One classical RK4 step of the ballistic flow, of length `h`.
pub fn rk4_step<S: Scalar>(state: &[S; 4], p: &[S], h: S) -> [S; 4] {
    let g = p[0];
    let rate = |s: &[S; 4]| [s[2], s[3], S::from(0.0), -g];
    let add = |s: &[S; 4], k: &[S; 4], f: S| std::array::from_fn(|i| s[i] + k[i] * f);
    let half = h * 0.5;
    let k1 = rate(state);
    let k2 = rate(&add(state, &k1, half));
    let k3 = rate(&add(state, &k2, half));
    let k4 = rate(&add(state, &k3, h));
    std::array::from_fn(|i| state[i] + (k1[i] + (k2[i] + k3[i]) * 2.0 + k4[i]) * (h / 6.0))
}

/// Why a baseline could not run.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BaselineError {
    /// Not a planar-ball model.
    #[error(
        "no baseline for model '{name}'; valid models: {}, {}",
        Ground::Flat.model(),
        Ground::Bowl.model()
    )]
    UnknownModel {
        /// The name given.
        name: String,
    },
    /// The initial state or the parameters have the wrong length.
    #[error("{what} needs {expected} entries, got {found}")]
    DimensionMismatch {
        /// `"initial state"` or `"params"`.
        what: &'static str,
        /// Length required.
        expected: usize,
        /// Length given.
        found: usize,
    },
    /// A step size, end time or value out of range.
    #[error("invalid input: {reason}")]
    InvalidInput {
        /// What is wrong, in words.
        reason: String,
    },
    /// More than [`MAX_RESETS_PER_STEP`] resets within one step.
    #[error("more than {MAX_RESETS_PER_STEP} resets within the step starting at t = {time}")]
    TooManyResets {
        /// Start of the step.
        time: f64,
    },
}

/// A baseline run in any [`Scalar`].
#[derive(Clone, Debug, PartialEq)]
pub struct BaselineTrace<S> {
    /// State at `t_end`.
    pub final_state: [S; 4],
    /// Times at which resets were applied: grid times for
    /// [`naive_time_stepping`], interpolated crossing times for
    /// [`interpolated_crossing`] (real parts).
    pub reset_times: Vec<f64>,
}

/// Final state and Jacobian of a baseline, in the closed-form layout.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BaselineSolution {
    /// `"ball2d-flat"` or `"ball2d-bowl"`.
    pub model: String,
    /// `"naive_time_stepping"` or `"interpolated_crossing"`.
    pub method: String,
    /// The step size.
    pub dt: f64,
    /// State at `t_end`, `(x, y, vx, vy)`.
    pub final_state: Vec<f64>,
    /// See [`BaselineTrace::reset_times`].
    pub reset_times: Vec<f64>,
    /// `d final_state[i] / d wrt[j]`, by dual numbers through the baseline.
    pub jacobian: Vec<Vec<f64>>,
    /// Column labels: `"initial.<state>"` then `"param.<p>"`.
    pub wrt: Vec<String>,
}

/// The baseline methods.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Method {
    /// [`naive_time_stepping`].
    NaiveTimeStepping,
    /// [`interpolated_crossing`].
    InterpolatedCrossing,
}

impl Method {
    /// `"naive_time_stepping"` or `"interpolated_crossing"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::NaiveTimeStepping => "naive_time_stepping",
            Method::InterpolatedCrossing => "interpolated_crossing",
        }
    }
}

/// The step lengths of a grid of step `dt` on `[0, t_end]`: full steps, the
/// last one shortened so that it lands exactly on `t_end` (a remainder below
/// `1e-9 dt` is merged into the previous step instead of making a sliver).
fn grid(t_end: f64, dt: f64) -> (usize, f64) {
    if t_end == 0.0 {
        return (0, 0.0);
    }
    let ratio = t_end / dt;
    let n = if (ratio - ratio.round()).abs() <= 1e-9 * ratio.max(1.0) {
        ratio.round().max(1.0)
    } else {
        ratio.ceil()
    } as usize;
    (n, t_end - (n - 1) as f64 * dt)
}

fn check_inputs<S>(x0: &[S], p: &[S], t_end: f64, dt: f64) -> Result<(), BaselineError> {
    for (what, v, expected) in [("initial state", x0, 4), ("params", p, 3)] {
        if v.len() != expected {
            return Err(BaselineError::DimensionMismatch {
                what,
                expected,
                found: v.len(),
            });
        }
    }
    if !(dt.is_finite() && dt > 0.0) {
        return Err(BaselineError::InvalidInput {
            reason: format!("dt = {dt} must be finite and > 0"),
        });
    }
    if !(t_end.is_finite() && t_end >= 0.0) {
        return Err(BaselineError::InvalidInput {
            reason: format!("t_end = {t_end} must be finite and >= 0"),
        });
    }
    Ok(())
}

/// Baseline (a), generic: fixed-step RK4 with step `dt` (the last step
/// shortened to land on `t_end`); after each step, if the guard is negative
/// and the guard rate negative (moving into the ground), the reset is applied
/// at the grid point, to the state as it is (below the ground).
pub fn naive_time_stepping_trace<S: Scalar>(
    ground: Ground,
    x0: &[S],
    p: &[S],
    t_end: f64,
    dt: f64,
) -> Result<BaselineTrace<S>, BaselineError> {
    check_inputs(x0, p, t_end, dt)?;
    let (steps, last) = grid(t_end, dt);
    let mut state: [S; 4] = std::array::from_fn(|i| x0[i]);
    let mut reset_times = Vec::new();
    for k in 0..steps {
        let h = if k + 1 == steps { last } else { dt };
        state = rk4_step(&state, p, S::from(h));
        if ground.guard(&state, p).re() < 0.0 && ground.guard_rate(&state, p).re() < 0.0 {
            state = ground.reset(&state, p);
            reset_times.push(if k + 1 == steps {
                t_end
            } else {
                (k + 1) as f64 * dt
            });
        }
    }
    Ok(BaselineTrace {
        final_state: state,
        reset_times,
    })
}

/// Baseline (b), generic: the RK4 of (a), but a step over which the guard
/// falls from `g_0 >= 0` to `g_1 < 0` is split at the linearly interpolated
/// crossing fraction `theta = g_0 / (g_0 - g_1)`: the state there is
/// `x_0 + theta (x_1 - x_0)`, the reset is applied to it, and the remaining
/// `(1 - theta) h` of the step is integrated with RK4 from the reset state
/// (and split again should the guard fall through zero once more, at most
/// [`MAX_RESETS_PER_STEP`] times). `theta` is a function of the inputs, so
/// dual numbers carry an approximate event-time sensitivity through it.
pub fn interpolated_crossing_trace<S: Scalar>(
    ground: Ground,
    x0: &[S],
    p: &[S],
    t_end: f64,
    dt: f64,
) -> Result<BaselineTrace<S>, BaselineError> {
    check_inputs(x0, p, t_end, dt)?;
    let (steps, last) = grid(t_end, dt);
    let mut state: [S; 4] = std::array::from_fn(|i| x0[i]);
    let mut reset_times = Vec::new();
    for k in 0..steps {
        let t0 = k as f64 * dt;
        let h = if k + 1 == steps { last } else { dt };
        let mut remaining = S::from(h);
        let mut elapsed = 0.0;
        let mut resets = 0;
        loop {
            let next = rk4_step(&state, p, remaining);
            let g0 = ground.guard(&state, p);
            let g1 = ground.guard(&next, p);
            if !(g0.re() >= 0.0 && g1.re() < 0.0) {
                state = next;
                break;
            }
            if resets == MAX_RESETS_PER_STEP {
                return Err(BaselineError::TooManyResets { time: t0 });
            }
            resets += 1;
            let theta = g0 / (g0 - g1);
            let crossing: [S; 4] = std::array::from_fn(|i| state[i] + (next[i] - state[i]) * theta);
            elapsed += theta.re() * remaining.re();
            reset_times.push(t0 + elapsed);
            state = ground.reset(&crossing, p);
            remaining *= -theta + 1.0;
        }
    }
    Ok(BaselineTrace {
        final_state: state,
        reset_times,
    })
}

/// Runs a baseline with `f64` and once per input direction with [`Dual64`].
fn differentiate(
    method: Method,
    ground: Ground,
    x0: &[f64],
    p: &[f64],
    t_end: f64,
    dt: f64,
) -> Result<BaselineSolution, BaselineError> {
    fn run<S: Scalar>(
        method: Method,
        ground: Ground,
        x0: &[S],
        p: &[S],
        t_end: f64,
        dt: f64,
    ) -> Result<BaselineTrace<S>, BaselineError> {
        match method {
            Method::NaiveTimeStepping => naive_time_stepping_trace(ground, x0, p, t_end, dt),
            Method::InterpolatedCrossing => interpolated_crossing_trace(ground, x0, p, t_end, dt),
        }
    }
    let primal = run(method, ground, x0, p, t_end, dt)?;
    let n = x0.len();
    let cols = n + p.len();
    let mut jacobian = vec![vec![0.0; cols]; 4];
    for j in 0..cols {
        let seed = |i: usize, v: f64| Dual64::new(v, if i == j { 1.0 } else { 0.0 });
        let xd: Vec<Dual64> = x0.iter().enumerate().map(|(i, &v)| seed(i, v)).collect();
        let pd: Vec<Dual64> = p.iter().enumerate().map(|(i, &v)| seed(n + i, v)).collect();
        let dual = run(method, ground, &xd, &pd, t_end, dt)?;
        for (row, v) in jacobian.iter_mut().zip(&dual.final_state) {
            row[j] = v.eps;
        }
    }
    Ok(BaselineSolution {
        model: ground.model().to_string(),
        method: method.as_str().to_string(),
        dt,
        final_state: primal.final_state.to_vec(),
        reset_times: primal.reset_times,
        jacobian,
        wrt: ground.spec().wrt(),
    })
}

/// Baseline (a), [`naive_time_stepping_trace`], with its dual-number Jacobian.
/// `initial_state = [x, y, vx, vy]`; `params = [g, e, mu]` (flat) or
/// `[g, e, c]` (bowl).
pub fn naive_time_stepping(
    ground: Ground,
    initial_state: &[f64],
    params: &[f64],
    t_end: f64,
    dt: f64,
) -> Result<BaselineSolution, BaselineError> {
    differentiate(
        Method::NaiveTimeStepping,
        ground,
        initial_state,
        params,
        t_end,
        dt,
    )
}

/// Baseline (b), [`interpolated_crossing_trace`], with its dual-number
/// Jacobian; arguments as [`naive_time_stepping`].
pub fn interpolated_crossing(
    ground: Ground,
    initial_state: &[f64],
    params: &[f64],
    t_end: f64,
    dt: f64,
) -> Result<BaselineSolution, BaselineError> {
    differentiate(
        Method::InterpolatedCrossing,
        ground,
        initial_state,
        params,
        t_end,
        dt,
    )
}

/// Either baseline by [`Method`].
pub fn baseline(
    method: Method,
    ground: Ground,
    initial_state: &[f64],
    params: &[f64],
    t_end: f64,
    dt: f64,
) -> Result<BaselineSolution, BaselineError> {
    differentiate(method, ground, initial_state, params, t_end, dt)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    /// Reference: the messages of the hand-written `Display` this derive
    /// replaced, copied from it.
    #[rstest]
    #[case::unknown(
        BaselineError::UnknownModel { name: "x".into() },
        "no baseline for model 'x'; valid models: ball2d-flat, ball2d-bowl"
    )]
    #[case::dimension(
        BaselineError::DimensionMismatch { what: "params", expected: 3, found: 2 },
        "params needs 3 entries, got 2"
    )]
    #[case::invalid(
        BaselineError::InvalidInput { reason: "dt = 0".into() },
        "invalid input: dt = 0"
    )]
    #[case::resets(
        BaselineError::TooManyResets { time: 0.5 },
        "more than 64 resets within the step starting at t = 0.5"
    )]
    fn messages_are_unchanged(#[case] error: BaselineError, #[case] expected: &str) {
        assert_eq!(error.to_string(), expected);
    }

    #[test]
    fn grounds_name_their_registry_models() {
        for ground in [Ground::Flat, Ground::Bowl] {
            assert_eq!(Ground::from_model(ground.model()), Ok(ground));
            assert_eq!(
                Ground::from_model(&ground.model().replace('-', "_")),
                Ok(ground)
            );
        }
        assert_eq!(Ground::Flat.model(), "ball2d-flat");
        assert_eq!(Ground::Bowl.model(), "ball2d-bowl");
        assert!(Ground::from_model("ball1d").is_err());
    }

    #[test]
    fn grid_lands_on_t_end() {
        assert_eq!(grid(2.0, 1e-3).0, 2000);
        assert!((grid(2.0, 1e-3).1 - 1e-3).abs() < 1e-12);
        let (n, last) = grid(1.0, 0.3);
        assert_eq!(n, 4);
        assert!((3.0 * 0.3 + last - 1.0).abs() < 1e-15);
        assert_eq!(grid(0.0, 0.1), (0, 0.0));
    }

    #[test]
    fn rk4_is_exact_for_ballistic_flight() {
        let s: [f64; 4] = rk4_step(&[0.0, 1.0, 0.5, 2.0], &[9.81, 0.0, 0.0], 0.3);
        assert!((s[0] - 0.15).abs() < 1e-15);
        assert!((s[1] - (1.0 + 0.6 - 0.5 * 9.81 * 0.09)).abs() < 1e-15);
        assert!((s[3] - (2.0 - 9.81 * 0.3)).abs() < 1e-15);
    }

    #[test]
    fn bowl_reset_reverses_normal_velocity_times_e() {
        let p = [9.81, 0.6, 0.5_f64];
        let s = [0.4, 0.08, 1.0, -2.0_f64];
        let after = Ground::Bowl.reset(&s, &p);
        let before_rate = Ground::Bowl.guard_rate(&s, &p);
        let after_rate = Ground::Bowl.guard_rate(&after, &p);
        assert!((after_rate + 0.6 * before_rate).abs() < 1e-14);
        // Tangential velocity (along (1, m)) is unchanged.
        let m = 2.0 * 0.5 * 0.4;
        let tangential = |v: &[f64; 4]| v[2] + m * v[3];
        assert!((tangential(&after) - tangential(&s)).abs() < 1e-14);
    }
}
