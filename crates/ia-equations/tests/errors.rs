//! Every class of mistake in a model gets its own one-line message naming
//! the mode or transition, the key, and for an expression the column.
//!
//! Reference: the messages are the interface (docs/equations.md shows them);
//! each case changes one thing in a valid bouncing ball.

use ia_equations::EquationModel;
use rstest::rstest;

/// The valid ball with `reset.vy`, the flow of `vy`, the guard, the target
/// mode and the reset key replaced.
fn ball(flow_vy: &str, guard: &str, to: &str, reset: &str) -> String {
    format!(
        r#"{{"states": ["y", "vy"], "params": {{"g": 9.81, "e": 0.8}},
            "modes": {{"flight": {{"flow": {{"y": "vy", "vy": "{flow_vy}"}}}}}},
            "transitions": [{{"name": "bounce", "from": "flight", "to": "{to}",
                             "guard": "{guard}", "direction": "falling",
                             "reset": {{{reset}}}}}],
            "initial_mode": "flight"}}"#
    )
}

#[test]
fn the_template_is_valid() {
    EquationModel::from_json_str(&ball("-g", "y", "flight", r#""vy": "-e * vy""#)).unwrap();
}

#[rstest]
#[case::unknown_name(
    ball("-g", "y", "flight", r#""vy": "-e * ee""#),
    r#"transition "bounce", reset.vy, column 6: unknown name "ee"; names are y, vy, g, e, t; closest is "e""#
)]
#[case::unknown_name_in_a_flow(
    ball("-gg", "y", "flight", r#""vy": "-e * vy""#),
    r#"mode "flight", flow.vy, column 2: unknown name "gg"; names are y, vy, g, e, t; closest is "g""#
)]
#[case::parse_error(
    ball("-g", "y *", "flight", r#""vy": "-e * vy""#),
    r#"transition "bounce", guard, column 4: expected a number, a name or "(", found the end"#
)]
#[case::wrong_argument_count(
    ball("-g * sin(y, vy)", "y", "flight", r#""vy": "-e * vy""#),
    r#"mode "flight", flow.vy, column 6: sin takes 1 argument, got 2"#
)]
#[case::python_power(
    ball("-g**2", "y", "flight", r#""vy": "-e * vy""#),
    r#"mode "flight", flow.vy, column 3: "**" is not an operator; write a power with "^", like x^2"#
)]
#[case::unknown_function(
    ball("-g", "y", "flight", r#""vy": "-e * abss(vy)""#),
    r#"transition "bounce", reset.vy, column 6: unknown function "abss"; functions are sin, cos, tan, exp, log, sqrt, abs, tanh, atan2, min, max; closest is "abs""#
)]
#[case::transition_to_a_missing_mode(
    ball("-g", "y", "air", r#""vy": "-e * vy""#),
    r#"transition "bounce", to: unknown mode "air"; modes are flight"#
)]
#[case::reset_of_an_unknown_state(
    ball("-g", "y", "flight", r#""vz": "-e * vy""#),
    r#"transition "bounce", reset.vz: unknown state "vz"; states are y, vy; closest is "vy""#
)]
#[case::reset_names_a_state_twice(
    ball("-g", "y", "flight", r#""vy": "-e * vy", "vy": "0""#),
    r#"transition "bounce", reset.vy: state "vy" is given twice"#
)]
#[case::flow_names_a_state_twice(
    r#"{"states": ["y", "vy"], "params": {"g": 9.81},
        "modes": {"flight": {"flow": {"y": "vy", "vy": "-g", "y": "0"}}}}"#.to_string(),
    r#"mode "flight", flow.y: state "y" is given twice"#
)]
#[case::flow_misses_a_state(
    r#"{"states": ["y", "vy"], "params": {"g": 9.81},
        "modes": {"flight": {"flow": {"y": "vy"}}}}"#.to_string(),
    r#"mode "flight", flow: no expression for state "vy"; a flow gives the rate of every state: y, vy"#
)]
#[case::flow_of_an_unknown_state(
    r#"{"states": ["y", "vy"], "params": {"g": 9.81},
        "modes": {"flight": {"flow": {"y": "vy", "v": "-g"}}}}"#.to_string(),
    r#"mode "flight", flow.v: unknown state "v"; states are y, vy; closest is "y""#
)]
#[case::unknown_initial_mode(
    r#"{"states": ["y"], "modes": {"flight": {"flow": {"y": "1"}}}, "initial_mode": "flght"}"#.to_string(),
    r#"initial_mode: unknown mode "flght"; modes are flight; closest is "flight""#
)]
#[case::let_cycle(
    r#"{"states": ["y"], "let": {"a": "b + 1", "b": "2 * a"}, "modes": {"m": {"flow": {"y": "a"}}}}"#.to_string(),
    r#"let "a": it depends on itself: a -> b -> a"#
)]
#[case::reserved_name(
    r#"{"states": ["t"], "modes": {"m": {"flow": {"t": "1"}}}}"#.to_string(),
    r#"states.t: "t" cannot name a state: it is the time"#
)]
#[case::name_used_twice(
    r#"{"states": ["y"], "params": {"y": 1}, "modes": {"m": {"flow": {"y": "1"}}}}"#.to_string(),
    r#"params.y: "y" is already a state name"#
)]
#[case::duplicate_transition(
    r#"{"states": ["y"], "modes": {"m": {"flow": {"y": "-1"}}},
        "transitions": [{"name": "a", "from": "m", "to": "m", "guard": "y", "direction": "falling"},
                        {"name": "a", "from": "m", "to": "m", "guard": "y + 1", "direction": "falling"}]}"#.to_string(),
    r#"transition "a": two transitions have this name; names must be unique"#
)]
#[case::no_states(
    r#"{"states": [], "modes": {"m": {"flow": {}}}}"#.to_string(),
    "states: a model needs at least one state"
)]
#[case::bad_direction(
    r#"{"states": ["y"], "modes": {"m": {"flow": {"y": "-1"}}},
        "transitions": [{"name": "a", "from": "m", "to": "m", "guard": "y", "direction": "down"}]}"#.to_string(),
    "unknown variant `down`, expected one of `rising`, `falling`, `either` at line 2 column 95"
)]
#[case::unknown_key(
    r#"{"states": ["y"], "mode": {}}"#.to_string(),
    "unknown field `mode`, expected one of `name`, `description`, `states`, `params`, `let`, `modes`, `transitions`, `initial_mode`, `t_end` at line 1 column 24"
)]
fn every_mistake_has_its_message(#[case] json: String, #[case] message: &str) {
    let err = EquationModel::from_json_str(&json).unwrap_err();
    assert_eq!(err.to_string(), message);
}

