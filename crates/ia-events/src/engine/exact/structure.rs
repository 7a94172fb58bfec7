//! What the exact solver runs on: each mode's flow coefficients (decoupled
//! entries and 2x2 linear pairs) and each transition's threshold, and the
//! closed-form delay to a crossing.

use crate::pair_form::PairRates;
use ia_core::{Direction, HybridError, HybridSystem, LinearBlocks, Threshold, Transition};

/// A 2x2 linear pair of a mode ([`ia_core::LinearPair`]) with its rates.
pub(super) struct Pair {
    pub(super) entries: [usize; 2],
    pub(super) a: [[f64; 2]; 2],
    pub(super) b: [f64; 2],
    pub(super) rates: PairRates,
    /// The index of its matrix among the mode's distinct ones, whose
    /// factors a stretch forms once.
    pub(super) matrix: usize,
}

/// What a guard the exact solver runs on crosses: a threshold on one state
/// entry ([`ia_core::Guard::threshold`]) or on time
/// ([`ia_core::Guard::time_threshold`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Level {
    /// `g = x_k - level`.
    State(Threshold),
    /// `g = t - level`.
    Time(f64),
}

/// Marks an entry in no pair in [`Structure::pair_of`].
pub(super) const NO_PAIR: usize = usize::MAX;

/// The coefficients and thresholds the exact solver runs on.
pub(super) struct Structure {
    /// `a` of each mode, `n` each (0 on the entries of a pair).
    pub(super) a: Vec<Vec<f64>>,
    /// `b` of each mode (0 on the entries of a pair).
    pub(super) b: Vec<Vec<f64>>,
    /// The pairs of each mode.
    pub(super) pairs: Vec<Vec<Pair>>,
    /// Per mode, the distinct matrices of its pairs (their rates).
    pub(super) matrices: Vec<Vec<PairRates>>,
    /// Per mode and entry, its pair in `pairs` and slot (0 or 1), or
    /// ([`NO_PAIR`], 0).
    pub(super) pair_of: Vec<Vec<(usize, usize)>>,
    /// The level of each transition's guard.
    pub(super) thresholds: Vec<Level>,
    /// The direction of each transition's guard (read at every
    /// prediction: no call through the guard each time).
    pub(super) directions: Vec<Direction>,
    /// Per mode, for each state entry the transitions out of that mode
    /// whose guard reads that entry or the other entry of its pair.
    pub(super) guards_on: Vec<GuardsOn>,
    /// Per mode, the transitions out of it.
    pub(super) leaving: Vec<Vec<usize>>,
}

impl Structure {
    pub(super) fn of(system: &HybridSystem, params: &[f64]) -> Result<Self, HybridError> {
        let (mut blocks, mut declared) = (Vec::new(), Vec::new());
        blocks_of(system, params, &mut blocks, &mut declared);
        Self::from_blocks(system, params, &blocks, &declared)
    }

