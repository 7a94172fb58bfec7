//! `cuba-lif`: current-based leaky integrate-and-fire neurons in
//! feedforward layers (input spikes -> hidden layer -> output layer). A
//! sized model: the scenario key `"size"` is `[n_in, n_hidden, n_out]`
//! (default `[2, 3, 2]`).
//!
//! One mode, `subthreshold`. Every neuron has a membrane potential `V` and
//! a synaptic current `I`, both starting at 0:
//!
//! ```text
//! tau_mem V' = -V + I
//! tau_syn I' = -I
//! ```
//!
//! Transitions, in this order:
//!
//! - `input<i>` fires once, at `t = t_in<i>` (guard `t - t_in<i>`, rising),
//!   and adds `w_h<j>_in<i>` to every `I_h<j>`;
//! - `spike_h<j>` fires when `V_h<j>` rises through `theta`, sets
//!   `V_h<j> = 0` and adds `w_o<k>_h<j>` to every `I_o<k>`;
//! - `spike_o<k>` fires when `V_o<k>` rises through `theta` and sets
//!   `V_o<k> = 0`.
//!
//! Neurons may fire more than once; there is no refractory period. Times
//! are in ms.
//!
//! | state | default | | parameter | default |
//! |---|---|---|---|---|
//! | `V_h<j>`, `I_h<j>` (per hidden neuron) | 0 | | `tau_mem` | 20 ms |
//! | `V_o<k>`, `I_o<k>` (per output neuron) | 0 | | `tau_syn` | 5 ms |
//! | | | | `theta` | 1 |
//! | | | | `t_in<i>` | `1 + 9 frac(0.381966 i)` ms |
//! | | | | `w_h<j>_in<i>` | `3 + 6 frac(0.618034 (1 + i + n_in j))` |
//! | | | | `w_o<k>_h<j>` | `3 + 6 frac(0.381966 (1 + j + n_hidden k))` |
//!
//! (the input times and weights rounded to two decimals; the default
//! input times are distinct up to `n_in = 100`)
//!
//! States are ordered neuron by neuron (`V_h0, I_h0, V_h1, I_h1, ...`, then
//! `V_o0, I_o0, ...`); parameters `tau_mem, tau_syn, theta`, the input
//! times, the hidden weights (hidden neuron by hidden neuron, each over the
//! inputs), then the output weights (output neuron by output neuron, each
//! over the hidden neurons). Default run: `t_end = 50` ms. The input times
//! must lie inside the run, `0 < t_in<i> < t_end` (see
//! [`Model::check_run`](crate::Model::check_run)).
//!
//! Partials and the sensitivity fast paths are written by hand (checked
//! against finite differences by the catalogue tests): every guard reads one
//! entry and every reset writes its neuron and its targets only.
//! The flow declares its neurons as linear pairs (`Flow::linear_blocks`)
//! and the input guards their levels on time (`Guard::time_threshold`), so
//! the exact event-driven solver (`"method": "exact"`) runs it too.
//!
//! ```
//! use ia_models::{CubaLif, Model};
//!
//! let net = CubaLif::new(2, 3, 2).unwrap();
//! let spec = net.spec();
//! assert_eq!(spec.states.len(), 2 * (3 + 2));
//! assert_eq!(spec.params.len(), 3 + 2 + 2 * 3 + 3 * 2);
//! assert_eq!(spec.params[5].name, "w_h0_in0");
//! assert_eq!(spec.transitions[2].name, "spike_h0");
//! ```

use crate::lif_network::Threshold;
use crate::rules::{ParamRule, Rule};
use crate::size::Size;
use crate::spec::{ModelSpec, Quantity, TransitionSpec};
use ia_core::{
    Direction, Flow, FlowPartials, FromMode, Guard, GuardPartials, HybridError, HybridSystem,
    LinearBlocks, LinearPair, Reset, ResetPartials, Support, Tangent, ToMode,
};

