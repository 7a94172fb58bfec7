//! Reverse mode: the discrete adjoint of the steps the forward pass took.
//!
//! The forward pass stores, for every accepted step, its start time, size
//! and (see checkpointing below) start state, and for every event its
//! transition, time, cascade root, state before the reset, time shift
//! (by its nonzero entries for a system of 16 states or more) and
//! guard partials. The backward pass walks
//! the tape in reverse: each Runge-Kutta step's stages are recomputed from
//! its start state and the step is transposed exactly (the step size held
//! fixed), each event applies `lambda- = Xi^T lambda+` and
//! `dL/dp += xi_p^T lambda+`, and a loss that reads event times adds
//! `-(dL/dt*) g_x / gdot` to `lambda-` and `-(dL/dt*) g_p / gdot` to `dL/dp`.
//!
//! Because it transposes the same linear maps the forward sensitivity
//! applies, the adjoint agrees with forward sensitivities computed on the
//! same steps to rounding.
//!
//! **Checkpointing** ([`AdjointOptions::checkpoints`]) bounds the tape: it
//! keeps the start state of at most about `2 K` steps (every step at first,
//! then every second, fourth, ... as the run grows), and the backward pass
//! replays the steps between two kept states from the earlier one with the
//! same method object ([`ButcherTableau::stages`] and
//! [`ButcherTableau::solution`]), taking each event's state after from its
//! record. The replayed states are the stepped ones to the last bit, so the
//! gradient is the full tape's exactly. The replay keeps each step's stage
//! states (`s n` floats for each step of the segment being replayed) for
//! the backward step, which would otherwise form them again: a replayed
//! step costs the same rate evaluations as a kept one. The per-step entries
//! stay on the tape: 16 bytes a step (start time and size; the mode and
//! whether its state is kept are derived) against `8 n` for a kept state.
//!
//! It is on by default with a bound that small runs never reach
//! ([`AUTOMATIC_CHECKPOINT_FLOATS`]): they keep every step's state and
//! replay nothing, while a run of millions of steps stays within tens of
//! megabytes of kept states.

use crate::saltation::{EventAt, SaltationWorkspace};
use ia_core::{FlowPartials, HybridError, HybridSystem, Trajectory};
use ia_events::{ButcherTableau, EventJump, Observer, RunContext, SpareVecs};

/// With [`AdjointOptions::checkpoints`] left `None`, the tape keeps
/// `K = AUTOMATIC_CHECKPOINT_FLOATS / n` states of `n` floats (so between 16
/// and 32 MB of them): every step's state for all but runs of more than
/// 2^21 / n steps.
pub const AUTOMATIC_CHECKPOINT_FLOATS: usize = 1 << 21;

/// The largest `K` a tape takes: kept states are numbered in 32 bits.
const MAX_CHECKPOINTS: usize = 1 << 30;

/// The backward pass checks the parameters' cotangent for overflow once
/// per this many tape entries (and at the start of the tape, its last
/// entry walked).
const PARAM_CHECK_EVERY: usize = 64;

/// Options of the reverse pass.
///
/// ```
/// use ia_adjoint::AdjointOptions;
/// let bounded = AdjointOptions { checkpoints: Some(1000) };
/// assert_eq!(AdjointOptions::default().checkpoints, None); // automatic
/// # let _ = bounded;
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AdjointOptions {
    /// Keep the start states of about `K` to `2 K` steps only and replay the
    /// others (see the [module documentation](self)); `None` chooses `K` from
    /// the state dimension, [`AUTOMATIC_CHECKPOINT_FLOATS`] `/ n`, and
    /// `Some(usize::MAX)` keeps every step's state (at most 2^31 of them).
    pub checkpoints: Option<usize>,
}

/// How the forward pass went from one entry of the tape to the next, and so
/// what the backward pass transposes.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Stepping {
    /// The Runge-Kutta steps of this method (the step size held fixed).
    RungeKutta(&'static ButcherTableau),
    /// The exact solver's closed-form stretches of a decoupled linear flow
    /// ([`ia_events::exact`]).
    Exact,
}

impl Stepping {
    /// The floats of a step's stages the backward pass reads, per state
    /// entry: the stage states of a Runge-Kutta step, the start state of a
    /// stretch.
    fn stages(self) -> usize {
        match self {
            Stepping::RungeKutta(tableau) => tableau.solution_stages(),
            Stepping::Exact => 1,
        }
    }
}

/// One entry of the forward tape, in forward order, as the passes read it.
/// A step's mode and whether its start state is kept are not stored: the
/// mode changes only at events (the transition's target), and with one kept
/// state every `stride` steps, step number `m` is kept state `m / stride`
/// when `m` is a multiple of it.
#[derive(Clone, Copy, Debug)]
enum TapeEntry {
    /// An accepted step from `t0` of size `h`.
    Step { t0: f64, h: f64 },
    /// Event `index` of the run (its data in [`Tape::events`]).
    Event { index: usize },
    /// Observation `index`.
    Observation { index: usize },
}

/// A [`TapeEntry`] in 16 bytes: a long run tapes millions of steps, and this
/// is most of the tape's memory. A step is its `(t0, h)`; an event or an
/// observation has a NaN `h` with a payload naming which (a step's size is
/// never NaN: the integrator ends a run on a non-finite value) and its
/// index in the bits of `t0`.
#[derive(Clone, Copy, Debug)]
struct PackedEntry {
    t0: f64,
    h: f64,
}

impl PackedEntry {
    const EVENT: u64 = 0x7ff8_0000_0000_0e0e;
    const OBSERVATION: u64 = 0x7ff8_0000_0000_0b0b;

