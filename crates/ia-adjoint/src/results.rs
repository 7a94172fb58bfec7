//! The results of the entry points: [`Sensitivities`] (Jacobians and
//! event-time gradients, read by name) and [`Gradient`] (of a scalar loss),
//! and the [`Method`] that computed them.

use crate::loss::{check_seeds, Loss, LossSeeds};
use crate::saltation::{event_saltations, Saltation};
use ia_core::{name_index, HybridError, Trajectory, Wrt};
use ia_events::Problem;
use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// How sensitivities are computed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Forward sensitivities integrated with the state, the step-size
    /// control covering them (the most accurate forward answer).
    #[default]
    Forward,
    /// Forward sensitivities on exactly the steps of the adjoint's taped
    /// run (the control covers the state and the run's derivative probes,
    /// [`crate::probe`], not the sensitivities): the same discretisation as
    /// [`Method::Adjoint`], so the two agree to rounding.
    ForwardOnStateSteps,
    /// The discrete adjoint, one backward pass per requested output row.
    Adjoint,
}

/// Sensitivities of a run. Columns follow [`Sensitivities::wrt`]: initial
/// state entries, then parameters. Read entries by name with
/// [`Sensitivities::final_derivative`],
/// [`Sensitivities::observation_derivative`] and
/// [`Sensitivities::event_time_derivative`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sensitivities {
    /// The run (from the sensitivity pass).
    pub trajectory: Trajectory,
    /// Column names: `initial.<state>`, then `param.<name>` (shared with
    /// the system when every input is a column).
    pub wrt: Arc<[String]>,
    /// Row names: the state entries (shared with the system).
    pub(crate) state_names: Arc<[String]>,
    /// `d x(T) / d theta`, n x m.
    pub final_jacobian: DMatrix<f64>,
    /// `d x(t_obs) / d theta` per observation, n x m each.
    pub observation_jacobians: Vec<DMatrix<f64>>,
    /// `d t* / d theta`, one row per recorded event (in the order of the
    /// trajectory's events), one column per `wrt` entry.
    pub event_time_gradients: DMatrix<f64>,
    /// The dense saltation matrix of each event, when asked for with
    /// [`Sensitivities::with_saltations`]; empty otherwise (at n states and
    /// n_p parameters each is n (n + n_p) numbers, which a large system
    /// should not pay for by default).
    pub saltations: Vec<Saltation>,
    /// How they were computed.
    pub method: Method,
}

/// No names: what a record written without them reads back as.
fn no_names() -> Arc<[String]> {
    Arc::from([])
}

/// The gradient of a scalar loss.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Gradient {
    /// The loss value.
    pub value: f64,
    /// Names of the entries: `initial.<state>`, then `param.<name>` (the
    /// order of [`Gradient::concatenated`]; from sensitivities with respect
    /// to chosen inputs ([`Sensitivities::loss_gradient`]), their initial
    /// values then their parameters, each in the order chosen).
    #[serde(default = "no_names")]
    pub wrt: Arc<[String]>,
    /// `dL / d x0` (of the `initial.` entries of [`Gradient::wrt`]).
    pub initial_state: Vec<f64>,
    /// `dL / d p` (of the `param.` entries of [`Gradient::wrt`]).
    pub params: Vec<f64>,
    /// The forward run.
    pub trajectory: Trajectory,
    /// Floats the tape of the forward pass held (the reverse pass's memory,
    /// besides the event records).
    pub tape_floats: usize,
}

impl Gradient {
    /// `dL/dx0` then `dL/dp`, in the order of the system's `wrt_names`.
    pub fn concatenated(&self) -> Vec<f64> {
        self.initial_state
            .iter()
            .chain(&self.params)
            .copied()
            .collect()
    }

