//! Where a batched JAX gradient's time goes, item by item: the library's
//! one-shot gradient in a kept workspace (the floor), against the
//! handlers' batch calls (`jax.vmap(jax.grad)`: one backward call;
//! `jax.vmap(jax.value_and_grad)`: a taped forward call and a backward
//! call), on the 1,000 parameter sets of `benches/jax/bench_jax.py`.
//!
//! A probe, not a test: it prints process CPU time per item and asserts
//! only that the batch's gradients are the single calls' (bit for bit).
//! Run it in release, alone:
//!
//! ```text
//! cd crates/ia-py && cargo test --release --lib -- --ignored --nocapture batch_gradient_probe
//! ```
//!
//! Under `valgrind --tool=callgrind` its instruction counts (which the
//! machine's load does not move) split the same calls by function. The
//! environment steers it: `PROBE_SECONDS` (the time of each phase, 2 s),
//! `PROBE_CALLS=k` (exactly `k` calls of each phase instead, after one
//! more), `PROBE_SKIP=primal,floor,grad,value_and_grad` (phases left
//! out) and `PROBE_DERIVATIVE_PROBES=k` (the taped runs' derivative
//! probes). The instructions of one phase per item are then the
//! difference of two callgrind totals, with `PROBE_CALLS=3` and `=1`,
//! divided by 2,000 (docs/performance.md, section "Python and JAX").

use super::*;
use std::time::Instant;

/// `ball2d_flat_a` as `bench_jax.py` runs it: DOPRI5 at 1e-10, `t_end` 2,
/// no event time output.
pub(super) fn ball_core() -> SolverCore {
    let model: Arc<dyn ia_models::Model> = ia_models::by_name("ball2d-flat").unwrap().into();
    let mut scenario = Scenario::new(model, 2.0).unwrap();
    scenario
        .set_solver(ia_events::SolverChoice::dopri5(1e-10))
        .unwrap();
    scenario.solver = ia_scenario::adjoint_solver(&scenario.solver);
    // `PROBE_DERIVATIVE_PROBES=0`: the taped runs without the derivative
    // probe (what the probe costs).
    if let Some(k) = std::env::var("PROBE_DERIVATIVE_PROBES")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        scenario.set_derivative_probes(k).unwrap();
    }
    let times = TimeOutputs::new(0, &[], &scenario.system).unwrap();
    SolverCore::new(scenario, times)
}

/// `batch` rows of `(x0, params)`: `(0, 1, 1, 0)` and `(9.81, 0.8, 0.7)`,
/// the parameters scaled by factors spread over 0.98 to 1.02 (a fixed
/// permutation of the items).
pub(super) fn rows(batch: usize) -> (Vec<f64>, Vec<f64>) {
    let x0s = [0.0, 1.0, 1.0, 0.0].repeat(batch);
    let params = (0..batch)
        .flat_map(|b| {
            let spread = move |k: usize| ((b * 7919 + k * 104_729) % 1000) as f64 / 500.0 - 1.0;
            [9.81, 0.8, 0.7]
                .into_iter()
                .enumerate()
                .map(move |(k, p)| p * (1.0 + 0.02 * spread(k)))
        })
        .collect();
    (x0s, params)
}

/// This process's CPU time (every thread's), in seconds, from
/// `/proc/self/stat` (clock ticks of 1/100 s).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // Fields 14 and 15 of the file (utime, stime) are 12 and 13 after ')'.
    (ticks(11) + ticks(12)) / 100.0
}

/// `f` repeated for about `seconds` (or exactly `PROBE_CALLS` times, for
/// instruction counts): (wall, CPU) seconds per call.
/// Phases left out (`PROBE_SKIP`, a list of their names: primal, floor,
/// grad, value_and_grad) take no time: so that a callgrind run counts the
/// instructions of one phase.
fn timed(name: &str, seconds: f64, mut f: impl FnMut()) -> (f64, f64) {
    if std::env::var("PROBE_SKIP").is_ok_and(|skip| skip.split(',').any(|s| s == name)) {
        return (f64::NAN, f64::NAN);
    }
    let fixed: Option<u32> = std::env::var("PROBE_CALLS")
        .ok()
        .and_then(|s| s.parse().ok());
    f();
    let (wall, cpu) = (Instant::now(), cpu_seconds());
    let mut calls = 0;
    while fixed.map_or(wall.elapsed().as_secs_f64() < seconds, |k| calls < k) {
        f();
        calls += 1;
    }
    let c = f64::from(calls);
    (wall.elapsed().as_secs_f64() / c, (cpu_seconds() - cpu) / c)
}

