//! The backward pass of a lazy taped run of the exact solver
//! ([`ia_events::exact`]: each linear block kept at its own last update
//! time, [`ia_events::Observer::lazy_event`]), at the cost of each event's
//! fan-out.
//!
//! Forward, a block is carried in one stretch from the event that last
//! touched it (its state after that event's reset) to the next event that
//! touches it, an observation or the end. Backward, each entry's cotangent
//! is kept at its own time: an event brings the cotangents of the blocks it
//! touched back to its time, each by the transpose of that one stretch
//! from the block's taped state after the event (the same maps as
//! [`Backward::transpose_stretch`], block by block), then transposes its
//! jump over what it touched. An observation and the start bring every
//! block.
//!
//! The flow's parameter terms of a stretch are linear in the
//! coefficients the stretch's transpose gives per entry (a decoupled entry
//! `x' = a x + b` moves them by `alpha da + beta db`, a pair's row by
//! `g0 dA_r0 + g1 dA_r1 + gamma db_r`): they are summed per entry over the
//! whole run and turned into `dL/dp` by three of the flow's
//! vector-Jacobian products at the end, at the states zero, one on every
//! decoupled entry and pair's first entry, and one on every pair's second
//! entry (as [`Backward::transpose_pairs`] does a stretch at a time). The
//! sums are ordered differently from the eager pass's, so the two agree to
//! rounding.

use super::{flow_transpose, mode_linear, Backward, LossSeeds, PARAM_CHECK_EVERY};
use crate::tape::{Cursor, Tape, TapeEntry, TapedEvent};
use ia_core::{HybridError, Trajectory};
use ia_events::exact::{chi, decay, phi, PairRates, PairStretch, PairTransposeBasis};
use ia_events::workspace::refill;

/// No pair: a decoupled entry.
const SINGLE: usize = usize::MAX;

/// The per-entry state of a lazy backward pass.
struct Blocks {
    /// Per entry, the index of its pair in the mode, or [`SINGLE`].
    pair_of: Vec<usize>,
    /// Per pair, the invariants of its matrix.
    rates: Vec<PairRates>,
    /// Per entry, the time its cotangent is at.
    at: Vec<f64>,
    /// Per entry, its block's state at the start of the stretch being
    /// transposed (after the event that touched it last).
    state: Vec<f64>,
    /// Per entry, the sums of the flow's parameter coefficients: `beta`
    /// (`db`), then `alpha` or `g0` (`da`, `dA_r0`), then `g1` (`dA_r1`).
    sums: Vec<f64>,
    /// The last pair stretch transposed: pairs of one matrix and constant
    /// brought back over the same length one after the other (a layer's
    /// neurons between two inputs) share its factors and its transpose
    /// basis (the convolutions of its factors).
    shared: Option<Shared>,
}

/// A pair stretch shared by the blocks transposed in a row ([`Blocks::shared`]).
struct Shared {
    stretch: PairStretch,
    length: u64,
    basis: PairTransposeBasis,
}

/// The vectors of a lazy backward pass, kept between passes by the
/// workspace (a kept workspace's pass allocates none of them again).
#[derive(Default)]
pub(super) struct LazyVectors {
    pair_of: Vec<usize>,
    rates: Vec<PairRates>,
    at: Vec<f64>,
    state: Vec<f64>,
    sums: Vec<f64>,
    /// The state before each event as its reset and guard read it.
    before: Vec<f64>,
    /// The three states and vectors of the flow's parameter terms.
    states: Vec<f64>,
    vs: Vec<f64>,
}