    /// `dL / d wrt` for the input named `wrt` (`initial.<state>` or
    /// `param.<name>`), or an error listing the valid names.
    ///
    /// ```
    /// # use ia_adjoint::prelude::*;
    /// # struct Decay;
    /// # impl FlowFn for Decay {
    /// #     fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], d: &mut [S]) { d[0] = -p[0] * x[0]; }
    /// # }
    /// let system = HybridSystem::builder(&["x"], &["k"])
    ///     .mode("decay", Autodiff(Decay))
    ///     .build()
    ///     .unwrap();
    /// let problem = Problem::new(&system, vec![1.0], vec![2.0], 1.0)
    ///     .with_solver(SolverChoice::dopri5(1e-12));
    /// let grad = gradient(&problem, &FinalComponent(0)).unwrap();
    /// // x(1) = x0 exp(-k): dx(1)/dk = -x0 exp(-k).
    /// assert!((grad.derivative("param.k").unwrap() + (-2f64).exp()).abs() < 1e-9);
    /// assert!(grad.derivative("k").unwrap_err().to_string().contains("param.k"));
    /// ```
    pub fn derivative(&self, wrt: &str) -> Result<f64, HybridError> {
        let j = name_index("sensitivity input", &self.wrt, wrt)?;
        Ok(self.concatenated()[j])
    }
}

impl Sensitivities {
    /// The gradient of `loss` from these sensitivities: the Jacobians
    /// contracted with the loss's seeds (`dL/dtheta = sum seeds . rows`),
    /// the forward-mode counterpart of [`gradient`](crate::gradient). The loss is checked
    /// against the run first ([`Loss::check`], [`Loss::check_run`]).
    ///
    /// Each entry follows its name in [`Sensitivities::wrt`], whatever the
    /// order of the names: the `initial.` ones go to
    /// [`Gradient::initial_state`], the `param.` ones to [`Gradient::params`],
    /// and [`Gradient::wrt`] lists them in that order.
    ///
    /// ```
    /// use ia_adjoint::prelude::*;
    ///
    /// let model = ia_models::by_name("ball1d").unwrap();
    /// let system = model.system();
    /// let problem = Problem::new(&system, vec![1.0, 0.0], vec![9.81, 0.8, 0.0], 1.0)
    ///     .with_solver(SolverChoice::dopri5(1e-12));
    /// let loss = LossTerms::new(vec![Term::new("event.-1.time", 2.0)], &system).unwrap();
    /// let sens = jacobian(&problem, Method::Forward).unwrap();
    /// let by_forward = sens.loss_gradient(&loss).unwrap();
    /// let by_adjoint = gradient(&problem, &loss).unwrap();
    /// let (f, a) = (by_forward.concatenated(), by_adjoint.concatenated());
    /// assert!(f.iter().zip(&a).all(|(f, a)| (f - a).abs() < 1e-9));
    /// ```
    pub fn loss_gradient(&self, loss: &dyn Loss) -> Result<Gradient, HybridError> {
        let trajectory = &self.trajectory;
        let n = self.final_jacobian.nrows();
        loss.check(n)?;
        loss.check_run(trajectory)?;
        let mut seeds = LossSeeds::zeros(trajectory);
        let value = loss.evaluate(trajectory, &mut seeds);
        check_seeds(&seeds, trajectory)?;
        let m = self.wrt.len();
        let mut total = vec![0.0; m];
        let mut add = |weights: &[f64], jac: &DMatrix<f64>| {
            for (j, t) in total.iter_mut().enumerate() {
                *t += (0..weights.len())
                    .map(|i| weights[i] * jac[(i, j)])
                    .sum::<f64>();
            }
        };
        add(&seeds.final_state, &self.final_jacobian);
        for (w, jac) in seeds.observations.iter().zip(&self.observation_jacobians) {
            add(w, jac);
        }
        for (k, &w) in seeds.event_times.iter().enumerate() {
            for (t, g) in total
                .iter_mut()
                .zip(self.event_time_gradients.row(k).iter())
            {
                *t += w * g;
            }
        }
        // The initial values, then the parameters, each in the order of
        // `wrt` (which need not list them in that order).
        let (initial, params): (Vec<usize>, Vec<usize>) =
            (0..m).partition(|&j| Wrt::is_initial_label(&self.wrt[j]));
        let wrt = if initial.iter().chain(&params).copied().eq(0..m) {
            self.wrt.clone()
        } else {
            initial
                .iter()
                .chain(&params)
                .map(|&j| self.wrt[j].clone())
                .collect()
        };
        let pick = |columns: &[usize]| columns.iter().map(|&j| total[j]).collect();
        Ok(Gradient {
            value,
            wrt,
            initial_state: pick(&initial),
            params: pick(&params),
            tape_floats: 0,
            trajectory: trajectory.clone(),
        })
    }