/// Largest number of synapses (weights) accepted.
pub const MAX_SYNAPSES: usize = 10_000_000;
/// Default membrane time constant (ms).
pub const TAU_MEM: f64 = 20.0;
/// Default synaptic time constant (ms).
pub const TAU_SYN: f64 = 5.0;
/// Default threshold.
pub const THETA: f64 = 1.0;
/// Default run length (ms).
pub const T_END: f64 = 50.0;

/// Index of `tau_mem`, `tau_syn`, `theta` among the parameters.
const TAU_MEM_P: usize = 0;
const TAU_SYN_P: usize = 1;
const THETA_P: usize = 2;

fn frac(v: f64) -> f64 {
    v - v.floor()
}

/// `v` rounded to two decimals, so the defaults print short.
fn cents(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// The `cuba-lif` network of `n_in` inputs, `n_hidden` hidden and `n_out`
/// output neurons; see the [module documentation](self).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CubaLif {
    n_in: usize,
    n_hidden: usize,
    n_out: usize,
}

impl Default for CubaLif {
    fn default() -> Self {
        Self::new(2, 3, 2).expect("[2, 3, 2] is valid")
    }
}

impl CubaLif {
    /// The network `[n_in, n_hidden, n_out]`, or an error (key `size`)
    /// naming what is valid: three positive counts, at most
    /// [`MAX_SYNAPSES`] weights.
    pub fn new(n_in: usize, n_hidden: usize, n_out: usize) -> Result<Self, HybridError> {
        Self::from_size(&Size::Counts(vec![n_in, n_hidden, n_out]))
    }

    /// The network of `size`, which must be three positive counts
    /// `[n_in, n_hidden, n_out]`; otherwise an error naming the key `size`.
    pub fn from_size(size: &Size) -> Result<Self, HybridError> {
        let refuse = |why: &str| {
            HybridError::invalid(
                "size",
                size,
                format!(
                    "cuba-lif takes three positive counts [n_in, n_hidden, n_out], like [2, 3, 2]{why}"
                ),
            )
        };
        let &[n_in, n_hidden, n_out] = size.counts() else {
            return Err(refuse(""));
        };
        if n_in == 0 || n_hidden == 0 || n_out == 0 {
            return Err(refuse(""));
        }
        let synapses = n_in
            .checked_mul(n_hidden)
            .zip(n_hidden.checked_mul(n_out))
            .and_then(|(a, b)| a.checked_add(b));
        if synapses.is_none_or(|s| s > MAX_SYNAPSES) {
            return Err(refuse(&format!(
                ", with at most {MAX_SYNAPSES} weights n_in n_hidden + n_hidden n_out"
            )));
        }
        Ok(Self {
            n_in,
            n_hidden,
            n_out,
        })
    }

    /// `[n_in, n_hidden, n_out]`.
    pub fn size(&self) -> [usize; 3] {
        [self.n_in, self.n_hidden, self.n_out]
    }

    /// Index of the parameter `t_in<i>`.
    pub fn input_time_index(&self, i: usize) -> usize {
        3 + i
    }

    /// Index of the parameter `w_h<j>_in<i>`.
    pub fn hidden_weight_index(&self, j: usize, i: usize) -> usize {
        3 + self.n_in + j * self.n_in + i
    }

    /// Index of the parameter `w_o<k>_h<j>`.
    pub fn output_weight_index(&self, k: usize, j: usize) -> usize {
        3 + self.n_in + self.n_hidden * self.n_in + k * self.n_hidden + j
    }

    /// Index of the state `V` of neuron `m` (hidden neurons first, then
    /// output neurons); its `I` follows it.
    fn v_index(m: usize) -> usize {
        2 * m
    }

    fn neurons(&self) -> usize {
        self.n_hidden + self.n_out
    }
}

