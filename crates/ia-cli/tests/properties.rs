//! Property tests that keep hunting for bad-input bugs (issue 10): scenarios
//! drawn for every ready model, inside and outside the valid ranges, run
//! in-process through `ia_cli::simulate` and `ia_cli::gradient`.
//!
//! References: the valid ranges are the model's rules (`ia_models::rules`, the
//! table the command line enforces) and its defaults (`ia_models` catalogue);
//! the error form and kinds are the ones the `ia_cli` crate documentation
//! promises; forward and adjoint sensitivities are two independent
//! computations of the same derivatives, so each is the other's reference:
//! on the same steps (the `rk4` draws, and the library's
//! `Method::ForwardOnStateSteps` for `dopri5`) they agree to rounding, so
//! to 1e-8 relative; the command line's forward method on `dopri5` steps
//! its own way (its error control covers the sensitivities), and agrees
//! with the adjoint to the solver's tolerance, so only its event count is
//! compared.
//!
//! The seed is fixed so that CI runs the same cases every time; the case
//! counts keep the file to a few seconds.

use ia_adjoint::Method;
use ia_cli::{adjoint_solver, CliError, GradientMethod, Scenario};
use ia_models::Rule;
use nalgebra::DMatrix;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use serde_json::{json, Map, Value};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The documented error kinds (`ia_cli` crate docs, "Errors and exit
/// status"), and `dimension_mismatch` of the library.
const KINDS: [&str; 13] = [
    "malformed_json",
    "invalid_scenario",
    "unknown_name",
    "invalid_option",
    "io",
    "zeno",
    "grazing",
    "step_size_underflow",
    "guard_violated_at_start",
    "event_location",
    "non_finite",
    "unsupported",
    "dimension_mismatch",
];

/// Values outside any physical range, or at its edge.
const EXTREMES: [f64; 14] = [
    0.0,
    -0.0,
    -1.0,
    1e308,
    -1e308,
    5e-324,
    -5e-324,
    1e-16,
    1e16,
    2.0,
    -1e-300,
    1e-300,
    std::f64::consts::FRAC_PI_2,
    1.0,
];

fn config(cases: u32) -> Config {
    Config {
        cases,
        rng_seed: RngSeed::Fixed(10),
        failure_persistence: None,
        ..Config::default()
    }
}

/// A value that satisfies `rule`, near `default` (the draw `u` in [-1, 1]).
fn valid_value(rule: Option<Rule>, default: f64, u: f64) -> f64 {
    let x = if default == 0.0 {
        0.05 * u
    } else {
        default * (1.0 + 0.1 * u)
    };
    match rule {
        Some(Rule::UnitInterval) | Some(Rule::PositiveUnit) => x.clamp(0.05, 1.0),
        Some(Rule::Positive) | Some(Rule::AcuteAngle) => x.abs().max(1e-3),
        Some(Rule::NonNegative) => x.abs(),
        Some(Rule::InRun) => x.abs().max(1e-3),
        None => x,
    }
}

fn rule_of(model: &str, param: &str) -> Option<Rule> {
    ia_models::sized(model, None)
        .expect("a catalogue model")
        .param_rules()
        .iter()
        .find(|rule| rule.param == param)
        .map(|rule| rule.rule)
}

/// A scenario of model `index`: parameters and initial state near their
/// defaults (draws `u`), `t_end` a fraction of the default run, and a
/// solver; `bad` replaces one entry (parameter, state, `t_end` or solver
/// step) by an extreme value.
fn scenario(index: usize, u: &[f64], bad: Option<(usize, f64)>, rk4: bool) -> Value {
    let catalog = ia_models::catalog();
    let spec = catalog[index % catalog.len()].spec();
    let mut draws = u.iter().copied().cycle();
    let mut params = Map::new();
    for q in &spec.params {
        let v = valid_value(
            rule_of(&spec.name, &q.name),
            q.default,
            draws.next().unwrap(),
        );
        params.insert(q.name.clone(), json!(v));
    }
    // Keep the valid draws valid: each relation `lower < upper` (lif's
    // Vr < Vth, the thermostat's Tlo < Thi) by putting `lower` one below.
    for relation in catalog[index % catalog.len()].relations() {
        let high = params[relation.upper].as_f64().unwrap();
        params.insert(relation.lower.into(), json!(high - 1.0));
    }
    let mut state = Map::new();
    for q in &spec.states {
        // The initial state stays at its default: the catalogue's defaults
        // start clear of every guard, and a drawn one would mostly test the
        // start-guard check.
        state.insert(q.name.clone(), json!(q.default));
    }
    let t_end = spec.t_end * (0.3 + 0.35 * (1.0 + draws.next().unwrap()));
    let mut solver = if rk4 {
        json!({"method": "rk4", "dt": t_end / 4000.0})
    } else {
        json!({"method": "dopri5", "rtol": 1e-12, "atol": 1e-12})
    };
    let mut t_end_value = json!(t_end);
    if let Some((slot, x)) = bad {
        let np = spec.params.len();
        let ns = spec.states.len();
        match slot % (np + ns + 2) {
            k if k < np => {
                params.insert(spec.params[k].name.clone(), json!(x));
            }
            k if k < np + ns => {
                state.insert(spec.states[k - np].name.clone(), json!(x));
            }
            k if k == np + ns => t_end_value = json!(x),
            _ => {
                if rk4 {
                    solver["dt"] = json!(x);
                } else {
                    solver["max_step"] = json!(x);
                }
            }
        }
    }
    json!({
        "model": spec.name,
        "params": params,
        "initial_state": state,
        "t_end": t_end_value,
        "solver": solver,
        "max_events": 2000,
    })
}

/// Runs `f` and fails the property on a panic.
fn no_panic<T>(what: &str, f: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(_) => panic!("panicked on {what}"),
    }
}

