//! Closed-form (symbolic) references for the ready models.
//!
//! Every model here has a flow whose solution is known in closed form between
//! events (uniform acceleration, free flight, exponential relaxation), so the
//! event times are roots of explicit equations (a quadratic, a linear
//! equation, a logarithm) and the whole multi-event trajectory is a
//! composition of elementary functions of the initial state and the
//! parameters. Each model is written once, generic over [`Scalar`]:
//!
//! * evaluated with `f64` it gives the final state and the event times;
//! * evaluated with [`Dual64`], one seeded direction per initial-state entry
//!   and per parameter, it gives the **exact derivatives of the closed form**
//!   (forward-mode automatic differentiation of the formula, not finite
//!   differences). These include the dependence of every event time on the
//!   inputs, which is what the saltation terms of the hybrid sensitivity
//!   theory account for.
//!
//! Values and derivatives are exact up to floating-point rounding; nothing is
//! integrated or iterated numerically.
//!
//! # Assumptions and limits
//!
//! * **No grazing.** Each event must be transversal: the guard crosses zero
//!   with a nonzero rate in its declared direction. The derivative of an event
//!   time is `-(dg/dtheta) / gdot`, unbounded as `gdot -> 0`, so an event whose
//!   transversality (the cosine between the flow and the guard normal,
//!   `|gdot| / (|g_x| |f|)`) is at or below [`GRAZING_THRESHOLD`] is reported as
//!   [`ClosedFormError::Grazing`], never returned.
//! * **Finitely many events.** At most `max_events` events
//!   ([`DEFAULT_MAX_EVENTS`] for the plain entry points) are applied before
//!   `t_end`; more is reported as [`ClosedFormError::TooManyEvents`]. An event
//!   time that does not advance in floating point (an accumulation point, as a
//!   bouncing ball with `e < 1` has) is reported as [`ClosedFormError::Zeno`].
//!   Neither case loops.
//! * **Events strictly before `t_end`.** An event at `t* < t_end` is applied;
//!   an event at `t* >= t_end` is not, so the final state is the left limit
//!   `x(t_end-)` when an event falls exactly on `t_end` (where the final state
//!   is not differentiable anyway).
//! * **Start off the guard.** An initial state on a guard that is moving (or
//!   resting) in the guard's firing direction is ambiguous and rejected with
//!   [`ClosedFormError::InitialOnGuard`]; on the guard but moving away is fine
//!   (a ball launched from the floor).
//!
//! # Why the last, partial segment needs nothing special
//!
//! Between two consecutive events the state is given by the flow's closed-form
//! solution `phi(s; x_k, p)` started at the post-event state `x_k` of the last
//! event `t_k` (or the initial state). That formula holds for every
//! `s` in `[0, s_next)`, where `s_next` is the time to the next root of the
//! guard; `t_end` is reached before the next event exactly when
//! `t_k + s_next >= t_end`, so the final state is `phi(t_end - t_k; x_k, p)`,
//! with `t_k` and `x_k` carrying their full dependence on the inputs. Its
//! derivative with respect to `theta` is
//! `phi_s (-dt_k/dtheta) + phi_x dx_k/dtheta + phi_p dp/dtheta`: the first term
//! is the event-time term a time-stepping program misses, and the dual numbers
//! pick it up because `t_k` is itself a dual number.
//!
//! # Layout of the results
//!
//! [`ClosedFormSolution::jacobian`] has one row per final-state entry, in the
//! model's state order, and one column per entry of
//! [`ClosedFormSolution::wrt`]: `"initial.<state>"` for every state in order,
//! then `"param.<p>"` for every parameter in order (see [`MODELS`]).
//! [`ClosedFormSolution::event_time_jacobian`] has one row per event, same
//! columns.
//!
//! ```
//! use ia_verify::closed_form::closed_form;
//! // Two equal balls, the left one moving at 1 m/s towards the resting right one.
//! let sol = closed_form("two-ball", &[0.0, 0.52, 1.0, 0.0], &[0.1, 1.0, 1.0, 1.0], None, 1.0)
//!     .unwrap();
//! assert!((sol.event_times[0] - 0.32).abs() < 1e-15);
//! assert!((sol.final_state[1] - 1.2).abs() < 1e-15);
//! // d x2(T) / d x1(0) = 1 (the impact hands x1's offset to ball 2).
//! assert!((sol.jacobian_entry("x2", "initial.x1").unwrap() - 1.0).abs() < 1e-15);
//! ```

// Negated comparisons (`!(x > 0.0)`) are deliberate: they reject NaN too.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

mod network;

pub use network::{lif_network, lif_network_trace, network_case, network_cases, NetworkCase};

use ia_core::num_dual::Dual64;
use ia_core::Scalar;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Default cap on the number of events applied before `t_end`.
pub const DEFAULT_MAX_EVENTS: usize = 10_000;

/// Smallest accepted transversality `|gdot| / (|g_x| |f|)` at an event; an event
/// at or below it is reported as [`ClosedFormError::Grazing`].
pub const GRAZING_THRESHOLD: f64 = 1e-9;

/// Names of a model's states, parameters and modes, in the order the closed
/// forms take and return them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelSpec {
    /// Model name, as the dispatcher [`closed_form`] takes it.
    pub name: &'static str,
    /// State names, in order.
    pub states: &'static [&'static str],
    /// Parameter names, in order.
    pub params: &'static [&'static str],
    /// Mode names (empty for single-mode models).
    pub modes: &'static [&'static str],
}

impl ModelSpec {
    /// Column labels of the Jacobians: `"initial.<state>"` for every state,
    /// then `"param.<p>"` for every parameter.
    pub fn wrt(&self) -> Vec<String> {
        self.states
            .iter()
            .map(|s| format!("initial.{s}"))
            .chain(self.params.iter().map(|p| format!("param.{p}")))
            .collect()
    }
}

/// The models that have closed forms here.
pub const MODELS: &[ModelSpec] = &[BALL1D, BALL2D_FLAT, BALL2D_BOWL, TWO_BALL, LIF, THERMOSTAT];

