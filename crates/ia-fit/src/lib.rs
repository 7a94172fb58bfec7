//! # ia-fit: fitting parameters of a hybrid system to data
//!
//! [`FitProblem`] makes a run ([`Problem`]) plus data into a least-squares
//! problem for [argmin](https://argmin-rs.org): it implements argmin's
//! [`CostFunction`] and [`Gradient`], the gradient by the one-pass adjoint
//! ([`ia_adjoint::gradient`]), so any argmin solver that needs a cost and a
//! gradient can minimise it; [`FitProblem::fit`] runs L-BFGS.
//!
//! The free variables are chosen by name (`param.<name>`,
//! `initial.<state>`, as [`ia_adjoint::Sensitivities::wrt`]); the data are
//! scalar observations `y_i` of state `s_i` at time `t_i` ([`Datum`]), and
//! the loss is
//!
//! ```text
//! L(theta) = sum_i (x_{s_i}(t_i; theta) - y_i)^2
//! ```
//!
//! (the `observation.<k>.<s>` terms of [`LossTerms`] with targets, weight 1).
//!
//! ## Bounds
//!
//! argmin's L-BFGS has no bounds, so a bounded variable is optimised in an
//! unbounded coordinate `u` and mapped into its bounds (a transform, not a
//! projection: the solver never sees a bound):
//!
//! ```text
//! theta = a + (b - a) / (1 + exp(-u))      bounds [a, b]
//! theta = a + exp(u)                       bounds [a, +inf)
//! theta = b - exp(-u)                      bounds (-inf, b]
//! ```
//!
//! and `dL/du = dL/dtheta dtheta/du`, with `dtheta/du = (theta - a)(b - theta)/(b - a)`,
//! `theta - a` and `b - theta`. The bounds are therefore open: the start
//! must lie strictly inside, and a fit whose best value sits on a bound
//! approaches it without reaching it. [`CostFunction`] and [`Gradient`]
//! take `u` (equal to `theta` for an unbounded variable);
//! [`FitProblem::values`] maps `u` to `theta`.
//!
//! A run that fails at a point the solver tries (a ball whose bounces
//! accumulate before `t_end` once `e` is small enough, say) ends the fit
//! with that run's error: start near plausible values, bound the
//! variables, or end the run earlier.
//!
//! ## Standard errors
//!
//! With the residuals `r_i = x_{s_i}(t_i) - y_i` at the fit, their
//! Jacobian `J = dr/dtheta` (forward sensitivities,
//! [`ia_adjoint::jacobian_wrt`]), `m` data and `p` free variables, the
//! Gauss-Newton covariance is `sigma^2 (J^T J)^-1` with
//! `sigma^2 = SSR / (m - p)`; the standard errors are the square roots of
//! its diagonal ([`FitProblem::standard_errors`]).
//!
//! ```
//! use ia_fit::{Datum, FitProblem, FitOptions};
//! use ia_adjoint::prelude::*;
//!
//! // A ball dropped from 1 m: data of its height, made with g = 9.81.
//! let model = ia_models::by_name("ball1d").unwrap();
//! let system = model.system();
//! let truth = Problem::new(&system, vec![1.0, 0.0], vec![9.81, 0.8, 0.0], 1.0)
//!     .with_solver(SolverChoice::dopri5(1e-12));
//! let times = [0.1, 0.2, 0.3, 0.6, 0.8];
//! let run = ia_adjoint::ia_events::simulate(&truth.clone().with_observations(times.to_vec())).unwrap();
//! let data: Vec<Datum> = run.observations.iter()
//!     .map(|o| Datum::new(o.time, "h", o.state[0]))
//!     .collect();
//! // Fit g and e from g = 9, e = 0.5.
//! let mut start = truth.clone();
//! start.params = vec![9.0, 0.5, 0.0];
//! let fit = FitProblem::new(start, &["param.g", "param.e"], data)
//!     .unwrap()
//!     .with_bounds("param.e", Some(0.0), Some(1.0))
//!     .unwrap();
//! let result = fit.fit(&FitOptions::default()).unwrap();
//! assert!((result.values[0] - 9.81).abs() < 1e-6);
//! assert!((result.values[1] - 0.8).abs() < 1e-6);
//! ```