    fn pack(entry: TapeEntry) -> Self {
        let marker = |tag: u64, index: usize| Self {
            t0: f64::from_bits(index as u64),
            h: f64::from_bits(tag),
        };
        match entry {
            TapeEntry::Step { t0, h } => Self { t0, h },
            TapeEntry::Event { index } => marker(Self::EVENT, index),
            TapeEntry::Observation { index } => marker(Self::OBSERVATION, index),
        }
    }

    fn unpack(self) -> TapeEntry {
        let index = self.t0.to_bits() as usize;
        match self.h.to_bits() {
            Self::EVENT => TapeEntry::Event { index },
            Self::OBSERVATION => TapeEntry::Observation { index },
            _ => TapeEntry::Step {
                t0: self.t0,
                h: self.h,
            },
        }
    }
}

/// What the backward pass needs of one event, with its state before the
/// reset in [`Tape::event_states`], its time shift in
/// [`Tape::shift_values`] (and [`Tape::shift_entries`]) and the guard's
/// partials in [`Tape::guard_terms`]: the event's geometry as the
/// integrator formed it, kept, not formed again.
#[derive(Clone, Copy, Debug)]
struct TapeEvent {
    time: f64,
    /// `gdot = g_x f- + g_t`.
    guard_rate: f64,
    transition: u32,
    /// The located event that started its cascade, or [`TapeEvent::LOCATED`].
    cascade_of: u32,
    /// Steps taken before it.
    steps_before: u64,
}

impl TapeEvent {
    const LOCATED: u32 = u32::MAX;
}

/// Where a backward pass starts: a tape position and the number of steps
/// taped before it (ordered by position).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Cursor {
    position: usize,
    steps: usize,
}

/// An index that fits the tape's 32-bit fields (a transition, the event
/// that started a cascade).
/// From this many states on, the tape keeps each event's time shift by its
/// nonzero entries (12 bytes each) rather than whole (8 bytes an entry):
/// worth it once a reset leaves most of the state's rates alone.
const SPARSE_SHIFT_STATES: usize = 16;

fn narrow(index: usize, what: &str) -> Result<u32, HybridError> {
    u32::try_from(index)
        .ok()
        .filter(|&i| i < TapeEvent::LOCATED)
        .ok_or_else(|| {
            HybridError::Unsupported(format!(
                "the adjoint's tape numbers transitions and events in 32 bits; {what} {index} is past that (shorten the run)"
            ))
        })
}

/// Records the forward pass (an [`Observer`] of the run).
pub(crate) struct Tape {
    entries: Vec<PackedEntry>,
    /// The kept start states, `n` floats each: step number `m` is kept
    /// state `m / stride` when `m` is a multiple of `stride`.
    states: Vec<f64>,
    /// `K` as asked, or `None` for the automatic one (known once the state
    /// dimension is): at most `2 K` kept states.
    checkpoints: Option<usize>,
    stride: usize,
    steps: usize,
    /// The mode of the first step.
    first_mode: usize,
    /// Every event of the run, by index, whatever its trajectory records
    /// ([`ia_events::EventRecording`]): what the backward pass transposes.
    events: Vec<TapeEvent>,
    /// Each event's state before the reset, `n` floats an event.
    event_states: Vec<f64>,
    /// Each event's time shift `w = f+ - r_x f- - r_t`: all `n` entries
    /// for a small system; from [`SPARSE_SHIFT_STATES`] states on, its
    /// nonzero entries only (their indices in [`Tape::shift_entries`], each
    /// event's first at [`Tape::shift_starts`]). A reset that changes a few
    /// entries of a large state shifts only those (and the rates that read
    /// them): a network's events keep a few hundred numbers, not `n`.
    shift_values: Vec<f64>,
    /// The indices of [`Tape::shift_values`] (large systems only).
    shift_entries: Vec<u32>,
    /// Where each event's entries start (large systems only).
    shift_starts: Vec<usize>,
    /// Each located event's guard partials `g_x`, `g_p` over what the guard
    /// reads ([`guard_term_count`] floats; none for an event of a cascade,
    /// whose guard plays no part).
    guard_terms: Vec<f64>,
    /// Where each event's entry is in `entries`, by event index.
    event_positions: Vec<usize>,
    /// Where each observation's entry is in `entries`, and the steps before
    /// it, by observation index.
    observation_cursors: Vec<Cursor>,
}

impl Default for Tape {
    /// The tape with the default (automatic) checkpointing.
    fn default() -> Self {
        Self::new(&AdjointOptions::default())
    }
}

impl Observer for Tape {
    fn step_taken(&mut self, _run: RunContext<'_>, mode: usize, t0: f64, h: f64, y0: &[f64]) {
        if self.steps == 0 {
            self.first_mode = mode;
        }
        let keep = self.steps % self.stride == 0;
        self.steps += 1;
        self.entries
            .push(PackedEntry::pack(TapeEntry::Step { t0, h }));
        if keep {
            self.states.extend_from_slice(y0);
            self.thin(y0.len());
        }
    }

    /// A stretch of the exact solver is its step: the same entry, read back
    /// by a pass that knows the run's stepping ([`Stepping::Exact`]).
    fn stretch_taken(&mut self, run: RunContext<'_>, mode: usize, t0: f64, s: f64, x0: &[f64]) {
        self.step_taken(run, mode, t0, s, x0);
    }

    fn wants_event_geometry(&self) -> bool {
        true
    }

