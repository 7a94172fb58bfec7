//! Every failure the library reports.

use crate::record::{SolverStats, Trajectory};
use thiserror::Error;

/// An error of the hybrid integrator or of the sensitivity layer.
///
/// Failures during a run carry the trajectory up to the failure
/// ([`HybridError::trajectory`]).
#[derive(Debug, Error)]
pub enum HybridError {
    /// Events accumulate (Zeno behaviour): too many events, or a run of events
    /// closer together than the configured separation.
    #[error("event accumulation (Zeno): {reason}; {} events were applied, the last at t = {}; end the run before the accumulation (a shorter t_end)", trajectory.events.len(), short_num(*last_event_time))]
    Zeno {
        /// What tripped the detection.
        reason: String,
        /// Time of the last event applied.
        last_event_time: f64,
        /// The run up to the accumulation.
        trajectory: Box<Trajectory>,
    },
    /// A guard meets zero (nearly) tangentially: its sensitivities are unbounded.
    #[error("grazing event: transition '{transition}' at t = {} has guard rate {guard_rate:e}, transversality {transversality:e} below the threshold {threshold:e}; event-time sensitivities are unbounded there, so none are returned; start further from the tangential contact", short_num(*time))]
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
    #[error("non-finite {what} at t = {}: every state, parameter, derivative and time must be finite", short_num(*time))]
    NonFinite {
        /// What is not finite, by name.
        what: String,
        /// When it was found.
        time: f64,
        /// The run up to there, when the failure happened during a run.
        trajectory: Option<Box<Trajectory>>,
    },
    /// The stage equations of an implicit method did not converge at any
    /// step size: Newton's iteration diverged even on the smallest steps.
    #[error("Newton failure at t = {} in mode '{mode}': the implicit stage equations did not converge down to step {step:e}; check the flow's partial derivatives (the Newton matrix uses them), or use an explicit method (dopri5) if the flow is not stiff", short_num(*time))]
    NewtonFailure {
        /// Time reached (the start of the step that failed).
        time: f64,
        /// The mode the run was in.
        mode: String,
        /// The last step size tried.
        step: f64,
        /// The run up to there.
        trajectory: Box<Trajectory>,
    },
    /// The step size fell below the smallest the solver accepts.
    #[error("step size underflow at t = {}: step {step:e} is below the smallest allowed {min_step:e}; {}{}", short_num(*time), underflow_advice(*time, *min_step), stiffness_advice(&trajectory.stats))]
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
    /// The run took its step limit (`max_steps`) before reaching its end: a
    /// bound that keeps a run with absurdly small steps from exhausting
    /// time and memory (the adjoint's tape holds every step).
    #[error("the run took max_steps = {max_steps} steps and reached only t = {} of t_end = {}; take larger steps (a looser tolerance or a larger fixed dt), shorten t_end, or raise max_steps (the adjoint holds every step in memory){}", short_num(six_digits(*time)), short_num(*t_end), stiffness_advice(&trajectory.stats))]
    StepLimit {
        /// The limit.
        max_steps: usize,
        /// Time reached.
        time: f64,
        /// The end time the run did not reach.
        t_end: f64,
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
    #[error("event location failed for transition '{transition}' between t = {} and t = {}: {reason}", short_num(*from), short_num(*to))]
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
    #[error("{0}")]
    Unsupported(String),
}

/// A number as error messages print it: the shortest text that reads back
/// to the same `f64`, plain when that takes at most 8 characters or is no
/// longer than the exponent form, else in exponent form (`1e308` and
/// `5e-324`, not hundreds of digits; `0.25` and `1000`, not `2.5e-1` and
/// `1e3`).
///
/// ```
/// assert_eq!(ia_core::short_num(1e308), "1e308");
/// assert_eq!(ia_core::short_num(1e13), "1e13");
/// assert_eq!(ia_core::short_num(0.25), "0.25");
/// assert_eq!(ia_core::short_num(-0.0), "-0");
/// ```
pub fn short_num(x: f64) -> String {
    let plain = format!("{x}");
    let exponent = format!("{x:e}");
    if plain.len() > 8 && exponent.len() < plain.len() {
        exponent
    } else {
        plain
    }
}

/// `x` rounded to six significant digits (a time reached, for a message).
fn six_digits(x: f64) -> f64 {
    format!("{x:.5e}").parse().unwrap_or(x)
}

/// Why a step underflowed, in words: the smallest step is
/// `8 eps max(|t|, |t_limit|)`, so a floor far above `8 eps |t|` comes from
/// the time the step aims at (the run's end or an observation time), which
/// is a run too long for the system's time scale.
fn underflow_advice(time: f64, min_step: f64) -> String {
    let from_time = 8.0 * f64::EPSILON * time.abs();
    if min_step > 2.0 * from_time {
        let horizon = min_step / (8.0 * f64::EPSILON);
        format!(
            "steps are resolved to 8 machine epsilons of the time they aim at (about {}), so the run is too long for the system's time scale: shorten the run (t_end) or the span to the next observation time",
            short_num(horizon)
        )
    } else {
        "the problem is too stiff or singular for these tolerances (check parameters that set a time scale, like a time constant near 0)".to_string()
    }
}

/// What a run that ended early is told when its explicit method found the
/// flow stiff ([`SolverStats::stiff_steps`]): the implicit methods by their
/// names; nothing otherwise.
fn stiffness_advice(stats: &SolverStats) -> String {
    if stats.stiff_steps == 0 {
        return String::new();
    }
    format!(
        "; the flow is stiff: the explicit method's stiffness test found {} of its {} steps set by stability, not accuracy, so an implicit method takes far fewer (\"method\": \"trbdf2\", \"kvaerno3\" or \"kvaerno5\")",
        stats.stiff_steps, stats.steps
    )
}

impl HybridError {
    /// The trajectory up to the failure, when the failure happened during a run.
    pub fn trajectory(&self) -> Option<&Trajectory> {
        match self {
            HybridError::Zeno { trajectory, .. }
            | HybridError::Grazing { trajectory, .. }
            | HybridError::StepSizeUnderflow { trajectory, .. }
            | HybridError::NewtonFailure { trajectory, .. }
            | HybridError::StepLimit { trajectory, .. }
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
            HybridError::NewtonFailure { .. } => "newton_failure",
            HybridError::StepLimit { .. } => "step_limit",
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

    /// [`HybridError::InvalidOption`] for a number, printed short
    /// ([`short_num`]).
    pub fn invalid_num(name: impl Into<String>, value: f64, valid: impl Into<String>) -> Self {
        HybridError::invalid(name, short_num(value), valid)
    }

    /// Checks that every entry of `values` is finite; names the first that is not.
    pub fn check_finite(
        kind: &str,
        names: &[String],
        values: &[f64],
        time: f64,
    ) -> Result<(), Self> {
        // Chunks with no early exit inside compile to vector compares: a
        // large problem's parameters are checked at every run.
        let finite = |chunk: &[f64]| chunk.iter().fold(true, |ok, v| ok & v.is_finite());
        if values.chunks(16).all(finite) {
            return Ok(());
        }
        match values.iter().position(|v| !v.is_finite()) {
            None => Ok(()),
            Some(i) => Err(HybridError::NonFinite {
                what: match names.get(i) {
                    Some(name) => format!("{kind} '{name}' (= {})", short_num(values[i])),
                    None => format!("{kind}[{i}] (= {})", short_num(values[i])),
                },
                time,
                trajectory: None,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first non-finite entry is named, wherever it falls among the
    /// chunks the check reads at once (reference: the entry planted).
    #[rstest::rstest]
    fn check_finite_names_the_first_non_finite_entry(
        #[values(0, 15, 16, 17, 40)] at: usize,
        #[values(f64::NAN, f64::INFINITY, f64::NEG_INFINITY)] bad: f64,
    ) {
        let names: Vec<String> = (0..41).map(|i| format!("p{i}")).collect();
        let mut values = vec![1.5; 41];
        assert!(HybridError::check_finite("parameter", &names, &values, 0.0).is_ok());
        values[at] = bad;
        if at < 40 {
            values[40] = f64::NAN;
        }
        let err = HybridError::check_finite("parameter", &names, &values, 0.0).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains(&format!("parameter 'p{at}' (= ")), "{msg}");
    }

    /// Issue 10: numbers in messages print short (`1e308`, not 309 digits).
    #[test]
    fn numbers_print_short() {
        assert_eq!(short_num(1e308), "1e308");
        assert_eq!(short_num(5e-324), "5e-324");
        assert_eq!(short_num(0.45152364098573095), "0.45152364098573095");
        assert_eq!(short_num(1000.0), "1000");
        let msg = HybridError::invalid_num("t_end", 1e308, "too long").to_string();
        assert_eq!(msg, "invalid t_end = 1e308: too long");
    }

    /// Issue 10: `t_end >= 1e13` gave "too stiff"; a step floor set by the
    /// end time names the run length.
    #[test]
    fn underflow_from_the_run_length_names_it() {
        let run_length = underflow_advice(0.0, 8.0 * f64::EPSILON * 1e13);
        assert!(
            run_length.contains("t_end") && run_length.contains("1e13"),
            "{run_length}"
        );
        let stiff = underflow_advice(1.0, 8.0 * f64::EPSILON * 1.0);
        assert!(stiff.contains("stiff"), "{stiff}");
    }
}
