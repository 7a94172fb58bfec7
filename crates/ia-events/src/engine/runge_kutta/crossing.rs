//! How the Runge-Kutta engine finds the earliest crossing of a step and
//! locates it on the dense output (rules 1 and 2 of the event rules,
//! [`crate::vocabulary`]), and a disarmed guard's return.

use super::root::{bracketed_root, RootFailure, Sample, Stopping};
use super::{Found, Run};
use crate::vocabulary::{ExtraState, Observer};
use ia_core::HybridError;

/// Uniform samples of a step searched for a bracket when the step start does
/// not lie on the guard's recorded side (right after an event) and the first
/// of them is not on that side either...
const COARSE_SAMPLES: usize = 8;
/// ...and halvings of its first eighth searched when the guard is already
/// back past zero at the first sample.
const BRACKET_DOUBLINGS: usize = 60;

/// Newton iterations that move an event located on a lower-order dense
/// output to the zero of its guard on redone steps
/// ([`Run::refine_on_steps`]): each gains the step's order over the last.
const REFINE_ITERATIONS: usize = 4;

/// The fraction of a step by which the states at its ends are pushed along
/// the flow to tell whether a guard heads towards zero or away from it.
const DIP_PROBE: f64 = 1e-6;
/// Golden-section iterations that search a step for the guard's extremum
/// (the bracket shrinks by 0.618 each: 80 iterations reach rounding of the
/// step).
const DIP_ITERATIONS: usize = 80;

impl<E: ExtraState, O: Observer> Run<'_, '_, E, O> {
    /// Moves the end of the last step, redone to end at the event time
    /// `t_event` located on the dense output, to where transition `k`'s
    /// guard vanishes at the step's own end state, by Newton on the step's
    /// end time (the guard's rate along the flow at the end state), redoing
    /// the step to each new end; returns the event time. A dense output of
    /// lower order than the step puts the located time off by its error;
    /// the event's saltation assumes the guard is zero at the event state.
    /// The end stays inside `(t_prev, t_new]`, the step first taken.
    ///
    /// An explicit method's dense output is of its step's order or one
    /// below, and usually puts the event within the step's own error: with
    /// its tolerances `within = Some((rtol, atol))` the located time is
    /// kept when the guard's residual at the redone step's end is within
    /// what the step's error control allows, `|g| <= |g_x| (atol + rtol
    /// max|x_i|)` over the guard's support, and refined only beyond it
    /// (measured: DOP853's dense output on the stiff heated rod, a step held
    /// by stability, put an event 3e-8 off at rtol 1e-10).
    ///
    /// Also returns `|g_x|` when the crossing geometry last formed
    /// ([`GeometryWorkspace::crossing`]) is the event's, at the returned
    /// time and the step's end state: the event's firing reads it instead
    /// of forming it again.
    pub(super) fn refine_on_steps(
        &mut self,
        k: usize,
        t_event: f64,
        t_new: f64,
        within: Option<(f64, f64)>,
    ) -> Result<(f64, Option<f64>), HybridError> {
        let system = self.system();
        let p = &self.problem.params;
        let n = self.rhs.n;
        let guard = &system.transitions()[k].guard;
        let t_prev = self.stepper.previous_time();
        let mut t = t_event;
        for iteration in 0..REFINE_ITERATIONS {
            let x = &self.stepper.state()[..n];
            let g = guard.value(t, x, p);
            if g == 0.0 {
                break;
            }
            let (crossing, gx_norm) = self.geometry.crossing(system, p, k, t, x);
            let rate = crossing.guard_rate;
            self.extra_rhs_evaluations += 1;
            if let (0, Some((rtol, atol))) = (iteration, within) {
                let x_scale = match guard.support() {
                    Some(read) => read.states.iter().fold(0.0f64, |m, &i| m.max(x[i].abs())),
                    None => x.iter().fold(0.0f64, |m, v| m.max(v.abs())),
                };
                if g.abs() <= gx_norm * (atol + rtol * x_scale) {
                    return Ok((t, Some(gx_norm)));
                }
            }
            let next = t - g / rate;
            if !(next.is_finite() && next > t_prev && next <= t_new)
                || (next - t).abs() <= 4.0 * f64::EPSILON * t.abs().max(f64::MIN_POSITIVE)
            {
                return Ok((t, Some(gx_norm)));
            }
            if let Err(f) = self.stepper.truncate(&mut self.rhs, next) {
                return Err(self.step_failure(f));
            }
            t = next;
        }
        Ok((t, None))
    }

