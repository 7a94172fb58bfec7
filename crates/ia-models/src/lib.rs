//! # ia-models: ready hybrid models
//!
//! Each model is a unit struct implementing [`Model`]: [`Model::spec`] describes
//! it (names, units and defaults of its states and parameters, its modes and
//! transitions, a default run length) and [`Model::system`] builds the
//! [`HybridSystem`] with exact partial derivatives.
//!
//! | name | struct | states | parameters | modes |
//! |---|---|---|---|---|
//! | `ball1d` | [`Ball1d`] | h, v | g, e, floor | flight |
//! | `ball2d-flat` | [`Ball2dFlat`] | x, y, vx, vy | g, e, mu | flight |
//! | `ball2d-bowl` | [`Ball2dBowl`] | x, y, vx, vy | g, e, c | flight |
//! | `two-ball` | [`TwoBall`] | x1, x2, v1, v2 | r, m1, m2, e | flight |
//! | `lif` | [`Lif`] | V | I, tau, Vth, Vr | subthreshold |
//! | `lif-network` | [`LifNetwork`] (sized) | `V0 .. V<N-1>` | `I0 .. I<N-1>, tau, Vth, Vr, w<j>_<i>` | subthreshold |
//! | `thermostat` | [`Thermostat`] | T | a, b, Tout, Tlo, Thi | off, on |
//! | `impact-pendulum` | [`ImpactPendulum`] | theta, omega | g, l, e, theta_wall | swing |
//! | `rimless-wheel` | [`RimlessWheel`] | theta, omega | g, l, alpha, gamma | stance |
//! | `slip-hopper` | [`SlipHopper`] | x, y, vx, vy, xf | m, k, l0, g, theta_td | flight, stance |
//! | `particle-chain` | [`ParticleChain`] (sized) | `x0 .. x<N-1>, v0 .. v<N-1>` | `L, r, e, m0 .. m<N-1>` | flight |
//!
//! These names (model, state, parameter, mode and transition names) are a
//! public contract: scenario files and scripts refer to them.
//!
//! All models but [`Ball2dFlat`] get their partials from one generic
//! implementation through [`ia_core::Autodiff`]; `ball2d-flat` has
//! hand-written, allocation-free partials (checked against autodiff in its
//! tests) because benchmarks time it.
//!
//! ```
//! use ia_models::{by_name, Model};
//!
//! let model = by_name("ball2d-flat").unwrap();
//! let spec = model.spec();
//! let system = model.system();
//! assert_eq!(spec.default_state(), vec![0.0, 1.0, 1.0, 0.0]);
//! assert_eq!(system.state_names(), spec.state_names().as_slice());
//! assert!(by_name("nope").is_err());
//! ```

#![deny(missing_docs)]

use ia_core::{Direction, HybridError, HybridSystem};
use serde::{Deserialize, Serialize};

/// Implements [`Model`] for a model's unit struct from its module's `TABLE`
/// (names, defaults, units, parameter rules) and a function that adds the
/// modes and transitions to the builder the table starts; `hint: f` gives
/// the model's own [`Model::hint`].
macro_rules! catalogued_model {
    ($model:ty, $wire:expr, hint: $hint:expr) => {
        catalogued_model!($model, $wire, {
            fn hint(&self, params: &[f64], error: &ia_core::HybridError) -> Option<String> {
                let hint: fn(&[f64], &ia_core::HybridError) -> Option<String> = $hint;
                hint(params, error)
            }
        });
    };
    ($model:ty, $wire:expr) => {
        catalogued_model!($model, $wire, {});
    };
    ($model:ty, $wire:expr, { $($extra:item)* }) => {
        impl $crate::Model for $model {
            fn name(&self) -> &'static str {
                TABLE.name
            }

            fn spec(&self) -> $crate::ModelSpec {
                TABLE.spec()
            }

            fn system(&self) -> ia_core::HybridSystem {
                let wire: fn(ia_core::HybridSystemBuilder) -> ia_core::HybridSystemBuilder = $wire;
                $crate::finish(wire(TABLE.builder()), TABLE.name)
            }

            fn param_rules(&self) -> &'static [$crate::rules::ParamRule] {
                TABLE.rules
            }

            fn relations(&self) -> &'static [$crate::rules::Relation] {
                TABLE.relations
            }

            $($extra)*
        }
    };
}

