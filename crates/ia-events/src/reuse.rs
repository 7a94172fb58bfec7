//! Buffers kept between runs and filled again: the spare vectors records
//! are copied into and the helpers that make a kept buffer ready for a new
//! run (re-exported by [`crate::workspace`]).

/// Spent `Vec<f64>` buffers, kept to be filled again: a record copied
/// through [`SpareVecs::copy_of`] allocates only when none is left (or the
/// one left is too short).
#[derive(Debug, Default)]
pub struct SpareVecs(Vec<Vec<f64>>);

impl SpareVecs {
    /// A vector holding a copy of `x`, built in a spare buffer when there is
    /// one.
    ///
    /// ```
    /// # use ia_events::SpareVecs;
    /// let mut spare = SpareVecs::default();
    /// spare.give(vec![7.0; 4]);
    /// assert_eq!(spare.copy_of(&[1.0, 2.0]), [1.0, 2.0]);
    /// ```
    pub fn copy_of(&mut self, x: &[f64]) -> Vec<f64> {
        match self.0.pop() {
            Some(mut v) => {
                v.clear();
                v.extend_from_slice(x);
                v
            }
            None => x.to_vec(),
        }
    }

    /// A vector of `len` zeros, built in a spare buffer when there is one.
    pub fn zeros(&mut self, len: usize) -> Vec<f64> {
        let mut v = self.0.pop().unwrap_or_default();
        v.clear();
        v.resize(len, 0.0);
        v
    }

    /// Keeps `v` to be filled again (an empty one holds nothing worth
    /// keeping).
    pub fn give(&mut self, v: Vec<f64>) {
        if v.capacity() > 0 {
            self.0.push(v);
        }
    }
}

/// `v` emptied and refilled with `len` copies of `value` (no allocation when
/// its capacity suffices): how a kept buffer is made ready for a new run.
///
/// ```
/// # use ia_events::workspace::refill;
/// let v = refill(vec![1.0, 2.0, 3.0], 2, 0.0);
/// assert_eq!(v, [0.0, 0.0]);
/// ```
pub fn refill<T: Clone>(mut v: Vec<T>, len: usize, value: T) -> Vec<T> {
    fill(&mut v, len, value);
    v
}

/// [`refill`] in place.
pub(crate) fn fill<T: Clone>(v: &mut Vec<T>, len: usize, value: T) {
    v.clear();
    v.resize(len, value);
}

/// `v` emptied, with room for `capacity` entries (no allocation when its
/// capacity suffices).
pub(crate) fn empty_with_room<T>(v: &mut Vec<T>, capacity: usize) {
    v.clear();
    v.reserve(capacity);
}

/// Keeps the emptied `offered` in `slot` when it holds more than the one
/// there: how a workspace takes back the list of a result.
///
/// ```
/// # use ia_events::workspace::keep_larger;
/// let mut slot: Vec<u8> = Vec::with_capacity(2);
/// keep_larger(&mut slot, Vec::with_capacity(8));
/// assert!(slot.is_empty() && slot.capacity() >= 8);
/// ```
pub fn keep_larger<T>(slot: &mut Vec<T>, mut offered: Vec<T>) {
    offered.clear();
    if offered.capacity() > slot.capacity() {
        *slot = offered;
    }
}
