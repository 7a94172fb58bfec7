//! The binary on scenarios whose model is written as equations.
//!
//! Reference: the ready model `ball1d` run by the same binary; its equation
//! form (crates/ia-equations/tests/data/ball1d.json) must give the same
//! trajectory, Jacobians and loss gradient.

use crate::common;

use common::run_stdin;

use rstest::rstest;
use serde_json::{json, Value};

fn ball1d_equations() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../ia-equations/tests/data/ball1d.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("JSON")
}

fn scenario(model: Value) -> String {
    json!({
        "model": model,
        "params": {"e": 0.7},
        "initial_state": {"h": 1.5},
        "t_end": 2.0,
        "observe": [0.5],
        "solver": {"method": "dopri5", "rtol": 1e-12, "atol": 1e-12},
        "loss": [{"of": "final.h", "weight": 1.0}, {"of": "event.-1.time", "weight": 2.0}]
    })
    .to_string()
}

fn document(args: &[&str], stdin: &str) -> Value {
    let out = run_stdin(args, stdin);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON output")
}

/// Every number in `a` within 1e-12 relative of the same place in `b`
/// (objects compared by key, so the order of names does not matter).
fn same_numbers(a: &Value, b: &Value, at: &str) {
    same_numbers_within(a, b, at, 1e-12);
}

/// As [`same_numbers`], to a relative `tolerance` (with a floor of 1e-3 on
/// the scale).
fn same_numbers_within(a: &Value, b: &Value, at: &str, tolerance: f64) {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            let scale = x.abs().max(y.abs()).max(1e-3);
            assert!((x - y).abs() <= tolerance * scale, "{at}: {x} vs {y}");
        }
        (Value::Object(x), Value::Object(y)) => {
            let mut kx: Vec<_> = x.keys().collect();
            let mut ky: Vec<_> = y.keys().collect();
            kx.sort();
            ky.sort();
            assert_eq!(kx, ky, "{at}");
            for (k, v) in x {
                same_numbers_within(v, &y[k], &format!("{at}.{k}"), tolerance);
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            assert_eq!(x.len(), y.len(), "{at}");
            for (k, (u, v)) in x.iter().zip(y).enumerate() {
                same_numbers_within(u, v, &format!("{at}[{k}]"), tolerance);
            }
        }
        _ => assert_eq!(a, b, "{at}"),
    }
}

#[rstest]
#[case::simulate(&["simulate", "-"])]
#[case::forward(&["gradient", "-", "--method", "forward"])]
#[case::adjoint(&["gradient", "-", "--method", "adjoint"])]
#[case::adjoint_jacobian(&["gradient", "-", "--method", "adjoint", "--jacobian"])]
fn inline_equations_give_the_ready_model_output(#[case] args: &[&str]) {
    let equations = document(args, &scenario(ball1d_equations()));
    let ready = document(args, &scenario(json!("ball1d")));
    for key in ["final_state", "events", "observations", "jacobian", "loss"] {
        assert_eq!(
            equations.get(key).is_some(),
            ready.get(key).is_some(),
            "{key}"
        );
        if let (Some(a), Some(b)) = (equations.get(key), ready.get(key)) {
            same_numbers(a, b, key);
        }
    }
    // The overrides took effect: e = 0.7 from h = 1.5.
    let events = ready["events"].as_array().unwrap();
    let t1 = (2.0f64 * 1.5 / 9.81).sqrt();
    assert!((events[0]["time"].as_f64().unwrap() - t1).abs() < 1e-9);
}

#[test]
fn models_equations_prints_the_model_as_understood() {
    let out = run_stdin(
        &["models", "--equations", "-"],
        r#"{"name": "ball", "states": ["y", "vy"], "params": {"g": 9.81, "e": 0.8},
            "let": {"speed": "abs(vy)"},
            "modes": {"flight": {"flow": {"y": "(vy)", "vy": "-(g)"}}},
            "transitions": [{"name": "bounce", "from": "flight", "to": "flight",
                             "guard": "y", "direction": "falling",
                             "reset": {"vy": "-e*vy"}}]}"#,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "model ball\n\
         states: y = 0, vy = 0\n\
         params: g = 9.81, e = 0.8\n\
         let:\n  speed = abs(vy)\n\
         initial mode: flight\n\
         mode flight:\n  y' = vy\n  vy' = -g\n\
         transition bounce: flight -> flight, when y crosses 0 falling\n  vy <- -e * vy\n"
    );
}

