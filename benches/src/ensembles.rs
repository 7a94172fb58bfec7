//! The `ensembles` case (issue 11): 1,000 ball2d-flat scenarios with varied
//! restitution, friction and initial height (`t_end = 2`, dopri5 at
//! `rtol = atol = 1e-10`), each the one-pass adjoint gradient of
//! `x(T) + y(T)`, as the `ensembles` benchmark and its probe run them on
//! an [`ia_adjoint::Batch`] of one worker and of two.
//!
//! ```
//! let system = ia_benches::ensembles::system();
//! let problems = ia_benches::ensembles::problems(&system);
//! assert_eq!(problems.len(), ia_benches::ensembles::SCENARIOS);
//! let loss = ia_benches::ensembles::loss(&system);
//! let batch = ia_adjoint::Batch::with_threads(2).unwrap();
//! assert!(batch.gradient(&problems[..4], &loss).iter().all(|g| g.is_ok()));
//! ```

use ia_adjoint::{LossTerms, Term};
use ia_core::HybridSystem;
use ia_events::{Problem, SolverChoice};

/// How many scenarios an ensemble holds.
pub const SCENARIOS: usize = 1000;

/// The model every scenario runs, `ball2d-flat`.
pub fn system() -> HybridSystem {
    ia_models::by_name("ball2d-flat")
        .expect("a catalogued model")
        .system()
}

/// Scenario `i`: `e` in [0.8, 0.95), `mu` in [0.3, 0.9), `y0` in [1.0, 1.5).
pub fn problems(system: &HybridSystem) -> Vec<Problem<'_>> {
    let spec = ia_models::by_name("ball2d-flat")
        .expect("a catalogued model")
        .spec();
    (0..SCENARIOS)
        .map(|i| {
            let s = i as f64 / SCENARIOS as f64;
            let mut params = spec.default_params();
            params[1] = 0.8 + 0.15 * s;
            params[2] = 0.3 + 0.6 * ((7 * i) % SCENARIOS) as f64 / SCENARIOS as f64;
            let mut x0 = spec.default_state();
            x0[1] = 1.0 + 0.5 * ((13 * i) % SCENARIOS) as f64 / SCENARIOS as f64;
            Problem::new(system, x0, params, spec.t_end).with_solver(SolverChoice::dopri5(1e-10))
        })
        .collect()
}

/// `x(T) + y(T)`.
pub fn loss(system: &HybridSystem) -> LossTerms {
    let term = |of: &str| Term {
        of: of.into(),
        weight: 1.0,
        target: None,
    };
    LossTerms::new(vec![term("final.x"), term("final.y")], system).expect("the model's states")
}
