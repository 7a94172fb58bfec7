//! Heap allocations of one full forward Jacobian of `ball2d_flat_a`,
//! counted per thread by a counting global allocator.
//!
//! The target of issue 8 is at most 10 per call. In a kept workspace
//! (`ia_adjoint::jacobian_in`, the previous result given back with
//! `Workspace::recycle`; warmed by two calls) a call makes none: the
//! stepper, the integrator's and the sensitivities' buffers are kept, and
//! the records and matrices are built in the previous result's vectors. A
//! one-shot call of `ia_adjoint::jacobian` runs in the buffers its thread
//! keeps and allocates only its result: 7 allocations (the initial and
//! final states, the segment, event and event-state lists, the final
//! Jacobian and the event-time gradients). It made 87 before the records
//! held indices instead of names and the forward jump stopped forming a
//! dense saltation, 51 before the thread kept its buffers and the
//! event-time gradients became one matrix. The bounds below are those measured
//! counts (`--nocapture` prints them), so each test fails as soon as a
//! change adds an allocation.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    /// Allocations made by this thread: the test harness allocates on its
    /// own threads (starting the other tests) while a test counts, so a
    /// process-wide count is not the call's.
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn count_one() {
    // `try_with`: a thread being torn down has no counter left, and its
    // allocations are no test's.
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_one();
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_one();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations made by this thread while `f` runs (everything measured
/// here runs on the calling thread).
fn allocations_of(f: impl FnOnce()) -> usize {
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}

#[test]
fn forward_jacobian_of_ball2d_in_a_kept_workspace_allocates_nothing() {
    use ia_adjoint::{jacobian, jacobian_in, Method, Workspace};
    use ia_benches::ball2d;
    let system = ball2d::system();
    let problem = ball2d::problem(&system);
    let mut workspace = Workspace::new();
    // Two calls warm it: the first allocates every buffer, the second the
    // one spare list that grows once more (60 and 1 allocations).
    for _ in 0..2 {
        let sens = jacobian_in(&problem, Method::Forward, &mut workspace).unwrap();
        workspace.recycle(sens);
    }
    let mut kept = None;
    let count = allocations_of(|| {
        let sens = jacobian_in(&problem, Method::Forward, &mut workspace).unwrap();
        kept = Some(sens);
    });
    let sens = kept.unwrap();
    // The same numbers as a fresh call.
    assert_eq!(sens, jacobian(&problem, Method::Forward).unwrap());
    assert_eq!(sens.trajectory.events.len(), 3);
    let recycling = allocations_of(|| workspace.recycle(sens));
    eprintln!("allocations per forward Jacobian in a kept workspace: {count}, giving it back: {recycling}");
    assert!(
        count + recycling == 0,
        "{count} + {recycling} allocations per forward Jacobian in a kept workspace, where none were measured"
    );
}

#[test]
fn forward_jacobian_of_ball2d_counts_its_allocations() {
    use ia_adjoint::{jacobian, Method};
    use ia_benches::ball2d;
    let system = ball2d::system();
    let problem = ball2d::problem(&system);
    jacobian(&problem, Method::Forward).unwrap();
    let mut kept = None;
    let count = allocations_of(|| kept = Some(jacobian(&problem, Method::Forward).unwrap()));
    let sens = kept.unwrap();
    assert_eq!(sens.trajectory.events.len(), 3);
    eprintln!("allocations per forward Jacobian: {count}");
    const MEASURED: usize = 7;
    assert!(
        count <= MEASURED,
        "{count} allocations per forward Jacobian, more than the {MEASURED} measured"
    );
}

/// The thermostat over about 1,000 and 10,000 switches, keeping the last
/// ten events, in one kept workspace shared by the primal and the forward
/// Jacobian (so the stepper is resized between them): once warm, neither
/// allocates at all, whatever the number of events (the dropped records'
/// room holds the next ones).
#[test]
fn long_runs_in_a_kept_workspace_allocate_nothing_per_event() {
    use ia_adjoint::{jacobian_in, Method, Workspace};
    use ia_benches::thermostat;
    use ia_events::{simulate_in, EventRecording, SolverChoice};
    let system = thermostat::system();
    let problem = |t_end: f64| {
        thermostat::problem(
            &system,
            t_end,
            EventRecording::Last(10),
            SolverChoice::dopri5(thermostat::TOL),
        )
    };
    let (short, long) = (problem(1640.0), problem(16400.0));
    let mut workspace = Workspace::new();
    let mut counts = Vec::new();
    for run in [&short, &long, &short, &long] {
        let primal = allocations_of(|| {
            let trajectory = simulate_in(run, workspace.integrator()).unwrap();
            assert_eq!(trajectory.events.len(), 10);
            workspace.integrator().recycle(trajectory);
        });
        let forward = allocations_of(|| {
            let sens = jacobian_in(run, Method::Forward, &mut workspace).unwrap();
            assert_eq!(sens.event_time_gradients.nrows(), 10);
            workspace.recycle(sens);
        });
        counts.push((primal, forward));
    }
    eprintln!("allocations (primal, forward) for 1e3, 1e4, 1e3, 1e4 switches: {counts:?}");
    // Warm (after the first run): none, for ten times the events as well.
    assert!(counts[1..].iter().all(|&c| c == (0, 0)), "{counts:?}");
}

/// Three rounds of a batch's second pattern in one kept workspace: `items`
/// taped runs recorded, then their backward passes; each round's
/// allocations counted as (recording, passes).
fn recording_rounds(
    problem: &ia_events::Problem<'_>,
    loss: &dyn ia_adjoint::Loss,
    options: &ia_adjoint::AdjointOptions,
    workspace: &mut ia_adjoint::Workspace,
    items: usize,
) -> Vec<(usize, usize)> {
    use ia_adjoint::{gradient_of_taped, record_in};
    let mut rounds = Vec::new();
    for _ in 0..3 {
        let mut runs = Vec::new();
        let recording = allocations_of(|| {
            for _ in 0..items {
                runs.push(record_in(problem, options, workspace).unwrap());
            }
        });
        let passes = allocations_of(|| {
            for run in runs.drain(..) {
                let grad = gradient_of_taped(problem, run, loss, workspace).unwrap();
                workspace.recycle_gradient(grad);
            }
        });
        rounds.push((recording, passes));
    }
    rounds
}

/// The adjoint gradient of `ball2d_flat_a` in a kept workspace, the
/// result given back (what a batch's worker does with each item,
/// `Batch::map_into`): once warm, none. And a batch's other pattern, the
/// taped runs of several items recorded first and their backward passes
/// made later (`jax.vmap(jax.value_and_grad)`): the tapes come back to the
/// workspace as spares, so the next round records into them and allocates
/// only what the kept runs hold besides (their trajectories' vectors,
/// which stay with the runs until their passes give them back).
#[test]
fn adjoint_gradients_in_a_kept_workspace_reuse_their_tapes() {
    use ia_adjoint::{gradient, gradient_in};
    use ia_adjoint::{AdjointOptions, FinalComponent, Workspace};
    use ia_benches::ball2d;
    let system = ball2d::system();
    let problem = ball2d::problem(&system);
    let (loss, options) = (FinalComponent(0), AdjointOptions::default());
    let mut workspace = Workspace::new();
    for _ in 0..2 {
        let grad = gradient_in(&problem, &loss, &options, &mut workspace).unwrap();
        workspace.recycle_gradient(grad);
    }
    let mut kept = None;
    let count = allocations_of(|| {
        kept = Some(gradient_in(&problem, &loss, &options, &mut workspace).unwrap());
    });
    let grad = kept.unwrap();
    assert_eq!(grad, gradient(&problem, &loss).unwrap());
    let recycling = allocations_of(|| workspace.recycle_gradient(grad));
    eprintln!("allocations per adjoint gradient in a kept workspace: {count}, giving it back: {recycling}");
    // 3 before the backward pass kept its loss seeds' vectors.
    assert_eq!(count + recycling, 0, "none measured");

    // Eight runs recorded, then their eight passes, three rounds: the
    // tapes of a round are the next round's.
    const ITEMS: usize = 8;
    let rounds = recording_rounds(&problem, &loss, &options, &mut workspace, ITEMS);
    eprintln!("allocations (recording {ITEMS} runs, their passes) in three rounds: {rounds:?}");
    // Warm: the second and third rounds equal, the passes allocate
    // nothing, and the recorded runs only their trajectories' vectors
    // (about 3 a run: the one trajectory given back serves one run), 23
    // measured (170 in the first round, every tape new; before the
    // workspace kept spare tapes every round was the first).
    const MEASURED: usize = 23;
    assert_eq!(rounds[1], rounds[2], "{rounds:?}");
    assert!(rounds[1].0 <= MEASURED && rounds[1].1 == 0, "{rounds:?}");
}

/// The lazy backward pass of the exact solver (`cuba-lif` 5-30-3 with
/// Yin-Yang inputs, its taped run lazy: each neuron at its own time) in a
/// kept workspace, four taped runs and their passes a round: after a
/// warming round the rounds equal each other, and the passes allocate 5
/// times each, as measured (the lazy pass's per-entry times, states,
/// parameter sums and the three flow products' vectors are the
/// workspace's; before they were, each pass made eight more vectors of
/// about `n`). The taped runs are counted and printed, not bounded (the
/// exact run builds its structure per run).
#[test]
fn lazy_adjoint_passes_in_a_kept_workspace_keep_their_vectors() {
    use ia_adjoint::{AdjointOptions, Workspace};
    use ia_benches::yinyang_net::YinYangNet;
    const ITEMS: usize = 4;
    const MEASURED_PER_PASS: usize = 5;
    let net = YinYangNet::new(30, (0.31, 0.64));
    let problem = net.problem();
    let loss = |t: &ia_core::Trajectory, s: &mut ia_adjoint::LossSeeds| net.loss(t, s);
    let options = AdjointOptions::default();
    let mut workspace = Workspace::new();
    let rounds = recording_rounds(&problem, &loss, &options, &mut workspace, ITEMS);
    eprintln!(
        "allocations (recording {ITEMS} lazy runs, their passes) in three rounds: {rounds:?}"
    );
    assert_eq!(rounds[1], rounds[2], "{rounds:?}");
    assert!(rounds[1].1 <= ITEMS * MEASURED_PER_PASS, "{rounds:?}");
}
