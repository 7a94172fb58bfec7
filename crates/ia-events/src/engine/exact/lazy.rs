//! The exact solver's lazy advance: each linear block (a decoupled entry or
//! a 2x2 pair) kept at its own last update time, so that an event costs its
//! fan-out (the blocks its guard and its reset touch), not the state's size.
//!
//! A run is lazy when nothing reads the whole state at every event: the
//! records keep no event states ([`EventOptions::event_states`](crate::EventOptions::event_states)
//! `false`), nothing is carried along ([`ExtraState`] of dimension 0, no
//! event geometry), the observer reads no states
//! ([`Observer::reads_states`]) or takes the lazy run's events
//! ([`Observer::takes_lazy_events`]: then there are no mode switches and no
//! terminal transitions, and each event's touched blocks are shown to it,
//! [`LazyJump`]), and every reset declares the entries it
//! reads and writes ([`Reset::reads`](ia_core::Reset::reads),
//! [`Reset::writes`](ia_core::Reset::writes)). An event then brings to its
//! time the block of its guard's entry and those of the entries its reset
//! reads and writes, applies the reset in place
//! ([`Reset::apply_in_place`](ia_core::Reset::apply_in_place)) and predicts
//! again only the guards on the entries it changed; the other blocks stay
//! at their own times, and their predicted crossings in the queue stay
//! valid (their courses did not change). Observations, a mode switch, the
//! end of the run and an error bring every block up to date.
//!
//! A block carried over one long stretch instead of the several stretches
//! between the events it did not take part in rounds differently: the
//! results agree with the eager run to rounding, not to the bit (the
//! solver's tests bound the difference against the high-precision
//! reference).

use super::structure::{Level, NO_PAIR};
use super::Run;
use crate::closed_form::advance_component;
use crate::factor::phi;
use crate::geometry::{EventAt, GeometryWorkspace};
use crate::pair_form::{advance_pair, crossing_near, first_crossing_from, PairStart};
use crate::rough_crossing::{cheap_bound, rough_crossing, Rough, MARGIN};
use crate::vocabulary::LazyJump;
use crate::vocabulary::{ExtraState, Observer};
use ia_core::Tangent;
use ia_core::{Direction, Threshold};
use ia_core::{HybridError, Reset};

