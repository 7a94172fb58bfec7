//! Tests of the scenario key `loss` and of `gradient --jacobian`.
//!
//! The reference of every loss gradient here is the forward mode: the
//! per-output Jacobians that `gradient --method forward` prints (final
//! state, observations, event-time gradients), contracted by the test with
//! the loss's weights. The adjoint's one backward pass must agree with it
//! to 1e-10 (relative to the size of the entry, at least 1).

use ia_cli::{gradient_with, GradientMethod};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_impact-adjoint");

/// The reference scenarios (examples/scenarios), each with observation
/// times inside its run.
const REFERENCES: [(&str, [f64; 2]); 5] = [
    ("ball2d_flat_a.json", [0.3, 1.2]),
    ("ball2d_bowl_a.json", [0.3, 1.2]),
    ("lif_a.json", [0.01, 0.03]),
    ("thermostat_a.json", [2.0, 11.0]),
    ("lif_network_cascade.json", [0.005, 0.015]),
];

fn reference(name: &str, observe: [f64; 2]) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/scenarios")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut scenario: Value = serde_json::from_str(&text).unwrap();
    scenario["observe"] = json!(observe);
    scenario
}

fn run(scenario: &Value, method: GradientMethod, jacobian: bool) -> Value {
    let out = gradient_with(&scenario.to_string(), "test", method, jacobian)
        .unwrap_or_else(|e| panic!("{}: {e}", scenario["model"]));
    serde_json::from_str(&out).unwrap()
}

/// The loss of `terms` contracted from the forward document `doc` (value
/// and gradient by `wrt` name), computed here from the per-output fields.
fn contract(doc: &Value, terms: &[(String, f64, Option<f64>)]) -> (f64, Vec<f64>) {
    let wrt: Vec<String> = serde_json::from_value(doc["wrt"].clone()).unwrap();
    let mut value = 0.0;
    let mut grad = vec![0.0; wrt.len()];
    for (of, weight, target) in terms {
        let parts: Vec<&str> = of.split('.').collect();
        let pick = |list: &Value, i: &str| {
            let list = list.as_array().unwrap();
            let i: i64 = i.parse().unwrap();
            let i = if i < 0 { list.len() as i64 + i } else { i };
            list[i as usize].clone()
        };
        let (x, row): (f64, Value) = match parts.as_slice() {
            ["final", s] => (
                doc["final_state"][s].as_f64().unwrap(),
                doc["jacobian"][s].clone(),
            ),
            ["observation", i, s] => {
                let o = pick(&doc["observations"], i);
                (o["state"][s].as_f64().unwrap(), o["jacobian"][s].clone())
            }
            ["event", i, "time"] => {
                let e = pick(&doc["events"], i);
                (e["time"].as_f64().unwrap(), e["time_gradient"].clone())
            }
            _ => panic!("bad term {of}"),
        };
        let (v, d) = match target {
            None => (weight * x, *weight),
            Some(y) => (weight * (x - y) * (x - y), 2.0 * weight * (x - y)),
        };
        value += v;
        for (g, w) in grad.iter_mut().zip(&wrt) {
            *g += d * row[w].as_f64().unwrap();
        }
    }
    (value, grad)
}

fn loss_gradient(doc: &Value) -> (f64, Vec<f64>) {
    let wrt: Vec<String> = serde_json::from_value(doc["wrt"].clone()).unwrap();
    let loss = &doc["loss"];
    let grad = wrt
        .iter()
        .map(|w| loss["gradient"][w].as_f64().unwrap())
        .collect();
    (loss["value"].as_f64().unwrap(), grad)
}

fn assert_close(what: &str, got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert!(
            (g - w).abs() <= tol * w.abs().max(1.0),
            "{what}: {got:?} vs {want:?}"
        );
    }
}

#[test]
fn adjoint_of_a_loss_equals_the_contracted_forward_jacobian_on_the_references() {
    for (name, observe) in REFERENCES {
        let mut scenario = reference(name, observe);
        let forward_plain = run(&scenario, GradientMethod::Forward, false);
        let state = forward_plain["final_state"]
            .as_object()
            .unwrap()
            .keys()
            .next()
            .unwrap()
            .clone();
        let mut terms = vec![
            (format!("final.{state}"), 1.5, None),
            (format!("observation.-1.{state}"), 2.0, Some(0.25)),
            (format!("observation.0.{state}"), -0.5, None),
        ];
        if !forward_plain["events"].as_array().unwrap().is_empty() {
            terms.push(("event.0.time".into(), 0.5, None));
            terms.push(("event.-1.time".into(), 0.75, Some(1.0)));
        }
        scenario["loss"] = Value::Array(
            terms
                .iter()
                .map(|(of, w, t)| match t {
                    None => json!({"of": of, "weight": w}),
                    Some(t) => json!({"of": of, "weight": w, "target": t}),
                })
                .collect(),
        );
        let (want_value, want) = contract(&forward_plain, &terms);
        let adjoint = run(&scenario, GradientMethod::Adjoint, false);
        let (value, got) = loss_gradient(&adjoint);
        assert!((value - want_value).abs() <= 1e-10 * want_value.abs().max(1.0));
        assert_close(&format!("{name}, adjoint"), &got, &want, 1e-10);
        // The forward mode's own loss field is the same contraction.
        let forward = run(&scenario, GradientMethod::Forward, false);
        let (_, by_forward) = loss_gradient(&forward);
        assert_close(&format!("{name}, forward"), &by_forward, &want, 1e-12);
    }
}

