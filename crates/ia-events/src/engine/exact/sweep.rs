//! The exact solver's layered sweep: a lazy run of a feed-forward system
//! one group of blocks at a time instead of one event at a time.
//!
//! A lazy run ([`super::lazy`]) of a system whose transitions form an
//! acyclic graph of blocks (a spiking network of layers: inputs -> hidden
//! -> outputs) may instead be run group by group. A group is a run of
//! consecutive pairs of the mode kicked by the same transitions (its
//! *writers*: a layer of a network); a group depends on the groups holding
//! the guards of its writers, and the groups run in a topological order of
//! these dependencies. Within a group, the kicks (the events of its writers,
//! all known by then: times on thresholds of time, and the events the
//! groups before it found) are walked in the order the general run fires
//! them, `(time, transition)`; before each kick every block of the group
//! fires its own guard as often as it crosses (each a crossing found by the
//! same bound, refinement and polish as the general run's, [`predicted`]
//! and [`refined`]), then it is brought to the kick's time with factors
//! shared by every block over the same stretch, the kick's reset is applied
//! once for the whole group, and the blocks it moved are predicted again.
//! There is no queue of crossings: each block keeps its own one prediction.
//! A block whose guard entry stays clear of its level up to the group's
//! next kick (a neuron an input leaves well below its threshold: shown from
//! the stretch's factors, [`ClearTest`]) keeps its state instead and is
//! predicted from it only if that kick leaves it as it was; the kick that
//! moves it predicts it again, as the general run does, and nothing the
//! held prediction could have done before that kick (a crossing) can
//! happen.
//! At the end the events of every group are merged in the order of their
//! `(time, transition)` and recorded as the general run records them.
//!
//! Each block takes part in the same events as in the general lazy run, is
//! brought over the same stretches with the same factors, kicked by the
//! same arithmetic in the same order and predicted from the same states,
//! so the sweep gives the general run's events, times and final state to
//! the bit. It applies when (see [`Plan::of`]) the run is lazy with no
//! observations, no [`Problem::stop_after`] and an observer that reads no
//! states; every transition stays in the initial mode and is not terminal;
//! every guard is a threshold on time or on an entry of a pair, at most one
//! a pair; every reset writes entries of pairs only, reads only what it
//! writes and its guard's pair, and declares that each written entry reads
//! only itself ([`Reset::writes_entrywise`](ia_core::Reset::writes_entrywise)),
//! so that it may be applied to one group's entries at a time; and the
//! groups' dependencies have no cycle. A run it cannot reproduce on the way
//! (an event that makes another due at its instant, a non-finite state, an
//! event at the instant of the one that caused it, more than `max_events`
//! events or the Zeno rule) is run again by the general run, which reports
//! it as it does.

use super::lazy::{apply_writes, predicted, refined, Queued};
use super::queue::{entry, time, transition};
use super::structure::{pushed_over, Level, Pair, Structure, StructureCache, NO_PAIR};
use crate::closed_form::advance_component;
use crate::factor::phi;
use crate::pair_form::{advance_pair, PairFactors, PairRates, PairStart};
use crate::problem::Problem;
use crate::recorder::{RecordBuffers, Recorder};
use crate::reuse::fill;
use crate::rough_crossing::ClearTest;
use crate::vocabulary::{EventJump, Observer, RunContext};
use crate::zeno::ZenoWatch;
use ia_core::{Direction, EventRecord, HybridError, SystemId, Trajectory, Transition};

/// Marks a pair with no guard, or no group.
const NONE: usize = usize::MAX;

/// A pair of the mode as the sweep reads it.
#[derive(Clone, Copy, Debug)]
struct Lane {
    /// The transition whose guard is on the pair, or [`NONE`].
    guard: usize,
    /// That guard's threshold: its entry ([`NONE`] without a guard), the
    /// entry's slot in the pair, its level and direction.
    state: usize,
    slot: usize,
    level: f64,
    direction: Direction,
    /// The pair's group.
    group: usize,
    /// Whether its guard entry can be shown clear of its level over a
    /// stretch, and how ([`Sweep::predict_until`]).
    clear: Option<ClearTest>,
}

impl Lane {
    /// Pair `p` of the mode of `structure` whose pairs are `pairs` (its
    /// entries' pairs and slots `pair_of`), whose guard is transition
    /// `guard` (or [`NONE`]), in group `group`.
    #[inline]
    fn of(
        structure: &Structure,
        (pairs, pair_of): (&[Pair], &[(usize, usize)]),
        p: usize,
        guard: usize,
        group: usize,
    ) -> Self {
        let (state, slot, level, direction) = match structure.thresholds.get(guard) {
            Some(Level::State(threshold)) => {
                let slot = pair_of[threshold.state].1;
                let direction = structure.directions[guard];
                (threshold.state, slot, threshold.level, direction)
            }
            _ => (NONE, 0, 0.0, Direction::Rising),
        };
        let pair = &pairs[p];
        Lane {
            guard,
            state,
            slot,
            level,
            direction,
            group,
            clear: (state != NONE)
                .then(|| ClearTest::of(&pair.rates, &pair.b, slot))
                .flatten(),
        }
    }
}