impl<E: ExtraState, O: Observer> Run<'_, E, O> {
    /// Whether this run can keep its blocks at their own times (see the
    /// [module documentation](self)).
    pub(super) fn can_be_lazy(&self) -> bool {
        let problem = self.problem;
        let transitions = problem.system.transitions();
        // An observer that reads states takes the events of a lazy run
        // ([`LazyJump`]) when no event brings the whole state up to date
        // (a mode switch, a terminal event).
        let observer = if self.observer.reads_states() || self.observer.wants_event_geometry() {
            self.observer.takes_lazy_events()
                && transitions
                    .iter()
                    .all(|tr| tr.from == tr.to && !tr.terminal)
        } else {
            true
        };
        !problem.events.event_states
            && self.carried.is_empty()
            && !self.extra.wants_event_geometry()
            && observer
            && transitions
                .iter()
                .all(|tr| tr.reset.reads().is_some() && tr.reset.writes().is_some())
    }

    /// Collects for the observer what transition `k`'s event touches (its
    /// blocks brought to the run's time, before its reset): the entries of
    /// its guard's block and of the blocks its reset reads and writes,
    /// their values, their rates `f-` and `r_x f- + r_t` (through the
    /// reset's Jacobian-vector product, reading the touched entries only).
    pub(super) fn touch_before(&mut self, k: usize, cascade_of: Option<usize>, guard_rate: f64) {
        let Some(mut taping) = self.taping.take() else {
            return;
        };
        taping.guard_rate = guard_rate;
        for &e in &taping.entries {
            taping.mark[e] = false;
        }
        taping.entries.clear();
        let (system, params) = (self.problem.system, &self.problem.params);
        let reset = &system.transitions()[k].reset;
        let guard = match self.structure.thresholds[k] {
            Level::State(threshold) => Some(threshold.state),
            Level::Time(_) => None,
        };
        let read = reset.reads().unwrap_or(&[]);
        let written = reset.writes().unwrap_or(&[]);
        for &i in guard.iter().chain(read).chain(written) {
            let (pair, _) = self.structure.pair_of[self.mode][i];
            let block = if pair == NO_PAIR {
                [i, i]
            } else {
                self.structure.pairs[self.mode][pair].entries
            };
            for e in block {
                if !taping.mark[e] {
                    taping.mark[e] = true;
                    taping.entries.push(e);
                }
            }
        }
        taping.before.clear();
        for &e in &taping.entries {
            taping.before.push(self.x[e]);
            taping.flow[e] = self.entry_rate(e);
        }
        for &e in &taping.entries {
            taping.along[e] = taping.flow[e];
        }
        if reset.jacobian_vector_product_in_place(self.t, &self.x, params, 1.0, &mut taping.along) {
            self.taping = Some(taping);
            return;
        }
        let event = EventAt {
            transition: k,
            time: self.t,
            state_before: &self.x,
            state_after: &[],
            cascade_of,
        };
        let along_flow = Tangent {
            t: 1.0,
            x: &taping.flow,
            param: ia_core::ParamDirection::Zero,
        };
        let (n, np) = (self.x.len(), system.param_dim());
        taping
            .products
            .get_or_insert_with(|| GeometryWorkspace::new(n, np))
            .reset_jacobian_vector_product(system, params, event, along_flow, &mut taping.along);
        self.taping = Some(taping);
    }

    /// Completes what [`Run::touch_before`] collected once the reset is
    /// applied: the touched entries' values after it and the time shift
    /// `w = f+ - r_x f- - r_t` on them.
    pub(super) fn touch_after(&mut self) {
        let Some(mut taping) = self.taping.take() else {
            return;
        };
        taping.after.clear();
        taping.shift.clear();
        for &e in &taping.entries {
            taping.after.push(self.x[e]);
            taping.shift.push(self.entry_rate(e) - taping.along[e]);
        }
        self.taping = Some(taping);
    }

    /// Brings the block of entry `i` from its own time to `t`.
    fn bring(&mut self, i: usize, t: f64) {
        let s = t - self.entry_time[i];
        if s <= 0.0 {
            return;
        }
        let (pair, _) = self.structure.pair_of[self.mode][i];
        if pair == NO_PAIR {
            let (a, b) = (
                self.structure.a[self.mode][i],
                self.structure.b[self.mode][i],
            );
            let r = self.rate_of[i];
            if self.phi_lengths[r].to_bits() != s.to_bits() {
                (self.phis[r], self.phi_lengths[r]) = (phi(a, s), s);
            }
            advance_component(&mut self.x[i], a, b, self.phis[r]);
            self.entry_time[i] = t;
            return;
        }
        let pair = &self.structure.pairs[self.mode][pair];
        let [p, q] = pair.entries;
        let mut y = [self.x[p], self.x[q]];
        let m = pair.matrix;
        if self.factor_lengths[m].to_bits() != s.to_bits() {
            // The most recent two lengths are kept, the latest in front.
            let spare = &mut self.spare_factors[m];
            std::mem::swap(&mut self.factor_lengths[m], &mut spare.0);
            std::mem::swap(&mut self.pair_factors[m], &mut spare.1);
            if self.factor_lengths[m].to_bits() != s.to_bits() {
                (self.pair_factors[m], self.factor_lengths[m]) = (pair.rates.factors(s), s);
            }
        }
        advance_pair(&pair.a, &pair.b, &pair.rates, &self.pair_factors[m], &mut y);
        (self.x[p], self.x[q]) = (y[0], y[1]);
        (self.entry_time[p], self.entry_time[q]) = (t, t);
    }

    /// Brings every block to `t`, the run's time from now on.
    pub(super) fn flush(&mut self, t: f64) {
        for i in 0..self.x.len() {
            self.bring(i, t);
        }
        self.t = t;
    }

    /// Brings to the run's time what transition `k`'s event reads and
    /// changes: its guard's block and the blocks of the entries its reset
    /// reads and writes; every block when it switches modes (`switches`:
    /// the blocks are carried by the old mode's flow up to the switch).
    pub(super) fn bring_touched(&mut self, k: usize, switches: bool) {
        let t = self.t;
        if switches {
            self.flush(t);
            return;
        }
        if let Level::State(threshold) = self.structure.thresholds[k] {
            self.bring(threshold.state, t);
        }
        let reset = &self.problem.system.transitions()[k].reset;
        let (reads, writes) = (reset.reads().unwrap_or(&[]), reset.writes().unwrap_or(&[]));
        for &i in reads {
            self.bring(i, t);
        }
        // A reset that reads what it writes (a spike's kick) lists them once.
        if !std::ptr::eq(reads, writes) {
            for &i in writes {
                self.bring(i, t);
            }
        }
    }

    /// Applies transition `k`'s reset over the state in place (its entries
    /// read and written already brought to the run's time), leaving in
    /// `changed` the entries it moved and in `changed_before` their values
    /// before it.
    pub(super) fn reset_in_place(&mut self, k: usize) {
        let (t, params) = (self.t, &self.problem.params);
        let reset = &*self.problem.system.transitions()[k].reset;
        self.changed.clear();
        let writes = apply_writes(
            reset,
            t,
            params,
            (&mut self.x, &mut self.x_after),
            &mut self.changed_before,
        );
        let mut kept = 0;
        for (w, &j) in writes.iter().enumerate() {
            let before = self.changed_before[w];
            if before.to_bits() != self.x[j].to_bits() {
                self.changed.push(j);
                self.changed_before[kept] = before;
                kept += 1;
            }
        }
        self.changed_before.truncate(kept);
    }

    /// Queues a lower bound of transition `k`'s crossing (a threshold on
    /// entry `slot` of pair `pair`, whose block is at the run's time), or
    /// the crossing, or nothing ([`predicted`]).
    pub(super) fn predict_roughly(
        &mut self,
        k: usize,
        pair: usize,
        slot: usize,
        threshold: Threshold,
        direction: Direction,
    ) {
        let start = self.pair_start(pair);
        let (time, queued) = predicted(&start, self.t, slot, threshold.level, direction);
        self.queued[k] = queued;
        self.queue.set(k, time);
    }

    /// Finds exactly the crossings whose lower bounds come first in the
    /// queue, until an exact one does (or none is left), each a step of
    /// [`refined`]. A bound's block has not changed course since it was
    /// queued (a change predicts again), so its crossing is found from its
    /// state at its own time.
    pub(super) fn refine_first(&mut self) {
        while let Some((bound, k)) = self.queue.first() {
            let queued = self.queued[k];
            if queued == Queued::Exact {
                return;
            }
            let direction = self.structure.directions[k];
            let Level::State(threshold) = self.structure.thresholds[k] else {
                unreachable!("only state thresholds on pairs are bounded");
            };
            let (pair, slot) = self.structure.pair_of[self.mode][threshold.state];
            let since = self.entry_time[threshold.state];
            let start = self.pair_start(pair);
            let step = (queued, bound);
            let (time, queued) = refined(&start, since, slot, threshold.level, direction, step);
            self.queued[k] = queued;
            self.queue.set(k, time);
        }
    }

    /// Takes back the reset [`Run::reset_in_place`] applied.
    pub(super) fn undo_reset(&mut self) {
        for (&j, &before) in self.changed.iter().zip(&self.changed_before) {
            self.x[j] = before;
        }
    }

    /// `error`, raised by the recorder after an event with a trajectory
    /// ending at the state after its reset, with that state brought up to
    /// date in every block.
    pub(super) fn caught_up(&mut self, error: HybridError) -> HybridError {
        self.flush(self.t);
        match error {
            HybridError::Zeno {
                reason,
                last_event_time,
                mut trajectory,
            } => {
                trajectory.final_state.copy_from_slice(&self.x);
                HybridError::Zeno {
                    reason,
                    last_event_time,
                    trajectory,
                }
            }
            error => error,
        }
    }
}