    /// [`Structure::of`] from each mode's linear blocks at `params`
    /// ([`blocks_of`]; `declared[m]`: whether mode `m`'s flow declared
    /// them).
    fn from_blocks(
        system: &HybridSystem,
        params: &[f64],
        blocks: &[LinearBlocks],
        declared: &[bool],
    ) -> Result<Self, HybridError> {
        let n = system.state_dim();
        let modes = system.modes();
        let names = system.state_names();
        let name = |i: usize| {
            names
                .get(i)
                .map_or_else(|| format!("entry {i}"), |s| format!("'{s}'"))
        };
        let mut a = Vec::with_capacity(modes.len());
        let mut b = Vec::with_capacity(modes.len());
        let mut pairs = Vec::with_capacity(modes.len());
        let mut matrices = Vec::with_capacity(modes.len());
        let mut pair_of = Vec::with_capacity(modes.len());
        for ((mode, blocks), &declared) in modes.iter().zip(blocks).zip(declared) {
            if !declared {
                return Err(HybridError::Unsupported(format!(
                    "the exact solver needs every mode's rates linear in the states with constant coefficients, each entry on its own (x' = a x + b) or coupled to one other entry only (a pair, x' = A x + b), and not reading the time (a flow written in Rust declares them by Flow::decoupled_linear or Flow::linear_blocks); the flow of mode '{}' is not of that form: use a Runge-Kutta solver (dopri5, dop853)",
                    mode.name
                )));
            }
            let (mut am, mut bm) = (blocks.a.clone(), blocks.b.clone());
            if am.len() != n || bm.len() != n {
                return Err(HybridError::Unsupported(format!(
                    "the linear blocks of the flow of mode '{}' give {} coefficients for a state of {n} entries (Flow::linear_blocks must keep n of them)",
                    mode.name,
                    am.len().min(bm.len())
                )));
            }
            let mut of = vec![(NO_PAIR, 0); n];
            let mut mode_pairs = Vec::with_capacity(blocks.pairs.len());
            let mut mode_matrices: Vec<PairRates> = Vec::new();
            let mut kinds: Vec<[[u64; 2]; 2]> = Vec::new();
            for pair in &blocks.pairs {
                let [i, j] = pair.entries;
                if i >= n || j >= n || i == j || of[i].0 != NO_PAIR || of[j].0 != NO_PAIR {
                    return Err(HybridError::Unsupported(format!(
                        "the linear pair on entries ({i}, {j}) of the flow of mode '{}' is not a pair of distinct entries below {n} in no other pair (Flow::linear_blocks)",
                        mode.name
                    )));
                }
                let [[a00, a01], [a10, a11]] = pair.a;
                let coefficients = [a00, a01, a10, a11, pair.b[0], pair.b[1]];
                if let Some(&v) = coefficients.iter().find(|v| !v.is_finite()) {
                    return Err(HybridError::invalid_num(
                        format!(
                            "coefficient of the linear pair ({}, {}) of the flow of mode '{}'",
                            name(i),
                            name(j),
                            mode.name
                        ),
                        v,
                        "must be finite (the parameters give a block x' = A x + b)",
                    ));
                }
                // The rates of a matrix met before are that matrix's (one
                // per layer of a network, not one per neuron).
                let kind = pair.a.map(|row| row.map(f64::to_bits));
                let known = kinds.iter().position(|k| *k == kind);
                let rates = match known {
                    Some(m) => mode_matrices[m],
                    None => PairRates::of(&pair.a),
                };
                if rates.rates().is_none() {
                    return Err(HybridError::Unsupported(format!(
                        "the exact solver needs real rates in every linear pair; the pair ({}, {}) of mode '{}' has complex rates at these parameters ({} +- {}i, an oscillating block): use a Runge-Kutta solver (dopri5, dop853)",
                        name(i),
                        name(j),
                        mode.name,
                        rates.m,
                        (-rates.q).sqrt()
                    )));
                }
                let matrix = match known {
                    Some(m) => m,
                    None => {
                        kinds.push(kind);
                        mode_matrices.push(rates);
                        kinds.len() - 1
                    }
                };
                of[i] = (mode_pairs.len(), 0);
                of[j] = (mode_pairs.len(), 1);
                (am[i], bm[i], am[j], bm[j]) = (0.0, 0.0, 0.0, 0.0);
                mode_pairs.push(Pair {
                    entries: pair.entries,
                    a: pair.a,
                    b: pair.b,
                    rates,
                    matrix,
                });
            }
            if let Some(v) = am.iter().chain(&bm).find(|v| !v.is_finite()) {
                return Err(HybridError::invalid_num(
                    format!("coefficient of the flow of mode '{}'", mode.name),
                    *v,
                    "must be finite (the parameters give a flow x_i' = a_i x_i + b_i)",
                ));
            }
            a.push(am);
            b.push(bm);
            pairs.push(mode_pairs);
            matrices.push(mode_matrices);
            pair_of.push(of);
        }
        let transitions = system.transitions();
        let mut thresholds = Vec::with_capacity(transitions.len());
        // Per mode, (entry, transition), in the order of the transitions.
        let mut reads: Vec<Vec<(usize, usize)>> = vec![Vec::new(); modes.len()];
        let mut leaving = vec![Vec::new(); modes.len()];
        if let [only] = &mut leaving[..] {
            only.reserve_exact(transitions.len());
            reads[0].reserve_exact(2 * transitions.len());
        }
        for (k, tr) in transitions.iter().enumerate() {
            leaving[tr.from].push(k);
            let threshold = match level_of(tr, params, n)? {
                Level::State(threshold) => threshold,
                time => {
                    thresholds.push(time);
                    continue;
                }
            };
            let reads = &mut reads[tr.from];
            reads.push((threshold.state, k));
            let (pair, slot) = pair_of[tr.from][threshold.state];
            if pair != NO_PAIR {
                let other = pairs[tr.from][pair].entries[1 - slot];
                reads.push((other, k));
            }
            thresholds.push(Level::State(threshold));
        }
        let guards_on = reads.iter().map(|reads| GuardsOn::of(n, reads)).collect();
        let directions = transitions.iter().map(|tr| tr.guard.direction()).collect();
        Ok(Self {
            a,
            b,
            pairs,
            matrices,
            pair_of,
            thresholds,
            directions,
            guards_on,
            leaving,
        })
    }

