//! The `lif-network` in closed form: every neuron relaxes exponentially
//! between spikes, so the run is a sequence of exact spike times, found
//! neuron by neuron, and the derivatives come from dual numbers through
//! that sequence (as for the single-neuron [`lif_trace`](super::lif_trace)).

use super::common::{cst, re};
use super::error::ClosedFormError;
use super::solution::{differentiate_named, ClosedFormSolution, Trace};
use ia_core::Scalar;
use ia_models::{LifNetwork, Model};

const MODEL: &str = "lif-network";

/// A `lif-network` run with a closed form: the network, its initial
/// potentials and parameters, and the run length.
#[derive(Clone, Debug)]
pub struct NetworkCase {
    /// Name of the case.
    pub name: &'static str,
    /// The network.
    pub net: LifNetwork,
    /// Initial potentials.
    pub initial_state: Vec<f64>,
    /// Parameters, in the model's order.
    pub params: Vec<f64>,
    /// Run length.
    pub t_end: f64,
}

/// The network runs the checks compare with their closed form:
///
/// * `kicked`: neuron 0 fires at about 13 ms and kicks neurons 1 and 2 by
///   0.03; neuron 1 (at 0.98) lands strictly past threshold and fires in
///   the same instant (a cascade), neuron 2 (at 0.96) lands short and
///   does not.
/// * `excitatory`: four neurons all-to-all with every weight 0.12, so
///   spikes set off others in cascades.
/// * `default3`, `default10`, `default12`: the default networks (inhibitory;
///   all-to-all up to ten neurons, ten random inputs each above) over their
///   default run, about ten spikes per neuron.
pub fn network_cases() -> Vec<NetworkCase> {
    let with = |net: LifNetwork, x0: Option<Vec<f64>>, set: &dyn Fn(&str) -> Option<f64>| {
        let spec = net.spec();
        let params = spec
            .params
            .iter()
            .map(|q| set(&q.name).unwrap_or(q.default))
            .collect();
        (x0.unwrap_or_else(|| spec.default_state()), params, net)
    };
    let case =
        |name, (initial_state, params, net): (Vec<f64>, Vec<f64>, LifNetwork), t_end| NetworkCase {
            name,
            net,
            initial_state,
            params,
            t_end,
        };
    let kicked = LifNetwork::with_connections(3, vec![(0, 1), (0, 2)]).expect("a valid network");
    let kicks = |name: &str| match name {
        "I0" => Some(1.3),
        "I1" => Some(0.98),
        "I2" => Some(0.96),
        "w1_0" | "w2_0" => Some(0.03),
        _ => None,
    };
    let excite = |name: &str| name.starts_with('w').then_some(0.12);
    let default = |size| LifNetwork::new(size).expect("a valid size");
    let none = |_: &str| None;
    let t_end = default(3).spec().t_end;
    vec![
        case(
            "kicked",
            with(kicked, Some(vec![0.2, 0.98, 0.96]), &kicks),
            0.02,
        ),
        case("excitatory", with(default(4), None, &excite), t_end),
        case("default3", with(default(3), None, &none), t_end),
        case("default10", with(default(10), None, &none), t_end),
        case("default12", with(default(12), None, &none), t_end),
    ]
}

/// The case of [`network_cases`] named `name`.
pub fn network_case(name: &str) -> Option<NetworkCase> {
    network_cases().into_iter().find(|c| c.name == name)
}

