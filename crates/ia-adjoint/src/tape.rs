//! The tape of the forward pass, which the reverse pass
//! ([`adjoint`](crate::adjoint)) walks back: every accepted step's start
//! time and size, a kept start state every `stride` steps (checkpointing,
//! see [`AdjointOptions::checkpoints`]) and every event's record.

use crate::saltation::EventAt;
use ia_core::{GuardPartials, HybridError, HybridSystem};
use ia_events::{EventJump, LazyJump, Observer, RunContext};

/// With [`AdjointOptions::checkpoints`] left `None`, the tape keeps
/// `K = AUTOMATIC_CHECKPOINT_FLOATS / n` states of `n` floats (so between 16
/// and 32 MB of them): every step's state for all but runs of more than
/// 2^21 / n steps (records of `s n` floats, `K` divided by `s`, with a
/// Runge-Kutta method's `s` stage states, which the taped run keeps).
pub const AUTOMATIC_CHECKPOINT_FLOATS: usize = 1 << 21;

/// The largest `K` a tape takes: kept states are numbered in 32 bits.
const MAX_CHECKPOINTS: usize = 1 << 30;

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
    /// others (see the [module documentation](crate::adjoint)); `None` chooses `K` from
    /// the state dimension, [`AUTOMATIC_CHECKPOINT_FLOATS`] `/ n`, and
    /// `Some(usize::MAX)` keeps every step's state (at most 2^31 of them).
    /// With a Runge-Kutta method (explicit or implicit) a kept step keeps
    /// its `s` stage states (`s n` floats), and the automatic `K` is
    /// [`AUTOMATIC_CHECKPOINT_FLOATS`] `/ (s n)`.
    pub checkpoints: Option<usize>,
}

/// One entry of the forward tape, in forward order, as the passes read it.
/// A step's mode and whether its start state is kept are not stored: the
/// mode changes only at events (the transition's target), and with one kept
/// state every `stride` steps, step number `m` is kept state `m / stride`
/// when `m` is a multiple of it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum TapeEntry {
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
pub(crate) struct PackedEntry {
    t0: f64,
    h: f64,
}

impl PackedEntry {
    const EVENT: u64 = 0x7ff8_0000_0000_0e0e;
    const OBSERVATION: u64 = 0x7ff8_0000_0000_0b0b;