    /// Whether some mode has a linear pair.
    pub(super) fn has_pairs(&self) -> bool {
        self.pairs.iter().any(|p| !p.is_empty())
    }

    /// Forms the guards' levels at `params` again, in place, where every
    /// transition's guard is of the kind it was (on time, or on the same
    /// state entry) with the same direction: `false` (levels left part
    /// formed) where one is not, and the structure must be formed anew.
    fn relevel(&mut self, system: &HybridSystem, params: &[f64]) -> Result<bool, HybridError> {
        let (n, transitions) = (system.state_dim(), system.transitions());
        if transitions.len() != self.thresholds.len() {
            return Ok(false);
        }
        for (k, tr) in transitions.iter().enumerate() {
            let level = level_of(tr, params, n)?;
            let same_kind = match (self.thresholds[k], level) {
                (Level::Time(_), Level::Time(_)) => true,
                (Level::State(was), Level::State(now)) => was.state == now.state,
                _ => false,
            };
            if !same_kind || self.directions[k] != tr.guard.direction() {
                return Ok(false);
            }
            self.thresholds[k] = level;
        }
        Ok(true)
    }
}

/// Each mode's linear blocks at `params` into `blocks` (one a mode, their
/// buffers reused), and in `declared` whether its flow declared them
/// ([`ia_core::Flow::linear_blocks`]).
fn blocks_of(
    system: &HybridSystem,
    params: &[f64],
    blocks: &mut Vec<LinearBlocks>,
    declared: &mut Vec<bool>,
) {
    let (n, modes) = (system.state_dim(), system.modes());
    blocks.resize_with(modes.len(), LinearBlocks::default);
    declared.clear();
    for (mode, blocks) in modes.iter().zip(blocks.iter_mut()) {
        for entries in [&mut blocks.a, &mut blocks.b] {
            entries.clear();
            entries.resize(n, 0.0);
        }
        blocks.pairs.clear();
        declared.push(mode.flow.linear_blocks(params, blocks));
    }
}

/// The level of transition `tr`'s guard at `params` (on a state of `n`
/// entries), or why the exact solver cannot run it.
#[inline]
fn level_of(tr: &Transition, params: &[f64], n: usize) -> Result<Level, HybridError> {
    if let Some(level) = tr.guard.time_threshold(params) {
        if !level.is_finite() {
            return Err(HybridError::invalid_num(
                format!("time threshold of the guard of '{}'", tr.name),
                level,
                "must be a finite time (the guard is t - level)",
            ));
        }
        return Ok(Level::Time(level));
    }
    let threshold = tr.guard.threshold(params).ok_or_else(|| {
        HybridError::Unsupported(format!(
            "the exact solver needs every guard to be a threshold on one state entry (written x - level, the level of the parameters alone) or on time (t - level); a guard written in Rust declares it by Guard::threshold or Guard::time_threshold; the guard of '{}' is not of that form: use a Runge-Kutta solver (dopri5, dop853)",
            tr.name
        ))
    })?;
    if threshold.state >= n || !threshold.level.is_finite() {
        return Err(HybridError::invalid_num(
            format!("threshold of the guard of '{}'", tr.name),
            threshold.level,
            format!(
                "must be a finite level on a state entry below {n} (entry {})",
                threshold.state
            ),
        ));
    }
    Ok(Level::State(threshold))
}

/// The [`Structure`] of a workspace's last exact run, kept with what it
/// was formed from: the next run of the same system whose parameters give
/// the same linear blocks (a training batch: other input times, the same
/// weights and time constants) forms only its guards' levels again
/// ([`Structure::relevel`]), not its pairs, rates and guard lists (about
/// 0.6 M instructions a run of a 1,000-neuron network).
#[derive(Default)]
pub(crate) struct StructureCache {
    kept: Option<Kept>,
    /// Each mode's linear blocks at this run's parameters (buffers kept).
    blocks: Vec<LinearBlocks>,
    /// Whether each mode's flow declared its blocks.
    declared: Vec<bool>,
    /// How many structures were formed anew (a test reads it).
    #[cfg(test)]
    formed: usize,
}

