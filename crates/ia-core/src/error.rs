//! Every failure the library reports.

use crate::record::Trajectory;
use thiserror::Error;

/// An error of the hybrid integrator or of the sensitivity layer.
///
/// Failures during a run carry the trajectory up to the failure
/// ([`HybridError::trajectory`]).
#[derive(Debug, Error)]
pub enum HybridError {
    /// Events accumulate (Zeno behaviour): too many events, or a run of events
    /// closer together than the configured separation.
    #[error("event accumulation (Zeno): {reason}; {} events were applied, the last at t = {last_event_time}; the trajectory up to there is attached", trajectory.events.len())]
    Zeno {
        /// What tripped the detection.
        reason: String,
        /// Time of the last event applied.
        last_event_time: f64,
        /// The run up to the accumulation.
        trajectory: Box<Trajectory>,
    },
    /// A guard meets zero (nearly) tangentially: its sensitivities are unbounded.
    #[error("grazing event: transition '{transition}' at t = {time} has guard rate {guard_rate:e}, transversality {transversality:e} below the threshold {threshold:e}; event-time sensitivities are unbounded there, so none are returned")]
    Grazing {
        /// Transition whose guard grazes.
        transition: String,
        /// Time of the grazing contact.
        time: f64,
        /// `gdot = g_x f + g_t`.
        guard_rate: f64,
        /// `|gdot| / (|g_x| |f| + |g_t|)`, the cosine between flow and surface normal.
        transversality: f64,
        /// The configured threshold.
        threshold: f64,
        /// The run up to the grazing contact.
        trajectory: Box<Trajectory>,
    },
    /// A state, parameter or other input is NaN or infinite.
    #[error("non-finite {what} at t = {time}: every state, parameter and time must be finite")]
    NonFinite {
        /// What is not finite, by name.
        what: String,
        /// When it was found.
        time: f64,
        /// The run up to there, when the failure happened during a run.
        trajectory: Option<Box<Trajectory>>,
    },
    /// The step size fell below the smallest the solver accepts.
    #[error("step size underflow at t = {time}: step {step:e} is below the smallest allowed {min_step:e}; the problem is too stiff or singular for these tolerances")]
    StepSizeUnderflow {
        /// Time reached.
        time: f64,
        /// The step size that underflowed.
        step: f64,
        /// The smallest allowed step.
        min_step: f64,
        /// The run up to there.
        trajectory: Box<Trajectory>,
    },
    /// A guard starts on or beyond zero in its crossing direction.
    #[error("the guard of transition '{transition}' is already at or beyond zero at the start (value {value:e}, direction {direction}): start strictly on the side the guard crosses from")]
    GuardViolatedAtStart {
        /// The transition.
        transition: String,
        /// Guard value at the start.
        value: f64,
        /// The guard's crossing direction, in words.
        direction: String,
    },
    /// A vector has the wrong length.
    #[error("dimension mismatch in {what}: expected {expected} entries, got {found}")]
    DimensionMismatch {
        /// What has the wrong length.
        what: String,
        /// Length required.
        expected: usize,
        /// Length given.
        found: usize,
    },
    /// An option, tolerance or time span is outside its valid range.
    #[error("invalid {name} = {value}: {valid}")]
    InvalidOption {
        /// Name of the option.
        name: String,
        /// The value given.
        value: String,
        /// What would be valid.
        valid: String,
    },
    /// A name (mode, state, parameter, transition, solver) that does not exist.
    #[error("unknown {kind} '{name}'; valid {kind} names: {}", valid.join(", "))]
    UnknownName {
        /// What kind of name.
        kind: String,
        /// The name given.
        name: String,
        /// The names that exist.
        valid: Vec<String>,
    },
    /// An event could not be located in the step where its guard changed sign.
    #[error("event location failed for transition '{transition}' between t = {from} and t = {to}: {reason}")]
    EventLocation {
        /// Transition whose guard changed sign.
        transition: String,
        /// Step start.
        from: f64,
        /// Step end.
        to: f64,
        /// Why.
        reason: String,
        /// The run up to the step.
        trajectory: Box<Trajectory>,
    },
    /// A request the chosen method cannot serve.
    #[error("unsupported: {0}")]
    Unsupported(String),
}

impl HybridError {
    /// The trajectory up to the failure, when the failure happened during a run.
    pub fn trajectory(&self) -> Option<&Trajectory> {
        match self {
            HybridError::Zeno { trajectory, .. }
            | HybridError::Grazing { trajectory, .. }
            | HybridError::StepSizeUnderflow { trajectory, .. }
            | HybridError::EventLocation { trajectory, .. } => Some(trajectory),
            HybridError::NonFinite { trajectory, .. } => trajectory.as_deref(),
            _ => None,
        }
    }

    /// A short, stable name of the error kind (used by the command line and
    /// the verification tables).
    pub fn kind(&self) -> &'static str {
        match self {
            HybridError::Zeno { .. } => "zeno",
            HybridError::Grazing { .. } => "grazing",
            HybridError::NonFinite { .. } => "non_finite",
            HybridError::StepSizeUnderflow { .. } => "step_size_underflow",
            HybridError::GuardViolatedAtStart { .. } => "guard_violated_at_start",
            HybridError::DimensionMismatch { .. } => "dimension_mismatch",
            HybridError::InvalidOption { .. } => "invalid_option",
            HybridError::UnknownName { .. } => "unknown_name",
            HybridError::EventLocation { .. } => "event_location",
            HybridError::Unsupported(_) => "unsupported",
        }
    }

    /// Shorthand for [`HybridError::InvalidOption`].
    pub fn invalid(
        name: impl Into<String>,
        value: impl ToString,
        valid: impl Into<String>,
    ) -> Self {
        HybridError::InvalidOption {
            name: name.into(),
            value: value.to_string(),
            valid: valid.into(),
        }
    }

    /// Checks that every entry of `values` is finite; names the first that is not.
    pub fn check_finite(
        kind: &str,
        names: &[String],
        values: &[f64],
        time: f64,
    ) -> Result<(), Self> {
        match values.iter().position(|v| !v.is_finite()) {
            None => Ok(()),
            Some(i) => Err(HybridError::NonFinite {
                what: match names.get(i) {
                    Some(name) => format!("{kind} '{name}' (= {})", values[i]),
                    None => format!("{kind}[{i}] (= {})", values[i]),
                },
                time,
                trajectory: None,
            }),
        }
    }
}