/// The error as `main` prints it, and its checks: one line
/// `error: <kind>: <message>` with a documented kind.
fn check_error(e: &CliError, text: &str) {
    let line = format!("error: {}: {}", e.kind(), e.to_string().replace('\n', " "));
    assert!(
        KINDS.contains(&e.kind()),
        "kind {}: {line}\n{text}",
        e.kind()
    );
    assert!(!e.to_string().trim().is_empty(), "{text}");
    assert!(!has_long_number(&line), "a number printed long: {line}");
    for item in ["Method::", "SolverChoice", "zeno_separation", "attached"] {
        assert!(!line.contains(item), "names {item}: {line}");
    }
}

/// Runs `text` with every command; returns the forward and adjoint
/// documents when both succeed.
fn run_all(text: &str) -> Option<(Value, Value)> {
    let sim = no_panic(text, || ia_cli::simulate(text, "proptest"));
    let fwd = no_panic(text, || {
        ia_cli::gradient(text, "proptest", GradientMethod::Forward)
    });
    let adj = no_panic(text, || {
        ia_cli::gradient(text, "proptest", GradientMethod::Adjoint)
    });
    for result in [&sim, &fwd, &adj] {
        if let Err(e) = result {
            check_error(e, text);
        }
    }
    // Bad input is refused before any run, by every command alike.
    if let Err(e) = &sim {
        if matches!(
            e.kind(),
            "invalid_option" | "invalid_scenario" | "unknown_name"
        ) {
            for other in [&fwd, &adj] {
                let kind = other.as_ref().err().map(CliError::kind);
                assert_eq!(kind, Some(e.kind()), "{text}");
            }
        }
    }
    match (fwd, adj) {
        (Ok(f), Ok(a)) => Some((
            serde_json::from_str(&f).expect("forward output is JSON"),
            serde_json::from_str(&a).expect("adjoint output is JSON"),
        )),
        _ => None,
    }
}

/// The same checks ran: forward and adjoint saw the same events.
fn assert_same_events(forward: &Value, adjoint: &Value, text: &str) {
    assert_eq!(
        forward["events"].as_array().map(Vec::len),
        adjoint["events"].as_array().map(Vec::len),
        "event counts differ: {text}"
    );
}

/// `got` agrees with `reference` to 1e-8, relative to the entry, with the
/// largest entry of its row times 1e-6 (and 1e-6) as the floor of the
/// scale, so entries that are zero up to rounding compare absolutely.
fn assert_rows_agree(reference: &[Vec<f64>], got: &[Vec<f64>], what: &str, text: &str) {
    assert_eq!(reference.len(), got.len(), "{what}: {text}");
    for (i, (r_row, g_row)) in reference.iter().zip(got).enumerate() {
        let row_max = r_row.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for (j, (&r, &g)) in r_row.iter().zip(g_row).enumerate() {
            let scale = r.abs().max(1e-6 * row_max).max(1e-6);
            assert!(
                (g - r).abs() <= 1e-8 * scale,
                "{what}[{i}][{j}]: reference {r}, adjoint {g}: {text}"
            );
        }
    }
}