    fn event(&mut self, run: RunContext<'_>, jump: &EventJump<'_>) -> Result<(), HybridError> {
        debug_assert_eq!(jump.index, self.events.len(), "events arrive in order");
        let geometry = jump
            .geometry
            .expect("the integrator forms the geometry the tape asks for");
        self.event_positions.push(self.entries.len());
        self.entries
            .push(PackedEntry::pack(TapeEntry::Event { index: jump.index }));
        self.events.push(TapeEvent {
            time: jump.time,
            guard_rate: geometry.guard_rate,
            transition: narrow(jump.transition, "transition")?,
            cascade_of: match jump.cascade_of {
                Some(root) => narrow(root, "event")?,
                None => TapeEvent::LOCATED,
            },
            steps_before: self.steps as u64,
        });
        self.event_states.extend_from_slice(jump.state_before);
        let n = jump.state_before.len();
        if n < SPARSE_SHIFT_STATES {
            self.shift_values
                .extend_from_slice(geometry.time_shift.as_slice());
        } else {
            narrow(n, "state dimension")?;
            self.shift_starts.push(self.shift_values.len());
            for (i, &w) in geometry.time_shift.iter().enumerate() {
                if w != 0.0 {
                    self.shift_entries.push(i as u32);
                    self.shift_values.push(w);
                }
            }
        }
        if jump.cascade_of.is_none() {
            let (gx, gp) = (&geometry.guard.x, &geometry.guard.p);
            match run.system.transitions()[jump.transition].guard.support() {
                Some(read) => {
                    self.guard_terms.extend(read.states.iter().map(|&i| gx[i]));
                    self.guard_terms.extend(read.params.iter().map(|&j| gp[j]));
                }
                None => {
                    self.guard_terms.extend_from_slice(gx.as_slice());
                    self.guard_terms.extend_from_slice(gp.as_slice());
                }
            }
        }
        Ok(())
    }

    fn observed(&mut self, _run: RunContext<'_>, index: usize, _time: f64, _y: &[f64]) {
        debug_assert_eq!(index, self.observation_cursors.len(), "in order");
        self.observation_cursors.push(Cursor {
            position: self.entries.len() + 1,
            steps: self.steps,
        });
        self.entries
            .push(PackedEntry::pack(TapeEntry::Observation { index }));
    }
}

impl Tape {
    /// The bytes its buffers hold on the heap (what keeping it costs).
    pub(crate) fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        self.entries.capacity() * size_of::<PackedEntry>()
            + (self.states.capacity()
                + self.event_states.capacity()
                + self.shift_values.capacity()
                + self.guard_terms.capacity())
                * size_of::<f64>()
            + self.shift_entries.capacity() * size_of::<u32>()
            + self.shift_starts.capacity() * size_of::<usize>()
            + self.events.capacity() * size_of::<TapeEvent>()
            + self.event_positions.capacity() * size_of::<usize>()
            + self.observation_cursors.capacity() * size_of::<Cursor>()
    }

    /// A tape with the given options.
    pub(crate) fn new(options: &AdjointOptions) -> Self {
        Self {
            entries: Vec::new(),
            states: Vec::new(),
            checkpoints: options.checkpoints.map(|k| k.clamp(1, MAX_CHECKPOINTS)),
            stride: 1,
            steps: 0,
            first_mode: 0,
            events: Vec::new(),
            event_states: Vec::new(),
            shift_values: Vec::new(),
            shift_entries: Vec::new(),
            shift_starts: Vec::new(),
            guard_terms: Vec::new(),
            event_positions: Vec::new(),
            observation_cursors: Vec::new(),
        }
    }

    /// This tape emptied and set to `options`, keeping its buffers (for a
    /// new run).
    pub(crate) fn renew(mut self, options: &AdjointOptions) -> Self {
        self.entries.clear();
        self.states.clear();
        self.events.clear();
        self.event_states.clear();
        self.shift_values.clear();
        self.shift_entries.clear();
        self.shift_starts.clear();
        self.guard_terms.clear();
        self.event_positions.clear();
        self.observation_cursors.clear();
        Self {
            entries: self.entries,
            states: self.states,
            events: self.events,
            event_states: self.event_states,
            shift_values: self.shift_values,
            shift_entries: self.shift_entries,
            shift_starts: self.shift_starts,
            guard_terms: self.guard_terms,
            event_positions: self.event_positions,
            observation_cursors: self.observation_cursors,
            ..Self::new(options)
        }
    }

    /// With more than `2 K` kept states, keeps every second one (those of
    /// the steps at multiples of twice the stride) and doubles the stride.
    fn thin(&mut self, n: usize) {
        let k = self
            .checkpoints
            .unwrap_or(AUTOMATIC_CHECKPOINT_FLOATS / n.max(1))
            .max(1);
        if self.states.len() <= 2 * k * n {
            return;
        }
        let kept = self.states.len() / n;
        for slot in 0..kept.div_ceil(2) {
            self.states
                .copy_within(2 * slot * n..(2 * slot + 1) * n, slot * n);
        }
        self.states.truncate(kept.div_ceil(2) * n);
        self.stride *= 2;
    }

    /// The kept start state of step number `step`, if it is kept.
    fn kept_state(&self, step: usize, n: usize) -> Option<&[f64]> {
        (step % self.stride == 0).then(|| {
            let at = step / self.stride * n;
            &self.states[at..at + n]
        })
    }

    /// Number of floats held (the memory of the reverse pass).
    pub(crate) fn stored_floats(&self) -> usize {
        self.states.len()
            + 2 * self.entries.len()
            + self.event_states.len()
            + self.shift_values.len()
            + self.shift_entries.len().div_ceil(2)
            + self.shift_starts.len()
            + self.guard_terms.len()
            + 4 * self.events.len()
    }

    /// Event `index` of a system with `n` states, its guard partials at
    /// `guard_terms[guard_start..]`.
    fn event(&self, index: usize, n: usize, guard_start: usize) -> TapedEvent<'_> {
        let e = self.events[index];
        let (shift_entries, shift_values) = if n < SPARSE_SHIFT_STATES {
            (&[][..], &self.shift_values[n * index..n * (index + 1)])
        } else {
            let start = self.shift_starts[index];
            let end = self
                .shift_starts
                .get(index + 1)
                .map_or(self.shift_values.len(), |&next| next);
            (
                &self.shift_entries[start..end],
                &self.shift_values[start..end],
            )
        };
        let cascade_of = (e.cascade_of != TapeEvent::LOCATED).then_some(e.cascade_of as usize);
        TapedEvent {
            transition: e.transition as usize,
            time: e.time,
            state_before: &self.event_states[n * index..n * (index + 1)],
            shift_entries,
            shift_values,
            guard_rate: e.guard_rate,
            guard_terms: &self.guard_terms[guard_start..],
            cascade_of,
        }
    }

    /// Number of guard-partial floats kept for event `index`.
    fn guard_term_count(&self, system: &HybridSystem, index: usize) -> usize {
        let e = self.events[index];
        if e.cascade_of != TapeEvent::LOCATED {
            return 0;
        }
        guard_term_count(system, e.transition as usize)
    }

    /// Where the guard partials of the events before tape `position` end.
    fn guard_terms_before(&self, system: &HybridSystem, position: usize) -> usize {
        let events = self.event_positions.partition_point(|&p| p < position);
        (0..events).map(|k| self.guard_term_count(system, k)).sum()
    }

    /// The mode of the steps just before tape `position`: the target of the
    /// last event before it, or the first step's.
    fn mode_before(&self, system: &HybridSystem, position: usize) -> usize {
        match self.event_positions.partition_point(|&p| p < position) {
            0 => self.first_mode,
            k => system.transitions()[self.events[k - 1].transition as usize].to,
        }
    }

    /// Where the backward pass of a row seeding event `k` alone starts: just
    /// after that event's entry (the steps after it do not move its time).
    /// The whole tape if the event is not on it.
    pub(crate) fn event_end(&self, k: usize) -> Cursor {
        match (self.event_positions.get(k), self.events.get(k)) {
            (Some(&p), Some(e)) => Cursor {
                position: p + 1,
                steps: e.steps_before as usize,
            },
            _ => self.end(),
        }
    }

    /// Where the backward pass of a row seeding observation `k` alone
    /// starts: just after that observation's entry.
    pub(crate) fn observation_end(&self, k: usize) -> Cursor {
        self.observation_cursors
            .get(k)
            .copied()
            .unwrap_or_else(|| self.end())
    }

    /// The whole tape: where a pass that seeds the final state starts.
    pub(crate) fn end(&self) -> Cursor {
        Cursor {
            position: self.entries.len(),
            steps: self.steps,
        }
    }
}

