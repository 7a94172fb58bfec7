//! `jacobian_along`: one forward pass carrying `m` seed directions.
//!
//! References: the full forward Jacobian of the same run times the seeds
//! (`jacobian(.., ForwardOnStateSteps) * D`, the same steps: equal to
//! rounding), and the adjoint's full Jacobian times the seeds (the other
//! mode, on the same steps for the Runge-Kutta engine and the exact
//! solver's stretches). Seeds mix initial-state and parameter directions,
//! with dense parameter directions (the flow's partials times `dp`), unit
//! ones (the Jacobian-vector product fast path) and zero ones.

use ia_adjoint::nalgebra::DMatrix;
use ia_adjoint::{jacobian, jacobian_along, Method, Sensitivities};
use ia_events::{EventOptions, Problem, SolverChoice};
use ia_models::{sized, Size};
use rstest::rstest;

/// Seeds of `m` columns: pseudo-random dense ones, a unit parameter
/// column, an initial-state-only column and a zero column.
fn seeds(n: usize, np: usize) -> (DMatrix<f64>, DMatrix<f64>) {
    let m = 4;
    let wave = |i: usize, c: usize| ((i * 7 + c * 13) as f64 * 0.37).sin();
    let x0 = DMatrix::from_fn(n, m, |i, c| match c {
        0 | 2 => wave(i, c),
        _ => 0.0,
    });
    let params = DMatrix::from_fn(np, m, |j, c| match c {
        0 => wave(j + n, c),
        1 if j == np - 1 => 1.0,
        _ => 0.0,
    });
    (x0, params)
}

/// `J D` of every output of a full Jacobian.
fn contracted(full: &Sensitivities, x0: &DMatrix<f64>, params: &DMatrix<f64>) -> Vec<DMatrix<f64>> {
    let (n, m) = (x0.nrows(), x0.ncols());
    let d = DMatrix::from_fn(n + params.nrows(), m, |i, c| {
        if i < n {
            x0[(i, c)]
        } else {
            params[(i - n, c)]
        }
    });
    let mut all = vec![&full.final_jacobian * &d, &full.event_time_gradients * &d];
    all.extend(full.observation_jacobians.iter().map(|j| j * &d));
    all
}

fn outputs(s: &Sensitivities) -> Vec<DMatrix<f64>> {
    let mut all = vec![s.final_jacobian.clone(), s.event_time_gradients.clone()];
    all.extend(s.observation_jacobians.iter().cloned());
    all
}

fn assert_close(what: &str, got: &[DMatrix<f64>], want: &[DMatrix<f64>], tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: outputs");
    let scale = want
        .iter()
        .flat_map(|m| m.iter())
        .fold(1.0f64, |a, v| a.max(v.abs()));
    for (k, (a, b)) in got.iter().zip(want).enumerate() {
        assert_eq!(a.shape(), b.shape(), "{what}: output {k}");
        for (x, y) in a.iter().zip(b.iter()) {
            assert!(
                (x - y).abs() <= tol * scale,
                "{what}: output {k}: {x} vs {y}\n{a}\n{b}"
            );
        }
    }
}

/// Models through the Runge-Kutta engine (dopri5, with error control of
/// the state only) and the exact solver (decoupled linear stretches,
/// 2x2 linear pairs), with events and an observation.
#[rstest]
#[case::ball2d_flat("ball2d-flat", None, SolverChoice::dopri5(1e-10), 2.0)]
#[case::two_ball("two-ball", None, SolverChoice::Rk4 { dt: 1e-3 }, 1.0)]
#[case::thermostat_exact("thermostat", None, SolverChoice::Exact, 5.0)]
#[case::lif_network_exact("lif-network", Some(Size::Count(4)), SolverChoice::Exact, 0.02)]
#[case::cuba_lif_exact("cuba-lif", None, SolverChoice::Exact, 0.0)]
fn seeded_columns_are_the_jacobian_times_the_seeds(
    #[case] name: &str,
    #[case] size: Option<Size>,
    #[case] solver: SolverChoice,
    #[case] t_end: f64,
) {
    let model = sized(name, size).unwrap();
    let spec = model.spec();
    let system = model.system();
    let t_end = if t_end > 0.0 { t_end } else { spec.t_end };
    let mode = system.mode_index(&spec.initial_mode).unwrap();
    let mut problem = Problem::new(&system, spec.default_state(), spec.default_params(), t_end)
        .with_solver(solver)
        .with_observations(vec![t_end / 3.0])
        .with_event_options(EventOptions {
            max_events: 10_000,
            ..EventOptions::default()
        });
    problem.initial_mode = mode;
    let (x0, params) = seeds(system.state_dim(), system.param_dim());
    let along = jacobian_along(&problem, Method::ForwardOnStateSteps, &x0, &params).unwrap();
    assert!(!along.trajectory.events.is_empty(), "{name}: no event");
    assert_eq!(*along.wrt, ["seed.0", "seed.1", "seed.2", "seed.3"]);
    let forward = jacobian(&problem, Method::ForwardOnStateSteps).unwrap();
    assert_close(
        "forward",
        &outputs(&along),
        &contracted(&forward, &x0, &params),
        1e-12,
    );
    let adjoint = jacobian(&problem, Method::Adjoint).unwrap();
    assert_close(
        "adjoint",
        &outputs(&along),
        &contracted(&adjoint, &x0, &params),
        1e-9,
    );
    // The adjoint form of jacobian_along is the same contraction.
    let by_adjoint = jacobian_along(&problem, Method::Adjoint, &x0, &params).unwrap();
    assert_close(
        "adjoint form",
        &outputs(&by_adjoint),
        &contracted(&adjoint, &x0, &params),
        1e-14,
    );
    // The zero column has zero derivatives, bit for bit.
    assert!(along.final_jacobian.column(3).iter().all(|&v| v == 0.0));
}

#[test]
fn seeds_of_the_wrong_shape_name_what_is_wrong() {
    let model = sized("ball2d-flat", None).unwrap();
    let system = model.system();
    let problem = Problem::new(&system, vec![0.0, 1.0, 1.0, 0.0], vec![9.81, 0.8, 0.7], 1.0);
    let err = jacobian_along(
        &problem,
        Method::Forward,
        &DMatrix::zeros(4, 2),
        &DMatrix::zeros(3, 1),
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("columns of the parameter seeds"),
        "{err}"
    );
}

/// The unit directions of every input, in order, are the whole Jacobian:
/// `jacobian`'s numbers to the last bit (the dense fast paths).
#[test]
fn the_identity_seeds_are_the_whole_jacobian() {
    let model = sized("ball2d-flat", None).unwrap();
    let system = model.system();
    let problem = Problem::new(&system, vec![0.0, 1.0, 1.0, 0.0], vec![9.81, 0.8, 0.7], 2.0)
        .with_solver(SolverChoice::dopri5(1e-10));
    let x0 = DMatrix::from_fn(4, 7, |i, c| f64::from(u8::from(i == c)));
    let params = DMatrix::from_fn(3, 7, |j, c| f64::from(u8::from(j + 4 == c)));
    for method in [Method::Forward, Method::ForwardOnStateSteps] {
        let along = jacobian_along(&problem, method, &x0, &params).unwrap();
        let whole = jacobian(&problem, method).unwrap();
        assert_eq!(outputs(&along), outputs(&whole), "{method:?}");
    }
}