/// How a system's blocks are swept: found once from its structure.
pub(super) struct Plan {
    mode: usize,
    /// Per pair of the mode, its guard and its group.
    lanes: Vec<Lane>,
    /// The groups, in the order they run: group `g`'s pairs are
    /// `pairs[group_start[g]..group_start[g + 1]]` and its writers
    /// `writers[writer_start[g]..writer_start[g + 1]]`.
    group_start: Vec<usize>,
    pairs: Vec<usize>,
    writer_start: Vec<usize>,
    writers: Vec<usize>,
    /// The entries in no pair (none guarded or written): brought to the
    /// end only.
    decoupled: Vec<usize>,
}

impl Plan {
    /// The sweep of `problem`'s run over `structure`, when it applies (see
    /// the [module documentation](self)); the caller checks the run is lazy
    /// and its observer reads no states.
    pub(super) fn of(problem: &Problem<'_>, structure: &Structure) -> Option<Self> {
        let system = problem.system;
        let mode = problem.initial_mode;
        if !problem.observation_times.is_empty() || problem.stop_after.is_some() {
            return None;
        }
        let transitions = system.transitions();
        let n = system.state_dim();
        let pairs: &[Pair] = &structure.pairs[mode];
        let pair_of: &[(usize, usize)] = &structure.pair_of[mode];
        let mut guard = vec![NONE; pairs.len()];
        // Per entry, the last transition (plus one) that writes it, for a
        // reset that reads more than it writes (made on first use).
        let mut written: Vec<usize> = Vec::new();
        // Per pair, the last transition that kicks it (its own guard's
        // aside), how many do, and how many kick both it and the pair
        // before it: two neighbours have the same writers when both counts
        // equal the shared one (a transition kicks a pair once, in the
        // order of the transitions), with no list of writers per pair.
        // (Local slices: the loops over every written entry keep their
        // bounds in registers.)
        let mut last_kick = vec![NONE; pairs.len()];
        let last_kick: &mut [usize] = &mut last_kick;
        let mut count = vec![0usize; pairs.len()];
        let count: &mut [usize] = &mut count;
        let mut shared = vec![0usize; pairs.len()];
        let shared: &mut [usize] = &mut shared;
        let mut own_pair = vec![NONE; transitions.len()];
        for (k, tr) in transitions.iter().enumerate() {
            let reset = &tr.reset;
            let (Some(reads), Some(writes)) = (reset.reads(), reset.writes()) else {
                return None;
            };
            if tr.from != mode || tr.to != mode || tr.terminal || !reset.writes_entrywise() {
                return None;
            }
            let own = match structure.thresholds[k] {
                Level::Time(_) => NONE,
                Level::State(threshold) => {
                    let (pair, _) = pair_of[threshold.state];
                    if pair == NO_PAIR || guard[pair] != NONE {
                        return None;
                    }
                    guard[pair] = k;
                    pair
                }
            };
            own_pair[k] = own;
            for &i in writes {
                let pair = pair_of[i].0;
                if pair == NO_PAIR {
                    return None;
                }
                if pair == own || last_kick[pair] == k {
                    continue;
                }
                last_kick[pair] = k;
                count[pair] += 1;
                if pair > 0 && last_kick[pair - 1] == k {
                    shared[pair] += 1;
                }
                if last_kick.get(pair + 1) == Some(&k) {
                    shared[pair + 1] += 1;
                }
            }
            // A reset that reads what it writes (a spike's kick) lists them
            // once.
            if !std::ptr::eq(reads, writes) {
                if written.is_empty() {
                    written = vec![0; n];
                }
                for &i in writes {
                    written[i] = k + 1;
                }
                let more = |i: usize| written[i] != k + 1 && (own == NONE || pair_of[i].0 != own);
                if reads.iter().any(|&i| more(i)) {
                    return None;
                }
            }
        }
        // Groups: runs of consecutive pairs with the same writers.
        let mut group_of = vec![NONE; pairs.len()];
        let mut first_pair = Vec::new();
        for (p, group) in group_of.iter_mut().enumerate() {
            let same = p > 0 && count[p] == count[p - 1] && shared[p] == count[p];
            if !same {
                first_pair.push(p);
            }
            *group = first_pair.len() - 1;
        }
        let groups = first_pair.len();
        // Each group's writers (its first pair's), in the order of the
        // transitions, as flat lists.
        let mut writer_count = vec![0usize; groups + 1];
        for &p in &first_pair {
            writer_count[group_of[p] + 1] = count[p];
        }
        for g in 0..groups {
            writer_count[g + 1] += writer_count[g];
        }
        let mut list = vec![0; writer_count[groups]];
        let mut fill = writer_count.clone();
        let mut last_group = vec![NONE; groups];
        // Per entry, the group whose first pair holds it (else NONE): the
        // one test a written entry needs here.
        let mut first_of = vec![NONE; n];
        for (g, &p) in first_pair.iter().enumerate() {
            for i in pairs[p].entries {
                first_of[i] = g;
            }
        }
        let first_of: &[usize] = &first_of;
        for (k, tr) in transitions.iter().enumerate() {
            for &i in tr.reset.writes().unwrap_or(&[]) {
                let g = first_of[i];
                if g == NONE || first_pair[g] == own_pair[k] || last_group[g] == k {
                    continue;
                }
                last_group[g] = k;
                list[fill[g]] = k;
                fill[g] += 1;
            }
        }
        let writers_of = |g: usize| &list[writer_count[g]..writer_count[g + 1]];
        // Group `g` depends on the groups of its writers' guards: Kahn's
        // order, the first ready group first.
        let mut needs = vec![0usize; groups];
        let mut feeds: Vec<Vec<usize>> = vec![Vec::new(); groups];
        for (g, need) in needs.iter_mut().enumerate() {
            for &k in writers_of(g) {
                if let Level::State(threshold) = structure.thresholds[k] {
                    let from = group_of[pair_of[threshold.state].0];
                    *need += 1;
                    feeds[from].push(g);
                }
            }
        }
        let mut order: Vec<usize> = (0..groups).filter(|&g| needs[g] == 0).collect();
        let mut next = 0;
        while next < order.len() {
            let from = order[next];
            next += 1;
            for &g in &feeds[from] {
                needs[g] -= 1;
                if needs[g] == 0 {
                    order.push(g);
                }
            }
        }
        if order.len() < groups {
            return None;
        }
        // The groups renumbered in their order.
        let lane = |p: usize| Lane::of(structure, (pairs, pair_of), p, guard[p], NONE);
        let mut plan = Self {
            mode,
            lanes: (0..pairs.len()).map(lane).collect(),
            group_start: vec![0],
            pairs: Vec::with_capacity(pairs.len()),
            writer_start: vec![0],
            writers: Vec::new(),
            decoupled: (0..n).filter(|&i| pair_of[i].0 == NO_PAIR).collect(),
        };
        for (g, &old) in order.iter().enumerate() {
            let p0 = first_pair[old];
            let end = first_pair.get(old + 1).copied().unwrap_or(pairs.len());
            for p in p0..end {
                plan.lanes[p].group = g;
                plan.pairs.push(p);
            }
            plan.group_start.push(plan.pairs.len());
            plan.writers.extend_from_slice(writers_of(old));
            plan.writer_start.push(plan.writers.len());
        }
        Some(plan)
    }
}