impl crate::model::Model for CubaLif {
    fn name(&self) -> &'static str {
        "cuba-lif"
    }

    fn spec(&self) -> ModelSpec {
        let q = |name: String, default: f64, unit: &str| Quantity {
            name,
            default,
            unit: unit.to_string(),
        };
        let (n_in, n_h, n_o) = (self.n_in, self.n_hidden, self.n_out);
        let mut states = Vec::with_capacity(2 * self.neurons());
        for (layer, count) in [("h", n_h), ("o", n_o)] {
            for j in 0..count {
                states.push(q(format!("V_{layer}{j}"), 0.0, "1"));
                states.push(q(format!("I_{layer}{j}"), 0.0, "1"));
            }
        }
        let mut params = vec![
            q("tau_mem".into(), TAU_MEM, "ms"),
            q("tau_syn".into(), TAU_SYN, "ms"),
            q("theta".into(), THETA, "1"),
        ];
        params.extend((0..n_in).map(|i| {
            q(
                format!("t_in{i}"),
                cents(1.0 + 9.0 * frac(0.381966 * i as f64)),
                "ms",
            )
        }));
        for j in 0..n_h {
            params.extend((0..n_in).map(|i| {
                let w = cents(3.0 + 6.0 * frac(0.618034 * (1 + i + n_in * j) as f64));
                q(format!("w_h{j}_in{i}"), w, "1")
            }));
        }
        for k in 0..n_o {
            params.extend((0..n_h).map(|j| {
                let w = cents(3.0 + 6.0 * frac(0.381966 * (1 + j + n_h * k) as f64));
                q(format!("w_o{k}_h{j}"), w, "1")
            }));
        }
        let edge = |name: String| TransitionSpec {
            name,
            from: "subthreshold".into(),
            to: "subthreshold".into(),
            direction: Direction::Rising,
        };
        let transitions = (0..n_in)
            .map(|i| edge(format!("input{i}")))
            .chain((0..n_h).map(|j| edge(format!("spike_h{j}"))))
            .chain((0..n_o).map(|k| edge(format!("spike_o{k}"))))
            .collect();
        ModelSpec {
            name: "cuba-lif".into(),
            description: format!(
                "Current-based leaky integrate-and-fire neurons in feedforward layers \
                 [n_in, n_hidden, n_out] = [{n_in}, {n_h}, {n_o}]: tau_mem V' = -V + I, \
                 tau_syn I' = -I per neuron; input<i> fires at t = t_in<i> and adds w_h<j>_in<i> \
                 to each I_h<j>; spike_h<j> when V_h<j> rises through theta, then V_h<j> <- 0 and \
                 I_o<k> += w_o<k>_h<j>; spike_o<k> when V_o<k> rises through theta, then \
                 V_o<k> <- 0. Times in ms."
            ),
            states,
            params,
            modes: vec!["subthreshold".into()],
            initial_mode: "subthreshold".into(),
            t_end: T_END,
            transitions,
        }
    }

    fn param_rules(&self) -> &'static [ParamRule] {
        &[
            ParamRule {
                param: "tau_mem",
                rule: Rule::Positive,
                what: "membrane time constant",
            },
            ParamRule {
                param: "tau_syn",
                rule: Rule::Positive,
                what: "synaptic time constant",
            },
            ParamRule {
                param: "t_in*",
                rule: Rule::InRun,
                what: "input spike time; an input outside the run never fires",
            },
        ]
    }

    fn system(&self) -> HybridSystem {
        let spec = self.spec();
        let states: Vec<&str> = spec.states.iter().map(|s| s.name.as_str()).collect();
        let params: Vec<&str> = spec.params.iter().map(|s| s.name.as_str()).collect();
        let (n_in, n_h, n_o) = (self.n_in, self.n_hidden, self.n_out);
        let mut builder = HybridSystem::builder(&states, &params).mode(
            "subthreshold",
            Synaptic {
                neurons: self.neurons(),
            },
        );
        let edge = (FromMode("subthreshold"), ToMode("subthreshold"));
        for i in 0..n_in {
            let targets = (0..n_h)
                .map(|j| (Self::v_index(j) + 1, self.hidden_weight_index(j, i)))
                .collect();
            let at = At {
                time: [self.input_time_index(i)],
            };
            builder = builder.transition(
                &format!("input{i}"),
                edge.0,
                edge.1,
                at,
                Kick::new(None, targets),
            );
        }
        for m in 0..n_h + n_o {
            let v = Self::v_index(m);
            let (name, targets) = if m < n_h {
                let targets = (0..n_o)
                    .map(|k| (Self::v_index(n_h + k) + 1, self.output_weight_index(k, m)))
                    .collect();
                (format!("spike_h{m}"), targets)
            } else {
                (format!("spike_o{}", m - n_h), Vec::new())
            };
            let threshold = Threshold {
                neuron: [v],
                vth: [THETA_P],
            };
            builder = builder.transition(
                &name,
                edge.0,
                edge.1,
                threshold,
                Kick::new(Some(v), targets),
            );
        }
        crate::table::finish(builder, "cuba-lif")
    }
}

