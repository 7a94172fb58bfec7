//! The structure of a flow made of small linear blocks
//! ([`Flow::linear_blocks`](crate::Flow::linear_blocks)): decoupled 1x1
//! entries `x_i' = a_i x_i + b_i` and coupled 2x2 pairs
//! `[x_i, x_j]' = A [x_i, x_j] + b`, such as a current-based neuron
//! (`tau_mem V' = -V + I`, `tau_syn I' = -I`).

/// A 2x2 linear block of a flow: the entries `entries = [i, j]` obey
/// `[x_i, x_j]' = a [x_i, x_j] + b`, with `a` row-major (`a[0][1]` is the
/// rate of `x_i` per unit of `x_j`), depending on the parameters only.
///
/// ```
/// use ia_core::LinearPair;
/// // A current-based neuron on entries 0 (V) and 1 (I), tau_mem = 20, tau_syn = 5:
/// // V' = (-V + I) / 20, I' = -I / 5.
/// let neuron = LinearPair::new([0, 1], [[-1.0 / 20.0, 1.0 / 20.0], [0.0, -1.0 / 5.0]], [0.0, 0.0]);
/// assert_eq!(neuron.entries, [0, 1]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LinearPair {
    /// The two state entries `[i, j]` (distinct).
    pub entries: [usize; 2],
    /// The block's matrix, row-major.
    pub a: [[f64; 2]; 2],
    /// The block's constant term.
    pub b: [f64; 2],
}

impl LinearPair {
    /// The pair `[x_i, x_j]' = a [x_i, x_j] + b` on `entries = [i, j]`.
    pub fn new(entries: [usize; 2], a: [[f64; 2]; 2], b: [f64; 2]) -> Self {
        Self { entries, a, b }
    }
}

/// The linear blocks of a flow at given parameters, as
/// [`Flow::linear_blocks`](crate::Flow::linear_blocks) writes them: the
/// coefficients `a_i`, `b_i` of every decoupled entry
/// (`x_i' = a_i x_i + b_i`, the form of
/// [`Flow::decoupled_linear`](crate::Flow::decoupled_linear)), and the 2x2
/// [`LinearPair`]s. An entry that belongs to a pair takes its rate from the
/// pair; its `a_i` and `b_i` are not read. No entry belongs to two pairs.
///
/// ```
/// use ia_core::{LinearBlocks, LinearPair};
/// let mut blocks = LinearBlocks::new(3);
/// assert_eq!((blocks.a.len(), blocks.b.len()), (3, 3));
/// blocks.a[2] = -0.1; // x_2' = -0.1 x_2
/// blocks.pairs.push(LinearPair::new([0, 1], [[-0.05, 0.05], [0.0, -0.2]], [0.0, 0.0]));
/// assert_eq!(blocks.pair_of(1), Some((0, 1)));
/// assert_eq!(blocks.pair_of(2), None);
/// ```
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LinearBlocks {
    /// `a_i` of each entry, `n` of them (read for the entries in no pair).
    pub a: Vec<f64>,
    /// `b_i` of each entry, `n` of them (read for the entries in no pair).
    pub b: Vec<f64>,
    /// The 2x2 pairs.
    pub pairs: Vec<LinearPair>,
}

impl LinearBlocks {
    /// Blocks for a state of `n` entries: every entry decoupled with
    /// `a_i = b_i = 0`, and no pair.
    pub fn new(n: usize) -> Self {
        Self {
            a: vec![0.0; n],
            b: vec![0.0; n],
            pairs: Vec::new(),
        }
    }

    /// The pair holding entry `i` and its slot in it (0 or 1), if any.
    pub fn pair_of(&self, i: usize) -> Option<(usize, usize)> {
        self.pairs.iter().enumerate().find_map(|(k, pair)| {
            pair.entries
                .iter()
                .position(|&e| e == i)
                .map(|slot| (k, slot))
        })
    }

    /// `x' = f(x)` of these blocks at `x` into `dxdt` (what
    /// [`Flow::rate`](crate::Flow::rate) must agree with).
    ///
    /// ```
    /// use ia_core::{LinearBlocks, LinearPair};
    /// let mut blocks = LinearBlocks::new(3);
    /// (blocks.a[2], blocks.b[2]) = (-1.0, 2.0);
    /// blocks.pairs.push(LinearPair::new([0, 1], [[-1.0, 1.0], [0.0, -0.5]], [0.0, 0.0]));
    /// let mut dxdt = [0.0; 3];
    /// blocks.rate(&[1.0, 3.0, 1.0], &mut dxdt);
    /// assert_eq!(dxdt, [2.0, -1.5, 1.0]);
    /// ```
    pub fn rate(&self, x: &[f64], dxdt: &mut [f64]) {
        for (((d, &xi), &ai), &bi) in dxdt.iter_mut().zip(x).zip(&self.a).zip(&self.b) {
            *d = ai * xi + bi;
        }
        for pair in &self.pairs {
            let [i, j] = pair.entries;
            for (row, &e) in pair.entries.iter().enumerate() {
                dxdt[e] = pair.a[row][0] * x[i] + pair.a[row][1] * x[j] + pair.b[row];
            }
        }
    }
}
