//! The Zeno rule over a run's events (rule 8 of the event rules,
//! [`crate::vocabulary`]), kept by the [recorder](crate::recorder) so that
//! the same run is Zeno under every engine.
//!
//! An accumulation of events is infinitely many events in finite time. A
//! system has finitely many transitions, so one of them then fires
//! infinitely often, and its own firings accumulate (in a chattering cycle
//! of several transitions, each of them does). The gap test therefore reads
//! the gaps between consecutive firings *of the same transition*: it finds
//! every true accumulation, while distinct transitions firing close together
//! (neurons of a network spiking microseconds apart, each once) are no
//! evidence of one.

use crate::problem::Problem;
use crate::reuse::refill;

/// Events per transition beyond which a cascade at one instant is reported
/// as Zeno behaviour.
const CASCADE_EVENTS_PER_TRANSITION: usize = 4;

/// What the gap test keeps of one transition: a fixed ring of its last
/// firing times, so nothing is allocated per event.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TransitionWatch {
    /// Times of the transition's last three firings, oldest first (NaN
    /// before it has fired that often).
    recent: [f64; 3],
    /// Its firings so far, cascades included.
    firings: usize,
    /// Its current run of short, shrinking gaps.
    streak: usize,
}

impl Default for TransitionWatch {
    fn default() -> Self {
        Self {
            recent: [f64::NAN; 3],
            firings: 0,
            streak: 0,
        }
    }
}

/// The Zeno rule: more than `max_events` events; a cascade of more than
/// [`CASCADE_EVENTS_PER_TRANSITION`] events per transition at one instant
/// (the events of a cascade share one instant by construction, so their
/// zero gaps are no evidence by themselves); or `zeno_run` consecutive
/// gaps between firings of one transition, each shorter than
/// `zeno_separation` of the run's length and each after the first
/// shrinking towards an accumulation point before `t_end`. The times are
/// kept apart from the records, so the rule holds whatever the record
/// keeps.
#[derive(Debug, Default)]
pub(crate) struct ZenoWatch {
    /// One entry per transition of the system.
    transitions: Vec<TransitionWatch>,
}

impl ZenoWatch {
    /// The watch of a run of `problem`, in the kept vector `kept` (no
    /// allocation when it is long enough; see [`ZenoWatch::release`]).
    pub(crate) fn new(problem: &Problem<'_>, kept: Vec<TransitionWatch>) -> Self {
        let transitions = problem.system.transitions().len();
        Self {
            transitions: refill(kept, transitions, TransitionWatch::default()),
        }
    }

    /// Gives the per-transition vector back to be kept for the next run.
    pub(crate) fn release(self) -> Vec<TransitionWatch> {
        self.transitions
    }