#![deny(missing_docs)]

use argmin::core::{CostFunction, Executor, Gradient, State, TerminationReason};
use argmin::solver::linesearch::MoreThuenteLineSearch;
use argmin::solver::quasinewton::LBFGS;
use ia_adjoint::nalgebra::DMatrix;
use ia_adjoint::{
    gradient_in, jacobian_wrt, AdjointOptions, LossTerms, Method, Problem, Term, Workspace,
};
use ia_core::{name_index, HybridError, Wrt};
use serde::{Deserialize, Serialize};
use std::sync::Mutex;

pub mod synthetic;

pub use argmin;
use ia_adjoint::ia_core;
#[cfg(test)]
use ia_adjoint::ia_events;

/// One scalar datum: the value of state entry `state` at `time`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Datum {
    /// When, in `(t0, t_end]`.
    pub time: f64,
    /// The state entry's name.
    pub state: String,
    /// The measured value.
    pub value: f64,
}

impl Datum {
    /// The datum `state(time) = value`.
    pub fn new(time: f64, state: impl Into<String>, value: f64) -> Self {
        Self {
            time,
            state: state.into(),
            value,
        }
    }
}

/// A free variable: its column among the run's inputs and its bounds.
#[derive(Clone, Debug, PartialEq)]
struct Free {
    name: String,
    /// Index into `initial_state ++ params`.
    column: usize,
    lower: Option<f64>,
    upper: Option<f64>,
}

impl Free {
    /// `theta(u)` and `dtheta/du` (see the crate docs, Bounds).
    fn value(&self, u: f64) -> (f64, f64) {
        match (self.lower, self.upper) {
            (None, None) => (u, 1.0),
            (Some(a), Some(b)) => {
                let s = 1.0 / (1.0 + (-u).exp());
                (a + (b - a) * s, (b - a) * s * (1.0 - s))
            }
            (Some(a), None) => (a + u.exp(), u.exp()),
            (None, Some(b)) => (b - (-u).exp(), (-u).exp()),
        }
    }

    /// `u(theta)`, the inverse of [`Free::value`], for `theta` strictly
    /// inside the bounds.
    fn coordinate(&self, theta: f64) -> f64 {
        match (self.lower, self.upper) {
            (None, None) => theta,
            (Some(a), Some(b)) => {
                let s = (theta - a) / (b - a);
                (s / (1.0 - s)).ln()
            }
            (Some(a), None) => (theta - a).ln(),
            (None, Some(b)) => -(b - theta).ln(),
        }
    }
}

/// A least-squares fit of free variables of a run to data: an argmin
/// problem in the coordinates `u` of the crate docs.
#[derive(Debug)]
pub struct FitProblem<'a> {
    /// The run at the starting values, observing at the data times.
    base: Problem<'a>,
    free: Vec<Free>,
    data: Vec<Datum>,
    /// For each datum, its observation index and state index.
    reads: Vec<(usize, usize)>,
    loss: LossTerms,
    /// The last point evaluated: `u`, the loss and `dL/du` (argmin asks for
    /// the cost and the gradient at the same point separately; one adjoint
    /// pass gives both).
    last: Mutex<Option<Evaluation>>,
    /// The buffers of the gradient runs, kept from one to the next.
    workspace: Mutex<Workspace>,
}

/// A point `u`, the loss there and `dL/du`.
type Evaluation = (Vec<f64>, f64, Vec<f64>);

/// Options of [`FitProblem::fit`] (L-BFGS with a More-Thuente line search).
#[derive(Clone, Debug, PartialEq)]
pub struct FitOptions {
    /// The most iterations.
    pub max_iters: u64,
    /// Stop when the gradient norm (in the coordinates `u`) falls below
    /// this.
    pub tolerance_grad: f64,
    /// Stop when the relative change of the loss falls below this.
    pub tolerance_cost: f64,
    /// L-BFGS memory (the number of past steps kept).
    pub memory: usize,
}

impl Default for FitOptions {
    fn default() -> Self {
        Self {
            max_iters: 200,
            tolerance_grad: 1e-12,
            tolerance_cost: 1e-16,
            memory: 7,
        }
    }
}

