//! How a catalogued model is written: its static [`Table`] (names, defaults,
//! units, transitions, parameter rules), from which both its
//! [`ModelSpec`] and the names given to [`HybridSystem::builder`] are
//! derived, and the `catalogued_model!` macro that implements
//! [`Model`](crate::model::Model) from it.

use crate::rules::{ParamRule, Relation};
use crate::spec::{ModelSpec, Quantity, TransitionSpec};
use ia_core::{Direction, HybridSystem};

/// Implements [`Model`](crate::model::Model) for a model's unit struct from its module's `TABLE`
/// (names, defaults, units, parameter rules) and a function that adds the
/// modes and transitions to the builder the table starts; `hint: f` gives
/// the model's own [`Model::hint`](crate::model::Model::hint).
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
        impl $crate::model::Model for $model {
            fn name(&self) -> &'static str {
                TABLE.name
            }

            fn spec(&self) -> $crate::spec::ModelSpec {
                TABLE.spec()
            }

            fn system(&self) -> ia_core::HybridSystem {
                let wire: fn(ia_core::HybridSystemBuilder) -> ia_core::HybridSystemBuilder = $wire;
                $crate::table::finish(wire(TABLE.builder()), TABLE.name)
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

/// A state entry or parameter of a model, as written in the model modules:
/// `(name, default, unit)`.
pub(crate) type Entry = (&'static str, f64, &'static str);

/// A transition as written in the model modules: `(name, from, to, direction)`.
pub(crate) type Edge = (&'static str, &'static str, &'static str, Direction);

/// The static description of a model, from which both its [`ModelSpec`] and
/// the names passed to [`HybridSystem::builder`] are derived, so that the two
/// cannot disagree.
pub(crate) struct Table {
    pub(crate) name: &'static str,
    pub(crate) description: &'static str,
    pub(crate) states: &'static [Entry],
    pub(crate) params: &'static [Entry],
    pub(crate) modes: &'static [&'static str],
    pub(crate) initial_mode: &'static str,
    pub(crate) t_end: f64,
    pub(crate) transitions: &'static [Edge],
    pub(crate) rules: &'static [ParamRule],
    pub(crate) relations: &'static [Relation],
}

impl Table {
    pub(crate) fn spec(&self) -> ModelSpec {
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
    pub(crate) fn builder(&self) -> ia_core::HybridSystemBuilder {
        HybridSystem::builder(&self.state_names(), &self.param_names())
    }
}

/// Finishes a catalogue system; the catalogue's own tests check that every
/// system builds, so a failure here is a bug in this crate.
pub(crate) fn finish(builder: ia_core::HybridSystemBuilder, name: &str) -> HybridSystem {
    builder
        .build()
        .unwrap_or_else(|e| panic!("catalogue model '{name}' failed to build: {e}"))
}