const BALL1D: ModelSpec = ModelSpec {
    name: "ball1d",
    states: &["h", "v"],
    params: &["g", "e", "floor"],
    modes: &[],
};
const BALL2D_FLAT: ModelSpec = ModelSpec {
    name: "ball2d-flat",
    states: &["x", "y", "vx", "vy"],
    params: &["g", "e", "mu"],
    modes: &[],
};
const BALL2D_BOWL: ModelSpec = ModelSpec {
    name: "ball2d-bowl",
    states: &["x", "y", "vx", "vy"],
    params: &["g", "e", "c"],
    modes: &[],
};
const TWO_BALL: ModelSpec = ModelSpec {
    name: "two-ball",
    states: &["x1", "x2", "v1", "v2"],
    params: &["r", "m1", "m2", "e"],
    modes: &[],
};
const LIF: ModelSpec = ModelSpec {
    name: "lif",
    states: &["V"],
    params: &["I", "tau", "Vth", "Vr"],
    modes: &[],
};
const THERMOSTAT: ModelSpec = ModelSpec {
    name: "thermostat",
    states: &["T"],
    params: &["a", "b", "Tout", "Tlo", "Thi"],
    modes: &["off", "on"],
};

/// Looks a model up by name. Underscores are accepted for hyphens
/// (`ball2d_flat` is `ball2d-flat`).
pub fn model_spec(name: &str) -> Result<&'static ModelSpec, ClosedFormError> {
    let normalized = name.replace('_', "-");
    MODELS
        .iter()
        .find(|m| m.name == normalized)
        .ok_or_else(|| ClosedFormError::UnknownModel {
            name: name.to_string(),
        })
}

/// Why a closed form could not be evaluated.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ClosedFormError {
    /// No closed form exists here for this model name.
    UnknownModel {
        /// The name given.
        name: String,
    },
    /// The initial state or the parameters have the wrong length.
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
    UnknownMode {
        /// Model name.
        model: &'static str,
        /// The mode given (`None`: none was given).
        mode: Option<String>,
        /// The model's modes.
        valid: &'static [&'static str],
    },
    /// An input outside the range the closed form covers.
    InvalidInput {
        /// Model name.
        model: &'static str,
        /// What is wrong, in words.
        reason: String,
    },
    /// The initial state lies on a guard that is moving (or resting) in its
    /// firing direction.
    InitialOnGuard {
        /// Model name.
        model: &'static str,
        /// Guard rate at the start.
        guard_rate: f64,
    },
    /// An event is (nearly) tangential: its time has unbounded sensitivity.
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
    TooManyEvents {
        /// Model name.
        model: &'static str,
        /// The cap.
        max_events: usize,
        /// Time of the last event applied.
        time: f64,
    },
    /// Events accumulate: the next event time does not advance in floating point.
    Zeno {
        /// Model name.
        model: &'static str,
        /// Events applied so far.
        events: usize,
        /// Where they accumulate.
        time: f64,
    },
}

impl fmt::Display for ClosedFormError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClosedFormError::UnknownModel { name } => {
                let valid: Vec<&str> = MODELS.iter().map(|m| m.name).collect();
                write!(
                    f,
                    "no closed form for model '{name}'; valid models: {}",
                    valid.join(", ")
                )
            }
            ClosedFormError::DimensionMismatch {
                model,
                what,
                expected,
                found,
            } => write!(f, "{model}: {what} needs {expected} entries, got {found}"),
            ClosedFormError::UnknownMode { model, mode, valid } => match mode {
                Some(mode) => write!(
                    f,
                    "{model}: unknown mode '{mode}'; valid modes: {}",
                    valid.join(", ")
                ),
                None => write!(
                    f,
                    "{model}: an initial mode is required; valid modes: {}",
                    valid.join(", ")
                ),
            },
            ClosedFormError::InvalidInput { model, reason } => {
                write!(f, "{model}: invalid input: {reason}")
            }
            ClosedFormError::InitialOnGuard { model, guard_rate } => write!(
                f,
                "{model}: the initial state lies on a guard whose rate {guard_rate:e} does not \
                 point away from it; start strictly on the side the guard crosses from"
            ),
            ClosedFormError::Grazing {
                model,
                event,
                time,
                guard_rate,
                transversality,
            } => write!(
                f,
                "{model}: event {event} at t = {time} grazes (guard rate {guard_rate:e}, \
                 transversality {transversality:e} <= {GRAZING_THRESHOLD:e}); its sensitivity \
                 is unbounded, so none is returned"
            ),
            ClosedFormError::TooManyEvents {
                model,
                max_events,
                time,
            } => write!(
                f,
                "{model}: more than {max_events} events before t_end (the last applied at \
                 t = {time}); raise max_events or shorten t_end"
            ),
            ClosedFormError::Zeno {
                model,
                events,
                time,
            } => write!(
                f,
                "{model}: events accumulate at t = {time} (Zeno) after {events} events"
            ),
        }
    }
}

impl std::error::Error for ClosedFormError {}

/// A closed-form trajectory summary in any [`Scalar`]: with [`Dual64`] every
/// entry carries its derivative along the seeded direction.
#[derive(Clone, Debug, PartialEq)]
pub struct Trace<S> {
    /// State at `t_end`, in the model's state order.
    pub final_state: Vec<S>,
    /// Times of the events applied before `t_end`, increasing.
    pub event_times: Vec<S>,
    /// Mode at `t_end` (`None` for single-mode models).
    pub final_mode: Option<&'static str>,
}

/// Final state, event times and their exact Jacobians, from a closed form.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClosedFormSolution {
    /// Model name.
    pub model: String,
    /// State names, the row order of [`Self::jacobian`].
    pub state_names: Vec<String>,
    /// Parameter names.
    pub param_names: Vec<String>,
    /// State at `t_end`.
    pub final_state: Vec<f64>,
    /// Mode at `t_end` (`None` for single-mode models).
    pub final_mode: Option<String>,
    /// Times of the events before `t_end`, increasing.
    pub event_times: Vec<f64>,
    /// `d final_state[i] / d wrt[j]`: rows are final-state entries, columns
    /// follow [`Self::wrt`].
    pub jacobian: Vec<Vec<f64>>,
    /// `d event_times[k] / d wrt[j]`: one row per event, columns follow
    /// [`Self::wrt`].
    pub event_time_jacobian: Vec<Vec<f64>>,
    /// Column labels: `"initial.<state>"` then `"param.<p>"`.
    pub wrt: Vec<String>,
}

impl ClosedFormSolution {
    /// Index of a state by name.
    pub fn state_index(&self, state: &str) -> Option<usize> {
        self.state_names.iter().position(|s| s == state)
    }

