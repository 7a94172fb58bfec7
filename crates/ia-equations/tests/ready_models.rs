//! The equation forms of four ready models (tests/data/*.json) against the
//! ready models themselves: same final states, event times, and forward and
//! adjoint derivatives, to 1e-12 relative.
//!
//! Reference: the ready models in ia-models (hand-written partials for
//! ball2d-flat and the thermostat's flow, dual numbers of independently
//! written Rust for the others), each itself checked against finite
//! differences and closed forms in ia-models and ia-verify.

use ia_adjoint::{jacobian, Method};
use ia_equations::EquationModel;
use ia_events::Problem;
use ia_models::Model;
use rstest::rstest;

fn load(name: &str) -> EquationModel {
    let path = format!("{}/tests/data/{name}.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    EquationModel::from_json_str(&text).unwrap()
}

/// `a` and `b` agree to `1e-12` relative to the larger of the two, or to
/// `1e-12 * scale` where both are negligible next to the other entries of
/// the same quantity.
fn close(a: f64, b: f64, scale: f64, what: &str) {
    let tolerance = 1e-12 * a.abs().max(b.abs()).max(1e-3 * scale);
    assert!(
        (a - b).abs() <= tolerance,
        "{what}: equations {a:e} vs ready {b:e} (difference {:e})",
        (a - b).abs()
    );
}

#[rstest]
#[case("ball1d")]
#[case("ball2d-flat")]
#[case("two-ball")]
#[case("thermostat")]
fn equation_form_equals_the_ready_model(#[case] name: &str) {
    let equations = load(name);
    let ready = ia_models::by_name(name).unwrap();
    let (spec, eq_spec) = (ready.spec(), equations.spec());
    assert_eq!(eq_spec.state_names(), spec.state_names());
    assert_eq!(eq_spec.param_names(), spec.param_names());
    assert_eq!(eq_spec.modes, spec.modes);
    assert_eq!(eq_spec.transitions, spec.transitions);
    assert_eq!(eq_spec.initial_mode, spec.initial_mode);
    assert_eq!(eq_spec.default_state(), spec.default_state());
    assert_eq!(eq_spec.default_params(), spec.default_params());

    let (ready_system, eq_system) = (ready.system(), equations.system());
    let problem = |system| {
        Problem::new(
            system,
            spec.default_state(),
            spec.default_params(),
            spec.t_end,
        )
        .with_mode(&spec.initial_mode)
        .unwrap()
    };
    // On the state's steps, where the two agree to rounding. Error-controlled
    // forward sensitivities (`Method::Forward`) choose their steps from `S`
    // too, so a reset product rounded in another order (the ready
    // thermostat's hand-written one against the compiled one) moves the
    // steps, and the results by the solver's accuracy (1e-11 here), not by
    // rounding. `Method::Forward` on an equation model is checked against
    // central differences in tests/stick_slip.rs.
    for method in [Method::ForwardOnStateSteps, Method::Adjoint] {
        let a = jacobian(&problem(&eq_system), method).unwrap();
        let b = jacobian(&problem(&ready_system), method).unwrap();
        let (ta, tb) = (&a.trajectory, &b.trajectory);
        assert!(!tb.events.is_empty(), "{name}: the run has events");
        assert_eq!(ta.event_times().len(), tb.event_times().len());
        for (x, y) in ta.event_times().iter().zip(tb.event_times()) {
            close(*x, y, 1.0, &format!("{name} event time"));
        }
        let scale = tb.final_state.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for (x, y) in ta.final_state.iter().zip(&tb.final_state) {
            close(*x, *y, scale, &format!("{name} final state"));
        }
        assert_eq!(a.wrt, b.wrt);
        let scale = b.final_jacobian.amax();
        for (k, (x, y)) in a
            .final_jacobian
            .iter()
            .zip(b.final_jacobian.iter())
            .enumerate()
        {
            close(
                *x,
                *y,
                scale,
                &format!("{name} {method:?} final Jacobian entry {k}"),
            );
        }
        for (ga, gb) in (a.event_time_gradients.row_iter()).zip(b.event_time_gradients.row_iter()) {
            let scale = gb.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            for (x, y) in ga.iter().zip(gb.iter()) {
                close(
                    *x,
                    *y,
                    scale,
                    &format!("{name} {method:?} event time gradient"),
                );
            }
        }
    }
}
