//! The convergence study: the error of the sensitivities against the
//! closed-form references as the solver tightens, for adaptive
//! Dormand-Prince (`rtol = atol = tol`, `tol` from `1e-4` to `1e-12`) and
//! for fixed-step RK4 (`dt` a decreasing fraction of the run length).
//!
//! Each point is one [`Row`] marked [`crate::studies::report::Verdict::Info`]: the
//! largest error over the final-state Jacobian (relative where
//! `|reference| >= 1e-3`, absolute below) against
//! `crates/ia-verify/references/closed_form.json`. Each curve then gets one checked row:
//! it **passes** when its last (tightest) point meets the Jacobian rule of
//! [`crate::studies::checks`] (`1e-7` relative, `1e-9` absolute) and no point is more
//! than [`MAX_RISE`] times worse than the one before or than
//! [`NOISE_FLOOR`] (the error comes down with the tolerance, up to rounding
//! noise once it is at rounding level).
//!
//! ```no_run
//! use ia_verify::convergence::{convergence_rows, ConvergenceOptions};
//! let rows = convergence_rows(&["lif_a"], &ConvergenceOptions::quick());
//! assert!(rows.iter().all(|r| !r.failed()));
//! ```

use crate::references::reference_case;
use crate::studies::checks::Compared;
use crate::studies::report::Row;
use ia_adjoint::{jacobian, Method};
use ia_events::SolverChoice;

/// A point may be at most this many times worse than the one before...
pub const MAX_RISE: f64 = 10.0;

/// ...or than this floor, whichever is larger: below it the error is
/// rounding noise, which need not decrease (it grows with the number of
/// steps).
pub const NOISE_FLOOR: f64 = 1e-10;

/// Reference cases of the study (all of `closed_form.json`).
pub const CASES: &[&str] = &[
    "ball2d_flat_a",
    "ball2d_flat_b",
    "ball2d_bowl_a",
    "lif_a",
    "thermostat_a",
];

/// The solver settings swept.
#[derive(Clone, Debug, PartialEq)]
pub struct ConvergenceOptions {
    /// Dormand-Prince tolerances, loosest first.
    pub dopri5_tolerances: Vec<f64>,
    /// RK4 steps as fractions of the run length, largest first.
    pub rk4_fractions: Vec<f64>,
    /// Sensitivity methods.
    pub methods: Vec<Method>,
}

impl ConvergenceOptions {
    /// The full sweep: `tol` in `1e-4, 1e-6, ..., 1e-12`, `dt / t_end` in
    /// `1e-1 .. 1e-4`, forward and adjoint.
    pub fn full() -> Self {
        Self {
            dopri5_tolerances: vec![1e-4, 1e-6, 1e-8, 1e-10, 1e-12],
            rk4_fractions: vec![1e-1, 1e-2, 1e-3, 1e-4],
            methods: vec![Method::Forward, Method::Adjoint],
        }
    }

    /// The quick sweep (CI): the same tolerances, RK4 down to
    /// `dt / t_end = 1e-3`.
    pub fn quick() -> Self {
        Self {
            rk4_fractions: vec![1e-1, 1e-2, 1e-3],
            ..Self::full()
        }
    }
}

fn method_name(method: Method) -> &'static str {
    match method {
        Method::Forward => "forward",
        Method::ForwardOnStateSteps => "forward_on_state_steps",
        Method::Adjoint => "adjoint",
    }
}

/// The worst entry of the final Jacobian of case `name` with `solver`.
fn worst_entry(name: &str, solver: SolverChoice, method: Method) -> Result<Compared, String> {
    let case = reference_case(name)?;
    let model = ia_models::by_name(&case.model).map_err(|e| e.to_string())?;
    let system = model.system();
    let problem = case
        .problem(model.as_ref(), &system)
        .map_err(|e| e.to_string())?
        .with_solver(solver);
    let sens = jacobian(&problem, method).map_err(|e| e.to_string())?;
    let mut worst: Option<Compared> = None;
    for (i, s) in system.state_names().iter().enumerate() {
        for (j, w) in sens.wrt.iter().enumerate() {
            let Some(r) = case.jacobian.get(s).and_then(|row| row.get(w)) else {
                continue;
            };
            let c = Compared::jacobian(format!("d {s}/d {w}"), sens.final_jacobian[(i, j)], *r);
            let worse = match &worst {
                None => true,
                Some(b) => c.error.is_nan() || c.error > b.error,
            };
            if worse {
                worst = Some(c);
            }
        }
    }
    worst.ok_or_else(|| format!("{name}: no Jacobian entries in the reference"))
}

/// One curve: info rows per point, one checked row for the trend.
fn curve(name: &str, study: &str, method: Method, settings: &[(String, SolverChoice)]) -> Vec<Row> {
    let m = method_name(method);
    let mut rows = Vec::new();
    let mut errors = Vec::new();
    let mut last: Option<Compared> = None;
    for (label, solver) in settings {
        match worst_entry(name, solver.clone(), method) {
            Ok(c) => {
                rows.push(Row::info(
                    study,
                    name,
                    format!("{m}, {label}: worst {}", c.name),
                    c.value,
                    c.reference,
                    c.error,
                ));
                errors.push(c.error);
                last = Some(c);
            }
            Err(e) => {
                rows.push(Row::failure(study, name, format!("{m}, {label}"), e));
                return rows;
            }
        }
    }
    let Some(last) = last else {
        return rows;
    };
    let steady = errors
        .windows(2)
        .all(|w| w[1] <= MAX_RISE * w[0].max(NOISE_FLOOR));
    let first = errors.first().copied().unwrap_or(f64::NAN);
    let mut quantity = format!(
        "{m}: error {first:.1e} at {} -> {:.1e} at {} (trend)",
        settings[0].0,
        last.error,
        settings[settings.len() - 1].0,
    );
    if !steady {
        quantity.push_str(", error rises");
    }
    rows.push(Row::check(
        study,
        name,
        quantity,
        last.value,
        last.reference,
        last.error,
        last.passes() && steady,
    ));
    rows
}

/// The convergence study over `cases` (names in `closed_form.json`).
pub fn convergence_rows(cases: &[&str], options: &ConvergenceOptions) -> Vec<Row> {
    let mut rows = Vec::new();
    for &name in cases {
        let t_end = match reference_case(name) {
            Ok(c) => c.t_end,
            Err(e) => {
                rows.push(Row::failure("convergence", name, "reference case", e));
                continue;
            }
        };
        let dopri: Vec<(String, SolverChoice)> = options
            .dopri5_tolerances
            .iter()
            .map(|&tol| (format!("dopri5 tol={tol:.0e}"), SolverChoice::dopri5(tol)))
            .collect();
        let rk4: Vec<(String, SolverChoice)> = options
            .rk4_fractions
            .iter()
            .map(|&f| {
                let dt = t_end * f;
                (format!("rk4 dt={dt:.0e}"), SolverChoice::Rk4 { dt })
            })
            .collect();
        for &method in &options.methods {
            rows.extend(curve(name, "convergence_dopri5", method, &dopri));
            rows.extend(curve(name, "convergence_rk4", method, &rk4));
        }
    }
    rows
}
