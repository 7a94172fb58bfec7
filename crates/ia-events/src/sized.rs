//! Small systems' arithmetic sized for the compiler: one body written over
//! a size, copied for each small size with the size a constant (its loops
//! unrolled, no calls to copy a few floats) and once for any other size.
//! Every copy does the same operations in the same order, so they give the
//! same numbers; only the instructions differ.
//!
//! The lists of sizes are here only ([`sized!`](crate::sized!)), one per
//! family of callers, so that the callers of a family (a stepper's step,
//! its error norm, the adjoint's transposed step) cannot drift apart.

/// Runs a body once for each small size with the size a constant, and once
/// for any other size: `sized!(set, n = value => body)` is a `match` on
/// `value` (a `usize`) with an arm `k => { let n = k; body }` for each `k`
/// of the set and a last arm `n => body`. With a pair,
/// `sized!(set, (c, m) = value => body)` matches a `(usize, usize)` on the
/// set's pairs the same way, and `sized!(set, (c, m) = value, if cond =>
/// body)` takes the sized arms only when `cond` holds.
///
/// The sets:
///
/// - `explicit`: the explicit Runge-Kutta steps (`RkStepper`) and the
///   adjoint's transposed steps and kept stages: a state of up to eight
///   entries alone, or of up to four with one derivative probe after it.
///   Sizes `1..=8`; pairs `(closed, controlled)` `(c, c)` for `c <= 8` and
///   `(c, 2c)` for `c <= 4`.
/// - `implicit`: the implicit (ESDIRK) steps (`ImplicitStepper`) and the
///   factorisation of their iteration matrix: a closed system (a state
///   alone) of up to four entries. Sizes `1..=4`; pairs `(dim, closed)`
///   `(c, c)` for `c <= 4`.
/// - `lu_solve`: the dense LU's solves, by the matrix or its transpose
///   (the implicit stages, their sensitivity columns and the adjoint's
///   transposed stages), a few instructions each and called many times
///   a factorisation: orders `1..=6`.
///
/// ```ignore
/// sized!(explicit, n = self.dim => self.attempt_sized(rhs, h, n))
/// ```
#[doc(hidden)]
#[macro_export]
macro_rules! sized {
    (explicit, $n:ident = $value:expr => $body:expr) => {
        $crate::sized!(@one $value, $n, $body, [1, 2, 3, 4, 5, 6, 7, 8])
    };
    (explicit, ($c:ident, $m:ident) = $value:expr, if $cond:expr => $body:expr) => {
        $crate::sized!(@pair $value, $cond, ($c, $m), $body, [
            (1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6), (7, 7), (8, 8),
            (1, 2), (2, 4), (3, 6), (4, 8)
        ])
    };
    (implicit, $n:ident = $value:expr => $body:expr) => {
        $crate::sized!(@one $value, $n, $body, [1, 2, 3, 4])
    };
    (implicit, ($c:ident, $m:ident) = $value:expr => $body:expr) => {
        $crate::sized!(@pair $value, true, ($c, $m), $body, [(1, 1), (2, 2), (3, 3), (4, 4)])
    };
    (lu_solve, $n:ident = $value:expr => $body:expr) => {
        $crate::sized!(@one $value, $n, $body, [1, 2, 3, 4, 5, 6])
    };
    (@one $value:expr, $n:ident, $body:expr, [$($size:literal),*]) => {
        match $value {
            $($size => {
                let $n: usize = $size;
                $body
            })*
            $n => $body,
        }
    };
    (@pair $value:expr, $cond:expr, ($c:ident, $m:ident), $body:expr,
        [$(($a:literal, $b:literal)),*]) => {{
        let value: (usize, usize) = $value;
        // Outside the condition, a key no arm matches.
        match if $cond { value } else { (0, 0) } {
            $(($a, $b) => {
                let ($c, $m): (usize, usize) = ($a, $b);
                $body
            })*
            _ => {
                let ($c, $m) = value;
                $body
            }
        }
    }};
}

/// `dst.copy_from_slice(src)` (the same lengths, or a panic), the copy
/// sized for the compiler for the `explicit` sizes: a state's few floats
/// moved in a few instructions rather than by a call to `memcpy`, whose
/// call and dispatch on the length cost several times the moves in wall
/// time (profiled: `memcpy` was 7 % of a small system's adjoint gradient
/// in wall time and 4.5 % of its instructions, spread over a hundred
/// calls). For the state copies of every step and event; large copies
/// keep the plain `copy_from_slice`.
#[inline(always)]
pub fn copy_floats(dst: &mut [f64], src: &[f64]) {
    assert_eq!(
        dst.len(),
        src.len(),
        "copy_floats between slices of different lengths"
    );
    crate::sized!(explicit, n = src.len() => dst[..n].copy_from_slice(&src[..n]))
}

/// `dst.extend_from_slice(src)`, the copy sized as in [`copy_floats`].
#[inline(always)]
pub fn extend_floats(dst: &mut Vec<f64>, src: &[f64]) {
    crate::sized!(explicit, n = src.len() => dst.extend_from_slice(&src[..n]))
}

#[cfg(test)]
mod tests {
    /// Each sized arm binds its constant and the last arm the value
    /// itself: the identity through every arm of every set (the reference
    /// is the value matched).
    #[test]
    fn every_arm_binds_the_value_it_matched() {
        for v in 0..12usize {
            assert_eq!(crate::sized!(explicit, n = v => n), v);
            assert_eq!(crate::sized!(implicit, n = v => n), v);
            assert_eq!(crate::sized!(lu_solve, n = v => n), v);
            for w in 0..12usize {
                for cond in [false, true] {
                    let got = crate::sized!(explicit, (c, m) = (v, w), if cond => (c, m));
                    assert_eq!(got, (v, w));
                }
                assert_eq!(crate::sized!(implicit, (c, m) = (v, w) => (c, m)), (v, w));
            }
        }
    }

    /// The sized copies against `copy_from_slice` and `extend_from_slice`
    /// (the reference), for every size of the set and beyond it.
    #[test]
    fn sized_copies_are_the_plain_ones() {
        for len in 0..12usize {
            let src: Vec<f64> = (0..len).map(|i| i as f64 * 1.5 - 2.0).collect();
            let mut dst = vec![f64::NAN; len];
            super::copy_floats(&mut dst, &src);
            let mut reference = vec![0.0; len];
            reference.copy_from_slice(&src);
            assert_eq!(dst, reference);
            let mut grown = vec![7.0];
            super::extend_floats(&mut grown, &src);
            let mut reference = vec![7.0];
            reference.extend_from_slice(&src);
            assert_eq!(grown, reference);
        }
    }

    #[test]
    #[should_panic(expected = "different lengths")]
    fn copy_floats_refuses_different_lengths() {
        super::copy_floats(&mut [0.0; 3], &[1.0; 4]);
    }
}