    /// Finds the earliest transition whose guard crossed in `[t_prev, t_new]`.
    ///
    /// Only that one is located to the time tolerance: when several guards
    /// crossed, the bracket is first halved with one interpolated state per
    /// trial time, every remaining guard evaluated on it, keeping the guards
    /// already crossed at the trial time, until one is left (or the bracket
    /// is within the time tolerance: then the first declared of those left
    /// fires, the others counting as simultaneous).
    pub(super) fn detect(&mut self, t_prev: f64, t_new: f64) -> Result<Option<Found>, HybridError> {
        let system = self.system();
        let n = self.rhs.n;
        let p = &self.problem.params;
        self.guards.crossed.clear();
        self.guards.dip_candidates.clear();
        for &k in &system.modes()[self.mode()].outgoing {
            let g = self.checked_guard(k, t_new, &self.stepper.state()[..n])?;
            self.guards.start_values[k] = self.guards.values[k];
            self.guards.values[k] = g;
            // Zero reached exactly at the end of the run is not an event:
            // the run ends first (vocabulary, rule 1).
            let ends_on_zero = g == 0.0 && t_new >= self.problem.t_end;
            if !ends_on_zero && self.crossed_from_side(k, t_prev, g) {
                self.guards.crossed.push(k);
            } else if g.abs() > self.guards.band(k, t_prev) && self.guards.sides[k] * g > 0.0 {
                // On its side at both ends: it may have dipped past zero
                // (or, disarmed, come back and crossed) inside the step. A
                // disarmed guard back on its side at the end has no dip:
                // the step's end arms it.
                self.guards.dip_candidates.push(k);
            }
        }
        let (mut lo, mut hi) = (t_prev, t_new);
        // A guard that crossed zero and came back inside the step: the
        // bracket ends where it is past zero, and holds every guard past
        // zero there.
        if let Some((t_past, dipped)) = self.earliest_dip(t_prev, t_new)? {
            hi = t_past;
            self.stepper
                .interpolate(&mut self.rhs, hi, &mut self.states.x_probe);
            self.recorder.count_root_iterations(1);
            self.guards.crossed.clear();
            for &k in &system.modes()[self.mode()].outgoing {
                let g = system.transitions()[k]
                    .guard
                    .value(hi, &self.states.x_probe, p);
                if self.crossed_from_side(k, t_prev, g) {
                    self.guards.values[k] = g;
                    self.guards.crossed.push(k);
                }
            }
            if self.guards.crossed.is_empty() && self.disarmed(dipped) {
                return Ok(Some(Found::BackOnSide(t_past, dipped)));
            }
        }
        let mut halvings = 0;
        while self.guards.crossed.len() > 1 && hi - lo > self.time_tolerance && halvings < 200 {
            halvings += 1;
            let mid = lo + 0.5 * (hi - lo);
            if mid <= lo || mid >= hi {
                break;
            }
            // The state at the trial time, once for all remaining guards: only
            // the entries they read when each names them.
            let all_supported = self
                .guards
                .crossed
                .iter()
                .all(|&k| system.transitions()[k].guard.support().is_some());
            if all_supported {
                for &k in &self.guards.crossed {
                    let read = system.transitions()[k]
                        .guard
                        .support()
                        .map_or(&[][..], |s| s.states);
                    self.stepper.interpolate_entries(
                        &mut self.rhs,
                        mid,
                        read,
                        &mut self.states.x_probe,
                    );
                }
            } else {
                self.stepper
                    .interpolate(&mut self.rhs, mid, &mut self.states.x_probe);
            }
            self.recorder.count_root_iterations(1);
            self.guards.still_crossed.clear();
            for i in 0..self.guards.crossed.len() {
                let k = self.guards.crossed[i];
                let g = self.checked_guard(k, mid, &self.states.x_probe)?;
                if self.crossed_from_side(k, t_prev, g) {
                    self.guards.values[k] = g;
                    self.guards.still_crossed.push(k);
                }
            }
            if self.guards.still_crossed.is_empty() {
                lo = mid;
            } else {
                hi = mid;
                std::mem::swap(&mut self.guards.crossed, &mut self.guards.still_crossed);
            }
        }
        match self.guards.crossed.first() {
            None => Ok(None),
            Some(&k) => Ok(Some(Found::Crossing(self.locate(k, t_prev, lo, hi)?, k))),
        }
    }