/// A sweep's plan kept for the next runs of the same system at other
/// parameters (in a [`Workspace`](crate::Workspace)), with everything
/// [`Plan::of`] read to find its groups, order and writers: the mode, the
/// state's size, each transition's modes, terminal flag, entrywise flag,
/// the entries its reset reads and writes and its guard's entry, and the
/// mode's pairing of entries. A run whose system gives all of these equal
/// takes the kept plan with its lanes' levels, directions and clear tests
/// formed again from its own structure (what the parameters move); any
/// difference finds a new plan. A run of the same system (its
/// [`HybridSystem::id`](ia_core::HybridSystem::id): a system cannot change
/// once built) compares only what its structure gives, the pairing and the
/// guards' entries; another system a pass over the resets' lists; neither
/// the search of [`Plan::of`].
#[derive(Default)]
pub(crate) struct PlanCache {
    kept: Option<(PlanKey, Plan)>,
    /// The structure the plan was found on, kept with it.
    structures: StructureCache,
    /// The sweep's buffers, kept from run to run.
    buffers: SweepBuffers,
}

/// What [`Plan::of`] reads of a run besides its levels (see
/// [`PlanCache`]).
struct PlanKey {
    /// The system the rest was read from: a run of the same system
    /// declares the same transitions and reset lists
    /// ([`HybridSystem::id`](ia_core::HybridSystem::id)), so only what its
    /// structure gives (the pairing and the guards' entries) is compared.
    system: SystemId,
    mode: usize,
    n: usize,
    /// Per transition: its modes, terminal and entrywise flags, whether
    /// its reset's reads are its writes, its guard's entry ([`NONE`] for a
    /// threshold on time) and the lengths of its lists in `writes` and
    /// `reads`.
    transitions: Vec<[usize; 8]>,
    writes: Vec<usize>,
    reads: Vec<usize>,
    pair_of: Vec<(usize, usize)>,
}

impl PlanKey {
    /// The key of `problem` over `structure`, or `None` where a reset
    /// declares no lists (no sweep then).
    fn of(problem: &Problem<'_>, structure: &Structure) -> Option<Self> {
        let (system, mode) = (problem.system, problem.initial_mode);
        let transitions = system.transitions();
        let mut key = Self {
            system: system.id(),
            mode,
            n: system.state_dim(),
            transitions: Vec::with_capacity(transitions.len()),
            writes: Vec::new(),
            reads: Vec::new(),
            pair_of: structure.pair_of[mode].clone(),
        };
        for (k, tr) in transitions.iter().enumerate() {
            let (row, reads, writes) = Self::row(structure, k, tr)?;
            key.writes.extend_from_slice(writes);
            key.reads.extend_from_slice(reads);
            key.transitions.push(row);
        }
        Some(key)
    }

