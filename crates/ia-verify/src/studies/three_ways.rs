//! The three-ways study: `d x(T) / d vy0` of a planar ball bouncing on flat
//! ground (`ball2d_flat_a`) and in a parabolic bowl (`ball2d_bowl_a`), by
//!
//! * **(a)** naive time-stepping, differentiated with dual numbers
//!   ([`crate::studies::baselines::naive_time_stepping`]): exactly 0 on flat ground,
//!   a nonzero wrong value in the bowl, at every `dt`;
//! * **(b)** the interpolated crossing ([`crate::studies::baselines::interpolated_crossing`]):
//!   converges, with a `dt`-dependent error;
//! * **(c)** impact-adjoint ([`ia_adjoint::jacobian`], [`Method::Adjoint`]),
//!   both with RK4 at the same `dt` (RK4 is exact on ballistic flight, so
//!   the result is the closed form up to rounding at every `dt`) and with
//!   Dormand-Prince at `rtol = atol = 1e-12` (independent of `dt`; repeated
//!   at every `dt` so that it draws a line).
//!
//! The reference is the exact derivative of the closed form
//! ([`crate::references::closed_form`]). Each [`ThreeWaysPoint`] records the value, the
//! absolute and relative errors of `d x(T)/d vy0` and the largest absolute
//! error over the whole gradient of `x(T)` (the column layout of the JAX
//! peer's table in `benches/peers/`).
//!
//! Verdicts ([`ThreeWaysPoint::verdict`]): (a) must give exactly `0.0` on
//! flat ground and be off by more than [`NAIVE_MIN_ERROR`] (relative) in the
//! bowl; (c) must meet the Jacobian rule of [`crate::studies::checks`]
//! (`1e-7` relative); (b)'s points are information, and one row per case
//! checks that (b)'s error at the smallest `dt` is below its error at the
//! largest.

use crate::references::closed_form::ClosedFormSolution;
use crate::references::{reference_case, reference_error};
use crate::studies::baselines::{baseline, Ground, Method as Baseline};
use crate::studies::checks::JACOBIAN_RELATIVE;
use crate::studies::report::{Row, Verdict};
use ia_adjoint::{jacobian, Method};
use ia_events::SolverChoice;
use serde::{Deserialize, Serialize};

/// The cases of the study.
pub const CASES: &[&str] = &["ball2d_flat_a", "ball2d_bowl_a"];

/// The step sizes of the full study.
pub const DTS: &[f64] = &[1e-2, 1e-3, 1e-4, 1e-5];

/// The step sizes of the quick study (CI).
pub const QUICK_DTS: &[f64] = &[1e-2, 1e-3, 1e-4];

/// (a) in the bowl must be off by more than this (relative): a wrong answer,
/// not a rounding difference.
pub const NAIVE_MIN_ERROR: f64 = 1e-3;

/// The quantity studied: `d x(T) / d vy0`.
pub const QUANTITY: (&str, &str) = ("x", "initial.vy");

/// The four ways, in plotting order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Way {
    /// (a) naive time-stepping with RK4 at `dt`.
    NaiveTimeStepping,
    /// (b) interpolated crossing with RK4 at `dt`.
    InterpolatedCrossing,
    /// (c) impact-adjoint with RK4 at `dt`.
    ImpactAdjointRk4,
    /// (c) impact-adjoint with Dormand-Prince at `rtol = atol = 1e-12`.
    ImpactAdjointDopri5,
}

impl Way {
    /// All four.
    pub const ALL: [Way; 4] = [
        Way::NaiveTimeStepping,
        Way::InterpolatedCrossing,
        Way::ImpactAdjointRk4,
        Way::ImpactAdjointDopri5,
    ];

