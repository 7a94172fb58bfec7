//! Ensembles: many independent runs in parallel.
//!
//! [`simulate_batch`], [`jacobian_batch`], [`gradient_batch`] and
//! [`gradient_batch_each`] run the single-run functions ([`ia_events::simulate`],
//! [`jacobian`](crate::jacobian), [`gradient`](crate::gradient)) over a slice of problems on a [`Batch`]'s
//! worker threads (a local rayon thread pool, never the global one). The
//! results come back in input order, one per problem: a failed problem gives
//! its own error and the others run on. Each worker runs its items in its
//! own [`Workspace`] (the `*_in` form of the single call), kept by the
//! [`Batch`] from one call to the next, so a batch result equals the single
//! call to the last bit and a repeated batch (a fit, a training loop)
//! allocates only its results.
//!
//! ```
//! use ia_adjoint::batch::Batch;
//! use ia_adjoint::prelude::*;
//!
//! let model = ia_models::by_name("ball1d").unwrap();
//! let system = model.system();
//! let problems: Vec<Problem> = [0.7, 0.8, 0.9]
//!     .iter()
//!     .map(|&e| Problem::new(&system, vec![1.0, 0.0], vec![9.81, e, 0.0], 1.0))
//!     .collect();
//! let batch = Batch::with_threads(2).unwrap();
//! let grads = batch.gradient(&problems, &FinalComponent(0));
//! for (problem, grad) in problems.iter().zip(&grads) {
//!     let single = gradient(problem, &FinalComponent(0)).unwrap();
//!     assert_eq!(grad.as_ref().unwrap().concatenated(), single.concatenated());
//! }
//! ```

use crate::gradient::gradient_in;
use crate::jacobian::jacobian_in;
use crate::loss::Loss;
use crate::results::{Gradient, Method, Sensitivities};
use crate::tape::AdjointOptions;
use crate::workspace::Workspace;
use ia_core::{HybridError, Trajectory};
use ia_events::Problem;
use rayon::prelude::*;
use std::sync::{Mutex, TryLockError};

/// A pool of worker threads for batch runs, each with a [`Workspace`]
/// kept from one call to the next.
pub struct Batch {
    pool: rayon::ThreadPool,
    /// One workspace per worker (by rayon's thread index), kept between
    /// calls: a call's items reuse the buffers of the previous call's,
    /// with the numbers of fresh ones (`Workspace`'s contract). The tape's
    /// and the replay's buffers past `KEPT_RUN_BYTES` are dropped at the
    /// end of each call, as a thread's one-shot calls do.
    workspaces: Vec<Mutex<Workspace>>,
}

impl std::fmt::Debug for Batch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batch")
            .field("threads", &self.threads())
            .finish_non_exhaustive()
    }
}

/// The most items of a batch one worker takes at a time
/// ([`Batch::map`], [`Batch::map_in`]). An item is a whole run (microseconds at least), so
/// handing them out by fours costs nothing measurable.
pub const ITEMS_PER_JOB: usize = 4;

/// The most worker threads a [`Batch`] starts. The runs are CPU-bound, so
/// workers beyond the cores only share them; tens of thousands exhausted
/// memory while the threads started (a panic inside a starting thread,
/// and the pool waited for it forever).
pub const MAX_THREADS: usize = 256;

