//! `lif`: a leaky integrate-and-fire neuron.
//!
//! One mode, `subthreshold`, and one transition, `spike`
//! (subthreshold -> subthreshold).
//!
//! Flow, with a constant input drive `I` and membrane time constant `tau`
//! (potentials normalised so that the threshold is about 1):
//!
//! ```text
//! V' = (I - V) / tau
//! ```
//!
//! Guard: `V - Vth`, firing when it rises through zero.
//!
//! Reset: `V <- Vr`.
//!
//! | state | unit | default | | parameter | unit | default |
//! |---|---|---|---|---|---|---|
//! | `V` | 1 | 0.2 | | `I`   | 1 | 1.3  |
//! |     |   |     | | `tau` | s | 0.01 |
//! |     |   |     | | `Vth` | 1 | 1    |
//! |     |   |     | | `Vr`  | 1 | 0    |
//!
//! Default run: `t_end = 0.05` s. Closed form (for `I > Vth`): first spike at
//! `tau ln((I - V0)/(I - Vth))` (about 13.0 ms), then one every
//! `tau ln((I - Vr)/(I - Vth))` (about 14.7 ms): three spikes.
//!
//! Partials by [`ia_core::Autodiff`].

use crate::rules::{ParamRule, Rule, RESET_BELOW_THRESHOLD};
use crate::table::Table;
use ia_core::{Autodiff, Direction, FlowFn, FromMode, GuardFn, ResetFn, Scalar, ToMode};

const TABLE: Table = Table {
    name: "lif",
    description: "Leaky integrate-and-fire neuron: V' = (I - V)/tau; spike when V - Vth rises \
                  through 0, then V <- Vr.",
    states: &[("V", 0.2, "1")],
    params: &[
        ("I", 1.3, "1"),
        ("tau", 0.01, "s"),
        ("Vth", 1.0, "1"),
        ("Vr", 0.0, "1"),
    ],
    modes: &["subthreshold"],
    initial_mode: "subthreshold",
    t_end: 0.05,
    transitions: &[("spike", "subthreshold", "subthreshold", Direction::Rising)],
    rules: &[ParamRule {
        param: "tau",
        rule: Rule::Positive,
        what: "membrane time constant",
    }],
    relations: &[RESET_BELOW_THRESHOLD],
};

/// The `lif` model; see the [module documentation](self).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lif;

catalogued_model!(Lif, |_builder| TABLE
    .builder()
    .mode("subthreshold", Autodiff(Leak))
    .transition(
        "spike",
        FromMode("subthreshold"),
        ToMode("subthreshold"),
        Autodiff(Threshold),
        Autodiff(Fire),
    ));

/// Leaky integration: `V' = (I - V) / tau`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Leak;

impl FlowFn for Leak {
    fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], dxdt: &mut [S]) {
        dxdt[0] = (p[0] - x[0]) / p[1];
    }

    /// `a = -1/tau`, `b = I/tau`.
    fn decoupled_linear(&self, p: &[f64], a: &mut [f64], b: &mut [f64]) -> bool {
        (a[0], b[0]) = (-1.0 / p[1], p[0] / p[1]);
        true
    }
}

/// The threshold: `V - Vth`, rising.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Threshold;

impl GuardFn for Threshold {
    fn direction(&self) -> Direction {
        Direction::Rising
    }

    fn value<S: Scalar>(&self, _t: S, x: &[S], p: &[S]) -> S {
        x[0] - p[2]
    }

    fn threshold(&self, p: &[f64]) -> Option<ia_core::Threshold> {
        Some(ia_core::Threshold {
            state: 0,
            level: p[2],
        })
    }
}

/// The spike's reset: `V <- Vr`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fire;

impl ResetFn for Fire {
    fn apply<S: Scalar>(&self, _t: S, _x: &[S], p: &[S], x_after: &mut [S]) {
        x_after[0] = p[3];
    }
}
