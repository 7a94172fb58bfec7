//! The hybrid integrator (ia-events) against the closed-form references of
//! `crates/ia-verify/references/closed_form.json` (computed outside this project with
//! sympy/mpmath), and one test per error it reports.

use ia_core::{
    Autodiff, Direction, FlowFn, FromMode, GuardFn, HybridError, HybridSystem, Identity, Scalar,
    ToMode,
};
use ia_events::{simulate, OdeSolversMethod, Problem, SolverChoice};
use ia_verify::references::{reference_case, reference_error};
use rstest::rstest;

/// Simulates reference case `name` with `solver`; returns the worst relative
/// error (absolute below 1e-3) over the final state and the event times, and
/// the number of events.
fn worst_reference_error(name: &str, solver: SolverChoice) -> (f64, usize) {
    let case = reference_case(name).unwrap();
    let model = ia_models::by_name(&case.model).unwrap();
    let system = model.system();
    let problem = case
        .problem(model.as_ref(), &system)
        .unwrap()
        .with_solver(solver);
    let run = simulate(&problem).unwrap();
    assert_eq!(
        run.events.len(),
        case.event_times.len(),
        "{name}: event count, times {:?}",
        run.event_times()
    );
    let expected = case.final_state_vector(model.as_ref()).unwrap();
    let times = run.event_times();
    let worst = run
        .final_state
        .iter()
        .zip(&expected)
        .chain(times.iter().zip(&case.event_times))
        .map(|(v, r)| reference_error(*v, *r, 1e-3))
        .fold(0.0, f64::max);
    (worst, run.events.len())
}

#[rstest]
#[case("ball2d_flat_a")]
#[case("ball2d_flat_b")]
#[case("ball2d_bowl_a")]
#[case("lif_a")]
#[case("thermostat_a")]
fn dopri5_reproduces_closed_form(#[case] name: &str) {
    let (worst, _) = worst_reference_error(name, SolverChoice::dopri5(1e-12));
    assert!(worst < 1e-9, "{name}: worst error {worst:e}");
}

#[rstest]
#[case("ball2d_flat_a", OdeSolversMethod::Dopri5)]
#[case("ball2d_flat_b", OdeSolversMethod::Dopri5)]
#[case("ball2d_bowl_a", OdeSolversMethod::Dopri5)]
#[case("lif_a", OdeSolversMethod::Dopri5)]
#[case("thermostat_a", OdeSolversMethod::Dopri5)]
#[case("ball2d_flat_a", OdeSolversMethod::Dop853)]
#[case("ball2d_bowl_a", OdeSolversMethod::Dop853)]
#[case("lif_a", OdeSolversMethod::Dop853)]
#[case("thermostat_a", OdeSolversMethod::Dop853)]
fn ode_solvers_adapter_reproduces_closed_form(
    #[case] name: &str,
    #[case] integrator: OdeSolversMethod,
) {
    let case = reference_case(name).unwrap();
    let solver = SolverChoice::OdeSolvers {
        integrator,
        rtol: 1e-12,
        atol: 1e-12,
        macro_step: case.t_end / 20.0,
    };
    let (worst, _) = worst_reference_error(name, solver);
    assert!(
        worst < 1e-9,
        "{name} through {integrator:?}: worst error {worst:e}"
    );
}

/// Ballistic flight is quadratic in time, which RK4 and its cubic Hermite
/// dense output reproduce exactly: on the ball cases RK4 is exact up to
/// rounding at any step, so there is no order to measure.
#[rstest]
#[case("ball2d_flat_a")]
#[case("ball2d_flat_b")]
#[case("ball2d_bowl_a")]
fn rk4_is_exact_on_ballistic_flight(#[case] name: &str) {
    let (worst, _) = worst_reference_error(name, SolverChoice::Rk4 { dt: 0.05 });
    assert!(worst < 1e-11, "{name}: worst error {worst:e}");
}