/// The outcome of a fit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FitResult {
    /// The free variables' names, in order.
    pub names: Vec<String>,
    /// Their fitted values.
    pub values: Vec<f64>,
    /// Their Gauss-Newton standard errors ([`FitProblem::standard_errors`]).
    pub standard_errors: Vec<f64>,
    /// The loss at the fitted values (the sum of squared residuals).
    pub loss: f64,
    /// `|dL/dtheta|` at the fitted values (Euclidean norm, in the
    /// variables themselves, not the coordinates `u`).
    pub gradient_norm: f64,
    /// The solver's iterations.
    pub iterations: u64,
    /// Why the solver stopped, in argmin's words.
    pub termination: String,
}

/// What can go wrong in a fit.
#[derive(Debug, thiserror::Error)]
pub enum FitError {
    /// Bad input or a failed run.
    #[error(transparent)]
    Run(#[from] HybridError),
    /// The solver failed (its message).
    #[error("the optimiser failed: {0}")]
    Solver(String),
    /// The residuals' Jacobian `J^T J` is singular at the fit: the named
    /// variables cannot be told apart by these data.
    #[error("the data do not determine the free variables (J^T J is singular at the fit); remove one of {0} or add data that depend on it")]
    NotIdentifiable(String),
}

impl FitError {
    /// A short, stable name of the kind: the run's
    /// [`HybridError::kind`], `optimizer` or `not_identifiable`.
    pub fn kind(&self) -> &'static str {
        match self {
            FitError::Run(e) => e.kind(),
            FitError::Solver(_) => "optimizer",
            FitError::NotIdentifiable(_) => "not_identifiable",
        }
    }
}

impl<'a> FitProblem<'a> {
    /// Fits the inputs named `free` (`param.<name>`, `initial.<state>`) of
    /// `problem`, starting from its values, to `data`. The problem's own
    /// observation times are replaced by the data times.
    ///
    /// Errors: an unknown or repeated free name (listing the valid ones), no
    /// free variable, no data, a datum with an unknown state or a time
    /// outside `(t0, t_end]` or a value that is not finite, and no more
    /// data than free variables (the standard errors need `m > p`).
    pub fn new(problem: Problem<'a>, free: &[&str], data: Vec<Datum>) -> Result<Self, HybridError> {
        let system = problem.system;
        let wrt = system.wrt_names();
        if free.is_empty() {
            return Err(HybridError::invalid(
                "free variables",
                "none",
                format!("name at least one of {}", wrt.join(", ")),
            ));
        }
        let mut chosen: Vec<Free> = Vec::with_capacity(free.len());
        for name in free {
            let column = name_index("free variable", wrt, name)?;
            if chosen.iter().any(|f| f.column == column) {
                return Err(HybridError::invalid(
                    "free variable",
                    name,
                    "is named twice; name each once",
                ));
            }
            chosen.push(Free {
                name: name.to_string(),
                column,
                lower: None,
                upper: None,
            });
        }
        if data.len() <= chosen.len() {
            return Err(HybridError::invalid(
                "data",
                format!("{} values", data.len()),
                format!(
                    "a fit of {} free variables needs more data values than that (the standard errors divide by m - p)",
                    chosen.len()
                ),
            ));
        }
        let names = system.state_names();
        let (t0, t_end) = (problem.t0, problem.t_end);
        for (i, d) in data.iter().enumerate() {
            if !(d.time > t0 && d.time <= t_end) {
                return Err(HybridError::invalid_num(
                    format!("data[{i}].time"),
                    d.time,
                    format!("must lie in ({t0}, {t_end}], after the start and no later than t_end"),
                ));
            }
            if !d.value.is_finite() {
                return Err(HybridError::invalid_num(
                    format!("data[{i}].{}", d.state),
                    d.value,
                    "must be a finite number",
                ));
            }
            name_index(&format!("state in data[{i}]"), names, &d.state)?;
        }
        // Observations at the distinct data times, in order.
        let mut times: Vec<f64> = data.iter().map(|d| d.time).collect();
        times.sort_by(f64::total_cmp);
        times.dedup();
        let reads: Vec<(usize, usize)> = data
            .iter()
            .map(|d| {
                let k = times.partition_point(|&t| t < d.time);
                let s = system.state_index(&d.state).unwrap_or(0);
                (k, s)
            })
            .collect();
        let terms = data
            .iter()
            .zip(&reads)
            .map(|(d, (k, _))| {
                Term::new(format!("observation.{k}.{}", d.state), 1.0).with_target(d.value)
            })
            .collect();
        let loss = LossTerms::new(terms, system)?;
        let base = problem.with_observations(times);
        base.validate()?;
        Ok(Self {
            base,
            free: chosen,
            data,
            reads,
            loss,
            last: Mutex::new(None),
            workspace: Mutex::new(Workspace::new()),
        })
    }