/// `tau_mem V' = -V + I`, `tau_syn I' = -I` for each of `neurons` neurons,
/// state `(V, I)` at `(2m, 2m + 1)`.
#[derive(Clone, Copy, Debug)]
struct Synaptic {
    neurons: usize,
}

impl Flow for Synaptic {
    /// One [`LinearPair`] per neuron `m`: `[V, I]` at `(2m, 2m + 1)`,
    /// `A = [[-1/tau_mem, 1/tau_mem], [0, -1/tau_syn]]`, `b = 0`.
    fn linear_blocks(&self, p: &[f64], blocks: &mut LinearBlocks) -> bool {
        let (tm, ts) = (p[TAU_MEM_P], p[TAU_SYN_P]);
        blocks.a.fill(0.0);
        blocks.b.fill(0.0);
        blocks.pairs.clear();
        blocks.pairs.extend((0..self.neurons).map(|m| {
            let (v, i) = (2 * m, 2 * m + 1);
            LinearPair::new(
                [v, i],
                [[-1.0 / tm, 1.0 / tm], [0.0, -1.0 / ts]],
                [0.0, 0.0],
            )
        }));
        true
    }

    fn rate(&self, _t: f64, x: &[f64], p: &[f64], dxdt: &mut [f64]) {
        let (tm, ts) = (p[TAU_MEM_P], p[TAU_SYN_P]);
        for (d, s) in dxdt.chunks_exact_mut(2).zip(x.chunks_exact(2)) {
            d[0] = (s[1] - s[0]) / tm;
            d[1] = -s[1] / ts;
        }
    }

    fn partials(&self, _t: f64, x: &[f64], p: &[f64], out: &mut FlowPartials) {
        let (tm, ts) = (p[TAU_MEM_P], p[TAU_SYN_P]);
        for m in 0..self.neurons {
            let (v, i) = (2 * m, 2 * m + 1);
            out.x[(v, v)] = -1.0 / tm;
            out.x[(v, i)] = 1.0 / tm;
            out.x[(i, i)] = -1.0 / ts;
            out.p[(v, TAU_MEM_P)] = -(x[i] - x[v]) / (tm * tm);
            out.p[(i, TAU_SYN_P)] = x[i] / (ts * ts);
        }
    }

