//! A test-only network of current-based neurons (`tau_mem V' = -V + I`,
//! `tau_syn I' = -I` per neuron, declared as 2x2 linear pairs; input
//! spikes at `t_in<i>` add weights to the hidden currents, a hidden spike
//! resets its `V` and adds weights to the output currents, an output spike
//! resets its `V`), built from ia-core types only. Shared by the exact
//! solver's tests of ia-events and ia-adjoint.
#![allow(dead_code)]

use ia_core::{
    Direction, Flow, FlowPartials, FromMode, Guard, GuardPartials, HybridSystem, LinearBlocks,
    LinearPair, Reset, ResetPartials, Threshold, ToMode,
};

/// The network's sizes; state `[clock, V_h0, I_h0, .., V_o0, I_o0, ..]`,
/// parameters `[tau_mem, tau_syn, theta, t_in.., w_h(j, i).., w_o(k, j)..]`.
#[derive(Clone, Copy)]
pub struct Net {
    pub inputs: usize,
    pub hidden: usize,
    pub outputs: usize,
}

impl Net {
    pub fn neurons(&self) -> usize {
        self.hidden + self.outputs
    }
    pub fn v(&self, neuron: usize) -> usize {
        1 + 2 * neuron
    }
    pub fn w_h(&self, j: usize, i: usize) -> usize {
        3 + self.inputs + j * self.inputs + i
    }
    pub fn w_o(&self, k: usize, j: usize) -> usize {
        3 + self.inputs + self.hidden * self.inputs + k * self.hidden + j
    }
    pub fn params(&self) -> usize {
        3 + self.inputs + self.hidden * self.inputs + self.outputs * self.hidden
    }
}

pub struct Neurons(pub Net);

impl Flow for Neurons {
    fn rate(&self, _t: f64, x: &[f64], p: &[f64], dxdt: &mut [f64]) {
        dxdt[0] = 1.0;
        for n in 0..self.0.neurons() {
            let v = self.0.v(n);
            dxdt[v] = (-x[v] + x[v + 1]) / p[0];
            dxdt[v + 1] = -x[v + 1] / p[1];
        }
    }
    fn partials(&self, _t: f64, x: &[f64], p: &[f64], out: &mut FlowPartials) {
        for n in 0..self.0.neurons() {
            let v = self.0.v(n);
            out.x[(v, v)] = -1.0 / p[0];
            out.x[(v, v + 1)] = 1.0 / p[0];
            out.x[(v + 1, v + 1)] = -1.0 / p[1];
            out.p[(v, 0)] = (x[v] - x[v + 1]) / (p[0] * p[0]);
            out.p[(v + 1, 1)] = x[v + 1] / (p[1] * p[1]);
        }
    }
    fn linear_blocks(&self, p: &[f64], blocks: &mut LinearBlocks) -> bool {
        (blocks.a[0], blocks.b[0]) = (0.0, 1.0);
        let a = [[-1.0 / p[0], 1.0 / p[0]], [0.0, -1.0 / p[1]]];
        for n in 0..self.0.neurons() {
            let v = self.0.v(n);
            blocks
                .pairs
                .push(LinearPair::new([v, v + 1], a, [0.0, 0.0]));
        }
        true
    }
}

/// `x[state] - p[level]` rising.
pub struct Above {
    pub state: usize,
    pub level: usize,
}

impl Guard for Above {
    fn direction(&self) -> Direction {
        Direction::Rising
    }
    fn value(&self, _t: f64, x: &[f64], p: &[f64]) -> f64 {
        x[self.state] - p[self.level]
    }
    fn partials(&self, _t: f64, _x: &[f64], _p: &[f64], out: &mut GuardPartials) {
        out.x[self.state] = 1.0;
        out.p[self.level] = -1.0;
    }
    fn threshold(&self, p: &[f64]) -> Option<Threshold> {
        Some(Threshold {
            state: self.state,
            level: p[self.level],
        })
    }
}

/// Sets `x[reset]` to 0 (when some) and adds `p[weight]` to `x[current]`
/// for each `(current, weight)`.
pub struct Kick {
    pub reset: Option<usize>,
    pub adds: Vec<(usize, usize)>,
}

impl Reset for Kick {
    fn apply(&self, _t: f64, x: &[f64], p: &[f64], x_after: &mut [f64]) {
        x_after.copy_from_slice(x);
        if let Some(r) = self.reset {
            x_after[r] = 0.0;
        }
        for &(i, w) in &self.adds {
            x_after[i] += p[w];
        }
    }
    fn partials(&self, _t: f64, _x: &[f64], _p: &[f64], out: &mut ResetPartials) {
        for i in 0..out.x.nrows() {
            out.x[(i, i)] = 1.0;
        }
        if let Some(r) = self.reset {
            out.x[(r, r)] = 0.0;
        }
        for &(i, w) in &self.adds {
            out.p[(i, w)] = 1.0;
        }
    }
}

