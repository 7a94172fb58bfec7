//! The limits every closed form keeps: the event cap and the grazing
//! threshold (see the module docs of [`super`]).

/// Default cap on the number of events applied before `t_end`.
pub const DEFAULT_MAX_EVENTS: usize = 10_000;

/// Smallest accepted transversality `|gdot| / (|g_x| |f|)` at an event; an event
/// at or below it is reported as [`ClosedFormError::Grazing`](super::ClosedFormError::Grazing).
pub const GRAZING_THRESHOLD: f64 = 1e-9;
