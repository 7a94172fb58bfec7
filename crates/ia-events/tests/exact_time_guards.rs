//! The exact solver on guards that are thresholds on time
//! (`Guard::time_threshold`, `g = t - level`), on a tiny system: one entry
//! `x` decaying, `x' = -x` in mode `decay` (rising, `x' = 1`, in mode
//! `ramp`), kicked by `x += w` when `t` reaches `t_in`. References: the
//! closed form `x(T) = x0 e^{-T} + w e^{-(T - t_in)}` (by hand), and the
//! same system run by DOPRI5 at `1e-12` (the event rules are every
//! engine's).

use ia_core::{
    Direction, Flow, FlowPartials, FromMode, Guard, GuardPartials, HybridSystem, Reset,
    ResetPartials, Threshold, ToMode,
};
use ia_events::{exact, simulate, Problem, SolverChoice};
use rstest::rstest;

/// `x' = rate x + drift`.
struct Linear {
    rate: f64,
    drift: f64,
}

impl Flow for Linear {
    fn rate(&self, _t: f64, x: &[f64], _p: &[f64], dxdt: &mut [f64]) {
        dxdt[0] = self.rate * x[0] + self.drift;
    }
    fn partials(&self, _t: f64, _x: &[f64], _p: &[f64], out: &mut FlowPartials) {
        out.x[(0, 0)] = self.rate;
    }
    fn decoupled_linear(&self, _p: &[f64], a: &mut [f64], b: &mut [f64]) -> bool {
        (a[0], b[0]) = (self.rate, self.drift);
        true
    }
}

/// `t - p[0]` in `direction`.
struct At(Direction);

impl Guard for At {
    fn direction(&self) -> Direction {
        self.0
    }
    fn value(&self, t: f64, _x: &[f64], p: &[f64]) -> f64 {
        t - p[0]
    }
    fn partials(&self, _t: f64, _x: &[f64], _p: &[f64], out: &mut GuardPartials) {
        out.t = 1.0;
        out.p[0] = -1.0;
    }
    fn time_threshold(&self, p: &[f64]) -> Option<f64> {
        Some(p[0])
    }
}

/// `x - 1`, rising.
struct AboveOne;

impl Guard for AboveOne {
    fn direction(&self) -> Direction {
        Direction::Rising
    }
    fn value(&self, _t: f64, x: &[f64], _p: &[f64]) -> f64 {
        x[0] - 1.0
    }
    fn partials(&self, _t: f64, _x: &[f64], _p: &[f64], out: &mut GuardPartials) {
        out.x[0] = 1.0;
    }
    fn threshold(&self, _p: &[f64]) -> Option<Threshold> {
        Some(Threshold {
            state: 0,
            level: 1.0,
        })
    }
}

/// `x += p[1]`.
struct Kick;

impl Reset for Kick {
    fn apply(&self, _t: f64, x: &[f64], p: &[f64], x_after: &mut [f64]) {
        x_after[0] = x[0] + p[1];
    }
    fn partials(&self, _t: f64, _x: &[f64], _p: &[f64], out: &mut ResetPartials) {
        out.x[(0, 0)] = 1.0;
        out.p[(0, 1)] = 1.0;
    }
}

/// The identity.
struct Same;

impl Reset for Same {
    fn apply(&self, _t: f64, x: &[f64], _p: &[f64], x_after: &mut [f64]) {
        x_after.copy_from_slice(x);
    }
    fn partials(&self, _t: f64, _x: &[f64], _p: &[f64], out: &mut ResetPartials) {
        out.x[(0, 0)] = 1.0;
    }
}

/// One mode `decay` and the kick `input` at `t_in` in `direction`.
fn decaying(direction: Direction) -> HybridSystem {
    HybridSystem::builder(&["x"], &["t_in", "w"])
        .mode(
            "decay",
            Linear {
                rate: -1.0,
                drift: 0.0,
            },
        )
        .transition(
            "input",
            FromMode("decay"),
            ToMode("decay"),
            At(direction),
            Kick,
        )
        .build()
        .unwrap()
}