    fn sensitivity_rate(&self, _t: f64, x: &[f64], p: &[f64], s: &[f64], ds: &mut [f64]) -> bool {
        let (tm, ts) = (p[TAU_MEM_P], p[TAU_SYN_P]);
        let n = x.len();
        for (d, c) in ds.chunks_exact_mut(2).zip(s.chunks_exact(2)) {
            d[0] = (c[1] - c[0]) / tm;
            d[1] = -c[1] / ts;
        }
        // parameter columns: tau_mem is column n, tau_syn column n + 1
        for (m, st) in x.chunks_exact(2).enumerate() {
            ds[(n + TAU_MEM_P) * n + 2 * m] -= (st[1] - st[0]) / (tm * tm);
            ds[(n + TAU_SYN_P) * n + 2 * m + 1] += st[1] / (ts * ts);
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
        let (tm, ts) = (p[TAU_MEM_P], p[TAU_SYN_P]);
        for (o, d) in out.chunks_exact_mut(2).zip(tangent.x.chunks_exact(2)) {
            o[0] = (d[1] - d[0]) / tm;
            o[1] = -d[1] / ts;
        }
        // f_p dp: only the two time constants move the flow.
        let (d_tm, d_ts) = (
            tangent.param.entry(TAU_MEM_P),
            tangent.param.entry(TAU_SYN_P),
        );
        if d_tm != 0.0 {
            for (o, st) in out.chunks_exact_mut(2).zip(x.chunks_exact(2)) {
                o[0] -= (st[1] - st[0]) / (tm * tm) * d_tm;
            }
        }
        if d_ts != 0.0 {
            for (o, st) in out.chunks_exact_mut(2).zip(x.chunks_exact(2)) {
                o[1] += st[1] / (ts * ts) * d_ts;
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
        let (tm, ts) = (p[TAU_MEM_P], p[TAU_SYN_P]);
        let (mut tm_bar, mut ts_bar) = (0.0, 0.0);
        for ((b, w), st) in x_bar
            .chunks_exact_mut(2)
            .zip(v.chunks_exact(2))
            .zip(x.chunks_exact(2))
        {
            b[0] = -w[0] / tm;
            b[1] = w[0] / tm - w[1] / ts;
            tm_bar -= w[0] * (st[1] - st[0]) / (tm * tm);
            ts_bar += w[1] * st[1] / (ts * ts);
        }
        p_bar[TAU_MEM_P] += tm_bar;
        p_bar[TAU_SYN_P] += ts_bar;
        true
    }
}

/// `t - t_in`, rising: fires once, at the input time (parameter `time`).
#[derive(Clone, Copy, Debug)]
struct At {
    time: [usize; 1],
}

impl Guard for At {
    fn direction(&self) -> Direction {
        Direction::Rising
    }

    fn value(&self, t: f64, _x: &[f64], p: &[f64]) -> f64 {
        t - p[self.time[0]]
    }

    fn partials(&self, _t: f64, _x: &[f64], _p: &[f64], out: &mut GuardPartials) {
        out.t = 1.0;
        out.p[self.time[0]] = -1.0;
    }

    fn support(&self) -> Option<Support<'_>> {
        Some(Support {
            states: &[],
            params: &self.time,
        })
    }

    fn time_threshold(&self, p: &[f64]) -> Option<f64> {
        Some(p[self.time[0]])
    }
}

/// Sets the state `reset` (if any) to 0 and adds parameter `w` to state
/// `s` for each target `(s, w)`.
#[derive(Clone, Debug)]
struct Kick {
    reset: Option<usize>,
    targets: Vec<(usize, usize)>,
    /// The reset entry, then the targets.
    writes: Vec<usize>,
}

impl Kick {
    fn new(reset: Option<usize>, targets: Vec<(usize, usize)>) -> Self {
        let writes = reset
            .into_iter()
            .chain(targets.iter().map(|&(s, _)| s))
            .collect();
        Self {
            reset,
            targets,
            writes,
        }
    }
}

impl Reset for Kick {
    fn apply(&self, _t: f64, x: &[f64], p: &[f64], x_after: &mut [f64]) {
        x_after.copy_from_slice(x);
        if let Some(r) = self.reset {
            x_after[r] = 0.0;
        }
        for &(s, w) in &self.targets {
            x_after[s] += p[w];
        }
    }

    fn writes(&self) -> Option<&[usize]> {
        Some(&self.writes)
    }

    /// The targets' currents it adds to (and its own neuron, set to 0: a
    /// superset).
    fn reads(&self) -> Option<&[usize]> {
        Some(&self.writes)
    }

    /// `V <- 0` and `I += w` each read only themselves.
    fn writes_entrywise(&self) -> bool {
        true
    }

    fn apply_in_place(&self, _t: f64, x: &mut [f64], p: &[f64]) -> bool {
        if let Some(r) = self.reset {
            x[r] = 0.0;
        }
        for &(s, w) in &self.targets {
            x[s] += p[w];
        }
        true
    }

    /// `v[r] = 0` (no target moves along the state or time).
    fn jacobian_vector_product_in_place(
        &self,
        _t: f64,
        _x: &[f64],
        _p: &[f64],
        _dt: f64,
        v: &mut [f64],
    ) -> bool {
        if let Some(r) = self.reset {
            v[r] = 0.0;
        }
        true
    }

    fn vector_jacobian_product_in_place(
        &self,
        _t: f64,
        _x: &[f64],
        _p: &[f64],
        v: &mut [f64],
        p_bar: &mut [f64],
    ) -> bool {
        for &(s, w) in &self.targets {
            p_bar[w] += v[s];
        }
        if let Some(r) = self.reset {
            v[r] = 0.0;
        }
        true
    }

    fn partials(&self, _t: f64, _x: &[f64], _p: &[f64], out: &mut ResetPartials) {
        out.x.fill_with_identity();
        if let Some(r) = self.reset {
            out.x[(r, r)] = 0.0;
        }
        for &(s, w) in &self.targets {
            out.p[(s, w)] = 1.0;
        }
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
        if let Some(r) = self.reset {
            out[r] = 0.0;
        }
        // r_p dp: weight w adds to its target's entry.
        for &(s, w) in &self.targets {
            let d = tangent.param.entry(w);
            if d != 0.0 {
                out[s] += d;
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
        if let Some(r) = self.reset {
            x_bar[r] = 0.0;
        }
        for &(s, w) in &self.targets {
            p_bar[w] += v[s];
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Model;
    use ia_core::ParamDirection;

    #[test]
    fn names_follow_the_issue() {
        let net = CubaLif::new(2, 2, 1).unwrap();
        let system = net.system();
        assert_eq!(
            system.state_names(),
            ["V_h0", "I_h0", "V_h1", "I_h1", "V_o0", "I_o0"]
        );
        assert_eq!(
            system.param_names(),
            [
                "tau_mem", "tau_syn", "theta", "t_in0", "t_in1", "w_h0_in0", "w_h0_in1",
                "w_h1_in0", "w_h1_in1", "w_o0_h0", "w_o0_h1"
            ]
        );
        assert_eq!(
            system.transition_names(),
            ["input0", "input1", "spike_h0", "spike_h1", "spike_o0"]
        );
        assert_eq!(net.output_weight_index(0, 1), 10);
        assert_eq!(net.hidden_weight_index(1, 0), 7);
        let p = net.spec().default_params();
        assert_eq!(&p[..3], [20.0, 5.0, 1.0]);
    }

    #[test]
    fn a_size_that_is_not_three_positive_counts_is_refused_naming_the_key() {
        for size in [
            Size::Count(3),
            Size::from([2, 3]),
            Size::from([2, 0, 1]),
            Size::from([1, 2, 3, 4]),
            Size::from([100_000, 1_000, 1]),
        ] {
            let msg = CubaLif::from_size(&size).unwrap_err().to_string();
            assert!(
                msg.starts_with(&format!("invalid size = {size}"))
                    && msg.contains("three positive counts [n_in, n_hidden, n_out]"),
                "{msg}"
            );
        }
        assert_eq!(
            CubaLif::from_size(&Size::from([5, 200, 3])).unwrap().size(),
            [5, 200, 3]
        );
    }

    #[test]
    fn reset_products_equal_the_dense_partials_applied() {
        // Reference: the hand-written dense partials (checked against finite
        // differences by the catalogue tests) multiplied out.
        let net = CubaLif::default();
        let system = net.system();
        let (n, np) = (system.state_dim(), system.param_dim());
        let x: Vec<f64> = (0..n).map(|i| 0.3 + 0.1 * i as f64).collect();
        let p = net.spec().default_params();
        let v: Vec<f64> = (0..n).map(|i| 0.7 - 0.3 * i as f64).collect();
        for tr in system.transitions() {
            let mut d = ResetPartials::zeros(n, np);
            tr.reset.partials(0.0, &x, &p, &mut d);
            let mut jvp = vec![0.0; n];
            let along: Vec<f64> = (0..np).map(|j| 0.25 - 0.125 * (j % 5) as f64).collect();
            for param in [
                ParamDirection::Zero,
                ParamDirection::Unit(0),
                ParamDirection::Unit(np - 1),
                ParamDirection::Unit(net.hidden_weight_index(1, 0)),
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
            // In place: the same products (the written entries of r_x v,
            // the whole of r_x^T v).
            let mut in_place = v.clone();
            assert!(tr
                .reset
                .jacobian_vector_product_in_place(0.0, &x, &p, 0.0, &mut in_place));
            let dense = &d.x * nalgebra::DVector::from_column_slice(&v);
            assert_eq!(in_place.as_slice(), dense.as_slice(), "{}", tr.name);
            let (mut in_place, mut p_in_place) = (v.clone(), vec![0.5; np]);
            assert!(tr.reset.vector_jacobian_product_in_place(
                0.0,
                &x,
                &p,
                &mut in_place,
                &mut p_in_place
            ));
            assert_eq!(in_place, x_bar, "{}", tr.name);
            assert_eq!(p_in_place, p_bar, "{}", tr.name);
            let v = nalgebra::DVector::from_column_slice(&v);
            assert_eq!(x_bar.as_slice(), (d.x.transpose() * &v).as_slice());
            let p_expected = d.p.transpose() * &v;
            for (got, want) in p_bar.iter().zip(p_expected.iter()) {
                assert_eq!(*got, 0.5 + want, "{}", tr.name);
            }
        }
    }

    #[test]
    fn flow_products_equal_the_dense_partials_applied() {
        // Reference: the hand-written dense partials (checked against finite
        // differences by the catalogue tests) multiplied out.
        let net = CubaLif::default();
        let system = net.system();
        let flow = &system.modes()[0].flow;
        let (n, np) = (system.state_dim(), system.param_dim());
        let x: Vec<f64> = (0..n).map(|i| 0.3 + 0.1 * i as f64).collect();
        let p = net.spec().default_params();
        let mut d = FlowPartials::zeros(n, np);
        flow.partials(0.0, &x, &p, &mut d);
        let s: Vec<f64> = (0..n * (n + np)).map(|i| (i as f64 * 0.37).sin()).collect();
        let mut ds = vec![0.0; s.len()];
        assert!(flow.sensitivity_rate(0.0, &x, &p, &s, &mut ds));
        let s_mat = nalgebra::DMatrix::from_column_slice(n, n + np, &s);
        let mut want = &d.x * &s_mat;
        for j in 0..np {
            let mut col = want.column_mut(n + j);
            col += d.p.column(j);
        }
        for (a, b) in ds.iter().zip(want.iter()) {
            assert!((a - b).abs() <= 1e-15 * (1.0 + b.abs()), "{a} {b}");
        }
        let v: Vec<f64> = (0..n).map(|i| 0.7 - 0.3 * i as f64).collect();
        let mut jvp = vec![0.0; n];
        let along: Vec<f64> = (0..np).map(|j| 0.25 - 0.125 * (j % 5) as f64).collect();
        for param in [
            ParamDirection::Zero,
            ParamDirection::Unit(0),
            ParamDirection::Unit(1),
            ParamDirection::Unit(2),
            ParamDirection::Along(&along),
        ] {
            let tangent = Tangent {
                t: 0.0,
                x: &v,
                param,
            };
            assert!(flow.jacobian_vector_product(0.0, &x, &p, tangent, &mut jvp));
            let dp = nalgebra::DVector::from_fn(np, |j, _| param.entry(j));
            let dense = &d.x * nalgebra::DVector::from_column_slice(&v) + &d.p * dp;
            for (a, b) in jvp.iter().zip(dense.iter()) {
                assert!((a - b).abs() <= 1e-15 * (1.0 + b.abs()), "{param:?}");
            }
        }
        let (mut x_bar, mut p_bar) = (vec![0.0; n], vec![0.5; np]);
        assert!(flow.vector_jacobian_product(0.0, &x, &p, &v, &mut x_bar, &mut p_bar));
        let vv = nalgebra::DVector::from_column_slice(&v);
        let xw = d.x.transpose() * &vv;
        let pw = d.p.transpose() * &vv;
        for (a, b) in x_bar.iter().zip(xw.iter()) {
            assert!((a - b).abs() <= 1e-15 * (1.0 + b.abs()));
        }
        for (a, b) in p_bar.iter().zip(pw.iter()) {
            assert!((a - 0.5 - b).abs() <= 1e-15 * (1.0 + b.abs()));
        }
    }
}