    pub(crate) fn pack(entry: TapeEntry) -> Self {
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

    pub(crate) fn unpack(self) -> TapeEntry {
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
pub(crate) struct TapeEvent {
    pub(crate) time: f64,
    /// `gdot = g_x f- + g_t`.
    pub(crate) guard_rate: f64,
    pub(crate) transition: u32,
    /// The located event that started its cascade, or [`TapeEvent::LOCATED`].
    pub(crate) cascade_of: u32,
    /// Steps taken before it.
    pub(crate) steps_before: u64,
}

impl TapeEvent {
    const LOCATED: u32 = u32::MAX;

    /// The located event that started its cascade, if it is of one.
    pub(crate) fn cascade_of(&self) -> Option<usize> {
        (self.cascade_of != Self::LOCATED).then_some(self.cascade_of as usize)
    }
}

/// Where a backward pass starts: a tape position and the number of steps
/// taped before it (ordered by position).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Cursor {
    pub(crate) position: usize,
    pub(crate) steps: usize,
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
    pub(crate) entries: Vec<PackedEntry>,
    /// The kept records, [`Tape::width`] floats each: step number `m` is
    /// kept record `m / stride` when `m` is a multiple of `stride`. A
    /// record is the step's start state (`n` floats), followed, for a
    /// method whose stepper offers them ([`Observer::step_stages`]: an
    /// implicit method's stages solved to rounding, an explicit method's
    /// stages as formed), by its other stage states (`n` floats each): the
    /// backward pass transposes the step at them rather than solving or
    /// forming its stages again.
    pub(crate) states: Vec<f64>,
    /// Floats of a kept record: `n`, or `s n` once the first step brought
    /// its `s` stages (0 before the first step).
    pub(crate) width: usize,
    /// `K` as asked, or `None` for the automatic one (known once the state
    /// dimension is): at most `2 K` kept states.
    pub(crate) checkpoints: Option<usize>,
    pub(crate) stride: usize,
    pub(crate) steps: usize,
    /// The mode of the first step.
    pub(crate) first_mode: usize,
    /// Every event of the run, by index, whatever its trajectory records
    /// ([`ia_events::EventRecording`]): what the backward pass transposes.
    pub(crate) events: Vec<TapeEvent>,
    /// Each event's state before the reset, `n` floats an event.
    pub(crate) event_states: Vec<f64>,
    /// Each event's time shift `w = f+ - r_x f- - r_t`: all `n` entries
    /// for a small system; from [`SPARSE_SHIFT_STATES`] states on, its
    /// nonzero entries only (their indices in [`Tape::shift_entries`], each
    /// event's first at [`Tape::shift_starts`]). A reset that changes a few
    /// entries of a large state shifts only those (and the rates that read
    /// them): a network's events keep a few hundred numbers, not `n`.
    pub(crate) shift_values: Vec<f64>,
    /// The indices of [`Tape::shift_values`] (large systems only).
    pub(crate) shift_entries: Vec<u32>,
    /// Where each event's entries start (large systems only).
    pub(crate) shift_starts: Vec<usize>,
    /// Each located event's guard partials `g_x`, `g_p` over what the guard
    /// reads ([`guard_term_count`] floats; none for an event of a cascade,
    /// whose guard plays no part).
    pub(crate) guard_terms: Vec<f64>,
    /// Where each event's entry is in `entries`, by event index.
    pub(crate) event_positions: Vec<usize>,
    /// Where each observation's entry is in `entries`, and the steps before
    /// it, by observation index.
    pub(crate) observation_cursors: Vec<Cursor>,
    /// Whether the run was a lazy one of the exact solver
    /// ([`Observer::lazy_event`]): no stretches, no event states, and per
    /// event its touched blocks ([`Tape::touched`]).
    pub(crate) lazy: bool,
    /// The touched blocks of a lazy run's events: where each event's
    /// entries start in the lists below, and per touched entry its index,
    /// its values before and after the reset and the time shift there.
    pub(crate) touched_starts: Vec<usize>,
    pub(crate) touched_entries: Vec<u32>,
    pub(crate) touched_before: Vec<f64>,
    pub(crate) touched_after: Vec<f64>,
    pub(crate) touched_shift: Vec<f64>,
    /// A lazy run's state as its guards read it (the touched entries
    /// written before each event's partials, the others stale) and the
    /// guards' partials (cleared over their supports after each).
    lazy_state: Vec<f64>,
    lazy_guard: Option<GuardPartials>,
}

/// One lazy event's touched blocks on the tape ([`Tape::touched`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Touched<'t> {
    pub(crate) entries: &'t [u32],
    pub(crate) before: &'t [f64],
    pub(crate) after: &'t [f64],
    pub(crate) time_shift: &'t [f64],
}

impl Default for Tape {
    /// The tape with the default (automatic) checkpointing.
    fn default() -> Self {
        Self::new(&AdjointOptions::default())
    }
}

/// Copies the state part (the first `n` of each `block` floats) of the
/// stages `1..s` of `stages` into the `s - 1` slots of `n` floats of
/// `slots` (inlined into each caller, so that a constant `n` sizes the copy).
/// By index, not by zipped chunks: the zip's lengths were integer
/// divisions by the sizes, out of line, several times the copy's wall time.
#[inline(always)]
fn keep_stages(slots: &mut [f64], stages: &[f64], (n, block, s): (usize, usize, usize)) {
    for i in 1..s {
        slots[(i - 1) * n..i * n].copy_from_slice(&stages[i * block..i * block + n]);
    }
}

impl Observer for Tape {
    /// Keeps the state's part of `y0` (the taped run may carry derivative
    /// probes after it: [`crate::probe`]).
    fn step_taken(&mut self, run: RunContext<'_>, mode: usize, t0: f64, h: f64, y0: &[f64]) {
        let y0 = &y0[..run.system.state_dim()];
        if self.steps == 0 {
            self.first_mode = mode;
        }
        let keep = self.steps % self.stride == 0;
        self.steps += 1;
        self.entries
            .push(PackedEntry::pack(TapeEntry::Step { t0, h }));
        if keep {
            let n = y0.len();
            ia_events::extend_floats(&mut self.states, y0);
            // The stage slots wait for [`Observer::step_stages`]; NaN marks
            // a record whose stages never came (solved again instead).
            let width = self.width.max(n);
            self.states.resize(self.states.len() + width - n, f64::NAN);
            self.thin(width);
        }
    }

    /// An implicit method's taped run solves its stages to rounding, an
    /// explicit one keeps the stage states it formed, and the tape keeps
    /// them (the backward pass transposes the steps at them rather than
    /// forming them again).
    fn wants_step_stages(&self) -> bool {
        true
    }

    /// Keeps the stages of the step just taped in its record (if kept): all
    /// steps' records have room for them when the first step brought them.
    fn step_stages(&mut self, run: RunContext<'_>, stages: &[f64], block: usize) {
        let n = run.system.state_dim();
        if block < n || stages.len() % block != 0 {
            return;
        }
        let s = stages.len() / block;
        if self.steps == 1 && self.width <= n && self.states.len() == n {
            self.width = s * n;
            self.states.resize(s * n, f64::NAN);
        }
        let kept = (self.steps - 1) % self.stride == 0;
        if !kept || self.width != s * n {
            return;
        }
        let record = self.states.len() - self.width;
        let slots = &mut self.states[record + n..];
        // A few floats a stage, where a call to copy them cost more than
        // the copy: a small state's by a copy of the loop made for its size.
        ia_events::sized!(explicit, n = n => keep_stages(slots, stages, (n, block, s)))
    }

