//! Names: finding a state, parameter, mode or transition by name, and the
//! labels of the sensitivity inputs.
//!
//! Every lookup by name goes through [`name_index`], so that an unknown name
//! is always the same [`HybridError::UnknownName`], listing what is valid.
//! The inputs that sensitivities are taken with respect to are labelled
//! `initial.<state>` (the initial value of a state entry) and
//! `param.<name>` (a parameter); [`Wrt`] is one input, by index, and owns
//! those labels ([`Wrt::initial_label`], [`Wrt::param_label`],
//! [`Wrt::labels`]); [`HybridSystem::wrt`](crate::HybridSystem::wrt) parses a label against a system.
//!
//! ```
//! use ia_core::{name_index, Wrt};
//!
//! let states = ["h".to_string(), "v".to_string()];
//! assert_eq!(name_index("state", &states, "v").unwrap(), 1);
//! let err = name_index("state", &states, "x").unwrap_err();
//! assert_eq!(err.to_string(), "unknown state 'x'; valid state names: h, v");
//!
//! assert_eq!(Wrt::labels(&states, &["g"]), ["initial.h", "initial.v", "param.g"]);
//! assert_eq!(Wrt::of_column(2, states.len()), Wrt::Param(0));
//! assert!(Wrt::is_initial_label("initial.h") && !Wrt::is_initial_label("param.g"));
//! ```

use crate::error::HybridError;

/// The index of `name` in `names`, or [`HybridError::UnknownName`] of kind
/// `kind` (for example `"state"`, `"parameter"`, `"free variable"`) listing
/// the valid names.
pub fn name_index(kind: &str, names: &[String], name: &str) -> Result<usize, HybridError> {
    names
        .iter()
        .position(|n| n == name)
        .ok_or_else(|| HybridError::UnknownName {
            kind: kind.to_string(),
            name: name.to_string(),
            valid: names.to_vec(),
        })
}

/// One input that sensitivities are taken with respect to: the initial
/// value of a state entry or a parameter, by index. Among a system's inputs
/// ([`HybridSystem::wrt_names`](crate::HybridSystem::wrt_names)) the initial values come first, in state
/// order, then the parameters: [`Wrt::column`] and [`Wrt::of_column`] map
/// between the two.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Wrt {
    /// The initial value of state entry `i`: labelled `initial.<state>`.
    Initial(usize),
    /// Parameter `k`: labelled `param.<name>`.
    Param(usize),
}

impl Wrt {
    /// The start of the label of an initial value.
    pub const INITIAL_PREFIX: &'static str = "initial.";
    /// The start of the label of a parameter.
    pub const PARAM_PREFIX: &'static str = "param.";

    /// The label of the initial value of the state entry named `state`:
    /// `initial.<state>`.
    pub fn initial_label(state: &str) -> String {
        format!("{}{state}", Self::INITIAL_PREFIX)
    }

    /// The label of the parameter named `param`: `param.<param>`.
    pub fn param_label(param: &str) -> String {
        format!("{}{param}", Self::PARAM_PREFIX)
    }

    /// Every input's label, in column order: `initial.<state>` for each of
    /// `states`, then `param.<name>` for each of `params`.
    pub fn labels<S: AsRef<str>, P: AsRef<str>>(states: &[S], params: &[P]) -> Vec<String> {
        states
            .iter()
            .map(|s| Self::initial_label(s.as_ref()))
            .chain(params.iter().map(|p| Self::param_label(p.as_ref())))
            .collect()
    }

    /// Whether `label` names an initial value (`initial.<state>`).
    pub fn is_initial_label(label: &str) -> bool {
        label.starts_with(Self::INITIAL_PREFIX)
    }

    /// The input of column `column` among the inputs of a system of
    /// `state_dim` states.
    pub fn of_column(column: usize, state_dim: usize) -> Self {
        if column < state_dim {
            Wrt::Initial(column)
        } else {
            Wrt::Param(column - state_dim)
        }
    }

    /// The column of this input among the inputs of a system of `state_dim`
    /// states.
    pub fn column(self, state_dim: usize) -> usize {
        match self {
            Wrt::Initial(i) => i,
            Wrt::Param(k) => state_dim + k,
        }
    }

    /// Whether this is an initial value.
    pub fn is_initial(self) -> bool {
        matches!(self, Wrt::Initial(_))
    }

    /// The parameter's index, for a parameter.
    pub fn param(self) -> Option<usize> {
        match self {
            Wrt::Initial(_) => None,
            Wrt::Param(k) => Some(k),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    /// Reference: the column order of the documentation (initial values in
    /// state order, then parameters), for a system of 2 states.
    #[rstest]
    #[case(0, Wrt::Initial(0))]
    #[case(1, Wrt::Initial(1))]
    #[case(2, Wrt::Param(0))]
    #[case(5, Wrt::Param(3))]
    fn columns_and_inputs_map_both_ways(#[case] column: usize, #[case] wrt: Wrt) {
        assert_eq!(Wrt::of_column(column, 2), wrt);
        assert_eq!(wrt.column(2), column);
        assert_eq!(wrt.is_initial(), column < 2);
        assert_eq!(wrt.param(), column.checked_sub(2));
    }

    /// Reference: the labels written out by hand.
    #[rstest]
    #[case("initial.h", true)]
    #[case("param.g", false)]
    #[case("param.initial.x", false)]
    fn labels_tell_initial_values_from_parameters(#[case] label: &str, #[case] initial: bool) {
        assert_eq!(Wrt::is_initial_label(label), initial);
    }

    #[test]
    fn an_unknown_name_lists_the_valid_ones() {
        let names = ["a".to_string(), "b".to_string()];
        let err = name_index("mode", &names, "c").unwrap_err();
        assert_eq!(err.kind(), "unknown_name");
        assert_eq!(err.to_string(), "unknown mode 'c'; valid mode names: a, b");
        assert_eq!(Wrt::labels::<&str, &str>(&[], &[]), Vec::<String>::new());
    }
}
