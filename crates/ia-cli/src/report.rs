//! Building the JSON documents the commands print (their format is
//! documented in the [crate documentation](crate)).
//!
//! The documents are `serde_json` values; the workspace builds serde_json
//! with `preserve_order`, so objects keep their keys in insertion order and
//! state and parameter keys appear in the model's order.

use ia_adjoint::{Gradient, Sensitivities};
use ia_core::{HybridSystem, Trajectory};
use nalgebra::DMatrix;
use serde_json::Value;

/// Pretty-printed JSON text of a document.
pub fn pretty(document: &Value) -> String {
    // Serializing a `Value` into a String cannot fail: every key is a
    // string and every writer call goes to memory.
    serde_json::to_string_pretty(document).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

/// An object with `entries`, keys in this order.
pub(crate) fn obj(entries: impl IntoIterator<Item = (String, Value)>) -> Value {
    Value::Object(entries.into_iter().collect())
}

/// A number (a non-finite one is `null`, as serde_json writes it).
pub(crate) fn num(x: f64) -> Value {
    Value::from(x)
}

fn str(s: &str) -> Value {
    Value::from(s)
}

/// `{name: value}` in the order of `names`.
fn named<'a>(names: &[String], values: impl IntoIterator<Item = &'a f64>) -> Value {
    obj(names
        .iter()
        .zip(values)
        .map(|(n, &v)| (n.clone(), num(v)))
        .collect::<Vec<_>>())
}

/// `{state: {wrt: d state / d wrt}}`.
fn jacobian(states: &[String], wrt: &[String], jac: &DMatrix<f64>) -> Value {
    obj(states
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let row: Vec<f64> = (0..wrt.len()).map(|j| jac[(i, j)]).collect();
            (s.clone(), named(wrt, &row))
        })
        .collect::<Vec<_>>())
}

/// The output of `periodic`: the orbit, its multipliers and their
/// parameter derivatives by name (`{"unavailable": reason}` in place of the
/// derivatives when they are not defined).
pub fn periodic_document(model: &str, orbit: &ia_orbits::PeriodicOrbit) -> Value {
    let states = &orbit.state_names;
    let params: Vec<String> = orbit
        .param_names
        .iter()
        .map(|p| ia_core::Wrt::param_label(p))
        .collect();
    let complex = |re: f64, im: f64| obj(vec![("re".into(), num(re)), ("im".into(), num(im))]);
    let multipliers = orbit
        .multipliers
        .iter()
        .map(|m| {
            let mut entries = vec![("re".into(), num(m.re)), ("im".into(), num(m.im))];
            if m.trivial {
                entries.push(("trivial".into(), Value::Bool(true)));
            }
            if m.advancing {
                entries.push(("advancing".into(), Value::Bool(true)));
            }
            obj(entries)
        })
        .collect();
    let sensitivities = match (&orbit.sensitivities, &orbit.sensitivities_unavailable) {
        (Some(sens), _) => obj(vec![
            (
                "fixed_point".into(),
                jacobian(states, &params, &sens.fixed_point),
            ),
            ("period".into(), named(&params, &sens.period)),
            (
                "multipliers".into(),
                Value::Array(
                    sens.multipliers
                        .iter()
                        .map(|per_param| {
                            obj(params
                                .iter()
                                .zip(per_param)
                                .map(|(p, d)| (p.clone(), complex(d.re, d.im))))
                        })
                        .collect(),
                ),
            ),
        ]),
        (None, reason) => obj(vec![(
            "unavailable".into(),
            str(reason.as_deref().unwrap_or("not computed")),
        )]),
    };
    let mut document = vec![
        ("model".into(), str(model)),
        ("section".into(), str(&orbit.section)),
        ("fixed_point".into(), named(states, &orbit.fixed_point)),
        ("period".into(), num(orbit.period)),
    ];
    if !orbit.advancing.is_empty() {
        document.push(("advance".into(), named(&orbit.advancing, &orbit.advance)));
    }
    document.extend([
        (
            "newton_iterations".into(),
            Value::from(orbit.newton_iterations as u64),
        ),
        ("residual".into(), num(orbit.residual)),
        ("multipliers".into(), Value::Array(multipliers)),
        (
            "monodromy".into(),
            jacobian(states, states, &orbit.monodromy),
        ),
        ("sensitivities".into(), sensitivities),
    ]);
    obj(document)
}

