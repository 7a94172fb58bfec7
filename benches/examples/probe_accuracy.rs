//! The adjoint's accuracy against the forward pass's (issue 28, item 5):
//! for each stiff problem of `crates/ia-verify/references/stiff/`, each
//! adaptive method and each tolerance, the normwise relative error
//! (`max |a - b| / max |b|`, as `crates/ia-verify/tests/stiff.rs`) of the
//! forward pass's and the adjoint's final Jacobians and event-time
//! gradients against the problem's mpmath reference
//! (`<stem>.reference.json`, computed by `references.py`), with the steps
//! each took.
//!
//! ```text
//! cargo run --release -p ia-benches --example probe_accuracy -- drug dopri5 1e-8 1e-10
//! cargo run --release -p ia-benches --example probe_accuracy -- all all 1e-6 1e-10
//! ```
//!
//! Arguments: the problem (`drug`, `ball_kelvin_voigt`, `relay`,
//! `relay_slow`, `heated_rod` or `all`), the method (`dopri5`, `dop853`,
//! `trbdf2`, `kvaerno3`, `kvaerno5` or `all`), the loosest and the
//! tightest tolerance (rtol = atol, by decades; default 1e-6 to 1e-10),
//! and optionally the number of derivative probes (default: the automatic
//! choice). Prints one line a case: `ok` where the adjoint's error is at
//! most the forward pass's (the larger of the Jacobian's and the
//! event-time gradients' errors), `same` where not but the taped run was
//! redone on the forward pass's steps (`ia_adjoint::probe`: the forward
//! pass transposed, within 1e-10 of it normwise: `gap`, the distance
//! between the two), `OVER` otherwise; with the taped run's steps, its
//! rejected steps, those the stiffness test counted stiff, and whether it
//! was redone with a probe per input (after how many steps of the first
//! run). With `PA_COLUMNS` set
//! in the environment, each run's Jacobian error by column (normwise, over
//! the largest reference entry) and the column's largest entry. With
//! `PA_MAX_STEP` set to a step size, the runs take no longer step (the
//! explicit stepper holds its steps inside its stability boundary by
//! itself once a step is rejected, `ia_events::stiffness`; the switch
//! caps them from the first step).

use ia_adjoint::{jacobian, Method, Sensitivities};
use ia_benches::stiff::{normwise, solver, METHODS, PROBLEMS};
use ia_equations::EquationModel;
use ia_events::Problem;
use ia_models::Model;
use serde_json::Value;

/// The Jacobian's and the event-time gradients' errors against the
/// reference, `None` if the run fired other events than the reference's.
fn errors(run: &Sensitivities, names: &[&str], reference: &Value) -> Option<(f64, f64)> {
    let events = reference["events"].as_array().expect("the events");
    if run.trajectory.events.len() != events.len() {
        return None;
    }
    let (mut jac, mut jac_ref, mut grad, mut grad_ref) = (vec![], vec![], vec![], vec![]);
    for (column, wrt) in run.wrt.iter().enumerate() {
        for (row, name) in names.iter().enumerate() {
            jac.push(run.final_jacobian[(row, column)]);
            jac_ref.push(reference["jacobian"][name][wrt.as_str()].as_f64()?);
        }
        for (k, event) in events.iter().enumerate() {
            grad.push(run.event_time_gradients[(k, column)]);
            grad_ref.push(event["time_gradient"][wrt.as_str()].as_f64()?);
        }
    }
    if std::env::var("PA_COLUMNS").is_ok() {
        let scale = jac_ref.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let n = names.len();
        let cols: Vec<String> = run
            .wrt
            .iter()
            .enumerate()
            .map(|(c, w)| {
                let e = (0..n).fold(0.0f64, |m, r| {
                    m.max((jac[c * n + r] - jac_ref[c * n + r]).abs())
                });
                let s = (0..n).fold(0.0f64, |m, r| m.max(jac_ref[c * n + r].abs()));
                format!("{w}:{:.1e}(|{:.1e}|)", e / scale, s)
            })
            .collect();
        println!("  {}", cols.join(" "));
    }
    Some((normwise(&jac, &jac_ref), normwise(&grad, &grad_ref)))
}

/// The normwise distance between the forward pass's and the adjoint's
/// final Jacobians and event-time gradients (the larger), over the
/// reference's largest entries, as [`errors`] measures.
fn gap(f: &Sensitivities, a: &Sensitivities, names: &[&str], reference: &Value) -> f64 {
    let events = reference["events"].as_array().expect("the events");
    let (mut jac, mut jac_ref, mut grad, mut grad_ref) = (vec![], vec![], vec![], vec![]);
    for (column, wrt) in f.wrt.iter().enumerate() {
        for (row, name) in names.iter().enumerate() {
            jac.push(a.final_jacobian[(row, column)] - f.final_jacobian[(row, column)]);
            jac_ref.push(
                reference["jacobian"][name][wrt.as_str()]
                    .as_f64()
                    .unwrap_or(0.0),
            );
        }
        for (k, event) in events.iter().enumerate() {
            grad.push(a.event_time_gradients[(k, column)] - f.event_time_gradients[(k, column)]);
            grad_ref.push(event["time_gradient"][wrt.as_str()].as_f64().unwrap_or(0.0));
        }
    }
    // `diff / scale` of the reference's largest entry (`normwise` of the
    // differences against zeros, rescaled).
    let scaled = |d: &[f64], r: &[f64]| {
        let scale = r.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let diff = d.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        if scale == 0.0 {
            0.0
        } else {
            diff / scale
        }
    };
    scaled(&jac, &jac_ref).max(scaled(&grad, &grad_ref))
}

