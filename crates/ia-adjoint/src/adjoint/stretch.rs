//! The transpose of the exact solver's closed-form stretches over the
//! whole state ([`Stepping::Exact`](super::Stepping::Exact) on a stretch
//! tape): decoupled entries and linear pairs.

use super::{flow_transpose, Backward};
use ia_events::exact::{PairStretch, PairTransposeBasis};

/// `a` and `b` of mode `mode`'s `x' = a x + b` in `linear` (`2 n` floats a
/// mode, [`Stepping::Exact`](super::Stepping::Exact)).
pub(super) fn mode_linear(linear: &[f64], n: usize, mode: usize) -> (&[f64], &[f64]) {
    linear[2 * n * mode..2 * n * (mode + 1)].split_at(n)
}

impl Backward<'_> {
    /// Transposes one stretch of length `s` of the exact solver from the
    /// start state in `self.vectors.stage_states`. Forward, a tangent is
    /// carried as `v(s) = e^{a s} v + f_p(x0) phi + (f_p(x0 + rate0) -
    /// f_p(x0)) chi` ([`ia_events::exact::ExactSpan`]); so
    /// `lambda <- e^{a s} lambda` and
    /// `p_bar += f_p(x0)^T (lambda phi - lambda chi) + f_p(x0 + rate0)^T (lambda chi)`,
    /// two of the flow's vector-Jacobian products (its dense partials where
    /// it has none).
    pub(super) fn transpose_stretch(
        &mut self,
        mode: usize,
        t0: f64,
        s: f64,
        lambda: &mut [f64],
        param_bar: &mut [f64],
    ) {
        let n = self.n;
        let vectors = &mut *self.vectors;
        let (a, b) = mode_linear(&self.linear, n, mode);
        // Stage bars: lambda (phi - chi) at x0, lambda chi at x0 + rate0.
        let at_start = &mut vectors.stage_bars[..n];
        let x0 = &vectors.stage_states[..n];
        let shifted = &mut vectors.stages[..n];
        let by_chi = &mut vectors.state_bar[..n];
        // The factors of the last rate met: a network's components share one.
        let mut factors: Option<(f64, f64, f64)> = None;
        for i in 0..n {
            let (phi, chi) = match factors {
                Some((rate, phi, chi)) if rate.to_bits() == a[i].to_bits() => (phi, chi),
                _ => {
                    let (phi, chi) = (
                        ia_events::exact::phi(a[i], s),
                        ia_events::exact::chi(a[i], s),
                    );
                    factors = Some((a[i], phi, chi));
                    (phi, chi)
                }
            };
            let l = lambda[i];
            at_start[i] = l * (phi - chi);
            by_chi[i] = l * chi;
            shifted[i] = x0[i] + (a[i] * x0[i] + b[i]);
            lambda[i] = l * ia_events::exact::decay(a[i], phi);
        }
        // A pair's entries are transposed below (their a and b here are zero).
        for pair in &self.pairs[mode] {
            for &i in &pair.entries {
                (at_start[i], by_chi[i]) = (0.0, 0.0);
            }
        }
        let flow = &self.system.modes()[mode].flow;
        for (x, v) in [(x0, &*at_start), (&*shifted, &*by_chi)] {
            flow_transpose(
                &**flow,
                &mut self.partials,
                (t0, x, self.params),
                v,
                &mut vectors.scratch,
                param_bar,
            );
        }
        if !self.pairs[mode].is_empty() {
            self.transpose_pairs(mode, t0, s, lambda, param_bar);
        }
    }

    /// Transposes the stretch of mode `mode`'s linear pairs
    /// ([`ia_events::exact::PairStretch::transpose_tangent`]): each pair's
    /// rows of `f_p` are `E y + beta`, linear in its entries, so
    /// `sum_kl g_kl E_kl + gamma . beta` is
    /// `f_p(0)^T (gamma - g e_0 - g e_1) + f_p(e_0)^T g e_0 + f_p(e_1)^T g e_1`
    /// at the states zero and one on every pair's first (`e_0`), second
    /// (`e_1`) entry: three of the flow's vector-Jacobian products for all
    /// pairs together.
    fn transpose_pairs(
        &mut self,
        mode: usize,
        t0: f64,
        s: f64,
        lambda: &mut [f64],
        param_bar: &mut [f64],
    ) {
        let n = self.n;
        let work = &mut self.pair_work;
        work.fill(0.0);
        let (states, vs) = work.split_at_mut(3 * n);
        let x0 = &self.vectors.stage_states[..n];
        // Pairs of one matrix and constant (a layer of neurons) share the
        // stretch's factors and Van Loan basis.
        let mut shared: Option<(PairStretch, PairTransposeBasis)> = None;
        for pair in &self.pairs[mode] {
            let (stretch, basis) = match shared {
                Some((stretch, basis)) if stretch.a == pair.a && stretch.b == pair.b => {
                    (stretch, basis)
                }
                _ => {
                    let rates = ia_events::exact::PairRates::of(&pair.a);
                    let stretch = PairStretch {
                        entries: pair.entries,
                        a: pair.a,
                        b: pair.b,
                        rates,
                        factors: rates.factors(s),
                    };
                    (stretch, stretch.transpose_basis(s))
                }
            };
            shared = Some((stretch, basis));
            let [i, j] = pair.entries;
            let c = stretch.transpose_tangent_with(&basis, [x0[i], x0[j]], [lambda[i], lambda[j]]);
            (lambda[i], lambda[j]) = (c.lambda[0], c.lambda[1]);
            states[n + i] = 1.0;
            states[2 * n + j] = 1.0;
            for (row, &e) in pair.entries.iter().enumerate() {
                let (g0, g1) = (c.g[row][0], c.g[row][1]);
                vs[e] = c.gamma[row] - g0 - g1;
                vs[n + e] = g0;
                vs[2 * n + e] = g1;
            }
        }
        let flow = &self.system.modes()[mode].flow;
        for k in 0..3 {
            flow_transpose(
                &**flow,
                &mut self.partials,
                (t0, &states[k * n..(k + 1) * n], self.params),
                &vs[k * n..(k + 1) * n],
                &mut self.vectors.scratch,
                param_bar,
            );
        }
    }
}
