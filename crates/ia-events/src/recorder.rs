//! The one recorder of a run, whichever engine runs it: the records
//! (segments, events and their states, observations), the Zeno watch,
//! [`Problem::stop_after`](crate::Problem::stop_after) and the progress
//! hook. Every engine calls it in the same order at an event (the reset is
//! applied and checked, the event recorded, then the carried components
//! and the observer are told, then the Zeno rule and `stop_after` are
//! applied), so a run that fails returns the same partial trajectory
//! whichever engine ran it (see the event rules in
//! [`crate::vocabulary`]).

use crate::problem::{EventRecording, Problem, Progress, PROGRESS_EVERY_STEPS};
use crate::reuse::{keep_larger, SpareVecs};
use crate::sized::extend_floats;
use crate::vocabulary::{Observer, RunContext};
use crate::zeno::{TransitionWatch, ZenoWatch};
use ia_core::{EventRecord, HybridError, Observation, Segment, SolverStats, Trajectory};

/// The record lists of recycled trajectories, emptied, the spare vectors
/// records are copied into and the Zeno rule's per-transition watch: kept
/// between runs by a [`Workspace`](crate::Workspace).
#[derive(Debug, Default)]
pub(crate) struct RecordBuffers {
    segments: Vec<Segment>,
    events: Vec<EventRecord>,
    event_states: Vec<f64>,
    observations: Vec<Observation>,
    spare: SpareVecs,
    zeno: Vec<TransitionWatch>,
}

impl RecordBuffers {
    /// Takes back the vectors of `trajectory`: its records' into the spare
    /// vectors, its emptied lists when larger than the kept ones.
    pub(crate) fn recycle(&mut self, trajectory: Trajectory) {
        let Trajectory {
            initial_state,
            final_state,
            segments,
            mut events,
            event_states,
            mut observations,
            ..
        } = trajectory;
        self.spare.give(initial_state);
        self.spare.give(final_state);
        events.clear();
        for observation in observations.drain(..) {
            self.spare.give(observation.state);
        }
        keep_larger(&mut self.segments, segments);
        keep_larger(&mut self.events, events);
        keep_larger(&mut self.event_states, event_states);
        keep_larger(&mut self.observations, observations);
    }
}

/// Trims the recorded events, and their states with them, to what
/// `recording` keeps.
fn trim_events(recording: EventRecording, trajectory: &mut Trajectory, finished: bool) {
    recording.trim(&mut trajectory.events, finished);
    let n = trajectory.initial_state.len();
    recording.trim_flat(&mut trajectory.event_states, 2 * n, finished);
}

/// The records of a run in progress (see the [module documentation](self)).
pub(crate) struct Recorder<'p> {
    problem: &'p Problem<'p>,
    /// The records so far (the final time, state and mode are set by
    /// [`Recorder::snapshot`] and [`Recorder::finish`]).
    trajectory: Trajectory,
    /// Vectors to build records in (see [`crate::Workspace::recycle`]).
    spare: SpareVecs,
    segment_start: f64,
    segment_steps: usize,
    next_observation: usize,
    zeno: ZenoWatch,
    /// Firings so far of [`Problem::stop_after`]'s transition.
    stop_firings: usize,
    /// The work count (steps or events) at which the progress hook is told
    /// next.
    next_progress: usize,
}

impl<'p> Recorder<'p> {
    /// The records of a run of `problem`, built in the vectors of `records`.
    pub(crate) fn new(problem: &'p Problem<'p>, records: &mut RecordBuffers) -> Self {
        let b = records;
        let mut spare = std::mem::take(&mut b.spare);
        let trajectory = Trajectory {
            initial_time: problem.t0,
            initial_state: spare.copy_of(&problem.initial_state),
            segments: std::mem::take(&mut b.segments),
            events: std::mem::take(&mut b.events),
            event_states: std::mem::take(&mut b.event_states),
            observations: std::mem::take(&mut b.observations),
            final_time: problem.t0,
            final_state: Vec::new(),
            final_mode: problem.initial_mode,
            stats: SolverStats::default(),
        };
        Self {
            problem,
            trajectory,
            spare,
            segment_start: problem.t0,
            segment_steps: 0,
            next_observation: 0,
            zeno: ZenoWatch::new(problem, std::mem::take(&mut b.zeno)),
            stop_firings: 0,
            next_progress: PROGRESS_EVERY_STEPS,
        }
    }

    /// Gives the vectors back to `records` (the records of a finished run
    /// stay with its trajectory; after an error, what the run recorded is
    /// kept for the next).
    pub(crate) fn release(self, records: &mut RecordBuffers) {
        records.spare = self.spare;
        records.zeno = self.zeno.release();
        records.recycle(self.trajectory);
    }

    /// The counts so far (steps, events, root iterations).
    pub(crate) fn stats(&self) -> SolverStats {
        self.trajectory.stats
    }

    /// Counts `evaluations` more guard evaluations of event location.
    pub(crate) fn count_root_iterations(&mut self, evaluations: usize) {
        self.trajectory.stats.root_iterations += evaluations;
    }