/// `method` at `rtol = atol = tol` ([`solver`]), its steps at most
/// `max_step` when given.
fn solver_with_max_step(
    method: &str,
    tol: f64,
    t_end: f64,
    max_step: Option<f64>,
) -> ia_events::SolverChoice {
    let Some(max_step) = max_step else {
        return solver(method, tol, t_end).unwrap_or_else(|e| panic!("{e}"));
    };
    let value =
        serde_json::json!({"method": method, "rtol": tol, "atol": tol, "max_step": max_step});
    ia_scenario::solver::read_solver(&value, t_end).unwrap_or_else(|e| panic!("{e}"))
}

/// Forward and adjoint on the same steps agree to this, normwise (issue
/// 28's target for transposes on the same steps).
const SAME_STEPS: f64 = 1e-10;

fn main() {
    let mut args = std::env::args().skip(1);
    let which = args.next().unwrap_or_else(|| "all".into());
    let method = args.next().unwrap_or_else(|| "all".into());
    let loose: f64 = args
        .next()
        .map_or(1e-6, |a| a.parse().expect("a tolerance"));
    let tight: f64 = args
        .next()
        .map_or(1e-10, |a| a.parse().expect("a tolerance"));
    let probes: Option<usize> = args.next().map(|a| a.parse().expect("a probe count"));
    let max_step: Option<f64> = std::env::var("PA_MAX_STEP")
        .ok()
        .map(|m| m.parse().expect("PA_MAX_STEP: a step size"));
    let methods: Vec<&str> = if method == "all" {
        METHODS.to_vec()
    } else {
        vec![method.as_str()]
    };
    let mut over = 0;
    for &(stem, model, reference) in PROBLEMS {
        if which != "all" && which != stem || which == "all" && stem == "heated_rod" {
            continue;
        }
        let reference: Value = serde_json::from_str(reference).expect("the reference");
        let model = EquationModel::from_json_str(model).expect("the model");
        let spec = model.spec();
        let names: Vec<&str> = spec.states.iter().map(|s| s.name.as_str()).collect();
        let system = model.system();
        let t_end = reference["t_end"].as_f64().expect("t_end");
        for &method in &methods {
            let mut tol = loose;
            while tol >= tight * 0.99 {
                let problem =
                    Problem::new(&system, spec.default_state(), spec.default_params(), t_end)
                        .with_mode(reference["initial_mode"].as_str().expect("initial_mode"))
                        .expect("the initial mode")
                        .with_solver(solver_with_max_step(method, tol, t_end, max_step))
                        .with_derivative_probes(probes);
                let forward = jacobian(&problem, Method::Forward);
                let adjoint = jacobian(&problem, Method::Adjoint);
                match (forward, adjoint) {
                    (Ok(f), Ok(a)) => match (
                        errors(&f, &names, &reference),
                        errors(&a, &names, &reference),
                    ) {
                        (Some((fj, fg)), Some((aj, ag))) => {
                            let gap = gap(&f, &a, &names, &reference);
                            let (fe, ae) = (fj.max(fg), aj.max(ag));
                            // A taped run redone on the forward pass's steps
                            // is the forward pass transposed: the same
                            // derivative to rounding (issue 28's 1e-10).
                            let same = a.trajectory.stats.redone_steps > 0
                                && a.trajectory.stats.steps == f.trajectory.stats.steps
                                && gap <= SAME_STEPS;
                            let verdict = if ae <= fe {
                                "ok"
                            } else if same {
                                "same"
                            } else {
                                "OVER"
                            };
                            if verdict == "OVER" {
                                over += 1;
                            }
                            println!(
                                "{stem:18} {method:8} {tol:.0e}  forward {fj:.2e} {fg:.2e} ({} steps)  adjoint {aj:.2e} {ag:.2e} ({} taped, {} rejected, {} stiff{})  gap {gap:.1e}  ratio {:.4} {verdict}",
                                f.trajectory.stats.steps,
                                a.trajectory.stats.steps,
                                a.trajectory.stats.rejected_steps,
                                a.trajectory.stats.stiff_steps,
                                match a.trajectory.stats.redone_steps {
                                    0 => String::new(),
                                    first => format!(", redone after {first}"),
                                },
                                ae / fe
                            );
                        }
                        _ => println!("{stem:18} {method:8} {tol:.0e}  other events"),
                    },
                    (f, a) => println!(
                        "{stem:18} {method:8} {tol:.0e}  failed: {:?} {:?}",
                        f.err(),
                        a.err()
                    ),
                }
                tol /= 10.0;
            }
        }
    }
    println!("cases over: {over}");
}