impl Batch {
    /// A pool of `threads` workers (`0` means one per core, as rayon counts
    /// them), at most [`MAX_THREADS`].
    ///
    /// ```
    /// let batch = ia_adjoint::Batch::with_threads(2).unwrap();
    /// assert_eq!(batch.threads(), 2);
    /// let err = ia_adjoint::Batch::with_threads(100_000).unwrap_err();
    /// assert!(err.to_string().contains("at most 256"), "{err}");
    /// ```
    pub fn with_threads(threads: usize) -> Result<Self, HybridError> {
        if threads > MAX_THREADS {
            return Err(HybridError::invalid_num(
                "number of worker threads",
                threads as f64,
                format!("must be at most {MAX_THREADS} (0 means one per core)"),
            ));
        }
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("ia-batch-{i}"))
            .build()
            .map(|pool| Batch {
                workspaces: (0..pool.current_num_threads())
                    .map(|_| Mutex::new(Workspace::new()))
                    .collect(),
                pool,
            })
            .map_err(|e| {
                HybridError::Unsupported(format!("cannot start {threads} worker threads: {e}"))
            })
    }

    /// The number of worker threads.
    pub fn threads(&self) -> usize {
        self.pool.current_num_threads()
    }

    /// `run` over every item, in parallel, results in input order; the
    /// items are handed out at most [`ITEMS_PER_JOB`] at a time.
    pub fn map<T: Sync, R: Send>(
        &self,
        items: &[T],
        run: impl Fn(&T) -> R + Sync + Send,
    ) -> Vec<R> {
        self.pool.install(|| {
            items
                .par_iter()
                .with_max_len(ITEMS_PER_JOB)
                .map(run)
                .collect()
        })
    }

    /// `run` over every item in the [`Workspace`] of the worker that
    /// takes it, in parallel, results in input order.
    ///
    /// Each worker runs its items in its own workspace, kept by the batch
    /// from one call to the next, and the items are handed out at most
    /// [`ITEMS_PER_JOB`] at a time: a worker that the operating system
    /// stops for a while holds back only those, the others take the rest.
    pub fn map_in<T: Sync, R: Send>(
        &self,
        items: &[T],
        run: impl Fn(&T, &mut Workspace) -> R + Sync + Send,
    ) -> Vec<R> {
        let results = self.pool.install(|| {
            items
                .par_iter()
                .with_max_len(ITEMS_PER_JOB)
                .map(|item| self.in_worker_workspace(|workspace| run(item, workspace)))
                .collect()
        });
        self.trim_workspaces();
        results
    }

    /// [`Batch::map_in`] with a place for each item's output: `run` gets
    /// `outs[i]` with `items[i]` (the slices have the same length; the
    /// extra entries of the longer are left out). The worker writes its
    /// output in place and can give the vectors of what it computed back
    /// to its workspace ([`Workspace::recycle_gradient`]), so that the
    /// next item reuses them instead of allocating its own.
    pub fn map_into<T: Sync, O: Send, R: Send>(
        &self,
        items: &[T],
        outs: &mut [O],
        run: impl Fn(&T, &mut O, &mut Workspace) -> R + Sync + Send,
    ) -> Vec<R> {
        let results = self.pool.install(|| {
            items
                .par_iter()
                .zip(outs.par_iter_mut())
                .with_max_len(ITEMS_PER_JOB)
                .map(|(item, out)| self.in_worker_workspace(|workspace| run(item, out, workspace)))
                .collect()
        });
        self.trim_workspaces();
        results
    }

    /// `f` in the calling worker's kept workspace.
    fn in_worker_workspace<R>(&self, f: impl FnOnce(&mut Workspace) -> R) -> R {
        let worker = rayon::current_thread_index().unwrap_or(0);
        // Only this worker takes its workspace. It is held already when a
        // run itself waits on parallel work and the worker takes another
        // item meanwhile: that item gets a fresh one. A run that panicked
        // left nothing the next one reads before overwriting it.
        match self.workspaces[worker % self.workspaces.len()].try_lock() {
            Ok(mut workspace) => f(&mut workspace),
            Err(TryLockError::Poisoned(held)) => f(&mut held.into_inner()),
            Err(TryLockError::WouldBlock) => f(&mut Workspace::new()),
        }
    }

    /// Drops the kept workspaces' run buffers past `KEPT_RUN_BYTES` (a
    /// long run's tape), as a thread's one-shot calls do: a batch kept
    /// for the next call holds at most a small run's buffers of that kind.
    /// A workspace in use (another call of this batch, from another
    /// thread, still running) is left as it is.
    fn trim_workspaces(&self) {
        for kept in &self.workspaces {
            match kept.try_lock() {
                Ok(mut workspace) => workspace.trim_run_buffers(),
                Err(TryLockError::Poisoned(held)) => held.into_inner().trim_run_buffers(),
                Err(TryLockError::WouldBlock) => {}
            }
        }
    }

    /// [`ia_events::simulate`] of every problem.
    pub fn simulate(&self, problems: &[Problem<'_>]) -> Vec<Result<Trajectory, HybridError>> {
        self.map_in(problems, |p, w| ia_events::simulate_in(p, &mut w.run))
    }

    /// [`jacobian`](crate::jacobian) of every problem by `method`.
    pub fn jacobian(
        &self,
        problems: &[Problem<'_>],
        method: Method,
    ) -> Vec<Result<Sensitivities, HybridError>> {
        self.map_in(problems, |p, w| jacobian_in(p, method, w))
    }

    /// [`gradient`](crate::gradient) of the same `loss` for every problem.
    pub fn gradient(
        &self,
        problems: &[Problem<'_>],
        loss: &(dyn Loss + Sync),
    ) -> Vec<Result<Gradient, HybridError>> {
        let options = AdjointOptions::default();
        self.map_in(problems, |p, w| gradient_in(p, loss, &options, w))
    }

    /// [`gradient`](crate::gradient) of its own loss for every problem (a fit to each
    /// problem's own data, say): `losses[i]` goes with `problems[i]`; a
    /// problem without a loss (the slices differ in length) is a
    /// `dimension_mismatch` error of that item.
    pub fn gradient_each<L: Loss + Sync>(
        &self,
        problems: &[Problem<'_>],
        losses: &[L],
    ) -> Vec<Result<Gradient, HybridError>> {
        let indices: Vec<usize> = (0..problems.len()).collect();
        let options = AdjointOptions::default();
        self.map_in(&indices, |&i, w| match losses.get(i) {
            Some(loss) => gradient_in(&problems[i], loss, &options, w),
            None => Err(HybridError::DimensionMismatch {
                what: "losses for the batch's problems".into(),
                expected: problems.len(),
                found: losses.len(),
            }),
        })
    }
}

/// A pool of one worker per core; the default pool of the free functions.
fn default_batch() -> Result<Batch, HybridError> {
    Batch::with_threads(0)
}

fn on_default<R>(
    n: usize,
    run: impl FnOnce(&Batch) -> Vec<Result<R, HybridError>>,
) -> Vec<Result<R, HybridError>> {
    match default_batch() {
        Ok(batch) => run(&batch),
        Err(e) => (0..n)
            .map(|_| Err(HybridError::Unsupported(e.to_string())))
            .collect(),
    }
}

/// [`Batch::simulate`] on one worker per core.
pub fn simulate_batch(problems: &[Problem<'_>]) -> Vec<Result<Trajectory, HybridError>> {
    on_default(problems.len(), |b| b.simulate(problems))
}

/// [`Batch::jacobian`] on one worker per core.
pub fn jacobian_batch(
    problems: &[Problem<'_>],
    method: Method,
) -> Vec<Result<Sensitivities, HybridError>> {
    on_default(problems.len(), |b| b.jacobian(problems, method))
}

/// [`Batch::gradient`] on one worker per core.
pub fn gradient_batch(
    problems: &[Problem<'_>],
    loss: &(dyn Loss + Sync),
) -> Vec<Result<Gradient, HybridError>> {
    on_default(problems.len(), |b| b.gradient(problems, loss))
}

/// [`Batch::gradient_each`] on one worker per core.
pub fn gradient_batch_each<L: Loss + Sync>(
    problems: &[Problem<'_>],
    losses: &[L],
) -> Vec<Result<Gradient, HybridError>> {
    on_default(problems.len(), |b| b.gradient_each(problems, losses))
}

#[cfg(test)]
mod tests {
    //! References: the single calls themselves, which each batch item must
    //! equal bit for bit; and an item made to fail (a tolerance outside
    //! `[1e-15, 1)`) whose error must be the single call's.
    use super::*;
    use crate::fixtures::{ball, problem};
    use crate::gradient::gradient;
    use crate::jacobian::jacobian;
    use crate::loss::{FinalComponent, LossSeeds};
    use ia_events::SolverChoice;

    /// Eight runs of the ball with different restitutions and heights; the
    /// item at `bad` has an invalid tolerance.
    fn problems(system: &ia_core::HybridSystem, bad: Option<usize>) -> Vec<Problem<'_>> {
        (0..8)
            .map(|i| {
                let mut p = problem(system);
                p.params[1] = 0.5 + 0.05 * i as f64;
                p.initial_state[0] = 1.0 + 0.1 * i as f64;
                if Some(i) == bad {
                    p = p.with_solver(SolverChoice::dopri5(2.0));
                }
                p
            })
            .collect()
    }

    #[test]
    fn batch_results_equal_single_calls_bit_for_bit() {
        let system = ball();
        let problems = problems(&system, None);
        let batch = Batch::with_threads(2).unwrap();
        assert_eq!(batch.threads(), 2);
        for (p, r) in problems.iter().zip(batch.simulate(&problems)) {
            assert_eq!(r.unwrap(), ia_events::simulate(p).unwrap());
        }
        for method in [Method::Forward, Method::Adjoint] {
            for (p, r) in problems.iter().zip(batch.jacobian(&problems, method)) {
                assert_eq!(r.unwrap(), jacobian(p, method).unwrap());
            }
        }
        for (p, r) in problems
            .iter()
            .zip(batch.gradient(&problems, &FinalComponent(1)))
        {
            assert_eq!(r.unwrap(), gradient(p, &FinalComponent(1)).unwrap());
        }
        let losses: Vec<FinalComponent> = (0..8).map(|i| FinalComponent(i % 2)).collect();
        let each = gradient_batch_each(&problems, &losses);
        for ((p, l), r) in problems.iter().zip(&losses).zip(each) {
            assert_eq!(r.unwrap(), gradient(p, l).unwrap());
        }
    }

    fn unit<T>(v: Vec<Result<T, HybridError>>) -> Vec<Result<(), HybridError>> {
        v.into_iter().map(|r| r.map(|_| ())).collect()
    }

    #[test]
    fn a_failed_item_has_its_own_error_and_the_others_succeed() {
        let system = ball();
        let problems = problems(&system, Some(3));
        let check = |kinds: Vec<Result<(), HybridError>>| {
            for (i, r) in kinds.into_iter().enumerate() {
                match (i, r) {
                    (3, Err(e)) => {
                        assert_eq!(e.kind(), "invalid_option");
                        assert!(e.to_string().contains("rtol"), "{e}");
                    }
                    (3, Ok(())) => panic!("item 3 must fail"),
                    (_, r) => r.unwrap(),
                }
            }
        };
        check(unit(simulate_batch(&problems)));
        check(unit(jacobian_batch(&problems, Method::Adjoint)));
        let last_time = |tr: &Trajectory, _: &mut LossSeeds| tr.final_time;
        check(unit(gradient_batch(&problems, &last_time)));
    }

    #[test]
    fn too_few_losses_is_an_error_per_item() {
        let system = ball();
        let problems = problems(&system, None);
        let r = gradient_batch_each(&problems, &[FinalComponent(0)]);
        assert!(r[0].is_ok());
        assert_eq!(r[1].as_ref().unwrap_err().kind(), "dimension_mismatch");
    }

    /// A run that lets its worker take other items meanwhile (here by
    /// `rayon::yield_now`, as a run waiting on parallel work in the same
    /// pool does), while it holds its workspace: every item still equals
    /// the single call, and nothing waits forever.
    #[test]
    fn a_run_that_waits_on_parallel_work_still_gets_a_workspace() {
        fn problems_of(system: &ia_core::HybridSystem) -> Vec<Problem<'_>> {
            (0..64)
                .map(|i| {
                    let mut p = problem(system);
                    p.params[1] = 0.5 + 0.005 * i as f64;
                    p
                })
                .collect()
        }
        let system = ball();
        let problems = problems_of(&system);
        let (sender, receiver) = std::sync::mpsc::channel();
        // A thread of its own, so that a worker waiting on itself fails the
        // test instead of hanging it.
        std::thread::spawn(move || {
            let system = ball();
            let problems = problems_of(&system);
            let batch = Batch::with_threads(2).unwrap();
            let nested = batch.map_in(&problems, |p, w| {
                // Runs other pending items on this worker, if any, right now.
                rayon::yield_now();
                ia_events::simulate_in(p, &mut w.run).unwrap()
            });
            let _ = sender.send(nested);
        });
        let nested = receiver
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the batch finished: no worker waited on its own workspace");
        for (p, r) in problems.iter().zip(nested) {
            assert_eq!(r, ia_events::simulate(p).unwrap());
        }
    }

    /// The workspaces a batch keeps between calls carry nothing from one
    /// item to the next: items of no event up to several, a third of them
    /// with an observation, in one batch, then again in reverse order
    /// (each worker's buffers now sized by other runs), then through
    /// [`Batch::map_into`] with each result given back to the worker's
    /// workspace, equal the single calls bit for bit (the reference: each
    /// problem's own `gradient`, in a fresh thread-kept workspace).
    #[test]
    fn kept_workspaces_leak_nothing_between_items_or_calls() {
        let system = ball();
        let problems: Vec<Problem<'_>> = (0..24)
            .map(|i| {
                let mut p = problem(&system);
                p.t_end = 0.1 + 0.15 * i as f64;
                p.params[1] = 0.6 + 0.01 * i as f64;
                if i % 3 == 0 {
                    let half = 0.5 * p.t_end;
                    p = p.with_observations(vec![half]);
                }
                p
            })
            .collect();
        let single: Vec<Gradient> = problems
            .iter()
            .map(|p| gradient(p, &FinalComponent(0)).unwrap())
            .collect();
        let events: std::collections::BTreeSet<usize> =
            single.iter().map(|g| g.trajectory.events.len()).collect();
        assert!(events.len() >= 4 && events.contains(&0), "{events:?}");
        let batch = Batch::with_threads(2).unwrap();
        for (g, r) in single
            .iter()
            .zip(batch.gradient(&problems, &FinalComponent(0)))
        {
            assert_eq!(&r.unwrap(), g);
        }
        let reversed: Vec<Problem<'_>> = problems.iter().rev().cloned().collect();
        let again = batch.gradient(&reversed, &FinalComponent(0));
        for (g, r) in single.iter().rev().zip(again) {
            assert_eq!(&r.unwrap(), g);
        }
        let mut outs = vec![[0.0; 4]; problems.len()];
        let options = AdjointOptions::default();
        let values = batch.map_into(&problems, &mut outs, |p, out, w| {
            let grad = gradient_in(p, &FinalComponent(0), &options, w).unwrap();
            out.copy_from_slice(&grad.concatenated());
            let value = grad.value;
            w.recycle_gradient(grad);
            value
        });
        for ((g, out), value) in single.iter().zip(&outs).zip(values) {
            assert_eq!(&out[..], &g.concatenated()[..]);
            assert_eq!(value, g.value);
        }
    }

    #[test]
    fn problems_cross_threads() {
        fn sync<T: Sync + Send>() {}
        sync::<Problem<'_>>();
    }
}