    /// A stretch of the exact solver is its step: the same entry, read back
    /// by a pass that knows the run's stepping ([`Stepping::Exact`](crate::adjoint::Stepping::Exact)).
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
        ia_events::extend_floats(&mut self.event_states, jump.state_before);
        let n = jump.state_before.len();
        if n < SPARSE_SHIFT_STATES {
            ia_events::extend_floats(&mut self.shift_values, geometry.time_shift.as_slice());
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

    /// A lazy run of the exact solver tapes each event's touched blocks:
    /// what the backward pass transposes event by event (at the cost of
    /// its fan-out). Not with a bound on the kept states asked for
    /// ([`AdjointOptions::checkpoints`] `Some`): the lazy tape has no
    /// stretches to thin, so such a run keeps the stretch tape, which
    /// honours it.
    fn takes_lazy_events(&self) -> bool {
        self.checkpoints.is_none()
    }

    fn starts_lazily(&mut self, run: RunContext<'_>) {
        let (n, np) = (run.system.state_dim(), run.system.param_dim());
        self.lazy = true;
        self.lazy_state.clear();
        self.lazy_state.resize(n, 0.0);
        if self
            .lazy_guard
            .as_ref()
            .is_none_or(|g| g.x.len() != n || g.p.len() != np)
        {
            self.lazy_guard = Some(GuardPartials::zeros(n, np));
        }
    }

    fn lazy_event(
        &mut self,
        run: RunContext<'_>,
        jump: &EventJump<'_>,
        lazy: &LazyJump<'_>,
    ) -> Result<(), HybridError> {
        debug_assert_eq!(jump.index, self.events.len(), "events arrive in order");
        self.event_positions.push(self.entries.len());
        self.entries
            .push(PackedEntry::pack(TapeEntry::Event { index: jump.index }));
        self.events.push(TapeEvent {
            time: jump.time,
            guard_rate: lazy.guard_rate,
            transition: narrow(jump.transition, "transition")?,
            cascade_of: match jump.cascade_of {
                Some(root) => narrow(root, "event")?,
                None => TapeEvent::LOCATED,
            },
            steps_before: self.steps as u64,
        });
        narrow(self.lazy_state.len(), "state dimension")?;
        self.touched_starts.push(self.touched_entries.len());
        for (&i, &x) in lazy.entries.iter().zip(lazy.before) {
            self.touched_entries.push(i as u32);
            self.lazy_state[i] = x;
        }
        self.touched_before.extend_from_slice(lazy.before);
        self.touched_after.extend_from_slice(lazy.after);
        self.touched_shift.extend_from_slice(lazy.time_shift);
        if jump.cascade_of.is_none() {
            let guard = &run.system.transitions()[jump.transition].guard;
            let partials = self
                .lazy_guard
                .as_mut()
                .expect("formed when the run started lazily");
            // A threshold reads its own entry, which the run brought up to
            // date (the exact solver's guards are thresholds).
            guard.partials(jump.time, &self.lazy_state, run.params, partials);
            match guard.support() {
                Some(read) => {
                    self.guard_terms
                        .extend(read.states.iter().map(|&i| partials.x[i]));
                    self.guard_terms
                        .extend(read.params.iter().map(|&j| partials.p[j]));
                }
                None => {
                    self.guard_terms.extend_from_slice(partials.x.as_slice());
                    self.guard_terms.extend_from_slice(partials.p.as_slice());
                }
            }
            partials.clear_support(guard.support());
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
            + (self.touched_before.capacity()
                + self.touched_after.capacity()
                + self.touched_shift.capacity())
                * size_of::<f64>()
            + self.touched_entries.capacity() * size_of::<u32>()
            + self.touched_starts.capacity() * size_of::<usize>()
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
            width: 0,
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
            lazy: false,
            touched_starts: Vec::new(),
            touched_entries: Vec::new(),
            touched_before: Vec::new(),
            touched_after: Vec::new(),
            touched_shift: Vec::new(),
            lazy_state: Vec::new(),
            lazy_guard: None,
        }
    }

    /// Empties this tape and sets it to `options`, keeping its buffers (for
    /// a new run).
    pub(crate) fn renew(&mut self, options: &AdjointOptions) {
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
        self.touched_starts.clear();
        self.touched_entries.clear();
        self.touched_before.clear();
        self.touched_after.clear();
        self.touched_shift.clear();
        // The settings and counters as a new tape has them (`Tape::new`, no
        // allocation: its vectors are empty).
        let Self {
            width,
            checkpoints,
            stride,
            steps,
            first_mode,
            lazy,
            ..
        } = Self::new(options);
        (self.width, self.checkpoints, self.stride) = (width, checkpoints, stride);
        (self.steps, self.first_mode, self.lazy) = (steps, first_mode, lazy);
    }

    /// Forgets the run taped (a taped run discarded to be redone:
    /// [`crate::probe`]), keeping its buffers and its checkpoints' setting.
    pub(crate) fn forget_run(&mut self) {
        let options = AdjointOptions {
            checkpoints: self.checkpoints,
        };
        self.renew(&options);
    }

    /// With more than `2 K` kept records of `width` floats, keeps every
    /// second one (those of the steps at multiples of twice the stride) and
    /// doubles the stride. The automatic `K` counts floats, so records
    /// with stages are fewer.
    pub(crate) fn thin(&mut self, width: usize) {
        let width = width.max(1);
        let k = self
            .checkpoints
            .unwrap_or(AUTOMATIC_CHECKPOINT_FLOATS / width)
            .max(1);
        if self.states.len() <= 2 * k * width {
            return;
        }
        let kept = self.states.len() / width;
        for slot in 0..kept.div_ceil(2) {
            self.states
                .copy_within(2 * slot * width..(2 * slot + 1) * width, slot * width);
        }
        self.states.truncate(kept.div_ceil(2) * width);
        self.stride *= 2;
    }

    /// The kept record of step number `step`, if it is kept.
    fn kept_record(&self, step: usize, n: usize) -> Option<&[f64]> {
        let width = self.width.max(n);
        (step % self.stride == 0).then(|| {
            let at = step / self.stride * width;
            &self.states[at..at + width]
        })
    }

    /// The kept start state of step number `step`, if it is kept.
    pub(crate) fn kept_state(&self, step: usize, n: usize) -> Option<&[f64]> {
        self.kept_record(step, n).map(|record| &record[..n])
    }

    /// The kept stage states of step number `step` (`s n` floats, stage 0
    /// its start), if it is kept with its stages.
    pub(crate) fn kept_stages(&self, step: usize, n: usize) -> Option<&[f64]> {
        self.kept_record(step, n)
            .filter(|record| record.len() > n && !record[n].is_nan())
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
            + self.touched_before.len()
            + self.touched_after.len()
            + self.touched_shift.len()
            + self.touched_entries.len().div_ceil(2)
            + self.touched_starts.len()
    }

    /// The touched blocks of event `index` of a lazy run.
    pub(crate) fn touched(&self, index: usize) -> Touched<'_> {
        let start = self.touched_starts[index];
        let end = self
            .touched_starts
            .get(index + 1)
            .map_or(self.touched_entries.len(), |&next| next);
        Touched {
            entries: &self.touched_entries[start..end],
            before: &self.touched_before[start..end],
            after: &self.touched_after[start..end],
            time_shift: &self.touched_shift[start..end],
        }
    }

