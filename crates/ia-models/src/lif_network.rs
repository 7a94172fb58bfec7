//! `lif-network`: N leaky integrate-and-fire neurons coupled by delta
//! synapses. A sized model: the scenario key `"size"` gives N (default 3).
//!
//! One mode, `subthreshold`, and one transition per neuron, `spike<i>`
//! (subthreshold -> subthreshold).
//!
//! Flow, with a constant drive `I<i>` per neuron and a shared membrane time
//! constant `tau`:
//!
//! ```text
//! V<i>' = (I<i> - V<i>) / tau
//! ```
//!
//! Guard of `spike<i>`: `V<i> - Vth`, firing when it rises through zero.
//!
//! Reset of `spike<i>`: `V<i> <- Vr`, and every neuron `j` with a synapse
//! from `i` is kicked, `V<j> <- V<j> + w<j>_<i>`. A kick that lifts a
//! neuron to its threshold or past it makes it fire at the same instant (a
//! cascade; see the event rules of `ia_events::vocabulary`).
//!
//! | state | default | | parameter | default |
//! |---|---|---|---|---|
//! | `V<i>` | `0.9 frac(0.381966 i)` | | `I<i>` | `1.2 + 0.2 frac(0.618034 i)` |
//! | | | | `tau` | 0.01 s |
//! | | | | `Vth` | 1 |
//! | | | | `Vr` | 0 |
//! | | | | `w<j>_<i>` (one per synapse i -> j) | -0.02 |
//!
//! Parameters are ordered `I0 .. I<N-1>`, `tau`, `Vth`, `Vr`, then the
//! weights in the order of [`LifNetwork::connections`] (the default
//! networks list the synapses onto neuron 0 first, then onto neuron 1, ...).
//!
//! Default connectivity: all-to-all without self-synapses up to
//! [`ALL_TO_ALL_UP_TO`] neurons; above that every neuron receives
//! [`INPUTS_PER_NEURON`] synapses from distinct other neurons drawn by a
//! fixed-seed generator, so the same N always gives the same network. The
//! default weights are inhibitory, so no kick lifts a neuron towards its
//! threshold and the default network has no cascade; give your own
//! connections ([`LifNetwork::with_connections`]) and weights for excitatory
//! coupling. The drives all exceed the threshold, so every neuron fires
//! periodically (about every 15 ms uncoupled): the default run,
//! `t_end = 0.15` s, has about ten spikes per neuron.
//!
//! Partials and the sensitivity fast paths are written by hand (checked
//! against finite differences by the catalogue tests); every guard reads one
//! state and every reset changes its neuron and its targets only.
//!
//! ```
//! use ia_models::{LifNetwork, Model};
//!
//! let net = LifNetwork::new(4).unwrap();
//! let spec = net.spec();
//! assert_eq!(spec.states.len(), 4);
//! assert_eq!(spec.transitions.len(), 4);
//! // all-to-all: 4 x 3 synapses, so 4 drives + tau, Vth, Vr + 12 weights
//! assert_eq!(spec.params.len(), 19);
//! assert_eq!(spec.params[7].name, "w0_1"); // the synapse 1 -> 0
//! ```

use crate::rules::{ParamRule, Relation, Rule, RESET_BELOW_THRESHOLD};
use crate::spec::{ModelSpec, Quantity, TransitionSpec};
use ia_core::{
    Direction, Flow, FlowPartials, FromMode, Guard, GuardPartials, HybridError, HybridSystem,
    Reset, ResetPartials, Support, Tangent, ToMode,
};

/// Sizes up to which the default network is all-to-all.
pub const ALL_TO_ALL_UP_TO: usize = 10;
/// Inputs per neuron of the default sparse network (sizes above
/// [`ALL_TO_ALL_UP_TO`]).
pub const INPUTS_PER_NEURON: usize = 10;
/// Default synaptic weight (inhibitory).
pub const DEFAULT_WEIGHT: f64 = -0.02;
/// Largest size accepted.
pub const MAX_SIZE: usize = 100_000;

const TAU: f64 = 0.01;
const VTH: f64 = 1.0;
const VR: f64 = 0.0;

fn frac(v: f64) -> f64 {
    v - v.floor()
}

