//! The Runge-Kutta engine on a ball dropped from rest (h0 = 1) under g = 9.81,
//! bouncing with restitution e = 0.8. References derived by hand: impacts
//! at `t1 = sqrt(2 h0 / g)` and `t2 = t1 (1 + 2 e)`, impact speed
//! `w = g t1`, rebound speed `e w`.
use super::*;
use crate::problem::EventOptions;
use crate::solver::SolverChoice;
use crate::{run, simulate, NoExtraState};
use ia_core::{Autodiff, FlowFn, FromMode, GuardFn, ResetFn, Scalar, ToMode};

const G: f64 = 9.81;
const E: f64 = 0.8;

struct Fall;
impl FlowFn for Fall {
    fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], d: &mut [S]) {
        d[0] = x[1];
        d[1] = -p[0];
    }
}
struct Floor;
impl GuardFn for Floor {
    fn direction(&self) -> Direction {
        Direction::Falling
    }
    fn value<S: Scalar>(&self, _t: S, x: &[S], _p: &[S]) -> S {
        x[0]
    }
}
struct Bounce;
impl ResetFn for Bounce {
    fn apply<S: Scalar>(&self, _t: S, x: &[S], p: &[S], a: &mut [S]) {
        a[0] = x[0];
        a[1] = -p[1] * x[1];
    }
}

fn ball(terminal: bool) -> HybridSystem {
    let builder = HybridSystem::builder(&["h", "v"], &["g", "e"]).mode("flight", Autodiff(Fall));
    let (from, to) = (FromMode("flight"), ToMode("flight"));
    let builder = if terminal {
        builder.terminal_transition("land", from, to, Autodiff(Floor), Autodiff(Bounce))
    } else {
        builder.transition("bounce", from, to, Autodiff(Floor), Autodiff(Bounce))
    };
    builder.build().unwrap()
}

fn t1() -> f64 {
    (2.0f64 / G).sqrt()
}

#[test]
fn locates_the_impacts_of_a_bouncing_ball() {
    let system = ball(false);
    let problem = Problem::new(&system, vec![1.0, 0.0], vec![G, E], 1.5)
        .with_solver(SolverChoice::dopri5(1e-12));
    let trajectory = simulate(&problem).unwrap();
    let times = trajectory.event_times();
    assert_eq!(times.len(), 2, "{times:?}");
    assert!((times[0] - t1()).abs() < 1e-10, "{}", times[0]);
    assert!(
        (times[1] - t1() * (1.0 + 2.0 * E)).abs() < 1e-9,
        "{}",
        times[1]
    );
    let first = &trajectory.events[0];
    let w = G * t1();
    let (before, after) = (trajectory.state_before(0), trajectory.state_after(0));
    assert!(before[0].abs() < 1e-10);
    assert!((before[1] + w).abs() < 1e-9);
    assert!((after[1] - E * w).abs() < 1e-9);
    assert!(first.guard_rate < 0.0);
    assert_eq!(trajectory.segments.len(), 3);
}

/// Issue 9: equal gaps counted towards Zeno, so an elastic ball (e = 1,
/// impacts every 2 t1 = 0.903 s, evenly spaced by construction) whose
/// gaps fell below `zeno_separation * span` ended in a false Zeno error
/// once rounding made three gaps in a row non-increasing. Here
/// `zeno_separation * span = 1 s` exceeds the gap, as the default
/// `1e-5` does on a run of 1e5 s.
#[test]
fn evenly_spaced_events_are_not_zeno() {
    let system = ball(false);
    let t_end = 100.0;
    let problem = Problem::new(&system, vec![1.0, 0.0], vec![G, 1.0], t_end)
        .with_solver(SolverChoice::dopri5(1e-12))
        .with_event_options(EventOptions {
            zeno_separation: 0.01,
            ..EventOptions::default()
        });
    let trajectory = simulate(&problem).unwrap();
    assert_eq!(trajectory.final_time, t_end);
    // Impacts at t1 (1 + 2k): floor((t_end / t1 - 1) / 2) + 1 of them.
    let expected = ((t_end / t1() - 1.0) / 2.0).floor() as usize + 1;
    assert_eq!(trajectory.events.len(), expected);
    let last = trajectory.events.last().unwrap().time;
    let exact = t1() * (1.0 + 2.0 * (expected - 1) as f64);
    assert!((last - exact).abs() < 1e-8, "{last} vs {exact}");
}