/// A taped event as the backward pass reads it.
#[derive(Clone, Copy, Debug)]
struct TapedEvent<'t> {
    transition: usize,
    time: f64,
    state_before: &'t [f64],
    /// The time shift: every entry when `shift_entries` is empty, else the
    /// values of those entries (the others are zero).
    shift_entries: &'t [u32],
    shift_values: &'t [f64],
    guard_rate: f64,
    /// From the event's guard partials on (over the guard's support, states
    /// then parameters; or all of `g_x` then all of `g_p`).
    guard_terms: &'t [f64],
    cascade_of: Option<usize>,
}

impl<'t> TapedEvent<'t> {
    /// The event for the reset's products, which read its transition, time
    /// and state before.
    fn at(&self) -> EventAt<'t> {
        EventAt {
            transition: self.transition,
            time: self.time,
            state_before: self.state_before,
            state_after: &[],
            cascade_of: self.cascade_of,
        }
    }
}

/// Floats of a located event's guard partials on the tape: those the guard
/// reads, or every one.
fn guard_term_count(system: &HybridSystem, transition: usize) -> usize {
    match system.transitions()[transition].guard.support() {
        Some(read) => read.states.len() + read.params.len(),
        None => system.state_dim() + system.param_dim(),
    }
}

/// Cotangents of a scalar loss with respect to what it reads: the final
/// state, the states at observation times and the event times.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LossSeeds {
    /// `dL/dx(T)`, n entries.
    pub final_state: Vec<f64>,
    /// `dL/dx(t_obs)`, one vector of n per observation.
    pub observations: Vec<Vec<f64>>,
    /// `dL/dt*`, one per event.
    pub event_times: Vec<f64>,
}

impl LossSeeds {
    /// Zero seeds shaped for `trajectory`.
    pub fn zeros(trajectory: &Trajectory) -> Self {
        let n = trajectory.final_state.len();
        Self {
            final_state: vec![0.0; n],
            observations: vec![vec![0.0; n]; trajectory.observations.len()],
            event_times: vec![0.0; trajectory.events.len()],
        }
    }
}

/// Buffers of the backward pass.
pub(crate) struct Backward<'a> {
    system: &'a HybridSystem,
    params: &'a [f64],
    stepping: Stepping,
    /// With [`Stepping::Exact`], each mode's `a` then `b` of
    /// `x' = a x + b` (`2 n` floats a mode).
    linear: Vec<f64>,
    n: usize,
    /// The flow's dense partials, for a flow without vector-Jacobian
    /// products: formed on first use (`n (n + n_p)` floats, 96 MB for a
    /// network of 1,000 neurons and its 11,003 parameters).
    partials: Option<FlowPartials>,
    saltation: SaltationWorkspace,
    vectors: BackwardVectors,
    /// Checkpointing: the tape position of the first step whose stage
    /// states `vectors.replay` holds.
    replay_from: usize,
}

/// The buffers of a [`Backward`] pass, kept between passes by a
/// [`crate::Workspace`].
#[derive(Default)]
pub(crate) struct BackwardBuffers {
    partials: Option<FlowPartials>,
    saltation: Option<SaltationWorkspace>,
    vectors: BackwardVectors,
    linear: Vec<f64>,
}