    /// Machine name (`naive_time_stepping`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Way::NaiveTimeStepping => "naive_time_stepping",
            Way::InterpolatedCrossing => "interpolated_crossing",
            Way::ImpactAdjointRk4 => "impact_adjoint_rk4",
            Way::ImpactAdjointDopri5 => "impact_adjoint_dopri5",
        }
    }

    /// Label for tables and legends.
    pub fn label(self) -> &'static str {
        match self {
            Way::NaiveTimeStepping => "(a) naive time-stepping (RK4, reset at grid point)",
            Way::InterpolatedCrossing => "(b) interpolated crossing (RK4)",
            Way::ImpactAdjointRk4 => "(c) impact-adjoint, RK4 at dt",
            Way::ImpactAdjointDopri5 => "(c) impact-adjoint, dopri5 tol=1e-12",
        }
    }
}

/// One point of the study.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ThreeWaysPoint {
    /// Reference case (`ball2d_flat_a`, `ball2d_bowl_a`).
    pub case: String,
    /// The way.
    pub method: Way,
    /// Step size (for dopri5: the `dt` of the column it is repeated in).
    pub dt: f64,
    /// `"d x(T)/d vy0"`.
    pub quantity: String,
    /// Its value.
    pub value: f64,
    /// Its exact value (closed form).
    pub reference: f64,
    /// `|value - reference|`.
    pub abs_error: f64,
    /// `|value - reference| / |reference|`.
    pub rel_error: f64,
    /// Largest absolute error over the gradient of `x(T)` (every initial
    /// state entry and parameter).
    pub max_abs_error_gradient: f64,
    /// Whether the point behaves as the study documents (`info` for (b)).
    pub verdict: Verdict,
}

impl ThreeWaysPoint {
    /// The verdict rule of the module docs.
    pub fn verdict(case: &str, method: Way, value: f64, rel_error: f64) -> Verdict {
        match method {
            Way::NaiveTimeStepping if case.contains("flat") => Verdict::from_check(value == 0.0),
            Way::NaiveTimeStepping => {
                Verdict::from_check(value != 0.0 && rel_error > NAIVE_MIN_ERROR)
            }
            Way::InterpolatedCrossing => Verdict::Info,
            Way::ImpactAdjointRk4 | Way::ImpactAdjointDopri5 => {
                Verdict::from_check(rel_error <= JACOBIAN_RELATIVE)
            }
        }
    }
}

/// The row of the gradient of `x(T)`: `(value of d x/d vy0, max abs error over the row)`.
fn x_row_errors(
    value_of: &dyn Fn(&str) -> Option<f64>,
    reference: &ClosedFormSolution,
) -> Result<(f64, f64), String> {
    let (state, wrt) = QUANTITY;
    let i = reference
        .state_index(state)
        .ok_or("no x in the closed form")?;
    let mut worst: f64 = 0.0;
    for (j, w) in reference.wrt.iter().enumerate() {
        let v = value_of(w).ok_or_else(|| format!("no column {w}"))?;
        let e = (v - reference.jacobian[i][j]).abs();
        worst = if e.is_nan() { f64::NAN } else { worst.max(e) };
    }
    Ok((value_of(wrt).ok_or("no column initial.vy")?, worst))
}

