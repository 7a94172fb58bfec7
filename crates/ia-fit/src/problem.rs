//! The least-squares problem ([`FitProblem`]): a run plus data, its loss,
//! gradient, residuals and standard errors, and the argmin solvers that
//! minimise it.

use crate::bounds::Free;
use crate::error::FitError;
use crate::records::{Datum, FitOptions, FitResult};
use argmin::core::{CostFunction, Executor, Gradient, State, TerminationReason};
use argmin::solver::linesearch::MoreThuenteLineSearch;
use argmin::solver::quasinewton::LBFGS;
use ia_adjoint::ia_core::{name_index, HybridError, Wrt};
use ia_adjoint::nalgebra::DMatrix;
use ia_adjoint::{
    gradient_in, jacobian_wrt, AdjointOptions, LossTerms, Method, Problem, Term, Workspace,
};
use std::sync::Mutex;

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
    use ia_adjoint::ia_events;
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