pub mod ball1d;
pub mod ball2d_bowl;
pub mod ball2d_flat;
pub mod impact_pendulum;
pub mod lif;
pub mod lif_network;
pub mod particle_chain;
pub mod rimless_wheel;
pub mod rules;
pub mod slip_hopper;
pub mod thermostat;
pub mod two_ball;

pub use ball1d::Ball1d;
pub use ball2d_bowl::Ball2dBowl;
pub use ball2d_flat::Ball2dFlat;
pub use impact_pendulum::ImpactPendulum;
pub use lif::Lif;
pub use lif_network::LifNetwork;
pub use particle_chain::ParticleChain;
pub use rimless_wheel::RimlessWheel;
pub use rules::{ParamRule, Relation, Rule};
pub use slip_hopper::SlipHopper;
pub use thermostat::Thermostat;
pub use two_ball::TwoBall;

/// A ready model: its description and its hybrid system.
pub trait Model: std::fmt::Debug + Send + Sync {
    /// The model's catalogue name (for example `"ball2d-flat"`).
    fn name(&self) -> &'static str;
    /// Names, units and defaults of states and parameters, modes, transitions
    /// and the default run length.
    fn spec(&self) -> ModelSpec;
    /// The hybrid system, with the state, parameter, mode and transition
    /// names of [`Model::spec`], in the same order.
    fn system(&self) -> HybridSystem;

    /// The rules its parameters' values must satisfy to make physical sense
    /// (see [`rules`]); empty when any finite value is valid.
    fn param_rules(&self) -> &'static [ParamRule] {
        &[]
    }

    /// The rules between two of its parameters (`lower < upper`).
    fn relations(&self) -> &'static [Relation] {
        &[]
    }

    /// Checks parameter values (in [`Model::spec`]'s order) against
    /// [`Model::param_rules`] and [`Model::relations`]: the first violation
    /// is an [`HybridError::InvalidOption`] naming the parameter, its value
    /// and what is valid; a wrong count is an
    /// [`HybridError::DimensionMismatch`].
    ///
    /// ```
    /// use ia_models::{by_name, Model};
    ///
    /// let lif = by_name("lif").unwrap();
    /// let err = lif.check_params(&[1.3, 0.01, 1.0, 1.0]).unwrap_err(); // Vr = Vth
    /// assert!(err.to_string().contains("must be less than parameter 'Vth' = 1"), "{err}");
    /// ```
    fn check_params(&self, params: &[f64]) -> Result<(), HybridError> {
        let names = self.spec().param_names();
        if names.len() != params.len() {
            return Err(HybridError::DimensionMismatch {
                what: "parameters".to_string(),
                expected: names.len(),
                found: params.len(),
            });
        }
        rules::check_params(
            self.name(),
            self.param_rules(),
            self.relations(),
            &names,
            params,
        )
    }

    /// What in the parameters most likely made a run of this model fail,
    /// where the model knows it (a ball whose bounces accumulate until they
    /// are too small to resolve: when it comes to rest), in words to add to
    /// the error; `params` are the run's parameters.
    fn hint(&self, params: &[f64], error: &HybridError) -> Option<String> {
        let rule = self
            .param_rules()
            .iter()
            .find(|rule| rule.param == "e" && rule.rule == Rule::PositiveUnit)?;
        let index = self.spec().param_index(rule.param).ok()?;
        rules::accumulating_bounces(index, params, error)
    }
}

/// A named scalar with its default value and unit: a state entry or a
/// parameter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Quantity {
    /// Name, as used by [`HybridSystem::state_names`] or
    /// [`HybridSystem::param_names`].
    pub name: String,
    /// Default value (the default initial state for a state entry).
    pub default: f64,
    /// Unit, in plain text (`"m/s"`, `"1"` for dimensionless).
    pub unit: String,
}

