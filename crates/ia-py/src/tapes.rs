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
//!
//! It also remembers the inputs of about as many runs whose tapes are gone
//! (used by a backward pass, or evicted): a backward pass that records a
//! run at those inputs runs the model a second time (a replay), while one
//! that records a run no forward call made (under `jax.jit`, XLA drops a
//! forward call whose outputs a `jax.grad` does not use) runs it once.

use ia_adjoint::{Problem, TapedRun};
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

/// A taped run as the store keeps it: boxed, so that keeping, evicting and
/// taking it move a pointer, not the run's structures (a `TapedRun` is
/// large enough that its moves through the store cost as much as the
/// store's look-ups).
pub(crate) type KeptRun = Box<TapedRun>;

/// The hasher of run keys (bits of the inputs): a multiply-rotate mix of
/// 8 bytes at a time. The keys are the caller's own inputs, not an
/// adversary's, so the standard library's keyed SipHash (about a third of
/// the store's cost a look-up) buys nothing here.
#[derive(Default)]
pub(crate) struct KeyHasher(u64);

impl KeyHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        // A key's words arrive here as one slice of bytes (`Hash for
        // [u64]`): read whole words, then the tail padded with zeros.
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            self.add(u64::from_le_bytes(word.try_into().expect("8 bytes")));
        }
        let tail = words.remainder();
        if !tail.is_empty() {
            let mut word = [0_u8; 8];
            word[..tail.len()].copy_from_slice(tail);
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, word: u64) {
        self.add(word);
    }

    fn write_usize(&mut self, word: usize) {
        self.add(word as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// Hash maps and sets keyed by run keys.
pub(crate) type KeyBuild = BuildHasherDefault<KeyHasher>;

/// The fewest runs kept whatever the batch sizes.
pub(crate) const MIN_KEPT: usize = 16;

/// The key of a run's tape: the bits of its inputs, shared (not copied)
/// by the store's maps and its list of spent keys, so that keeping and
/// taking a run allocates no key beyond the one made for it.
pub(crate) type Key = Arc<[u64]>;

/// The inputs of a run (its initial state, parameters and final time),
/// bit for bit: the key of its tape (one allocation: the length is known).
pub(crate) fn key(problem: &Problem<'_>) -> Key {
    key_words(&problem.initial_state, &problem.params, problem.t_end).collect()
}

/// The words of the key of the run from `x0` and `params` until `t_end`.
pub(crate) fn key_words<'a>(
    x0: &'a [f64],
    params: &'a [f64],
    t_end: f64,
) -> impl Iterator<Item = u64> + 'a {
    x0.iter()
        .chain(params)
        .map(|v| v.to_bits())
        .chain([t_end.to_bits()])
}

/// The serial numbers of the kept runs of one key, oldest first: almost
/// always one, held without the allocation of a list.
enum Serials {
    One(u64),
    Many(VecDeque<u64>),
}

impl Serials {
    fn push_back(&mut self, serial: u64) {
        match self {
            Serials::One(first) => *self = Serials::Many(VecDeque::from([*first, serial])),
            Serials::Many(list) => list.push_back(serial),
        }
    }

    /// The newest serial taken out, and whether none is left.
    fn pop_back(&mut self) -> (Option<u64>, bool) {
        match self {
            Serials::One(only) => (Some(*only), true),
            Serials::Many(list) => (list.pop_back(), list.is_empty()),
        }
    }

    /// The oldest serial taken out, and whether none is left.
    fn pop_front(&mut self) -> (Option<u64>, bool) {
        match self {
            Serials::One(only) => (Some(*only), true),
            Serials::Many(list) => (list.pop_front(), list.is_empty()),
        }
    }
}

/// Taped runs by their inputs, oldest evicted first. Keeping a run and
/// taking one cost a hash look-up and a step of an ordered map, whatever
/// the number kept (a batch of 1,000 runs keeps and takes 1,000).
#[derive(Default)]
pub(crate) struct TapeStore {
    /// The serial numbers of the kept runs of each key, oldest first.
    serials: HashMap<Key, Serials, KeyBuild>,
    /// The kept runs by serial number (the order they were stored in),
    /// each with its key.
    runs: BTreeMap<u64, (Key, KeptRun)>,
    /// The serial number of the next run kept.
    next: u64,
    /// The keys of runs recorded by forward calls whose tapes are gone.
    spent: HashSet<Key, KeyBuild>,
    /// Those keys, oldest first (each once).
    spent_order: VecDeque<Key>,
    /// The most keys `spent` remembers: that of runs at the last keep.
    spent_limit: usize,
    /// The words of a key being looked up ([`TapeStore::take_inputs`]),
    /// kept so that a look-up allocates nothing.
    scratch: Vec<u64>,
}