    /// Counts an accepted step of the current segment.
    pub(crate) fn step_taken(&mut self) {
        self.segment_steps += 1;
        self.trajectory.stats.steps += 1;
    }

    /// The time of the next observation, if one is left.
    pub(crate) fn next_observation_time(&self) -> Option<f64> {
        self.problem
            .observation_times
            .get(self.next_observation)
            .copied()
    }

    /// Records the next observation (at [`Recorder::next_observation_time`])
    /// with the state `y[..n]` (`y` holds the carried components after it)
    /// in mode `mode`, and shows it to `observer`.
    pub(crate) fn observe<O: Observer>(
        &mut self,
        observer: &mut O,
        run: RunContext<'_>,
        mode: usize,
        y: &[f64],
        n: usize,
    ) {
        let index = self.next_observation;
        let time = self.problem.observation_times[index];
        self.trajectory.observations.push(Observation {
            time,
            mode,
            state: self.spare.copy_of(&y[..n]),
        });
        observer.observed(run, index, time, y);
        self.next_observation += 1;
    }

    /// Ends the current segment, in `mode`, at `t`.
    pub(crate) fn close_segment(&mut self, t: f64, mode: usize) {
        let recording = self.problem.events.record;
        if recording.keeps_any() {
            self.trajectory.segments.push(Segment {
                mode,
                start_time: self.segment_start,
                end_time: t,
                steps: self.segment_steps,
            });
            recording.trim(&mut self.trajectory.segments, false);
        }
        self.segment_start = t;
        self.segment_steps = 0;
    }

    /// The index the next event gets (the events so far).
    pub(crate) fn next_event_index(&self) -> usize {
        self.trajectory.stats.events
    }

    /// Records `event` (its index is [`Recorder::next_event_index`]) with
    /// the states before and after its reset (unless the problem's event
    /// options keep no states: then they are not read), closing the segment
    /// that ends at it.
    pub(crate) fn record_event(
        &mut self,
        event: EventRecord,
        state_before: &[f64],
        state_after: &[f64],
    ) {
        debug_assert_eq!(event.index, self.trajectory.stats.events);
        self.close_segment(event.time, event.from_mode);
        let recording = self.problem.events.record;
        if recording.keeps_any() && !self.problem.events.event_states {
            self.trajectory.events.push(event);
            recording.trim(&mut self.trajectory.events, false);
        } else if recording.keeps_any() {
            self.trajectory.events.push(event);
            let states = &mut self.trajectory.event_states;
            // Room for as many events as the records have: the states grow
            // in step with them, not by doubling on their own.
            let room = self.trajectory.events.capacity() * 2 * state_before.len();
            if states.capacity() < room {
                states.reserve_exact(room - states.len());
            }
            extend_floats(states, state_before);
            extend_floats(states, state_after);
            trim_events(recording, &mut self.trajectory, false);
        }
        self.trajectory.stats.events += 1;
    }

    /// After the event just recorded (transition `transition` at `t`, of the
    /// cascade of event `cascade_of` if it is one) has been shown to its
    /// consumers: the Zeno rule ([`crate::zeno`]), whose error carries the
    /// trajectory so far ending at the state after the reset `x_after` in
    /// the mode after it `mode_after` (with the engine's counts `stats`),
    /// and [`Problem::stop_after`]: returns whether the run ends here.
    pub(crate) fn after_event(
        &mut self,
        t: f64,
        transition: usize,
        cascade_of: Option<usize>,
        x_after: &[f64],
        mode_after: usize,
        stats: impl FnOnce(SolverStats) -> SolverStats,
    ) -> Result<bool, HybridError> {
        let count = self.trajectory.stats.events;
        if let Some(reason) = self
            .zeno
            .after_event(self.problem, count, transition, t, cascade_of)
        {
            let stats = stats(self.trajectory.stats);
            return Err(HybridError::Zeno {
                reason,
                last_event_time: t,
                trajectory: Box::new(self.snapshot(t, x_after, mode_after, stats)),
            });
        }
        Ok(match self.problem.stop_after {
            Some(stop) if stop.transition == transition => {
                self.stop_firings += 1;
                self.stop_firings == stop.firings
            }
            _ => false,
        })
    }

    /// Tells the progress hook, if there is one, how far the run has got
    /// (at `time`) whenever the engine's count of work `work` (accepted
    /// steps, or events for the exact solver, which takes no steps) has
    /// grown by another [`PROGRESS_EVERY_STEPS`].
    pub(crate) fn progress(&mut self, time: f64, work: usize) {
        let Some(hook) = self.problem.progress else {
            return;
        };
        if work >= self.next_progress {
            self.next_progress = work + PROGRESS_EVERY_STEPS;
            (hook.0)(&Progress {
                t0: self.problem.t0,
                time,
                t_end: self.problem.t_end,
                steps: self.trajectory.stats.steps,
                events: self.trajectory.stats.events,
            });
        }
    }