/// A number (or another non-string) where an expression belongs is named by
/// its key, read from text or from a JSON value alike (serde alone said
/// "invalid type: integer `2`, expected a string at line 1 column 45", or
/// `modes.flight: ...`, without the state).
#[rstest]
#[case::flow(
    ball("2", "y", "flight", r#""vy": "-e * vy""#).replace(r#""vy": "2""#, r#""vy": 2"#),
    r#"mode "flight", flow.vy: an expression is a string: write "2" in quotes, not the number 2"#
)]
#[case::guard(
    ball("-g", "y", "flight", r#""vy": "-e * vy""#).replace(r#""guard": "y""#, r#""guard": 0.5"#),
    r#"transition "bounce", guard: an expression is a string: write "0.5" in quotes, not the number 0.5"#
)]
#[case::reset(
    ball("-g", "y", "flight", r#""vy": 0"#),
    r#"transition "bounce", reset.vy: an expression is a string: write "0" in quotes, not the number 0"#
)]
#[case::reset_of_an_unnamed_transition(
    r#"{"states": ["y"], "modes": {"m": {"flow": {"y": "-1"}}},
        "transitions": [{"from": "m", "to": "m", "guard": "y", "direction": "falling", "reset": {"y": [1]}}]}"#.to_string(),
    r#"transitions[0], reset.y: an expression is a string, like "-g * y"; got an array"#
)]
#[case::let_value(
    r#"{"states": ["y"], "let": {"a": true}, "modes": {"m": {"flow": {"y": "a"}}}}"#.to_string(),
    r#"let "a": an expression is a string, like "-g * y"; got true"#
)]
fn a_non_string_expression_names_its_key(#[case] json: String, #[case] message: &str) {
    let err = EquationModel::from_json_str(&json).unwrap_err();
    assert_eq!(err.to_string(), message, "from text");
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    let err = EquationModel::from_value(&value).unwrap_err();
    assert_eq!(err.to_string(), message, "from a value");
    assert_eq!(err.kind(), "invalid_equations");
}

proptest::proptest! {
    /// Any text, as a whole model or as an expression in one, is an error or
    /// a model, never a panic.
    #[test]
    fn garbage_never_panics(text in "\\PC{0,80}", expression in "[-+*/^(),. 0-9a-z_]{0,40}") {
        let _ = EquationModel::from_json_str(&text);
        let _ = EquationModel::from_json_str(&ball(&expression, "y", "flight", r#""vy": "-e * vy""#));
        let _ = EquationModel::from_json_str(&ball("-g", &expression, "flight", ""));
    }
}