/// What a lazy run queues for a threshold at `level` on entry `slot` of
/// the pair that starts at `start` at time `t`, crossed in `direction`:
/// a lower bound of its crossing time when [`cheap_bound`] or else
/// [`rough_crossing`] gives one (and which of them gave it), nothing when
/// either shows there is none, else the crossing found exactly (from the
/// same start). The layered sweep (the module `sweep`) predicts with it too.
#[inline]
pub(super) fn predicted(
    start: &PairStart<'_>,
    t: f64,
    slot: usize,
    level: f64,
    direction: Direction,
) -> (Option<f64>, Queued) {
    let (queued, rough) = match cheap_bound(start, slot, level, direction) {
        Rough::Unsure => (Queued::Rough, rough_crossing(start, slot, level, direction)),
        cheap => (Queued::Cheap, cheap),
    };
    match rough {
        Rough::Never => (None, Queued::Exact),
        Rough::NotBefore(s) => (Some(t + s), queued),
        Rough::Unsure => (
            first_crossing_from(start, slot, level, direction).map(|s| t + s),
            Queued::Exact,
        ),
    }
}

/// One step closer to the crossing of the threshold of [`predicted`] from
/// the pair's state `start` at its own time `since`, whose queued time
/// `step.1` is a bound of kind `step.0` (not [`Queued::Exact`]): a
/// [`cheap_bound`] is replaced by [`rough_crossing`]'s, a rough bound by
/// the crossing. The crossing lies at the rough root, within its margin:
/// it is found from there, searched from the start only when it is not.
#[inline]
pub(super) fn refined(
    start: &PairStart<'_>,
    since: f64,
    slot: usize,
    level: f64,
    direction: Direction,
    (queued, bound): (Queued, f64),
) -> (Option<f64>, Queued) {
    debug_assert!(queued != Queued::Exact);
    if queued == Queued::Cheap {
        return match rough_crossing(start, slot, level, direction) {
            Rough::Never => (None, Queued::Exact),
            Rough::NotBefore(s) => (Some(since + s), Queued::Rough),
            Rough::Unsure => (
                first_crossing_from(start, slot, level, direction).map(|s| since + s),
                Queued::Exact,
            ),
        };
    }
    let lo = bound - since;
    let (estimate, hi) = (lo / (1.0 - MARGIN), lo * (1.0 + 4.0 * MARGIN));
    let near = (lo, estimate, hi);
    let delay = crossing_near(start, slot, level, direction, near)
        .or_else(|| first_crossing_from(start, slot, level, direction));
    let time = delay.map(|s| since + s);
    debug_assert!(time.is_none_or(|time| time >= bound), "{time:?} < {bound}");
    (time, Queued::Exact)
}