    /// Transition `k`'s guard on the dense output of the last step at `t`.
    fn guard_at(&mut self, k: usize, t: f64) -> f64 {
        let guard = &self.problem.system.transitions()[k].guard;
        self.stepper
            .interpolate(&mut self.rhs, t, &mut self.states.x_probe);
        self.recorder.count_root_iterations(1);
        guard.value(t, &self.states.x_probe, &self.problem.params)
    }

    /// The earliest time inside `[t_prev, t_new]` at which a guard that is
    /// on its side at both ends is past zero (it crossed and came back), if
    /// any. Whether a guard heads towards zero at the start and away from it
    /// at the end is told by evaluating it on the states pushed a small
    /// fraction of the step along the flow from both ends, formed once for
    /// all guards, so the test costs two guard evaluations per guard; only
    /// a guard that passes it is searched on the dense output.
    fn earliest_dip(
        &mut self,
        t_prev: f64,
        t_new: f64,
    ) -> Result<Option<(f64, usize)>, HybridError> {
        if self.guards.dip_candidates.is_empty() || t_new <= t_prev {
            return Ok(None);
        }
        let n = self.rhs.n;
        let (t0, t1) = (t_prev, t_new);
        let eps = DIP_PROBE * (t1 - t0);
        let mut states = std::mem::take(&mut self.states.dip_states);
        match self.stepper.step_rates() {
            Some((f0, f1)) => {
                self.states.dip_rates[..n].copy_from_slice(&f0[..n]);
                self.states.dip_rates[n..].copy_from_slice(&f1[..n]);
            }
            None => {
                let flow = &self.problem.system.modes()[self.mode()].flow;
                let p = &self.problem.params;
                let (f0, f1) = self.states.dip_rates.split_at_mut(n);
                flow.rate(t0, &self.stepper.previous_state()[..n], p, f0);
                flow.rate(t1, &self.stepper.state()[..n], p, f1);
                self.extra_rhs_evaluations += 2;
            }
        }
        let (x0, x1) = (
            &self.stepper.previous_state()[..n],
            &self.stepper.state()[..n],
        );
        let (ahead, behind) = states.split_at_mut(n);
        for i in 0..n {
            ahead[i] = x0[i] + eps * self.states.dip_rates[i];
            behind[i] = x1[i] - eps * self.states.dip_rates[n + i];
        }
        let system = self.system();
        let p = &self.problem.params;
        // The suspects, into a buffer free until the bracket is narrowed.
        self.guards.still_crossed.clear();
        for &k in &self.guards.dip_candidates {
            let guard = &system.transitions()[k].guard;
            let side = self.guards.sides[k];
            let start = guard.value(t0 + eps, ahead, p) - self.guards.start_values[k];
            let end = self.guards.values[k] - guard.value(t1 - eps, behind, p);
            // Heading into zero at the start, away from it at the end.
            if side * start < 0.0 && side * end > 0.0 {
                self.guards.still_crossed.push(k);
            }
        }
        self.states.dip_states = states;
        let mut earliest: Option<(f64, usize)> = None;
        for c in 0..self.guards.still_crossed.len() {
            let k = self.guards.still_crossed[c];
            if let Some(t_past) = self.dip(k, t0, earliest.map_or(t1, |(t, _)| t))? {
                earliest = Some((t_past, k));
            }
        }
        Ok(earliest)
    }

    /// Searches `[t0, t1]` for a time at which transition `k`'s guard is
    /// past zero in its direction, or, for a [disarmed](Self::disarmed)
    /// guard, back on the side it crosses from (golden section for the
    /// extremum of the guard on the dense output), if there is one.
    fn dip(&mut self, k: usize, t0: f64, t1: f64) -> Result<Option<f64>, HybridError> {
        let side = self.guards.sides[k];
        let direction = self.problem.system.transitions()[k].guard.direction();
        let disarmed = self.disarmed(k);
        let past = |g: f64| {
            if disarmed {
                side * g < 0.0
            } else {
                direction.crossed(side, g)
            }
        };
        // Golden-section search for the minimum of side * g.
        let ratio = 0.5 * (5f64.sqrt() - 1.0);
        let (mut a, mut b) = (t0, t1);
        let mut c = b - ratio * (b - a);
        let mut d = a + ratio * (b - a);
        let (mut gc, mut gd) = (self.guard_at(k, c), self.guard_at(k, d));
        for _ in 0..DIP_ITERATIONS {
            if past(gc) {
                return Ok(Some(c));
            }
            if past(gd) {
                return Ok(Some(d));
            }
            if b - a <= self.time_tolerance {
                break;
            }
            if side * gc < side * gd {
                b = d;
                d = c;
                gd = gc;
                c = b - ratio * (b - a);
                gc = self.guard_at(k, c);
            } else {
                a = c;
                c = d;
                gc = gd;
                d = a + ratio * (b - a);
                gd = self.guard_at(k, d);
            }
        }
        if !(gc.is_finite() && gd.is_finite()) {
            let what = format!(
                "guard value of transition '{}' inside a step",
                self.problem.system.transitions()[k].name
            );
            return Err(self.non_finite(what, c));
        }
        Ok(None)
    }