/// A transition as described in a [`ModelSpec`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TransitionSpec {
    /// Transition name.
    pub name: String,
    /// Source mode name.
    pub from: String,
    /// Target mode name.
    pub to: String,
    /// Direction in which the guard crosses zero to fire.
    pub direction: Direction,
}

/// The description of a ready model: everything a scenario file or a script
/// needs to drive it without reading Rust.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelSpec {
    /// Catalogue name (for example `"ball2d-flat"`).
    pub name: String,
    /// One-paragraph description: the equations in words.
    pub description: String,
    /// State entries, in the system's order, with default initial values.
    pub states: Vec<Quantity>,
    /// Parameters, in the system's order, with default values.
    pub params: Vec<Quantity>,
    /// Mode names, in the system's order.
    pub modes: Vec<String>,
    /// The mode a default run starts in.
    pub initial_mode: String,
    /// Default run length (end time of a run started at `t = 0`).
    pub t_end: f64,
    /// Transitions, in the system's order.
    pub transitions: Vec<TransitionSpec>,
}

impl ModelSpec {
    /// The default initial state, in state order.
    pub fn default_state(&self) -> Vec<f64> {
        self.states.iter().map(|q| q.default).collect()
    }

    /// The default parameter values, in parameter order.
    pub fn default_params(&self) -> Vec<f64> {
        self.params.iter().map(|q| q.default).collect()
    }

    /// State names, in order.
    pub fn state_names(&self) -> Vec<String> {
        self.states.iter().map(|q| q.name.clone()).collect()
    }

    /// Parameter names, in order.
    pub fn param_names(&self) -> Vec<String> {
        self.params.iter().map(|q| q.name.clone()).collect()
    }

    /// Transition names, in order.
    pub fn transition_names(&self) -> Vec<String> {
        self.transitions.iter().map(|t| t.name.clone()).collect()
    }

    /// Index of the state entry named `name`, or
    /// [`HybridError::UnknownName`] listing the valid names.
    pub fn state_index(&self, name: &str) -> Result<usize, HybridError> {
        ia_core::name_index("state", &self.state_names(), name)
    }

    /// Index of the parameter named `name`, or
    /// [`HybridError::UnknownName`] listing the valid names.
    pub fn param_index(&self, name: &str) -> Result<usize, HybridError> {
        ia_core::name_index("parameter", &self.param_names(), name)
    }

    /// Index of the mode named `name`, or [`HybridError::UnknownName`]
    /// listing the valid names.
    pub fn mode_index(&self, name: &str) -> Result<usize, HybridError> {
        ia_core::name_index("mode", &self.modes, name)
    }

    /// Index of the initial mode.
    pub fn initial_mode_index(&self) -> usize {
        self.modes
            .iter()
            .position(|m| *m == self.initial_mode)
            .expect("a catalogue spec names one of its modes as initial mode")
    }
}

/// Every ready model, in the order of the table in the crate documentation.
pub fn catalog() -> Vec<Box<dyn Model>> {
    vec![
        Box::new(Ball1d),
        Box::new(Ball2dFlat),
        Box::new(Ball2dBowl),
        Box::new(TwoBall),
        Box::new(Lif),
        Box::new(LifNetwork::default()),
        Box::new(Thermostat),
        Box::new(ImpactPendulum),
        Box::new(RimlessWheel),
        Box::new(SlipHopper),
        Box::new(ParticleChain::default()),
    ]
}

/// The catalogue names of every ready model, in [`catalog`] order.
pub fn model_names() -> Vec<&'static str> {
    catalog().iter().map(|m| m.name()).collect()
}