    /// Event `index` of a system with `n` states, its guard partials at
    /// `guard_terms[guard_start..]`.
    pub(crate) fn event(&self, index: usize, n: usize, guard_start: usize) -> TapedEvent<'_> {
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
        let cascade_of = e.cascade_of();
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
    pub(crate) fn guard_term_count(&self, system: &HybridSystem, index: usize) -> usize {
        let e = self.events[index];
        if e.cascade_of != TapeEvent::LOCATED {
            return 0;
        }
        guard_term_count(system, e.transition as usize)
    }

    /// Where the guard partials of the events before tape `position` end.
    pub(crate) fn guard_terms_before(&self, system: &HybridSystem, position: usize) -> usize {
        let events = self.event_positions.partition_point(|&p| p < position);
        (0..events).map(|k| self.guard_term_count(system, k)).sum()
    }

    /// The mode of the steps just before tape `position`: the target of the
    /// last event before it, or the first step's.
    pub(crate) fn mode_before(&self, system: &HybridSystem, position: usize) -> usize {
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
pub(crate) struct TapedEvent<'t> {
    pub(crate) transition: usize,
    pub(crate) time: f64,
    pub(crate) state_before: &'t [f64],
    /// The time shift: every entry when `shift_entries` is empty, else the
    /// values of those entries (the others are zero).
    pub(crate) shift_entries: &'t [u32],
    pub(crate) shift_values: &'t [f64],
    pub(crate) guard_rate: f64,
    /// From the event's guard partials on (over the guard's support, states
    /// then parameters; or all of `g_x` then all of `g_p`).
    pub(crate) guard_terms: &'t [f64],
    pub(crate) cascade_of: Option<usize>,
}

impl<'t> TapedEvent<'t> {
    /// The event for the reset's products, which read its transition, time
    /// and state before.
    pub(crate) fn at(&self) -> EventAt<'t> {
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
