//! The machinery every closed form shares: input checks, the event list
//! (cap, strict advance, transversality), the stable quadratic root, and the
//! evaluation with dual numbers.

use super::error::ClosedFormError;
use super::limits::GRAZING_THRESHOLD;
use super::model::ClosedFormModel;
use super::solution::{differentiate_named, ClosedFormSolution, Trace};
use ia_core::num_dual::Dual64;
use ia_core::Scalar;

pub(super) fn re<S: Scalar>(s: S) -> f64 {
    s.re()
}

pub(super) fn cst<S: Scalar>(v: f64) -> S {
    S::from(v)
}

pub(super) fn check_len<S>(
    spec: &ClosedFormModel,
    x0: &[S],
    p: &[S],
    t_end: f64,
) -> Result<(), ClosedFormError> {
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

pub(super) fn check_finite<S: Scalar>(
    spec: &ClosedFormModel,
    x0: &[S],
    p: &[S],
) -> Result<(), ClosedFormError> {
    let names = spec.states.iter().chain(spec.params.iter());
    for (name, v) in names.zip(x0.iter().chain(p.iter())) {
        if !re(*v).is_finite() {
            return Err(invalid(spec, format!("{name} = {} is not finite", re(*v))));
        }
    }
    Ok(())
}

pub(super) fn invalid(spec: &ClosedFormModel, reason: String) -> ClosedFormError {
    ClosedFormError::InvalidInput {
        model: spec.name,
        reason,
    }
}

/// `|gdot| / (|g_x| |f|)` from real parts.
pub(super) fn transversality(gdot: f64, g_x: &[f64], f: &[f64]) -> f64 {
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
pub(super) struct Events<S> {
    spec: &'static ClosedFormModel,
    max_events: usize,
    pub(super) times: Vec<S>,
}

impl<S: Scalar> Events<S> {
    pub(super) fn new(spec: &'static ClosedFormModel, max_events: usize) -> Self {
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
    pub(super) fn push(
        &mut self,
        t: S,
        signed_rate: f64,
        cosine: f64,
    ) -> Result<(), ClosedFormError> {
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
pub(super) fn smallest_positive_root<S: Scalar>(a: S, b: S, c: S) -> Option<S> {
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
pub(super) fn differentiate(
    spec: &'static ClosedFormModel,
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

/// On flat ground the impacts after the first follow `t_{k+1} = t_k + 2 v_k / g`,
/// `v_{k+1} = e v_k`: with `e < 1` they accumulate at
/// `t_inf = t_1 + 2 v_1 / (g (1 - e))`. Checked once, after the first impact,
/// so that a Zeno run is reported as such (at its accumulation time) instead of
/// as the near-grazing bounce it would reach first.
pub(super) fn check_accumulation<S: Scalar>(
    spec: &'static ClosedFormModel,
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