/// The output of `fit`: the fitted values and their standard errors by
/// name, the final loss and gradient norm, the iterations, the number of
/// data values and why the optimiser stopped.
pub fn fit_document(model: &str, result: &ia_fit::FitResult, data: usize) -> Value {
    let named = |values: &[f64]| {
        obj(result
            .names
            .iter()
            .zip(values)
            .map(|(n, &v)| (n.clone(), num(v))))
    };
    obj(vec![
        ("model".into(), str(model)),
        ("values".into(), named(&result.values)),
        ("standard_errors".into(), named(&result.standard_errors)),
        ("loss".into(), num(result.loss)),
        ("gradient_norm".into(), num(result.gradient_norm)),
        ("iterations".into(), Value::from(result.iterations)),
        ("data".into(), Value::from(data as u64)),
        (
            "termination".into(),
            Value::from(result.termination.clone()),
        ),
    ])
}

/// The output of `simulate` (`sens` absent) or `gradient` (`sens` present,
/// with the method's name).
pub fn document(
    model: &str,
    system: &HybridSystem,
    t_end: f64,
    trajectory: &Trajectory,
    sens: Option<(&str, &Sensitivities)>,
) -> Value {
    match sens {
        None => build(model, system, t_end, trajectory, None, None, None),
        Some((method, s)) => build(
            model,
            system,
            t_end,
            trajectory,
            Some((method, &s.wrt)),
            Some(s),
            None,
        ),
    }
}

/// The output of `gradient` with a declared loss: the fields of
/// [`document`], the per-output derivatives (`jacobian`, `time_gradient`,
/// observation `jacobian`) only if `sens` is given, and `loss` (`{"value",
/// "gradient": {wrt: dL/dwrt}}`) after `jacobian`.
pub fn loss_document(
    model: &str,
    system: &HybridSystem,
    t_end: f64,
    method: &str,
    sens: Option<&Sensitivities>,
    loss: &Gradient,
) -> Value {
    let trajectory = sens.map_or(&loss.trajectory, |s| &s.trajectory);
    build(
        model,
        system,
        t_end,
        trajectory,
        Some((method, &loss.wrt)),
        sens,
        Some(loss),
    )
}

