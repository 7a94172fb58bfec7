//! Why a closed form could not be evaluated.

use super::limits::GRAZING_THRESHOLD;

/// Why a closed form could not be evaluated.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ClosedFormError {
    /// No closed form exists here for this model name.
    #[error("no closed form for model '{name}'; valid models: {}", valid.join(", "))]
    UnknownModel {
        /// The name given.
        name: String,
        /// The models that have closed forms (the registry's names).
        valid: Vec<&'static str>,
    },
    /// The initial state or the parameters have the wrong length.
    #[error("{model}: {what} needs {expected} entries, got {found}")]
    DimensionMismatch {
        /// Model name.
        model: &'static str,
        /// `"initial state"` or `"params"`.
        what: &'static str,
        /// Length required.
        expected: usize,
        /// Length given.
        found: usize,
    },
    /// A mode name the model does not have, or none given where one is needed.
    #[error("{model}: {}; valid modes: {}", unknown_mode(mode), valid.join(", "))]
    UnknownMode {
        /// Model name.
        model: &'static str,
        /// The mode given (`None`: none was given).
        mode: Option<String>,
        /// The model's modes.
        valid: &'static [&'static str],
    },
    /// An input outside the range the closed form covers.
    #[error("{model}: invalid input: {reason}")]
    InvalidInput {
        /// Model name.
        model: &'static str,
        /// What is wrong, in words.
        reason: String,
    },
    /// The initial state lies on a guard that is moving (or resting) in its
    /// firing direction.
    #[error(
        "{model}: the initial state lies on a guard whose rate {guard_rate:e} does not \
         point away from it; start strictly on the side the guard crosses from"
    )]
    InitialOnGuard {
        /// Model name.
        model: &'static str,
        /// Guard rate at the start.
        guard_rate: f64,
    },
    /// An event is (nearly) tangential: its time has unbounded sensitivity.
    #[error(
        "{model}: event {event} at t = {time} grazes (guard rate {guard_rate:e}, \
         transversality {transversality:e} <= {threshold:e}); its sensitivity \
         is unbounded, so none is returned",
        threshold = GRAZING_THRESHOLD
    )]
    Grazing {
        /// Model name.
        model: &'static str,
        /// Index of the grazing event (0-based).
        event: usize,
        /// Its time.
        time: f64,
        /// `gdot` there.
        guard_rate: f64,
        /// `|gdot| / (|g_x| |f|)` there.
        transversality: f64,
    },
    /// More than the allowed number of events before `t_end`.
    #[error(
        "{model}: more than {max_events} events before t_end (the last applied at \
         t = {time}); raise max_events or shorten t_end"
    )]
    TooManyEvents {
        /// Model name.
        model: &'static str,
        /// The cap.
        max_events: usize,
        /// Time of the last event applied.
        time: f64,
    },
    /// Events accumulate: the next event time does not advance in floating point.
    #[error("{model}: events accumulate at t = {time} (Zeno) after {events} events")]
    Zeno {
        /// Model name.
        model: &'static str,
        /// Events applied so far.
        events: usize,
        /// Where they accumulate.
        time: f64,
    },
}

fn unknown_mode(mode: &Option<String>) -> String {
    match mode {
        Some(mode) => format!("unknown mode '{mode}'"),
        None => "an initial mode is required".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const MODEL: &str = "m";

    /// Reference: the messages of the hand-written `Display` this derive
    /// replaced, copied from it.
    #[rstest]
    #[case::unknown_model(
        ClosedFormError::UnknownModel { name: "x".into(), valid: vec!["a", "b"] },
        "no closed form for model 'x'; valid models: a, b"
    )]
    #[case::dimension(
        ClosedFormError::DimensionMismatch { model: MODEL, what: "params", expected: 3, found: 2 },
        "m: params needs 3 entries, got 2"
    )]
    #[case::unknown_mode(
        ClosedFormError::UnknownMode { model: MODEL, mode: Some("up".into()), valid: &["off", "on"] },
        "m: unknown mode 'up'; valid modes: off, on"
    )]
    #[case::missing_mode(
        ClosedFormError::UnknownMode { model: MODEL, mode: None, valid: &["off", "on"] },
        "m: an initial mode is required; valid modes: off, on"
    )]
    #[case::invalid(
        ClosedFormError::InvalidInput { model: MODEL, reason: "g = 0 must be > 0".into() },
        "m: invalid input: g = 0 must be > 0"
    )]
    #[case::on_guard(
        ClosedFormError::InitialOnGuard { model: MODEL, guard_rate: -0.5 },
        "m: the initial state lies on a guard whose rate -5e-1 does not point away from it; \
         start strictly on the side the guard crosses from"
    )]
    #[case::grazing(
        ClosedFormError::Grazing {
            model: MODEL, event: 2, time: 1.5, guard_rate: 1e-12, transversality: 1e-13,
        },
        "m: event 2 at t = 1.5 grazes (guard rate 1e-12, transversality 1e-13 <= 1e-9); its \
         sensitivity is unbounded, so none is returned"
    )]
    #[case::too_many(
        ClosedFormError::TooManyEvents { model: MODEL, max_events: 4, time: 0.25 },
        "m: more than 4 events before t_end (the last applied at t = 0.25); raise max_events \
         or shorten t_end"
    )]
    #[case::zeno(
        ClosedFormError::Zeno { model: MODEL, events: 1, time: 0.75 },
        "m: events accumulate at t = 0.75 (Zeno) after 1 events"
    )]
    fn messages_are_unchanged(#[case] error: ClosedFormError, #[case] expected: &str) {
        assert_eq!(error.to_string(), expected);
    }
}