    /// Transition `k`'s row of [`PlanKey::transitions`], with the lists it
    /// adds to `reads` (none where the reads are the writes) and `writes`.
    #[allow(clippy::type_complexity)]
    fn row<'t>(
        structure: &Structure,
        k: usize,
        tr: &'t Transition,
    ) -> Option<([usize; 8], &'t [usize], &'t [usize])> {
        let reset = &tr.reset;
        let (reads, writes) = (reset.reads()?, reset.writes()?);
        let same = std::ptr::eq(reads, writes);
        let reads = if same { &[][..] } else { reads };
        let state = guard_entry(structure.thresholds[k]);
        let row = [
            tr.from,
            tr.to,
            usize::from(tr.terminal),
            usize::from(reset.writes_entrywise()),
            usize::from(same),
            state,
            writes.len(),
            reads.len(),
        ];
        Some((row, reads, writes))
    }

    /// Whether the key of `problem` over `structure` ([`PlanKey::of`])
    /// would be this one, compared as it is formed (nothing copied).
    fn matches(&self, problem: &Problem<'_>, structure: &Structure) -> bool {
        let (system, mode) = (problem.system, problem.initial_mode);
        let transitions = system.transitions();
        if self.mode != mode
            || self.n != system.state_dim()
            || self.transitions.len() != transitions.len()
            || self.pair_of[..] != structure.pair_of[mode][..]
        {
            return false;
        }
        if self.system == system.id() {
            return (self.transitions.iter())
                .zip(&structure.thresholds)
                .all(|(row, &level)| row[5] == guard_entry(level));
        }
        let (mut w, mut r) = (0, 0);
        for (k, tr) in transitions.iter().enumerate() {
            let Some((row, reads, writes)) = Self::row(structure, k, tr) else {
                return false;
            };
            let (w_end, r_end) = (w + writes.len(), r + reads.len());
            if row != self.transitions[k]
                || self.writes.get(w..w_end) != Some(writes)
                || self.reads.get(r..r_end) != Some(reads)
            {
                return false;
            }
            (w, r) = (w_end, r_end);
        }
        w == self.writes.len() && r == self.reads.len()
    }
}

/// The state entry a guard of `level` reads ([`NONE`] for a threshold on
/// time).
fn guard_entry(level: Level) -> usize {
    match level {
        Level::Time(_) => NONE,
        Level::State(threshold) => threshold.state,
    }
}

impl PlanCache {
    /// The structure of `problem` (the kept one where its linear blocks
    /// are as they were: [`StructureCache`]) and its sweep ([`Plan::of`]):
    /// the kept plan when `problem`'s system gives everything it was found
    /// from equal (see [`PlanCache`]), else a new one, kept.
    /// With them, the sweep's buffers kept from the previous run.
    #[allow(clippy::type_complexity)]
    pub(super) fn structure_and_plan(
        &mut self,
        problem: &Problem<'_>,
    ) -> Result<(&Structure, Option<&Plan>, &mut SweepBuffers), HybridError> {
        let structure = self.structures.structure(problem.system, &problem.params)?;
        let plan = kept_plan(&mut self.kept, problem, structure);
        Ok((structure, plan, &mut self.buffers))
    }

    /// The structure [`PlanCache::structure_and_plan`] gave last, taken out
    /// (for the general run, when the sweep hands the run over).
    pub(super) fn take_structure(&mut self) -> Option<Structure> {
        self.structures.take()
    }
}

/// The plan `kept` holds, its levels formed again from `structure`, where
/// `problem` matches its key; else a plan found anew and kept (see
/// [`PlanCache`]).
fn kept_plan<'k>(
    kept: &'k mut Option<(PlanKey, Plan)>,
    problem: &Problem<'_>,
    structure: &Structure,
) -> Option<&'k Plan> {
    if !problem.observation_times.is_empty() || problem.stop_after.is_some() {
        return None;
    }
    let found = match kept.take() {
        Some((mut key, mut plan)) if key.matches(problem, structure) => {
            // Another system declaring the same: its next runs compare ids.
            key.system = problem.system.id();
            let mode = plan.mode;
            let blocks = (&structure.pairs[mode][..], &structure.pair_of[mode][..]);
            for (p, lane) in plan.lanes.iter_mut().enumerate() {
                *lane = Lane::of(structure, blocks, p, lane.guard, lane.group);
            }
            (key, plan)
        }
        _ => {
            let plan = Plan::of(problem, structure)?;
            (PlanKey::of(problem, structure)?, plan)
        }
    };
    Some(&kept.insert(found).1)
}