    /// Index of a Jacobian column by label (`"initial.x"`, `"param.g"`).
    pub fn wrt_index(&self, wrt: &str) -> Option<usize> {
        self.wrt.iter().position(|w| w == wrt)
    }

    /// `d final_state[state] / d wrt`, by names.
    pub fn jacobian_entry(&self, state: &str, wrt: &str) -> Option<f64> {
        Some(self.jacobian[self.state_index(state)?][self.wrt_index(wrt)?])
    }

    /// `d event_times[event] / d wrt`, by column label.
    pub fn event_time_derivative(&self, event: usize, wrt: &str) -> Option<f64> {
        Some(
            *self
                .event_time_jacobian
                .get(event)?
                .get(self.wrt_index(wrt)?)?,
        )
    }
}

/// The two modes of the thermostat.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ThermostatMode {
    /// Heater off: `T' = -a (T - Tout)`.
    Off,
    /// Heater on: `T' = -a (T - Tout) + b`.
    On,
}

impl ThermostatMode {
    /// `"off"` or `"on"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ThermostatMode::Off => "off",
            ThermostatMode::On => "on",
        }
    }
}

impl FromStr for ThermostatMode {
    type Err = ClosedFormError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "off" => Ok(ThermostatMode::Off),
            "on" => Ok(ThermostatMode::On),
            other => Err(ClosedFormError::UnknownMode {
                model: THERMOSTAT.name,
                mode: Some(other.to_string()),
                valid: THERMOSTAT.modes,
            }),
        }
    }
}

// ---------------------------------------------------------------------------
// Shared machinery.

fn re<S: Scalar>(s: S) -> f64 {
    s.re()
}

fn cst<S: Scalar>(v: f64) -> S {
    S::from(v)
}

fn check_len<S>(spec: &ModelSpec, x0: &[S], p: &[S], t_end: f64) -> Result<(), ClosedFormError> {
    if x0.len() != spec.states.len() {
        return Err(ClosedFormError::DimensionMismatch {
            model: spec.name,
            what: "initial state",
            expected: spec.states.len(),
            found: x0.len(),
        });
    }
    if p.len() != spec.params.len() {
        return Err(ClosedFormError::DimensionMismatch {
            model: spec.name,
            what: "params",
            expected: spec.params.len(),
            found: p.len(),
        });
    }
    if !(t_end.is_finite() && t_end >= 0.0) {
        return Err(invalid(
            spec,
            format!("t_end = {t_end} must be finite and >= 0"),
        ));
    }
    Ok(())
}

fn check_finite<S: Scalar>(spec: &ModelSpec, x0: &[S], p: &[S]) -> Result<(), ClosedFormError> {
    let names = spec.states.iter().chain(spec.params.iter());
    for (name, v) in names.zip(x0.iter().chain(p.iter())) {
        if !re(*v).is_finite() {
            return Err(invalid(spec, format!("{name} = {} is not finite", re(*v))));
        }
    }
    Ok(())
}

fn invalid(spec: &ModelSpec, reason: String) -> ClosedFormError {
    ClosedFormError::InvalidInput {
        model: spec.name,
        reason,
    }
}

/// `|gdot| / (|g_x| |f|)` from real parts.
fn transversality(gdot: f64, g_x: &[f64], f: &[f64]) -> f64 {
    let norm = |v: &[f64]| v.iter().map(|a| a * a).sum::<f64>().sqrt();
    let scale = norm(g_x) * norm(f);
    if scale > 0.0 {
        gdot.abs() / scale
    } else {
        0.0
    }
}

/// The event list of one trace: enforces the cap, strict advance of time and
/// transversality.
struct Events<S> {
    spec: &'static ModelSpec,
    max_events: usize,
    times: Vec<S>,
}

impl<S: Scalar> Events<S> {
    fn new(spec: &'static ModelSpec, max_events: usize) -> Self {
        Events {
            spec,
            max_events,
            times: Vec::new(),
        }
    }

    fn last_time(&self) -> f64 {
        self.times.last().map_or(0.0, |t| re(*t))
    }

    /// Records an event at `t`; `signed_rate` is the guard rate times the
    /// firing direction (must be > 0), `cosine` the transversality.
    fn push(&mut self, t: S, signed_rate: f64, cosine: f64) -> Result<(), ClosedFormError> {
        let index = self.times.len();
        if !(signed_rate > 0.0) || !(cosine > GRAZING_THRESHOLD) {
            return Err(ClosedFormError::Grazing {
                model: self.spec.name,
                event: index,
                time: re(t),
                guard_rate: signed_rate,
                transversality: cosine,
            });
        }
        if index > 0 && !(re(t) > self.last_time()) {
            return Err(ClosedFormError::Zeno {
                model: self.spec.name,
                events: index,
                time: re(t),
            });
        }
        if index >= self.max_events {
            return Err(ClosedFormError::TooManyEvents {
                model: self.spec.name,
                max_events: self.max_events,
                time: self.last_time(),
            });
        }
        self.times.push(t);
        Ok(())
    }
}

/// Smallest root with positive real part of `a s^2 + b s + c = 0`, by the
/// numerically stable formula `q = -(b + sign(b) sqrt(b^2 - 4ac)) / 2`,
/// roots `q / a` and `c / q` (no cancellation in either). A double root
/// (zero discriminant) is returned as `-b / 2a`; the caller's transversality
/// check then reports it as grazing.
fn smallest_positive_root<S: Scalar>(a: S, b: S, c: S) -> Option<S> {
    if re(a) == 0.0 {
        return if re(b) != 0.0 {
            let s = -c / b;
            (re(s) > 0.0).then_some(s)
        } else {
            None
        };
    }
    let disc = b * b - a * c * 4.0;
    if re(disc) < 0.0 {
        return None;
    }
    if re(disc) == 0.0 {
        let s = -b / (a * 2.0);
        return (re(s) > 0.0).then_some(s);
    }
    let sq = disc.sqrt();
    let q = if re(b) >= 0.0 {
        -(b + sq) * 0.5
    } else {
        -(b - sq) * 0.5
    };
    let mut best: Option<S> = None;
    for root in [Some(q / a), (re(q) != 0.0).then(|| c / q)]
        .into_iter()
        .flatten()
    {
        if re(root) > 0.0 && best.is_none_or(|b| re(root) < re(b)) {
            best = Some(root);
        }
    }
    best
}

