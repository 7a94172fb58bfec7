//! Two balls on a line (`two-ball`): free flight, at most one impact.

use super::common::{
    check_finite, check_len, cst, differentiate, invalid, re, transversality, Events,
};
use super::error::ClosedFormError;
use super::limits::DEFAULT_MAX_EVENTS;
use super::model::ClosedFormModel;
use super::solution::{ClosedFormSolution, Trace};
use ia_core::Scalar;

/// The registry's entry for `two-ball`.
pub const TWO_BALL: ClosedFormModel = ClosedFormModel {
    name: "two-ball",
    states: &["x1", "x2", "v1", "v2"],
    params: &["r", "m1", "m2", "e"],
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
        &TWO_BALL,
        x0,
        p,
        |x, p| two_ball_trace(x, p, t_end, max_events),
        |x, p| two_ball_trace(x, p, t_end, max_events),
    )
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

/// [`two_ball_trace`] with exact Jacobians; `initial_state = [x1, x2, v1, v2]`,
/// `params = [r, m1, m2, e]`.
pub fn two_ball(
    initial_state: &[f64],
    params: &[f64],
    t_end: f64,
) -> Result<ClosedFormSolution, ClosedFormError> {
    TWO_BALL.solve(initial_state, params, None, t_end, DEFAULT_MAX_EVENTS)
}