impl TapeStore {
    /// Keeps the runs of one forward call (`(key, run)` each), evicting
    /// the oldest runs past twice this call's size (at least
    /// [`MIN_KEPT`]).
    pub(crate) fn keep<I>(&mut self, runs: I)
    where
        I: IntoIterator<Item = (Key, KeptRun)>,
        I::IntoIter: ExactSizeIterator,
    {
        let runs = runs.into_iter();
        let limit = (2 * runs.len()).max(MIN_KEPT);
        self.spent_limit = limit;
        for (key, run) in runs {
            let serial = self.next;
            self.next += 1;
            match self.serials.get_mut(&key) {
                Some(list) => list.push_back(serial),
                None => {
                    self.serials.insert(key.clone(), Serials::One(serial));
                }
            }
            self.runs.insert(serial, (key, run));
        }
        while self.runs.len() > limit {
            let Some((serial, (key, _))) = self.runs.pop_first() else {
                break;
            };
            // The oldest run of its key is the oldest of all.
            if let Some(list) = self.serials.get_mut(&key) {
                let (oldest, emptied) = list.pop_front();
                debug_assert_eq!(oldest, Some(serial));
                if emptied {
                    self.serials.remove(&key);
                }
            }
            self.spend(key);
        }
        self.forget_spent();
    }

    /// Remembers that the run of `key` was recorded and its tape is gone.
    fn spend(&mut self, key: Key) {
        if self.spent.insert(key.clone()) {
            self.spent_order.push_back(key);
        }
    }

    /// Forgets the oldest spent keys past the limit.
    fn forget_spent(&mut self) {
        while self.spent_order.len() > self.spent_limit.max(MIN_KEPT) {
            if let Some(key) = self.spent_order.pop_front() {
                self.spent.remove(&key);
            }
        }
    }

    /// Whether a forward call recorded a run from `key`'s inputs whose
    /// tape is gone (used or evicted) lately: recording it again is a
    /// replay.
    pub(crate) fn was_recorded(&self, key: &[u64]) -> bool {
        self.spent.contains(key)
    }

    /// The run recorded from `key`'s inputs (the latest kept), taken out
    /// of the store.
    pub(crate) fn take(&mut self, key: &[u64]) -> Option<KeptRun> {
        // Taken out and put back if runs of the key are left: one hash
        // look-up in the usual case of one run a key.
        let (shared, mut list) = self.serials.remove_entry(key)?;
        let (serial, emptied) = list.pop_back();
        if !emptied {
            self.serials.insert(shared, list);
        }
        let (key, run) = serial.and_then(|s| self.runs.remove(&s))?;
        self.spend(key);
        self.forget_spent();
        Some(run)
    }

    /// [`TapeStore::take`] of the run from `x0` and `params` until `t_end`
    /// (its key made in a kept buffer, not allocated), and, when there is
    /// none, whether recording it is a replay
    /// ([`TapeStore::was_recorded`]).
    pub(crate) fn take_inputs(
        &mut self,
        x0: &[f64],
        params: &[f64],
        t_end: f64,
    ) -> (Option<KeptRun>, bool) {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        scratch.extend(key_words(x0, params, t_end));
        let found = self.take(&scratch);
        let replay = found.is_none() && self.was_recorded(&scratch);
        self.scratch = scratch;
        (found, replay)
    }

    /// How many runs are kept.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.runs.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ia_adjoint::{record_in, AdjointOptions, Workspace};