    /// The state names, in order: the rows of the Jacobians.
    pub fn state_names(&self) -> &[String] {
        &self.state_names
    }

    /// The column of the input named `wrt` (`initial.<state>` or
    /// `param.<name>`), or an error listing the valid names.
    pub fn wrt_index(&self, wrt: &str) -> Result<usize, HybridError> {
        name_index("sensitivity input", &self.wrt, wrt)
    }

    /// The row of the state entry named `state`, or an error listing the
    /// valid names.
    pub fn state_index(&self, state: &str) -> Result<usize, HybridError> {
        name_index("state", &self.state_names, state)
    }

    /// `d state(T) / d wrt`: one entry of [`Sensitivities::final_jacobian`]
    /// by name, for example `final_derivative("v", "param.e")`.
    ///
    /// ```
    /// # use ia_adjoint::prelude::*;
    /// # struct Decay;
    /// # impl FlowFn for Decay {
    /// #     fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], d: &mut [S]) { d[0] = -p[0] * x[0]; }
    /// # }
    /// let system = HybridSystem::builder(&["x"], &["k"])
    ///     .mode("decay", Autodiff(Decay))
    ///     .build()
    ///     .unwrap();
    /// let problem = Problem::new(&system, vec![1.0], vec![2.0], 1.0)
    ///     .with_solver(SolverChoice::dopri5(1e-12));
    /// let sens = jacobian(&problem, Method::Forward).unwrap();
    /// // x(1) = x0 exp(-k): dx(1)/dx0 = exp(-k).
    /// let d = sens.final_derivative("x", "initial.x").unwrap();
    /// assert!((d - (-2f64).exp()).abs() < 1e-9);
    /// let err = sens.final_derivative("y", "initial.x").unwrap_err();
    /// assert_eq!(err.to_string(), "unknown state 'y'; valid state names: x");
    /// ```
    pub fn final_derivative(&self, state: &str, wrt: &str) -> Result<f64, HybridError> {
        Ok(self.final_jacobian[(self.state_index(state)?, self.wrt_index(wrt)?)])
    }

    /// `d state(t_k) / d wrt` at observation `k`: one entry of
    /// [`Sensitivities::observation_jacobians`] by name.
    pub fn observation_derivative(
        &self,
        k: usize,
        state: &str,
        wrt: &str,
    ) -> Result<f64, HybridError> {
        let jac = self.observation_jacobians.get(k).ok_or_else(|| {
            HybridError::invalid(
                "observation index",
                k,
                format!(
                    "the run has {} observations, indexed from 0",
                    self.observation_jacobians.len()
                ),
            )
        })?;
        Ok(jac[(self.state_index(state)?, self.wrt_index(wrt)?)])
    }

    /// `d t_k / d wrt`, the derivative of the time of event `k` (in the
    /// order of the trajectory's events): one entry of
    /// [`Sensitivities::event_time_gradients`] by name.
    pub fn event_time_derivative(&self, k: usize, wrt: &str) -> Result<f64, HybridError> {
        if k >= self.event_time_gradients.nrows() {
            let events: Vec<String> = self
                .trajectory
                .events
                .iter()
                .map(|e| format!("{} at t = {}", e.index, e.time))
                .collect();
            return Err(HybridError::invalid(
                "event index",
                k,
                format!(
                    "the run has {} events, indexed from 0: [{}]",
                    self.event_time_gradients.nrows(),
                    events.join(", ")
                ),
            ));
        }
        Ok(self.event_time_gradients[(k, self.wrt_index(wrt)?)])
    }
}

impl Sensitivities {
    /// These sensitivities with the dense saltation matrix of every event
    /// ([`Sensitivities::saltations`]), `problem` being the run they came
    /// from.
    pub fn with_saltations(mut self, problem: &Problem<'_>) -> Self {
        self.saltations = event_saltations(problem, &self.trajectory);
        self
    }
}