/// What a lazy run's queued time of a transition is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Queued {
    /// The crossing (or a threshold on time).
    Exact,
    /// A [`cheap_bound`] below it.
    Cheap,
    /// A [`rough_crossing`] bound below it, within its margin.
    Rough,
}

/// What a lazy run shows an observer that takes its events, per event
/// ([`LazyJump`]), and the buffers it is formed in.
pub(super) struct LazyTaping {
    /// The touched entries, each once, and a mark per entry.
    entries: Vec<usize>,
    mark: Vec<bool>,
    before: Vec<f64>,
    after: Vec<f64>,
    shift: Vec<f64>,
    /// `f-` on the touched entries (stale elsewhere: the reset reads only
    /// those), the tangent of the reset's product.
    flow: Vec<f64>,
    /// `r_x f- + r_t`, read on the touched entries.
    along: Vec<f64>,
    /// The reset's products where it has none of its own (formed from its
    /// partials), made on first use.
    products: Option<GeometryWorkspace>,
    guard_rate: f64,
}

impl LazyTaping {
    /// Buffers for a state of `n` entries.
    pub(super) fn new(n: usize) -> Self {
        Self {
            entries: Vec::new(),
            mark: vec![false; n],
            before: Vec::new(),
            after: Vec::new(),
            shift: Vec::new(),
            flow: vec![0.0; n],
            along: vec![0.0; n],
            products: None,
            guard_rate: 0.0,
        }
    }

    /// The last event's touched blocks, as the observer reads them.
    pub(super) fn jump(&self) -> LazyJump<'_> {
        LazyJump {
            entries: &self.entries,
            before: &self.before,
            after: &self.after,
            time_shift: &self.shift,
            guard_rate: self.guard_rate,
        }
    }
}

/// Applies `reset` at `t` to the entries it writes of `x` (in place where
/// it can, otherwise through `x_after`, whose other entries are then `x`'s,
/// some stale and unread), with those entries' values before it in
/// `before`; returns the written entries. The lazy runs' one way of
/// applying a reset that writes a known few entries (the general run's
/// event and the sweep's kick).
pub(super) fn apply_writes<'r>(
    reset: &'r dyn Reset,
    t: f64,
    params: &[f64],
    (x, x_after): (&mut [f64], &mut [f64]),
    before: &mut Vec<f64>,
) -> &'r [usize] {
    let writes = reset.writes().unwrap_or(&[]);
    before.clear();
    before.extend(writes.iter().map(|&j| x[j]));
    if !reset.apply_in_place(t, x, params) {
        reset.apply(t, x, params, x_after);
        for &j in writes {
            x[j] = x_after[j];
        }
    }
    writes
}