/// The `lif-network` model of `size` neurons; see the
/// [module documentation](self).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LifNetwork {
    size: usize,
    /// Synapses `(from, to)`.
    connections: Vec<(usize, usize)>,
}

impl Default for LifNetwork {
    fn default() -> Self {
        Self::new(3).expect("size 3 is valid")
    }
}

impl LifNetwork {
    /// The network of `size` neurons with the default connectivity, or an
    /// error naming the valid sizes.
    pub fn new(size: usize) -> Result<Self, HybridError> {
        check_size(size)?;
        Ok(Self {
            size,
            connections: default_connections(size),
        })
    }

    /// The network of `size` neurons with the synapses `(from, to)` given,
    /// in that order (each gets a weight parameter `w<to>_<from>`). A
    /// neuron index out of range, a self-synapse or a repeated synapse is
    /// an error.
    pub fn with_connections(
        size: usize,
        connections: Vec<(usize, usize)>,
    ) -> Result<Self, HybridError> {
        check_size(size)?;
        let mut seen = std::collections::HashSet::with_capacity(connections.len());
        for &(from, to) in &connections {
            let problem = if from >= size || to >= size {
                Some(format!("neurons are numbered 0 to {}", size - 1))
            } else if from == to {
                Some("a neuron has no synapse onto itself".to_string())
            } else if !seen.insert((from, to)) {
                Some("each synapse is given once".to_string())
            } else {
                None
            };
            if let Some(reason) = problem {
                return Err(HybridError::invalid(
                    "connections",
                    format!("[{from}, {to}]"),
                    format!("a synapse is [from, to]; {reason}"),
                ));
            }
        }
        Ok(Self { size, connections })
    }

    /// Number of neurons.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The synapses `(from, to)`, in the order of their weight parameters.
    pub fn connections(&self) -> &[(usize, usize)] {
        &self.connections
    }

    fn weight_offset(&self) -> usize {
        self.size + 3
    }
}

fn check_size(size: usize) -> Result<(), HybridError> {
    if (1..=MAX_SIZE).contains(&size) {
        Ok(())
    } else {
        Err(HybridError::invalid(
            "size",
            size,
            format!("the number of lif-network neurons is 1 to {MAX_SIZE}"),
        ))
    }
}

/// All-to-all for small sizes; a fixed-seed sparse pattern above.
fn default_connections(size: usize) -> Vec<(usize, usize)> {
    if size <= ALL_TO_ALL_UP_TO {
        return (0..size)
            .flat_map(|to| {
                (0..size)
                    .filter(move |&from| from != to)
                    .map(move |from| (from, to))
            })
            .collect();
    }
    // xorshift64*: a fixed generator, so a size always gives one network.
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    let mut out = Vec::with_capacity(size * INPUTS_PER_NEURON);
    let mut chosen = Vec::with_capacity(INPUTS_PER_NEURON);
    for to in 0..size {
        chosen.clear();
        while chosen.len() < INPUTS_PER_NEURON {
            let from = (next() % size as u64) as usize;
            if from != to && !chosen.contains(&from) {
                chosen.push(from);
            }
        }
        chosen.sort_unstable();
        out.extend(chosen.iter().map(|&from| (from, to)));
    }
    out
}

