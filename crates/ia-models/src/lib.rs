//! # ia-models: ready hybrid models
//!
//! Each model is a unit struct implementing [`Model`]: [`Model::spec`] describes
//! it (names, units and defaults of its states and parameters, its modes and
//! transitions, a default run length) and [`Model::system`] builds the
//! [`HybridSystem`](ia_core::HybridSystem) with exact partial derivatives.
//!
//! | name | struct | states | parameters | modes |
//! |---|---|---|---|---|
//! | `ball1d` | [`Ball1d`] | h, v | g, e, floor | flight |
//! | `ball2d-flat` | [`Ball2dFlat`] | x, y, vx, vy | g, e, mu | flight |
//! | `ball2d-bowl` | [`Ball2dBowl`] | x, y, vx, vy | g, e, c | flight |
//! | `two-ball` | [`TwoBall`] | x1, x2, v1, v2 | r, m1, m2, e | flight |
//! | `lif` | [`Lif`] | V | I, tau, Vth, Vr | subthreshold |
//! | `lif-network` | [`LifNetwork`] (sized) | `V0 .. V<N-1>` | `I0 .. I<N-1>, tau, Vth, Vr, w<j>_<i>` | subthreshold |
//! | `thermostat` | [`Thermostat`] | T | a, b, Tout, Tlo, Thi | off, on |
//! | `impact-pendulum` | [`ImpactPendulum`] | theta, omega | g, l, e, theta_wall | swing |
//! | `rimless-wheel` | [`RimlessWheel`] | theta, omega | g, l, alpha, gamma | stance |
//! | `slip-hopper` | [`SlipHopper`] | x, y, vx, vy, xf | m, k, l0, g, theta_td | flight, stance |
//! | `particle-chain` | [`ParticleChain`] (sized) | `x0 .. x<N-1>, v0 .. v<N-1>` | `L, r, e, m0 .. m<N-1>` | flight |
//! | `cuba-lif` | [`CubaLif`] (sized, `[n_in, n_hidden, n_out]`) | `V_h<j>, I_h<j>, V_o<k>, I_o<k>` | `tau_mem, tau_syn, theta, t_in<i>, w_h<j>_in<i>, w_o<k>_h<j>` | subthreshold |
//!
//! These names (model, state, parameter, mode and transition names) are a
//! public contract: scenario files and scripts refer to them.
//!
//! All models but [`Ball2dFlat`] get their partials from one generic
//! implementation through [`ia_core::Autodiff`]; `ball2d-flat` has
//! hand-written, allocation-free partials (checked against autodiff in its
//! tests) because benchmarks time it.
//!
//! ```
//! use ia_models::{by_name, Model};
//!
//! let model = by_name("ball2d-flat").unwrap();
//! let spec = model.spec();
//! let system = model.system();
//! assert_eq!(spec.default_state(), vec![0.0, 1.0, 1.0, 0.0]);
//! assert_eq!(system.state_names(), spec.state_names().as_slice());
//! assert!(by_name("nope").is_err());
//! ```

#![deny(missing_docs)]

#[macro_use]
mod table;

pub mod ball1d;
pub mod ball2d_bowl;
pub mod ball2d_flat;
mod catalog;
pub mod cuba_lif;
pub mod impact_pendulum;
pub mod lif;
pub mod lif_network;
mod model;
pub mod particle_chain;
pub mod rimless_wheel;
pub mod rules;
mod size;
pub mod slip_hopper;
mod spec;
pub mod thermostat;
pub mod two_ball;

pub use ball1d::Ball1d;
pub use ball2d_bowl::Ball2dBowl;
pub use ball2d_flat::Ball2dFlat;
pub use catalog::{by_name, catalog, model_names, sized, SIZED_MODELS};
pub use cuba_lif::CubaLif;
pub use impact_pendulum::ImpactPendulum;
pub use lif::Lif;
pub use lif_network::LifNetwork;
pub use model::Model;
pub use particle_chain::ParticleChain;
pub use rimless_wheel::RimlessWheel;
pub use rules::{ParamRule, Relation, Rule};
pub use size::Size;
pub use slip_hopper::SlipHopper;
pub use spec::{ModelSpec, Quantity, TransitionSpec};
pub use thermostat::Thermostat;
pub use two_ball::TwoBall;
