//! The exact solver's predicted crossings: a priority queue of transitions
//! by their predicted times.

/// The predicted crossings, earliest first (then the first declared
/// transition): a binary heap indexed by transition, so a new prediction
/// replaces the old one in place and the heap never holds more than one
/// entry a transition. Each heap slot holds its time with its transition
/// as one integer key ordered as the pair (see [`entry`]: no look-up and
/// one comparison of integers per comparison), and an entry moves by a
/// hole (each slot it passes written once).
#[derive(Debug, Default)]
pub(super) struct CrossingQueue {
    /// Predicted times and their transitions ([`entry`]), in heap order.
    heap: Vec<u128>,
    /// Each transition's place in `heap` (`usize::MAX`: not queued).
    place: Vec<usize>,
    /// Within a batch ([`CrossingQueue::begin_batch`]): entries are
    /// written in place, the heap order restored at its end.
    batch: bool,
}

/// The bits of `time` as an unsigned integer in the order of
/// [`f64::total_cmp`] (its transform, with the sign bit flipped), above
/// the transition `k`: the keys order as `(time, k)` do.
#[inline]
pub(super) fn entry(time: f64, k: usize) -> u128 {
    let bits = time.to_bits();
    let ordered = (bits ^ (((bits as i64 >> 63) as u64) >> 1)) ^ (1 << 63);
    (u128::from(ordered) << 64) | k as u128
}

/// The transition of a key ([`entry`]).
#[inline]
pub(super) fn transition(key: u128) -> usize {
    key as u64 as usize
}

/// The time of a key ([`entry`]): its transform undone (it keeps the sign
/// bit, so it is its own inverse).
#[inline]
pub(super) fn time(key: u128) -> f64 {
    let ordered = ((key >> 64) as u64) ^ (1 << 63);
    f64::from_bits(ordered ^ (((ordered as i64 >> 63) as u64) >> 1))
}

/// Whether `x` comes before `y`: earlier, or as early and declared first.
#[inline]
fn before(x: u128, y: u128) -> bool {
    x < y
}

impl CrossingQueue {
    pub(super) fn new(transitions: usize) -> Self {
        Self {
            heap: Vec::with_capacity(transitions),
            place: vec![usize::MAX; transitions],
            batch: false,
        }
    }

    /// Starts a batch of about `changes` predictions when they are many
    /// against the queue's length (at least a quarter of it): each
    /// [`CrossingQueue::set`] then writes its entry in place, and
    /// [`CrossingQueue::end_batch`] restores the heap order at once, in
    /// time linear in the queue's length (so at most four times the
    /// batch's), where moving each entry would take its `log` of it (an
    /// input spike re-predicting a whole layer).
    pub(super) fn begin_batch(&mut self, changes: usize) {
        self.batch = changes >= 8 && 4 * changes >= self.heap.len();
    }

    /// Ends a batch ([`CrossingQueue::begin_batch`]): restores the heap
    /// order (Floyd's bottom-up construction).
    pub(super) fn end_batch(&mut self) {
        if !std::mem::take(&mut self.batch) {
            return;
        }
        for i in (0..self.heap.len() / 2).rev() {
            let entry = self.heap[i];
            self.sift_down(i, entry);
        }
    }

    pub(super) fn clear(&mut self) {
        for &key in &self.heap {
            self.place[transition(key)] = usize::MAX;
        }
        self.heap.clear();
    }

    /// Moves `entry` from the hole at `i` up to its place.
    fn sift_up(&mut self, mut i: usize, entry: u128) -> usize {
        while i > 0 {
            let parent = (i - 1) / 2;
            let above = self.heap[parent];
            if !before(entry, above) {
                break;
            }
            self.heap[i] = above;
            self.place[transition(above)] = i;
            i = parent;
        }
        self.heap[i] = entry;
        self.place[transition(entry)] = i;
        i
    }

    /// Moves `entry` from the hole at `i` down to its place.
    fn sift_down(&mut self, mut i: usize, entry: u128) {
        let n = self.heap.len();
        loop {
            let left = 2 * i + 1;
            if left >= n {
                break;
            }
            let right = left + 1;
            let child = if right < n && before(self.heap[right], self.heap[left]) {
                right
            } else {
                left
            };
            let below = self.heap[child];
            if !before(below, entry) {
                break;
            }
            self.heap[i] = below;
            self.place[transition(below)] = i;
            i = child;
        }
        self.heap[i] = entry;
        self.place[transition(entry)] = i;
    }

