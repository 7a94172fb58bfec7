//! The spiking-network case: `lif-network` of `N` neurons with the default
//! connectivity (all-to-all up to 10 neurons, 10 inputs per neuron above),
//! the default run (`t_end = 0.15` s, about ten spikes per neuron) at
//! `rtol = atol = 1e-10`, and the loss the adjoint benchmark differentiates.

use ia_adjoint::LossSeeds;
use ia_core::{HybridSystem, Trajectory};
use ia_events::{Problem, SolverChoice};
use ia_models::{LifNetwork, Model};

/// Tolerance of the benchmark runs.
pub const TOL: f64 = 1e-10;

/// Spike times the loss reads, counted from the last.
pub const LAST_SPIKES: usize = 10;

/// The network of `n` neurons, its system and its default run.
pub struct Network {
    /// The model.
    pub model: LifNetwork,
    /// Its hybrid system.
    pub system: HybridSystem,
}

impl Network {
    /// The default network of `n` neurons.
    pub fn new(n: usize) -> Self {
        let model = LifNetwork::new(n).expect("a valid size");
        let system = model.system();
        Self { model, system }
    }

    /// Ten Jacobian columns for the forward benchmark: the initial
    /// potentials of five neurons spread over the network, the drives of
    /// four, and `tau`.
    pub fn chosen_columns(&self) -> Vec<String> {
        let n = self.model.size();
        let spread = |k: usize| k * n / 5;
        let mut columns: Vec<String> = (0..5).map(|k| format!("initial.V{}", spread(k))).collect();
        columns.extend((0..4).map(|k| format!("param.I{}", spread(k))));
        columns.push("param.tau".into());
        columns
    }

    /// The default run.
    pub fn problem(&self) -> Problem<'_> {
        let spec = self.model.spec();
        Problem::new(
            &self.system,
            spec.default_state(),
            spec.default_params(),
            spec.t_end,
        )
        .with_solver(SolverChoice::dopri5(TOL))
        .with_event_options(ia_events::EventOptions {
            max_events: 1_000_000,
            ..Default::default()
        })
    }
}

/// The loss of the adjoint benchmark: the sum of every final potential
/// plus the sum of the last [`LAST_SPIKES`] spike times.
pub fn loss(trajectory: &Trajectory, seeds: &mut LossSeeds) -> f64 {
    seeds.final_state.fill(1.0);
    let events = trajectory.events.len();
    let first = events.saturating_sub(LAST_SPIKES);
    for s in &mut seeds.event_times[first..] {
        *s = 1.0;
    }
    trajectory.final_state.iter().sum::<f64>()
        + trajectory.events[first..]
            .iter()
            .map(|e| e.time)
            .sum::<f64>()
}