/// The vectors of a backward pass.
#[derive(Default)]
struct BackwardVectors {
    stages: Vec<f64>,
    stage_states: Vec<f64>,
    stage_bars: Vec<f64>,
    state_bar: Vec<f64>,
    scratch: Vec<f64>,
    /// `(i, g_x[i])` over the guard's support at the event being transposed.
    guard_terms: Vec<(usize, f64)>,
    /// Checkpointing: the stage states of each step of the segment being
    /// walked back through (`s n` floats per tape entry, zeros for events
    /// and observations).
    replay: Vec<f64>,
    replay_state: Vec<f64>,
    replay_next: Vec<f64>,
    /// Vectors of results given back, for the gradients to come.
    results: SpareVecs,
}

impl BackwardBuffers {
    /// The bytes of the checkpointing replay buffer, the one of these that
    /// grows with the run (the others are a few vectors of `n` or `s n`).
    pub(crate) fn replay_bytes(&self) -> usize {
        self.vectors.replay.capacity() * std::mem::size_of::<f64>()
    }

    /// Keeps `v`, a returned gradient's vector, for the next gradients.
    pub(crate) fn give_result(&mut self, v: Vec<f64>) {
        self.vectors.results.give(v);
    }
}

impl BackwardVectors {
    /// Ready for a pass of `n` states through a method of `s` stages.
    fn prepare(self, s: usize, n: usize) -> Self {
        use ia_events::workspace::refill;
        let mut guard_terms = self.guard_terms;
        guard_terms.clear();
        guard_terms.reserve(n);
        Self {
            stages: refill(self.stages, s * n, 0.0),
            stage_states: refill(self.stage_states, s * n, 0.0),
            stage_bars: refill(self.stage_bars, s * n, 0.0),
            state_bar: refill(self.state_bar, n, 0.0),
            scratch: refill(self.scratch, n, 0.0),
            guard_terms,
            replay: refill(self.replay, 0, 0.0),
            replay_state: refill(self.replay_state, 0, 0.0),
            replay_next: refill(self.replay_next, 0, 0.0),
            results: self.results,
        }
    }
}

impl<'a> Backward<'a> {
    #[cfg(test)]
    pub(crate) fn new(
        system: &'a HybridSystem,
        params: &'a [f64],
        tableau: &'static ButcherTableau,
    ) -> Self {
        Self::new_in(
            system,
            params,
            Stepping::RungeKutta(tableau),
            &mut BackwardBuffers::default(),
        )
    }

    /// [`Backward::new`] in the buffers of `kept` (taken from it; give them
    /// back with [`Backward::release`]). Nothing of an earlier pass is
    /// remembered.
    pub(crate) fn new_in(
        system: &'a HybridSystem,
        params: &'a [f64],
        stepping: Stepping,
        kept: &mut BackwardBuffers,
    ) -> Self {
        use std::mem::take;
        let (n, np) = (system.state_dim(), system.param_dim());
        let s = stepping.stages();
        let mut linear = take(&mut kept.linear);
        linear.clear();
        if let Stepping::Exact = stepping {
            // The forward run checked that every mode declares its form.
            linear.resize(2 * n * system.modes().len(), 0.0);
            for (mode, ab) in system.modes().iter().zip(linear.chunks_exact_mut(2 * n)) {
                let (a, b) = ab.split_at_mut(n);
                let declared = mode.flow.decoupled_linear(params, a, b);
                debug_assert!(declared, "the exact run checked every mode");
            }
        }
        let partials = kept
            .partials
            .take()
            .filter(|p| p.x.nrows() == n && p.p.ncols() == np);
        let saltation = match kept.saltation.take() {
            Some(mut w) if w.dims() == (n, np) => {
                w.forget();
                w
            }
            _ => SaltationWorkspace::new(n, np),
        };
        Self {
            system,
            params,
            stepping,
            linear,
            n,
            partials,
            saltation,
            vectors: take(&mut kept.vectors).prepare(s, n),
            replay_from: 0,
        }
    }

    /// Gives the buffers back to `kept`.
    pub(crate) fn release(self, kept: &mut BackwardBuffers) {
        *kept = BackwardBuffers {
            partials: self.partials,
            saltation: Some(self.saltation),
            vectors: self.vectors,
            linear: self.linear,
        };
    }

    /// Makes sure `self.vectors.replay` holds the stage states of the step at tape
    /// `position`, step number `step` in `mode`, whose start state was not
    /// kept: if not, replays the segment from the last kept state before it
    /// up to it, keeping `s n` floats per tape entry from `replay_from` on.
    fn replay_segment(&mut self, tape: &Tape, position: usize, step: usize, mut mode: usize) {
        let n = self.n;
        let width = self.stepping.stages() * n;
        if self.replay_from <= position
            && (position - self.replay_from + 1) * width <= self.vectors.replay.len()
        {
            return;
        }
        // Back to the kept step, `step % stride` steps earlier, taking the
        // mode back across the events on the way.
        let mut start = position;
        let mut to_go = step % tape.stride;
        while to_go > 0 {
            start -= 1;
            match tape.entries[start].unpack() {
                TapeEntry::Step { .. } => to_go -= 1,
                TapeEntry::Event { index } => {
                    mode = self.system.transitions()[tape.events[index].transition as usize].from;
                }
                TapeEntry::Observation { .. } => {}
            }
        }
        let kept = tape
            .kept_state(step - step % tape.stride, n)
            .expect("a multiple of the stride is kept");
        self.vectors.replay.clear();
        self.replay_from = start;
        let mut y = std::mem::take(&mut self.vectors.replay_state);
        let mut next = std::mem::take(&mut self.vectors.replay_next);
        y.clear();
        y.extend_from_slice(kept);
        next.resize(n, 0.0);
        let params = self.params;
        for entry in &tape.entries[start..=position] {
            match (entry.unpack(), self.stepping) {
                (TapeEntry::Step { h, .. }, Stepping::Exact) => {
                    // The backward stretch reads its start state.
                    self.vectors.replay.extend_from_slice(&y);
                    let (a, b) = mode_linear(&self.linear, self.n, mode);
                    ia_events::exact::advance_state(a, b, h, &mut y);
                }
                (TapeEntry::Step { t0, h }, Stepping::RungeKutta(tab)) => {
                    let flow = &self.system.modes()[mode].flow;
                    tab.stages(
                        &mut |t, y, out| flow.rate(t, y, params, out),
                        t0,
                        h,
                        &y,
                        0,
                        &mut self.vectors.stages,
                        &mut self.vectors.stage_states,
                    );
                    // The backward step reads these stage states, so it
                    // need not form them again.
                    self.vectors
                        .replay
                        .extend_from_slice(&self.vectors.stage_states);
                    tab.solution(h, &y, &self.vectors.stages, &mut next);
                    std::mem::swap(&mut y, &mut next);
                }
                (TapeEntry::Event { index }, _) => {
                    self.vectors
                        .replay
                        .resize(self.vectors.replay.len() + width, 0.0);
                    // The state after the reset, formed as the integrator
                    // formed it (the same function of the same state).
                    let event = tape.events[index];
                    let transition = &self.system.transitions()[event.transition as usize];
                    let before = &tape.event_states[n * index..n * (index + 1)];
                    transition.reset.apply(event.time, before, params, &mut y);
                    mode = transition.to;
                }
                (TapeEntry::Observation { .. }, _) => {
                    self.vectors
                        .replay
                        .resize(self.vectors.replay.len() + width, 0.0);
                }
            }
        }
        self.vectors.replay_state = y;
        self.vectors.replay_next = next;
    }