/// A kept structure and what it was formed from besides the levels.
struct Kept {
    blocks: Vec<LinearBlocks>,
    /// Each transition's mode.
    from: Vec<usize>,
    structure: Structure,
}

impl StructureCache {
    /// The structure of `system` at `params`: the kept one with its levels
    /// formed again where the linear blocks and the transitions are as
    /// they were, else one formed anew ([`Structure::of`], whose errors
    /// it gives).
    pub(super) fn structure(
        &mut self,
        system: &HybridSystem,
        params: &[f64],
    ) -> Result<&Structure, HybridError> {
        blocks_of(system, params, &mut self.blocks, &mut self.declared);
        let transitions = system.transitions();
        let reusable = self.kept.as_ref().is_some_and(|kept| {
            self.declared.iter().all(|&d| d)
                && kept.blocks == self.blocks
                && kept.from.len() == transitions.len()
                && transitions
                    .iter()
                    .zip(&kept.from)
                    .all(|(tr, &m)| tr.from == m)
        });
        let kept = match self.kept.take() {
            Some(mut kept) if reusable => match kept.structure.relevel(system, params)? {
                true => kept,
                false => self.form(system, params, Some(kept))?,
            },
            old => self.form(system, params, old)?,
        };
        Ok(&self.kept.insert(kept).structure)
    }

    /// A structure formed anew from the blocks of this run, with the
    /// buffers of `old`'s blocks taken for the next run's.
    fn form(
        &mut self,
        system: &HybridSystem,
        params: &[f64],
        old: Option<Kept>,
    ) -> Result<Kept, HybridError> {
        let structure = Structure::from_blocks(system, params, &self.blocks, &self.declared)?;
        #[cfg(test)]
        {
            self.formed += 1;
        }
        let mut blocks = old.map(|kept| kept.blocks).unwrap_or_default();
        std::mem::swap(&mut blocks, &mut self.blocks);
        let from = system.transitions().iter().map(|tr| tr.from).collect();
        Ok(Kept {
            blocks,
            from,
            structure,
        })
    }

    /// The kept structure, taken out (the cache forms the next anew).
    pub(super) fn take(&mut self) -> Option<Structure> {
        self.kept.take().map(|kept| kept.structure)
    }
}

/// One mode's transitions by the state entry their guards read, as flat
/// arrays (a network's state has one or two guards an entry: no vector
/// each).
pub(super) struct GuardsOn {
    /// Entry `i`'s transitions are `list[start[i]..start[i + 1]]`.
    start: Vec<usize>,
    list: Vec<usize>,
}