    /// The trajectory so far, ending at `(t, x)` in `mode`, with the
    /// engine's counts `stats`: what an error carries.
    pub(crate) fn snapshot(
        &self,
        t: f64,
        x: &[f64],
        mode: usize,
        stats: SolverStats,
    ) -> Trajectory {
        let mut trajectory = self.trajectory.clone();
        trajectory.final_time = t;
        trajectory.final_state = x.to_vec();
        trajectory.final_mode = mode;
        trajectory.stats = stats;
        trajectory
    }

    /// The finished trajectory, ending at `(t, x)` in `mode`, with the
    /// engine's counts `stats`. The last segment is closed unless it is
    /// empty after an event (a terminal transition, or `stop_after`).
    pub(crate) fn finish(
        &mut self,
        t: f64,
        x: &[f64],
        mode: usize,
        stats: SolverStats,
    ) -> Trajectory {
        if self.segment_start < t || self.trajectory.stats.events == 0 {
            self.close_segment(t, mode);
        }
        let recording = self.problem.events.record;
        recording.trim(&mut self.trajectory.segments, true);
        trim_events(recording, &mut self.trajectory, true);
        Trajectory {
            segments: std::mem::take(&mut self.trajectory.segments),
            events: std::mem::take(&mut self.trajectory.events),
            event_states: std::mem::take(&mut self.trajectory.event_states),
            observations: std::mem::take(&mut self.trajectory.observations),
            initial_state: std::mem::take(&mut self.trajectory.initial_state),
            initial_time: self.trajectory.initial_time,
            final_time: t,
            final_state: self.spare.copy_of(x),
            final_mode: mode,
            stats,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{simulate, EventOptions, Problem, SolverChoice};
    use ia_core::{HybridError, Trajectory};
    use rstest::rstest;

    /// The partial trajectory a run of the thermostat (a decoupled linear
    /// flow with threshold guards, which both engines run) returns when it
    /// fails after `max_events` switches, with observations before it.
    fn failed(solver: SolverChoice, max_events: usize) -> Trajectory {
        let model = ia_models::by_name("thermostat").unwrap();
        let (system, spec) = (model.system(), model.spec());
        let problem = Problem::new(
            &system,
            spec.default_state(),
            spec.default_params(),
            spec.t_end,
        )
        .with_mode(&spec.initial_mode)
        .unwrap()
        .with_solver(solver)
        .with_observations(vec![0.5, 2.0, 4.0])
        .with_event_options(EventOptions {
            max_events,
            ..EventOptions::default()
        });
        match simulate(&problem) {
            Err(HybridError::Zeno { trajectory, .. }) => *trajectory,
            other => panic!("expected a failed run, got {other:?}"),
        }
    }

    /// Reference: the exact solver's closed form (event times exact to
    /// rounding); DOPRI5 at `1e-12` agrees with it to `1e-9`. A failed run
    /// (more than `max_events` events) returns the same partial trajectory
    /// from either engine: the same events, segments and observations, and
    /// the same end (the state after the last reset, in the mode it
    /// switched to). Before the one recorder, the Runge-Kutta engine ended
    /// in the mode before the last event.
    #[rstest]
    #[case::after_two(1)]
    #[case::after_three(2)]
    #[case::after_seven(6)]
    fn a_failed_run_returns_the_same_partial_trajectory_from_every_engine(
        #[case] max_events: usize,
    ) {
        let exact = failed(SolverChoice::Exact, max_events);
        let stepped = failed(SolverChoice::dopri5(1e-12), max_events);
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * (1.0 + a.abs());
        let close_all = |a: &[f64], b: &[f64]| {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| close(*a, *b))
        };
        assert_eq!(exact.events.len(), max_events + 1);
        assert_eq!(stepped.events.len(), exact.events.len());
        for (a, b) in exact.events.iter().zip(&stepped.events) {
            assert_eq!(
                (a.index, a.transition, a.from_mode, a.to_mode, a.cascade_of),
                (b.index, b.transition, b.from_mode, b.to_mode, b.cascade_of)
            );
            assert!(close(a.time, b.time), "{} vs {}", a.time, b.time);
        }
        assert!(close_all(&exact.event_states, &stepped.event_states));
        assert_eq!(exact.segments.len(), stepped.segments.len());
        for (a, b) in exact.segments.iter().zip(&stepped.segments) {
            assert_eq!(a.mode, b.mode);
            assert!(close(a.start_time, b.start_time) && close(a.end_time, b.end_time));
        }
        assert_eq!(exact.observations.len(), stepped.observations.len());
        for (a, b) in exact.observations.iter().zip(&stepped.observations) {
            assert_eq!((a.time, a.mode), (b.time, b.mode));
            assert!(close_all(&a.state, &b.state));
        }
        assert_eq!(exact.final_mode, stepped.final_mode);
        assert_eq!(exact.final_mode, exact.events.last().unwrap().to_mode);
        assert!(close(exact.final_time, stepped.final_time));
        assert!(close_all(&exact.final_state, &stepped.final_state));
        assert_eq!(
            exact.final_state,
            exact.state_after(exact.events.len() - 1),
            "the state after the last reset"
        );
    }
}