impl Backward<'_> {
    /// [`Backward::gradient_from`] over the tape of a lazy run.
    pub(super) fn lazy_gradient_from(
        &mut self,
        tape: &Tape,
        trajectory: &Trajectory,
        seeds: &LossSeeds,
        end: Cursor,
    ) -> Result<(Vec<f64>, Vec<f64>), HybridError> {
        let n = self.n;
        // A lazy run switches no modes.
        let mode = trajectory.final_mode;
        let end = end.position.min(tape.entries.len());
        let first_recorded = trajectory.first_recorded_event();
        let mut lambda = self.vectors.results.copy_of(&seeds.final_state);
        let mut param_bar = self.vectors.results.zeros(self.system.param_dim());
        let kept = std::mem::take(&mut self.vectors.lazy);
        let mut blocks = Blocks {
            pair_of: refill(kept.pair_of, n, SINGLE),
            rates: {
                let mut rates = kept.rates;
                rates.clear();
                rates
            },
            at: refill(kept.at, n, trajectory.final_time),
            state: {
                let mut state = kept.state;
                state.clear();
                state.extend_from_slice(&trajectory.final_state);
                state
            },
            sums: refill(kept.sums, 3 * n, 0.0),
            shared: None,
        };
        for (k, pair) in self.pairs[mode].iter().enumerate() {
            for &e in &pair.entries {
                blocks.pair_of[e] = k;
            }
            blocks.rates.push(PairRates::of(&pair.a));
        }
        // The state before each event as its reset and guard read it: the
        // touched entries written, the others stale.
        let mut before = refill(kept.before, n, 0.0);
        let (states, vs) = (kept.states, kept.vs);
        let mut cascade_time_bar = 0.0;
        let mut guard_end = tape.guard_terms_before(self.system, end);
        for position in (0..end).rev() {
            let (time, touched) = match tape.entries[position].unpack() {
                TapeEntry::Observation { index } => {
                    let observation = &trajectory.observations[index];
                    blocks.state.copy_from_slice(&observation.state[..n]);
                    for i in 0..n {
                        self.bring_back(mode, &mut blocks, i, observation.time, &mut lambda);
                    }
                    for (l, s) in lambda.iter_mut().zip(&seeds.observations[index]) {
                        *l += s;
                    }
                    (observation.time, None)
                }
                TapeEntry::Event { index } => {
                    let time_seed = index
                        .checked_sub(first_recorded)
                        .and_then(|k| seeds.event_times.get(k))
                        .copied()
                        .unwrap_or(0.0);
                    guard_end -= tape.guard_term_count(self.system, index);
                    let e = tape.events[index];
                    let touched = tape.touched(index);
                    for ((&i, &x_before), &x_after) in touched
                        .entries
                        .iter()
                        .zip(touched.before)
                        .zip(touched.after)
                    {
                        before[i as usize] = x_before;
                        blocks.state[i as usize] = x_after;
                    }
                    for &i in touched.entries {
                        self.bring_back(mode, &mut blocks, i as usize, e.time, &mut lambda);
                    }
                    let event = TapedEvent {
                        transition: e.transition as usize,
                        time: e.time,
                        state_before: &before,
                        shift_entries: touched.entries,
                        shift_values: touched.time_shift,
                        guard_rate: e.guard_rate,
                        guard_terms: &tape.guard_terms[guard_end..],
                        cascade_of: e.cascade_of(),
                    };
                    self.event(
                        event,
                        time_seed,
                        &mut cascade_time_bar,
                        &mut lambda,
                        &mut param_bar,
                    );
                    (e.time, Some(touched.entries))
                }
                TapeEntry::Step { .. } => {
                    unreachable!("a lazy run tapes no stretches")
                }
            };
            let check_params = position % PARAM_CHECK_EVERY == 0;
            let lambda_finite = match touched {
                Some(entries) => entries.iter().all(|&i| lambda[i as usize].is_finite()),
                None => lambda.iter().all(|v| v.is_finite()),
            };
            if !lambda_finite || (check_params && !param_bar.iter().all(|v| v.is_finite())) {
                return Err(overflowed(time, trajectory));
            }
        }
        blocks.state.copy_from_slice(&trajectory.initial_state);
        for i in 0..n {
            self.bring_back(mode, &mut blocks, i, trajectory.initial_time, &mut lambda);
        }
        let (states, vs) = self.flow_parameter_terms(
            mode,
            trajectory.initial_time,
            &blocks,
            (states, vs),
            &mut param_bar,
        );
        self.vectors.lazy = LazyVectors {
            pair_of: blocks.pair_of,
            rates: blocks.rates,
            at: blocks.at,
            state: blocks.state,
            sums: blocks.sums,
            before,
            states,
            vs,
        };
        if !lambda.iter().chain(&param_bar).all(|v| v.is_finite()) {
            return Err(overflowed(trajectory.initial_time, trajectory));
        }
        Ok((lambda, param_bar))
    }

    /// Brings the cotangent of entry `i`'s block back from its own time to
    /// `t`: the transpose of the block's one stretch from `t`, from its
    /// state `blocks.state` there, adding the stretch's parameter
    /// coefficients to `blocks.sums`.
    fn bring_back(&self, mode: usize, blocks: &mut Blocks, i: usize, t: f64, lambda: &mut [f64]) {
        let s = blocks.at[i] - t;
        if s <= 0.0 {
            return;
        }
        let n = self.n;
        let pair = blocks.pair_of[i];
        if pair == SINGLE {
            blocks.at[i] = t;
            let l = lambda[i];
            if l == 0.0 {
                return;
            }
            let (a, b) = mode_linear(&self.linear, n, mode);
            let (a, b) = (a[i], b[i]);
            // As `transpose_stretch`: lambda (phi - chi) at x0, lambda chi
            // at x0 + rate0, each `v f_p(x)` being `v x da + v db`.
            let (phi, chi) = (phi(a, s), chi(a, s));
            let x0 = blocks.state[i];
            let x1 = x0 + (a * x0 + b);
            let (v0, v1) = (l * (phi - chi), l * chi);
            blocks.sums[i] += v0 + v1;
            blocks.sums[n + i] += v0 * x0 + v1 * x1;
            lambda[i] = l * decay(a, phi);
            return;
        }
        let p = &self.pairs[mode][pair];
        let [e0, e1] = p.entries;
        (blocks.at[e0], blocks.at[e1]) = (t, t);
        let l = [lambda[e0], lambda[e1]];
        if l == [0.0, 0.0] {
            return;
        }
        let same = blocks.shared.as_ref().is_some_and(|shared| {
            shared.length == s.to_bits() && shared.stretch.a == p.a && shared.stretch.b == p.b
        });
        if !same {
            let rates = blocks.rates[pair];
            let stretch = PairStretch {
                entries: p.entries,
                a: p.a,
                b: p.b,
                rates,
                factors: rates.factors(s),
            };
            // What `transpose_tangent` forms at every call, formed once
            // (the same numbers to the bit).
            let basis = stretch.transpose_basis(s);
            blocks.shared = Some(Shared {
                stretch,
                length: s.to_bits(),
                basis,
            });
        }
        let shared = blocks.shared.as_ref().expect("set above");
        let y0 = [blocks.state[e0], blocks.state[e1]];
        let c = shared.stretch.transpose_tangent_with(&shared.basis, y0, l);
        (lambda[e0], lambda[e1]) = (c.lambda[0], c.lambda[1]);
        for (row, &e) in p.entries.iter().enumerate() {
            blocks.sums[e] += c.gamma[row];
            blocks.sums[n + e] += c.g[row][0];
            blocks.sums[2 * n + e] += c.g[row][1];
        }
    }

    /// Adds the flow's parameter terms summed over the run in
    /// `blocks.sums` to `param_bar` (three vector-Jacobian products; see
    /// the [module documentation](self)).
    /// `(states, vs)`: the vectors to form the three states and vectors
    /// in, given back.
    fn flow_parameter_terms(
        &mut self,
        mode: usize,
        t: f64,
        blocks: &Blocks,
        (states, vs): (Vec<f64>, Vec<f64>),
        param_bar: &mut [f64],
    ) -> (Vec<f64>, Vec<f64>) {
        let n = self.n;
        let sums = &blocks.sums;
        let (mut states, mut vs) = (refill(states, 3 * n, 0.0), refill(vs, 3 * n, 0.0));
        for i in 0..n {
            let (beta, g0, g1) = (sums[i], sums[n + i], sums[2 * n + i]);
            vs[i] = beta - g0 - g1;
            vs[n + i] = g0;
            vs[2 * n + i] = g1;
            states[n + i] = 1.0;
        }
        for pair in &self.pairs[mode] {
            let [e0, e1] = pair.entries;
            states[n + e1] = 0.0;
            states[2 * n + e1] = 1.0;
            debug_assert_eq!(states[n + e0], 1.0);
        }
        let flow = &self.system.modes()[mode].flow;
        for k in 0..3 {
            flow_transpose(
                &**flow,
                &mut self.partials,
                (t, &states[k * n..(k + 1) * n], self.params),
                &vs[k * n..(k + 1) * n],
                &mut self.vectors.scratch,
                param_bar,
            );
        }
        (states, vs)
    }
}

/// The error of an adjoint that overflowed at `time`.
fn overflowed(time: f64, trajectory: &Trajectory) -> HybridError {
    HybridError::NonFinite {
        what: "derivative (the adjoint, integrated backward, overflowed)".into(),
        time,
        trajectory: Some(Box::new(trajectory.clone())),
    }
}