impl GuardsOn {
    /// From `(entry, transition)` pairs of one mode, kept in their order
    /// within an entry.
    fn of(n: usize, reads: &[(usize, usize)]) -> Self {
        let mut start = vec![0; n + 1];
        for &(i, _) in reads {
            start[i + 1] += 1;
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut list = vec![0; start[n]];
        for &(i, k) in reads {
            list[fill[i]] = k;
            fill[i] += 1;
        }
        Self { start, list }
    }

    /// The transitions whose guards read entry `i`.
    pub(super) fn on(&self, i: usize) -> &[usize] {
        &self.list[self.start[i]..self.start[i + 1]]
    }
}

/// The delay after which `x' = a x + b` from `x` reaches `level` with a
/// rate that `direction` fires on, if it does.
pub(super) fn crossing_delay(
    x: f64,
    a: f64,
    b: f64,
    level: f64,
    direction: Direction,
) -> Option<f64> {
    let rate = a * x + b;
    let delay = if a == 0.0 {
        (level - x) / b
    } else {
        (a * (level - x) / rate).ln_1p() / a
    };
    let rate_there = a * level + b;
    let fires = match direction {
        Direction::Rising => rate_there > 0.0,
        Direction::Falling => rate_there < 0.0,
        Direction::Either => rate_there != 0.0,
    };
    (delay > 0.0 && delay.is_finite() && fires).then_some(delay)
}

/// Whether a guard of `direction` whose value was `before` (on the side it
/// crosses from, or on zero) is at or beyond zero in its direction at
/// `after`.
pub(super) fn pushed_over(direction: Direction, before: f64, after: f64) -> bool {
    match direction {
        Direction::Rising => after >= 0.0,
        Direction::Falling => after <= 0.0,
        Direction::Either => before != 0.0 && (after == 0.0 || (after > 0.0) != (before > 0.0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference: [`Structure::of`] at each parameter set (levels,
    /// directions, pairs and guard lists compared entry by entry). Other
    /// input times and another threshold reuse the kept structure (one
    /// formed); another synaptic time constant forms one anew; so does
    /// another system with the same transitions but one more neuron; a
    /// threshold that is not finite is refused as `Structure::of` refuses it
    /// and the next run forms anew.
    #[test]
    fn the_kept_structure_is_reused_where_only_the_levels_move() {
        use ia_models::Model;
        let net = ia_models::CubaLif::new(2, 4, 2).unwrap();
        let (system, spec) = (net.system(), net.spec());
        let index = |name: &str| spec.param_index(name).unwrap();
        let same = |a: &Structure, b: &Structure| {
            assert_eq!(a.thresholds, b.thresholds);
            assert_eq!(a.directions, b.directions);
            assert_eq!(
                (&a.a, &a.b, &a.pair_of, &a.leaving),
                (&b.a, &b.b, &b.pair_of, &b.leaving)
            );
            for (pa, pb) in a.pairs.iter().flatten().zip(b.pairs.iter().flatten()) {
                assert_eq!(
                    (pa.entries, pa.a, pa.b, pa.matrix),
                    (pb.entries, pb.a, pb.b, pb.matrix)
                );
            }
            for (ga, gb) in a.guards_on.iter().zip(&b.guards_on) {
                assert_eq!((&ga.start, &ga.list), (&gb.start, &gb.list));
            }
        };
        let mut cache = StructureCache::default();
        let mut params = spec.default_params();
        let check = |cache: &mut StructureCache, params: &[f64], formed: usize| {
            let fresh = Structure::of(&system, params).unwrap();
            same(cache.structure(&system, params).unwrap(), &fresh);
            assert_eq!(cache.formed, formed);
        };
        check(&mut cache, &params, 1);
        params[index("t_in1")] = 2.5;
        check(&mut cache, &params, 1);
        params[index("theta")] = 0.7;
        check(&mut cache, &params, 1);
        params[index("tau_syn")] = 8.0;
        check(&mut cache, &params, 2);
        let mut refused = params.clone();
        refused[index("theta")] = f64::INFINITY;
        let error = cache
            .structure(&system, &refused)
            .err()
            .unwrap()
            .to_string();
        let fresh = Structure::of(&system, &refused).err().unwrap().to_string();
        assert_eq!(error, fresh);
        check(&mut cache, &params, 3);
        let wider = ia_models::CubaLif::new(2, 5, 2).unwrap();
        let (wide_system, wide_params) = (wider.system(), wider.spec().default_params());
        let fresh = Structure::of(&wide_system, &wide_params).unwrap();
        same(cache.structure(&wide_system, &wide_params).unwrap(), &fresh);
        assert_eq!(cache.formed, 4);
    }

    /// Reference: the closed form `x(s) = x_inf + (x - x_inf) e^{a s}`,
    /// `x_inf = -b / a`, solved for `x(s) = c` by hand.
    #[test]
    fn crossing_delays_match_the_closed_form() {
        // Relaxing up towards 1.2 from 0: reaches 1 after tau ln(1.2/0.2).
        let (a, b) = (-100.0, 120.0);
        let s = crossing_delay(0.0, a, b, 1.0, Direction::Rising).unwrap();
        assert!((s - 0.01 * (1.2f64 / 0.2).ln()).abs() < 1e-15);
        // Never reaches a level beyond its equilibrium, nor one behind it.
        assert_eq!(crossing_delay(0.0, a, b, 1.3, Direction::Rising), None);
        assert_eq!(crossing_delay(0.5, a, b, 0.2, Direction::Rising), None);
        // Falling through a level, and the direction check.
        let s = crossing_delay(1.0, -2.0, 0.0, 0.5, Direction::Falling).unwrap();
        assert!((s - 0.5 * 2f64.ln()).abs() < 1e-15);
        assert_eq!(crossing_delay(1.0, -2.0, 0.0, 0.5, Direction::Rising), None);
        // Growing away from its equilibrium, and a constant rate.
        let s = crossing_delay(1.0, 1.0, 0.0, std::f64::consts::E, Direction::Either).unwrap();
        assert!((s - 1.0).abs() < 1e-15);
        assert_eq!(
            crossing_delay(1.0, 0.0, 2.0, 3.0, Direction::Rising),
            Some(1.0)
        );
        assert_eq!(crossing_delay(1.0, 0.0, 0.0, 3.0, Direction::Rising), None);
    }
}