impl crate::model::Model for LifNetwork {
    fn name(&self) -> &'static str {
        "lif-network"
    }

    fn spec(&self) -> ModelSpec {
        let q = |name: String, default: f64, unit: &str| Quantity {
            name,
            default,
            unit: unit.to_string(),
        };
        let n = self.size;
        let states = (0..n)
            .map(|i| q(format!("V{i}"), 0.9 * frac(0.381966 * i as f64), "1"))
            .collect();
        let mut params: Vec<Quantity> = (0..n)
            .map(|i| q(format!("I{i}"), 1.2 + 0.2 * frac(0.618034 * i as f64), "1"))
            .collect();
        params.push(q("tau".into(), TAU, "s"));
        params.push(q("Vth".into(), VTH, "1"));
        params.push(q("Vr".into(), VR, "1"));
        params.extend(
            self.connections
                .iter()
                .map(|&(from, to)| q(format!("w{to}_{from}"), DEFAULT_WEIGHT, "1")),
        );
        ModelSpec {
            name: "lif-network".into(),
            description: format!(
                "{n} leaky integrate-and-fire neurons with delta synapses: V<i>' = (I<i> - V<i>)/tau; \
                 spike<i> when V<i> - Vth rises through 0, then V<i> <- Vr and V<j> += w<j>_<i> \
                 for each synapse i -> j ({} synapses).",
                self.connections.len()
            ),
            states,
            params,
            modes: vec!["subthreshold".into()],
            initial_mode: "subthreshold".into(),
            t_end: 0.15,
            transitions: (0..n)
                .map(|i| TransitionSpec {
                    name: format!("spike{i}"),
                    from: "subthreshold".into(),
                    to: "subthreshold".into(),
                    direction: Direction::Rising,
                })
                .collect(),
        }
    }

    fn param_rules(&self) -> &'static [ParamRule] {
        &[ParamRule {
            param: "tau",
            rule: Rule::Positive,
            what: "membrane time constant",
        }]
    }

    fn relations(&self) -> &'static [Relation] {
        &[RESET_BELOW_THRESHOLD]
    }

    fn system(&self) -> HybridSystem {
        let spec = self.spec();
        let states: Vec<&str> = spec.states.iter().map(|s| s.name.as_str()).collect();
        let params: Vec<&str> = spec.params.iter().map(|s| s.name.as_str()).collect();
        let n = self.size;
        let mut targets = vec![Vec::new(); n];
        for (k, &(from, to)) in self.connections.iter().enumerate() {
            targets[from].push((to, self.weight_offset() + k));
        }
        let mut builder = HybridSystem::builder(&states, &params).mode("subthreshold", Leak { n });
        for (i, targets) in targets.into_iter().enumerate() {
            builder = builder.transition(
                &format!("spike{i}"),
                FromMode("subthreshold"),
                ToMode("subthreshold"),
                Threshold {
                    neuron: [i],
                    vth: [n + 1],
                },
                Spike {
                    neuron: i,
                    vr: n + 2,
                    writes: std::iter::once(i)
                        .chain(targets.iter().map(|&(j, _)| j))
                        .collect(),
                    targets,
                },
            );
        }
        crate::table::finish(builder, "lif-network")
    }
}

/// `V<i>' = (I<i> - V<i>) / tau` for `n` neurons (`I<i>` is parameter `i`,
/// `tau` parameter `n`).
#[derive(Clone, Copy, Debug)]
struct Leak {
    n: usize,
}

impl Flow for Leak {
    fn rate(&self, _t: f64, x: &[f64], p: &[f64], dxdt: &mut [f64]) {
        let tau = p[self.n];
        for ((d, &v), &drive) in dxdt.iter_mut().zip(x).zip(&p[..self.n]) {
            *d = (drive - v) / tau;
        }
    }

    /// `a_i = -1/tau`, `b_i = I<i>/tau`.
    fn decoupled_linear(&self, p: &[f64], a: &mut [f64], b: &mut [f64]) -> bool {
        let tau = p[self.n];
        a.fill(-1.0 / tau);
        for (b, &drive) in b.iter_mut().zip(&p[..self.n]) {
            *b = drive / tau;
        }
        true
    }

    fn partials(&self, _t: f64, x: &[f64], p: &[f64], out: &mut FlowPartials) {
        let n = self.n;
        let tau = p[n];
        for i in 0..n {
            out.x[(i, i)] = -1.0 / tau;
            out.p[(i, i)] = 1.0 / tau;
            out.p[(i, n)] = -(p[i] - x[i]) / (tau * tau);
        }
    }

    fn sensitivity_rate(&self, _t: f64, x: &[f64], p: &[f64], s: &[f64], ds: &mut [f64]) -> bool {
        let n = self.n;
        let tau = p[n];
        for (d, v) in ds.iter_mut().zip(s) {
            *d = -v / tau;
        }
        // parameter columns: I<i> is column n + i, tau column 2n
        for i in 0..n {
            ds[(n + i) * n + i] += 1.0 / tau;
            ds[2 * n * n + i] -= (p[i] - x[i]) / (tau * tau);
        }
        true
    }

