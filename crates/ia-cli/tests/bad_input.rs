//! Bad input to the `impact-adjoint` binary: each exits 2 with one line on
//! standard error in the documented form, naming the offender and what is
//! valid.

use crate::common;

use common::*;
use rstest::rstest;

/// Bad inputs: exit 2, one line on standard error starting `error: `, and
/// every expected fragment in it.
#[rstest]
#[case::unknown_model(r#"{"model": "nope", "t_end": 1}"#, &["'nope'", "ball2d-flat", "slip-hopper"])]
#[case::unknown_state(
    r#"{"model": "ball2d-flat", "t_end": 1, "initial_state": {"z": 1}}"#,
    &["state 'z'", "x, y, vx, vy"]
)]
#[case::unknown_param(
    r#"{"model": "ball2d-flat", "t_end": 1, "params": {"k": 1}}"#,
    &["parameter 'k'", "g, e, mu"]
)]
#[case::unknown_mode(
    r#"{"model": "thermostat", "t_end": 1, "initial_mode": "heating"}"#,
    &["mode 'heating'", "off, on"]
)]
#[case::unknown_solver(
    r#"{"model": "lif", "t_end": 0.05, "solver": {"method": "euler"}}"#,
    &["'euler'", "dopri5, dop853, rk4, trbdf2, kvaerno3, kvaerno5, exact, ode_solvers.dopri5, ode_solvers.dop853, ode_solvers.rk4"]
)]
#[case::size_of_an_unsized_model(
    r#"{"model": "lif", "t_end": 0.05, "size": 4}"#,
    &["invalid size = 4", "model 'lif' has no size", "lif-network"]
)]
#[case::size_zero(
    r#"{"model": "lif-network", "t_end": 0.05, "size": 0}"#,
    &["invalid size = 0", "an integer of at least 1, like 3"]
)]
#[case::size_not_whole(
    r#"{"model": "lif-network", "t_end": 0.05, "size": 2.5}"#,
    &["invalid size = 2.5", "an integer of at least 1"]
)]
#[case::connection_out_of_range(
    r#"{"model": "lif-network", "t_end": 0.05, "size": 2, "connections": [[0, 2]]}"#,
    &["invalid connections = [0, 2]", "numbered 0 to 1"]
)]
#[case::connection_not_a_pair(
    r#"{"model": "lif-network", "t_end": 0.05, "connections": [[0]]}"#,
    &["connections[0]", "[from, to]"]
)]
#[case::connections_of_another_model(
    r#"{"model": "lif", "t_end": 0.05, "connections": [[0, 1]]}"#,
    &["'connections' applies to the lif-network model only"]
)]
#[case::weight_of_a_missing_synapse(
    r#"{"model": "lif-network", "t_end": 0.05, "connections": [[0, 1]], "params": {"w0_1": 0.1}}"#,
    &["'w0_1'", "w1_0"]
)]
#[case::adjoint_checkpoints_zero(
    r#"{"model": "lif", "t_end": 0.05, "adjoint": {"checkpoints": 0}}"#,
    &["invalid adjoint.checkpoints = 0", "an integer of at least 1, like 1000"]
)]
#[case::adjoint_unknown_key(
    r#"{"model": "lif", "t_end": 0.05, "adjoint": {"checkpoint": 10}}"#,
    &["'checkpoint'", "checkpoints"]
)]
#[case::unknown_key(
    r#"{"model": "lif", "tend": 0.05}"#,
    &["'tend'", "model, size, connections, params, initial_state, initial_mode, t_end, observe, solver, max_events, max_steps, loss, adjoint, record"]
)]
#[case::unknown_solver_key(
    r#"{"model": "lif", "t_end": 0.05, "solver": {"method": "rk4", "rtol": 1e-6}}"#,
    &["'rtol'", "method, dt"]
)]
#[case::missing_model(r#"{"t_end": 1}"#, &["'model'", "required"])]
#[case::missing_t_end(r#"{"model": "lif"}"#, &["'t_end'", "required"])]
#[case::not_an_object(r#"[1, 2]"#, &["JSON object"])]
#[case::malformed("{\"model\": \"lif\",\n  \"t_end\": }", &["malformed JSON", "line 2 column"])]
#[case::trailing_comma("{\"model\": \"lif\",\n\n \"t_end\": 1,\n}", &["line 4 column 1"])]
#[case::nan_literal(r#"{"model": "lif", "t_end": NaN}"#, &["malformed JSON", "line 1 column"])]
#[case::infinity_literal(r#"{"model": "lif", "t_end": Infinity}"#, &["malformed JSON", "line 1"])]
#[case::overflow(r#"{"model": "lif", "t_end": 1e999}"#, &["out of range", "infinity", "finite", "line 1"])]
#[case::overflow_param(
    r#"{"model": "lif", "t_end": 1, "params": {"I": -1e400}}"#,
    &["out of range", "finite"]
)]
#[case::string_number(r#"{"model": "lif", "t_end": "1"}"#, &["'t_end' must be a number"])]
#[case::null_param(
    r#"{"model": "lif", "t_end": 1, "params": {"I": null}}"#,
    &["'params.I' must be a number"]
)]
#[case::t_end_zero(r#"{"model": "lif", "t_end": 0}"#, &["t_end", "greater than 0"])]
#[case::t_end_negative(r#"{"model": "lif", "t_end": -1}"#, &["t_end = -1", "greater than 0"])]
#[case::negative_dt(
    r#"{"model": "lif", "t_end": 0.05, "solver": {"method": "rk4", "dt": -0.001}}"#,
    &["dt = -0.001", "greater than 0"]
)]
#[case::zero_dt(
    r#"{"model": "lif", "t_end": 0.05, "solver": {"method": "rk4", "dt": 0}}"#,
    &["dt = 0", "greater than 0"]
)]
#[case::negative_rtol(
    r#"{"model": "lif", "t_end": 0.05, "solver": {"rtol": -1e-8}}"#,
    &["rtol", "[1e-15, 1)"]
)]
#[case::negative_atol(
    r#"{"model": "lif", "t_end": 0.05, "solver": {"method": "ode_solvers.dopri5", "atol": -1}}"#,
    &["atol", "[1e-15, 1)"]
)]
#[case::negative_macro_step(
    r#"{"model": "lif", "t_end": 0.05, "solver": {"method": "ode_solvers.rk4", "macro_step": -1}}"#,
    &["macro_step", "greater than 0"]
)]
#[case::negative_g(
    r#"{"model": "ball1d", "t_end": 1, "params": {"g": -9.81}}"#,
    &["parameter 'g' = -9.81", "greater than 0", "ball1d"]
)]
#[case::restitution_above_one(
    r#"{"model": "ball2d-bowl", "t_end": 1, "params": {"e": 1.5}}"#,
    &["parameter 'e' = 1.5", "(0, 1]"]
)]
#[case::restitution_negative(
    r#"{"model": "two-ball", "t_end": 1, "params": {"e": -0.1}}"#,
    &["parameter 'e'", "[0, 1]"]
)]
#[case::friction_above_one(
    r#"{"model": "ball2d-flat", "t_end": 1, "params": {"mu": 2}}"#,
    &["parameter 'mu'", "[0, 1]"]
)]
#[case::negative_mass(
    r#"{"model": "two-ball", "t_end": 1, "params": {"m1": -1}}"#,
    &["parameter 'm1'", "greater than 0"]
)]
#[case::negative_radius(
    r#"{"model": "two-ball", "t_end": 1, "params": {"r": -0.1}}"#,
    &["parameter 'r'", "0 or greater"]
)]
#[case::zero_tau(
    r#"{"model": "lif", "t_end": 1, "params": {"tau": 0}}"#,
    &["parameter 'tau' = 0", "greater than 0"]
)]
#[case::negative_cooling(
    r#"{"model": "thermostat", "t_end": 1, "params": {"a": -0.2}}"#,
    &["parameter 'a'", "greater than 0"]
)]
#[case::negative_length(
    r#"{"model": "impact-pendulum", "t_end": 1, "params": {"l": -1}}"#,
    &["parameter 'l'", "greater than 0"]
)]
#[case::negative_spoke(
    r#"{"model": "rimless-wheel", "t_end": 1, "params": {"l": -1}}"#,
    &["parameter 'l'", "greater than 0"]
)]
#[case::negative_stiffness(
    r#"{"model": "slip-hopper", "t_end": 1, "params": {"k": -20000}}"#,
    &["parameter 'k'", "greater than 0"]
)]
#[case::negative_rest_length(
    r#"{"model": "slip-hopper", "t_end": 1, "params": {"l0": -1}}"#,
    &["parameter 'l0'", "greater than 0"]
)]
#[case::negative_hopper_mass(
    r#"{"model": "slip-hopper", "t_end": 1, "params": {"m": 0}}"#,
    &["parameter 'm'", "greater than 0"]
)]
#[case::observation_outside(
    r#"{"model": "lif", "t_end": 0.05, "observe": [0.01, 0.5]}"#,
    &["observe[1] = 0.5", "[0, 0.05]"]
)]
#[case::observation_decreasing(
    r#"{"model": "lif", "t_end": 0.05, "observe": [0.02, 0.01]}"#,
    &["observe[1]", "non-decreasing"]
)]
#[case::max_events_zero(r#"{"model": "lif", "t_end": 0.05, "max_events": 0}"#, &["max_events", "at least 1"])]
#[case::max_events_fraction(r#"{"model": "lif", "t_end": 0.05, "max_events": 2.5}"#, &["max_events", "an integer", "like 1000"])]
#[case::max_events_string(r#"{"model": "lif", "t_end": 0.05, "max_events": "10"}"#, &["max_events", "an integer", "like 1000"])]
#[case::max_steps_zero(r#"{"model": "lif", "t_end": 0.05, "max_steps": 0}"#, &["max_steps", "at least 1"])]
#[case::max_steps_fraction(r#"{"model": "lif", "t_end": 0.05, "max_steps": 2.5}"#, &["max_steps", "an integer"])]
#[case::record_not_an_object(r#"{"model": "lif", "t_end": 0.05, "record": "none"}"#, &["'record' must be"])]
#[case::record_unknown_key(r#"{"model": "lif", "t_end": 0.05, "record": {"segments": "none"}}"#, &["'segments'", "events"])]
#[case::record_unknown_word(r#"{"model": "lif", "t_end": 0.05, "record": {"events": "some"}}"#, &["record.events", "\"all\", \"none\" or a count"])]
#[case::record_zero(r#"{"model": "lif", "t_end": 0.05, "record": {"events": 0}}"#, &["record.events", "at least 1"])]
// Issue 10, duplicate keys: serde_json kept the last silently.
#[case::duplicate_key(
    r#"{"model": "ball1d", "model": "lif", "t_end": 1}"#,
    &["error: invalid_scenario: ", "duplicate key 'model'", "line 1"]
)]
#[case::duplicate_param(
    r#"{"model": "lif", "t_end": 0.05, "params": {"I": 1.3, "I": 2}}"#,
    &["duplicate key 'params.I'", "'params'"]
)]
#[case::duplicate_solver_key(
    r#"{"model": "lif", "t_end": 0.05, "solver": {"method": "rk4", "dt": 1e-3, "dt": 1e-4}}"#,
    &["duplicate key 'solver.dt'"]
)]
// Issue 10: e = -0.0 and denormal e gave "event location failed".
#[case::restitution_negative_zero(
    r#"{"model": "ball1d", "t_end": 1, "params": {"e": -0.0}}"#,
    &["error: invalid_option: ", "parameter 'e' = -0", "(0, 1]", "resting contact", "small positive e"]
)]
#[case::restitution_zero(
    r#"{"model": "ball2d-flat", "t_end": 1, "params": {"e": 0}}"#,
    &["error: invalid_option: ", "parameter 'e' = 0", "resting contact", "small positive e"]
)]
#[case::restitution_denormal(
    r#"{"model": "ball1d", "t_end": 1, "params": {"e": 5e-324}}"#,
    &["restitution e = 5e-324", "comes to rest near t = 0.4515", "raise e", "shorter t_end"]
)]
#[case::restitution_small(
    r#"{"model": "ball2d-bowl", "t_end": 2, "params": {"e": 0.01}}"#,
    &["restitution e = 0.01", "comes to rest near t = ", "raise e"]
)]
// Issue 10: t_end >= 1e13 said "too stiff".
#[case::run_too_long(
    r#"{"model": "lif", "t_end": 1e13}"#,
    &["error: step_size_underflow: ", "too long", "t_end", "1e13"]
)]
#[case::run_far_too_long(
    r#"{"model": "lif", "t_end": 1e308}"#,
    &["too long", "t_end", "1e308"]
)]
// Issue 10: parameter combinations that ran silently.
#[case::lif_reset_at_threshold(
    r#"{"model": "lif", "t_end": 0.05, "params": {"Vr": 1}}"#,
    &["error: invalid_option: ", "parameter 'Vr' = 1", "less than parameter 'Vth' = 1"]
)]
#[case::rimless_wheel_alpha_zero(
    r#"{"model": "rimless-wheel", "t_end": 1, "params": {"alpha": 0}}"#,
    &["error: invalid_option: ", "parameter 'alpha' = 0", "(0, pi/2)"]
)]
// Issue 10: these macro steps never finished.
#[case::macro_step_tiny(
    r#"{"model": "lif", "t_end": 0.05, "solver": {"method": "ode_solvers.rk4", "macro_step": 1e-16}}"#,
    &["error: invalid_option: ", "macro_step = 1e-16", "at least 5e-10"]
)]
#[case::macro_step_denormal(
    r#"{"model": "lif", "t_end": 0.05, "solver": {"method": "ode_solvers.dopri5", "macro_step": 2.2e-308}}"#,
    &["macro_step = 2.2e-308", "at least 5e-10"]
)]
#[case::rk4_dt_tiny(
    r#"{"model": "lif", "t_end": 1, "solver": {"method": "rk4", "dt": 1e-300}}"#,
    &["dt = 1e-300", "at least 1e-8"]
)]
// Issue 10: numbers print short.
#[case::huge_observation(
    r#"{"model": "lif", "t_end": 1e300, "observe": [1e308]}"#,
    &["observe[0] = 1e308", "[0, 1e300]"]
)]
#[case::thermostat_band_inverted(
    r#"{"model": "thermostat", "t_end": 20, "params": {"Tlo": 30}}"#,
    &["error: invalid_option: ", "parameter 'Tlo' = 30", "less than parameter 'Thi' = 23"]
)]
// The slip-hopper's scope limit (a liftoff below the touchdown height) was a
// bare cascade error.
#[case::slip_hopper_low_liftoff(
    r#"{"model": "slip-hopper", "t_end": 5, "params": {"k": 1}}"#,
    &["error: zeno: ", "cascade", "lifted off at t = 0.46", "below the ground", "touchdown height l0 cos(theta_td) = 0.92866", "and falling (vy = -", "theta_td", "(k)"]
)]
#[case::slip_hopper_flat_leg(
    r#"{"model": "slip-hopper", "t_end": 5, "params": {"theta_td": 1.5}}"#,
    &["below the touchdown height", "outside this model's scope"]
)]
#[case::zeno(r#"{"model": "ball1d", "t_end": 10}"#, &["Zeno"])]
#[case::too_many_events(r#"{"model": "ball1d", "t_end": 2, "max_events": 2}"#, &["Zeno", "max_events = 2"])]
#[case::grazing(
    r#"{"model": "ball1d", "t_end": 0.001, "initial_state": {"h": 1e-14}}"#,
    &["grazing", "'impact'"]
)]
#[case::guard_violated_at_start(
    r#"{"model": "ball1d", "t_end": 1, "initial_state": {"h": -0.5}}"#,
    &["guard of transition 'impact'", "already at or beyond zero"]
)]
#[case::underflow(r#"{"model": "lif", "t_end": 1, "params": {"tau": 1e-20}}"#, &["step size underflow"])]
// Issue 9: no step limit; dopri5 with steps of at most 1e-4 reaches at most
// t = 0.1 in 1000 steps.
#[case::step_limit(
    r#"{"model": "ball1d", "t_end": 2, "solver": {"method": "dopri5", "max_step": 1e-4}, "max_steps": 1000}"#,
    &["error: step_limit: ", "max_steps = 1000", "t_end = 2"]
)]
// ...and a fixed step that cannot reach t_end within max_steps is refused
// before the run.
#[case::step_limit_up_front(
    r#"{"model": "ball1d", "t_end": 2, "solver": {"method": "rk4", "dt": 1e-4}, "max_steps": 1000}"#,
    &["error: invalid_option: ", "dt", "20000 steps", "max_steps = 1000", "at least 0.002"]
)]
fn bad_input_exits_2_naming_the_offender(
    #[case] input: &str,
    #[case] fragments: &[&str],
    #[values("simulate", "gradient")] command: &str,
) {
    let out = run_stdin(&[command, "-"], input);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert!(out.stdout.is_empty(), "stdout not empty");
    assert_error_line(&err);
    for f in fragments {
        assert!(err.contains(f), "'{f}' not in: {err}");
    }
}