/// The model named `name`, or [`HybridError::UnknownName`] (kind `"model"`)
/// listing the valid names.
///
/// ```
/// let err = ia_models::by_name("nope").unwrap_err();
/// assert!(err.to_string().contains("ball2d-flat"));
/// ```
pub fn by_name(name: &str) -> Result<Box<dyn Model>, HybridError> {
    let mut models = catalog();
    match models.iter().position(|m| m.name() == name) {
        Some(i) => Ok(models.swap_remove(i)),
        None => Err(HybridError::UnknownName {
            kind: "model".to_string(),
            name: name.to_string(),
            valid: models.iter().map(|m| m.name().to_string()).collect(),
        }),
    }
}

/// The model named `name` with `size` elements (neurons, bodies), for the
/// sized models; `None` gives the default size. A size for a model that has
/// none is an error naming the sized models.
///
/// ```
/// let net = ia_models::sized("lif-network", Some(5)).unwrap();
/// assert_eq!(net.spec().states.len(), 5);
/// assert!(ia_models::sized("ball1d", Some(5)).is_err());
/// ```
pub fn sized(name: &str, size: Option<usize>) -> Result<Box<dyn Model>, HybridError> {
    let model = by_name(name)?;
    match (name, size) {
        (_, None) => Ok(model),
        ("lif-network", Some(n)) => Ok(Box::new(LifNetwork::new(n)?)),
        ("particle-chain", Some(n)) => Ok(Box::new(ParticleChain::new(n)?)),
        (_, Some(n)) => Err(HybridError::invalid(
            "size",
            n,
            format!(
                "model '{name}' has no size; sized models: {}",
                SIZED_MODELS.join(", ")
            ),
        )),
    }
}

/// The models that take a size.
pub const SIZED_MODELS: &[&str] = &["lif-network", "particle-chain"];

/// A state entry or parameter of a model, as written in the model modules:
/// `(name, default, unit)`.
type Entry = (&'static str, f64, &'static str);

/// A transition as written in the model modules: `(name, from, to, direction)`.
type Edge = (&'static str, &'static str, &'static str, Direction);

/// The static description of a model, from which both its [`ModelSpec`] and
/// the names passed to [`HybridSystem::builder`] are derived, so that the two
/// cannot disagree.
struct Table {
    name: &'static str,
    description: &'static str,
    states: &'static [Entry],
    params: &'static [Entry],
    modes: &'static [&'static str],
    initial_mode: &'static str,
    t_end: f64,
    transitions: &'static [Edge],
    rules: &'static [ParamRule],
    relations: &'static [Relation],
}

impl Table {
    fn spec(&self) -> ModelSpec {
        let quantities = |entries: &[Entry]| {
            entries
                .iter()
                .map(|&(name, default, unit)| Quantity {
                    name: name.to_string(),
                    default,
                    unit: unit.to_string(),
                })
                .collect()
        };
        ModelSpec {
            name: self.name.to_string(),
            description: self.description.to_string(),
            states: quantities(self.states),
            params: quantities(self.params),
            modes: self.modes.iter().map(|m| m.to_string()).collect(),
            initial_mode: self.initial_mode.to_string(),
            t_end: self.t_end,
            transitions: self
                .transitions
                .iter()
                .map(|&(name, from, to, direction)| TransitionSpec {
                    name: name.to_string(),
                    from: from.to_string(),
                    to: to.to_string(),
                    direction,
                })
                .collect(),
        }
    }

    fn state_names(&self) -> Vec<&'static str> {
        self.states.iter().map(|e| e.0).collect()
    }

    fn param_names(&self) -> Vec<&'static str> {
        self.params.iter().map(|e| e.0).collect()
    }

    /// A builder with this table's state and parameter names.
    fn builder(&self) -> ia_core::HybridSystemBuilder {
        HybridSystem::builder(&self.state_names(), &self.param_names())
    }
}

/// Finishes a catalogue system; the catalogue's own tests check that every
/// system builds, so a failure here is a bug in this crate.
fn finish(builder: ia_core::HybridSystemBuilder, name: &str) -> HybridSystem {
    builder
        .build()
        .unwrap_or_else(|e| panic!("catalogue model '{name}' failed to build: {e}"))
}
