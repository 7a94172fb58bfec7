//! Tests of the `impact-adjoint` binary: every example scenario, every kind
//! of bad input, and the numbers against closed-form references.

use crate::common;

use common::*;
use rstest::rstest;
use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const REFERENCES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../ia-verify/references/closed_form.json"
);

/// An object's keys in document order (serde_json's `Value` sorts them).
struct Keys(Vec<String>);

impl<'de> Deserialize<'de> for Keys {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Keys;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Keys, A::Error> {
                let mut keys = Vec::new();
                while let Some((k, IgnoredAny)) = map.next_entry::<String, IgnoredAny>()? {
                    keys.push(k);
                }
                Ok(Keys(keys))
            }
        }
        d.deserialize_map(V)
    }
}

/// An object of objects: outer keys in order, with each inner object's keys.
struct NestedKeys(Vec<(String, Vec<String>)>);

impl<'de> Deserialize<'de> for NestedKeys {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = NestedKeys;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object of objects")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<NestedKeys, A::Error> {
                let mut keys = Vec::new();
                while let Some((k, Keys(inner))) = map.next_entry::<String, Keys>()? {
                    keys.push((k, inner));
                }
                Ok(NestedKeys(keys))
            }
        }
        d.deserialize_map(V)
    }
}

#[derive(serde::Deserialize)]
struct Outline {
    final_state: Keys,
    #[serde(default)]
    jacobian: Option<NestedKeys>,
}

fn example_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(scenarios_dir())
        .expect("examples/scenarios exists")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

/// The spec of the model a scenario file runs (its size and connections
/// included).
fn spec_of(file: &Path) -> ia_models::ModelSpec {
    let text = std::fs::read_to_string(file).expect("read scenario");
    let scenario = ia_cli::scenario::Scenario::parse(&text, "scenario")
        .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    std::sync::Arc::unwrap_or_clone(scenario.spec)
}

/// Checks the documented keys and key order of one output document.
fn check_document(doc: &Value, text: &str, gradient: bool, file: &Path) {
    let ctx = file.display();
    let spec = spec_of(file);
    assert_eq!(doc["model"].as_str(), Some(spec.name.as_str()));
    let states = spec.state_names();
    let wrt = ia_core::Wrt::labels(&states, &spec.param_names());

    let top = serde_json::from_str::<Keys>(text)
        .expect("top-level keys")
        .0;
    let expected_top: Vec<&str> = if gradient {
        vec![
            "model",
            "method",
            "t_end",
            "final_mode",
            "final_state",
            "wrt",
            "jacobian",
            "events",
            "observations",
            "stats",
        ]
    } else {
        vec![
            "model",
            "t_end",
            "final_mode",
            "final_state",
            "events",
            "observations",
            "stats",
        ]
    };
    assert_eq!(top, expected_top, "{ctx}");
    assert!(doc["t_end"].as_f64().is_some_and(|t| t > 0.0), "{ctx}");
    assert!(spec
        .modes
        .contains(&doc["final_mode"].as_str().expect("final_mode").to_string()));

    let outline: Outline = serde_json::from_str(text).expect("outline");
    assert_eq!(outline.final_state.0, states, "{ctx}: final_state order");
    for s in &states {
        assert!(doc["final_state"][s].as_f64().is_some(), "{ctx}: {s}");
    }
    if gradient {
        let w: Vec<String> = doc["wrt"]
            .as_array()
            .expect("wrt")
            .iter()
            .map(|v| v.as_str().expect("wrt entry").to_string())
            .collect();
        assert_eq!(w, wrt, "{ctx}: wrt");
        let jac = outline.jacobian.expect("jacobian").0;
        assert_eq!(
            jac.iter().map(|(s, _)| s.clone()).collect::<Vec<_>>(),
            states,
            "{ctx}: jacobian rows"
        );
        for (_, cols) in &jac {
            assert_eq!(cols, &wrt, "{ctx}: jacobian columns");
        }
        assert!(["forward", "adjoint"].contains(&doc["method"].as_str().expect("method")));
    }

    let events = doc["events"].as_array().expect("events");
    for (k, e) in events.iter().enumerate() {
        assert_eq!(e["index"].as_u64(), Some(k as u64), "{ctx}");
        assert!(e["time"].as_f64().is_some(), "{ctx}");
        let t = e["transition"].as_str().expect("transition");
        assert!(spec.transition_names().iter().any(|n| n == t), "{ctx}");
        for key in ["from_mode", "to_mode"] {
            let m = e[key].as_str().expect("mode");
            assert!(spec.modes.iter().any(|n| n == m), "{ctx}");
        }
        for key in ["state_before", "state_after"] {
            for s in &states {
                assert!(e[key][s].as_f64().is_some(), "{ctx}: {key}.{s}");
            }
        }
        if gradient {
            for w in &wrt {
                assert!(e["time_gradient"][w].as_f64().is_some(), "{ctx}: {w}");
            }
        } else {
            assert!(e.get("time_gradient").is_none(), "{ctx}");
        }
    }
    for o in doc["observations"].as_array().expect("observations") {
        assert!(o["time"].as_f64().is_some(), "{ctx}");
        for s in &states {
            assert!(o["state"][s].as_f64().is_some(), "{ctx}");
        }
        if gradient {
            for s in &states {
                for w in &wrt {
                    assert!(o["jacobian"][s][w].as_f64().is_some(), "{ctx}");
                }
            }
        } else {
            assert!(o.get("jacobian").is_none(), "{ctx}");
        }
    }
    let stats = &doc["stats"];
    assert!(stats["steps"].as_u64().is_some_and(|n| n > 0), "{ctx}");
    assert!(
        stats["rhs_evaluations"].as_u64().is_some_and(|n| n > 0),
        "{ctx}"
    );
    assert_eq!(stats["events"].as_u64(), Some(events.len() as u64), "{ctx}");
}