    /// Runs the backward pass over the whole of `tape` with `seeds`;
    /// returns `(dL/dx0, dL/dp)`.
    pub(crate) fn gradient(
        &mut self,
        tape: &Tape,
        trajectory: &Trajectory,
        seeds: &LossSeeds,
    ) -> Result<(Vec<f64>, Vec<f64>), HybridError> {
        self.gradient_from(tape, trajectory, seeds, tape.end())
    }

    /// Runs the backward pass from cursor `end` of `tape` (its entries
    /// before that position, in reverse) with `seeds`, which must seed
    /// nothing after it (no final-state seed unless `end` is the whole
    /// tape, [`Tape::end`]); returns `(dL/dx0, dL/dp)`. The entries after
    /// `end` would only carry a zero adjoint, so the result is that of the
    /// whole pass, at the cost of the steps before the seeded output.
    pub(crate) fn gradient_from(
        &mut self,
        tape: &Tape,
        trajectory: &Trajectory,
        seeds: &LossSeeds,
        end: Cursor,
    ) -> Result<(Vec<f64>, Vec<f64>), HybridError> {
        let (end, mut step) = (end.position.min(tape.entries.len()), end.steps);
        let mut mode = tape.mode_before(self.system, end);
        let first_recorded = trajectory.first_recorded_event();
        let mut lambda = self.vectors.results.copy_of(&seeds.final_state);
        let mut param_bar = self.vectors.results.zeros(self.system.param_dim());
        // dL/dt* of the located event that started the cascade being walked
        // back through, gathered from the events of that cascade.
        let mut cascade_time_bar = 0.0;
        // Where the guard partials of the events met so far end (walking
        // back, each event's begin where the next one's end).
        let mut guard_end = tape.guard_terms_before(self.system, end);
        self.vectors.replay.clear();
        self.replay_from = usize::MAX;
        for position in (0..end).rev() {
            let entry = tape.entries[position].unpack();
            let time = match entry {
                TapeEntry::Step { t0, .. } => t0,
                TapeEntry::Event { index } => tape.events[index].time,
                TapeEntry::Observation { index } => trajectory.observations[index].time,
            };
            match entry {
                TapeEntry::Observation { index } => {
                    for (l, s) in lambda.iter_mut().zip(&seeds.observations[index]) {
                        *l += s;
                    }
                }
                TapeEntry::Event { index } => {
                    // The seeds follow the recorded events, the last ones of
                    // the run when not all are kept.
                    let time_seed = index
                        .checked_sub(first_recorded)
                        .and_then(|k| seeds.event_times.get(k))
                        .copied()
                        .unwrap_or(0.0);
                    guard_end -= tape.guard_term_count(self.system, index);
                    let event = tape.event(index, self.n, guard_end);
                    self.event(
                        event,
                        time_seed,
                        &mut cascade_time_bar,
                        &mut lambda,
                        &mut param_bar,
                    );
                    mode = self.system.transitions()[event.transition].from;
                }
                TapeEntry::Step { t0, h } => {
                    step -= 1;
                    if let Some(y0) = tape.kept_state(step, self.n) {
                        match self.stepping {
                            Stepping::RungeKutta(_) => {
                                self.step(mode, t0, h, y0, &mut lambda, &mut param_bar);
                            }
                            Stepping::Exact => {
                                self.vectors.stage_states.copy_from_slice(y0);
                                self.transpose_stretch(mode, t0, h, &mut lambda, &mut param_bar);
                            }
                        }
                    } else {
                        self.replay_segment(tape, position, step, mode);
                        let width = self.vectors.stage_states.len();
                        let at = (position - self.replay_from) * width;
                        self.vectors
                            .stage_states
                            .copy_from_slice(&self.vectors.replay[at..at + width]);
                        match self.stepping {
                            Stepping::RungeKutta(_) => {
                                self.transpose_step(mode, t0, h, &mut lambda, &mut param_bar);
                            }
                            Stepping::Exact => {
                                self.transpose_stretch(mode, t0, h, &mut lambda, &mut param_bar);
                            }
                        }
                    }
                }
            }
            // The adjoint of a violently unstable flow overflows as the
            // forward sensitivities do: the same error, not NaN derivatives.
            // The parameters' cotangent only accumulates, so a non-finite
            // entry stays so: checking it every few entries and at the end
            // finds it, where checking it after each entry cost more than
            // the entries themselves on a network's 10^4 parameters.
            let check_params = position % PARAM_CHECK_EVERY == 0;
            if !lambda.iter().all(|v| v.is_finite())
                || (check_params && !param_bar.iter().all(|v| v.is_finite()))
            {
                return Err(HybridError::NonFinite {
                    what: "derivative (the adjoint, integrated backward, overflowed)".into(),
                    time,
                    trajectory: Some(Box::new(trajectory.clone())),
                });
            }
        }
        Ok((lambda, param_bar))
    }

