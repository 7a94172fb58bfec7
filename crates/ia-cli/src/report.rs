//! Building the JSON documents the commands print (their format is
//! documented in the [crate documentation](crate)).
//!
//! Objects keep their keys in insertion order, so state and parameter keys
//! appear in the model's order; this is done with a small ordered value type
//! rather than serde_json's `preserve_order` feature, which would change the
//! key order of every other crate of the workspace built together with this
//! one.

use ia_adjoint::{Gradient, Sensitivities};
use ia_core::{HybridSystem, Trajectory};
use nalgebra::DMatrix;
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};

/// A JSON value whose objects keep their keys in insertion order.
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    /// A number (non-finite values print as `null`, as serde_json does).
    Num(f64),
    /// A whole number.
    Int(u64),
    /// A string.
    Str(String),
    /// A boolean.
    Bool(bool),
    /// An array.
    Arr(Vec<Json>),
    /// An object, keys in order.
    Obj(Vec<(String, Json)>),
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Num(x) if x.is_finite() => serializer.serialize_f64(*x),
            Json::Num(_) => serializer.serialize_unit(),
            Json::Int(n) => serializer.serialize_u64(*n),
            Json::Str(s) => serializer.serialize_str(s),
            Json::Bool(b) => serializer.serialize_bool(*b),
            Json::Arr(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Json::Obj(entries) => {
                let mut map = serializer.serialize_map(Some(entries.len()))?;
                for (k, v) in entries {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

impl Json {
    /// Pretty-printed JSON text.
    pub fn to_pretty_string(&self) -> String {
        // Serializing this type into a String cannot fail: every key is a
        // string and every writer call goes to memory.
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }
}

fn str(s: &str) -> Json {
    Json::Str(s.to_string())
}

/// `{name: value}` in the order of `names`.
fn named<'a>(names: &[String], values: impl IntoIterator<Item = &'a f64>) -> Json {
    Json::Obj(
        names
            .iter()
            .zip(values)
            .map(|(n, &v)| (n.clone(), Json::Num(v)))
            .collect(),
    )
}

/// `{state: {wrt: d state / d wrt}}`.
fn jacobian(states: &[String], wrt: &[String], jac: &DMatrix<f64>) -> Json {
    Json::Obj(
        states
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let row: Vec<f64> = (0..wrt.len()).map(|j| jac[(i, j)]).collect();
                (s.clone(), named(wrt, &row))
            })
            .collect(),
    )
}

/// The output of `periodic`: the orbit, its multipliers and their
/// parameter derivatives by name (`{"unavailable": reason}` in place of the
/// derivatives when they are not defined).
pub fn periodic_document(model: &str, orbit: &ia_orbits::PeriodicOrbit) -> Json {
    let states = &orbit.state_names;
    let params: Vec<String> = orbit
        .param_names
        .iter()
        .map(|p| format!("param.{p}"))
        .collect();
    let complex = |re: f64, im: f64| {
        Json::Obj(vec![
            ("re".into(), Json::Num(re)),
            ("im".into(), Json::Num(im)),
        ])
    };
    let multipliers = orbit
        .multipliers
        .iter()
        .map(|m| {
            let mut entries = vec![
                ("re".into(), Json::Num(m.re)),
                ("im".into(), Json::Num(m.im)),
            ];
            if m.trivial {
                entries.push(("trivial".into(), Json::Bool(true)));
            }
            if m.advancing {
                entries.push(("advancing".into(), Json::Bool(true)));
            }
            Json::Obj(entries)
        })
        .collect();
    let sensitivities = match (&orbit.sensitivities, &orbit.sensitivities_unavailable) {
        (Some(sens), _) => Json::Obj(vec![
            (
                "fixed_point".into(),
                jacobian(states, &params, &sens.fixed_point),
            ),
            ("period".into(), named(&params, &sens.period)),
            (
                "multipliers".into(),
                Json::Arr(
                    sens.multipliers
                        .iter()
                        .map(|per_param| {
                            Json::Obj(
                                params
                                    .iter()
                                    .zip(per_param)
                                    .map(|(p, d)| (p.clone(), complex(d.re, d.im)))
                                    .collect(),
                            )
                        })
                        .collect(),
                ),
            ),
        ]),
        (None, reason) => Json::Obj(vec![(
            "unavailable".into(),
            str(reason.as_deref().unwrap_or("not computed")),
        )]),
    };
    let mut document = vec![
        ("model".into(), str(model)),
        ("section".into(), str(&orbit.section)),
        ("fixed_point".into(), named(states, &orbit.fixed_point)),
        ("period".into(), Json::Num(orbit.period)),
    ];
    if !orbit.advancing.is_empty() {
        document.push(("advance".into(), named(&orbit.advancing, &orbit.advance)));
    }
    document.extend([
        (
            "newton_iterations".into(),
            Json::Int(orbit.newton_iterations as u64),
        ),
        ("residual".into(), Json::Num(orbit.residual)),
        ("multipliers".into(), Json::Arr(multipliers)),
        (
            "monodromy".into(),
            jacobian(states, states, &orbit.monodromy),
        ),
        ("sensitivities".into(), sensitivities),
    ]);
    Json::Obj(document)
}

