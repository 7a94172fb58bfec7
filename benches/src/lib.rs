//! # ia-benches: the cases the criterion benchmarks time
//!
//! * [`ball2d`]: the reference case `ball2d_flat_a` (model `ball2d-flat`,
//!   three impacts in `t_end = 2`), with its closed-form derivatives.
//! * [`bumpy`]: a ball bouncing on bumpy ground
//!   `y = sum_{k=1..N} a_k sin(k x) / k^2`, whose state dimension stays 4
//!   while the number of parameters grows with `N` (the `a_k` enter the
//!   guard and the reset's contact normal): the scaling case of forward
//!   sensitivities against the adjoint.
//! * [`ensembles`]: 1,000 varied ball2d-flat gradients, the parallel
//!   batch's case.
//! * [`network`]: the spiking network `lif-network` of N neurons with its
//!   default connectivity and run, and the loss its adjoint benchmark reads
//!   (every final potential and the last ten spike times).
//! * [`thermostat`]: the thermostat's long runs (about one switch per
//!   1.64 time units) by DOPRI5 and DOP853, as the `long_runs` benchmark,
//!   its profiler probe and the allocation tests run them.
//! * [`yinyang_net`]: a 5-N-3 `cuba-lif` network with Yin-Yang-like input
//!   spikes, the exact solver's scaling case (primal events per second and
//!   forward and gradient per sample as N grows).
//! * `peer_diffsol` (feature `peers`): the same `ball2d_flat_a` case through
//!   the diffsol crate's reset-aware forward sensitivities and adjoint.
//!
//! The benchmarks themselves are under `benches/benches/`; the Python peer
//! comparison (`benches/peers/`) and the JAX front's bench (`benches/jax/`)
//! sit beside this crate, under the same timing root (`benches/README.md`);
//! the figures are in `docs/performance.md`.

#![deny(missing_docs)]

pub mod ball2d;
pub mod bumpy;
pub mod ensembles;
pub mod network;
#[cfg(feature = "peers")]
pub mod peer_diffsol;
pub mod stiff;
pub mod thermostat;
pub mod yinyang_net;
