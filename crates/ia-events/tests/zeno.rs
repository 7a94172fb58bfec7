//! The Zeno rule (event rule 8) on hand-built systems whose event times
//! are known in closed form, under every engine (exact eager and lazy,
//! explicit and implicit Runge-Kutta), which share one recorder and so one
//! rule.
//!
//! - Distinct transitions firing close together, with shrinking gaps, are
//!   no accumulation: `clocks` has transitions `fire<k>` at the times
//!   `t = t<k>` (time-threshold guards, each adding `w` to `x`), so the
//!   events are at `t<k>` exactly and `x(t_end) = x0 + 4 w` (by hand).
//! - A chattering cycle of `n` transitions is an accumulation: `ring(n)` is
//!   a ball dropped from `h0 = 1` under `g`, bouncing with restitution `e`,
//!   whose impacts switch it around a ring of `n` modes (transition
//!   `bounce<j>` from mode `m<j>` to `m<j+1 mod n>`), so every transition
//!   accumulates. Impacts at `t_k = t1 (1 + 2 e (1 - e^k) / (1 - e))`,
//!   `t1 = sqrt(2 h0 / g)`, accumulating at `t1 (1 + e) / (1 - e)` (by hand).

use ia_core::{
    Autodiff, Direction, FlowFn, FromMode, GuardFn, HybridError, HybridSystem, ResetFn, Scalar,
    ToMode,
};
use ia_events::{simulate, EventOptions, EventRecording, Problem, SolverChoice};
use rstest::rstest;

/// `x' = 0` (a decoupled linear flow, so the exact solver runs it).
struct Still;
impl FlowFn for Still {
    fn rate<S: Scalar>(&self, _t: S, _x: &[S], _p: &[S], d: &mut [S]) {
        d[0] = S::from(0.0);
    }
    fn decoupled_linear(&self, _p: &[f64], a: &mut [f64], b: &mut [f64]) -> bool {
        (a[0], b[0]) = (0.0, 0.0);
        true
    }
}

/// `t - p[k]`, rising.
struct At(usize);
impl GuardFn for At {
    fn direction(&self) -> Direction {
        Direction::Rising
    }
    fn value<S: Scalar>(&self, t: S, _x: &[S], p: &[S]) -> S {
        t - p[self.0]
    }
    fn time_threshold(&self, p: &[f64]) -> Option<f64> {
        Some(p[self.0])
    }
}

/// `x += p[4]` (the parameter `w`).
struct Kick;
impl ResetFn for Kick {
    fn apply<S: Scalar>(&self, _t: S, x: &[S], p: &[S], a: &mut [S]) {
        a[0] = x[0] + p[4];
    }
}

/// Four transitions `fire<k>` at `t = t<k>`, each kicking `x` by `w`.
fn clocks() -> HybridSystem {
    let mut builder =
        HybridSystem::builder(&["x"], &["t0", "t1", "t2", "t3", "w"]).mode("on", Autodiff(Still));
    for k in 0..4 {
        let name = format!("fire{k}");
        let (from, to) = (FromMode("on"), ToMode("on"));
        builder = builder.transition(&name, from, to, Autodiff(At(k)), Autodiff(Kick));
    }
    builder.build().unwrap()
}

/// Reference: the closed form (events at `t<k>` to the bit for the exact
/// solver, within the time tolerance for the others; `x = x0 + 4 w`).
/// Gaps of 4e-6, 2e-6 and 1e-6 on a run of length 2: all below
/// `zeno_separation * span = 2e-5`, each half the one before, their
/// continuation ending long before `t_end`. Before the rule read gaps per
/// transition, every engine refused this run as Zeno at the fourth
/// event. Every engine runs it: exact eager (event states kept) and lazy
/// (none kept), DOPRI5, Kvaerno 5 (implicit) and RK4.
#[rstest]
#[case::exact_eager("exact", true)]
#[case::exact_lazy("exact", false)]
#[case::dopri5("dopri5", true)]
#[case::kvaerno5("kvaerno5", true)]
#[case::rk4("rk4", true)]
fn distinct_transitions_firing_close_together_are_not_zeno(
    #[case] method: &str,
    #[case] event_states: bool,
) {
    let system = clocks();
    let times = [1.0, 1.0 + 4e-6, 1.0 + 6e-6, 1.0 + 7e-6];
    let (x0, w, t_end) = (0.5, 0.25, 2.0);
    let mut params = times.to_vec();
    params.push(w);
    let solver = match method {
        "exact" => SolverChoice::Exact,
        "dopri5" => SolverChoice::dopri5(1e-12),
        "kvaerno5" => SolverChoice::Kvaerno5 {
            rtol: 1e-10,
            atol: 1e-10,
            max_step: None,
        },
        _ => SolverChoice::Rk4 { dt: 0.01 },
    };
    let problem = Problem::new(&system, vec![x0], params, t_end)
        .with_solver(solver)
        .with_event_options(EventOptions {
            event_states,
            ..EventOptions::default()
        });
    let run = simulate(&problem).unwrap_or_else(|e| panic!("{method}: {e}"));
    let fired: Vec<usize> = run.events.iter().map(|e| e.transition).collect();
    assert_eq!(fired, [0, 1, 2, 3], "{method}");
    let tolerance = 1e-13 * t_end;
    for (event, t) in run.events.iter().zip(times) {
        assert!(event.cascade_of.is_none());
        if method == "exact" {
            assert_eq!(event.time, t);
        } else {
            assert!((event.time - t).abs() <= tolerance, "{} vs {t}", event.time);
        }
    }
    assert_eq!(run.final_time, t_end);
    assert!((run.final_state[0] - (x0 + 4.0 * w)).abs() < 1e-14);
}

