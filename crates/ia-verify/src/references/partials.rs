//! The check of hand-written partial derivatives, from
//! [`ia_core::check`] (where it lives, so that a user needs no verification
//! suite to run it), plus [`sample_points`], which draws points around a
//! ready model of `ia-models`.
//!
//! ```
//! use ia_verify::partials::{check_partials, sample_points};
//! let model = ia_models::by_name("ball2d-bowl").unwrap();
//! let points = sample_points(model.as_ref(), 3, 7);
//! let report = check_partials(&model.system(), &points, 1e-6).unwrap();
//! assert!(report.entries_checked > 0);
//! ```

pub use ia_core::check::{
    check_partials, check_partials_against, sample_points_around, Lcg, PartialsEntry,
    PartialsMismatch, PartialsPoint, PartialsReport, ESTIMATE_WEIGHT, FD_MIN_SCALE,
    FD_RELATIVE_STEP,
};
use ia_models::Model;

/// Draws `per_mode` points in every mode of `model`, around its default
/// state and parameters: each state entry moved by up to
/// `0.2 max(|default|, 0.5)`, each nonzero parameter scaled by up to 20 %
/// (a zero one moved by up to 0.1), the time uniform in `[0, t_end]`. The
/// same `seed` gives the same points.
pub fn sample_points(model: &dyn Model, per_mode: usize, seed: u64) -> Vec<PartialsPoint> {
    let spec = model.spec();
    sample_points_around(
        spec.modes.len(),
        &spec.default_state(),
        &spec.default_params(),
        spec.t_end,
        per_mode,
        seed,
    )
}