/// Evaluates a trace with `f64` and once per input direction with [`Dual64`],
/// and assembles the Jacobians.
fn differentiate(
    spec: &'static ModelSpec,
    x0: &[f64],
    p: &[f64],
    trace: impl Fn(&[f64], &[f64]) -> Result<Trace<f64>, ClosedFormError>,
    trace_dual: impl Fn(&[Dual64], &[Dual64]) -> Result<Trace<Dual64>, ClosedFormError>,
) -> Result<ClosedFormSolution, ClosedFormError> {
    let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect();
    differentiate_named(
        spec.name,
        names(spec.states),
        names(spec.params),
        x0,
        p,
        trace,
        trace_dual,
    )
}

/// [`differentiate`] for a model whose names are built, not listed
/// statically (a sized model).
fn differentiate_named(
    model: &str,
    state_names: Vec<String>,
    param_names: Vec<String>,
    x0: &[f64],
    p: &[f64],
    trace: impl Fn(&[f64], &[f64]) -> Result<Trace<f64>, ClosedFormError>,
    trace_dual: impl Fn(&[Dual64], &[Dual64]) -> Result<Trace<Dual64>, ClosedFormError>,
) -> Result<ClosedFormSolution, ClosedFormError> {
    let primal = trace(x0, p)?;
    let n = x0.len();
    let cols = n + p.len();
    let mut jacobian = vec![vec![0.0; cols]; primal.final_state.len()];
    let mut event_time_jacobian = vec![vec![0.0; cols]; primal.event_times.len()];
    for j in 0..cols {
        let seed = |i: usize, v: f64| Dual64::new(v, if i == j { 1.0 } else { 0.0 });
        let xd: Vec<Dual64> = x0.iter().enumerate().map(|(i, &v)| seed(i, v)).collect();
        let pd: Vec<Dual64> = p.iter().enumerate().map(|(i, &v)| seed(n + i, v)).collect();
        let dual = trace_dual(&xd, &pd)?;
        // Branches are taken on real parts, so every direction follows the
        // primal's event sequence.
        debug_assert_eq!(dual.event_times.len(), primal.event_times.len());
        for (row, v) in jacobian.iter_mut().zip(&dual.final_state) {
            row[j] = v.eps;
        }
        for (row, v) in event_time_jacobian.iter_mut().zip(&dual.event_times) {
            row[j] = v.eps;
        }
    }
    let wrt = (state_names.iter().map(|s| format!("initial.{s}")))
        .chain(param_names.iter().map(|q| format!("param.{q}")))
        .collect();
    Ok(ClosedFormSolution {
        model: model.to_string(),
        state_names,
        param_names,
        final_state: primal.final_state,
        final_mode: primal.final_mode.map(str::to_string),
        event_times: primal.event_times,
        jacobian,
        event_time_jacobian,
        wrt,
    })
}

// ---------------------------------------------------------------------------
// Bouncing balls.

/// Ball falling onto a floor at height `floor`: states `(h, v)`, parameters
/// `(g, e, floor)`.
///
/// # Derivation
///
/// Flow `h' = v`, `v' = -g`; guard `h - floor`, falling; reset `v <- -e v`.
///
/// * **Flight.** From a segment start `(t_k, h_k, v_k)`, with `s = t - t_k`:
///   `h(s) = h_k + v_k s - g s^2 / 2`, `v(s) = v_k - g s`.
/// * **First impact.** The guard along the flight is the quadratic
///   `G(s) = -g/2 s^2 + v_0 s + (h_0 - floor)`; with `h_0 > floor` its smallest
///   positive root is the impact, computed with the stable quadratic formula:
///   `s = (v_0 + sqrt(v_0^2 + 2 g (h_0 - floor))) / g`, written as
///   `2 (h_0 - floor) / (sqrt(...) - v_0)` when `v_0 < 0`.
/// * **Later impacts.** After an impact the ball is on the floor,
///   `h_k = floor` identically in the inputs, so `G(s) = s (v_k - g s / 2)`:
///   the root `s = 0` is the impact just applied, and the next is
///   `s = 2 v_k / g` (a linear solution, no cancellation).
/// * **Reset.** `t_{k+1} = t_k + s`, `v^- = v_k - g s`, `v_{k+1} = -e v^-`,
///   `h_{k+1} = floor`. The guard rate at impact is `v^- < 0`.
/// * **End.** `h(T) = h_k + v_k tau - g tau^2/2`, `v(T) = v_k - g tau`,
///   `tau = T - t_k`, valid because the next root lies at or beyond `T`.
///
/// Requires `g > 0`, `e >= 0`, `h_0 >= floor`. With `e < 1` impacts accumulate
/// at the finite time `t_1 + 2 v_1 / (g (1 - e))` (`v_1` the speed after the
/// first impact): reported as [`ClosedFormError::Zeno`] when that is before
/// `t_end` (with `e = 0` it is the first impact itself: the ball comes to rest).
pub fn ball1d_trace<S: Scalar>(
    x0: &[S],
    p: &[S],
    t_end: f64,
    max_events: usize,
) -> Result<Trace<S>, ClosedFormError> {
    let spec = &BALL1D;
    check_len(spec, x0, p, t_end)?;
    check_finite(spec, x0, p)?;
    let (g, e, floor) = (p[0], p[1], p[2]);
    if !(re(g) > 0.0) {
        return Err(invalid(spec, format!("g = {} must be > 0", re(g))));
    }
    if !(re(e) >= 0.0) {
        return Err(invalid(spec, format!("e = {} must be >= 0", re(e))));
    }
    let (mut h, mut v) = (x0[0], x0[1]);
    let gap = h - floor;
    if re(gap) < 0.0 {
        return Err(invalid(
            spec,
            format!("h = {} starts below the floor {}", re(h), re(floor)),
        ));
    }
    if re(gap) == 0.0 && re(v) <= 0.0 {
        return Err(ClosedFormError::InitialOnGuard {
            model: spec.name,
            guard_rate: re(v),
        });
    }
    let mut events = Events::new(spec, max_events);
    let mut t: S = cst(0.0);
    let mut on_floor = false;
    loop {
        let s = if on_floor {
            v * 2.0 / g
        } else {
            match smallest_positive_root(g * -0.5, v, gap) {
                Some(s) => s,
                None => break,
            }
        };
        let t_hit = t + s;
        if re(t_hit) >= t_end {
            break;
        }
        let v_minus = v - g * s;
        let rate = re(v_minus);
        events.push(
            t_hit,
            -rate,
            transversality(rate, &[1.0, 0.0], &[rate, -re(g)]),
        )?;
        v = -e * v_minus;
        h = floor;
        t = t_hit;
        on_floor = true;
        check_accumulation(spec, &events, t, v, g, e, t_end)?;
    }
    let tau = cst::<S>(t_end) - t;
    Ok(Trace {
        final_state: vec![h + v * tau - g * tau * tau * 0.5, v - g * tau],
        event_times: events.times,
        final_mode: None,
    })
}

