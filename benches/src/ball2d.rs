//! `ball2d_flat_a`: model `ball2d-flat`, `x = 0, y = 1, vx = 1, vy = 0`,
//! `g = 9.81, e = 0.8, mu = 0.7`, `t_end = 2` (three impacts), solved with
//! Dormand-Prince at `rtol = atol = 1e-10`.

use ia_core::HybridSystem;
use ia_events::{Problem, SolverChoice};
use ia_models::{Ball2dFlat, Model};

/// Initial state `(x, y, vx, vy)`.
pub const INITIAL_STATE: [f64; 4] = [0.0, 1.0, 1.0, 0.0];
/// Parameters `(g, e, mu)`.
pub const PARAMS: [f64; 3] = [9.81, 0.8, 0.7];
/// End time.
pub const T_END: f64 = 2.0;
/// Relative and absolute tolerance of the benchmarked runs.
pub const TOL: f64 = 1e-10;

/// `x(T)` from `crates/ia-verify/references/closed_form.json`.
pub const CLOSED_FORM_X_T: f64 = 1.32552002414655;

/// Closed-form gradient of `x(T)` (from
/// `crates/ia-verify/references/closed_form.json`), in the order of
/// [`ia_core::HybridSystem::wrt_names`]: `initial.x, initial.y, initial.vx,
/// initial.vy, param.g, param.e, param.mu`.
pub const CLOSED_FORM_GRAD_X_T: [f64; 7] = [
    1.0,
    0.31976001207327504,
    1.32552002414655,
    0.06697247706422019,
    -0.032595312137948494,
    0.5347846003834996,
    1.8962579514973843,
];

/// The `ball2d-flat` system (hand-written partials).
pub fn system() -> HybridSystem {
    Ball2dFlat.system()
}

/// The benchmarked run of `system` (which must be [`system`]'s).
pub fn problem(system: &HybridSystem) -> Problem<'_> {
    Problem::new(system, INITIAL_STATE.to_vec(), PARAMS.to_vec(), T_END)
        .with_solver(SolverChoice::dopri5(TOL))
}

/// `count` parameter sets `(g, e, mu)`: [`PARAMS`] each scaled by a
/// factor within 2 % of 1 (a fixed sequence), as `benches/jax/bench_jax.py`
/// varies them for its batch of 1,000.
pub fn varied_params(count: usize) -> Vec<[f64; 3]> {
    let mut state = 15_u64;
    let mut uniform = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 11) as f64 / (1_u64 << 53) as f64 * 2.0 - 1.0
    };
    (0..count)
        .map(|_| PARAMS.map(|p| p * (1.0 + 0.02 * uniform())))
        .collect()
}
