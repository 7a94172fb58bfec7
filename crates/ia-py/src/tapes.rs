//! The taped runs of a solver's differentiated forward calls, kept for
//! their backward passes: `jax.value_and_grad` runs the model once (the
//! forward call records its tape, the backward pass reads it) instead of
//! a plain run and then a taped one.
//!
//! A run is found by its inputs (the bits of its initial state,
//! parameters and final time), so a backward pass uses a tape only if it was recorded
//! from exactly its inputs, and otherwise records a new one: the store is
//! a cache, never a source of different numbers. It holds the runs of
//! about the last two forward calls (at least [`MIN_KEPT`]), so that
//! forward calls never followed by a backward pass (`jax.jvp`, a
//! discarded `jax.linearize`) cannot pile up tapes.

use ia_adjoint::{Problem, TapedRun};
use std::collections::{HashMap, VecDeque};

/// The fewest runs kept whatever the batch sizes.
pub(crate) const MIN_KEPT: usize = 16;

/// The inputs of a run (its initial state, parameters and final time),
/// bit for bit: the key of its tape.
pub(crate) fn key(problem: &Problem<'_>) -> Vec<u64> {
    let (x0, params) = (&problem.initial_state, &problem.params);
    x0.iter()
        .chain(params)
        .chain([&problem.t_end])
        .map(|v| v.to_bits())
        .collect()
}

/// Taped runs by their inputs, oldest evicted first.
#[derive(Default)]
pub(crate) struct TapeStore {
    runs: HashMap<Vec<u64>, VecDeque<TapedRun>>,
    /// The keys in the order their runs were stored (one entry per run).
    order: VecDeque<Vec<u64>>,
}

impl TapeStore {
    /// Keeps the runs of one forward call (`(key, run)` each), evicting
    /// the oldest runs past twice this call's size (at least
    /// [`MIN_KEPT`]).
    pub(crate) fn keep(&mut self, runs: Vec<(Vec<u64>, TapedRun)>) {
        let limit = (2 * runs.len()).max(MIN_KEPT);
        for (key, run) in runs {
            self.order.push_back(key.clone());
            self.runs.entry(key).or_default().push_back(run);
        }
        while self.order.len() > limit {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            if let Some(list) = self.runs.get_mut(&oldest) {
                list.pop_front();
                if list.is_empty() {
                    self.runs.remove(&oldest);
                }
            }
        }
    }

    /// The run recorded from `key`'s inputs, taken out of the store.
    pub(crate) fn take(&mut self, key: &[u64]) -> Option<TapedRun> {
        let list = self.runs.get_mut(key)?;
        let run = list.pop_back();
        if list.is_empty() {
            self.runs.remove(key);
        }
        if run.is_some() {
            if let Some(at) = self.order.iter().rposition(|k| k.as_slice() == key) {
                self.order.remove(at);
            }
        }
        run
    }

    /// How many runs are kept.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.order.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ia_adjoint::{record_in, AdjointOptions, Workspace};

    fn taped(vy: f64) -> TapedRun {
        let model = ia_models::by_name("ball2d-flat").unwrap();
        let system = model.system();
        let problem = Problem::new(&system, vec![0.0, 1.0, 1.0, vy], vec![9.81, 0.8, 0.7], 0.5);
        record_in(&problem, &AdjointOptions::default(), &mut Workspace::new()).unwrap()
    }

    #[test]
    fn finds_a_run_by_its_inputs_once_and_evicts_the_oldest() {
        let mut store = TapeStore::default();
        let model = ia_models::by_name("ball2d-flat").unwrap();
        let system = model.system();
        let k = |vy: f64| {
            key(&Problem::new(
                &system,
                vec![0.0, 1.0, 1.0, vy],
                vec![9.81, 0.8, 0.7],
                0.5,
            ))
        };
        store.keep(vec![(k(0.0), taped(0.0))]);
        assert!(store.take(&k(0.1)).is_none(), "other inputs: no tape");
        let mut later = Problem::new(&system, vec![0.0, 1.0, 1.0, 0.0], vec![9.81, 0.8, 0.7], 0.5);
        later.t_end = 0.6;
        assert!(
            store.take(&key(&later)).is_none(),
            "another final time: no tape"
        );
        assert!(store.take(&k(0.0)).is_some());
        assert!(store.take(&k(0.0)).is_none(), "a tape is used once");
        // A forward call of MIN_KEPT + 1 runs keeps them all (twice the
        // call's size); the next small calls evict the oldest first.
        let many: Vec<_> = (0..=MIN_KEPT).map(|i| (k(i as f64), taped(0.0))).collect();
        store.keep(many);
        assert_eq!(store.len(), MIN_KEPT + 1);
        store.keep(vec![(k(-1.0), taped(0.0))]);
        assert_eq!(store.len(), MIN_KEPT);
        assert!(store.take(&k(0.0)).is_none() && store.take(&k(1.0)).is_none());
        assert!(store.take(&k(2.0)).is_some() && store.take(&k(-1.0)).is_some());
    }
}