    fn jacobian_vector_product(
        &self,
        _t: f64,
        x: &[f64],
        p: &[f64],
        tangent: Tangent<'_>,
        out: &mut [f64],
    ) -> bool {
        let n = self.n;
        let tau = p[n];
        for (o, dx) in out.iter_mut().zip(tangent.x) {
            *o = -dx / tau;
        }
        // f_p dp: input I<i> moves entry i, tau every entry.
        let dp = tangent.param;
        for (i, o) in out.iter_mut().enumerate() {
            let d = dp.entry(i);
            if d != 0.0 {
                *o += d / tau;
            }
        }
        let d_tau = dp.entry(n);
        if d_tau != 0.0 {
            for (i, o) in out.iter_mut().enumerate() {
                *o -= (p[i] - x[i]) / (tau * tau) * d_tau;
            }
        }
        true
    }

    fn vector_jacobian_product(
        &self,
        _t: f64,
        x: &[f64],
        p: &[f64],
        v: &[f64],
        x_bar: &mut [f64],
        p_bar: &mut [f64],
    ) -> bool {
        let n = self.n;
        let tau = p[n];
        let mut tau_bar = 0.0;
        for i in 0..n {
            x_bar[i] = -v[i] / tau;
            p_bar[i] += v[i] / tau;
            tau_bar -= v[i] * (p[i] - x[i]) / (tau * tau);
        }
        p_bar[n] += tau_bar;
        true
    }
}

/// `V<neuron> - Vth`, rising (`Vth` is parameter `vth`); also the
/// threshold of `cuba-lif`'s neurons.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Threshold {
    pub(crate) neuron: [usize; 1],
    pub(crate) vth: [usize; 1],
}

impl Guard for Threshold {
    fn direction(&self) -> Direction {
        Direction::Rising
    }

    fn value(&self, _t: f64, x: &[f64], p: &[f64]) -> f64 {
        x[self.neuron[0]] - p[self.vth[0]]
    }

    fn partials(&self, _t: f64, _x: &[f64], _p: &[f64], out: &mut GuardPartials) {
        out.x[self.neuron[0]] = 1.0;
        out.p[self.vth[0]] = -1.0;
    }

    fn support(&self) -> Option<Support<'_>> {
        Some(Support {
            states: &self.neuron,
            params: &self.vth,
        })
    }

    fn threshold(&self, p: &[f64]) -> Option<ia_core::Threshold> {
        Some(ia_core::Threshold {
            state: self.neuron[0],
            level: p[self.vth[0]],
        })
    }
}

/// `V<neuron> <- Vr`, `V<j> += w` for each `(j, weight parameter)` target.
#[derive(Clone, Debug)]
struct Spike {
    neuron: usize,
    vr: usize,
    targets: Vec<(usize, usize)>,
    /// The neuron, then its targets.
    writes: Vec<usize>,
}

impl Reset for Spike {
    fn apply(&self, _t: f64, x: &[f64], p: &[f64], x_after: &mut [f64]) {
        x_after.copy_from_slice(x);
        x_after[self.neuron] = p[self.vr];
        for &(j, w) in &self.targets {
            x_after[j] += p[w];
        }
    }

    fn writes(&self) -> Option<&[usize]> {
        Some(&self.writes)
    }

    fn jacobian_vector_product(
        &self,
        _t: f64,
        _x: &[f64],
        _p: &[f64],
        tangent: Tangent<'_>,
        out: &mut [f64],
    ) -> bool {
        out.copy_from_slice(tangent.x);
        // The neuron's entry is set to v_r; weight w adds to its target's.
        out[self.neuron] = tangent.param.entry(self.vr);
        for &(target, w) in &self.targets {
            let d = tangent.param.entry(w);
            if d != 0.0 {
                out[target] += d;
            }
        }
        true
    }

    fn vector_jacobian_product(
        &self,
        _t: f64,
        _x: &[f64],
        _p: &[f64],
        v: &[f64],
        x_bar: &mut [f64],
        p_bar: &mut [f64],
    ) -> bool {
        x_bar.copy_from_slice(v);
        x_bar[self.neuron] = 0.0;
        p_bar[self.vr] += v[self.neuron];
        for &(j, w) in &self.targets {
            p_bar[w] += v[j];
        }
        true
    }