/// The same detector still catches accumulating impacts (e = 0.5, rest
/// at 3 t1, from t1 (1 + 2e / (1 - e))) under the same options.
#[test]
fn accumulating_events_are_still_zeno_with_a_wide_separation() {
    let system = ball(false);
    let problem = Problem::new(&system, vec![1.0, 0.0], vec![G, 0.5], 100.0)
        .with_solver(SolverChoice::dopri5(1e-12))
        .with_event_options(EventOptions {
            zeno_separation: 0.01,
            ..EventOptions::default()
        });
    let err = simulate(&problem).unwrap_err();
    assert_eq!(err.kind(), "zeno", "{err}");
    let HybridError::Zeno {
        last_event_time, ..
    } = err
    else {
        unreachable!()
    };
    assert!(last_event_time < 3.0 * t1(), "{last_event_time}");
}

/// The step limit: DOPRI5 with steps of at most 1e-3 needs more than 100
/// steps to reach the first impact (t = 0.45), so `max_steps = 100` stops
/// a run to t = 1 before it, with the trajectory so far. (A fixed step
/// too small for the limit is refused up front, `Problem::validate`.)
#[test]
fn the_step_limit_ends_the_run_with_the_trajectory_so_far() {
    let system = ball(false);
    let options = |max_steps| EventOptions {
        max_steps,
        ..EventOptions::default()
    };
    let problem = Problem::new(&system, vec![1.0, 0.0], vec![G, E], 1.0)
        .with_solver(SolverChoice::Dopri5 {
            rtol: 1e-10,
            atol: 1e-10,
            max_step: Some(1e-3),
        })
        .with_event_options(options(100));
    let err = simulate(&problem).unwrap_err();
    assert_eq!(err.kind(), "step_limit", "{err}");
    let text = err.to_string();
    assert!(text.contains("max_steps = 100"), "{text}");
    assert!(text.contains("t_end = 1"), "{text}");
    let trajectory = err.trajectory().expect("the run so far");
    assert_eq!(trajectory.stats.steps, 100);
    let t = trajectory.final_time;
    assert!(t > 0.0 && t <= 0.1 + 1e-12, "{t}");
    // h = 1 - g t^2 / 2 before the first impact (DOPRI5 is exact on a
    // parabola).
    assert!((trajectory.final_state[0] - (1.0 - G * t * t / 2.0)).abs() < 1e-12);
    // A limit the run stays within changes nothing.
    let problem = problem.with_event_options(options(2000));
    let run = simulate(&problem).unwrap();
    assert_eq!(run.final_time, 1.0);
    assert!(run.stats.steps <= 2000);
    assert_eq!(EventOptions::default().max_steps, crate::DEFAULT_MAX_STEPS);
}

#[test]
fn a_terminal_transition_ends_the_run_at_the_event() {
    let system = ball(true);
    let problem = Problem::new(&system, vec![1.0, 0.0], vec![G, E], 5.0)
        .with_solver(SolverChoice::dopri5(1e-12));
    let trajectory = simulate(&problem).unwrap();
    assert_eq!(trajectory.events.len(), 1);
    assert!(trajectory.events[0].terminal);
    assert!((trajectory.final_time - t1()).abs() < 1e-10);
    // The reset is applied to the final state.
    assert!((trajectory.final_state[1] - E * G * t1()).abs() < 1e-9);
}