    /// Puts `entry` at `i` (a hole), then where it belongs.
    fn settle(&mut self, i: usize, entry: u128) {
        let up = self.sift_up(i, entry);
        if up == i {
            self.sift_down(i, entry);
        }
    }

    /// Transition `k` predicted to cross at `time`, or not at all (`None`).
    pub(super) fn set(&mut self, k: usize, time: Option<f64>) {
        let i = self.place[k];
        if self.batch {
            self.set_in_place(k, i, time);
            return;
        }
        match (time, i == usize::MAX) {
            (Some(time), true) => {
                self.heap.push(entry(time, k));
                self.sift_up(self.heap.len() - 1, entry(time, k));
            }
            (Some(time), false) => self.settle(i, entry(time, k)),
            (None, false) => {
                self.place[k] = usize::MAX;
                let last = self.heap.pop().expect("a queued transition");
                if i < self.heap.len() {
                    self.settle(i, last);
                }
            }
            (None, true) => {}
        }
    }

    /// [`CrossingQueue::set`] within a batch: transition `k` (at `i` in
    /// the heap, or `usize::MAX`) written in place, out of heap order.
    fn set_in_place(&mut self, k: usize, i: usize, time: Option<f64>) {
        match (time, i == usize::MAX) {
            (Some(time), true) => {
                self.place[k] = self.heap.len();
                self.heap.push(entry(time, k));
            }
            (Some(time), false) => self.heap[i] = entry(time, k),
            (None, false) => {
                self.place[k] = usize::MAX;
                let last = self.heap.pop().expect("a queued transition");
                if i < self.heap.len() {
                    self.heap[i] = last;
                    self.place[transition(last)] = i;
                }
            }
            (None, true) => {}
        }
    }

    /// The earliest predicted crossing: its time and transition (not
    /// within a batch).
    pub(super) fn first(&self) -> Option<(f64, usize)> {
        debug_assert!(!self.batch, "the queue's first within a batch");
        self.heap.first().map(|&key| (time(key), transition(key)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference: [`f64::total_cmp`] and the transitions' order. Keys of
    /// times of every kind (signed zeros, subnormals, infinities) order as
    /// their pairs and give back their times to the bit.
    #[test]
    fn keys_order_as_their_times_and_transitions() {
        let times = [
            f64::NEG_INFINITY,
            -1e300,
            -1.5,
            -f64::MIN_POSITIVE / 4.0,
            -0.0,
            0.0,
            f64::MIN_POSITIVE / 4.0,
            1.0,
            1.0 + f64::EPSILON,
            2.5e10,
            f64::INFINITY,
        ];
        for (i, &x) in times.iter().enumerate() {
            assert_eq!(time(entry(x, 3)).to_bits(), x.to_bits());
            assert_eq!(transition(entry(x, 3)), 3);
            for &y in &times[i..] {
                for (j, k) in [(0, 1), (1, 0), (2, 2)] {
                    let pairs = x.total_cmp(&y).then(j.cmp(&k));
                    assert_eq!(entry(x, j).cmp(&entry(y, k)), pairs, "{x} {y} {j} {k}");
                }
            }
        }
    }

    /// Reference: a plain list of the predictions, searched for its
    /// earliest (then first declared) at each step. Over random sets,
    /// moves (earlier and later) and removals, with ties, one at a time or
    /// in batches, the queue's first is the list's.
    #[test]
    fn the_first_is_the_earliest_prediction() {
        let n = 40;
        let mut queue = CrossingQueue::new(n);
        let mut list: Vec<Option<f64>> = vec![None; n];
        let mut state = 7u64;
        for step in 0..20_000 {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let k = (state >> 33) as usize % n;
            let time = match (state >> 20) % 5 {
                0 => None,
                // Few distinct times: many ties.
                r => Some(f64::from(((state >> 40) % 16) as u32) + f64::from(r as u32) * 0.25),
            };
            queue.set(k, time);
            list[k] = time;
            if step % 97 == 0 {
                // A batch of moves, the heap order restored at its end.
                queue.begin_batch(n);
                for j in 0..n / 2 {
                    let k = (k + 3 * j) % n;
                    let time = (j % 3 != 0).then(|| f64::from((step % 7 + j % 5) as u32));
                    queue.set(k, time);
                    list[k] = time;
                }
                queue.end_batch();
            }
            if step % 1000 == 999 {
                queue.clear();
                list.fill(None);
            }
            let expected = list
                .iter()
                .enumerate()
                .filter_map(|(k, t)| t.map(|t| (t, k)))
                .min_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
            assert_eq!(queue.first(), expected, "step {step}");
        }
    }
}