    fn taped(vy: f64) -> KeptRun {
        let model = ia_models::by_name("ball2d-flat").unwrap();
        let system = model.system();
        let problem = Problem::new(&system, vec![0.0, 1.0, 1.0, vy], vec![9.81, 0.8, 0.7], 0.5);
        Box::new(record_in(&problem, &AdjointOptions::default(), &mut Workspace::new()).unwrap())
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
        assert!(!store.was_recorded(&k(0.0)), "kept, not spent");
        assert!(store.take(&k(0.0)).is_some());
        assert!(store.take(&k(0.0)).is_none(), "a tape is used once");
        assert!(
            store.was_recorded(&k(0.0)),
            "used: recording it again is a replay"
        );
        assert!(!store.was_recorded(&k(0.1)), "never recorded: not a replay");
        // A forward call of MIN_KEPT + 1 runs keeps them all (twice the
        // call's size); the next small calls evict the oldest first.
        let many: Vec<_> = (0..=MIN_KEPT).map(|i| (k(i as f64), taped(0.0))).collect();
        store.keep(many);
        assert_eq!(store.len(), MIN_KEPT + 1);
        store.keep(vec![(k(-1.0), taped(0.0))]);
        assert_eq!(store.len(), MIN_KEPT);
        assert!(store.take(&k(0.0)).is_none() && store.take(&k(1.0)).is_none());
        assert!(
            store.was_recorded(&k(1.0)),
            "evicted: recording it again is a replay"
        );
        assert!(store.take(&k(2.0)).is_some() && store.take(&k(-1.0)).is_some());
        // The spent keys are forgotten past the limit, oldest first: after
        // MIN_KEPT more runs used, 0.0 (spent first) is forgotten.
        for i in 0..MIN_KEPT {
            let key = k(100.0 + i as f64);
            store.keep(vec![(key.clone(), taped(0.0))]);
            assert!(store.take(&key).is_some());
        }
        assert!(!store.was_recorded(&k(0.0)));
        assert!(store.was_recorded(&k(100.0)));
        assert!(store.spent.len() <= MIN_KEPT && store.spent.len() == store.spent_order.len());
    }

    /// `take_inputs` is `take` of the key made from the same inputs (the
    /// reference: `key` of the problem), with `was_recorded` on a miss.
    #[test]
    fn takes_by_inputs_as_by_the_key_of_their_problem() {
        let mut store = TapeStore::default();
        let model = ia_models::by_name("ball2d-flat").unwrap();
        let system = model.system();
        let (x0, params) = ([0.0, 1.0, 1.0, 0.0], [9.81, 0.8, 0.7]);
        let problem = Problem::new(&system, x0.to_vec(), params.to_vec(), 0.5);
        let kept = taped(0.0);
        let final_state = kept.trajectory().final_state.clone();
        store.keep([(key(&problem), kept)]);
        assert!(matches!(
            store.take_inputs(&x0, &params, 0.6),
            (None, false)
        ));
        let (found, replay) = store.take_inputs(&x0, &params, 0.5);
        assert_eq!(found.unwrap().trajectory().final_state, final_state);
        assert!(!replay);
        assert!(
            matches!(store.take_inputs(&x0, &params, 0.5), (None, true)),
            "used: recording it again is a replay"
        );
        assert!(store.serials.is_empty() && store.len() == 0);
    }

    #[test]
    fn taken_runs_leave_no_trace_and_the_same_inputs_give_the_latest_run() {
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
        // A batch of one point twice (the tapes of vy = 0.0 and 0.2 are
        // told apart by their final states), then every run taken.
        store.keep(vec![
            (k(0.0), taped(0.0)),
            (k(1.0), taped(1.0)),
            (k(0.0), taped(0.2)),
        ]);
        let latest = store.take(&k(0.0)).unwrap();
        assert_eq!(
            latest.trajectory().final_state,
            taped(0.2).trajectory().final_state
        );
        assert!(store.take(&k(0.0)).is_some() && store.take(&k(1.0)).is_some());
        assert_eq!(store.len(), 0);
        assert!(store.serials.is_empty(), "no key left without runs");
        // Taken runs do not count towards the limit: MIN_KEPT runs kept
        // after them are all there.
        for i in 0..MIN_KEPT {
            store.keep(vec![(k(i as f64), taped(0.0))]);
        }
        assert_eq!(store.len(), MIN_KEPT);
        assert!((0..MIN_KEPT).all(|i| store.take(&k(i as f64)).is_some()));
    }
}