/// Reference: the ball from rest at h0 = 1 lands at t1 = sqrt(2 h0 / g),
/// then bounces every 2 e g t1 / g = 2 e t1.
#[test]
fn a_run_stops_after_the_chosen_firing_or_at_t_end() {
    let system = ball(false);
    let run = |t_end: f64, firings: usize| {
        let problem = Problem::new(&system, vec![1.0, 0.0], vec![G, E], t_end)
            .with_solver(SolverChoice::dopri5(1e-12))
            .with_stop_after("bounce", firings)
            .unwrap();
        simulate(&problem).unwrap()
    };
    let trajectory = run(5.0, 2);
    assert_eq!(trajectory.events.len(), 2);
    assert!(!trajectory.events[1].terminal);
    let t2 = t1() * (1.0 + 2.0 * E);
    assert!((trajectory.final_time - t2).abs() < 1e-10);
    assert_eq!(trajectory.final_state, trajectory.state_after(1));
    // Not reached by t_end: the run ends at t_end as usual.
    let trajectory = run(1.2 * t1(), 2);
    assert_eq!(trajectory.events.len(), 1);
    assert_eq!(trajectory.final_time, 1.2 * t1());
    let e = Problem::new(&system, vec![1.0, 0.0], vec![G, E], 1.0)
        .with_stop_after("land", 1)
        .unwrap_err();
    assert!(e.to_string().contains("bounce"), "{e}");
}

#[test]
fn a_start_band_makes_the_start_a_state_right_after_an_event() {
    let system = ball(false);
    // 1e-9 below the floor, moving up: inside the band, it starts.
    let up = Problem::new(&system, vec![-1e-9, 3.0], vec![G, E], 1.0)
        .with_solver(SolverChoice::dopri5(1e-12));
    assert!(matches!(
        simulate(&up),
        Err(HybridError::GuardViolatedAtStart { .. })
    ));
    let trajectory = simulate(&up.clone().with_start_band(1e-6)).unwrap();
    assert!((trajectory.events[0].time - 6.0 / G).abs() < 1e-8);
    // Beyond the band moving up: disarmed, as after a mode switch; it
    // bounces when it falls through the floor again (by hand, the
    // falling root of -1e-3 + 3 t - G t^2 / 2).
    let below = Problem::new(&system, vec![-1e-3, 3.0], vec![G, E], 1.0)
        .with_solver(SolverChoice::dopri5(1e-12))
        .with_start_band(1e-6);
    let trajectory = simulate(&below).unwrap();
    let falling_root = (3.0 + (9.0 - 2.0 * G * 1e-3f64).sqrt()) / G;
    assert!((trajectory.events[0].time - falling_root).abs() < 1e-8);
    // Heading into the floor, on it or beyond it: refused.
    for (h, v) in [(0.0, -3.0), (-1e-3, -3.0)] {
        let problem = Problem::new(&system, vec![h, v], vec![G, E], 1.0).with_start_band(1e-6);
        assert!(matches!(
            simulate(&problem),
            Err(HybridError::GuardViolatedAtStart { .. })
        ));
    }
    let bad = Problem::new(&system, vec![1.0, 0.0], vec![G, E], 1.0).with_start_band(-1.0);
    assert!(simulate(&bad)
        .unwrap_err()
        .to_string()
        .contains("start_band"));
}

/// Counts what the integrator shows an observer.
#[derive(Default)]
struct Counter {
    steps: usize,
    jumps: Vec<(usize, f64)>,
    observed: Vec<f64>,
    finished_at: Option<f64>,
}
impl Observer for Counter {
    fn event(&mut self, run: RunContext<'_>, jump: &EventJump<'_>) -> Result<(), HybridError> {
        assert_eq!(run.params, [G, E]);
        self.jumps.push((jump.transition, jump.time));
        Ok(())
    }
    fn step_taken(&mut self, _run: RunContext<'_>, _mode: usize, _t0: f64, h: f64, _y0: &[f64]) {
        assert!(h > 0.0);
        self.steps += 1;
    }
    fn observed(&mut self, _run: RunContext<'_>, _index: usize, time: f64, _y: &[f64]) {
        self.observed.push(time);
    }
    fn finished(&mut self, _run: RunContext<'_>, time: f64, _y: &[f64]) {
        self.finished_at = Some(time);
    }
}

