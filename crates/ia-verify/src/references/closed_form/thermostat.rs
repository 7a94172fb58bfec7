//! The thermostat with hysteresis (`thermostat`): exponential relaxation
//! towards the mode's equilibrium, two modes.

use super::common::{check_finite, check_len, cst, differentiate, invalid, re, Events};
use super::error::ClosedFormError;
use super::limits::DEFAULT_MAX_EVENTS;
use super::model::ClosedFormModel;
use super::solution::{ClosedFormSolution, Trace};
use ia_core::Scalar;
use std::str::FromStr;

/// The registry's entry for `thermostat`.
pub const THERMOSTAT: ClosedFormModel = ClosedFormModel {
    name: "thermostat",
    states: &["T"],
    params: &["a", "b", "Tout", "Tlo", "Thi"],
    modes: &["off", "on"],
    evaluate: solve,
};

fn solve(
    x0: &[f64],
    p: &[f64],
    initial_mode: Option<&str>,
    t_end: f64,
    max_events: usize,
) -> Result<ClosedFormSolution, ClosedFormError> {
    let mode: ThermostatMode = initial_mode
        .ok_or(ClosedFormError::UnknownMode {
            model: THERMOSTAT.name,
            mode: None,
            valid: THERMOSTAT.modes,
        })?
        .parse()?;
    differentiate(
        &THERMOSTAT,
        x0,
        p,
        |x, p| thermostat_trace(x, p, mode, t_end, max_events),
        |x, p| thermostat_trace(x, p, mode, t_end, max_events),
    )
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

/// [`thermostat_trace`] with exact Jacobians; `initial_state = [T]`,
/// `params = [a, b, Tout, Tlo, Thi]`.
pub fn thermostat(
    initial_state: &[f64],
    params: &[f64],
    initial_mode: ThermostatMode,
    t_end: f64,
) -> Result<ClosedFormSolution, ClosedFormError> {
    THERMOSTAT.solve(
        initial_state,
        params,
        Some(initial_mode.as_str()),
        t_end,
        DEFAULT_MAX_EVENTS,
    )
}