/// The run of `problem` by the exact solver and by DOPRI5 at `1e-12`:
/// the same events (transition, time within `1e-9`) and final state.
fn both(problem: &Problem<'_>) -> ia_core::Trajectory {
    let run = exact::simulate(problem).unwrap_or_else(|e| panic!("{e}"));
    let stepped = simulate(&problem.clone().with_solver(SolverChoice::dopri5(1e-12)))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(run.events.len(), stepped.events.len());
    for (a, b) in run.events.iter().zip(&stepped.events) {
        assert_eq!(
            (a.transition, a.cascade_of),
            (b.transition, b.cascade_of),
            "at {} vs {}",
            a.time,
            b.time
        );
        assert!((a.time - b.time).abs() < 1e-9, "{} vs {}", a.time, b.time);
    }
    let (x, y) = (run.final_state[0], stepped.final_state[0]);
    assert!((x - y).abs() < 1e-9, "{x} vs {y}");
    run
}

/// A rising time guard fires once, at `t = t_in` to the bit, with rate 1;
/// the final state is the closed form's.
#[rstest]
#[case::early(0.25)]
#[case::middle(1.5)]
#[case::late(2.999)]
fn a_time_guard_fires_once_at_its_level(#[case] t_in: f64) {
    let system = decaying(Direction::Rising);
    let (w, t_end) = (0.75, 3.0);
    let problem = Problem::new(&system, vec![2.0], vec![t_in, w], t_end);
    let run = both(&problem);
    assert_eq!(run.events.len(), 1);
    assert_eq!(run.events[0].time.to_bits(), t_in.to_bits());
    assert_eq!(run.events[0].guard_rate, 1.0);
    let closed = 2.0 * (-t_end).exp() + w * (-(t_end - t_in)).exp();
    let x = run.final_state[0];
    assert!((x - closed).abs() < 1e-14, "{x} vs {closed}");
}

/// A level at or after the end, or a falling time guard (starting
/// positive, before its level; its rate, 1, points away), never fires.
#[rstest]
#[case::after_the_end(Direction::Rising, 4.0)]
#[case::at_the_end(Direction::Rising, 3.0)]
#[case::falling(Direction::Falling, -1.0)]
fn a_time_guard_that_cannot_cross_does_not_fire(#[case] direction: Direction, #[case] t_in: f64) {
    let system = decaying(direction);
    let problem = Problem::new(&system, vec![2.0], vec![t_in, 0.75], 3.0);
    let run = both(&problem);
    assert!(run.events.is_empty());
    assert!((run.final_state[0] - 2.0 * (-3.0f64).exp()).abs() < 1e-15);
}

/// A rising time guard at or past zero at the start is an error, as for a
/// state guard (rule 9: it does not head back), in both engines.
#[rstest]
#[case::past(-1.0)]
#[case::on_zero(0.0)]
fn a_time_guard_past_its_level_at_the_start_is_refused(#[case] t_in: f64) {
    let system = decaying(Direction::Rising);
    let problem = Problem::new(&system, vec![2.0], vec![t_in, 0.75], 3.0);
    let err = exact::simulate(&problem).unwrap_err();
    assert_eq!(err.kind(), "guard_violated_at_start", "{err}");
    let stepped = simulate(&problem.clone().with_solver(SolverChoice::dopri5(1e-12)));
    assert_eq!(stepped.unwrap_err().kind(), err.kind());
}

/// Entering a mode whose time guard is already past its level fires it at
/// once, a cascade of the switch (it does not head back), as the
/// Runge-Kutta engine does; a level ahead fires at the level. `x` ramps
/// up at rate 1 from 0 and switches to `decay` at `x = 1` (`t = 1`).
#[rstest]
#[case::passed(0.5, true)]
#[case::ahead(2.0, false)]
fn a_time_guard_entered_past_its_level_fires_at_once(#[case] t_in: f64, #[case] cascade: bool) {
    let system = HybridSystem::builder(&["x"], &["t_in", "w"])
        .mode(
            "ramp",
            Linear {
                rate: 0.0,
                drift: 1.0,
            },
        )
        .mode(
            "decay",
            Linear {
                rate: -1.0,
                drift: 0.0,
            },
        )
        .transition("switch", FromMode("ramp"), ToMode("decay"), AboveOne, Same)
        .transition(
            "input",
            FromMode("decay"),
            ToMode("decay"),
            At(Direction::Rising),
            Kick,
        )
        .build()
        .unwrap();
    let problem = Problem::new(&system, vec![0.0], vec![t_in, 0.75], 3.0);
    let run = both(&problem);
    let fired: Vec<usize> = run.events.iter().map(|e| e.transition).collect();
    assert_eq!(fired, [0, 1]);
    assert_eq!(run.events[1].cascade_of.is_some(), cascade);
    let at = if cascade { 1.0 } else { t_in };
    assert_eq!(run.events[1].time, at);
}