/// A [`Kick`] that declares the entries it reads and writes (its reset
/// entry and its targets), so that the exact solver may run it lazily
/// (`Reset::reads`); it applies itself into a copy (no
/// `Reset::apply_in_place`).
pub struct DeclaredKick {
    pub kick: Kick,
    pub touched: Vec<usize>,
}

impl DeclaredKick {
    pub fn new(kick: Kick) -> Self {
        let touched = kick
            .reset
            .into_iter()
            .chain(kick.adds.iter().map(|a| a.0))
            .collect();
        Self { kick, touched }
    }
}

impl Reset for DeclaredKick {
    fn apply(&self, t: f64, x: &[f64], p: &[f64], x_after: &mut [f64]) {
        self.kick.apply(t, x, p, x_after);
    }
    fn writes(&self) -> Option<&[usize]> {
        Some(&self.touched)
    }
    fn reads(&self) -> Option<&[usize]> {
        Some(&self.touched)
    }
    fn writes_entrywise(&self) -> bool {
        true
    }
    fn partials(&self, t: f64, x: &[f64], p: &[f64], out: &mut ResetPartials) {
        self.kick.partials(t, x, p, out);
    }
}

pub fn system(net: Net) -> HybridSystem {
    system_with(net, false)
}

/// [`system`], with resets that declare what they read and write
/// ([`DeclaredKick`]) when `declared`.
pub fn system_with(net: Net, declared: bool) -> HybridSystem {
    let mut states = vec!["clock".to_string()];
    for j in 0..net.hidden {
        states.extend([format!("V_h{j}"), format!("I_h{j}")]);
    }
    for k in 0..net.outputs {
        states.extend([format!("V_o{k}"), format!("I_o{k}")]);
    }
    let mut params: Vec<String> = ["tau_mem", "tau_syn", "theta"].map(String::from).into();
    params.extend((0..net.inputs).map(|i| format!("t_in{i}")));
    for j in 0..net.hidden {
        params.extend((0..net.inputs).map(|i| format!("w_h{j}_in{i}")));
    }
    for k in 0..net.outputs {
        params.extend((0..net.hidden).map(|j| format!("w_o{k}_h{j}")));
    }
    let states: Vec<&str> = states.iter().map(String::as_str).collect();
    let params: Vec<&str> = params.iter().map(String::as_str).collect();
    let mut builder = HybridSystem::builder(&states, &params).mode("run", Neurons(net));
    let add = |builder: ia_core::HybridSystemBuilder, name: &str, guard: Above, kick: Kick| {
        if declared {
            builder.transition(
                name,
                FromMode("run"),
                ToMode("run"),
                guard,
                DeclaredKick::new(kick),
            )
        } else {
            builder.transition(name, FromMode("run"), ToMode("run"), guard, kick)
        }
    };
    for i in 0..net.inputs {
        let adds = (0..net.hidden)
            .map(|j| (net.v(j) + 1, net.w_h(j, i)))
            .collect();
        builder = add(
            builder,
            &format!("input{i}"),
            Above {
                state: 0,
                level: 3 + i,
            },
            Kick { reset: None, adds },
        );
    }
    for j in 0..net.hidden {
        let adds = (0..net.outputs)
            .map(|k| (net.v(net.hidden + k) + 1, net.w_o(k, j)))
            .collect();
        builder = add(
            builder,
            &format!("spike_h{j}"),
            Above {
                state: net.v(j),
                level: 2,
            },
            Kick {
                reset: Some(net.v(j)),
                adds,
            },
        );
    }
    for k in 0..net.outputs {
        let v = net.v(net.hidden + k);
        builder = add(
            builder,
            &format!("spike_o{k}"),
            Above { state: v, level: 2 },
            Kick {
                reset: Some(v),
                adds: Vec::new(),
            },
        );
    }
    builder.build().unwrap()
}

/// Parameters with weights from a fixed pseudo-random sequence, strong
/// enough that hidden neurons fire (some more than once) and outputs too.
pub fn params(net: Net, tau_mem: f64, tau_syn: f64, scale: f64) -> Vec<f64> {
    let mut p = vec![0.0; net.params()];
    (p[0], p[1], p[2]) = (tau_mem, tau_syn, 1.0);
    for i in 0..net.inputs {
        p[3 + i] = 0.5 + 3.7 * i as f64;
    }
    let mut seed = 12345u64;
    let mut next = || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 11) as f64 / (1u64 << 53) as f64
    };
    for j in 0..net.hidden {
        for i in 0..net.inputs {
            p[net.w_h(j, i)] = scale * (4.0 * next() - 0.6);
        }
    }
    for k in 0..net.outputs {
        for j in 0..net.hidden {
            p[net.w_o(k, j)] = scale * (6.0 * next() - 1.0);
        }
    }
    p
}

pub const NET: Net = Net {
    inputs: 4,
    hidden: 6,
    outputs: 3,
};