#[test]
fn every_model_has_an_example_scenario() {
    for model in ia_models::model_names() {
        let path = scenarios_dir().join(format!("{model}.json"));
        assert!(path.is_file(), "missing {}", path.display());
        let text = std::fs::read_to_string(&path).expect("read");
        let v: Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(v["model"].as_str(), Some(model));
    }
}

/// Every example scenario with its solver replaced by `dop853` and by
/// `dopri5` at the same tolerances (1e-10 unless the scenario says): the
/// same events, and the final state and forward Jacobian of one within
/// 1e-7 relative of the other's (reference: the other method, a different
/// Runge-Kutta pair on different steps).
#[test]
fn every_example_agrees_between_the_two_dormand_prince_pairs() {
    for file in example_files() {
        let text = std::fs::read_to_string(&file).expect("read");
        let mut v: Value = serde_json::from_str(&text).expect("JSON");
        let tolerance = |key: &str| v["solver"][key].as_f64().unwrap_or(1e-10);
        let (rtol, atol) = (tolerance("rtol"), tolerance("atol"));
        let mut by = |method: &str| {
            v["solver"] = serde_json::json!({"method": method, "rtol": rtol, "atol": atol});
            stdout_json(&run_stdin(&["gradient", "-"], &v.to_string()))
        };
        let (high, low) = (by("dop853"), by("dopri5"));
        let name = file.display();
        assert_eq!(
            high["events"].as_array().map(Vec::len),
            low["events"].as_array().map(Vec::len),
            "{name}"
        );
        for key in ["final_state", "jacobian"] {
            let (h, l) = (flatten(&high[key]), flatten(&low[key]));
            assert_eq!(h.len(), l.len(), "{name} {key}");
            for ((path, a), (_, b)) in h.iter().zip(&l) {
                assert!(
                    (a - b).abs() <= 1e-7 * b.abs().max(1.0),
                    "{name} {key}{path}: dop853 {a}, dopri5 {b}"
                );
            }
        }
    }
}