/// On the exponential flows RK4's error falls as dt^4: the measured order
/// between successive halvings lies in [3.5, 4.5].
#[rstest]
#[case("lif_a", 4e-4)]
#[case("thermostat_a", 0.4)]
#[case("ode_solvers_rk4:lif_a", 4e-4)]
fn rk4_converges_at_fourth_order(#[case] name: &str, #[case] dt_coarse: f64) {
    let (name, adapter) = match name.strip_prefix("ode_solvers_rk4:") {
        Some(rest) => (rest, true),
        None => (name, false),
    };
    let errors: Vec<f64> = (0..4)
        .map(|k| {
            let dt = dt_coarse / f64::from(1 << k);
            let solver = if adapter {
                SolverChoice::OdeSolvers {
                    integrator: OdeSolversMethod::Rk4,
                    rtol: 1e-12,
                    atol: 1e-12,
                    macro_step: dt,
                }
            } else {
                SolverChoice::Rk4 { dt }
            };
            worst_reference_error(name, solver).0
        })
        .collect();
    for pair in errors.windows(2) {
        let order = (pair[0] / pair[1]).log2();
        assert!(
            (3.5..=4.5).contains(&order),
            "{name}: errors {errors:?}, order {order}"
        );
    }
}

#[test]
fn observations_match_a_run_that_ends_there() {
    let case = reference_case("ball2d_bowl_a").unwrap();
    let model = ia_models::by_name(&case.model).unwrap();
    let system = model.system();
    let times = vec![0.0, 0.3, 0.9789778700995253, 1.5];
    let problem = case
        .problem(model.as_ref(), &system)
        .unwrap()
        .with_solver(SolverChoice::dopri5(1e-12))
        .with_observations(times.clone());
    let run = simulate(&problem).unwrap();
    assert_eq!(run.observations.len(), times.len());
    assert_eq!(run.observations[0].state, run.initial_state);
    for obs in &run.observations[1..] {
        let mut short = problem.clone();
        short.t_end = obs.time;
        short.observation_times.clear();
        let end = simulate(&short).unwrap();
        for (a, b) in obs.state.iter().zip(&end.final_state) {
            assert!((a - b).abs() < 1e-10, "t = {}: {a} vs {b}", obs.time);
        }
    }
    // The reference's final state is also reached with observations on the way.
    let expected = case.final_state_vector(model.as_ref()).unwrap();
    for (v, r) in run.final_state.iter().zip(&expected) {
        assert!(reference_error(*v, *r, 1e-3) < 1e-9);
    }
}

/// Runs `f` and checks it returns the error `kind` without panicking.
fn expect_error<T: std::fmt::Debug>(
    kind: &str,
    f: impl FnOnce() -> Result<T, HybridError>,
) -> HybridError {
    let outcome =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).expect("the library panicked");
    let err = outcome.expect_err("expected an error");
    assert_eq!(err.kind(), kind, "got: {err}");
    err
}

fn ball2d(x0: Vec<f64>, params: Vec<f64>, t_end: f64) -> (HybridSystem, Vec<f64>, Vec<f64>, f64) {
    (ia_models::Ball2dFlat.system_owned(), x0, params, t_end)
}

trait OwnedSystem {
    fn system_owned(&self) -> HybridSystem;
}
impl<M: ia_models::Model> OwnedSystem for M {
    fn system_owned(&self) -> HybridSystem {
        self.system()
    }
}

#[test]
fn zeno_ball_reports_accumulation_with_events_before_it() {
    // ball1d: h, v / g, e, floor. Dropped from 1 m with e = 0.5, the impacts
    // accumulate at t1 (1 + 2e / (1 - e)) = 3 t1 with t1 = sqrt(2 / g).
    let system = ia_models::Ball1d.system_owned();
    let problem = Problem::new(&system, vec![1.0, 0.0], vec![9.81, 0.5, 0.0], 10.0)
        .with_solver(SolverChoice::dopri5(1e-12));
    let err = expect_error("zeno", || simulate(&problem));
    let trajectory = err.trajectory().expect("Zeno carries the trajectory");
    let accumulation = 3.0 * (2.0f64 / 9.81).sqrt();
    assert!(
        trajectory.events.len() >= 10,
        "{} events",
        trajectory.events.len()
    );
    let times = trajectory.event_times();
    assert!(times.windows(2).all(|w| w[0] < w[1]));
    assert!(times.iter().all(|&t| t < accumulation));
    // Impact k happens at t1 (1 + 2 e (1 - e^k) / (1 - e)).
    let t1 = (2.0f64 / 9.81).sqrt();
    for (k, t) in times.iter().enumerate() {
        let exact = t1 * (1.0 + 2.0 * 0.5 * (1.0 - 0.5f64.powi(k as i32)) / 0.5);
        assert!((t - exact).abs() < 1e-9, "impact {k}: {t} vs {exact}");
    }
    assert!(accumulation - trajectory.final_time < 1e-3);
}