/// On flat ground the impacts after the first follow `t_{k+1} = t_k + 2 v_k / g`,
/// `v_{k+1} = e v_k`: with `e < 1` they accumulate at
/// `t_inf = t_1 + 2 v_1 / (g (1 - e))`. Checked once, after the first impact,
/// so that a Zeno run is reported as such (at its accumulation time) instead of
/// as the near-grazing bounce it would reach first.
fn check_accumulation<S: Scalar>(
    spec: &'static ModelSpec,
    events: &Events<S>,
    t: S,
    v_up: S,
    g: S,
    e: S,
    t_end: f64,
) -> Result<(), ClosedFormError> {
    if events.times.len() != 1 || !(re(e) < 1.0) {
        return Ok(());
    }
    let t_inf = re(t) + 2.0 * re(v_up) / (re(g) * (1.0 - re(e)));
    if t_inf < t_end {
        return Err(ClosedFormError::Zeno {
            model: spec.name,
            events: 1,
            time: t_inf,
        });
    }
    Ok(())
}

/// The ground of the planar ball, as the closed form sees it.
#[derive(Clone, Copy)]
enum Ground<S> {
    /// `y = 0`; reset `vx <- mu vx`, `vy <- -e vy`.
    Flat { mu: S },
    /// `y = c x^2`; reset `v <- v - (1 + e)(v.n) n`.
    Bowl { c: S },
}

/// Shared closed form of the planar ball on a flat floor or in a bowl.
fn planar_ball<S: Scalar>(
    spec: &'static ModelSpec,
    x0: &[S],
    p: &[S],
    t_end: f64,
    max_events: usize,
) -> Result<Trace<S>, ClosedFormError> {
    check_len(spec, x0, p, t_end)?;
    check_finite(spec, x0, p)?;
    let (g, e) = (p[0], p[1]);
    let ground = if spec.name == BALL2D_BOWL.name {
        Ground::Bowl { c: p[2] }
    } else {
        Ground::Flat { mu: p[2] }
    };
    if !(re(g) > 0.0) {
        return Err(invalid(spec, format!("g = {} must be > 0", re(g))));
    }
    if !(re(e) >= 0.0) {
        return Err(invalid(spec, format!("e = {} must be >= 0", re(e))));
    }
    let c = match ground {
        Ground::Bowl { c } => c,
        Ground::Flat { .. } => cst(0.0),
    };
    let (mut x, mut y, mut vx, mut vy) = (x0[0], x0[1], x0[2], x0[3]);
    // Guard along a flight from (x, y, vx, vy):
    // G(s) = (y + vy s - g s^2/2) - c (x + vx s)^2 = a s^2 + b s + gap.
    let gap = y - c * x * x;
    if re(gap) < 0.0 {
        return Err(invalid(
            spec,
            "the ball starts below the ground".to_string(),
        ));
    }
    if re(gap) == 0.0 && re(vy - c * x * vx * 2.0) <= 0.0 {
        return Err(ClosedFormError::InitialOnGuard {
            model: spec.name,
            guard_rate: re(vy - c * x * vx * 2.0),
        });
    }
    let mut events = Events::new(spec, max_events);
    let mut t: S = cst(0.0);
    let mut on_ground = false;
    loop {
        let a = -(g * 0.5 + c * vx * vx);
        let b = vy - c * x * vx * 2.0;
        let s = if on_ground {
            // gap == 0 identically: G(s) = s (a s + b); the next root is -b/a.
            if !(re(b) > 0.0) {
                return Err(ClosedFormError::Grazing {
                    model: spec.name,
                    event: events.times.len(),
                    time: re(t),
                    guard_rate: re(b),
                    transversality: 0.0,
                });
            }
            if re(a) < 0.0 {
                -b / a
            } else {
                break;
            }
        } else {
            match smallest_positive_root(a, b, gap) {
                Some(s) => s,
                None => break,
            }
        };
        let t_hit = t + s;
        if re(t_hit) >= t_end {
            break;
        }
        let x_hit = x + vx * s;
        let vy_minus = vy - g * s;
        // Guard rate d/dt (y - c x^2) = vy - 2 c x vx, equal to 2 a s + b.
        let slope = c * x_hit * 2.0;
        let rate = vy_minus - slope * vx;
        let cosine = transversality(
            re(rate),
            &[-re(slope), 1.0, 0.0, 0.0],
            &[re(vx), re(vy_minus), 0.0, -re(g)],
        );
        events.push(t_hit, -re(rate), cosine)?;
        match ground {
            Ground::Flat { mu } => {
                vx = mu * vx;
                vy = -e * vy_minus;
            }
            Ground::Bowl { .. } => {
                // n = (-m, 1)/sqrt(1 + m^2), m = 2 c x; v.n sqrt(1 + m^2) = vy - m vx.
                // v+ = v - (1 + e)(v.n) n, without the square root:
                let k = (e + 1.0) * rate / (slope * slope + 1.0);
                vx += k * slope;
                vy = vy_minus - k;
            }
        }
        x = x_hit;
        y = c * x_hit * x_hit;
        t = t_hit;
        on_ground = true;
        if let Ground::Flat { .. } = ground {
            check_accumulation(spec, &events, t, vy, g, e, t_end)?;
        }
    }
    let tau = cst::<S>(t_end) - t;
    Ok(Trace {
        final_state: vec![
            x + vx * tau,
            y + vy * tau - g * tau * tau * 0.5,
            vx,
            vy - g * tau,
        ],
        event_times: events.times,
        final_mode: None,
    })
}