    /// Notes event number `count` (counting it), a firing of transition
    /// `transition` at `t` of the cascade of event `cascade_of` if it is
    /// one, and returns why the run is Zeno, if it now is.
    pub(crate) fn after_event(
        &mut self,
        problem: &Problem<'_>,
        count: usize,
        transition: usize,
        t: f64,
        cascade_of: Option<usize>,
    ) -> Option<String> {
        let options = &problem.events;
        let transitions = problem.system.transitions();
        let watch = &mut self.transitions[transition];
        watch.recent.rotate_left(1);
        watch.recent[2] = t;
        watch.firings += 1;
        let cascade_limit = CASCADE_EVENTS_PER_TRANSITION * transitions.len();
        if count > options.max_events {
            return Some(format!(
                "more than max_events = {} events",
                options.max_events
            ));
        }
        if let Some(root) = cascade_of {
            let length = count - root;
            return (length > cascade_limit).then(|| {
                format!(
                    "a cascade of more than {cascade_limit} events at one instant: each reset pushes another guard past zero"
                )
            });
        }
        let span = problem.t_end - problem.t0;
        let separation = options.zeno_separation * span;
        let times = &watch.recent;
        // The transition's last gap and the one before it (NaN where it has
        // fired fewer times).
        let (gap, previous_gap) = (times[2] - times[1], times[1] - times[0]);
        // A gap counts as shrinking towards an accumulation only if the
        // geometric continuation of the last two gaps (ratio r < 1, the
        // remaining gaps summing to gap r / (1 - r)) ends before t_end:
        // evenly spaced firings (r = 1 up to rounding and the solver's
        // drift) never accumulate, however short their gaps.
        let shrinking = watch.firings >= 3 && {
            let ratio = gap / previous_gap;
            gap <= 0.0 || (ratio < 1.0 && t + gap * ratio / (1.0 - ratio) <= problem.t_end)
        };
        if watch.firings >= 2 && gap < separation && (shrinking || watch.streak == 0) {
            watch.streak += 1;
        } else {
            watch.streak = 0;
        }
        (watch.streak >= options.zeno_run).then(|| {
            format!(
                "{} consecutive gaps between firings of transition '{}' shorter than {} ({} of the run's length), each shrinking towards an accumulation point before t_end",
                watch.streak,
                transitions[transition].name,
                ia_core::short_num(separation),
                ia_core::short_num(options.zeno_separation)
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ia_core::{
        Autodiff, Direction, FlowFn, FromMode, GuardFn, HybridSystem, ResetFn, Scalar, ToMode,
    };
    use proptest::prelude::*;

    struct Still;
    impl FlowFn for Still {
        fn rate<S: Scalar>(&self, _t: S, _x: &[S], _p: &[S], d: &mut [S]) {
            d[0] = S::from(0.0);
        }
    }
    struct At(usize);
    impl GuardFn for At {
        fn direction(&self) -> Direction {
            Direction::Rising
        }
        fn value<S: Scalar>(&self, t: S, _x: &[S], p: &[S]) -> S {
            t - p[self.0]
        }
    }
    struct Same;
    impl ResetFn for Same {
        fn apply<S: Scalar>(&self, _t: S, x: &[S], _p: &[S], a: &mut [S]) {
            a[0] = x[0];
        }
    }

    /// A system of `m` transitions (only their number matters here).
    fn system(m: usize) -> HybridSystem {
        let names: Vec<String> = (0..m).map(|k| format!("p{k}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let mut builder = HybridSystem::builder(&["x"], &names).mode("on", Autodiff(Still));
        for k in 0..m {
            let (from, to) = (FromMode("on"), ToMode("on"));
            let name = format!("fire{k}");
            builder = builder.transition(&name, from, to, Autodiff(At(k)), Autodiff(Same));
        }
        builder.build().unwrap()
    }

    /// The 1-based number of the event at which the watch reports Zeno
    /// over `firings` (transition, time) of a run of `m` transitions from
    /// 0 to 1 with the default options, if it does.
    fn zeno_at(m: usize, firings: &[(usize, f64)]) -> Option<usize> {
        let system = system(m);
        let problem = Problem::new(&system, vec![0.0], vec![0.0; m], 1.0);
        let mut watch = ZenoWatch::new(&problem, Vec::new());
        firings.iter().enumerate().find_map(|(i, &(k, t))| {
            watch
                .after_event(&problem, i + 1, k, t, None)
                .map(|_| i + 1)
        })
    }

    /// `count` times from `start` with gaps `first, first r, first r^2, ...`.
    fn geometric(start: f64, first: f64, r: f64, count: usize) -> Vec<f64> {
        let mut t = start;
        (0..count)
            .map(|i| {
                let now = t;
                t += first * r.powi(i as i32);
                now
            })
            .collect()
    }

    proptest! {
        /// Distinct transitions firing once each, with gaps far below
        /// `zeno_separation * span` and shrinking geometrically, are no
        /// accumulation (the rule that read the gaps between all events
        /// reported one at the fourth).
        #[test]
        fn distinct_transitions_never_accumulate(
            m in 4usize..40,
            first in 1e-12f64..1e-6,
            r in 0.01f64..0.99,
        ) {
            let firings: Vec<(usize, f64)> =
                geometric(0.5, first, r, m).into_iter().enumerate().collect();
            prop_assert_eq!(zeno_at(m, &firings), None);
        }

        /// One transition whose firings accumulate geometrically is caught
        /// at its fourth firing (its third short, shrinking gap: `zeno_run
        /// = 3`), whatever other transitions fire once each in between
        /// (`between[i]` of them after its firing `i`).
        #[test]
        fn an_accumulating_transition_is_caught_among_others(
            first in 1e-9f64..5e-6,
            r in 0.05f64..0.95,
            between in proptest::collection::vec(0usize..4, 4),
        ) {
            let own = geometric(0.5, first, r, 4);
            let others: usize = between.iter().sum();
            let (mut firings, mut next) = (Vec::new(), 1);
            for (i, &t) in own.iter().enumerate() {
                firings.push((0, t));
                let gap = first * r.powi(i as i32);
                for j in 0..between[i] {
                    firings.push((next, t + gap * (j + 1) as f64 / 8.0));
                    next += 1;
                }
            }
            let fourth = 4 + between[..3].iter().sum::<usize>();
            prop_assert_eq!(zeno_at(1 + others, &firings), Some(fourth));
        }
    }

    /// Evenly spaced firings of one transition, however close, and a
    /// chattering pair whose cycle does not shrink, are no accumulation;
    /// the pair whose cycle shrinks is caught at the fourth firing of the
    /// transition whose third short gap comes first.
    #[test]
    fn cycles_accumulate_only_when_they_shrink() {
        let even: Vec<(usize, f64)> = (0..50).map(|i| (0, 0.5 + 1e-7 * i as f64)).collect();
        assert_eq!(zeno_at(1, &even), None);
        let steady: Vec<(usize, f64)> = (0..50).map(|i| (i % 2, 0.5 + 1e-7 * i as f64)).collect();
        assert_eq!(zeno_at(2, &steady), None);
        let shrinking: Vec<(usize, f64)> = geometric(0.5, 1e-6, 0.5, 20)
            .into_iter()
            .enumerate()
            .map(|(i, t)| (i % 2, t))
            .collect();
        // Transition 0 fires at events 1, 3, 5, 7: its third gap ends at 7.
        assert_eq!(zeno_at(2, &shrinking), Some(7));
    }
}