/// A point sweeping right at speed `V` along y = 1 + (t - 1)^3 crosses the
/// level y = c = 1 with zero vertical speed: the flow is tangent to the guard
/// surface there.
struct Sweep;
impl FlowFn for Sweep {
    fn rate<S: Scalar>(&self, t: S, _x: &[S], p: &[S], d: &mut [S]) {
        d[0] = p[0];
        d[1] = (t - 1.0) * (t - 1.0) * 3.0;
    }
}
struct Level;
impl GuardFn for Level {
    fn direction(&self) -> Direction {
        Direction::Falling
    }
    fn value<S: Scalar>(&self, _t: S, x: &[S], p: &[S]) -> S {
        p[1] - x[1]
    }
}

#[test]
fn grazing_contact_is_reported() {
    let system = HybridSystem::builder(&["x", "y"], &["V", "c"])
        .mode("sweep", Autodiff(Sweep))
        .transition(
            "touch",
            FromMode("sweep"),
            ToMode("sweep"),
            Autodiff(Level),
            Identity,
        )
        .build()
        .unwrap();
    let problem = Problem::new(&system, vec![0.0, 0.0], vec![1.0, 1.0], 2.0)
        .with_solver(SolverChoice::dopri5(1e-12));
    let err = expect_error("grazing", || simulate(&problem));
    match err {
        HybridError::Grazing {
            transversality,
            time,
            ..
        } => {
            assert!(transversality < 1e-7);
            assert!((time - 1.0).abs() < 1e-4);
        }
        other => panic!("{other}"),
    }
    // Far from tangency the same crossing is an ordinary event.
    let clear = Problem::new(&system, vec![0.0, 0.0], vec![1.0, 1.5], 2.0);
    assert_eq!(simulate(&clear).unwrap().events.len(), 1);
}

#[rstest]
#[case(vec![0.0, f64::NAN, 1.0, 0.0], vec![9.81, 0.8, 0.7], "state 'y'")]
#[case(vec![0.0, 1.0, 1.0, 0.0], vec![f64::INFINITY, 0.8, 0.7], "parameter 'g'")]
fn non_finite_input_is_named(#[case] x0: Vec<f64>, #[case] p: Vec<f64>, #[case] offender: &str) {
    let (system, x0, p, t_end) = ball2d(x0, p, 1.0);
    let problem = Problem::new(&system, x0, p, t_end);
    let err = expect_error("non_finite", || simulate(&problem));
    assert!(err.to_string().contains(offender), "{err}");
}

/// x' = sqrt(1.5 - x) turns NaN past x = 1.5 (reached at t = 2 sqrt(1.5)).
struct Root;
impl FlowFn for Root {
    fn rate<S: Scalar>(&self, _t: S, x: &[S], _p: &[S], d: &mut [S]) {
        d[0] = (S::from(1.5) - x[0] - S::from(0.01)).sqrt() + S::from(0.2);
    }
}
/// x' = x^2 from x = 1 blows up at t = 1.
struct BlowUp;
impl FlowFn for BlowUp {
    fn rate<S: Scalar>(&self, _t: S, x: &[S], _p: &[S], d: &mut [S]) {
        d[0] = x[0] * x[0];
    }
}

#[test]
fn non_finite_state_during_a_run_is_reported() {
    let system = HybridSystem::builder(&["x"], &[])
        .mode("m", Autodiff(Root))
        .build()
        .unwrap();
    let problem = Problem::new(&system, vec![0.0], vec![], 10.0);
    let err = expect_error("non_finite", || simulate(&problem));
    assert!(err.trajectory().is_some());
}

#[test]
fn step_size_underflow_is_reported() {
    let system = HybridSystem::builder(&["x"], &[])
        .mode("m", Autodiff(BlowUp))
        .build()
        .unwrap();
    let problem = Problem::new(&system, vec![1.0], vec![], 2.0);
    let err = expect_error("step_size_underflow", || simulate(&problem));
    let reached = err.trajectory().unwrap().final_time;
    assert!((reached - 1.0).abs() < 1e-3, "stopped at {reached}");
}

