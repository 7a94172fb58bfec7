//! The [`Model`] trait: what every ready model offers.

use crate::rules::{self, ParamRule, Relation, Rule};
use crate::spec::ModelSpec;
use ia_core::{HybridError, HybridSystem};

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
    /// (see [`rules`](crate::rules)); empty when any finite value is valid.
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
        rules::check_params(
            self.name(),
            self.param_rules(),
            self.relations(),
            &names,
            params,
            None,
        )
    }

    /// [`Model::check_params`] for a run from `t = 0` to `t_end`: also
    /// checks that every [`Rule::InRun`] parameter (an input time) lies
    /// inside the run, `(0, t_end)`. Scenarios (the command line, Python)
    /// call it for every run.
    ///
    /// ```
    /// use ia_models::{by_name, Model};
    ///
    /// let net = by_name("cuba-lif").unwrap();
    /// let p = net.spec().default_params();
    /// assert!(net.check_run(&p, 50.0).is_ok());
    /// let err = net.check_run(&p, 4.0).unwrap_err(); // t_in1 = 4.44 is after the end
    /// assert!(err.to_string().contains("parameter 't_in1'"), "{err}");
    /// ```
    fn check_run(&self, params: &[f64], t_end: f64) -> Result<(), HybridError> {
        self.check_run_named(&self.spec().param_names(), params, t_end)
    }

    /// [`Model::check_run`] with the parameter names given (`names`: those
    /// of [`Model::spec`], which [`Model::system`] has too, in the same
    /// order), for callers that keep them: a scenario checks every run
    /// without building the model's spec again.
    ///
    /// ```
    /// use ia_models::{by_name, Model};
    ///
    /// let net = by_name("cuba-lif").unwrap();
    /// let system = net.system();
    /// let p = net.spec().default_params();
    /// let err = net.check_run_named(system.param_names(), &p, 4.0).unwrap_err();
    /// assert_eq!(err.to_string(), net.check_run(&p, 4.0).unwrap_err().to_string());
    /// ```
    fn check_run_named(
        &self,
        names: &[String],
        params: &[f64],
        t_end: f64,
    ) -> Result<(), HybridError> {
        rules::check_params(
            self.name(),
            self.param_rules(),
            self.relations(),
            names,
            params,
            Some(t_end),
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