/// `h' = v`, `v' = -g`.
struct Fall;
impl FlowFn for Fall {
    fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], d: &mut [S]) {
        d[0] = x[1];
        d[1] = -p[0];
    }
}

/// `h`, falling.
struct Floor;
impl GuardFn for Floor {
    fn direction(&self) -> Direction {
        Direction::Falling
    }
    fn value<S: Scalar>(&self, _t: S, x: &[S], _p: &[S]) -> S {
        x[0]
    }
}

/// `v -> -e v`.
struct Bounce;
impl ResetFn for Bounce {
    fn apply<S: Scalar>(&self, _t: S, x: &[S], p: &[S], a: &mut [S]) {
        a[0] = x[0];
        a[1] = -p[1] * x[1];
    }
}

/// The bouncing ball on a ring of `n` modes (see the module
/// documentation).
fn ring(n: usize) -> HybridSystem {
    let modes: Vec<String> = (0..n).map(|j| format!("m{j}")).collect();
    let mut builder = HybridSystem::builder(&["h", "v"], &["g", "e"]);
    for mode in &modes {
        builder = builder.mode(mode, Autodiff(Fall));
    }
    for j in 0..n {
        let (from, to) = (FromMode(&modes[j]), ToMode(&modes[(j + 1) % n]));
        builder = builder.transition(
            &format!("bounce{j}"),
            from,
            to,
            Autodiff(Floor),
            Autodiff(Bounce),
        );
    }
    builder.build().unwrap()
}

const G: f64 = 9.81;

/// Impact `k` (from 0) of the ball dropped from 1 with restitution `e`.
fn impact(k: usize, e: f64) -> f64 {
    let t1 = (2.0 / G).sqrt();
    t1 * (1.0 + 2.0 * e * (1.0 - e.powi(k as i32)) / (1.0 - e))
}

/// A chattering cycle of `n` transitions (each of them accumulating) is
/// reported as Zeno before the accumulation point, whatever the record
/// keeps, under an explicit and an implicit method. Reference: the closed
/// form of the impacts (module documentation). Each transition fires every
/// `n`-th impact, so its gaps are `t_{k+n} - t_k`, shrinking by `e^n`; the
/// rule trips at the third gap of a transition shorter than
/// `zeno_separation * span`, that is at the first impact `K >= 3n` with
/// `t_{K-2n} - t_{K-3n} < zeno_separation * span` (counted here from the
/// closed form). With `e = 0.5` and `1e-5` of a span of 10: impact 16 for
/// one transition (as when the rule read the gaps between all events),
/// 19 for two and 22 for three (3 and 6 impacts, about 1e-5 s, later than
/// the gaps between all events tripped it at impact 16: each transition
/// needs three short gaps of its own), all before the accumulation at
/// `3 t1 = 1.355`.
#[rstest]
fn a_chattering_cycle_is_zeno(
    #[values(1, 2, 3)] n: usize,
    #[values("dopri5", "kvaerno5")] method: &str,
    #[values(EventRecording::All, EventRecording::None)] record: EventRecording,
) {
    let (e, t_end) = (0.5, 10.0);
    let separation = EventOptions::default().zeno_separation * t_end;
    let expected = (3 * n..)
        .find(|&k| impact(k - 2 * n, e) - impact(k - 3 * n, e) < separation)
        .unwrap();
    assert_eq!(expected, [16, 19, 22][n - 1]);
    let system = ring(n);
    let solver = match method {
        "dopri5" => SolverChoice::dopri5(1e-12),
        _ => SolverChoice::Kvaerno5 {
            rtol: 1e-12,
            atol: 1e-12,
            max_step: None,
        },
    };
    let problem = Problem::new(&system, vec![1.0, 0.0], vec![G, e], t_end)
        .with_solver(solver)
        .with_event_options(EventOptions {
            record,
            ..EventOptions::default()
        });
    let err = simulate(&problem).unwrap_err();
    let HybridError::Zeno {
        reason,
        last_event_time,
        trajectory,
    } = err
    else {
        panic!("expected Zeno, got {err}")
    };
    assert!(
        reason.contains(&format!("transition 'bounce{}'", expected % n)),
        "{reason}"
    );
    assert_eq!(trajectory.stats.events, expected + 1, "{reason}");
    assert!((last_event_time - impact(expected, e)).abs() < 1e-8);
    let accumulation = (2.0 / G).sqrt() * (1.0 + e) / (1.0 - e);
    assert!(last_event_time < accumulation);
    if record == EventRecording::All {
        for (k, event) in trajectory.events.iter().enumerate() {
            assert_eq!(event.transition, k % n);
            assert!((event.time - impact(k, e)).abs() < 1e-8, "impact {k}");
        }
    }
}