#[test]
fn guard_beyond_zero_at_start_is_rejected() {
    let (system, x0, p, t_end) = ball2d(vec![0.0, -0.1, 1.0, 0.0], vec![9.81, 0.8, 0.7], 1.0);
    let problem = Problem::new(&system, x0, p, t_end);
    let err = expect_error("guard_violated_at_start", || simulate(&problem));
    assert!(err.to_string().contains("'impact'"), "{err}");
}

#[rstest]
#[case(vec![0.0, 1.0, 1.0], vec![9.81, 0.8, 0.7], "initial state")]
#[case(vec![0.0, 1.0, 1.0, 0.0], vec![9.81, 0.8], "parameters")]
fn dimension_mismatch_is_reported(#[case] x0: Vec<f64>, #[case] p: Vec<f64>, #[case] what: &str) {
    let (system, x0, p, t_end) = ball2d(x0, p, 1.0);
    let problem = Problem::new(&system, x0, p, t_end);
    let err = expect_error("dimension_mismatch", || simulate(&problem));
    assert!(err.to_string().contains(what), "{err}");
}

#[rstest]
#[case(SolverChoice::Dopri5 { rtol: 0.0, atol: 1e-8, max_step: None }, 1.0, "rtol")]
#[case(SolverChoice::Dopri5 { rtol: 1e-8, atol: f64::NAN, max_step: None }, 1.0, "atol")]
#[case(SolverChoice::Rk4 { dt: -0.1 }, 1.0, "dt")]
#[case(SolverChoice::OdeSolvers { integrator: OdeSolversMethod::Dopri5, rtol: 1e-8, atol: 1e-8, macro_step: 0.0 }, 1.0, "macro_step")]
#[case(SolverChoice::dopri5(1e-8), 0.0, "t_end")]
fn invalid_options_are_rejected(
    #[case] solver: SolverChoice,
    #[case] t_end: f64,
    #[case] name: &str,
) {
    let (system, x0, p, _) = ball2d(vec![0.0, 1.0, 1.0, 0.0], vec![9.81, 0.8, 0.7], 1.0);
    let problem = Problem::new(&system, x0, p, t_end).with_solver(solver);
    let err = expect_error("invalid_option", || simulate(&problem));
    assert!(err.to_string().contains(name), "{err}");
}

#[test]
fn unknown_mode_lists_valid_modes() {
    let system = ia_models::Thermostat.system_owned();
    let err = expect_error("unknown_name", || {
        Problem::new(&system, vec![21.0], vec![0.2, 5.0, 10.0, 19.0, 23.0], 1.0)
            .with_mode("heating")
    });
    let text = err.to_string();
    assert!(
        text.contains("'heating'") && text.contains("off") && text.contains("on"),
        "{text}"
    );
}

#[test]
fn zeno_by_event_count_is_reported() {
    let system = ia_models::Lif.system_owned();
    let mut problem = Problem::new(&system, vec![0.2], vec![1.3, 0.01, 1.0, 0.0], 0.05);
    problem.events.max_events = 2;
    let err = expect_error("zeno", || simulate(&problem));
    assert_eq!(err.trajectory().unwrap().events.len(), 3);
}

/// Issue 9: an elastic ball (e = 1, impacts evenly spaced every 2 t1 =
/// 0.903 s) over a long run ended in a false Zeno error: with the default
/// `zeno_separation = 1e-5`, gaps shorter than 1 s on a run of 1e5 s
/// counted, and equal gaps counted as shrinking (before the fix it stopped
/// at t = 21.2 after 24 impacts). The run now reaches its end with every
/// impact (reference: impacts at t1 (1 + 2k), t1 = sqrt(2 / g)).
#[test]
fn an_elastic_ball_over_a_long_run_is_not_zeno() {
    let system = ia_models::Ball1d.system_owned();
    let t_end = 1e5;
    let problem = Problem::new(&system, vec![1.0, 0.0], vec![9.81, 1.0, 0.0], t_end)
        .with_solver(SolverChoice::dopri5(1e-10))
        .with_event_options(ia_events::EventOptions {
            max_events: 200_000,
            ..Default::default()
        });
    let trajectory = simulate(&problem).unwrap();
    assert_eq!(trajectory.final_time, t_end);
    let t1 = (2.0f64 / 9.81).sqrt();
    let expected = ((t_end / t1 - 1.0) / 2.0).floor() as usize + 1;
    assert_eq!(trajectory.events.len(), expected);
}