    /// Transposes one event's jump. An event of a cascade
    /// (`S+ = r_x S- + r_p - w dt*/dtheta`, sharing the time of the event
    /// that started it) passes `time_seed - w . lambda+` on through
    /// `cascade_time_bar`; the located event adds it to its own time seed.
    fn event(
        &mut self,
        event: TapedEvent<'_>,
        time_seed: f64,
        cascade_time_bar: &mut f64,
        lambda: &mut [f64],
        param_bar: &mut [f64],
    ) {
        let w_lambda: f64 = if event.shift_entries.is_empty() {
            event
                .shift_values
                .iter()
                .zip(lambda.iter())
                .map(|(w, l)| w * l)
                .sum()
        } else {
            event
                .shift_entries
                .iter()
                .zip(event.shift_values)
                .map(|(&i, w)| w * lambda[i as usize])
                .sum()
        };
        // lambda- = r_x^T lambda+ + g_x c and p_bar += r_p^T lambda+ + g_p c,
        // with c = (w . lambda+ - dL/dt*) / gdot for a crossing; an event of
        // a cascade passes dL/dt* - w . lambda+ on to the event that started
        // it instead.
        let coefficient = if event.cascade_of.is_some() {
            *cascade_time_bar += time_seed - w_lambda;
            0.0
        } else {
            let time_seed = time_seed + std::mem::take(cascade_time_bar);
            (w_lambda - time_seed) / event.guard_rate
        };
        // g_x c and g_p c over what the guard reads (its support, or every
        // entry), as the tape keeps them.
        self.vectors.guard_terms.clear();
        if coefficient != 0.0 {
            let terms = event.guard_terms;
            match self.system.transitions()[event.transition].guard.support() {
                Some(read) => {
                    let (gx, gp) = terms.split_at(read.states.len());
                    self.vectors
                        .guard_terms
                        .extend(read.states.iter().copied().zip(gx.iter().copied()));
                    for (&j, g) in read.params.iter().zip(gp) {
                        param_bar[j] += coefficient * g;
                    }
                }
                None => {
                    let (gx, gp) = terms.split_at(self.n);
                    self.vectors
                        .guard_terms
                        .extend(gx.iter().copied().enumerate());
                    for (pb, g) in param_bar.iter_mut().zip(gp) {
                        *pb += coefficient * g;
                    }
                }
            }
        }
        self.saltation.reset_transpose(
            self.system,
            self.params,
            event.at(),
            lambda,
            &mut self.vectors.scratch,
            param_bar,
        );
        for &(i, gx) in &self.vectors.guard_terms {
            self.vectors.scratch[i] += coefficient * gx;
        }
        lambda.copy_from_slice(&self.vectors.scratch);
    }

    /// Transposes one Runge-Kutta step `y1 = y0 + h sum b_i K_i`.
    fn step(
        &mut self,
        mode: usize,
        t0: f64,
        h: f64,
        y0: &[f64],
        lambda: &mut [f64],
        param_bar: &mut [f64],
    ) {
        let Stepping::RungeKutta(tableau) = self.stepping else {
            unreachable!("a Runge-Kutta step on the tape of a Runge-Kutta run")
        };
        let flow = &self.system.modes()[mode].flow;
        // Recompute the stages exactly as the forward step formed them: the
        // same method object, the same arithmetic.
        let params = self.params;
        tableau.stages(
            &mut |t, y, out| flow.rate(t, y, params, out),
            t0,
            h,
            y0,
            0,
            &mut self.vectors.stages,
            &mut self.vectors.stage_states,
        );
        self.transpose_step(mode, t0, h, lambda, param_bar);
    }

    /// Transposes the step of [`Backward::step`] whose stage states are in
    /// `self.vectors.stage_states`.
    fn transpose_step(
        &mut self,
        mode: usize,
        t0: f64,
        h: f64,
        lambda: &mut [f64],
        param_bar: &mut [f64],
    ) {
        let n = self.n;
        let Stepping::RungeKutta(tab) = self.stepping else {
            unreachable!("a Runge-Kutta step on the tape of a Runge-Kutta run")
        };
        let s = tab.solution_stages();
        let flow = &self.system.modes()[mode].flow;
        for i in 0..s {
            for (kb, &l) in self.vectors.stage_bars[i * n..(i + 1) * n]
                .iter_mut()
                .zip(lambda.iter())
            {
                *kb = h * tab.b[i] * l;
            }
        }
        self.vectors.state_bar.copy_from_slice(lambda);
        for i in (0..s).rev() {
            let k_bar = &self.vectors.stage_bars[i * n..(i + 1) * n];
            if k_bar.iter().all(|&v| v == 0.0) {
                continue;
            }
            let stage_time = t0 + tab.c[i] * h;
            let stage_state = &self.vectors.stage_states[i * n..(i + 1) * n];
            // Y_bar = f_x^T K_bar; p_bar += f_p^T K_bar
            flow_transpose(
                &**flow,
                &mut self.partials,
                (stage_time, stage_state, self.params),
                k_bar,
                &mut self.vectors.scratch,
                param_bar,
            );
            for (sb, &yb) in self.vectors.state_bar.iter_mut().zip(&self.vectors.scratch) {
                *sb += yb;
            }
            let (before, _) = self.vectors.stage_bars.split_at_mut(i * n);
            for (j, &a) in tab.a[i].iter().enumerate() {
                if a != 0.0 {
                    for (kb, &yb) in before[j * n..(j + 1) * n]
                        .iter_mut()
                        .zip(&self.vectors.scratch)
                    {
                        *kb += h * a * yb;
                    }
                }
            }
        }
        lambda.copy_from_slice(&self.vectors.state_bar);
    }
}