/// Why a sweep stopped: the general run takes over from the start.
pub(super) struct Fallback;

/// The factors of recent stretches, per matrix: a small table indexed by
/// the stretch's bits (the blocks of a layer are brought over the same
/// stretches between the same kicks, one after another).
struct FactorCache {
    slots: Vec<(usize, u64, PairFactors)>,
    /// The slot asked last (the blocks of a layer ask for the same
    /// factors one after another): looked at before hashing.
    last: usize,
}

/// Slots of [`FactorCache`] (a power of two).
const CACHE_SLOTS: usize = 64;

impl Default for FactorCache {
    /// Every slot empty.
    fn default() -> Self {
        let zero = PairFactors {
            e0: 0.0,
            e1: 0.0,
            p0: 0.0,
            p1: 0.0,
        };
        Self {
            slots: vec![(NONE, 0, zero); CACHE_SLOTS],
            last: 0,
        }
    }
}

impl FactorCache {
    /// Forgets every slot (the next run's matrices may have other rates).
    fn clear(&mut self) {
        for slot in &mut self.slots {
            slot.0 = NONE;
        }
        self.last = 0;
    }

    /// The factors of matrix `matrix` (rates `rates`) over `s`: those formed
    /// before for the same matrix and the same `s` to the bit, or formed now.
    #[inline]
    fn get(&mut self, matrix: usize, rates: &PairRates, s: f64) -> &PairFactors {
        let bits = s.to_bits();
        let last = &self.slots[self.last];
        if last.0 == matrix && last.1 == bits {
            return &self.slots[self.last].2;
        }
        let hash = (bits ^ (bits >> 29) ^ matrix as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.last = (hash >> 58) as usize % CACHE_SLOTS;
        let slot = &mut self.slots[self.last];
        if slot.0 != matrix || slot.1 != bits {
            *slot = (matrix, bits, rates.factors(s));
        }
        &slot.2
    }
}

/// A pair's prediction put off at a kick of its group: its guard cannot
/// cross before the group's next kick (see [`Sweep::predict_until`]).
#[derive(Clone, Copy)]
struct Held {
    /// The pair's state and time when it was due (its prediction is made
    /// from them when needed, as it would have been then).
    y: [f64; 2],
    t: f64,
    /// The next kick (`u128::MAX`: the end of the run), up to whose time
    /// the guard cannot cross.
    until: u128,
}

/// Which blocks a reset applied now belongs to.
#[derive(Clone, Copy)]
enum Scope {
    /// One pair (its own guard's reset).
    Pair(usize),
    /// A group (a kick of its writers).
    Group(usize),
}

/// A sweep in progress.
struct Sweep<'a> {
    problem: &'a Problem<'a>,
    structure: &'a Structure,
    plan: &'a Plan,
    /// The mode's pairs, and each entry's pair and slot.
    pairs: &'a [Pair],
    pair_of: &'a [(usize, usize)],
    b: &'a mut SweepBuffers,
}

/// A sweep's state, in buffers kept in a workspace from run to run (a
/// training batch's samples each run the same network: the buffers are
/// sized once and stay warm).
#[derive(Default)]
pub(super) struct SweepBuffers {
    x: Vec<f64>,
    /// A copy for resets that cannot apply themselves in place.
    x_after: Vec<f64>,
    /// Per pair, its own last update time and its prediction: a time and
    /// whether it is exact or a bound of which kind.
    since: Vec<f64>,
    pending: Vec<f64>,
    pending_kind: Vec<Queued>,
    /// Per pair, its prediction put off, if it is (then `pending` holds
    /// the time it holds until).
    held: Vec<Option<Held>>,
    /// The events so far, as queue keys `(time, transition)`, with their
    /// guards' rates; and per transition the range of its own there (once
    /// its group has run).
    events: Vec<(u128, f64)>,
    fired: Vec<(usize, usize)>,
    /// The current group's kicks, as keys.
    kicks: Vec<u128>,
    /// The written entries' values before a reset.
    before: Vec<f64>,
    /// The pairs a reset moved, each once.
    moved: Vec<usize>,
    is_moved: Vec<bool>,
    factors: FactorCache,
}

impl SweepBuffers {
    /// Made ready for a run of `problem` over `pairs` pairs.
    fn start(&mut self, problem: &Problem<'_>, pairs: usize) {
        let (n, transitions) = (
            problem.system.state_dim(),
            problem.system.transitions().len(),
        );
        self.x.clone_from(&problem.initial_state);
        fill(&mut self.x_after, n, 0.0);
        fill(&mut self.since, pairs, problem.t0);
        fill(&mut self.pending, pairs, f64::INFINITY);
        fill(&mut self.pending_kind, pairs, Queued::Exact);
        fill(&mut self.held, pairs, None);
        self.events.clear();
        fill(&mut self.fired, transitions, (0, 0));
        self.kicks.clear();
        self.before.clear();
        self.moved.clear();
        fill(&mut self.is_moved, pairs, false);
        self.factors.clear();
    }
}