    fn partials(&self, _t: f64, _x: &[f64], _p: &[f64], out: &mut ResetPartials) {
        out.x.fill_with_identity();
        out.x[(self.neuron, self.neuron)] = 0.0;
        out.p[(self.neuron, self.vr)] = 1.0;
        for &(j, w) in &self.targets {
            out.p[(j, w)] = 1.0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Model;
    use ia_core::ParamDirection;

    #[test]
    fn default_connectivity_is_all_to_all_then_sparse_with_fixed_inputs() {
        assert_eq!(LifNetwork::new(3).unwrap().connections().len(), 6);
        let big = LifNetwork::new(200).unwrap();
        assert_eq!(big.connections().len(), 200 * INPUTS_PER_NEURON);
        for to in 0..200 {
            let inputs: Vec<_> = big.connections().iter().filter(|c| c.1 == to).collect();
            assert_eq!(inputs.len(), INPUTS_PER_NEURON);
            assert!(inputs.iter().all(|c| c.0 != to));
        }
        assert_eq!(big, LifNetwork::new(200).unwrap(), "fixed seed");
    }

    #[test]
    fn bad_sizes_and_connections_are_refused_with_the_reason() {
        assert!(LifNetwork::new(0).unwrap_err().to_string().contains("1 to"));
        let err = LifNetwork::with_connections(3, vec![(0, 3)]).unwrap_err();
        assert!(err.to_string().contains("numbered 0 to 2"), "{err}");
        let err = LifNetwork::with_connections(3, vec![(1, 1)]).unwrap_err();
        assert!(err.to_string().contains("onto itself"), "{err}");
        let err = LifNetwork::with_connections(3, vec![(0, 1), (0, 1)]).unwrap_err();
        assert!(err.to_string().contains("once"), "{err}");
    }

    #[test]
    fn reset_products_equal_the_dense_partials_applied() {
        // Reference: the hand-written dense partials (checked against finite
        // differences by the catalogue tests) multiplied out.
        let net = LifNetwork::new(4).unwrap();
        let system = net.system();
        let (n, np) = (system.state_dim(), system.param_dim());
        let x = [0.3, 0.99, 0.5, 0.1];
        let p = net.spec().default_params();
        let v: Vec<f64> = (0..n).map(|i| 0.7 - 0.3 * i as f64).collect();
        for tr in system.transitions() {
            let mut d = ResetPartials::zeros(n, np);
            tr.reset.partials(0.0, &x, &p, &mut d);
            let mut jvp = vec![0.0; n];
            let along: Vec<f64> = (0..np).map(|j| 0.25 - 0.125 * (j % 5) as f64).collect();
            for param in [
                ParamDirection::Zero,
                ParamDirection::Unit(n + 2),
                ParamDirection::Unit(np - 1),
                ParamDirection::Unit(0),
                ParamDirection::Along(&along),
            ] {
                let tangent = Tangent {
                    t: 0.0,
                    x: &v,
                    param,
                };
                assert!(tr
                    .reset
                    .jacobian_vector_product(0.0, &x, &p, tangent, &mut jvp));
                let dp = nalgebra::DVector::from_fn(np, |j, _| param.entry(j));
                let dense = &d.x * nalgebra::DVector::from_column_slice(&v) + &d.p * dp;
                assert_eq!(jvp.as_slice(), dense.as_slice(), "{} {param:?}", tr.name);
            }
            let (mut x_bar, mut p_bar) = (vec![0.0; n], vec![0.5; np]);
            assert!(tr
                .reset
                .vector_jacobian_product(0.0, &x, &p, &v, &mut x_bar, &mut p_bar));
            let v = nalgebra::DVector::from_column_slice(&v);
            assert_eq!(x_bar.as_slice(), (d.x.transpose() * &v).as_slice());
            let p_expected = d.p.transpose() * &v;
            for (got, want) in p_bar.iter().zip(p_expected.iter()) {
                assert_eq!(*got, 0.5 + want, "{}", tr.name);
            }
        }
    }

    #[test]
    fn names_follow_the_contract() {
        let net = LifNetwork::with_connections(3, vec![(0, 2)]).unwrap();
        let system = net.system();
        assert_eq!(system.state_names(), ["V0", "V1", "V2"]);
        assert_eq!(
            system.param_names(),
            ["I0", "I1", "I2", "tau", "Vth", "Vr", "w2_0"]
        );
        assert_eq!(system.transition_names(), ["spike0", "spike1", "spike2"]);
    }
}
