//! The leaky integrate-and-fire neuron (`lif`): exponential relaxation
//! between spikes.

use super::common::{check_finite, check_len, cst, differentiate, invalid, re, Events};
use super::error::ClosedFormError;
use super::limits::DEFAULT_MAX_EVENTS;
use super::model::ClosedFormModel;
use super::solution::{ClosedFormSolution, Trace};
use ia_core::Scalar;

/// The registry's entry for `lif`.
pub const LIF: ClosedFormModel = ClosedFormModel {
    name: "lif",
    states: &["V"],
    params: &["I", "tau", "Vth", "Vr"],
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
        &LIF,
        x0,
        p,
        |x, p| lif_trace(x, p, t_end, max_events),
        |x, p| lif_trace(x, p, t_end, max_events),
    )
}

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

/// [`lif_trace`] with exact Jacobians; `initial_state = [V]`,
/// `params = [I, tau, Vth, Vr]`.
pub fn lif(
    initial_state: &[f64],
    params: &[f64],
    t_end: f64,
) -> Result<ClosedFormSolution, ClosedFormError> {
    LIF.solve(initial_state, params, None, t_end, DEFAULT_MAX_EVENTS)
}