#[test]
fn an_observer_sees_every_step_event_and_observation() {
    let system = ball(false);
    let problem = Problem::new(&system, vec![1.0, 0.0], vec![G, E], 1.0)
        .with_solver(SolverChoice::Rk4 { dt: 0.01 })
        .with_observations(vec![0.25, 0.75]);
    // Two observers at once see the same run.
    let mut counters = (Counter::default(), Counter::default());
    let trajectory = run(&problem, &mut NoExtraState, &mut counters).unwrap();
    assert_eq!(counters.0.jumps, counters.1.jumps);
    let counter = counters.0;
    let steps: usize = trajectory.segments.iter().map(|s| s.steps).sum();
    assert_eq!(counter.steps, steps);
    assert_eq!(counter.jumps, vec![(0, trajectory.events[0].time)]);
    assert_eq!(counter.observed, [0.25, 0.75]);
    assert_eq!(counter.finished_at, Some(1.0));
    // Before the impact, h(0.25) = 1 - g 0.25^2 / 2 (RK4 is exact on a
    // quadratic).
    let h = trajectory.observations[0].state[0];
    assert!((h - (1.0 - G * 0.0625 / 2.0)).abs() < 1e-12, "{h}");
}

/// A ceiling at `h = c`: `c - h`, falling.
struct Ceiling;
impl GuardFn for Ceiling {
    fn direction(&self) -> Direction {
        Direction::Falling
    }
    fn value<S: Scalar>(&self, _t: S, x: &[S], p: &[S]) -> S {
        -x[0] + p[1]
    }
}
/// The ball bounces off the ceiling: `v <- -v`.
struct Reflect;
impl ResetFn for Reflect {
    fn apply<S: Scalar>(&self, _t: S, x: &[S], _p: &[S], a: &mut [S]) {
        a[0] = x[0];
        a[1] = -x[1];
    }
}

/// Issue 10: a guard that crosses zero and comes back within one step
/// was not seen, so forward sensitivities (small steps) and the adjoint
/// (large steps) disagreed on the events. One RK4 step of 0.2 s covers
/// the whole flight of a ball thrown up at 1 m/s past a ceiling 1 mm
/// below its peak; the crossing is found and located. Reference: the
/// closed form `t* = (v0 - sqrt(v0^2 - 2 g c)) / g` (RK4 and its cubic
/// Hermite dense output are exact on this quadratic flight).
#[test]
fn a_crossing_inside_one_step_is_found() {
    let sys = HybridSystem::builder(&["h", "v"], &["g", "c"])
        .mode("flight", Autodiff(Fall))
        .transition(
            "ceiling",
            FromMode("flight"),
            ToMode("flight"),
            Autodiff(Ceiling),
            Autodiff(Reflect),
        )
        .build()
        .unwrap();
    let (g, v0): (f64, f64) = (9.81, 1.0);
    let c = v0 * v0 / (2.0 * g) - 1e-3;
    let reference = (v0 - (v0 * v0 - 2.0 * g * c).sqrt()) / g;
    for solver in [SolverChoice::Rk4 { dt: 0.2 }, SolverChoice::dopri5(1e-10)] {
        let problem =
            Problem::new(&sys, vec![0.0, v0], vec![g, c], 0.2).with_solver(solver.clone());
        let run = crate::simulate(&problem).unwrap();
        assert_eq!(run.events.len(), 1, "{solver:?}");
        assert!(
            (run.events[0].time - reference).abs() < 1e-9,
            "{solver:?}: {} vs {reference}",
            run.events[0].time
        );
    }
    // A ceiling above the peak is never reached.
    let problem = Problem::new(&sys, vec![0.0, v0], vec![g, c + 2e-3], 0.2)
        .with_solver(SolverChoice::Rk4 { dt: 0.2 });
    assert!(crate::simulate(&problem).unwrap().events.is_empty());
}

/// Reference: the observation's definition (the state at its time). An
/// observation within rounding of the start (`5e-324`, the least positive
/// double, on `ball1d`) is the start state, like an observation at `t0`;
/// it used to end the run in `step_size_underflow`. The run after it is
/// the run without it, to the bit.
#[rstest::rstest]
#[case::dopri5(SolverChoice::dopri5(1e-10))]
#[case::rk4(SolverChoice::Rk4 { dt: 1e-3 })]
#[case::dop853(SolverChoice::Dop853 { rtol: 1e-10, atol: 1e-10, max_step: None })]
fn an_observation_within_rounding_of_the_start_is_the_start_state(#[case] solver: SolverChoice) {
    let model = ia_models::by_name("ball1d").unwrap();
    let (system, spec) = (model.system(), model.spec());
    let plain =
        Problem::new(&system, spec.default_state(), spec.default_params(), 1.0).with_solver(solver);
    let observed = plain.clone().with_observations(vec![5e-324, 0.5]);
    let with = simulate(&observed).unwrap();
    let without = simulate(&plain.with_observations(vec![0.5])).unwrap();
    assert_eq!(with.observations.len(), 2);
    assert_eq!(with.observations[0].time, 5e-324);
    assert_eq!(with.observations[0].state, spec.default_state());
    assert_eq!(with.observations[1], without.observations[0]);
    assert_eq!(with.events, without.events);
    assert_eq!(with.final_state, without.final_state);
}