    /// Keeps the free variable `name` within `[lower, upper]` (`None`: no
    /// bound on that side) by the transform of the crate docs. The starting
    /// value must lie strictly inside.
    pub fn with_bounds(
        mut self,
        name: &str,
        lower: Option<f64>,
        upper: Option<f64>,
    ) -> Result<Self, HybridError> {
        let names: Vec<String> = self.free.iter().map(|f| f.name.clone()).collect();
        let start = self.start_values();
        let i = name_index(
            "bounded variable (bounds apply to free variables)",
            &names,
            name,
        )?;
        for b in [lower, upper].into_iter().flatten() {
            if !b.is_finite() {
                return Err(HybridError::invalid_num(
                    format!("bounds of {name}"),
                    b,
                    "a bound must be a finite number",
                ));
            }
        }
        if let (Some(a), Some(b)) = (lower, upper) {
            if a >= b {
                return Err(HybridError::invalid(
                    format!("bounds of {name}"),
                    format!("[{a}, {b}]"),
                    "the lower bound must be below the upper bound",
                ));
            }
        }
        let x = start[i];
        if lower.is_some_and(|a| x <= a) || upper.is_some_and(|b| x >= b) {
            let show = |v: Option<f64>, inf: &str| v.map_or(inf.to_string(), |v| v.to_string());
            return Err(HybridError::invalid(
                format!("bounds of {name}"),
                format!("[{}, {}]", show(lower, "-inf"), show(upper, "inf")),
                format!("must contain the starting value {x} strictly inside (the bounds are open: see the transform in the fit docs)"),
            ));
        }
        self.free[i].lower = lower;
        self.free[i].upper = upper;
        Ok(self)
    }

    /// The free variables' names.
    pub fn names(&self) -> Vec<String> {
        self.free.iter().map(|f| f.name.clone()).collect()
    }

    /// The data.
    pub fn data(&self) -> &[Datum] {
        &self.data
    }

    /// The least-squares loss, as terms.
    pub fn loss(&self) -> &LossTerms {
        &self.loss
    }

    /// The free variables' values in the starting problem.
    pub fn start_values(&self) -> Vec<f64> {
        let inputs: Vec<f64> = self.inputs(&self.base);
        self.free.iter().map(|f| inputs[f.column]).collect()
    }

    /// The starting point in the solver's coordinates `u`.
    pub fn start(&self) -> Vec<f64> {
        self.free
            .iter()
            .zip(self.start_values())
            .map(|(f, x)| f.coordinate(x))
            .collect()
    }

    /// The free variables' values `theta(u)`.
    pub fn values(&self, u: &[f64]) -> Vec<f64> {
        self.free
            .iter()
            .zip(u)
            .map(|(f, &u)| f.value(u).0)
            .collect()
    }

    fn inputs(&self, problem: &Problem<'_>) -> Vec<f64> {
        problem
            .initial_state
            .iter()
            .chain(&problem.params)
            .copied()
            .collect()
    }