/// `x_bar = f_x^T v` and `p_bar += f_p^T v` at `(t, x, p)`: the flow's
/// vector-Jacobian product, or its dense partials (kept in `kept`, formed on
/// first use) where it has none.
fn flow_transpose(
    flow: &dyn ia_core::Flow,
    kept: &mut Option<FlowPartials>,
    (t, x, p): (f64, &[f64], &[f64]),
    v: &[f64],
    x_bar: &mut [f64],
    p_bar: &mut [f64],
) {
    if flow.vector_jacobian_product(t, x, p, v, x_bar, p_bar) {
        return;
    }
    let n = x.len();
    let partials = kept.get_or_insert_with(|| FlowPartials::zeros(n, p.len()));
    partials.clear();
    flow.partials(t, x, p, partials);
    let v = nalgebra::DVectorView::from_slice(v, n);
    for (c, xb) in x_bar.iter_mut().enumerate() {
        *xb = partials.x.column(c).dot(&v);
    }
    for (c, pb) in p_bar.iter_mut().enumerate() {
        *pb += partials.p.column(c).dot(&v);
    }
}

/// `a` and `b` of mode `mode`'s `x' = a x + b` in `linear` (`2 n` floats a
/// mode, [`Stepping::Exact`]).
fn mode_linear(linear: &[f64], n: usize, mode: usize) -> (&[f64], &[f64]) {
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
    fn transpose_stretch(
        &mut self,
        mode: usize,
        t0: f64,
        s: f64,
        lambda: &mut [f64],
        param_bar: &mut [f64],
    ) {
        let n = self.n;
        let vectors = &mut self.vectors;
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::{ball, dh_final, problem, E, G, H0};
    use ia_events::{Problem, SolverChoice};

    /// Reference: the pass over the whole tape (how every row was computed
    /// before passes started at their outputs); the entries after an output
    /// carry a zero adjoint, so the two agree to rounding.
    #[test]
    fn a_pass_from_an_output_equals_the_whole_pass() {
        let system = ball();
        // Three impacts before t = 2 (at 0.4515, 1.174, 1.752).
        let run = Problem::new(&system, vec![H0, 0.0], vec![G, E], 2.0)
            .with_solver(SolverChoice::dopri5(1e-12))
            .with_observations(vec![0.3, 1.0, 1.9]);
        let mut tape = Tape::default();
        let trajectory = ia_events::run(&run, &mut ia_events::NoExtraState, &mut tape).unwrap();
        assert_eq!(trajectory.events.len(), 3);
        let tableau = run.solver.tableau().unwrap();
        let mut backward = Backward::new(&system, &run.params, tableau);
        let mut rows = Vec::new();
        for k in 0..3 {
            let mut seeds = LossSeeds::zeros(&trajectory);
            seeds.event_times[k] = 1.0;
            rows.push((seeds, tape.event_end(k)));
            let mut seeds = LossSeeds::zeros(&trajectory);
            seeds.observations[k][1] = 1.0;
            rows.push((seeds, tape.observation_end(k)));
        }
        let mut ends = Vec::new();
        for (seeds, end) in &rows {
            let whole = backward.gradient(&tape, &trajectory, seeds).unwrap();
            let from = backward
                .gradient_from(&tape, &trajectory, seeds, *end)
                .unwrap();
            for (a, b) in whole
                .0
                .iter()
                .chain(&whole.1)
                .zip(from.0.iter().chain(&from.1))
            {
                assert!((a - b).abs() <= 1e-14 * a.abs().max(1.0), "{a} vs {b}");
            }
            ends.push(*end);
        }
        // The passes start inside the tape, earlier for earlier outputs.
        assert!(ends.iter().all(|&e| e < tape.end()), "{ends:?}");
        assert!(ends[0] < ends[2] && ends[2] < ends[4], "{ends:?}");
    }

    #[test]
    fn seeds_are_shaped_for_the_trajectory() {
        let system = ball();
        let run = problem(&system).with_observations(vec![0.1, 0.2, 0.3]);
        let trajectory = ia_events::simulate(&run).unwrap();
        let seeds = LossSeeds::zeros(&trajectory);
        assert_eq!(seeds.final_state, [0.0, 0.0]);
        assert_eq!(seeds.observations, vec![vec![0.0; 2]; 3]);
        assert_eq!(seeds.event_times, [0.0]);
    }

    #[test]
    fn one_backward_pass_gives_the_closed_form_gradient() {
        let system = ball();
        let run = problem(&system);
        let mut tape = Tape::default();
        let trajectory = ia_events::run(&run, &mut ia_events::NoExtraState, &mut tape).unwrap();
        assert!(tape.stored_floats() > 0);
        let mut seeds = LossSeeds::zeros(&trajectory);
        seeds.final_state[0] = 1.0;
        let tableau = run.solver.tableau().unwrap();
        let (dx0, dp) = Backward::new(&system, &run.params, tableau)
            .gradient(&tape, &trajectory, &seeds)
            .unwrap();
        let got: Vec<f64> = dx0.into_iter().chain(dp).collect();
        for (j, want) in dh_final().iter().enumerate() {
            assert!(
                (got[j] - want).abs() < 1e-8,
                "dh/d[{j}] {} vs {want}",
                got[j]
            );
        }
    }
}