/// Planar ball bouncing on flat ground `y = 0`: states `(x, y, vx, vy)`,
/// parameters `(g, e, mu)`.
///
/// # Derivation
///
/// Flow `x' = vx`, `y' = vy`, `vx' = 0`, `vy' = -g`; guard `y`, falling;
/// reset `vx <- mu vx`, `vy <- -e vy`.
///
/// * **Flight** from `(t_k, x_k, y_k, vx_k, vy_k)`: `x = x_k + vx_k s`,
///   `y = y_k + vy_k s - g s^2/2`, `vy = vy_k - g s`.
/// * **Impact times** are the roots of `-g/2 s^2 + vy_k s + y_k = 0`: the
///   smallest positive root (stable quadratic formula) from the initial state;
///   after an impact `y_k = 0` identically, the root `s = 0` is factored out and
///   the next impact is at `s = 2 vy_k / g`.
/// * **Post-impact state:** `x_{k+1} = x_k + vx_k s`, `y_{k+1} = 0`,
///   `vx_{k+1} = mu vx_k`, `vy_{k+1} = -e (vy_k - g s)`. The horizontal
///   position depends on the impact times through `vx` changing at them,
///   which is why `dx(T)/dvy_0 != 0` although `x` never sees `vy`.
/// * **End:** the flight formulas at `tau = T - t_k` (see the module docs).
///
/// Requires `g > 0`, `e >= 0`, `y_0 >= 0`. As for [`ball1d_trace`], with
/// `e < 1` the impacts accumulate at `t_1 + 2 vy_1 / (g (1 - e))`, reported as
/// [`ClosedFormError::Zeno`] when that is before `t_end`.
pub fn ball2d_flat_trace<S: Scalar>(
    x0: &[S],
    p: &[S],
    t_end: f64,
    max_events: usize,
) -> Result<Trace<S>, ClosedFormError> {
    planar_ball(&BALL2D_FLAT, x0, p, t_end, max_events)
}

/// Planar ball bouncing in the bowl `y = c x^2`: states `(x, y, vx, vy)`,
/// parameters `(g, e, c)`.
///
/// # Derivation
///
/// Flow as on flat ground; guard `G = y - c x^2`, falling; with the normal
/// `n = (-2 c x, 1) / sqrt(1 + 4 c^2 x^2)` the reset is
/// `v <- v - (1 + e) (v.n) n` (position unchanged).
///
/// * **Impact times.** Along a flight from `(x_k, y_k, vx_k, vy_k)` the guard is
///   the quadratic `G(s) = a s^2 + b s + G_k` with
///   `a = -(g/2 + c vx_k^2)`, `b = vy_k - 2 c x_k vx_k` (the guard rate at
///   `s = 0`), `G_k = y_k - c x_k^2`. From the initial state the impact is its
///   smallest positive root by the stable formula
///   `q = -(b + sign(b) sqrt(b^2 - 4 a G_k)) / 2`, roots `q/a`, `G_k/q`.
///   After an impact the ball is on the surface, `G_k = 0` identically, so
///   `G(s) = s (a s + b)`: the root `s = 0` is the impact just applied and the
///   next is the linear solution `s = -b / a` (no return if `a >= 0`, possible
///   only for `c < 0`).
/// * **Post-impact state.** With `m = 2 c x^-` (the slope at the impact point)
///   and `w = vy^- - m vx^-` (the guard rate, `< 0`):
///   `vx^+ = vx^- + (1 + e) w m / (1 + m^2)`,
///   `vy^+ = vy^- - (1 + e) w / (1 + m^2)`, which is
///   `v - (1 + e)(v.n) n` with the square root cancelled; the guard rate
///   becomes `-e w`. The position is set to `(x^-, c (x^-)^2)`, on the surface
///   identically in the inputs.
/// * **End:** the flight formulas at `tau = T - t_k`.
///
/// Requires `g > 0`, `e >= 0`, `y_0 >= c x_0^2`. With `e = 0` the ball would
/// slide along the surface after its first impact: reported as
/// [`ClosedFormError::Grazing`]. Accumulating impacts are caught by the event
/// cap or as [`ClosedFormError::Zeno`].
pub fn ball2d_bowl_trace<S: Scalar>(
    x0: &[S],
    p: &[S],
    t_end: f64,
    max_events: usize,
) -> Result<Trace<S>, ClosedFormError> {
    planar_ball(&BALL2D_BOWL, x0, p, t_end, max_events)
}

/// Two balls of radius `r` on a line, in free flight: states `(x1, x2, v1, v2)`,
/// parameters `(r, m1, m2, e)`.
///
/// # Derivation
///
/// Flow `x1' = v1`, `x2' = v2`, `v' = 0`; guard `G = x2 - x1 - 2r`, falling.
///
/// * **Impact time.** `G(s) = G_k + w s` with `w = v2 - v1`, so the impact is at
///   `s = -G_k / w` when `G_k > 0` and `w < 0`.
/// * **Reset** (momentum conserved, relative velocity reversed and scaled by
///   `e`): `v1+ = ((m1 - e m2) v1 + (1 + e) m2 v2) / (m1 + m2)`,
///   `v2+ = ((m2 - e m1) v2 + (1 + e) m1 v1) / (m1 + m2)`; hence
///   `v2+ - v1+ = -e w >= 0`: after an impact `G = 0` and the balls separate
///   (or, with `e = 0`, move on in contact), so there is at most one event.
/// * **End:** `x_i(T) = x_i^* + v_i^+ (T - t^*)`.
///
/// Requires `r >= 0`, `m1 > 0`, `m2 > 0`, `e >= 0`, and no overlap at the start.
pub fn two_ball_trace<S: Scalar>(
    x0: &[S],
    p: &[S],
    t_end: f64,
    max_events: usize,
) -> Result<Trace<S>, ClosedFormError> {
    let spec = &TWO_BALL;
    check_len(spec, x0, p, t_end)?;
    check_finite(spec, x0, p)?;
    let (r, m1, m2, e) = (p[0], p[1], p[2], p[3]);
    if !(re(m1) > 0.0 && re(m2) > 0.0) {
        return Err(invalid(spec, "masses must be > 0".to_string()));
    }
    if !(re(e) >= 0.0 && re(r) >= 0.0) {
        return Err(invalid(spec, "r and e must be >= 0".to_string()));
    }
    let (mut x1, mut x2, mut v1, mut v2) = (x0[0], x0[1], x0[2], x0[3]);
    let gap0 = x2 - x1 - r * 2.0;
    if re(gap0) < 0.0 {
        return Err(invalid(spec, "the balls overlap at the start".to_string()));
    }
    if re(gap0) == 0.0 && re(v2 - v1) <= 0.0 {
        return Err(ClosedFormError::InitialOnGuard {
            model: spec.name,
            guard_rate: re(v2 - v1),
        });
    }
    let mut events = Events::new(spec, max_events);
    let mut t: S = cst(0.0);
    let mut in_contact = false;
    loop {
        let w = v2 - v1;
        if !(re(w) < 0.0) {
            break;
        }
        // In contact (G = 0 identically) an approach would be immediate; it
        // cannot happen for e >= 0, but is reported rather than applied.
        let s = if in_contact {
            cst(0.0)
        } else {
            -(x2 - x1 - r * 2.0) / w
        };
        let t_hit = t + s;
        if re(t_hit) >= t_end {
            break;
        }
        let cosine = transversality(re(w), &[-1.0, 1.0, 0.0, 0.0], &[re(v1), re(v2), 0.0, 0.0]);
        events.push(t_hit, -re(w), cosine)?;
        x1 += v1 * s;
        x2 += v2 * s;
        let m = m1 + m2;
        let (a, b) = (v1, v2);
        v1 = ((m1 - e * m2) * a + (e + 1.0) * m2 * b) / m;
        v2 = ((m2 - e * m1) * b + (e + 1.0) * m1 * a) / m;
        t = t_hit;
        in_contact = true;
    }
    let tau = cst::<S>(t_end) - t;
    Ok(Trace {
        final_state: vec![x1 + v1 * tau, x2 + v2 * tau, v1, v2],
        event_times: events.times,
        final_mode: None,
    })
}