/// Runs `problem` by the layered sweep of `plan` (see the [module
/// documentation](self)) in `buffers` and records it in `records` as the
/// general lazy run does, showing each event to `observer`;
/// `Err(Fallback)` when the general run must run it instead (nothing was
/// recorded or shown).
pub(super) fn run<O: Observer>(
    problem: &Problem<'_>,
    (structure, plan): (&Structure, &Plan),
    buffers: &mut SweepBuffers,
    records: &mut RecordBuffers,
    observer: &mut O,
) -> Result<Result<Trajectory, HybridError>, Fallback> {
    buffers.start(problem, plan.lanes.len());
    let mut sweep = Sweep {
        problem,
        structure,
        plan,
        pairs: &structure.pairs[plan.mode],
        pair_of: &structure.pair_of[plan.mode],
        b: buffers,
    };
    sweep.sweep()?;
    let b = &sweep.b;
    Ok(record(
        problem, records, observer, &b.events, &b.x, plan.mode,
    ))
}

/// Records the sweep's `events` (merged) and its final state `x` in
/// `records`, as the general run records them, event by event.
fn record<O: Observer>(
    problem: &Problem<'_>,
    records: &mut RecordBuffers,
    observer: &mut O,
    events: &[(u128, f64)],
    x: &[f64],
    mode: usize,
) -> Result<Trajectory, HybridError> {
    let system = problem.system;
    let mut recorder = Recorder::new(problem, records);
    let run = RunContext {
        system,
        params: &problem.params,
    };
    let result = (|| {
        for &(key, guard_rate) in events {
            let (t, k) = (time(key), transition(key));
            let tr = &system.transitions()[k];
            let index = recorder.next_event_index();
            let record = EventRecord {
                index,
                time: t,
                transition: k,
                from_mode: mode,
                to_mode: tr.to,
                guard_rate,
                terminal: tr.terminal,
                cascade_of: None,
            };
            recorder.record_event(record, &[], &[]);
            let jump = EventJump {
                index,
                transition: k,
                time: t,
                from_mode: mode,
                to_mode: tr.to,
                state_before: &[],
                state_after: &[],
                terminal: tr.terminal,
                cascade_of: None,
                geometry: None,
            };
            observer.event(run, &jump)?;
            // The Zeno rule passed over these events before.
            recorder.after_event(t, k, None, x, mode, |counts| counts)?;
            let events = recorder.stats().events;
            recorder.progress(t, events);
        }
        let t_end = problem.t_end;
        observer.finished(run, t_end, x);
        let stats = recorder.stats();
        Ok(recorder.finish(t_end, x, mode, stats))
    })();
    recorder.release(records);
    result
}