#[rstest]
#[case::unknown_name(
    json!({"states": ["y", "vy"], "params": {"g": 9.81, "e": 0.8},
           "modes": {"flight": {"flow": {"y": "vy", "vy": "-g"}}},
           "transitions": [{"name": "bounce", "from": "flight", "to": "flight", "guard": "y",
                            "direction": "falling", "reset": {"vy": "-e * ee"}}]}),
    r#"error: invalid_equations: 'model' (equations): transition "bounce", reset.vy, column 6: unknown name "ee"; names are y, vy, g, e, t; closest is "e""#
)]
#[case::flow_missing_a_state(
    json!({"states": ["y", "vy"], "modes": {"flight": {"flow": {"y": "vy"}}}}),
    r#"error: invalid_equations: 'model' (equations): mode "flight", flow: no expression for state "vy"; a flow gives the rate of every state: y, vy"#
)]
#[case::not_an_object_form(
    json!({"states": ["y"], "modes": []}),
    "error: invalid_equations: 'model' (equations): modes: invalid type: sequence, expected an object"
)]
// Shape errors inside a scenario name their key (serde alone said only
// "invalid type: map, expected a sequence").
#[case::transitions_as_an_object(
    json!({"states": ["y"], "modes": {"m": {"flow": {"y": "-1"}}},
           "transitions": {"a": {"from": "m"}}}),
    r#"error: invalid_equations: 'model' (equations): transitions: invalid type: map, expected a sequence (a list of transitions, each {"name": .., "from": .., "to": .., "guard": .., "direction": .., "reset": {..}})"#
)]
#[case::transition_missing_a_key(
    json!({"states": ["y"], "modes": {"m": {"flow": {"y": "-1"}}},
           "transitions": [{"name": "a", "from": "m", "to": "m", "guard": "y", "direction": "falling"},
                           {"name": "b", "from": "m", "to": "m", "guard": "y"}]}),
    "error: invalid_equations: 'model' (equations): transitions[1]: missing field `direction`"
)]
#[case::mode_with_a_misspelt_key(
    json!({"states": ["y"], "modes": {"m": {"flows": {"y": "-1"}}}}),
    "error: invalid_equations: 'model' (equations): modes.m: unknown field `flows`, expected `flow`"
)]
#[case::param_not_a_number(
    json!({"states": ["y"], "params": {"k": "two"}, "modes": {"m": {"flow": {"y": "-k"}}}}),
    r#"error: invalid_equations: 'model' (equations): params: invalid type: string "two", expected f64"#
)]
fn bad_equations_are_equation_errors(#[case] model: Value, #[case] expected: &str) {
    let text = json!({"model": model, "t_end": 1.0}).to_string();
    let out = run_stdin(&["simulate", "-"], &text);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&out.stderr).trim_end(), expected);
}

#[test]
fn a_non_finite_rate_names_its_expression() {
    let text = json!({"model": {"states": {"x": 0.0}, "params": {"k": 2.0},
                                "modes": {"m": {"flow": {"x": "-k / x"}}}},
                      "t_end": 1.0})
    .to_string();
    let out = run_stdin(&["simulate", "-"], &text);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("error: non_finite: "), "{stderr}");
    assert!(
        stderr
            .trim_end()
            .ends_with("; in the model's equations, mode \"m\", flow.x = -k / x is -inf at t = 0"),
        "{stderr}"
    );
}

#[test]
fn size_does_not_apply_to_equations() {
    let text = json!({"model": {"states": ["x"], "modes": {"m": {"flow": {"x": "1"}}}},
                      "size": 3, "t_end": 1.0})
    .to_string();
    let out = run_stdin(&["simulate", "-"], &text);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim_end(),
        "error: invalid_scenario: 'size' applies to the sized catalogue models, not to a model written as equations"
    );
}