/// A clock guard `t - 1` that a step lands on exactly.
struct Clock;
impl GuardFn for Clock {
    fn direction(&self) -> Direction {
        Direction::Rising
    }
    fn value<S: Scalar>(&self, t: S, _x: &[S], _p: &[S]) -> S {
        t - S::from(1.0)
    }
}
struct Kick;
impl ResetFn for Kick {
    fn apply<S: Scalar>(&self, _t: S, x: &[S], _p: &[S], a: &mut [S]) {
        a[0] = x[0];
        a[1] = x[1] + S::from(1.0);
    }
}

#[test]
fn a_guard_a_step_ends_exactly_on_fires_there() {
    // Reference: the rule "from its side to zero or beyond" (vocabulary,
    // rule 1). The observation at t = 1 ends a step exactly where the clock
    // guard is zero; the kick fires at t = 1 (before the fix: no event at
    // t = 1, then an event_location error on the next step, whose start
    // value was zero). With no gravity the velocity is 0 then 1, so
    // h(2) = 1 + 1.
    let system = HybridSystem::builder(&["h", "v"], &["g", "e"])
        .mode("flight", Autodiff(Fall))
        .transition(
            "kick",
            FromMode("flight"),
            ToMode("flight"),
            Autodiff(Clock),
            Autodiff(Kick),
        )
        .build()
        .unwrap();
    for solver in [
        SolverChoice::dopri5(1e-10),
        SolverChoice::Rk4 { dt: 0.25 },
        SolverChoice::Dop853 {
            rtol: 1e-10,
            atol: 1e-10,
            max_step: None,
        },
    ] {
        let problem = Problem::new(&system, vec![1.0, 0.0], vec![0.0, E], 2.0)
            .with_solver(solver.clone())
            .with_observations(vec![1.0]);
        let trajectory = simulate(&problem).unwrap();
        assert_eq!(trajectory.event_times(), vec![1.0], "{solver:?}");
        assert!(
            (trajectory.final_state[0] - 2.0).abs() < 1e-12,
            "{solver:?}"
        );
    }
}

/// A nonlinear flow whose Jacobian depends on the state, the time and the
/// parameters.
struct Coupled;
impl FlowFn for Coupled {
    fn rate<S: Scalar>(&self, t: S, x: &[S], p: &[S], d: &mut [S]) {
        d[0] = -p[0] * x[0] * x[1] + t.sin();
        d[1] = x[0].exp() - p[1] * x[1] * x[1] * x[2];
        d[2] = x[0] / (S::from(1.0) + x[2] * x[2]);
    }
}

#[test]
fn the_state_jacobian_by_products_is_the_flows_partials_to_the_bit() {
    // Reference: the flow's full partials (`Flow::partials`, one dual sweep
    // per input); the implicit steppers' Jacobian, by one Jacobian-vector
    // product per state, must be the same numbers, column-major.
    let system = HybridSystem::builder(&["a", "b", "c"], &["k", "m"])
        .mode("m", Autodiff(Coupled))
        .build()
        .unwrap();
    let params = [1.3, 0.7];
    let mut extra = NoExtraState;
    let mut rhs = HybridRhs {
        system: &system,
        params: &params,
        mode: 0,
        n: 3,
        dim: 3,
        controlled: 3,
        extra: &mut extra,
        jacobian: &mut Default::default(),
    };
    let (t, x) = (0.4, [0.3, -1.2, 2.5]);
    let mut jacobian = [0.0; 9];
    assert!(rhs.jacobian(t, &x, &mut jacobian));
    let mut partials = ia_core::FlowPartials::zeros(3, 2);
    system.modes()[0]
        .flow
        .partials(t, &x, &params, &mut partials);
    assert_eq!(&jacobian[..], partials.x.as_slice());
}