/// The study on `case` at the step sizes `dts`.
pub fn three_ways_case(case_name: &str, dts: &[f64]) -> Result<Vec<ThreeWaysPoint>, String> {
    let case = reference_case(case_name)?;
    let model = ia_models::by_name(&case.model).map_err(|e| e.to_string())?;
    let ground = Ground::from_model(&case.model).map_err(|e| e.to_string())?;
    let system = model.system();
    let problem = case
        .problem(model.as_ref(), &system)
        .map_err(|e| e.to_string())?;
    let (x0, p) = (problem.initial_state.clone(), problem.params.clone());
    let reference =
        crate::studies::checks::closed_form_of(model.as_ref(), &x0, &p, None, case.t_end)?;
    let (state, wrt) = QUANTITY;
    let exact = reference
        .jacobian_entry(state, wrt)
        .ok_or("no d x/d vy0 in the closed form")?;
    let quantity = "d x(T)/d vy0".to_string();
    let point = |method: Way, dt: f64, value: f64, max_abs: f64| {
        let rel_error = reference_error(value, exact, 0.0);
        ThreeWaysPoint {
            case: case_name.to_string(),
            method,
            dt,
            quantity: quantity.clone(),
            value,
            reference: exact,
            abs_error: (value - exact).abs(),
            rel_error,
            max_abs_error_gradient: max_abs,
            verdict: ThreeWaysPoint::verdict(case_name, method, value, rel_error),
        }
    };
    let ours = |solver: SolverChoice| -> Result<(f64, f64), String> {
        let sens = jacobian(&problem.clone().with_solver(solver), Method::Adjoint)
            .map_err(|e| e.to_string())?;
        let i = system.state_index(state).map_err(|e| e.to_string())?;
        x_row_errors(
            &|w| {
                let j = sens.wrt.iter().position(|c| c == w)?;
                Some(sens.final_jacobian[(i, j)])
            },
            &reference,
        )
    };
    let dopri5 = ours(SolverChoice::dopri5(1e-12))?;
    let mut points = Vec::new();
    for &dt in dts {
        for (way, kind) in [
            (Way::NaiveTimeStepping, Baseline::NaiveTimeStepping),
            (Way::InterpolatedCrossing, Baseline::InterpolatedCrossing),
        ] {
            let sol = baseline(kind, ground, &x0, &p, case.t_end, dt).map_err(|e| e.to_string())?;
            let i = reference.state_index(state).ok_or("no x")?;
            let (value, max_abs) = x_row_errors(
                &|w| {
                    let j = sol.wrt.iter().position(|c| c == w)?;
                    Some(sol.jacobian[i][j])
                },
                &reference,
            )?;
            points.push(point(way, dt, value, max_abs));
        }
        let (value, max_abs) = ours(SolverChoice::Rk4 { dt })?;
        points.push(point(Way::ImpactAdjointRk4, dt, value, max_abs));
        points.push(point(Way::ImpactAdjointDopri5, dt, dopri5.0, dopri5.1));
    }
    Ok(points)
}

/// The study on [`CASES`] at `dts`; `progress` hears of each case.
pub fn three_ways(
    dts: &[f64],
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<ThreeWaysPoint>, String> {
    let mut points = Vec::new();
    for case in CASES {
        progress(case);
        points.extend(three_ways_case(case, dts)?);
    }
    Ok(points)
}

/// Table rows of the study: one per point, and per case one checked row for
/// (b)'s convergence. The error column is the relative error.
pub fn three_ways_rows(points: &[ThreeWaysPoint]) -> Vec<Row> {
    let study = "three_ways";
    let mut rows: Vec<Row> = points
        .iter()
        .map(|pt| {
            let note = match (pt.method, pt.case.contains("flat")) {
                (Way::NaiveTimeStepping, true) => ", expected exactly 0 (wrong)",
                (Way::NaiveTimeStepping, false) => ", expected nonzero and wrong",
                (Way::InterpolatedCrossing, _) => "",
                _ => ", expected exact",
            };
            Row {
                study: study.to_string(),
                case: pt.case.clone(),
                quantity: format!(
                    "{} {}, dt={:.0e}{note}",
                    pt.quantity,
                    pt.method.as_str(),
                    pt.dt
                ),
                value: pt.value,
                reference: pt.reference,
                error: pt.rel_error,
                verdict: pt.verdict,
            }
        })
        .collect();
    for case in CASES {
        let b: Vec<&ThreeWaysPoint> = points
            .iter()
            .filter(|p| p.case == *case && p.method == Way::InterpolatedCrossing)
            .collect();
        let (Some(coarse), Some(fine)) = (
            b.iter().max_by(|x, y| x.dt.total_cmp(&y.dt)),
            b.iter().min_by(|x, y| x.dt.total_cmp(&y.dt)),
        ) else {
            continue;
        };
        let ok = fine.rel_error < coarse.rel_error && fine.rel_error > 0.0;
        rows.push(Row::check(
            study,
            *case,
            format!(
                "{} interpolated_crossing converges with dt: rel error {:.1e} at dt={:.0e} -> {:.1e} at dt={:.0e}",
                fine.quantity, coarse.rel_error, coarse.dt, fine.rel_error, fine.dt
            ),
            fine.value,
            fine.reference,
            fine.rel_error,
            ok,
        ));
    }
    rows
}