// ---------------------------------------------------------------------------
// Exponential relaxation.

/// Leaky integrate-and-fire neuron: state `(V)`, parameters `(I, tau, Vth, Vr)`.
///
/// # Derivation
///
/// Flow `V' = (I - V) / tau`; guard `V - Vth`, rising; reset `V <- Vr`.
///
/// * **Subthreshold.** From `(t_k, V_k)`: `V(s) = I + (V_k - I) e^{-s/tau}`.
/// * **Spike time.** `V(s) = Vth` gives `s = tau ln((I - V_k) / (I - Vth))`,
///   a rising crossing exactly when `V_k < Vth < I`; its guard rate is
///   `(I - Vth) / tau > 0`. From the reset potential (`V_k = Vr`) the
///   interspike interval is `tau ln((I - Vr)/(I - Vth))`, the same each time,
///   but the dual numbers differentiate each spike time through the chain
///   `t_{k+1} = t_k + s_k` anyway.
/// * **Reset:** `V_{k+1} = Vr`.
/// * **End:** `V(T) = I + (V_k - I) e^{-(T - t_k)/tau}`.
///
/// Requires `tau > 0`. With `Vr == Vth` the spikes would accumulate at one
/// instant (reported as Zeno).
pub fn lif_trace<S: Scalar>(
    x0: &[S],
    p: &[S],
    t_end: f64,
    max_events: usize,
) -> Result<Trace<S>, ClosedFormError> {
    let spec = &LIF;
    check_len(spec, x0, p, t_end)?;
    check_finite(spec, x0, p)?;
    let (i, tau, vth, vr) = (p[0], p[1], p[2], p[3]);
    if !(re(tau) > 0.0) {
        return Err(invalid(spec, format!("tau = {} must be > 0", re(tau))));
    }
    let mut v = x0[0];
    if re(v) == re(vth) && re(i) >= re(vth) {
        return Err(ClosedFormError::InitialOnGuard {
            model: spec.name,
            guard_rate: re((i - v) / tau),
        });
    }
    let mut events = Events::new(spec, max_events);
    let mut t: S = cst(0.0);
    while re(v) <= re(vth) && re(vth) < re(i) {
        let s = tau * ((i - v) / (i - vth)).ln();
        let t_hit = t + s;
        if re(t_hit) >= t_end {
            break;
        }
        events.push(t_hit, re((i - vth) / tau), 1.0)?;
        v = vr;
        t = t_hit;
    }
    let elapsed = cst::<S>(t_end) - t;
    Ok(Trace {
        final_state: vec![i + (v - i) * (-elapsed / tau).exp()],
        event_times: events.times,
        final_mode: None,
    })
}