impl Sweep<'_> {
    /// Runs the sweep: every group, then the entries in no pair; the
    /// events merged in the order of their keys.
    fn sweep(&mut self) -> Result<(), Fallback> {
        let (problem, plan) = (self.problem, self.plan);
        self.time_events();
        for g in 0..plan.group_start.len() - 1 {
            self.group(g)?;
        }
        self.decoupled_to_end();
        self.b.events.sort_unstable_by_key(|e| e.0);
        // The Zeno rule (and `max_events`) over the merged events first: a
        // run it stops is the general run's to report.
        let mut zeno = ZenoWatch::new(problem, Vec::new());
        for (count, &(key, _)) in self.b.events.iter().enumerate() {
            if zeno
                .after_event(problem, count + 1, transition(key), time(key), None)
                .is_some()
            {
                return Err(Fallback);
            }
        }
        Ok(())
    }

    /// The events of the thresholds on time: each at its level, when that
    /// lies inside the run (the general run predicts them once, at the
    /// start).
    fn time_events(&mut self) {
        let (t0, t_end) = (self.problem.t0, self.problem.t_end);
        for (k, level) in self.structure.thresholds.iter().enumerate() {
            if let Level::Time(level) = *level {
                let fires = self.structure.directions[k] != Direction::Falling
                    && level > t0
                    && level < t_end;
                if fires {
                    self.b.fired[k] = (self.b.events.len(), self.b.events.len() + 1);
                    self.b.events.push((entry(level, k), 1.0));
                }
            }
        }
    }

    /// Runs group `g` (see the [module documentation](self)).
    fn group(&mut self, g: usize) -> Result<(), Fallback> {
        let plan = self.plan;
        let pairs = &plan.pairs[plan.group_start[g]..plan.group_start[g + 1]];
        let writers = &plan.writers[plan.writer_start[g]..plan.writer_start[g + 1]];
        let first_event = self.b.events.len();
        self.b.kicks.clear();
        for &k in writers {
            let (from, to) = self.b.fired[k];
            self.b
                .kicks
                .extend(self.b.events[from..to].iter().map(|e| e.0));
        }
        self.b.kicks.sort_unstable();
        let t0 = self.problem.t0;
        let first_kick = self.b.kicks.first().copied().unwrap_or(u128::MAX);
        for &p in pairs {
            self.predict_until(p, t0, first_kick);
        }
        for c in 0..self.b.kicks.len() {
            let key = self.b.kicks[c];
            let (t, k) = (time(key), transition(key));
            for &p in pairs {
                // A prediction after the kick's time cannot come before it,
                // nor one held off up to this kick.
                let holds = |held: Option<Held>| held.is_some_and(|h| key <= h.until);
                if self.b.pending[p] <= t && !holds(self.b.held[p]) {
                    self.resolve(p, key)?;
                }
                self.bring(p, t);
            }
            self.apply(k, t, Scope::Group(g))?;
            let next = self.b.kicks.get(c + 1).copied().unwrap_or(u128::MAX);
            while let Some(p) = self.b.moved.pop() {
                self.b.is_moved[p] = false;
                self.predict_until(p, t, next);
            }
        }
        let t_end = self.problem.t_end;
        for &p in pairs {
            self.resolve(p, u128::MAX)?;
            self.bring(p, t_end);
        }
        // The group's events, by transition then time, for the groups
        // they kick.
        let own = &mut self.b.events[first_event..];
        own.sort_unstable_by_key(|&(key, _)| (transition(key), key));
        let mut i = first_event;
        while i < self.b.events.len() {
            let k = transition(self.b.events[i].0);
            let start = i;
            while i < self.b.events.len() && transition(self.b.events[i].0) == k {
                i += 1;
            }
            self.b.fired[k] = (start, i);
        }
        Ok(())
    }

    /// Brings pair `p` from its own time to `t`.
    #[inline(always)]
    fn bring(&mut self, p: usize, t: f64) {
        let s = t - self.b.since[p];
        if s <= 0.0 {
            return;
        }
        let pair = &self.pairs[p];
        let factors = self.b.factors.get(pair.matrix, &pair.rates, s);
        let [i, j] = pair.entries;
        let mut y = [self.b.x[i], self.b.x[j]];
        advance_pair(&pair.a, &pair.b, &pair.rates, factors, &mut y);
        (self.b.x[i], self.b.x[j]) = (y[0], y[1]);
        self.b.since[p] = t;
    }

    /// Brings the entries in no pair from the start to the end (nothing
    /// touches them in between).
    fn decoupled_to_end(&mut self) {
        let s = self.problem.t_end - self.problem.t0;
        if s <= 0.0 {
            return;
        }
        let mode = self.plan.mode;
        for &i in &self.plan.decoupled {
            let (a, b) = (self.structure.a[mode][i], self.structure.b[mode][i]);
            advance_component(&mut self.b.x[i], a, b, phi(a, s));
        }
    }

    /// Pair `p`'s state.
    #[inline]
    fn state(&self, p: usize) -> [f64; 2] {
        let [i, j] = self.pairs[p].entries;
        [self.b.x[i], self.b.x[j]]
    }

    /// The stretch of pair `p` from its state.
    #[inline]
    fn start(&self, p: usize) -> PairStart<'_> {
        self.start_from(p, self.state(p))
    }

    /// The stretch of pair `p` from the state `y`.
    #[inline]
    fn start_from(&self, p: usize, y: [f64; 2]) -> PairStart<'_> {
        let pair = &self.pairs[p];
        PairStart::new(&pair.a, &pair.b, &pair.rates, y)
    }

    /// Predicts pair `p`'s guard (if it has one) from its state at `t`.
    fn predict(&mut self, p: usize, t: f64) {
        let lane = self.plan.lanes[p];
        if lane.guard == NONE {
            return;
        }
        self.b.held[p] = None;
        let (time, queued) = predicted(&self.start(p), t, lane.slot, lane.level, lane.direction);
        self.b.pending[p] = time.unwrap_or(f64::INFINITY);
        self.b.pending_kind[p] = queued;
    }

    /// [`Sweep::predict`] at a kick of the group at `t` whose next kick is
    /// `until` (`u128::MAX`: none), or holds the prediction off when the
    /// pair's guard entry stays clear of its level up to that kick's time
    /// ([`ClearTest`]: a pair with no constant term, decaying, as a
    /// neuron between its inputs): most kicks of a layer move no neuron
    /// across its threshold before the next. The prediction is made later
    /// from the state kept here, as it would have been now, only if the
    /// next kick leaves the pair as it was ([`Sweep::resolve`]); a kick that
    /// moves it predicts it again, which drops this one.
    #[inline(always)]
    fn predict_until(&mut self, p: usize, t: f64, until: u128) {
        let (plan, pairs) = (self.plan, self.pairs);
        let lane = &plan.lanes[p];
        let Some(test) = lane.clear else {
            self.predict(p, t);
            return;
        };
        let pair = &pairs[p];
        let end = if until == u128::MAX {
            self.problem.t_end
        } else {
            time(until)
        };
        let (s, y) = (end - t, self.state(p));
        let held = s >= 0.0 && {
            let factors = self.b.factors.get(pair.matrix, &pair.rates, s);
            test.holds(y, lane.slot, lane.level, factors)
        };
        if !held {
            self.predict(p, t);
            return;
        }
        self.b.held[p] = Some(Held { y, t, until });
        self.b.pending[p] = end;
    }

    /// Fires pair `p`'s guard as often as it crosses before the event
    /// `key`, refining its prediction while it comes first (the general
    /// run's order).
    fn resolve(&mut self, p: usize, key: u128) -> Result<(), Fallback> {
        let lane = self.plan.lanes[p];
        if let Some(held) = self.b.held[p] {
            if key <= held.until {
                // Nothing crosses up to the kick it holds until.
                return Ok(());
            }
            // The kick it held until left the pair as it was: its
            // prediction, from its state then, and that kick's refinement
            // of it, from the same state (the pair was not brought in
            // between), as the pair had them after that kick.
            self.b.held[p] = None;
            let start = self.start_from(p, held.y);
            let (time, queued) = predicted(&start, held.t, lane.slot, lane.level, lane.direction);
            let mut step = (time.unwrap_or(f64::INFINITY), queued);
            loop {
                let (t, queued) = step;
                if t >= self.problem.t_end || entry(t, lane.guard) >= held.until {
                    break;
                }
                if queued == Queued::Exact {
                    // Ruled out by the clear test: left to the general run.
                    return Err(Fallback);
                }
                let (slot, level, direction) = (lane.slot, lane.level, lane.direction);
                let (next, queued) = refined(&start, held.t, slot, level, direction, (queued, t));
                step = (next.unwrap_or(f64::INFINITY), queued);
            }
            (self.b.pending[p], self.b.pending_kind[p]) = step;
        }
        let t_end = self.problem.t_end;
        loop {
            let t = self.b.pending[p];
            if t >= t_end || entry(t, lane.guard) >= key {
                return Ok(());
            }
            let queued = self.b.pending_kind[p];
            if queued == Queued::Exact {
                self.fire(p, lane, t)?;
                continue;
            }
            let step = (queued, t);
            let since = self.b.since[p];
            let start = self.start(p);
            let (time, queued) =
                refined(&start, since, lane.slot, lane.level, lane.direction, step);
            self.b.pending[p] = time.unwrap_or(f64::INFINITY);
            self.b.pending_kind[p] = queued;
        }
    }

    /// Pair `p`'s guard (of `lane`) fires at `t`.
    fn fire(&mut self, p: usize, lane: Lane, t: f64) -> Result<(), Fallback> {
        // An event at the instant of the one it follows from may come before
        // it in the general run's order: not merged by time here.
        if t <= self.b.since[p] {
            return Err(Fallback);
        }
        self.bring(p, t);
        let pair = &self.pairs[p];
        let [i, j] = pair.entries;
        let row = pair.a[lane.slot];
        let guard_rate = row[0] * self.b.x[i] + row[1] * self.b.x[j] + pair.b[lane.slot];
        self.b.pending[p] = f64::INFINITY;
        self.b.events.push((entry(t, lane.guard), guard_rate));
        if self.b.events.len() > self.problem.events.max_events {
            return Err(Fallback);
        }
        self.apply(lane.guard, t, Scope::Pair(p))?;
        if let Some(p) = self.b.moved.pop() {
            self.b.is_moved[p] = false;
            self.predict(p, t);
        }
        Ok(())
    }

    /// Applies transition `k`'s reset at `t` to the entries of `scope`
    /// (their blocks brought to `t`), leaving every other entry as it was,
    /// and lists in `moved` the pairs it moved. Falls back when it makes a
    /// guard due at once or a state non-finite.
    fn apply(&mut self, k: usize, t: f64, scope: Scope) -> Result<(), Fallback> {
        let (problem, plan) = (self.problem, self.plan);
        let reset = &*problem.system.transitions()[k].reset;
        let writes = apply_writes(
            reset,
            t,
            &problem.params,
            (&mut self.b.x, &mut self.b.x_after),
            &mut self.b.before,
        );
        let pair_of = self.pair_of;
        for (&j, &before) in writes.iter().zip(&self.b.before) {
            let p = pair_of[j].0;
            let lane = &plan.lanes[p];
            let ours = match scope {
                Scope::Pair(q) => p == q,
                Scope::Group(g) => lane.group == g,
            };
            if !ours {
                self.b.x[j] = before;
                continue;
            }
            let after = self.b.x[j];
            if before.to_bits() == after.to_bits() {
                continue;
            }
            if !after.is_finite() {
                return Err(Fallback);
            }
            if lane.state == j {
                // The general run's check for a cascade.
                let (before, after) = (before - lane.level, after - lane.level);
                let disarmed = before != 0.0 && lane.direction.violated_at_start(before);
                if !disarmed && pushed_over(lane.direction, before, after) {
                    return Err(Fallback);
                }
            }
            if !self.b.is_moved[p] {
                self.b.is_moved[p] = true;
                self.b.moved.push(p);
            }
        }
        Ok(())
    }
}