    /// Whether transition `k`'s guard, at value `g` on a step from
    /// `t_start`, went from its recorded side to zero or beyond in its
    /// direction (a value within the rounding band of the last event is not
    /// a crossing).
    #[inline]
    fn crossed_from_side(&self, k: usize, t_start: f64, g: f64) -> bool {
        // Still strictly on its side: not crossed, whatever the direction
        // (the common case, decided without the guard's direction).
        if self.guards.sides[k] * g > 0.0 {
            return false;
        }
        // Zero itself is reached (vocabulary rule 1: "to zero or beyond"),
        // unless it lies within the rounding band of the last event.
        let band = self.guards.band(k, t_start);
        (band == 0.0 || g.abs() > band)
            && self.system().transitions()[k]
                .guard
                .direction()
                .crossed(self.guards.sides[k], g)
    }

    /// Whether transition `k`'s guard sits beyond zero in its direction: a
    /// mode switch left it there heading back, or it fired and its reset
    /// left it there (a threshold with an identity reset). It has to come
    /// back to the side it crosses from before it can fire.
    fn disarmed(&self, k: usize) -> bool {
        let side = self.guards.sides[k];
        side != 0.0
            && self.system().transitions()[k]
                .guard
                .direction()
                .violated_at_start(side)
    }

    /// Ends the step at `t_back`, inside it, where transition `k`'s
    /// [disarmed](Self::disarmed) guard is back on the side it crosses
    /// from, and arms it there: its crossing later in the step is then
    /// found by the next one. No event: the state and the mode run on.
    pub(super) fn stop_back_on_side(&mut self, t_back: f64, k: usize) -> Result<(), HybridError> {
        if let Err(f) = self.stepper.truncate(&mut self.rhs, t_back) {
            return Err(self.step_failure(f));
        }
        self.step_taken();
        let system = self.system();
        let n = self.rhs.n;
        let t_prev = self.stepper.previous_time();
        for &j in &system.modes()[self.mode()].outgoing {
            self.guards.values[j] = self.checked_guard(j, t_back, &self.stepper.state()[..n])?;
        }
        // The stepped state may still sit a rounding short of where the
        // dense output saw guard `k` back: then it stays disarmed.
        self.take_sides(t_prev);
        debug_assert!(self.guards.sides[k] != 0.0);
        Ok(())
    }

    /// At the end of a step from `t_prev` with no event, each guard takes
    /// the side of its value (`self.guards.values`), unless that is within
    /// its rounding band.
    pub(super) fn take_sides(&mut self, t_prev: f64) {
        for &k in &self.system().modes()[self.mode()].outgoing {
            let g = self.guards.values[k];
            if g.abs() > self.guards.band(k, t_prev) {
                self.guards.sides[k] = g.signum();
            }
        }
    }