#[test]
fn an_adjoint_loss_leaves_out_the_per_output_fields_unless_asked() {
    let mut scenario = reference("ball2d_flat_a.json", [0.3, 1.2]);
    scenario["loss"] = json!([{"of": "final.x", "weight": 1.0}]);
    // Reference: the contract in the crate docs (fields present or absent).
    let lean = run(&scenario, GradientMethod::Adjoint, false);
    assert!(lean.get("jacobian").is_none());
    assert!(lean["events"][0].get("time_gradient").is_none());
    assert!(lean["observations"][0].get("jacobian").is_none());
    assert!(lean["wrt"].is_array());
    let full = run(&scenario, GradientMethod::Adjoint, true);
    assert!(full["jacobian"].is_object());
    assert!(full["events"][0]["time_gradient"].is_object());
    assert!(full["observations"][0]["jacobian"].is_object());
    assert_eq!(full["loss"], lean["loss"]);
    // The loss of final.x is the x row of the Jacobian.
    for (w, d) in full["jacobian"]["x"].as_object().unwrap() {
        let g = full["loss"]["gradient"][w].as_f64().unwrap();
        assert!((g - d.as_f64().unwrap()).abs() < 1e-10, "{w}");
    }
}

#[test]
fn without_a_loss_the_output_is_unchanged() {
    let scenario = reference("ball2d_flat_a.json", [0.3, 1.2]);
    // Reference: `ia_cli::gradient`, the entry point before the loss key.
    for method in [GradientMethod::Forward, GradientMethod::Adjoint] {
        let old = ia_cli::gradient(&scenario.to_string(), "test", method).unwrap();
        let new = gradient_with(&scenario.to_string(), "test", method, true).unwrap();
        assert_eq!(old, new);
        assert!(!old.contains("\"loss\""));
    }
}

fn error_of(scenario: Value, method: &str) -> String {
    let mut child = Command::new(BIN)
        .args(["gradient", "-", "--method", method])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(scenario.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn bad_loss_terms_are_errors_in_scenario_words() {
    // Reference: ball1d from h = 1 at rest to t = 0.5 has one impact (at
    // sqrt(2/9.81) = 0.4515) and no observation.
    let base = json!({"model": "ball1d", "t_end": 0.5});
    let with = |loss: Value| {
        let mut s = base.clone();
        s["loss"] = loss;
        s
    };
    for method in ["forward", "adjoint"] {
        let err = error_of(
            with(json!([{"of": "final.h", "weight": 1}, {"of": "event.1.time", "weight": 1}])),
            method,
        );
        assert!(err.starts_with("error: invalid_option: "), "{err}");
        assert!(err.contains("loss[1].of = 'event.1.time'"), "{err}");
        assert!(err.contains("the run has 1 events"), "{err}");
        let err = error_of(
            with(json!([{"of": "observation.-1.v", "weight": 1}])),
            method,
        );
        assert!(err.contains("loss[0].of"), "{err}");
        assert!(err.contains("the run has 0 observations"), "{err}");
    }
    let err = error_of(with(json!([{"of": "final.z", "weight": 1}])), "adjoint");
    assert!(err.starts_with("error: unknown_name: "), "{err}");
    assert!(err.contains("loss[0].of") && err.contains("h, v"), "{err}");
    let err = error_of(with(json!([{"of": "final.h"}])), "adjoint");
    assert!(err.contains("'loss[0]' has no 'weight'"), "{err}");
    let err = error_of(
        with(json!([{"of": "final.h", "weight": 1, "w": 2}])),
        "adjoint",
    );
    assert!(err.contains("unknown key 'w' in 'loss[0]'"), "{err}");
    let err = error_of(with(json!({"of": "final.h"})), "adjoint");
    assert!(err.contains("'loss' must be an array"), "{err}");
    // An empty loss gave a zero value and gradient, a silent answer.
    for method in ["forward", "adjoint"] {
        let err = error_of(with(json!([])), method);
        assert!(
            err.contains("'loss' has no terms") && err.contains("leave 'loss' out"),
            "{err}"
        );
    }
}