fn equations_of(name: &str) -> Value {
    let path = format!(
        "{}/../ia-equations/tests/data/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("JSON")
}

/// `periodic` on the thermostat's limit cycle. Reference: the ready
/// `thermostat` through the same command (fixed point, period, multipliers
/// and every parameter derivative, by name).
#[test]
fn periodic_on_equations_gives_the_ready_model_orbit() {
    let periodic = |model: Value| {
        json!({"model": model, "t_end": 20.0, "section": "switch_off",
               "initial_state": {"T": 23.0}, "initial_mode": "off"})
        .to_string()
    };
    let equations = document(&["periodic", "-"], &periodic(equations_of("thermostat")));
    let ready = document(&["periodic", "-"], &periodic(json!("thermostat")));
    for key in ["fixed_point", "period", "sensitivities"] {
        same_numbers_within(&equations[key], &ready[key], key, 1e-9);
    }
}

/// `fit` and `batch` on the ball written as equations: noise-free heights
/// of a run at g = 9.81, e = 0.8 (the reference values) are recovered from
/// g = 9.6, e = 0.78; a batch of a gradient line and a fit line prints what
/// the two single commands print.
#[test]
fn fit_and_batch_on_equations() {
    let ball = equations_of("ball1d");
    let truth = json!({"model": ball, "t_end": 2.0, "observe": [0.3, 0.7, 1.1, 1.5, 1.9],
                       "params": {"g": 9.81, "e": 0.8}, "initial_state": {"h": 1.0},
                       "solver": {"method": "dopri5", "rtol": 1e-12, "atol": 1e-12}});
    let run = document(&["simulate", "-"], &truth.to_string());
    let data: Vec<Value> = run["observations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| json!({"time": o["time"], "state": {"h": o["state"]["h"]}}))
        .collect();
    let fit = json!({"model": equations_of("ball1d"), "t_end": 2.0,
                     "params": {"g": 9.6, "e": 0.78}, "initial_state": {"h": 1.0},
                     "solver": {"method": "dopri5", "rtol": 1e-12, "atol": 1e-12},
                     "fit": {"free": ["param.g", "param.e"], "bounds": {"param.e": [0, 1]},
                             "data": data}});
    let fitted = document(&["fit", "--compact", "-"], &fit.to_string());
    for (name, want) in [("param.g", 9.81), ("param.e", 0.8)] {
        let got = fitted["values"][name].as_f64().unwrap();
        assert!((got - want).abs() < 1e-6, "{name}: {got}");
    }
    let gradient = document(
        &["gradient", "--method", "adjoint", "--compact", "-"],
        &scenario(ball1d_equations()),
    );
    let lines = [
        json!({"command": "gradient", "method": "adjoint",
               "scenario": serde_json::from_str::<Value>(&scenario(ball1d_equations())).unwrap()}),
        json!({"command": "fit", "scenario": fit}),
    ]
    .map(|l| l.to_string())
    .join("\n");
    let out = run_stdin(&["batch", "--jobs", "2", "-"], &lines);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(printed, [gradient, fitted]);
}

/// An inline model keeps its document's order of states and parameters
/// (reference: the order written in the scenario, not alphabetical).
#[test]
fn inline_equations_keep_the_document_order() {
    let model = json!({
        "states": {"y": 1.0, "vy": 0.0},
        "params": {"g": 9.81, "e": 0.8},
        "modes": {"flight": {"flow": {"y": "vy", "vy": "-g"}}},
        "transitions": [{"name": "bounce", "from": "flight", "to": "flight",
                         "guard": "y", "direction": "falling", "reset": {"vy": "-e * vy"}}],
        "initial_mode": "flight"
    });
    let out = run_stdin(
        &["gradient", "--compact", "-"],
        &json!({"model": model, "t_end": 0.1}).to_string(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(r#""final_state":{"y":"#), "{text}");
    assert!(
        text.contains(r#"["initial.y","initial.vy","param.g","param.e"]"#),
        "{text}"
    );
}

#[test]
fn a_stiff_model_shows_its_stiff_steps_and_its_step_limit_names_the_implicit_methods() {
    // Reference: the stiff drug model of crates/ia-verify/references/stiff
    // (absorption 1e3, elimination 0.1): DOPRI5's steps are held by
    // stability on most of the run; a non-stiff model (ball1d's equations)
    // shows no "stiff_steps" at all.
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../ia-verify/references/stiff/drug.json"
    );
    let drug: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let solver = json!({"method": "dopri5", "rtol": 1e-6, "atol": 1e-6});
    let scenario = json!({"model": drug, "t_end": 20.0, "solver": solver});
    let doc = common::stdout_json(&run_stdin(&["simulate", "-"], &scenario.to_string()));
    let stats = &doc["stats"];
    let (stiff, steps) = (stats["stiff_steps"].as_u64(), stats["steps"].as_u64());
    assert!(stiff.zip(steps).is_some_and(|(s, n)| 2 * s > n), "{stats}");
    let limited = json!({"model": drug, "t_end": 20.0, "solver": solver, "max_steps": 300});
    let out = run_stdin(&["simulate", "-"], &limited.to_string());
    let err = common::stderr(&out);
    assert!(err.contains("step_limit"), "{err}");
    for name in ["trbdf2", "kvaerno3", "kvaerno5"] {
        assert!(err.contains(name), "{err}");
    }
    let ball = json!({"model": ball1d_equations(), "t_end": 1.0});
    let doc = common::stdout_json(&run_stdin(&["simulate", "-"], &ball.to_string()));
    assert!(
        doc["stats"].get("stiff_steps").is_none(),
        "{}",
        doc["stats"]
    );
}

/// Reference: the same scenario with `dopri5` at 1e-12 (a different,
/// explicit method). `kvaerno5` (implicit) at 1e-10 on the ready model and
/// on its equation form gives the same events, final state, Jacobian and
/// loss gradient within 1e-7, forward and adjoint alike.
#[rstest]
#[case::forward(&["gradient", "-", "--method", "forward"])]
#[case::adjoint(&["gradient", "-", "--method", "adjoint"])]
fn kvaerno5_runs_ready_and_equation_models(#[case] args: &[&str]) {
    let reference = document(args, &scenario(json!("ball1d")));
    for model in [json!("ball1d"), ball1d_equations()] {
        let mut v: Value = serde_json::from_str(&scenario(model)).unwrap();
        v["solver"] = json!({"method": "kvaerno5", "rtol": 1e-10, "atol": 1e-10});
        let got = document(args, &v.to_string());
        for key in ["final_state", "events", "jacobian", "loss"] {
            if let (Some(a), Some(b)) = (got.get(key), reference.get(key)) {
                same_numbers_within(a, b, key, 1e-7);
            }
        }
    }
}

/// `"method": "exact"` on a model written as equations: the thermostat's
/// equation form (affine flows, guards `T - level`) runs on the exact
/// event-driven solver. References: the ready `thermostat` on the exact
/// solver (checked against closed forms in ia-verify) gives the same
/// events, final state, Jacobian and loss gradient to 1e-12, forward and
/// adjoint alike; and the equation form on DOPRI5 at 1e-12 (another
/// method) within 1e-8.
#[rstest]
#[case::forward(&["gradient", "-", "--method", "forward"])]
#[case::adjoint(&["gradient", "-", "--method", "adjoint"])]
fn the_exact_solver_runs_equation_models(#[case] args: &[&str]) {
    let thermostat = |model: Value, solver: Value| {
        json!({"model": model, "t_end": 20.0, "initial_state": {"T": 21.0},
               "initial_mode": "on", "solver": solver,
               "loss": [{"of": "final.T", "weight": 1.0},
                        {"of": "event.-1.time", "weight": 2.0}]})
        .to_string()
    };
    let exact = json!({"method": "exact"});
    let equations = document(args, &thermostat(equations_of("thermostat"), exact.clone()));
    let ready = document(args, &thermostat(json!("thermostat"), exact));
    let dopri5 = json!({"method": "dopri5", "rtol": 1e-12, "atol": 1e-12});
    let stepped = document(args, &thermostat(equations_of("thermostat"), dopri5));
    assert!(
        equations["events"].as_array().is_some_and(|e| e.len() >= 3),
        "the run should switch several times: {}",
        equations["events"]
    );
    for key in ["final_state", "events", "jacobian", "loss"] {
        same_numbers(&equations[key], &ready[key], key);
        same_numbers_within(&equations[key], &stepped[key], key, 1e-8);
    }
}

/// An equation model the exact solver cannot run says why and what to
/// use instead, in the scenario's words: a flow that is not affine in the
/// states, an affine pair with complex rates (an oscillator), and a guard
/// whose level reads a state.
#[rstest]
#[case::not_affine(json!({"x": "-x * x", "v": "0"}), "x - 2", "is not of that form")]
#[case::oscillating(json!({"x": "v", "v": "-w * x"}), "x - 2", "complex rates")]
#[case::guard(json!({"x": "-x", "v": "0"}), "x - v", "threshold on one state entry")]
fn the_exact_solver_refuses_equation_models_it_cannot_run(
    #[case] flow: Value,
    #[case] guard: &str,
    #[case] expected: &str,
) {
    let model = json!({
        "states": {"x": 1.0, "v": 0.0}, "params": {"w": 4.0},
        "modes": {"m": {"flow": flow}},
        "transitions": [{"name": "hit", "from": "m", "to": "m", "guard": guard,
                         "direction": "rising", "reset": {"v": "0"}}],
        "initial_mode": "m"
    });
    let scenario = json!({"model": model, "t_end": 1.0, "solver": {"method": "exact"}}).to_string();
    let out = run_stdin(&["simulate", "-"], &scenario);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the run should fail: {stderr}");
    assert!(
        stderr.contains(expected) && stderr.contains("dopri5"),
        "the message should say why ({expected}) and name a Runge-Kutta method: {stderr}"
    );
}