/// Reference: `dopri5` at 1e-12. `"solver": {"method": "exact"}` runs the
/// exact event-driven solver: the example scenarios of the models it takes
/// (`lif`, `lif-network`, `thermostat`, and `cuba-lif`, whose neurons are
/// linear pairs and whose inputs are thresholds on time) give the same events (transitions,
/// cascade roots) and, within 1e-8, the same times, states and final
/// state, with no steps taken, and forward `gradient` the same Jacobian
/// within 1e-7; through the exact solver, `--method adjoint` gives the
/// forward Jacobian and event-time gradients within 1e-10 (reference: the
/// other mode); a key the method does not take is refused.
#[test]
fn the_exact_solver_runs_the_linear_threshold_models() {
    let mut models = std::collections::BTreeSet::new();
    for file in example_files() {
        let text = std::fs::read_to_string(&file).expect("read");
        let mut v: Value = serde_json::from_str(&text).expect("JSON");
        let takes = ["lif", "lif-network", "thermostat", "cuba-lif"];
        if !takes.contains(&v["model"].as_str().unwrap_or("")) {
            continue;
        }
        models.insert(v["model"].as_str().unwrap().to_string());
        let name = file.display();
        for (command, tolerance) in [("simulate", 1e-8), ("gradient", 1e-7)] {
            v["solver"] = serde_json::json!({"method": "dopri5", "rtol": 1e-12, "atol": 1e-12});
            let stepped = stdout_json(&run_stdin(&[command, "-"], &v.to_string()));
            v["solver"] = serde_json::json!({"method": "exact"});
            let exact = stdout_json(&run_stdin(&[command, "-"], &v.to_string()));
            assert_eq!(exact["stats"]["steps"], 0, "{name}");
            let (a, b) = (
                exact["events"].as_array().unwrap(),
                stepped["events"].as_array().unwrap(),
            );
            assert_eq!(a.len(), b.len(), "{name}");
            for (x, y) in a.iter().zip(b) {
                assert_eq!(
                    (&x["transition"], &x["cascade_of"]),
                    (&y["transition"], &y["cascade_of"]),
                    "{name}"
                );
            }
            for key in ["events", "final_state", "jacobian"] {
                let (e, s) = (flatten(&exact[key]), flatten(&stepped[key]));
                assert_eq!(e.len(), s.len(), "{name} {key}");
                for ((path, x), (_, y)) in e.iter().zip(&s) {
                    assert!(
                        (x - y).abs() <= tolerance * y.abs().max(1.0),
                        "{name} {command} {key}{path}: exact {x}, dopri5 {y}"
                    );
                }
            }
        }
        // The other mode through the same solver: the adjoint.
        let forward = stdout_json(&run_stdin(&["gradient", "-"], &v.to_string()));
        let adjoint = stdout_json(&run_stdin(
            &["gradient", "--method", "adjoint", "-"],
            &v.to_string(),
        ));
        for key in ["events", "jacobian"] {
            let (a, f) = (flatten(&adjoint[key]), flatten(&forward[key]));
            assert_eq!(a.len(), f.len(), "{name} {key}");
            assert!(!a.is_empty(), "{name} {key}");
            for ((path, x), (_, y)) in a.iter().zip(&f) {
                assert!(
                    (x - y).abs() <= 1e-10 * y.abs().max(1.0),
                    "{name} {key}{path}: adjoint {x}, forward {y}"
                );
            }
        }
    }
    assert_eq!(
        models.len(),
        4,
        "an example of each model the exact solver takes"
    );
    let bad = r#"{"model": "lif", "t_end": 1, "solver": {"method": "exact", "rtol": 1e-9}}"#;
    let err = stderr(&run_stdin(&["simulate", "-"], bad));
    assert!(
        err.contains("unknown key 'rtol'") && err.contains("valid keys: method"),
        "{err}"
    );
}

/// The numbers of a JSON value, by their path (object keys in key order,
/// array entries by index).
fn flatten(value: &Value) -> Vec<(String, f64)> {
    let children: Vec<(String, &Value)> = match value {
        Value::Object(map) => map.iter().map(|(k, v)| (k.clone(), v)).collect(),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        other => {
            return other
                .as_f64()
                .map(|x| (String::new(), x))
                .into_iter()
                .collect()
        }
    };
    children
        .into_iter()
        .flat_map(|(k, v)| {
            flatten(v)
                .into_iter()
                .map(move |(path, x)| (format!("/{k}{path}"), x))
        })
        .collect()
}

#[rstest]
fn every_example_runs(#[values("simulate", "forward", "adjoint")] command: &str) {
    let files = example_files();
    assert!(files.len() >= 13, "found {} scenarios", files.len());
    for file in files {
        let path = file.to_string_lossy().into_owned();
        let args: Vec<&str> = match command {
            "simulate" => vec!["simulate", &path],
            "forward" => vec!["gradient", &path],
            _ => vec!["gradient", &path, "--method", "adjoint"],
        };
        let out = run(&args);
        let doc = stdout_json(&out);
        let text = String::from_utf8_lossy(&out.stdout);
        check_document(&doc, &text, command != "simulate", &file);
        if command == "adjoint" {
            assert_eq!(doc["method"], "adjoint");
        }
    }
}

#[test]
fn forward_is_the_default_method() {
    let doc = stdout_json(&run(&["gradient", &scenario("lif.json")]));
    assert_eq!(doc["method"], "forward");
    let doc = stdout_json(&run(&[
        "gradient",
        &scenario("lif.json"),
        "--method",
        "forward",
    ]));
    assert_eq!(doc["method"], "forward");
}

#[test]
fn dash_reads_standard_input() {
    let text = std::fs::read_to_string(scenario("two-ball.json")).expect("read");
    let a = stdout_json(&run_stdin(&["gradient", "-"], &text));
    let b = stdout_json(&run(&["gradient", &scenario("two-ball.json")]));
    assert_eq!(a, b);
}

#[test]
fn defaults_fill_missing_values() {
    let out = run_stdin(
        &["simulate", "-"],
        r#"{"model": "ball2d-flat", "t_end": 2}"#,
    );
    let doc = stdout_json(&out);
    let reference = stdout_json(&run(&["simulate", &scenario("ball2d-flat.json")]));
    // Same model defaults, looser default tolerance.
    let a = doc["final_state"]["x"].as_f64().expect("x");
    let b = reference["final_state"]["x"].as_f64().expect("x");
    assert!((a - b).abs() < 1e-6, "{a} vs {b}");
    assert_eq!(doc["events"].as_array().map(Vec::len), Some(3));
}