fn build(
    model: &str,
    system: &HybridSystem,
    t_end: f64,
    trajectory: &Trajectory,
    method: Option<(&str, &[String])>,
    sens: Option<&Sensitivities>,
    loss: Option<&Gradient>,
) -> Value {
    let states = system.state_names();
    let mode_name = |m: usize| str(&system.modes()[m].name);
    let mut out = vec![("model".to_string(), str(model))];
    if let Some((method, _)) = method {
        out.push(("method".into(), str(method)));
    }
    out.push(("t_end".into(), num(t_end)));
    out.push(("final_mode".into(), mode_name(trajectory.final_mode)));
    out.push(("final_state".into(), named(states, &trajectory.final_state)));
    if let Some((_, wrt)) = method {
        out.push((
            "wrt".into(),
            Value::Array(wrt.iter().map(|w| str(w)).collect()),
        ));
    }
    if let Some(s) = sens {
        out.push((
            "jacobian".into(),
            jacobian(states, &s.wrt, &s.final_jacobian),
        ));
    }
    if let Some(g) = loss {
        out.push((
            "loss".into(),
            obj(vec![
                ("value".into(), num(g.value)),
                ("gradient".into(), named(&g.wrt, &g.concatenated())),
            ]),
        ));
    }
    let events = trajectory
        .events
        .iter()
        .enumerate()
        .map(|(k, e)| {
            let mut ev = vec![
                ("index".to_string(), Value::from(e.index as u64)),
                ("time".into(), num(e.time)),
                (
                    "transition".into(),
                    str(&system.transitions()[e.transition].name),
                ),
                ("from_mode".into(), mode_name(e.from_mode)),
                ("to_mode".into(), mode_name(e.to_mode)),
                (
                    "state_before".into(),
                    named(states, trajectory.state_before(k)),
                ),
                (
                    "state_after".into(),
                    named(states, trajectory.state_after(k)),
                ),
            ];
            if let Some(s) = sens {
                if k < s.event_time_gradients.nrows() {
                    let g = s.event_time_gradients.row(k);
                    ev.push(("time_gradient".into(), named(&s.wrt, g.iter())));
                }
            }
            obj(ev)
        })
        .collect();
    out.push(("events".into(), Value::Array(events)));
    let observations = trajectory
        .observations
        .iter()
        .enumerate()
        .map(|(k, o)| {
            let mut ob = vec![
                ("time".to_string(), num(o.time)),
                ("state".into(), named(states, &o.state)),
            ];
            if let Some(s) = sens {
                if let Some(j) = s.observation_jacobians.get(k) {
                    ob.push(("jacobian".into(), jacobian(states, &s.wrt, j)));
                }
            }
            obj(ob)
        })
        .collect();
    out.push(("observations".into(), Value::Array(observations)));
    let st = &trajectory.stats;
    let mut stats = vec![
        ("steps".into(), Value::from(st.steps as u64)),
        (
            "rhs_evaluations".into(),
            Value::from(st.rhs_evaluations as u64),
        ),
        ("events".into(), Value::from(st.events as u64)),
    ];
    // Shown only when the explicit method found the flow stiff.
    if st.stiff_steps > 0 {
        stats.push(("stiff_steps".into(), Value::from(st.stiff_steps as u64)));
    }
    // Shown only when the adjoint's taped run was redone (it found the
    // flow stiff): the steps of the run discarded.
    if st.redone_steps > 0 {
        stats.push(("redone_steps".into(), Value::from(st.redone_steps as u64)));
    }
    out.push(("stats".into(), obj(stats)));
    obj(out)
}

/// `json` on one line: the whitespace between tokens removed, strings
/// untouched (what `--compact` prints; the keys keep their order).
///
/// ```
/// let pretty = "{\n  \"a b\": [\n    1,\n    2\n  ]\n}";
/// assert_eq!(ia_cli::compact_json(pretty), "{\"a b\":[1,2]}");
/// ```
pub fn compact_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in json.chars() {
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if !c.is_whitespace() {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_keep_insertion_order_and_full_precision() {
        let v = obj(vec![
            ("z".into(), num(0.1 + 0.2)),
            ("a".into(), num(f64::NAN)),
            ("m".into(), Value::from(3)),
        ]);
        let text = serde_json::to_string(&v).unwrap();
        assert_eq!(text, r#"{"z":0.30000000000000004,"a":null,"m":3}"#);
    }

    /// The documents are serde_json values whose objects keep the model's
    /// order (the workspace's `preserve_order`). Reference: the state order
    /// of `ball2d-bowl` in its spec, `x, y, vx, vy` (not sorted).
    #[test]
    fn documents_are_serde_json_values_in_model_order() {
        let scenario =
            ia_scenario::Scenario::parse(r#"{"model": "ball2d-bowl", "t_end": 0.5}"#, "test")
                .unwrap();
        let trajectory = scenario
            .simulate_from(scenario.initial_state.clone(), scenario.params.clone())
            .unwrap();
        let doc: Value = document("ball2d-bowl", &scenario.system, 0.5, &trajectory, None);
        let keys: Vec<&String> = doc["final_state"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["x", "y", "vx", "vy"]);
        let top: Vec<&String> = doc.as_object().unwrap().keys().collect();
        assert_eq!(top[..3], ["model", "t_end", "final_mode"]);
    }
}