/// The output of `simulate` (`sens` absent) or `gradient` (`sens` present,
/// with the method's name).
pub fn document(
    model: &str,
    system: &HybridSystem,
    t_end: f64,
    trajectory: &Trajectory,
    sens: Option<(&str, &Sensitivities)>,
) -> Json {
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
) -> Json {
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
) -> Json {
    let states = system.state_names();
    let mode_name = |m: usize| str(&system.modes()[m].name);
    let mut out = vec![("model".to_string(), str(model))];
    if let Some((method, _)) = method {
        out.push(("method".into(), str(method)));
    }
    out.push(("t_end".into(), Json::Num(t_end)));
    out.push(("final_mode".into(), mode_name(trajectory.final_mode)));
    out.push(("final_state".into(), named(states, &trajectory.final_state)));
    if let Some((_, wrt)) = method {
        out.push((
            "wrt".into(),
            Json::Arr(wrt.iter().map(|w| str(w)).collect()),
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
            Json::Obj(vec![
                ("value".into(), Json::Num(g.value)),
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
                ("index".to_string(), Json::Int(e.index as u64)),
                ("time".into(), Json::Num(e.time)),
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
            Json::Obj(ev)
        })
        .collect();
    out.push(("events".into(), Json::Arr(events)));
    let observations = trajectory
        .observations
        .iter()
        .enumerate()
        .map(|(k, o)| {
            let mut ob = vec![
                ("time".to_string(), Json::Num(o.time)),
                ("state".into(), named(states, &o.state)),
            ];
            if let Some(s) = sens {
                if let Some(j) = s.observation_jacobians.get(k) {
                    ob.push(("jacobian".into(), jacobian(states, &s.wrt, j)));
                }
            }
            Json::Obj(ob)
        })
        .collect();
    out.push(("observations".into(), Json::Arr(observations)));
    let st = &trajectory.stats;
    out.push((
        "stats".into(),
        Json::Obj(vec![
            ("steps".into(), Json::Int(st.steps as u64)),
            (
                "rhs_evaluations".into(),
                Json::Int(st.rhs_evaluations as u64),
            ),
            ("events".into(), Json::Int(st.events as u64)),
        ]),
    ));
    Json::Obj(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_keep_insertion_order_and_full_precision() {
        let v = Json::Obj(vec![
            ("z".into(), Json::Num(0.1 + 0.2)),
            ("a".into(), Json::Num(f64::NAN)),
            ("m".into(), Json::Int(3)),
        ]);
        let text = serde_json::to_string(&v).unwrap();
        assert_eq!(text, r#"{"z":0.30000000000000004,"a":null,"m":3}"#);
    }
}