    /// The run with the free variables set to `values` (not coordinates).
    pub fn problem_at(&self, values: &[f64]) -> Problem<'a> {
        let mut problem = self.base.clone();
        let n = problem.initial_state.len();
        for (f, &v) in self.free.iter().zip(values) {
            match Wrt::of_column(f.column, n) {
                Wrt::Initial(i) => problem.initial_state[i] = v,
                Wrt::Param(k) => problem.params[k] = v,
            }
        }
        problem
    }

    /// The loss and `dL/dtheta` at `values` (one adjoint pass).
    pub fn loss_gradient(&self, values: &[f64]) -> Result<(f64, Vec<f64>), HybridError> {
        let problem = self.problem_at(values);
        let options = AdjointOptions::default();
        // A poisoned lock only means another evaluation panicked: its
        // buffers are renewed by the next run all the same.
        let mut workspace = self.workspace.lock().unwrap_or_else(|e| e.into_inner());
        let g = gradient_in(&problem, &self.loss, &options, &mut workspace)?;
        let all = g.concatenated();
        let result = (g.value, self.free.iter().map(|f| all[f.column]).collect());
        workspace.recycle_gradient(g);
        Ok(result)
    }

    /// The loss and `dL/du` at `u`, from the cache when `u` is the last point.
    fn evaluate(&self, u: &[f64]) -> Result<(f64, Vec<f64>), HybridError> {
        if let Ok(last) = self.last.lock() {
            if let Some((at, value, grad)) = last.as_ref() {
                if at.as_slice() == u {
                    return Ok((*value, grad.clone()));
                }
            }
        }
        let values = self.values(u);
        let (value, grad) = self.loss_gradient(&values)?;
        let grad_u: Vec<f64> = self
            .free
            .iter()
            .zip(u)
            .zip(&grad)
            .map(|((f, &u), g)| g * f.value(u).1)
            .collect();
        if let Ok(mut last) = self.last.lock() {
            *last = Some((u.to_vec(), value, grad_u.clone()));
        }
        Ok((value, grad_u))
    }

    /// The residuals `r_i = x_{s_i}(t_i) - y_i` and their Jacobian with
    /// respect to the free variables (forward sensitivities), at `values`.
    pub fn residuals(&self, values: &[f64]) -> Result<(Vec<f64>, DMatrix<f64>), HybridError> {
        let names: Vec<&str> = self.free.iter().map(|f| f.name.as_str()).collect();
        let sens = jacobian_wrt(&self.problem_at(values), Method::Forward, &names)?;
        let obs = &sens.trajectory.observations;
        let mut r = Vec::with_capacity(self.data.len());
        let mut jac = DMatrix::zeros(self.data.len(), names.len());
        for (i, (d, &(k, s))) in self.data.iter().zip(&self.reads).enumerate() {
            r.push(obs[k].state[s] - d.value);
            jac.row_mut(i)
                .copy_from(&sens.observation_jacobians[k].row(s));
        }
        Ok((r, jac))
    }

    /// The Gauss-Newton standard errors at `values`: the square roots of
    /// the diagonal of `sigma^2 (J^T J)^-1`, `sigma^2 = SSR / (m - p)`.
    pub fn standard_errors(&self, values: &[f64]) -> Result<Vec<f64>, FitError> {
        let (r, jac) = self.residuals(values)?;
        let (m, p) = (r.len(), values.len());
        let ssr: f64 = r.iter().map(|r| r * r).sum();
        let sigma2 = ssr / (m - p) as f64;
        let normal = jac.transpose() * &jac;
        let inverse = normal
            .try_inverse()
            .filter(|inv| inv.iter().all(|v| v.is_finite()))
            .ok_or_else(|| FitError::NotIdentifiable(self.names().join(", ")))?;
        Ok((0..p)
            .map(|j| (sigma2 * inverse[(j, j)]).max(0.0).sqrt())
            .collect())
    }

    /// Fits by L-BFGS ([`FitOptions`]), from the problem's values.
    pub fn fit(&self, options: &FitOptions) -> Result<FitResult, FitError> {
        let solver = LBFGS::new(MoreThuenteLineSearch::new(), options.memory)
            .with_tolerance_grad(options.tolerance_grad)
            .and_then(|s| s.with_tolerance_cost(options.tolerance_cost))
            .map_err(|e| FitError::Solver(e.to_string()))?;
        self.fit_with(solver, options.max_iters)
    }

    /// Fits with any argmin `solver` that works on a cost and a gradient
    /// (steepest descent, conjugate gradient, BFGS, L-BFGS...), at most
    /// `max_iters` iterations, from the problem's values.
    pub fn fit_with<'p, S>(&'p self, solver: S, max_iters: u64) -> Result<FitResult, FitError>
    where
        S: argmin::core::Solver<
            &'p Self,
            argmin::core::IterState<Vec<f64>, Vec<f64>, (), (), (), f64>,
        >,
    {
        let start = self.start();
        let outcome = Executor::new(self, solver)
            .configure(|state| state.param(start).max_iters(max_iters))
            .run()
            .map_err(|e| match e.downcast::<HybridError>() {
                Ok(run) => FitError::Run(run),
                Err(other) => FitError::Solver(other.to_string()),
            })?;
        let state = outcome.state();
        let u = state
            .get_best_param()
            .cloned()
            .ok_or_else(|| FitError::Solver("the solver returned no parameters".into()))?;
        let values = self.values(&u);
        let (loss, grad) = self.loss_gradient(&values)?;
        let termination = state.get_termination_reason().map_or_else(
            || "not terminated".to_string(),
            |r: &TerminationReason| r.text().to_string(),
        );
        Ok(FitResult {
            names: self.names(),
            standard_errors: self.standard_errors(&values)?,
            gradient_norm: grad.iter().map(|g| g * g).sum::<f64>().sqrt(),
            values,
            loss,
            iterations: state.get_iter(),
            termination,
        })
    }
}

