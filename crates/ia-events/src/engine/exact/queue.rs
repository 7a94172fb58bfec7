//! The exact solver's predicted crossings: a priority queue of transitions
//! by their predicted times.

use std::cmp::Ordering;

/// The predicted crossings, earliest first (then the first declared
/// transition): a binary heap indexed by transition, so a new prediction
/// replaces the old one in place and the heap never holds more than one
/// entry a transition.
#[derive(Debug, Default)]
pub(super) struct CrossingQueue {
    /// Transitions, in heap order.
    heap: Vec<usize>,
    /// Each transition's place in `heap` (`usize::MAX`: not queued).
    place: Vec<usize>,
    /// Each transition's predicted time.
    time: Vec<f64>,
}

impl CrossingQueue {
    pub(super) fn new(transitions: usize) -> Self {
        Self {
            heap: Vec::with_capacity(transitions),
            place: vec![usize::MAX; transitions],
            time: vec![f64::INFINITY; transitions],
        }
    }

    pub(super) fn clear(&mut self) {
        for &k in &self.heap {
            self.place[k] = usize::MAX;
        }
        self.heap.clear();
    }

    fn before(&self, i: usize, j: usize) -> bool {
        let (k, l) = (self.heap[i], self.heap[j]);
        match self.time[k].total_cmp(&self.time[l]) {
            Ordering::Equal => k < l,
            order => order == Ordering::Less,
        }
    }

    fn swap(&mut self, i: usize, j: usize) {
        self.heap.swap(i, j);
        self.place[self.heap[i]] = i;
        self.place[self.heap[j]] = j;
    }

    fn sift_up(&mut self, mut i: usize) {
        while i > 0 {
            let parent = (i - 1) / 2;
            if !self.before(i, parent) {
                break;
            }
            self.swap(i, parent);
            i = parent;
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        loop {
            let (left, right) = (2 * i + 1, 2 * i + 2);
            let mut first = i;
            if left < self.heap.len() && self.before(left, first) {
                first = left;
            }
            if right < self.heap.len() && self.before(right, first) {
                first = right;
            }
            if first == i {
                break;
            }
            self.swap(i, first);
            i = first;
        }
    }

    /// Transition `k` predicted to cross at `time`, or not at all (`None`).
    pub(super) fn set(&mut self, k: usize, time: Option<f64>) {
        let i = self.place[k];
        match (time, i == usize::MAX) {
            (Some(time), true) => {
                self.time[k] = time;
                self.heap.push(k);
                self.place[k] = self.heap.len() - 1;
                self.sift_up(self.heap.len() - 1);
            }
            (Some(time), false) => {
                self.time[k] = time;
                self.sift_up(i);
                self.sift_down(self.place[k]);
            }
            (None, false) => {
                let last = self.heap.len() - 1;
                self.swap(i, last);
                self.heap.pop();
                self.place[k] = usize::MAX;
                if i < self.heap.len() {
                    let moved = self.heap[i];
                    self.sift_up(i);
                    self.sift_down(self.place[moved]);
                }
            }
            (None, true) => {}
        }
    }

    /// The earliest predicted crossing: its time and transition.
    pub(super) fn first(&self) -> Option<(f64, usize)> {
        self.heap.first().map(|&k| (self.time[k], k))
    }
}