#[test]
fn models_json_lists_every_model() {
    let doc = stdout_json(&run(&["models", "--json"]));
    let names: Vec<&str> = doc
        .as_array()
        .expect("array")
        .iter()
        .map(|m| m["name"].as_str().expect("name"))
        .collect();
    let expected = [
        "ball1d",
        "ball2d-flat",
        "ball2d-bowl",
        "two-ball",
        "lif",
        "lif-network",
        "thermostat",
        "impact-pendulum",
        "rimless-wheel",
        "slip-hopper",
        "particle-chain",
        "cuba-lif",
    ];
    assert_eq!(names, expected);
    for m in doc.as_array().expect("array") {
        for key in [
            "states",
            "params",
            "modes",
            "initial_mode",
            "t_end",
            "transitions",
        ] {
            assert!(m.get(key).is_some(), "{key} missing in {m}");
        }
        for q in m["states"].as_array().expect("states") {
            assert!(q["name"].is_string() && q["default"].is_number() && q["unit"].is_string());
        }
    }
}

#[test]
fn models_table_lists_every_model() {
    let out = run(&["models"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    for name in ia_models::model_names() {
        assert!(text.contains(name), "{name} missing");
    }
    assert!(text.contains("mu = 0.7"), "{text}");
}

/// Issue 10: `ode_solvers.rk4` and `ode_solvers.dopri5` run under the
/// adjoint as their built-in equivalents (documented in the crate docs);
/// the reference is the forward method on those built-in solvers.
#[rstest]
#[case::rk4(
    r#""method": "ode_solvers.rk4", "macro_step": 1e-4"#,
    r#""method": "rk4", "dt": 1e-4"#
)]
#[case::dopri5(
    r#""method": "ode_solvers.dopri5", "rtol": 1e-12, "atol": 1e-12, "macro_step": 0.01"#,
    r#""method": "dopri5", "rtol": 1e-12, "atol": 1e-12, "max_step": 0.01"#
)]
fn adjoint_runs_ode_solvers_as_the_built_in_equivalent(
    #[case] adapter: &str,
    #[case] built_in: &str,
) {
    let scenario = |solver: &str| {
        format!(r#"{{"model": "lif", "t_end": 0.05, "observe": [0.02], "solver": {{{solver}}}}}"#)
    };
    let adjoint = stdout_json(&run_stdin(
        &["gradient", "-", "--method", "adjoint"],
        &scenario(adapter),
    ));
    let forward = stdout_json(&run_stdin(
        &["gradient", "-", "--method", "forward"],
        &scenario(built_in),
    ));
    assert_eq!(adjoint["method"], "adjoint");
    assert_eq!(adjoint["events"].as_array().map(Vec::len), Some(3));
    for w in ["initial.V", "param.I", "param.tau", "param.Vth", "param.Vr"] {
        let a = adjoint["jacobian"]["V"][w].as_f64().unwrap();
        let f = forward["jacobian"]["V"][w].as_f64().unwrap();
        assert!(close(a, f), "{w}: adjoint {a}, forward {f}");
    }
}

/// `thermostat.json` (solver `ode_solvers.dop853`) with `--method adjoint`
/// runs as the built-in `dop853` with `max_step` the adapter's macro step
/// (it used to be refused: there was no built-in eighth-order method).
/// Reference: the forward sensitivities of the adapter's own run, on other
/// steps at the same tolerance (1e-12).
#[test]
fn adjoint_of_ode_solvers_dop853_runs_as_the_built_in_dop853() {
    let path = scenario("thermostat.json");
    let forward = stdout_json(&run(&["gradient", &path]));
    let adjoint = stdout_json(&run(&["gradient", &path, "--method", "adjoint"]));
    assert_eq!(adjoint["method"], "adjoint");
    let (f, a) = (&forward["jacobian"]["T"], &adjoint["jacobian"]["T"]);
    let columns = f.as_object().expect("a Jacobian row");
    assert_eq!(columns.len(), 6, "{f}");
    for (w, value) in columns {
        let (f, a) = (value.as_f64().unwrap(), a[w].as_f64().unwrap());
        assert!(
            (a - f).abs() <= 1e-8 * f.abs().max(1.0),
            "{w}: adjoint {a}, forward {f}"
        );
    }
}

/// Issue 10: the rimless wheel with `l = 1e-16` gave all-null derivatives
/// under the adjoint; both methods report `non_finite`.
#[rstest]
fn overflowing_derivatives_are_non_finite(#[values("forward", "adjoint")] method: &str) {
    let input = r#"{"model": "rimless-wheel", "params": {"l": 1e-16}, "t_end": 3, "solver": {"method": "rk4", "dt": 0.001}}"#;
    let out = run_stdin(&["gradient", "-", "--method", method], input);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(out.stdout.is_empty());
    assert_error_line(&err);
    assert!(err.starts_with("error: non_finite: "), "{err}");
    // The state alone stays finite: simulate succeeds.
    stdout_json(&run_stdin(&["simulate", "-"], input));
}

/// Issue 10: `"max_events": 1000.0` was refused as "not whole".
#[test]
fn whole_valued_float_max_events_is_accepted() {
    for (value, events) in [("1000.0", 3), ("1e4", 3)] {
        let input = format!(r#"{{"model": "lif", "t_end": 0.05, "max_events": {value}}}"#);
        let doc = stdout_json(&run_stdin(&["simulate", "-"], &input));
        assert_eq!(doc["events"].as_array().map(Vec::len), Some(events));
    }
    // And it counts: 2.0 stops the three-spike run.
    let out = run_stdin(
        &["simulate", "-"],
        r#"{"model": "lif", "t_end": 0.05, "max_events": 2.0}"#,
    );
    assert!(stderr(&out).contains("max_events = 2"), "{}", stderr(&out));
}

/// Issue 10: reading `/dev/zero` or `/dev/urandom` as the scenario read
/// for ever; input is limited to 16 MiB.
#[rstest]
#[case::zero("/dev/zero")]
#[case::urandom("/dev/urandom")]
fn endless_input_is_refused(#[case] device: &str) {
    if !Path::new(device).exists() {
        return;
    }
    let started = std::time::Instant::now();
    let out = run(&["simulate", device]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_error_line(&err);
    assert!(
        err.starts_with("error: io: ") && err.contains("16 MiB"),
        "{err}"
    );
    assert!(started.elapsed().as_secs() < 60);
}

#[rstest]
#[case::no_subcommand(&[])]
#[case::unknown_subcommand(&["integrate", "x.json"])]
#[case::unknown_flag(&["models", "--bogus"])]
#[case::unknown_method(&["gradient", "x.json", "--method", "backward"])]
#[case::missing_file_argument(&["simulate"])]
fn usage_errors_exit_2(#[case] args: &[&str]) {
    let out = run(args);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert_error_line(&err);
    assert!(
        err.starts_with("error: usage: ") && err.contains("--help"),
        "{err}"
    );
}

#[test]
fn unreadable_file_exits_2() {
    let out = run(&["simulate", "/nonexistent/scenario.json"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.starts_with("error: ") && err.contains("/nonexistent/scenario.json"),
        "{err}"
    );
}

#[test]
fn help_exits_0() {
    let out = run(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("gradient"));
}

fn close(got: f64, reference: f64) -> bool {
    if reference.abs() < 1e-3 {
        (got - reference).abs() <= 1e-9
    } else {
        (got - reference).abs() <= 1e-7 * reference.abs()
    }
}

#[rstest]
fn matches_closed_form(
    #[values("ball2d_flat_a", "ball2d_bowl_a", "lif_a", "thermostat_a")] case: &str,
    #[values("forward", "adjoint")] method: &str,
) {
    let text = std::fs::read_to_string(REFERENCES)
        .unwrap_or_else(|e| panic!("cannot read {REFERENCES}: {e}"));
    let refs: Value = serde_json::from_str(&text).expect("references are JSON");
    let r = &refs["cases"][case];
    assert!(r.is_object(), "no reference case {case}");
    let doc = stdout_json(&run(&[
        "gradient",
        &scenario(&format!("{case}.json")),
        "--method",
        method,
    ]));
    assert_eq!(doc["model"], r["model"]);
    assert_eq!(doc["t_end"], r["t_end"]);
    let mut checked = 0;
    let mut check = |what: String, got: &Value, reference: &Value| {
        let g = got
            .as_f64()
            .unwrap_or_else(|| panic!("{case}/{method}: {what} missing"));
        let want = reference.as_f64().expect("reference number");
        assert!(
            close(g, want),
            "{case}/{method}: {what} = {g}, reference {want}, difference {:e}",
            g - want
        );
        checked += 1;
    };
    for (s, v) in r["final_state"].as_object().expect("final_state") {
        check(format!("final_state.{s}"), &doc["final_state"][s], v);
    }
    let times = r["event_times"].as_array().expect("event_times");
    let events = doc["events"].as_array().expect("events");
    assert_eq!(events.len(), times.len(), "{case}/{method}: event count");
    for (k, t) in times.iter().enumerate() {
        check(format!("events[{k}].time"), &events[k]["time"], t);
    }
    for (s, row) in r["jacobian"].as_object().expect("jacobian") {
        for (w, v) in row.as_object().expect("row") {
            check(format!("jacobian.{s}.{w}"), &doc["jacobian"][s][w], v);
        }
    }
    if let Some(etj) = r.get("event_time_jacobian").and_then(Value::as_object) {
        for (k, row) in etj {
            let k: usize = k.parse().expect("event index");
            for (w, v) in row.as_object().expect("row") {
                check(
                    format!("events[{k}].time_gradient.{w}"),
                    &events[k]["time_gradient"][w],
                    v,
                );
            }
        }
    }
    assert!(checked > 10, "{case}: only {checked} numbers compared");
}

#[rstest]
fn two_ball_exchanges_velocities(#[values("forward", "adjoint")] method: &str) {
    let doc = stdout_json(&run(&[
        "gradient",
        &scenario("two-ball.json"),
        "--method",
        method,
    ]));
    let x2 = doc["final_state"]["x2"].as_f64().expect("x2");
    assert!((x2 - 1.2).abs() < 1e-9, "x2(T) = {x2}");
    let expected = [
        ("initial.x1", 1.0),
        ("initial.x2", 0.0),
        ("initial.v1", 1.0),
        ("initial.v2", 0.0),
    ];
    for (w, want) in expected {
        let got = doc["jacobian"]["x2"][w].as_f64().expect("entry");
        assert!(
            (got - want).abs() < 1e-9,
            "{method}: d x2/d {w} = {got}, want {want}"
        );
    }
    let events = doc["events"].as_array().expect("events");
    assert_eq!(events.len(), 1);
    let t = events[0]["time"].as_f64().expect("time");
    assert!((t - 0.32).abs() < 1e-9, "impact at {t}");
}

#[test]
fn simulate_and_gradient_agree_on_the_run() {
    let sim = stdout_json(&run(&["simulate", &scenario("ball2d-bowl.json")]));
    let grad = stdout_json(&run(&[
        "gradient",
        &scenario("ball2d-bowl.json"),
        "--method",
        "adjoint",
    ]));
    for s in ["x", "y", "vx", "vy"] {
        let a = sim["final_state"][s].as_f64().expect("sim");
        let b = grad["final_state"][s].as_f64().expect("grad");
        assert!((a - b).abs() < 1e-12, "{s}: {a} vs {b}");
    }
    assert_eq!(
        sim["events"].as_array().map(Vec::len),
        grad["events"].as_array().map(Vec::len)
    );
    assert_eq!(sim["observations"].as_array().map(Vec::len), Some(2));
}

/// The JSON block that follows `marker` in the README at `readme`
/// (relative to this crate).
fn readme_block_after(readme: &str, marker: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(readme);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{readme}: {e}"));
    let start = text
        .find(marker)
        .unwrap_or_else(|| panic!("{readme} no longer shows `{marker}`"))
        + marker.len();
    let end = start + text[start..].find("```").expect("the block ends");
    serde_json::from_str(&text[start..end])
        .unwrap_or_else(|e| panic!("{readme}: the block after `{marker}` is not JSON: {e}"))
}

/// The READMEs show commands with their output; each output must be what
/// the binary prints today (the reference is the binary itself: a README is
/// a copy of its output, regenerated by running the command shown).
#[test]
fn readme_examples_are_the_current_output() {
    let shown = readme_block_after(
        "README.md",
        "$ impact-adjoint gradient examples/scenarios/ball2d_flat_a.json\n",
    );
    let printed = stdout_json(&run(&["gradient", &scenario("ball2d_flat_a.json")]));
    assert_eq!(
        shown, printed,
        "crates/ia-cli/README.md: the example output is stale; replace it with the output of \
         `cargo run -p ia-cli -- gradient examples/scenarios/ball2d_flat_a.json`"
    );
    let shown = readme_block_after("README.md", "```json\n");
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(scenario("ball2d_flat_a.json")).unwrap())
            .unwrap();
    assert_eq!(
        shown, file,
        "crates/ia-cli/README.md: the scenario differs from examples/scenarios/ball2d_flat_a.json"
    );

    let input = r#"{"model": "two-ball", "t_end": 1.0}"#;
    let shown = readme_block_after(
        "../../README.md",
        &format!("$ echo '{input}' | cargo run -q -p ia-cli -- gradient --method adjoint -\n"),
    );
    let printed = stdout_json(&run_stdin(&["gradient", "--method", "adjoint", "-"], input));
    assert_eq!(
        shown, printed,
        "README.md: the two-ball example output is stale; re-run the command it shows"
    );
}

/// The README's shortened `periodic --compact` block (parts of the one line
/// the command prints, `...` where it leaves some out): each part it shows
/// must be in what the binary prints today, so that a number that moved
/// is noticed (the reference is the binary itself, as above).
#[test]
fn readme_shortened_periodic_block_is_the_current_output() {
    let command =
        "$ cargo run -q -p ia-cli -- periodic --compact examples/periodic/rimless-wheel.json\n";
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let text = std::fs::read_to_string(&path).expect("README.md");
    let start = text
        .find(command)
        .expect("README.md no longer shows the rimless wheel's periodic command")
        + command.len();
    let end = start + text[start..].find("```").expect("the block ends");
    let file =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/periodic/rimless-wheel.json");
    let out = run(&["periodic", "--compact", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let printed = String::from_utf8(out.stdout).expect("UTF-8");
    let parts: Vec<&str> = text[start..end]
        .split("...")
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .collect();
    assert!(
        parts.len() >= 3,
        "the block shows parts of the output: {parts:?}"
    );
    for part in parts {
        assert!(
            printed.contains(part),
            "README.md: the periodic block shows `{part}`, which the command no longer prints; \
             re-run it and copy the parts again:\n{printed}"
        );
    }
}

/// The cascade scenario: neuron 0's spike kicks neuron 1 past threshold
/// (it fires at the same instant) and neuron 2 to 0.99, short of it (it must
/// not fire). Reference: the equations by hand (both rest at their drives
/// until the kick).
#[test]
fn a_kick_short_of_threshold_does_not_fire() {
    let doc = stdout_json(&run(&["simulate", &scenario("lif_network_cascade.json")]));
    let events = doc["events"].as_array().expect("events");
    let fired: Vec<&str> = events
        .iter()
        .map(|e| e["transition"].as_str().unwrap())
        .collect();
    assert_eq!(fired, ["spike0", "spike1"]);
    assert_eq!(events[0]["time"], events[1]["time"]);
    assert!((events[1]["state_before"]["V2"].as_f64().unwrap() - 0.99).abs() < 1e-12);
}

/// Issue 10: a near-grazing impact-pendulum run gave different events (and
/// so different checks) under forward and adjoint, because a crossing that
/// came back within one step was missed by the adjoint's longer steps.
/// Released at rest from `theta = -(theta_wall + d)`, the pendulum swings
/// to `theta_wall + d` (energy conservation), so it must reach the wall;
/// both methods now see the same impacts at the same times.
#[rstest]
fn near_grazing_runs_see_the_same_events(#[values(1e-6, 3e-7, 1e-8)] d: f64) {
    let input = format!(
        r#"{{"model": "impact-pendulum", "initial_state": {{"theta": {}, "omega": 0}}, "t_end": 5,
           "solver": {{"rtol": 1e-12, "atol": 1e-12}}}}"#,
        -0.1 - d
    );
    let forward = stdout_json(&run_stdin(&["gradient", "-"], &input));
    let adjoint = stdout_json(&run_stdin(
        &["gradient", "-", "--method", "adjoint"],
        &input,
    ));
    let times = |doc: &Value| -> Vec<f64> {
        doc["events"]
            .as_array()
            .expect("events")
            .iter()
            .map(|e| e["time"].as_f64().expect("time"))
            .collect()
    };
    let (tf, ta) = (times(&forward), times(&adjoint));
    assert!(!tf.is_empty(), "the pendulum reaches the wall");
    assert_eq!(tf.len(), ta.len(), "forward {tf:?}, adjoint {ta:?}");
    for (f, a) in tf.iter().zip(&ta) {
        assert!((f - a).abs() < 1e-6, "forward {tf:?}, adjoint {ta:?}");
    }
}

/// `--compact` prints the same document (reference: the indented output,
/// parsed) on one line, keys in the same order.
#[rstest]
fn compact_output_is_the_same_document_on_one_line(
    #[values(&["simulate"][..], &["gradient"][..], &["gradient", "--method", "adjoint"][..])]
    command: &[&str],
) {
    let file = scenario("ball2d_flat_a.json");
    let mut args: Vec<&str> = command.to_vec();
    args.push(&file);
    let pretty = run(&args);
    args.push("--compact");
    let compact = run(&args);
    let text = String::from_utf8_lossy(&compact.stdout);
    assert_eq!(text.trim_end().lines().count(), 1, "{text}");
    assert_eq!(stdout_json(&compact), stdout_json(&pretty));
    let keys = |out: &Output| -> Vec<String> {
        serde_json::from_str::<Keys>(&String::from_utf8_lossy(&out.stdout))
            .expect("keys")
            .0
    };
    assert_eq!(keys(&compact), keys(&pretty));
}

/// `"adjoint": {"checkpoints": K}` bounds the tape of the loss's one
/// backward pass; the gradient is the full tape's (reference: the same
/// scenario without the key, which must agree to the last digit printed).
#[test]
fn checkpointed_loss_gradient_equals_the_full_tape() {
    let base = r#""model": "lif", "t_end": 0.05, "solver": {"method": "rk4", "dt": 1e-4},
        "loss": [{"of": "final.V", "weight": 1.0}, {"of": "event.-1.time", "weight": 2.0}]"#;
    let full = format!("{{{base}}}");
    let lean = format!(r#"{{{base}, "adjoint": {{"checkpoints": 4}}}}"#);
    let args = ["gradient", "-", "--method", "adjoint"];
    let full = stdout_json(&run_stdin(&args, &full));
    let lean = stdout_json(&run_stdin(&args, &lean));
    assert!(full["loss"]["gradient"]["param.tau"].as_f64().is_some());
    assert_eq!(lean["loss"], full["loss"]);
}

/// A run of several seconds, 10^6 switches at `rtol = atol = 1e-12` (about
/// 4.5 s on the machine that ran 10^6 switches at the default 1e-10 in
/// 1.75 s; the line appears after one second, and a run of about one second
/// went without a line once the event location got cheaper, so the run is
/// kept several times longer than that): the progress line shows on
/// a terminal's standard error (a pseudo-terminal from `script`, where the
/// machine has it), never with `--quiet`, and never on a pipe. Reference:
/// the line's documented form (`<percent> %  t = ... of ...`).
#[test]
fn a_long_run_shows_progress_on_a_terminal_only() {
    let path = std::env::temp_dir().join(format!("ia-progress-{}.json", std::process::id()));
    std::fs::write(
        &path,
        r#"{"model": "thermostat", "t_end": 1640000, "max_events": 2000000, "record": {"events": "none"},
            "solver": {"method": "dopri5", "rtol": 1e-12, "atol": 1e-12}, "max_steps": 50000000}"#,
    )
    .unwrap();
    let file = path.to_string_lossy().into_owned();
    let piped = run(&["simulate", &file, "--compact"]);
    assert_eq!(piped.status.code(), Some(0));
    assert!(piped.stderr.is_empty(), "{}", stderr(&piped));
    let on_terminal = |extra: &str| {
        let line = format!("{BIN} simulate {file} --compact {extra} > /dev/null");
        Command::new("script")
            .args(["-qec", &line, "/dev/null"])
            .output()
            .ok()
            .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
    };
    match (on_terminal(""), on_terminal("--quiet")) {
        (Some(shown), Some(quiet)) => {
            assert!(shown.contains(" %  t = "), "no progress line: {shown:?}");
            assert!(!quiet.contains(" %  t = "), "--quiet showed: {quiet:?}");
        }
        _ => eprintln!("no script(1) on this machine: the terminal half is not checked"),
    }
    let _ = std::fs::remove_file(&path);
}

/// `record`: the events kept are the last ones with their run-wide indices;
/// the final state, statistics and loss gradient are those of the full
/// record (reference: the same scenario recording every event).
#[rstest]
fn recording_the_last_events_keeps_the_results(#[values("forward", "adjoint")] method: &str) {
    let with = |record: &str| {
        format!(
            r#"{{"model": "ball1d", "t_end": 3, "record": {{"events": {record}}},
                "loss": [{{"of": "final.h", "weight": 1}}, {{"of": "event.-1.time", "weight": 0.5}}]}}"#
        )
    };
    let full = stdout_json(&run_stdin(
        &["gradient", "--method", method, "-"],
        &with("\"all\""),
    ));
    let last = stdout_json(&run_stdin(
        &["gradient", "--method", method, "-"],
        &with("2"),
    ));
    let events = full["events"].as_array().unwrap();
    assert!(events.len() > 2, "{}", events.len());
    assert_eq!(
        last["events"].as_array().unwrap()[..],
        events[events.len() - 2..]
    );
    for key in ["final_state", "stats", "loss"] {
        assert_eq!(last[key], full[key], "{key}");
    }
    let simulated = stdout_json(&run_stdin(&["simulate", "-"], &with("\"all\"")));
    let none = stdout_json(&run_stdin(&["simulate", "-"], &with("\"none\"")));
    assert_eq!(none["final_state"], simulated["final_state"]);
    assert_eq!(none["stats"], simulated["stats"]);
    assert_eq!(none["events"], serde_json::json!([]));
    // A loss reading an event the record does not keep is refused.
    let first = with("1").replace("event.-1.time", "event.0.time");
    let out = run_stdin(&["gradient", "--method", method, "-"], &first);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("loss[0].of") || err.contains("loss[1].of"),
        "{err}"
    );
    assert!(err.contains("is not recorded"), "{err}");
}