    /// Locates the crossing of transition `k`'s guard from its recorded side
    /// within `[t_prev, t_new]`, on a step that started at `t_start` (whose
    /// rounding band applies); its value at `t_new` is `guard_values[k]`.
    fn locate(
        &mut self,
        k: usize,
        t_start: f64,
        t_prev: f64,
        t_new: f64,
    ) -> Result<f64, HybridError> {
        let system = self.system();
        let guard = &system.transitions()[k].guard;
        let side = self.guards.sides[k];
        let band = self.guards.band(k, t_start);
        let p = &self.problem.params;
        let stepper = &mut *self.stepper;
        let rhs = &mut self.rhs;
        let x_probe = &mut self.states.x_probe;
        let mut evaluations = 0usize;
        // A guard that names the entries it reads costs their interpolation
        // only, not the state's.
        let support = guard.support();
        let mut g_at = |t: f64| {
            evaluations += 1;
            match support {
                Some(read) => stepper.interpolate_entries(rhs, t, read.states, x_probe),
                None => stepper.interpolate(rhs, t, x_probe),
            }
            guard.value(t, x_probe, p)
        };
        // At the step's start the value is known; a bracket narrowed to a
        // later start needs the guard there.
        let g_start = if t_prev == t_start {
            self.guards.start_values[k]
        } else {
            g_at(t_prev)
        };
        let start = Sample {
            t: t_prev,
            g: g_start,
        };
        let end = Sample {
            t: t_new,
            g: self.guards.values[k],
        };
        let (mut lo, mut hi, mut earlier) = (start, end, None);
        if g_start * side <= band {
            // Right after an event the start sits on zero, within its
            // rounding band (maybe a rounding error on the far side): the
            // bracket starts at the first point clearly on the recorded
            // side. The guard leaves zero towards that side (the side is
            // its rate's there), so the first eighth of the step is tried
            // first: on that side there, it is a step's start like any
            // other, and its crossing is located in the rest of the step
            // as a crossing in a whole step is (rule 1: a guard that comes
            // back past zero more than once in one step is not seen; the
            // eight samples this replaces found the earliest of three
            // crossings only to an eighth of the step). The start, on zero,
            // is the root finder's third point. Otherwise the guard came
            // back within that eighth, or is still in its band there (a
            // tangential start): the eighth is searched at offsets growing
            // geometrically from the start, then the other eighths, for a
            // point on the side followed by one past zero.
            let width = t_new - t_prev;
            let eighth = width / COARSE_SAMPLES as f64;
            let first = t_prev + eighth;
            let first_value = g_at(first);
            let bracket = if first_value * side > band {
                earlier = Some(start);
                Some((
                    Sample {
                        t: first,
                        g: first_value,
                    },
                    end,
                ))
            } else {
                let fine = (1..=BRACKET_DOUBLINGS)
                    .rev()
                    .map(|i| t_prev + eighth * 0.5f64.powi(i as i32));
                let coarse = (1..=COARSE_SAMPLES).map(|j| {
                    if j == COARSE_SAMPLES {
                        t_new
                    } else {
                        t_prev + eighth * j as f64
                    }
                });
                let mut on_side: Option<Sample> = None;
                let mut found = None;
                for t in fine.chain(coarse) {
                    // The first sample and the end are known.
                    let g = if t == first {
                        first_value
                    } else if t == t_new {
                        end.g
                    } else {
                        g_at(t)
                    };
                    if g * side > band {
                        on_side = Some(Sample { t, g });
                    } else if let (Some(a), true) = (on_side, g * side <= 0.0) {
                        found = Some((a, Sample { t, g }));
                        break;
                    }
                }
                found
            };
            // No point on the side, and no band of an event at the start:
            // the start is past zero by rounding alone, as the root finder
            // takes a start within the noise of zero on the side (a step
            // that ended on the guard's zero, at an observation time, where
            // the band of the event that started it hid the crossing).
            let start_crossed =
                band == 0.0 && g_start.abs() <= 4.0 * f64::EPSILON * g_start.abs().max(end.g.abs());
            match bracket {
                Some((a, b)) => (lo, hi) = (a, b),
                None if start_crossed => {
                    self.recorder.count_root_iterations(evaluations);
                    return Ok(t_prev);
                }
                None => {
                    self.recorder.count_root_iterations(evaluations);
                    let name = system.transitions()[k].name.clone();
                    return Err(HybridError::EventLocation {
                        transition: name,
                        from: t_prev,
                        to: t_new,
                        reason: "the guard changed side but no bracket was found on the dense output; bound the step with max_step".into(),
                        trajectory: Box::new(self.snapshot()),
                    });
                }
            }
        }
        // Converged when the bracket is within the time tolerance, or when
        // the guard value is down to rounding noise of its size at the
        // bracket's ends (no sample can then tell the root apart).
        let stop = Stopping {
            tolerance: self.time_tolerance,
            noise: 4.0 * f64::EPSILON * lo.g.abs().max(hi.g.abs()),
            max_iterations: 200,
        };
        let located = bracketed_root(&mut g_at, lo, hi, earlier, &stop);
        self.recorder.count_root_iterations(evaluations);
        located.map_err(|failure| {
            let name = system.transitions()[k].name.clone();
            if let RootFailure::NonFinite(t) = failure {
                let what = format!("guard value of transition '{name}' inside a step");
                return self.non_finite(what, t);
            }
            HybridError::EventLocation {
                transition: name,
                from: lo.t,
                to: hi.t,
                reason: format!(
                    "root finding failed: {}; the guard is too flat or too noisy there to locate its zero (bound the step, or start further from a tangential contact)",
                    failure.describe()
                ),
                trajectory: Box::new(self.snapshot()),
            }
        })
    }
}
