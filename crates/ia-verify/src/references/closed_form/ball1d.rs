//! The ball falling onto a floor (`ball1d`): uniform acceleration between
//! impacts.

use super::common::{
    check_accumulation, check_finite, check_len, cst, differentiate, invalid, re,
    smallest_positive_root, transversality, Events,
};
use super::error::ClosedFormError;
use super::limits::DEFAULT_MAX_EVENTS;
use super::model::ClosedFormModel;
use super::solution::{ClosedFormSolution, Trace};
use ia_core::Scalar;

/// The registry's entry for `ball1d`.
pub const BALL1D: ClosedFormModel = ClosedFormModel {
    name: "ball1d",
    states: &["h", "v"],
    params: &["g", "e", "floor"],
    modes: &[],
    evaluate: solve,
};

fn solve(
    x0: &[f64],
    p: &[f64],
    _initial_mode: Option<&str>,
    t_end: f64,
    max_events: usize,
) -> Result<ClosedFormSolution, ClosedFormError> {
    differentiate(
        &BALL1D,
        x0,
        p,
        |x, p| ball1d_trace(x, p, t_end, max_events),
        |x, p| ball1d_trace(x, p, t_end, max_events),
    )
}

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

/// [`ball1d_trace`] with exact Jacobians; `initial_state = [h, v]`,
/// `params = [g, e, floor]`.
pub fn ball1d(
    initial_state: &[f64],
    params: &[f64],
    t_end: f64,
) -> Result<ClosedFormSolution, ClosedFormError> {
    BALL1D.solve(initial_state, params, None, t_end, DEFAULT_MAX_EVENTS)
}