/// The network's run in closed form: potentials `V<i>` of `net.size()`
/// neurons, parameters in the order of [`ia_models::LifNetwork`]'s spec
/// (`I0 .. I<N-1>`, `tau`, `Vth`, `Vr`, then one weight per synapse of
/// `net.connections()`).
///
/// # Derivation
///
/// * **Relaxation.** Between spikes every neuron obeys
///   `V' = (I - V) / tau`, so from `(t_k, V_k)`:
///   `V(t_k + s) = I + (V_k - I) e^{-s/tau}`.
/// * **Next spike.** A neuron below threshold with `I > Vth` reaches it
///   after `s = tau ln((I - V_k) / (I - Vth))`; one with `I <= Vth` never
///   does. The next event is the earliest of these (a tie between two
///   neurons is a simultaneous crossing and is rejected as grazing: its
///   order, and so the derivative, is not defined).
/// * **Reset.** The neuron `j` that spiked is set to `Vr`, and every target
///   `k` of a synapse `j -> k` is kicked, `V_k += w<k>_<j>`.
/// * **Cascade.** A kick that lifts a neuron to its threshold or past it
///   makes it spike at the same instant: the lowest-numbered such neuron
///   fires next (the integrator's rule: the first declared transition that
///   is due), with the event time of the spike that started the cascade,
///   and the check runs again after its reset.
/// * **End:** `V_i(T) = I_i + (V_i - I_i) e^{-(T - t_k)/tau}` from the last
///   event.
///
/// Requires `tau > 0` and every initial potential below `Vth`.
pub fn lif_network_trace<S: Scalar>(
    net: &LifNetwork,
    x0: &[S],
    p: &[S],
    t_end: f64,
    max_events: usize,
) -> Result<Trace<S>, ClosedFormError> {
    let n = net.size();
    check_lengths(net, x0.len(), p.len())?;
    let (tau, vth, vr) = (p[n], p[n + 1], p[n + 2]);
    let invalid = |reason: String| ClosedFormError::InvalidInput {
        model: MODEL,
        reason,
    };
    if !(t_end.is_finite() && t_end >= 0.0) {
        return Err(invalid(format!("t_end = {t_end} must be finite and >= 0")));
    }
    if let Some(bad) = x0.iter().chain(p).map(|v| re(*v)).find(|v| !v.is_finite()) {
        return Err(invalid(format!("an input is not finite ({bad})")));
    }
    if !(re(tau) > 0.0) {
        return Err(invalid(format!("tau = {} must be > 0", re(tau))));
    }
    if let Some(i) = x0.iter().position(|v| !(re(*v) < re(vth))) {
        return Err(ClosedFormError::InitialOnGuard {
            model: MODEL,
            guard_rate: re((p[i] - x0[i]) / tau),
        });
    }
    let mut targets: Vec<Vec<(usize, usize)>> = vec![Vec::new(); n];
    for (k, &(from, to)) in net.connections().iter().enumerate() {
        targets[from].push((to, n + 3 + k));
    }
    let mut v = x0.to_vec();
    let mut t: S = cst(0.0);
    let mut event_times = Vec::new();
    let relax = |v: &mut [S], s: S| {
        let decay = (-s / tau).exp();
        for (vi, &drive) in v.iter_mut().zip(&p[..n]) {
            *vi = drive + (*vi - drive) * decay;
        }
    };
    loop {
        let mut next: Option<(usize, S)> = None;
        let mut tied = false;
        for (i, (&vi, &drive)) in v.iter().zip(&p[..n]).enumerate() {
            if !(re(drive) > re(vth)) {
                continue;
            }
            let s = tau * ((drive - vi) / (drive - vth)).ln();
            match next {
                Some((_, best)) if re(s) > re(best) => {}
                Some((_, best)) if re(s) == re(best) => tied = true,
                _ => {
                    next = Some((i, s));
                    tied = false;
                }
            }
        }
        let Some((first, s)) = next.filter(|&(_, s)| re(t + s) < t_end) else {
            break;
        };
        if tied {
            return Err(ClosedFormError::Grazing {
                model: MODEL,
                event: event_times.len(),
                time: re(t + s),
                guard_rate: 0.0,
                transversality: 0.0,
            });
        }
        t += s;
        relax(&mut v, s);
        let mut firing = Some(first);
        while let Some(j) = firing {
            if event_times.len() >= max_events {
                return Err(ClosedFormError::TooManyEvents {
                    model: MODEL,
                    max_events,
                    time: re(t),
                });
            }
            event_times.push(t);
            v[j] = vr;
            for &(k, w) in &targets[j] {
                v[k] += p[w];
            }
            firing = v.iter().position(|vk| re(*vk) >= re(vth));
        }
    }
    relax(&mut v, cst::<S>(t_end) - t);
    Ok(Trace {
        final_state: v,
        event_times,
        final_mode: None,
    })
}

/// [`lif_network_trace`] with exact Jacobians of the final potentials and
/// of every spike time, with respect to every initial potential and every
/// parameter (names as the model's: `initial.V<i>`, `param.I<i>`,
/// `param.w<k>_<j>`, ...).
///
/// ```
/// use ia_models::LifNetwork;
/// use ia_verify::closed_form::lif_network;
///
/// // Two uncoupled neurons: each spikes when V reaches Vth = 1 from V0 under
/// // its drive, at t = tau ln((I - V0) / (I - 1)).
/// let net = LifNetwork::with_connections(2, vec![]).unwrap();
/// let (tau, drive) = (0.01, 1.5);
/// let p = [drive, 1.2, tau, 1.0, 0.0];
/// let exact = lif_network(&net, &[0.0, 0.5], &p, 0.012, 100).unwrap();
/// let first = tau * (drive / (drive - 1.0)).ln();
/// assert!((exact.event_times[0] - first).abs() < 1e-15);
/// ```
pub fn lif_network(
    net: &LifNetwork,
    initial_state: &[f64],
    params: &[f64],
    t_end: f64,
    max_events: usize,
) -> Result<ClosedFormSolution, ClosedFormError> {
    check_lengths(net, initial_state.len(), params.len())?;
    let spec = net.spec();
    let names = |q: &[ia_models::Quantity]| q.iter().map(|q| q.name.clone()).collect();
    differentiate_named(
        MODEL,
        names(&spec.states),
        names(&spec.params),
        initial_state,
        params,
        |x, p| lif_network_trace(net, x, p, t_end, max_events),
        |x, p| lif_network_trace(net, x, p, t_end, max_events),
    )
}

fn check_lengths(net: &LifNetwork, states: usize, params: usize) -> Result<(), ClosedFormError> {
    let n = net.size();
    let expected_params = n + 3 + net.connections().len();
    let (what, expected, found) = if states != n {
        ("initial state", n, states)
    } else if params != expected_params {
        ("params", expected_params, params)
    } else {
        return Ok(());
    };
    Err(ClosedFormError::DimensionMismatch {
        model: MODEL,
        what,
        expected,
        found,
    })
}
