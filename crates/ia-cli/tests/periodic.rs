//! `impact-adjoint periodic` through the binary: the rimless wheel against
//! its closed form, the output's keys in the documented order, and clear
//! errors for bad scenarios and for a Newton iteration that fails.

use serde_json::Value;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_impact-adjoint");

fn example(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/periodic")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

fn periodic_stdin(scenario: &str) -> Output {
    let mut child = Command::new(BIN)
        .args(["periodic", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the binary");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(scenario.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn success(out: &Output) -> (String, Value) {
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = serde_json::from_str(&text).unwrap();
    (text, doc)
}

fn failure(out: &Output, kind: &str) -> String {
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(err.starts_with(&format!("error: {kind}: ")), "{err}");
    assert!(out.stdout.is_empty());
    err
}

/// Reference: the closed form of the step-to-step map, `omega* =
/// cot(2 alpha) sqrt(4 (g/l) sin(alpha) sin(gamma))`, multiplier
/// `cos^2(2 alpha)`, `d/dalpha = -2 sin(4 alpha)`.
#[test]
fn rimless_wheel_orbit_matches_the_closed_form_in_the_documented_layout() {
    let out = Command::new(BIN)
        .args(["periodic", &example("rimless-wheel.json")])
        .output()
        .unwrap();
    let (text, doc) = success(&out);
    let (g, alpha, gamma) = (9.81f64, std::f64::consts::FRAC_PI_8, 0.08f64);
    let speed = (4.0 * g * alpha.sin() * gamma.sin()).sqrt() / (2.0 * alpha).tan();
    assert!((doc["fixed_point"]["omega"].as_f64().unwrap() - speed).abs() < 1e-9);
    assert!((doc["fixed_point"]["theta"].as_f64().unwrap() - (gamma - alpha)).abs() < 1e-9);
    let multipliers = doc["multipliers"].as_array().unwrap();
    assert_eq!(multipliers.len(), 2);
    assert_eq!(multipliers[0]["trivial"], true);
    assert!(multipliers[1].get("trivial").is_none());
    let lambda = multipliers[1]["re"].as_f64().unwrap();
    assert!((lambda - (2.0 * alpha).cos().powi(2)).abs() < 1e-9);
    let dlambda = doc["sensitivities"]["multipliers"][1]["param.alpha"]["re"]
        .as_f64()
        .unwrap();
    assert!((dlambda + 2.0 * (4.0 * alpha).sin()).abs() < 1e-8);
    assert_eq!(
        doc["sensitivities"]["fixed_point"]["theta"]["param.gamma"]
            .as_f64()
            .unwrap()
            .round(),
        1.0
    );
    assert!(doc["monodromy"]["omega"]["theta"].is_f64());
    // The keys in the order the documentation shows.
    let order = [
        "\"model\"",
        "\"section\"",
        "\"fixed_point\"",
        "\"period\"",
        "\"newton_iterations\"",
        "\"residual\"",
        "\"multipliers\"",
        "\"monodromy\"",
        "\"sensitivities\"",
    ];
    let positions: Vec<usize> = order.iter().map(|k| text.find(k).expect(k)).collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{text}");
    assert!(!text.contains("null"));
}

#[test]
fn two_events_per_period_double_the_period_and_square_the_multiplier() {
    let one = periodic_stdin(r#"{"model": "rimless-wheel", "section": "step"}"#);
    let two = periodic_stdin(
        r#"{"model": "rimless-wheel", "section": "step", "events_per_period": 2, "max_period": 6}"#,
    );
    let (_, one) = success(&one);
    let (_, two) = success(&two);
    let period = |d: &Value| d["period"].as_f64().unwrap();
    assert!((period(&two) - 2.0 * period(&one)).abs() < 1e-9);
    let lambda = |d: &Value| d["multipliers"][1]["re"].as_f64().unwrap();
    assert!((lambda(&two) - lambda(&one).powi(2)).abs() < 1e-9);
}

#[test]
fn a_family_of_orbits_says_why_it_has_no_derivatives() {
    let out = Command::new(BIN)
        .args([
            "periodic",
            "--compact",
            &example("slip-hopper-vertical.json"),
        ])
        .output()
        .unwrap();
    let (text, doc) = success(&out);
    assert_eq!(doc["multipliers"].as_array().unwrap().len(), 5);
    let reason = doc["sensitivities"]["unavailable"].as_str().unwrap();
    assert!(reason.contains("not isolated"), "{reason}");
    assert!(!text.contains("null"));
}

#[test]
fn bad_periodic_scenarios_are_clear_errors() {
    let cases = [
        (
            r#"{"model": "rimless-wheel"}"#,
            "invalid_scenario",
            "'section'",
        ),
        (
            r#"{"model": "rimless-wheel", "section": "stride"}"#,
            "unknown_name",
            "step",
        ),
        (
            r#"{"model": "rimless-wheel", "section": 3}"#,
            "invalid_scenario",
            "transition name",
        ),
        (
            r#"{"model": "rimless-wheel", "section": "step", "events_per_period": 0}"#,
            "invalid_option",
            "at least 1",
        ),
        (
            r#"{"model": "rimless-wheel", "section": "step", "events_per_period": 1.5}"#,
            "invalid_option",
            "integer",
        ),
        (
            r#"{"model": "rimless-wheel", "section": "step", "max_period": -1}"#,
            "invalid_option",
            "max_period",
        ),
        (
            r#"{"model": "rimless-wheel", "section": "step", "observe": [1]}"#,
            "invalid_scenario",
            "unknown key 'observe'",
        ),
        (
            r#"{"model": "slip-hopper", "section": "touchdown", "initial_mode": "flight"}"#,
            "invalid_scenario",
            "in mode 'stance'",
        ),
        (
            r#"{"model": "rimless-wheel", "section": "step", "initial_state": {"omega": -1.2}}"#,
            "no_return",
            "max_period",
        ),
    ];
    for (scenario, kind, part) in cases {
        let err = failure(&periodic_stdin(scenario), kind);
        assert!(err.contains(part), "{scenario}: {err}");
    }
    // simulate does not know the periodic keys
    let out = Command::new(BIN)
        .args(["simulate", &example("rimless-wheel.json")])
        .output()
        .unwrap();
    failure(&out, "invalid_scenario");
}

/// With alpha = 0.5 and gamma = 0.12 the closed-form speed is below the one
/// needed to vault over the stance spoke: there is no orbit, and Newton
/// says so with its iterations, residual and what to try.
#[test]
fn newton_failure_is_a_clear_error() {
    let out = periodic_stdin(
        r#"{"model": "rimless-wheel", "section": "step", "max_period": 10,
            "params": {"alpha": 0.5, "gamma": 0.12},
            "initial_state": {"theta": -0.38, "omega": 1.2}}"#,
    );
    let err = failure(&out, "no_convergence");
    for part in [
        "did not converge",
        "iterations",
        "residual",
        "starting guess",
    ] {
        assert!(err.contains(part), "{err}");
    }
}

/// `advancing` through the binary. Reference: the library's
/// `ia_orbits::periodic_orbit` with the same inputs (equal to the bit);
/// both advancing states move by the same step; the shift's multiplier is
/// flagged. Without `advancing` Newton fails and names the option; a bad
/// `advancing` is a clear error naming it.
#[test]
fn a_running_gait_advances_its_position() {
    let out = Command::new(BIN)
        .args([
            "periodic",
            "--compact",
            &example("slip-hopper-running.json"),
        ])
        .output()
        .unwrap();
    let (_, doc) = success(&out);
    let system = ia_models::by_name("slip-hopper").unwrap().system();
    let spec = ia_models::by_name("slip-hopper").unwrap().spec();
    let guess = [0.48238, 0.92866, 4.0, -1.18305, 0.8533];
    let options = ia_orbits::OrbitOptions::new(3.0).with_advancing(vec![0, 4]);
    let orbit = ia_orbits::periodic_orbit(
        &system,
        "touchdown",
        &guess,
        &spec.default_params(),
        &options,
    )
    .unwrap();
    for (name, v) in spec.state_names().iter().zip(&orbit.fixed_point) {
        assert_eq!(doc["fixed_point"][name].as_f64().unwrap(), *v, "{name}");
    }
    let (x, xf) = (
        doc["advance"]["x"].as_f64().unwrap(),
        doc["advance"]["xf"].as_f64().unwrap(),
    );
    assert_eq!(x, orbit.advance[0]);
    assert!((x - xf).abs() < 1e-9 && x > 1.5, "{x} {xf}");
    let multipliers = doc["multipliers"].as_array().unwrap();
    let flagged = |key: &str| multipliers.iter().filter(|m| m[key] == true).count();
    assert_eq!((flagged("trivial"), flagged("advancing")), (1, 1));

    let without = std::fs::read_to_string(example("slip-hopper-running.json"))
        .unwrap()
        .replace(r#""advancing": ["x", "xf"],"#, "");
    let err = failure(&periodic_stdin(&without), "no_convergence");
    assert!(err.contains(r#""advancing": ["x", "xf"]"#), "{err}");
    let running = |advancing: &str| {
        format!(
            r#"{{"model": "slip-hopper", "section": "touchdown", "advancing": {advancing},
                "initial_state": {{"x": 0.48238, "y": 0.92866, "vx": 4, "vy": -1.18305, "xf": 0.8533}}}}"#
        )
    };
    for (advancing, parts) in [
        (
            r#""x""#,
            &["'advancing' must be an array", "x, y, vx, vy, xf"][..],
        ),
        (
            r#"["x", "q"]"#,
            &[r#"'advancing[1]' is "q", not a state"#, "x, y, vx, vy, xf"],
        ),
        (r#"["x", "x"]"#, &["'advancing[1]' names 'x' a second time"]),
    ] {
        let err = failure(&periodic_stdin(&running(advancing)), "invalid_scenario");
        for part in parts {
            assert!(err.contains(part), "{advancing}: {err}");
        }
    }
}