fn rows(m: &DMatrix<f64>) -> Vec<Vec<f64>> {
    (0..m.nrows())
        .map(|i| m.row(i).iter().copied().collect())
        .collect()
}

/// The command line's documents: forward and adjoint Jacobians as rows in
/// state order, columns in `wrt` order.
fn document_rows(doc: &Value) -> Vec<Vec<f64>> {
    let wrt: Vec<&str> = doc["wrt"]
        .as_array()
        .expect("wrt")
        .iter()
        .map(|w| w.as_str().expect("name"))
        .collect();
    doc["final_state"]
        .as_object()
        .expect("final_state")
        .keys()
        .map(|s| {
            wrt.iter()
                .map(|w| doc["jacobian"][s][w].as_f64().expect("a number"))
                .collect()
        })
        .collect()
}

/// The adjoint against forward sensitivities on the same steps, through
/// the library: both succeed and agree, or both fail with the same kind.
fn check_same_steps(text: &str) {
    let mut scenario = Scenario::parse(text, "proptest").expect("a valid draw parses");
    scenario.solver = adjoint_solver(&scenario.solver);
    let problem = scenario.problem().expect("a valid draw is a valid run");
    let forward = ia_adjoint::jacobian(&problem, Method::ForwardOnStateSteps);
    let adjoint = ia_adjoint::jacobian(&problem, Method::Adjoint);
    match (forward, adjoint) {
        (Ok(f), Ok(a)) => {
            assert_eq!(f.trajectory.events.len(), a.trajectory.events.len());
            assert_rows_agree(
                &rows(&f.final_jacobian),
                &rows(&a.final_jacobian),
                "final",
                text,
            );
            assert_rows_agree(
                &rows(&f.event_time_gradients),
                &rows(&a.event_time_gradients),
                "event time",
                text,
            );
        }
        (Err(f), Err(a)) => assert_eq!(f.kind(), a.kind(), "{f} / {a}: {text}"),
        (f, a) => panic!(
            "one method failed: forward {:?}, adjoint {:?}: {text}",
            f.err().map(|e| e.to_string()),
            a.err().map(|e| e.to_string())
        ),
    }
}

proptest! {
    #![proptest_config(config(32))]

    /// Valid draws: no panic, and where the run succeeds, forward and
    /// adjoint give the same derivatives.
    #[test]
    fn valid_draws_agree(
        index in 0usize..9,
        u in prop::collection::vec(-1.0f64..1.0, 12),
        rk4 in any::<bool>(),
    ) {
        let text = scenario(index, &u, None, rk4).to_string();
        if let Some((forward, adjoint)) = run_all(&text) {
            assert_same_events(&forward, &adjoint, &text);
            if rk4 {
                let what = "command-line jacobian";
                assert_rows_agree(&document_rows(&forward), &document_rows(&adjoint), what, &text);
            }
        }
        check_same_steps(&text);
    }

    /// Draws with one entry replaced by an extreme value: no panic, and
    /// every failure is one documented error line.
    #[test]
    fn extreme_draws_fail_cleanly(
        index in 0usize..9,
        u in prop::collection::vec(-1.0f64..1.0, 12),
        slot in 0usize..16,
        extreme in 0usize..EXTREMES.len(),
        rk4 in any::<bool>(),
    ) {
        let text = scenario(index, &u, Some((slot, EXTREMES[extreme])), rk4).to_string();
        run_all(&text);
    }
}

/// Every model's valid draws include successes (the property above is not
/// vacuous): the default-centred draw of each model runs under both methods.
#[test]
fn every_model_has_a_succeeding_draw() {
    for index in 0..ia_models::catalog().len() {
        for rk4 in [false, true] {
            let text = scenario(index, &[0.0], None, rk4).to_string();
            let (forward, adjoint) =
                run_all(&text).unwrap_or_else(|| panic!("no success for {text}"));
            assert_same_events(&forward, &adjoint, &text);
            if rk4 {
                let what = "command-line jacobian";
                assert_rows_agree(
                    &document_rows(&forward),
                    &document_rows(&adjoint),
                    what,
                    &text,
                );
            }
            check_same_steps(&text);
        }
    }
}

/// Whether `text` holds a run of 25 or more digits: no `f64` printed short needs
/// that many (17 significant digits after at most 7 zeros), so such a run is a number printed long
/// (like `1e308` as 309 digits).
fn has_long_number(text: &str) -> bool {
    let mut run = 0;
    text.chars().any(|c| {
        run = if c.is_ascii_digit() { run + 1 } else { 0 };
        run >= 25
    })
}