#[test]
#[ignore = "a timing probe (prints CPU time per item); run alone, in release"]
fn batch_gradient_probe() {
    const BATCH: usize = 1000;
    let seconds: f64 = std::env::var("PROBE_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2.0);
    let core = ball_core();
    let Sizes { n, n_params, .. } = core.sizes();
    let (x0s, params) = rows(BATCH);
    let seed: Vec<f64> = (0..BATCH).flat_map(|_| [1.0, 0.0, 0.0, 0.0]).collect();
    let input = CotangentsIn {
        x0s: &x0s,
        params: &params,
        final_state: &seed,
        event_times: &[],
        observed: &[],
        t_ends: None,
    };
    let (mut gx, mut gp) = (vec![0.0; BATCH * n], vec![0.0; BATCH * n_params]);
    // The floor: the library's gradient of each item in one kept workspace.
    let inputs = Rows::new(core.sizes(), BATCH, &x0s, &params, None).unwrap();
    let problems: Vec<Problem<'_>> = (0..BATCH)
        .map(|b| core.problem_at(&inputs, b, false).unwrap())
        .collect();
    let loss = ia_adjoint::FinalComponent(0);
    let options = ia_adjoint::AdjointOptions::default();
    let mut workspace = ia_adjoint::Workspace::new();
    let mut floor = |gp: &mut [f64]| {
        for (b, problem) in problems.iter().enumerate() {
            let grad = ia_adjoint::gradient_in(problem, &loss, &options, &mut workspace).unwrap();
            gp[b * n_params..(b + 1) * n_params].copy_from_slice(&grad.params);
            workspace.recycle_gradient(grad);
        }
    };
    let mut reference = vec![0.0; BATCH * n_params];
    floor(&mut reference);
    let mut run_workspace = ia_events::Workspace::default();
    let primal = timed("primal", seconds, || {
        for problem in problems.iter() {
            let run = ia_events::simulate_in(problem, &mut run_workspace).unwrap();
            std::hint::black_box(run.final_state[0]);
            run_workspace.recycle(run);
        }
    });
    let one_shot = timed("floor", seconds, || floor(&mut gp));
    let grad_only = timed("grad", seconds, || {
        core.cotangent_gradient(BATCH, &input, &mut gx, &mut gp)
            .unwrap()
    });
    gp.fill(0.0);
    core.cotangent_gradient(BATCH, &input, &mut gx, &mut gp)
        .unwrap();
    assert_eq!(
        gp, reference,
        "vmap(grad): the batch's gradients are the single calls'"
    );
    let (mut fin, mut counts) = (vec![0.0; BATCH * n], vec![0_i64; BATCH]);
    let value_and_grad = timed("value_and_grad", seconds, || {
        let out = OutputsOut {
            final_state: &mut fin,
            event_times: &mut [],
            counts: &mut counts,
            observed: &mut [],
            final_rate: None,
        };
        core.outputs(&x0s, &params, None, out, true).unwrap();
        core.cotangent_gradient(BATCH, &input, &mut gx, &mut gp)
            .unwrap();
    });
    gp.fill(0.0);
    let out = OutputsOut {
        final_state: &mut fin,
        event_times: &mut [],
        counts: &mut counts,
        observed: &mut [],
        final_rate: None,
    };
    core.outputs(&x0s, &params, None, out, true).unwrap();
    core.cotangent_gradient(BATCH, &input, &mut gx, &mut gp)
        .unwrap();
    assert_eq!(gp, reference, "vmap(value_and_grad): the same gradients");
    let per = |(wall, cpu): (f64, f64)| {
        format!(
            "wall {:6.2} us, CPU {:6.2} us",
            wall / BATCH as f64 * 1e6,
            cpu / BATCH as f64 * 1e6
        )
    };
    eprintln!(
        "per item of {BATCH} (pool of {} workers):",
        pool().unwrap().threads()
    );
    eprintln!(
        "  primal run in a kept workspace (one thread)          {}",
        per(primal)
    );
    eprintln!(
        "  gradient_in in a kept workspace (one thread)         {}",
        per(one_shot)
    );
    eprintln!(
        "  cotangent_gradient, no kept tapes (vmap(grad))       {}",
        per(grad_only)
    );
    eprintln!(
        "  outputs(taped) + cotangent_gradient (value_and_grad) {}",
        per(value_and_grad)
    );
    eprintln!("  statistics: {:?}", core.counted());
}

#[test]
#[ignore = "prints sizes"]
fn sizes_probe() {
    eprintln!(
        "Problem {} ScenarioError {} Result {} Cotangents {} PointRun {}",
        std::mem::size_of::<Problem<'_>>(),
        std::mem::size_of::<ScenarioError>(),
        std::mem::size_of::<Result<(), ScenarioError>>(),
        std::mem::size_of::<Cotangents<'_>>(),
        std::mem::size_of::<PointRun>()
    );
}

/// The single jitted call's Rust side (`jax.value_and_grad` of one point:
/// a taped forward call, then a backward call, each of one item), against
/// the library's gradient of that item in a kept workspace: what the
/// handlers add around the library for one item. Run as
/// `batch_gradient_probe`, with the phases `single_floor`, `single_grad`
/// (the backward call alone, no kept tape: a jitted `jax.grad`) and
/// `single_value_and_grad` (`PROBE_SKIP` leaves phases out, `PROBE_CALLS`
/// fixes the calls for callgrind):
///
/// ```text
/// cd crates/ia-py && cargo test --release --lib -- --ignored --nocapture single_gradient_probe
/// ```
#[test]
#[ignore = "a timing probe (prints CPU time per call); run alone, in release"]
fn single_gradient_probe() {
    let seconds: f64 = std::env::var("PROBE_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2.0);
    let core = ball_core();
    let Sizes { n, n_params, .. } = core.sizes();
    let (x0s, params) = rows(1);
    let seed = [1.0, 0.0, 0.0, 0.0];
    let input = CotangentsIn {
        x0s: &x0s,
        params: &params,
        final_state: &seed,
        event_times: &[],
        observed: &[],
        t_ends: None,
    };
    let (mut gx, mut gp) = (vec![0.0; n], vec![0.0; n_params]);
    let inputs = Rows::new(core.sizes(), 1, &x0s, &params, None).unwrap();
    let problems = [core.problem_at(&inputs, 0, false).unwrap()];
    let loss = ia_adjoint::FinalComponent(0);
    let options = ia_adjoint::AdjointOptions::default();
    let mut workspace = ia_adjoint::Workspace::new();
    let floor = timed("single_floor", seconds, || {
        let grad = ia_adjoint::gradient_in(&problems[0], &loss, &options, &mut workspace).unwrap();
        std::hint::black_box(grad.params[0]);
        workspace.recycle_gradient(grad);
    });
    let grad_only = timed("single_grad", seconds, || {
        core.cotangent_gradient(1, &input, &mut gx, &mut gp)
            .unwrap()
    });
    let (mut fin, mut counts) = (vec![0.0; n], vec![0_i64; 1]);
    let mut value_and_grad = || {
        let out = OutputsOut {
            final_state: &mut fin,
            event_times: &mut [],
            counts: &mut counts,
            observed: &mut [],
            final_rate: None,
        };
        core.outputs(&x0s, &params, None, out, true).unwrap();
        core.cotangent_gradient(1, &input, &mut gx, &mut gp)
            .unwrap();
    };
    let both = timed("single_value_and_grad", seconds, &mut value_and_grad);
    value_and_grad();
    let floor_grad =
        ia_adjoint::gradient_in(&problems[0], &loss, &options, &mut workspace).unwrap();
    assert_eq!(
        gp, floor_grad.params,
        "the handlers' gradient is the library's"
    );
    let per =
        |(wall, cpu): (f64, f64)| format!("wall {:6.2} us, CPU {:6.2} us", wall * 1e6, cpu * 1e6);
    eprintln!("one item:");
    eprintln!(
        "  gradient_in in a kept workspace                {}",
        per(floor)
    );
    eprintln!(
        "  cotangent_gradient, no kept tape (jax.grad)    {}",
        per(grad_only)
    );
    eprintln!(
        "  outputs(taped) + cotangent_gradient (v_and_g)  {}",
        per(both)
    );
    eprintln!("  statistics: {:?}", core.counted());
}