impl CostFunction for FitProblem<'_> {
    type Param = Vec<f64>;
    type Output = f64;

    fn cost(&self, u: &Vec<f64>) -> Result<f64, argmin::core::Error> {
        Ok(self.evaluate(u)?.0)
    }
}

impl Gradient for FitProblem<'_> {
    type Param = Vec<f64>;
    type Gradient = Vec<f64>;

    fn gradient(&self, u: &Vec<f64>) -> Result<Vec<f64>, argmin::core::Error> {
        Ok(self.evaluate(u)?.1)
    }
}

/// The same problem by reference (what [`FitProblem::fit_with`] hands to
/// argmin's executor, which owns its problem).
impl CostFunction for &FitProblem<'_> {
    type Param = Vec<f64>;
    type Output = f64;

    fn cost(&self, u: &Vec<f64>) -> Result<f64, argmin::core::Error> {
        (**self).cost(u)
    }
}

impl Gradient for &FitProblem<'_> {
    type Param = Vec<f64>;
    type Gradient = Vec<f64>;

    fn gradient(&self, u: &Vec<f64>) -> Result<Vec<f64>, argmin::core::Error> {
        Gradient::gradient(*self, u)
    }
}

#[cfg(test)]
mod tests {
    //! A ball dropped from `h0` (ball1d: states `h, v`; parameters `g, e`
    //! and a third one), observed at fixed times. References: the values
    //! the data were made with (noise-free: recovered to 1e-6; noisy: within
    //! three standard errors), central finite differences of the loss for
    //! the gradient in the solver's coordinates.
    use super::*;
    use crate::synthetic::GaussianNoise;
    use ia_adjoint::prelude::*;

    const TRUTH: [f64; 2] = [9.81, 0.8];
    const TIMES: [f64; 12] = [
        0.05, 0.15, 0.25, 0.35, 0.45, 0.55, 0.65, 0.75, 0.85, 0.95, 1.05, 1.15,
    ];

