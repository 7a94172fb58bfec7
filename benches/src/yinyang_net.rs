//! The `cuba-lif` case of the exact solver's scaling benchmark: a 5-N-3
//! network of current-based neurons (`tau_mem = 20` ms, `tau_syn = 5` ms,
//! `theta = 1`) driven by Yin-Yang-like input spikes: the features
//! `(x, y, 1 - x, 1 - y)` of a point of the unit square coded as spike
//! times `30 ms x value`, and a bias spike just after the start (the input
//! times must lie inside the run), over a run of 60 ms.
//!
//! The weights follow the EventProp paper's Yin-Yang initialisation (input
//! to hidden normal with mean 1.5 and deviation 0.78, hidden to output mean
//! 0.93 and deviation 0.1), drawn from a fixed seed; the hidden-to-output
//! weights are scaled by `200 / N`, so that the outputs see the drive of the
//! paper's 200 hidden neurons at every size (no runaway output firing).

use ia_adjoint::LossSeeds;
use ia_core::{HybridSystem, Trajectory};
use ia_events::{EventOptions, Problem};
use ia_models::{CubaLif, Model};

/// The run's length, ms.
pub const T_END: f64 = 60.0;

/// A 5-N-3 `cuba-lif` network with Yin-Yang-like inputs.
pub struct YinYangNet {
    /// The model.
    pub model: CubaLif,
    /// Its hybrid system.
    pub system: HybridSystem,
    /// Its parameters.
    pub params: Vec<f64>,
    /// Per transition, whether it is an output spike.
    pub output_spike: Vec<bool>,
}

/// A splitmix64 generator's next uniform number in (0, 1).
fn uniform(state: &mut u64) -> f64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE5_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    ((z >> 11) as f64 + 0.5) / (1u64 << 53) as f64
}

/// A standard normal number (Box-Muller).
fn normal(state: &mut u64) -> f64 {
    let (u, v) = (uniform(state), uniform(state));
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// Sets the input spike times coding the point `(x, y)`: the features
/// `(x, y, 1 - x, 1 - y)` at `30 ms x value`, and the bias spike, each at
/// least 0.01 ms (inside the run).
fn set_input_times(model: &CubaLif, params: &mut [f64], (x, y): (f64, f64)) {
    let times = [30.0 * x, 30.0 * y, 30.0 * (1.0 - x), 30.0 * (1.0 - y), 0.0];
    for (i, t) in times.into_iter().enumerate() {
        params[model.input_time_index(i)] = t.max(0.01);
    }
}

impl YinYangNet {
    /// The network of `hidden` hidden neurons, its inputs coding the point
    /// `(x, y)`.
    pub fn new(hidden: usize, (x, y): (f64, f64)) -> Self {
        let model = CubaLif::new(5, hidden, 3).expect("a valid size");
        let system = model.system();
        let mut params = model.spec().default_params();
        set_input_times(&model, &mut params, (x, y));
        let mut seed = 42;
        for j in 0..hidden {
            for i in 0..5 {
                params[model.hidden_weight_index(j, i)] = 1.5 + 0.78 * normal(&mut seed);
            }
        }
        let scale = 200.0 / hidden as f64;
        for k in 0..3 {
            for j in 0..hidden {
                params[model.output_weight_index(k, j)] = scale * (0.93 + 0.1 * normal(&mut seed));
            }
        }
        let names = system.transition_names();
        let output_spike = names.iter().map(|n| n.starts_with("spike_o")).collect();
        Self {
            model,
            system,
            params,
            output_spike,
        }
    }

    /// The primal run: the exact solver's, keeping the event times and
    /// transitions but no event states (so each neuron is advanced only
    /// when an event touches it).
    pub fn problem(&self) -> Problem<'_> {
        self.problem_with(self.params.clone())
    }

    /// [`YinYangNet::problem`] of the same network with its inputs coding
    /// the point `(x, y)` instead (another sample of a batch).
    pub fn problem_at(&self, (x, y): (f64, f64)) -> Problem<'_> {
        let mut params = self.params.clone();
        set_input_times(&self.model, &mut params, (x, y));
        self.problem_with(params)
    }

    fn problem_with(&self, params: Vec<f64>) -> Problem<'_> {
        let spec = self.model.spec();
        Problem::new(&self.system, spec.default_state(), params, T_END)
            .with_solver(ia_events::SolverChoice::Exact)
            .with_event_options(EventOptions {
                max_events: 10_000_000,
                event_states: false,
                ..EventOptions::default()
            })
    }
}

impl YinYangNet {
    /// The loss the gradient benchmark differentiates: the output neurons'
    /// final potentials and the times of their spikes (what EventProp's
    /// loss reads).
    pub fn loss(&self, trajectory: &Trajectory, seeds: &mut LossSeeds) -> f64 {
        let n = trajectory.final_state.len();
        let mut value = 0.0;
        for i in (n - 6..n).step_by(2) {
            seeds.final_state[i] = 1.0;
            value += trajectory.final_state[i];
        }
        for (k, e) in trajectory.events.iter().enumerate() {
            if self.output_spike[e.transition] {
                seeds.event_times[k] = 1.0;
                value += e.time;
            }
        }
        value
    }
}