/// Thermostat with hysteresis: state `(T)`, modes `off`/`on`, parameters
/// `(a, b, Tout, Tlo, Thi)`.
///
/// # Derivation
///
/// Flows: off `T' = -a (T - Tout)`, on `T' = -a (T - Tout) + b`; transitions
/// off -> on when `T - Tlo` falls through zero, on -> off when `T - Thi` rises
/// through zero; identity reset.
///
/// * **Relaxation.** In either mode `T' = -a (T - E)` with the equilibrium
///   `E_off = Tout`, `E_on = Tout + b/a`, so from `(t_k, T_k)`:
///   `T(s) = E + (T_k - E) e^{-a s}`.
/// * **Switching times.** The threshold `theta` (`Tlo` when off, `Thi` when on)
///   is reached when `e^{-a s} = (theta - E)/(T_k - E)`:
///   `s = ln((T_k - E) / (theta - E)) / a`. It is a crossing in the declared
///   direction exactly when `theta` lies strictly between `T_k` and `E` on the
///   right side (off: `T_k > Tlo > Tout`; on: `T_k < Thi < Tout + b/a`); the
///   guard rate there, `-a (theta - E)`, is then nonzero. Otherwise the mode
///   never switches again.
/// * **Reset.** `T_{k+1} = theta` identically in the inputs (the state lies on
///   the threshold), the mode toggles. From then on the off and on phases have
///   fixed lengths `ln((Thi - Tout)/(Tlo - Tout)) / a` and
///   `ln((E_on - Tlo)/(E_on - Thi)) / a`.
/// * **End:** `T(T_end) = E + (T_k - E) e^{-a (T_end - t_k)}` in the final mode.
///
/// Requires `a > 0` and `Tlo < Thi`.
pub fn thermostat_trace<S: Scalar>(
    x0: &[S],
    p: &[S],
    initial_mode: ThermostatMode,
    t_end: f64,
    max_events: usize,
) -> Result<Trace<S>, ClosedFormError> {
    let spec = &THERMOSTAT;
    check_len(spec, x0, p, t_end)?;
    check_finite(spec, x0, p)?;
    let (a, b, tout, tlo, thi) = (p[0], p[1], p[2], p[3], p[4]);
    if !(re(a) > 0.0) {
        return Err(invalid(spec, format!("a = {} must be > 0", re(a))));
    }
    if !(re(tlo) < re(thi)) {
        return Err(invalid(spec, "Tlo must be below Thi".to_string()));
    }
    let equilibrium = |mode: ThermostatMode| match mode {
        ThermostatMode::Off => tout,
        ThermostatMode::On => tout + b / a,
    };
    let mut mode = initial_mode;
    let mut temp = x0[0];
    {
        // Signed guard rate: positive when moving in the firing direction.
        let (theta, sign) = match mode {
            ThermostatMode::Off => (tlo, -1.0),
            ThermostatMode::On => (thi, 1.0),
        };
        let signed_rate = sign * re(-a * (temp - equilibrium(mode)));
        if re(temp) == re(theta) && signed_rate >= 0.0 {
            return Err(ClosedFormError::InitialOnGuard {
                model: spec.name,
                guard_rate: sign * signed_rate,
            });
        }
    }
    let mut events = Events::new(spec, max_events);
    let mut t: S = cst(0.0);
    loop {
        let eq = equilibrium(mode);
        let (theta, crosses) = match mode {
            ThermostatMode::Off => (tlo, re(temp) > re(tlo) && re(tlo) > re(eq)),
            ThermostatMode::On => (thi, re(temp) < re(thi) && re(thi) < re(eq)),
        };
        if !crosses {
            break;
        }
        let s = ((temp - eq) / (theta - eq)).ln() / a;
        let t_hit = t + s;
        if re(t_hit) >= t_end {
            break;
        }
        let rate = re(-a * (theta - eq));
        let signed_rate = match mode {
            ThermostatMode::Off => -rate,
            ThermostatMode::On => rate,
        };
        events.push(t_hit, signed_rate, 1.0)?;
        temp = theta;
        t = t_hit;
        mode = match mode {
            ThermostatMode::Off => ThermostatMode::On,
            ThermostatMode::On => ThermostatMode::Off,
        };
    }
    let eq = equilibrium(mode);
    let elapsed = cst::<S>(t_end) - t;
    Ok(Trace {
        final_state: vec![eq + (temp - eq) * (-a * elapsed).exp()],
        event_times: events.times,
        final_mode: Some(mode.as_str()),
    })
}

// ---------------------------------------------------------------------------
// f64 entry points with exact Jacobians.

/// [`ball1d_trace`] with exact Jacobians; `initial_state = [h, v]`,
/// `params = [g, e, floor]`.
pub fn ball1d(
    initial_state: &[f64],
    params: &[f64],
    t_end: f64,
) -> Result<ClosedFormSolution, ClosedFormError> {
    closed_form("ball1d", initial_state, params, None, t_end)
}

/// [`ball2d_flat_trace`] with exact Jacobians; `initial_state = [x, y, vx, vy]`,
/// `params = [g, e, mu]`.
pub fn ball2d_flat(
    initial_state: &[f64],
    params: &[f64],
    t_end: f64,
) -> Result<ClosedFormSolution, ClosedFormError> {
    closed_form("ball2d-flat", initial_state, params, None, t_end)
}

/// [`ball2d_bowl_trace`] with exact Jacobians; `initial_state = [x, y, vx, vy]`,
/// `params = [g, e, c]`.
pub fn ball2d_bowl(
    initial_state: &[f64],
    params: &[f64],
    t_end: f64,
) -> Result<ClosedFormSolution, ClosedFormError> {
    closed_form("ball2d-bowl", initial_state, params, None, t_end)
}

/// [`two_ball_trace`] with exact Jacobians; `initial_state = [x1, x2, v1, v2]`,
/// `params = [r, m1, m2, e]`.
pub fn two_ball(
    initial_state: &[f64],
    params: &[f64],
    t_end: f64,
) -> Result<ClosedFormSolution, ClosedFormError> {
    closed_form("two-ball", initial_state, params, None, t_end)
}

/// [`lif_trace`] with exact Jacobians; `initial_state = [V]`,
/// `params = [I, tau, Vth, Vr]`.
pub fn lif(
    initial_state: &[f64],
    params: &[f64],
    t_end: f64,
) -> Result<ClosedFormSolution, ClosedFormError> {
    closed_form("lif", initial_state, params, None, t_end)
}

/// [`thermostat_trace`] with exact Jacobians; `initial_state = [T]`,
/// `params = [a, b, Tout, Tlo, Thi]`.
pub fn thermostat(
    initial_state: &[f64],
    params: &[f64],
    initial_mode: ThermostatMode,
    t_end: f64,
) -> Result<ClosedFormSolution, ClosedFormError> {
    closed_form(
        "thermostat",
        initial_state,
        params,
        Some(initial_mode.as_str()),
        t_end,
    )
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
    let spec = model_spec(model)?;
    let (x0, p) = (initial_state, params);
    macro_rules! run {
        ($f:ident) => {
            differentiate(
                spec,
                x0,
                p,
                |x, p| $f(x, p, t_end, max_events),
                |x, p| $f(x, p, t_end, max_events),
            )
        };
    }
    match spec.name {
        "ball1d" => run!(ball1d_trace),
        "ball2d-flat" => run!(ball2d_flat_trace),
        "ball2d-bowl" => run!(ball2d_bowl_trace),
        "two-ball" => run!(two_ball_trace),
        "lif" => run!(lif_trace),
        "thermostat" => {
            let mode: ThermostatMode = initial_mode
                .ok_or(ClosedFormError::UnknownMode {
                    model: spec.name,
                    mode: None,
                    valid: spec.modes,
                })?
                .parse()?;
            differentiate(
                spec,
                x0,
                p,
                |x, p| thermostat_trace(x, p, mode, t_end, max_events),
                |x, p| thermostat_trace(x, p, mode, t_end, max_events),
            )
        }
        other => unreachable!("model '{other}' is listed in MODELS but has no closed form"),
    }
}