    fn problem(system: &HybridSystem, g: f64, e: f64) -> Problem<'_> {
        Problem::new(system, vec![1.0, 0.0], vec![g, e, 0.0], 1.2)
            .with_solver(SolverChoice::dopri5(1e-12))
    }

    fn data(system: &HybridSystem, noise: Option<&mut GaussianNoise>) -> Vec<Datum> {
        let truth = problem(system, TRUTH[0], TRUTH[1]).with_observations(TIMES.to_vec());
        let run = ia_events::simulate(&truth).unwrap();
        let mut noise = noise;
        run.observations
            .iter()
            .map(|o| {
                let dy = noise.as_deref_mut().map_or(0.0, GaussianNoise::sample);
                Datum::new(o.time, "h", o.state[0] + dy)
            })
            .collect()
    }

    fn ball() -> HybridSystem {
        ia_models::by_name("ball1d").unwrap().system()
    }

    fn fit_problem<'a>(system: &'a HybridSystem, data: Vec<Datum>) -> FitProblem<'a> {
        FitProblem::new(problem(system, 9.0, 0.6), &["param.g", "param.e"], data)
            .unwrap()
            .with_bounds("param.e", Some(0.0), Some(1.0))
            .unwrap()
            .with_bounds("param.g", Some(0.0), None)
            .unwrap()
    }

    #[test]
    fn noise_free_data_give_back_the_true_values() {
        let system = ball();
        let fit = fit_problem(&system, data(&system, None));
        let result = fit.fit(&FitOptions::default()).unwrap();
        for (got, want) in result.values.iter().zip(TRUTH) {
            assert!((got - want).abs() < 1e-6, "{result:?}");
        }
        assert!(result.loss < 1e-12, "{result:?}");
        assert!(result.iterations > 0 && !result.termination.is_empty());
    }

    #[test]
    fn noisy_data_give_the_true_values_within_three_standard_errors() {
        let system = ball();
        let mut noise = GaussianNoise::new(2026, 0.01);
        let fit = fit_problem(&system, data(&system, Some(&mut noise)));
        let result = fit.fit(&FitOptions::default()).unwrap();
        for ((got, se), want) in result.values.iter().zip(&result.standard_errors).zip(TRUTH) {
            assert!(*se > 0.0 && se.is_finite(), "{result:?}");
            assert!(
                (got - want).abs() < 3.0 * se,
                "{got} vs {want} (se {se}): {result:?}"
            );
        }
        // At a minimum the gradient vanishes (relative to the loss's scale).
        assert!(result.gradient_norm < 1e-6, "{result:?}");
    }

    #[test]
    fn the_gradient_in_solver_coordinates_matches_finite_differences() {
        let system = ball();
        let fit = fit_problem(&system, data(&system, None));
        let u = vec![2.3, 0.4];
        let grad = argmin::core::Gradient::gradient(&fit, &u).unwrap();
        let h = 1e-6;
        for j in 0..2 {
            let at = |d: f64| {
                let mut v = u.clone();
                v[j] += d;
                fit.cost(&v).unwrap()
            };
            let fd = (at(h) - at(-h)) / (2.0 * h);
            assert!(
                (grad[j] - fd).abs() < 1e-6 * fd.abs().max(1.0),
                "{j}: {} vs {fd}",
                grad[j]
            );
        }
    }

    #[test]
    fn the_residual_jacobian_matches_finite_differences() {
        let system = ball();
        let fit = fit_problem(&system, data(&system, None));
        let values = [9.5, 0.7];
        let (_, jac) = fit.residuals(&values).unwrap();
        let h = 1e-6;
        for j in 0..2 {
            let at = |d: f64| {
                let mut v = values.to_vec();
                v[j] += d;
                fit.residuals(&v).unwrap().0
            };
            let (up, down) = (at(h), at(-h));
            for i in 0..TIMES.len() {
                let fd = (up[i] - down[i]) / (2.0 * h);
                assert!(
                    (jac[(i, j)] - fd).abs() < 1e-6,
                    "({i}, {j}): {} vs {fd}",
                    jac[(i, j)]
                );
            }
        }
    }

    /// Before the first impact `h(t) = h0 - g t^2 / 2` is linear in `g`:
    /// the least-squares `g` and its standard error have closed forms,
    /// `g = -sum a_i (y_i - h0) / sum a_i^2` with `a_i = t_i^2 / 2`, and
    /// `se = sqrt(SSR / (m - 1) / sum a_i^2)`.
    #[test]
    fn a_linear_fit_matches_the_closed_form_and_its_standard_error() {
        let system = ball();
        let mut noise = GaussianNoise::new(5, 0.01);
        let times = [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4];
        let data: Vec<Datum> = times
            .iter()
            .map(|&t| Datum::new(t, "h", 1.0 - TRUTH[0] * t * t / 2.0 + noise.sample()))
            .collect();
        let a: Vec<f64> = times.iter().map(|t| t * t / 2.0).collect();
        let saa: f64 = a.iter().map(|a| a * a).sum();
        let g = -a
            .iter()
            .zip(&data)
            .map(|(a, d)| a * (d.value - 1.0))
            .sum::<f64>()
            / saa;
        let ssr: f64 = a
            .iter()
            .zip(&data)
            .map(|(a, d)| (1.0 - g * a - d.value).powi(2))
            .sum();
        let se = (ssr / (times.len() - 1) as f64 / saa).sqrt();
        let fit = FitProblem::new(problem(&system, 9.0, 0.8), &["param.g"], data).unwrap();
        let result = fit.fit(&FitOptions::default()).unwrap();
        assert!((result.values[0] - g).abs() < 1e-8, "{result:?} vs {g}");
        let rel = (result.standard_errors[0] - se).abs() / se;
        assert!(rel < 1e-6, "{result:?} vs {se}");
    }

    proptest::proptest! {
        /// The bound transforms: `theta(u)` lies strictly inside the
        /// bounds, `u(theta(u)) = u`, and `dtheta/du` matches a central
        /// difference (the reference).
        #[test]
        fn bound_transforms_invert_and_differentiate(
            u in -8.0f64..8.0,
            a in -5.0f64..5.0,
            width in 0.1f64..10.0,
            sides in 0usize..4,
        ) {
            let (lower, upper) = match sides {
                0 => (None, None),
                1 => (Some(a), Some(a + width)),
                2 => (Some(a), None),
                _ => (None, Some(a)),
            };
            let free = Free { name: "x".into(), column: 0, lower, upper };
            let (theta, slope) = free.value(u);
            proptest::prop_assert!(lower.is_none_or(|a| theta > a) && upper.is_none_or(|b| theta < b));
            proptest::prop_assert!((free.coordinate(theta) - u).abs() < 1e-8 * u.abs().max(1.0));
            let h = 1e-6;
            let fd = (free.value(u + h).0 - free.value(u - h).0) / (2.0 * h);
            proptest::prop_assert!((slope - fd).abs() < 1e-6 * fd.abs().max(1.0), "{} vs {}", slope, fd);
        }
    }

    #[test]
    fn another_argmin_solver_can_run_it() {
        use argmin::solver::gradientdescent::SteepestDescent;
        let system = ball();
        let fit = fit_problem(&system, data(&system, None));
        let start = fit.cost(&fit.start()).unwrap();
        let result = fit
            .fit_with(SteepestDescent::new(MoreThuenteLineSearch::new()), 5)
            .unwrap();
        assert!(result.loss < start, "{} vs {start}", result.loss);
    }

    #[test]
    fn bad_fit_input_is_a_clear_error() {
        let system = ball();
        let p = || problem(&system, 9.0, 0.6);
        let d = || data(&system, None);
        let err = FitProblem::new(p(), &["param.k"], d()).unwrap_err();
        assert_eq!(err.kind(), "unknown_name");
        assert!(err.to_string().contains("param.g, param.e"), "{err}");
        let err = FitProblem::new(p(), &["param.g", "param.g"], d()).unwrap_err();
        assert!(err.to_string().contains("named twice"), "{err}");
        let err = FitProblem::new(p(), &[], d()).unwrap_err();
        assert!(err.to_string().contains("at least one"), "{err}");
        let err = FitProblem::new(p(), &["param.g"], d()[..1].to_vec()).unwrap_err();
        assert!(err.to_string().contains("more data values"), "{err}");
        let mut late = d();
        late[3].time = 5.0;
        let err = FitProblem::new(p(), &["param.g"], late).unwrap_err();
        assert!(err.to_string().contains("data[3].time"), "{err}");
        let mut unknown = d();
        unknown[0].state = "y".into();
        let err = FitProblem::new(p(), &["param.g"], unknown).unwrap_err();
        assert!(err.to_string().contains("valid"), "{err}");
        let fit = FitProblem::new(p(), &["param.e"], d()).unwrap();
        let err = fit
            .with_bounds("param.e", Some(0.7), Some(1.0))
            .unwrap_err();
        assert!(err.to_string().contains("starting value 0.6"), "{err}");
        let fit = FitProblem::new(p(), &["param.e"], d()).unwrap();
        let err = fit.with_bounds("param.g", Some(0.0), None).unwrap_err();
        assert!(err.to_string().contains("param.e"), "{err}");
    }
}
