//! The registry: every model with a closed form, by name, and the
//! dispatcher that evaluates one by name. A new closed form is one file
//! beside this one and one row of [`MODELS`].

use super::ball1d::BALL1D;
use super::ball2d_bowl::BALL2D_BOWL;
use super::ball2d_flat::BALL2D_FLAT;
use super::error::ClosedFormError;
use super::lif::LIF;
use super::limits::DEFAULT_MAX_EVENTS;
use super::model::ClosedFormModel;
use super::solution::ClosedFormSolution;
use super::thermostat::THERMOSTAT;
use super::two_ball::TWO_BALL;

/// The models that have closed forms here: the registry, name -> closed form.
pub const MODELS: &[ClosedFormModel] =
    &[BALL1D, BALL2D_FLAT, BALL2D_BOWL, TWO_BALL, LIF, THERMOSTAT];

/// Looks a model up by name. Underscores are accepted for hyphens
/// (`ball2d_flat` is `ball2d-flat`).
///
/// ```
/// let model = ia_verify::closed_form::closed_form_model("ball2d_flat").unwrap();
/// assert_eq!(model.params, ["g", "e", "mu"]);
/// ```
pub fn closed_form_model(name: &str) -> Result<&'static ClosedFormModel, ClosedFormError> {
    let normalized = name.replace('_', "-");
    MODELS
        .iter()
        .find(|m| m.name == normalized)
        .ok_or_else(|| ClosedFormError::UnknownModel {
            name: name.to_string(),
            valid: MODELS.iter().map(|m| m.name).collect(),
        })
}

/// Closed form of any model in [`MODELS`] by name, with at most
/// [`DEFAULT_MAX_EVENTS`] events.
///
/// `initial_mode` is required for the thermostat (`"off"` or `"on"`) and
/// ignored by the single-mode models.
pub fn closed_form(
    model: &str,
    initial_state: &[f64],
    params: &[f64],
    initial_mode: Option<&str>,
    t_end: f64,
) -> Result<ClosedFormSolution, ClosedFormError> {
    closed_form_with_max_events(
        model,
        initial_state,
        params,
        initial_mode,
        t_end,
        DEFAULT_MAX_EVENTS,
    )
}

/// [`closed_form`] with an explicit cap on the number of events.
pub fn closed_form_with_max_events(
    model: &str,
    initial_state: &[f64],
    params: &[f64],
    initial_mode: Option<&str>,
    t_end: f64,
    max_events: usize,
) -> Result<ClosedFormSolution, ClosedFormError> {
    closed_form_model(model)?.solve(initial_state, params, initial_mode, t_end, max_events)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn every_entry_is_found_by_its_name_once() {
        for model in MODELS {
            assert_eq!(closed_form_model(model.name), Ok(model));
            let same = MODELS.iter().filter(|m| m.name == model.name).count();
            assert_eq!(same, 1, "{} is listed {same} times", model.name);
        }
        let err = closed_form_model("ball3d").unwrap_err();
        assert_eq!(
            err,
            ClosedFormError::UnknownModel {
                name: "ball3d".into(),
                valid: MODELS.iter().map(|m| m.name).collect(),
            }
        );
    }

    /// Reference: the ready models of `ia_models`; every closed form names
    /// one of them, with the same states, parameters and modes (the closed
    /// form may order them its own way: the checks reorder by name).
    #[test]
    fn every_entry_matches_its_ready_model() {
        let set = |names: Vec<String>| names.into_iter().collect::<BTreeSet<_>>();
        let own = |names: &[&str]| names.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
        for cf in MODELS {
            let model = ia_models::by_name(cf.name).expect("a closed form names a ready model");
            let spec = model.spec();
            assert_eq!(set(spec.state_names()), own(cf.states), "{}", cf.name);
            assert_eq!(set(spec.param_names()), own(cf.params), "{}", cf.name);
            let modes = if spec.modes.len() > 1 {
                set(spec.modes.clone())
            } else {
                BTreeSet::new()
            };
            assert_eq!(modes, own(cf.modes), "{}", cf.name);
        }
    }
}
