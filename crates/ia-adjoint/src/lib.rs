//! # ia-adjoint: sensitivities through events
//!
//! Exact derivatives of a hybrid trajectory with respect to the initial state
//! and every parameter (parameters of the flow, the guards and the resets):
//!
//! * [`jacobian`]: Jacobians of the final state and of the states at
//!   observation times, and the gradient of every event time, by forward
//!   sensitivities ([`Method::Forward`]) or by one adjoint pass per output
//!   ([`Method::Adjoint`]);
//! * [`gradient`]: the gradient of one scalar loss that reads the final
//!   state, observed states and event times, by the reverse-mode adjoint;
//! * [`saltation`]: the saltation matrices that carry sensitivities across
//!   events.
//!
//! Each has a form that runs in a kept [`Workspace`] ([`jacobian_in`],
//! [`jacobian_wrt_in`], [`gradient_in`]): called again and again (a fit, a
//! Newton iteration, an ensemble), it reuses the stepper, the tape and every
//! buffer, and builds its result in the vectors of results given back, with
//! the same numbers as the one-shot call.
//!
//! The mathematics is in `docs/method.md` and the module docs of
//! [`saltation`], [`mod@forward`] and [`adjoint`].
//!
//! A user needs this crate only: [`prelude`] brings the builder, the traits
//! of `ia-core`, [`Problem`] and [`SolverChoice`] of `ia-events`, and the
//! functions and results of this crate; [`nalgebra`] is re-exported for the
//! matrices of the results and of the `*Partials`. Results are read by name
//! with [`Sensitivities::final_derivative`],
//! [`Sensitivities::event_time_derivative`] and [`Gradient::derivative`].
//!
//! ```
//! use ia_adjoint::prelude::*;
//!
//! struct Fall;
//! impl FlowFn for Fall {
//!     fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], d: &mut [S]) {
//!         d[0] = x[1];
//!         d[1] = -p[0];
//!     }
//! }
//! struct Floor;
//! impl GuardFn for Floor {
//!     fn direction(&self) -> Direction { Direction::Falling }
//!     fn value<S: Scalar>(&self, _t: S, x: &[S], _p: &[S]) -> S { x[0] }
//! }
//! struct Bounce;
//! impl ResetFn for Bounce {
//!     fn apply<S: Scalar>(&self, _t: S, x: &[S], p: &[S], a: &mut [S]) {
//!         a[0] = x[0];
//!         a[1] = -p[1] * x[1];
//!     }
//! }
//! let ball = HybridSystem::builder(&["h", "v"], &["g", "e"])
//!     .mode("flight", Autodiff(Fall))
//!     .transition("bounce", FromMode("flight"), ToMode("flight"), Autodiff(Floor), Autodiff(Bounce))
//!     .build()
//!     .unwrap();
//! let problem = Problem::new(&ball, vec![1.0, 0.0], vec![9.81, 0.8], 1.0)
//!     .with_solver(SolverChoice::dopri5(1e-12));
//!
//! // The first impact time t1 = sqrt(2 h0 / g): dt1/dh0 = 1 / (g t1).
//! let sens = jacobian(&problem, Method::Forward).unwrap();
//! let t1 = (2.0f64 / 9.81).sqrt();
//! let dt1_dh0 = sens.event_time_derivative(0, "initial.h").unwrap();
//! assert!((dt1_dh0 - 1.0 / (9.81 * t1)).abs() < 1e-9);
//!
//! // The same derivative by the adjoint, of the loss L = t1.
//! let first_impact = |tr: &Trajectory, seeds: &mut LossSeeds| {
//!     seeds.event_times[0] = 1.0;
//!     tr.events[0].time
//! };
//! let grad = gradient(&problem, &first_impact).unwrap();
//! assert!((grad.derivative("initial.h").unwrap() - 1.0 / (9.81 * t1)).abs() < 1e-9);
//! ```

#![deny(missing_docs)]

pub mod adjoint;
pub mod batch;
pub mod forward;
pub mod loss;
pub mod saltation;
pub mod workspace;

pub use adjoint::{AdjointOptions, LossSeeds, AUTOMATIC_CHECKPOINT_FLOATS};
pub use batch::{gradient_batch, gradient_batch_each, jacobian_batch, simulate_batch, Batch};
pub use loss::{LossTerms, Term};
pub use saltation::{Saltation, SaltationWorkspace};
pub use workspace::Workspace;

/// The crate of the system vocabulary, re-exported: a user depending on
/// `ia-adjoint` alone reaches every item of `ia-core` as `ia_adjoint::ia_core`.
pub use ia_core;
/// The crate of the integrator, re-exported (see [`ia_adjoint::ia_core`](ia_core)).
pub use ia_events;
pub use ia_events::{EventOptions, Problem, SolverChoice};
/// The linear algebra of [`Sensitivities`] and of the `*Partials` of
/// `ia-core`, at the version this crate uses.
pub use nalgebra;

/// Everything a custom model and its sensitivities need, in one import.
///
/// ```
/// use ia_adjoint::prelude::*;
///
/// struct Decay;
/// impl FlowFn for Decay {
///     fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], d: &mut [S]) {
///         d[0] = -p[0] * x[0];
///     }
/// }
/// struct Threshold;
/// impl GuardFn for Threshold {
///     fn direction(&self) -> Direction { Direction::Falling }
///     fn value<S: Scalar>(&self, _t: S, x: &[S], _p: &[S]) -> S { x[0] - 0.5 }
/// }
/// let system = HybridSystem::builder(&["x"], &["k"])
///     .mode("decay", Autodiff(Decay))
///     .terminal_transition("half", FromMode("decay"), ToMode("decay"), Autodiff(Threshold), Identity)
///     .build()
///     .unwrap();
/// let problem = Problem::new(&system, vec![1.0], vec![2.0], 10.0)
///     .with_solver(SolverChoice::dopri5(1e-12));
/// let sens = jacobian(&problem, Method::Forward).unwrap();
/// // x = exp(-k t) reaches 1/2 at t* = ln 2 / k: dt*/dk = -ln 2 / k^2.
/// let dt_dk = sens.event_time_derivative(0, "param.k").unwrap();
/// assert!((dt_dk + 2f64.ln() / 4.0).abs() < 1e-9);
/// ```
pub mod prelude {
    pub use crate::{
        gradient, jacobian, FinalComponent, Gradient, Loss, LossSeeds, LossTerms, Method,
        Sensitivities, Term,
    };
    pub use ia_core::{
        Autodiff, Direction, Flow, FlowFn, FlowPartials, FromMode, Guard, GuardFn, GuardPartials,
        HybridError, HybridSystem, HybridSystemBuilder, Identity, Reset, ResetFn, ResetPartials,
        Scalar, ToMode, Trajectory,
    };
    pub use ia_events::{EventOptions, Problem, SolverChoice};
}

use adjoint::Backward;
use forward::SensitivityAt;
use ia_core::{name_index, HybridError, Trajectory, Wrt};
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
    /// Forward sensitivities on exactly the steps the state alone takes (the
    /// control covers the state only): the same discretisation as
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
    state_names: Arc<[String]>,
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
    /// the forward-mode counterpart of [`gradient`]. The loss is checked
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

/// A scalar loss of a run: returns its value and writes its partial
/// derivatives with respect to what it reads into `seeds` (which arrive
/// zeroed and shaped for the trajectory).
pub trait Loss {
    /// Checks the loss against the system's state dimension before the run
    /// (for example an index it reads); the default accepts every loss.
    /// Seeds of the wrong shape are refused after [`Loss::evaluate`] in any
    /// case.
    fn check(&self, _state_dim: usize) -> Result<(), HybridError> {
        Ok(())
    }

    /// Checks the loss against the run, after it and before
    /// [`Loss::evaluate`] (for example that an event it reads happened); the
    /// default accepts every run.
    fn check_run(&self, _trajectory: &Trajectory) -> Result<(), HybridError> {
        Ok(())
    }

    /// Value of the loss; partials into `seeds`.
    fn evaluate(&self, trajectory: &Trajectory, seeds: &mut LossSeeds) -> f64;
}

impl<F: Fn(&Trajectory, &mut LossSeeds) -> f64> Loss for F {
    fn evaluate(&self, trajectory: &Trajectory, seeds: &mut LossSeeds) -> f64 {
        self(trajectory, seeds)
    }
}

/// The loss `x_i(T)`: one component of the final state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FinalComponent(pub usize);

impl Loss for FinalComponent {
    fn check(&self, state_dim: usize) -> Result<(), HybridError> {
        if self.0 < state_dim {
            Ok(())
        } else {
            Err(HybridError::invalid(
                "FinalComponent index",
                self.0,
                format!("must name a state entry: below the state dimension {state_dim}"),
            ))
        }
    }

    /// `x_i(T)`; NaN (and no seed) for an index out of range, which
    /// [`Loss::check`] refuses before any run.
    fn evaluate(&self, trajectory: &Trajectory, seeds: &mut LossSeeds) -> f64 {
        if let Some(seed) = seeds.final_state.get_mut(self.0) {
            *seed = 1.0;
        }
        trajectory
            .final_state
            .get(self.0)
            .copied()
            .unwrap_or(f64::NAN)
    }
}

/// The dense saltation matrix of every event of `trajectory`, a run of
/// `problem`.
pub fn event_saltations(problem: &Problem<'_>, trajectory: &Trajectory) -> Vec<Saltation> {
    let sys = problem.system;
    let mut ws = SaltationWorkspace::new(sys.state_dim(), sys.param_dim());
    (0..trajectory.events.len())
        .map(|k| {
            let at = ia_events::EventAt::recorded(trajectory, k);
            ws.compute_for(sys, &problem.params, at).clone()
        })
        .collect()
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

/// What the backward pass transposes for `problem`'s solver: its
/// Runge-Kutta steps, or the exact solver's closed-form stretches.
fn adjoint_stepping(problem: &Problem<'_>) -> Result<adjoint::Stepping, HybridError> {
    if problem.solver == ia_events::SolverChoice::Exact {
        return Ok(adjoint::Stepping::Exact);
    }
    problem
        .solver
        .tableau()
        .map(adjoint::Stepping::RungeKutta)
        .ok_or_else(|| {
            HybridError::Unsupported(
                "the adjoint transposes the Runge-Kutta steps of the forward pass, which the ode_solvers adapter does not expose; use the built-in rk4, dopri5 or dop853 solver (SolverChoice::Rk4, SolverChoice::Dopri5 or SolverChoice::Dop853), or forward sensitivities (Method::Forward)".into(),
            )
        })
}

/// Runs `problem` with sensitivities: the final-state and observation
/// Jacobians and the event-time gradients.
///
/// With [`Method::Adjoint`], one forward pass is taped and each output row
/// (each final-state entry, each observed entry, each event time) is one
/// backward pass, starting at that output on the tape: an event's or an
/// observation's pass covers only the steps before it.
///
/// [`jacobian_in`] is the same in buffers the caller keeps. A one-shot call
/// runs in buffers its thread keeps for its next one-shot call, up to a
/// bound (systems with `n (n + n_p)` at most 2^14, and at most 1 MiB of an
/// adjoint's tape): only the result is allocated anew.
pub fn jacobian(problem: &Problem<'_>, method: Method) -> Result<Sensitivities, HybridError> {
    workspace::in_thread_workspace(problem.system, |kept| jacobian_in(problem, method, kept))
}

/// [`jacobian`] in `workspace`: the integrator's and the sensitivities'
/// buffers are reused, and the results are built in the vectors and
/// matrices of earlier results given back with [`Workspace::recycle`]. The
/// numbers are those of [`jacobian`].
///
/// ```
/// use ia_adjoint::prelude::*;
/// use ia_adjoint::{jacobian_in, Workspace};
///
/// let model = ia_models::by_name("ball2d-flat").unwrap();
/// let system = model.system();
/// let problem = Problem::new(&system, vec![0.0, 1.0, 1.0, 0.0], vec![9.81, 0.8, 0.7], 2.0)
///     .with_solver(SolverChoice::dopri5(1e-12));
/// let mut workspace = Workspace::new();
/// for _ in 0..3 {
///     let sens = jacobian_in(&problem, Method::Forward, &mut workspace).unwrap();
///     // d x(T) / d vy0: the saltation term at work (closed form 0.0669724770642)
///     let d = sens.final_derivative("x", "initial.vy").unwrap();
///     assert!((d - 0.06697247706422019).abs() < 1e-9);
///     workspace.recycle(sens);
/// }
/// ```
pub fn jacobian_in(
    problem: &Problem<'_>,
    method: Method,
    workspace: &mut Workspace,
) -> Result<Sensitivities, HybridError> {
    let sys = problem.system;
    match method {
        Method::Forward | Method::ForwardOnStateSteps => {
            forward_jacobian(problem, method, None, sys.shared_wrt_names(), workspace)
        }
        Method::Adjoint => {
            let wrt = sys.shared_wrt_names();
            let stepping = adjoint_stepping(problem)?;
            let mut tape = workspace.tape(&AdjointOptions::default());
            let run = ia_events::run_in(
                problem,
                &mut workspace.run,
                &mut ia_events::NoExtraState,
                &mut tape,
            );
            let trajectory = match run {
                Ok(trajectory) => trajectory,
                Err(e) => {
                    workspace.keep_tape(tape);
                    return Err(e);
                }
            };
            let mut backward =
                Backward::new_in(sys, &problem.params, stepping, &mut workspace.backward);
            let n = sys.state_dim();
            let m = wrt.len();
            // Each row's pass starts at the output it seeds: an event's or an
            // observation's pass covers only the steps before it.
            let mut row = |seeds: &LossSeeds, end: adjoint::Cursor| {
                let (dx0, dp) = backward.gradient_from(&tape, &trajectory, seeds, end)?;
                Ok::<_, HybridError>(dx0.into_iter().chain(dp).collect::<Vec<f64>>())
            };
            let mut seeds = LossSeeds::zeros(&trajectory);
            let mut final_jacobian = DMatrix::zeros(n, m);
            for i in 0..n {
                seeds.final_state[i] = 1.0;
                final_jacobian
                    .row_mut(i)
                    .copy_from_slice(&row(&seeds, tape.end())?);
                seeds.final_state[i] = 0.0;
            }
            let mut observation_jacobians = Vec::with_capacity(trajectory.observations.len());
            for k in 0..trajectory.observations.len() {
                let mut jac = DMatrix::zeros(n, m);
                for i in 0..n {
                    seeds.observations[k][i] = 1.0;
                    jac.row_mut(i)
                        .copy_from_slice(&row(&seeds, tape.observation_end(k))?);
                    seeds.observations[k][i] = 0.0;
                }
                observation_jacobians.push(jac);
            }
            // One row per recorded event: the last ones of the run when not
            // all are kept.
            let first_recorded = trajectory.first_recorded_event();
            let mut event_time_gradients = DMatrix::zeros(trajectory.events.len(), m);
            for k in 0..trajectory.events.len() {
                seeds.event_times[k] = 1.0;
                event_time_gradients
                    .row_mut(k)
                    .copy_from_slice(&row(&seeds, tape.event_end(first_recorded + k))?);
                seeds.event_times[k] = 0.0;
            }
            // (A failed row leaves the buffers to be allocated anew.)
            backward.release(&mut workspace.backward);
            workspace.keep_tape(tape);
            let sens = Sensitivities {
                saltations: Vec::new(),
                state_names: problem.system.shared_state_names(),
                trajectory,
                wrt,
                final_jacobian,
                observation_jacobians,
                event_time_gradients,
                method,
            };
            check_derivatives(&sens, problem.system.state_names())?;
            Ok(sens)
        }
    }
}

/// Sensitivities with respect to the chosen columns `wrt` only (names as in
/// [`HybridSystem::wrt_names`](ia_core::HybridSystem::wrt_names):
/// `initial.<state>`, `param.<name>`), in the order given.
///
/// Forward sensitivities then carry only those columns, formed from
/// Jacobian-vector products of the flows and resets (where the model gives
/// them; [`ia_core::Autodiff`] does), so their cost grows with the number of
/// columns, not with the number of parameters. The adjoint's cost does not
/// depend on the columns; it returns the same selection. The saltation
/// matrices are not kept ([`Sensitivities::saltations`] is empty).
///
/// ```
/// use ia_adjoint::{jacobian, jacobian_wrt, Method};
/// use ia_events::{Problem, SolverChoice};
///
/// let model = ia_models::by_name("ball2d-flat").unwrap();
/// let system = model.system();
/// let problem = Problem::new(&system, vec![0.0, 1.0, 1.0, 0.0], vec![9.81, 0.8, 0.7], 2.0)
///     .with_solver(SolverChoice::dopri5(1e-12));
/// let two = jacobian_wrt(&problem, Method::Forward, &["initial.vy", "param.mu"]).unwrap();
/// assert_eq!(*two.wrt, ["initial.vy", "param.mu"]);
/// // d x(T) / d vy0: the saltation term at work (closed form 0.0669724770642)
/// assert!((two.final_jacobian[(0, 0)] - 0.06697247706422019).abs() < 1e-9);
/// ```
pub fn jacobian_wrt(
    problem: &Problem<'_>,
    method: Method,
    wrt: &[&str],
) -> Result<Sensitivities, HybridError> {
    workspace::in_thread_workspace(problem.system, |kept| {
        jacobian_wrt_in(problem, method, wrt, kept)
    })
}

/// [`jacobian_wrt`] in `workspace` (see [`jacobian_in`]); the numbers are
/// those of [`jacobian_wrt`].
///
/// ```
/// use ia_adjoint::{jacobian_wrt, jacobian_wrt_in, Method, Workspace};
/// use ia_events::{Problem, SolverChoice};
///
/// let model = ia_models::by_name("ball2d-flat").unwrap();
/// let system = model.system();
/// let mut workspace = Workspace::new();
/// for mu in [0.5, 0.7] {
///     let problem = Problem::new(&system, vec![0.0, 1.0, 1.0, 0.0], vec![9.81, 0.8, mu], 2.0)
///         .with_solver(SolverChoice::dopri5(1e-12));
///     let wrt = ["initial.vy", "param.mu"];
///     let two = jacobian_wrt_in(&problem, Method::Forward, &wrt, &mut workspace).unwrap();
///     assert_eq!(two, jacobian_wrt(&problem, Method::Forward, &wrt).unwrap());
///     workspace.recycle(two);
/// }
/// ```
pub fn jacobian_wrt_in(
    problem: &Problem<'_>,
    method: Method,
    wrt: &[&str],
    workspace: &mut Workspace,
) -> Result<Sensitivities, HybridError> {
    let sys = problem.system;
    let n = sys.state_dim();
    let all = sys.wrt_names();
    let indices = wrt
        .iter()
        .map(|name| name_index("sensitivity column", all, name))
        .collect::<Result<Vec<usize>, _>>()?;
    let names: Arc<[String]> = indices.iter().map(|&j| all[j].clone()).collect();
    match method {
        Method::Adjoint => {
            let full = jacobian_in(problem, method, workspace)?;
            let columns = |m: &DMatrix<f64>| m.select_columns(indices.iter());
            Ok(Sensitivities {
                final_jacobian: columns(&full.final_jacobian),
                observation_jacobians: full.observation_jacobians.iter().map(columns).collect(),
                event_time_gradients: columns(&full.event_time_gradients),
                saltations: Vec::new(),
                wrt: names,
                state_names: full.state_names,
                trajectory: full.trajectory,
                method,
            })
        }
        Method::Forward | Method::ForwardOnStateSteps => {
            let columns = indices.iter().map(|&j| Wrt::of_column(j, n)).collect();
            forward_jacobian(problem, method, Some(columns), names, workspace)
        }
    }
}

/// Forward sensitivities of `problem` in `workspace`, with respect to every
/// input or to the `chosen` columns, named `wrt`.
fn forward_jacobian(
    problem: &Problem<'_>,
    method: Method,
    chosen: Option<Vec<Wrt>>,
    wrt: Arc<[String]>,
    workspace: &mut Workspace,
) -> Result<Sensitivities, HybridError> {
    let sys = problem.system;
    let mut carried = workspace
        .forward(sys, method == Method::Forward, true)
        .with_recording(problem.events.record);
    if let Some(columns) = chosen {
        carried = carried.with_columns(columns);
    }
    let mut at = SensitivityAt::of(&carried);
    at.spare = std::mem::take(&mut workspace.matrices);
    at.observation_jacobians = workspace.observation_list();
    let run = ia_events::run_in(problem, &mut workspace.run, &mut carried, &mut at);
    workspace.matrices = std::mem::take(&mut at.spare);
    let trajectory = match run {
        Ok(trajectory) => trajectory,
        Err(e) => {
            workspace.keep_forward(carried);
            return Err(e);
        }
    };
    let event_time_gradients =
        carried.event_time_gradients(trajectory.events.len(), &mut workspace.matrices);
    workspace.keep_forward(carried);
    let final_jacobian = at
        .final_jacobian
        .take()
        .ok_or_else(|| HybridError::Unsupported("the run ended without a final state".into()))?;
    let sens = Sensitivities {
        saltations: Vec::new(),
        state_names: sys.shared_state_names(),
        trajectory,
        wrt,
        final_jacobian,
        observation_jacobians: at.observation_jacobians,
        event_time_gradients,
        method,
    };
    check_derivatives(&sens, sys.state_names())?;
    Ok(sens)
}

/// Every derivative of `sens` must be finite (an overflow of the
/// sensitivities, for example on a violently unstable flow, is the same
/// `non_finite` error whichever method met it).
fn check_derivatives(sens: &Sensitivities, names: &[String]) -> Result<(), HybridError> {
    let wrt = &sens.wrt;
    let time = sens.trajectory.final_time;
    let matrix = |what: &str, jac: &DMatrix<f64>, time: f64| {
        for i in 0..jac.nrows() {
            for j in 0..jac.ncols() {
                let v = jac[(i, j)];
                if !v.is_finite() {
                    return Err(HybridError::NonFinite {
                        what: format!(
                            "derivative of {what} '{}' with respect to {} (= {v})",
                            names.get(i).map_or("?", String::as_str),
                            wrt.get(j).map_or("?", String::as_str)
                        ),
                        time,
                        trajectory: Some(Box::new(sens.trajectory.clone())),
                    });
                }
            }
        }
        Ok(())
    };
    matrix("the final state", &sens.final_jacobian, time)?;
    for (k, jac) in sens.observation_jacobians.iter().enumerate() {
        let t = sens.trajectory.observations.get(k).map_or(time, |o| o.time);
        matrix("the observed state", jac, t)?;
    }
    for (k, gradient) in sens.event_time_gradients.row_iter().enumerate() {
        if let Some(j) = gradient.iter().position(|v| !v.is_finite()) {
            let t = sens.trajectory.events.get(k).map_or(time, |e| e.time);
            return Err(HybridError::NonFinite {
                what: format!(
                    "derivative of event {k}'s time with respect to {} (= {})",
                    wrt.get(j).map_or("?", String::as_str),
                    gradient[j]
                ),
                time: t,
                trajectory: Some(Box::new(sens.trajectory.clone())),
            });
        }
    }
    Ok(())
}

/// Forward sensitivities with the saltation term dropped: each event maps
/// `S+ = r_x S- + r_p`, as if the event time did not move with the
/// parameters. This is the answer automatic differentiation of a
/// time-stepping simulator gives; it exists to show what is lost (on a ball
/// bouncing on flat ground, `d x(T)/d vy0` comes out 0). Never use it for
/// real sensitivities. Only with the `testing` feature (ia-verify's studies).
#[cfg(any(test, feature = "testing"))]
pub fn jacobian_without_saltation(problem: &Problem<'_>) -> Result<DMatrix<f64>, HybridError> {
    let mut carried = forward::ForwardSensitivity::new(problem.system, true, false);
    let mut at = SensitivityAt::of(&carried);
    ia_events::run(problem, &mut carried, &mut at)?;
    at.final_jacobian
        .take()
        .ok_or_else(|| HybridError::Unsupported("the run ended without a final state".into()))
}

/// The gradient of `loss` by the reverse-mode (discrete) adjoint: one taped
/// forward pass and one backward pass, whatever the number of parameters.
pub fn gradient(problem: &Problem<'_>, loss: &dyn Loss) -> Result<Gradient, HybridError> {
    gradient_with(problem, loss, &AdjointOptions::default())
}

/// [`gradient`] with options of the reverse pass: with
/// [`AdjointOptions::checkpoints`] the tape keeps the start states of about
/// `K` to `2 K` steps only, and the gradient is the same to the last bit.
/// Like [`jacobian`], it runs in buffers its thread keeps between one-shot
/// calls.
///
/// ```
/// use ia_adjoint::{gradient, gradient_with, AdjointOptions, FinalComponent};
/// use ia_events::{Problem, SolverChoice};
///
/// let model = ia_models::by_name("ball2d-flat").unwrap();
/// let system = model.system();
/// let problem = Problem::new(&system, vec![0.0, 1.0, 1.0, 0.0], vec![9.81, 0.8, 0.7], 2.0)
///     .with_solver(SolverChoice::Rk4 { dt: 1e-3 });
/// let full = gradient(&problem, &FinalComponent(0)).unwrap();
/// let bounded = AdjointOptions { checkpoints: Some(16) };
/// let lean = gradient_with(&problem, &FinalComponent(0), &bounded).unwrap();
/// assert_eq!(lean.concatenated(), full.concatenated());
/// // The kept states shrink from one per step to at most 32; the per-step
/// // entries (mode, start time, size) stay.
/// assert!(lean.tape_floats < full.tape_floats);
/// ```
pub fn gradient_with(
    problem: &Problem<'_>,
    loss: &dyn Loss,
    options: &AdjointOptions,
) -> Result<Gradient, HybridError> {
    workspace::in_thread_workspace(problem.system, |kept| {
        gradient_in(problem, loss, options, kept)
    })
}

/// [`gradient_with`] in `workspace`: the integrator's buffers, the tape and
/// the backward pass's buffers are reused, and the result is built in the
/// vectors of earlier results given back with
/// [`Workspace::recycle_gradient`]. The numbers are those of
/// [`gradient_with`].
///
/// ```
/// use ia_adjoint::{gradient, gradient_in, AdjointOptions, FinalComponent, Workspace};
/// use ia_events::{Problem, SolverChoice};
///
/// let model = ia_models::by_name("ball2d-flat").unwrap();
/// let system = model.system();
/// let mut workspace = Workspace::new();
/// for e in [0.7, 0.8, 0.9] {
///     let problem = Problem::new(&system, vec![0.0, 1.0, 1.0, 0.0], vec![9.81, e, 0.7], 2.0)
///         .with_solver(SolverChoice::dopri5(1e-10));
///     let options = AdjointOptions::default();
///     let grad = gradient_in(&problem, &FinalComponent(0), &options, &mut workspace).unwrap();
///     assert_eq!(grad, gradient(&problem, &FinalComponent(0)).unwrap());
///     workspace.recycle_gradient(grad);
/// }
/// ```
pub fn gradient_in(
    problem: &Problem<'_>,
    loss: &dyn Loss,
    options: &AdjointOptions,
    workspace: &mut Workspace,
) -> Result<Gradient, HybridError> {
    let sys = problem.system;
    let stepping = adjoint_stepping(problem)?;
    loss.check(sys.state_dim())?;
    let mut tape = workspace.tape(options);
    let run = ia_events::run_in(
        problem,
        &mut workspace.run,
        &mut ia_events::NoExtraState,
        &mut tape,
    );
    let result = run.and_then(|trajectory| {
        loss.check_run(&trajectory)?;
        let mut seeds = LossSeeds::zeros(&trajectory);
        let value = loss.evaluate(&trajectory, &mut seeds);
        check_seeds(&seeds, &trajectory)?;
        let mut backward =
            Backward::new_in(sys, &problem.params, stepping, &mut workspace.backward);
        let pass = backward.gradient(&tape, &trajectory, &seeds);
        backward.release(&mut workspace.backward);
        let (initial_state, params) = pass?;
        Ok(Gradient {
            value,
            wrt: sys.shared_wrt_names(),
            initial_state,
            params,
            tape_floats: tape.stored_floats(),
            trajectory,
        })
    });
    workspace.keep_tape(tape);
    result
}

/// The gradient of `loss` by forward sensitivities (the full Jacobian
/// contracted with the loss's seeds): the reference the adjoint is checked
/// against. Only with the `testing` feature (ia-verify's checks).
#[cfg(any(test, feature = "testing"))]
pub fn gradient_forward(
    problem: &Problem<'_>,
    loss: &dyn Loss,
    method: Method,
) -> Result<Gradient, HybridError> {
    loss.check(problem.system.state_dim())?;
    jacobian(problem, method)?.loss_gradient(loss)
}

fn check_seeds(seeds: &LossSeeds, trajectory: &Trajectory) -> Result<(), HybridError> {
    let n = trajectory.final_state.len();
    let shapes = [
        ("loss seeds for the final state", n, seeds.final_state.len()),
        (
            "loss seeds for the observations",
            trajectory.observations.len(),
            seeds.observations.len(),
        ),
        (
            "loss seeds for the event times",
            trajectory.events.len(),
            seeds.event_times.len(),
        ),
    ];
    let observed = seeds
        .observations
        .iter()
        .map(|o| ("loss seeds for an observed state", n, o.len()));
    for (what, expected, found) in shapes.into_iter().chain(observed) {
        if expected != found {
            return Err(HybridError::DimensionMismatch {
                what: what.into(),
                expected,
                found,
            });
        }
    }
    let all = seeds
        .final_state
        .iter()
        .chain(seeds.observations.iter().flatten())
        .chain(&seeds.event_times);
    if all.clone().any(|v| !v.is_finite()) {
        return Err(HybridError::NonFinite {
            what: "loss seed".into(),
            time: trajectory.final_time,
            trajectory: None,
        });
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    //! Unit tests of the entry points on a ball dropped from rest (h0, v0 = 0)
    //! under gravity g, bouncing with restitution e. Closed forms, derived by
    //! hand: the first impact at `t1 = sqrt(2 h0 / g)`, the second at
    //! `t2 = t1 (1 + 2 e)`; between them `h(T) = e g t1 (T - t1) - g/2 (T - t1)^2`.
    use super::*;
    use ia_core::ToMode;
    use ia_core::{Autodiff, Direction, FlowFn, FromMode, GuardFn, HybridSystem, ResetFn, Scalar};
    use ia_events::SolverChoice;
    use rstest::rstest;

    pub(crate) const G: f64 = 9.81;
    pub(crate) const E: f64 = 0.8;
    pub(crate) const H0: f64 = 1.0;
    /// A time between the first and the second impact.
    pub(crate) const T: f64 = 0.8;

    struct Fall;
    impl FlowFn for Fall {
        fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], d: &mut [S]) {
            d[0] = x[1];
            d[1] = -p[0];
        }
    }
    struct Floor;
    impl GuardFn for Floor {
        fn direction(&self) -> Direction {
            Direction::Falling
        }
        fn value<S: Scalar>(&self, _t: S, x: &[S], _p: &[S]) -> S {
            x[0]
        }
    }
    struct Bounce;
    impl ResetFn for Bounce {
        fn apply<S: Scalar>(&self, _t: S, x: &[S], p: &[S], a: &mut [S]) {
            a[0] = x[0];
            a[1] = -p[1] * x[1];
        }
    }

    /// The ball: states `h, v`, parameters `g, e`.
    pub(crate) fn ball() -> HybridSystem {
        HybridSystem::builder(&["h", "v"], &["g", "e"])
            .mode("flight", Autodiff(Fall))
            .transition(
                "bounce",
                FromMode("flight"),
                ToMode("flight"),
                Autodiff(Floor),
                Autodiff(Bounce),
            )
            .build()
            .unwrap()
    }

    /// The run of [`ball`] from `(H0, 0)` to `T`.
    pub(crate) fn problem(system: &HybridSystem) -> Problem<'_> {
        Problem::new(system, vec![H0, 0.0], vec![G, E], T).with_solver(SolverChoice::dopri5(1e-12))
    }

    pub(crate) fn t1() -> f64 {
        (2.0 * H0 / G).sqrt()
    }

    /// `d h(T) / d (h0, v0, g, e)` from the closed form, derived by hand:
    /// with `w = sqrt(v0^2 + 2 g h0)` the impact speed and
    /// `t1 = (v0 + w) / g`, `h(T) = e w (T - t1) - g (T - t1)^2 / 2`, so
    /// `dh = e (T - t1) dw + (g (T - t1) - e w) dt1 + w (T - t1) de
    /// - (T - t1)^2 / 2 dg`, at v0 = 0 where `dw = (g dh0 + h0 dg) / w` and
    /// `dt1 = dh0 / w + dv0 / g - t1 / (2 g) dg`.
    pub(crate) fn dh_final() -> [f64; 4] {
        let t1 = t1();
        let (w, s) = (G * t1, T - t1);
        let dh_dw = E * s;
        let dh_dt1 = G * s - E * w;
        [
            dh_dw * G / w + dh_dt1 / w,
            dh_dt1 / G,
            dh_dw * H0 / w - dh_dt1 * t1 / (2.0 * G) - s * s / 2.0,
            w * s,
        ]
    }

    #[test]
    fn forward_and_adjoint_jacobians_match_the_closed_form() {
        let system = ball();
        let expected = dh_final();
        for method in [
            Method::Forward,
            Method::ForwardOnStateSteps,
            Method::Adjoint,
        ] {
            let sens = jacobian(&problem(&system), method).unwrap();
            for (j, want) in expected.iter().enumerate() {
                let got = sens.final_jacobian[(0, j)];
                assert!(
                    (got - want).abs() < 1e-8,
                    "{method:?} dh(T)/d{}: {got} vs closed form {want}",
                    sens.wrt[j]
                );
            }
        }
    }

    /// With fewer chosen columns than states, the rows are still the
    /// states (they once came from the `initial.` columns, which a chosen
    /// subset need not have). Reference: the full Jacobian of the same
    /// method (the adjoint selects its columns; forward sensitivities on the
    /// state's steps take the same steps).
    #[rstest]
    #[case(Method::Adjoint)]
    #[case(Method::ForwardOnStateSteps)]
    fn chosen_columns_keep_the_state_rows(#[case] method: Method) {
        let system = ball();
        let full = jacobian(&problem(&system), method).unwrap();
        let chosen = jacobian_wrt(&problem(&system), method, &["param.e"]).unwrap();
        assert_eq!(chosen.state_names(), ["h", "v"]);
        for state in ["h", "v"] {
            let got = chosen.final_derivative(state, "param.e").unwrap();
            let want = full.final_derivative(state, "param.e").unwrap();
            assert!(
                (got - want).abs() <= 1e-12 * want.abs().max(1.0),
                "{state}: {got} vs {want}"
            );
        }
        let err = chosen.final_derivative("x", "param.e").unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown state 'x'; valid state names: h, v"
        );
    }

    #[test]
    fn lookups_by_name_read_the_matrix_entries() {
        let system = ball();
        let sens = jacobian(&problem(&system), Method::Forward).unwrap();
        assert_eq!(sens.state_names(), ["h", "v"]);
        // wrt order: initial.h, initial.v, param.g, param.e.
        assert_eq!(
            sens.final_derivative("v", "param.e").unwrap(),
            sens.final_jacobian[(1, 3)]
        );
        assert_eq!(
            sens.final_derivative("h", "initial.v").unwrap(),
            sens.final_jacobian[(0, 1)]
        );
        // dt1/dg = -t1 / (2 g), from t1 = sqrt(2 h0 / g).
        let dt1_dg = sens.event_time_derivative(0, "param.g").unwrap();
        assert!((dt1_dg + t1() / (2.0 * G)).abs() < 1e-10, "{dt1_dg}");
    }

    #[test]
    fn observation_lookup_reads_the_observation_jacobian() {
        let system = ball();
        let run = problem(&system).with_observations(vec![0.2, 0.6]);
        let sens = jacobian(&run, Method::Forward).unwrap();
        // Before the impact, h(0.2) = h0 - g 0.2^2 / 2: dh/dg = -0.02.
        let d = sens.observation_derivative(0, "h", "param.g").unwrap();
        assert!((d + 0.02).abs() < 1e-12, "{d}");
        assert_eq!(
            sens.observation_derivative(1, "v", "initial.h").unwrap(),
            sens.observation_jacobians[1][(1, 0)]
        );
        let err = sens.observation_derivative(2, "h", "param.g").unwrap_err();
        assert!(err.to_string().contains("2 observations"), "{err}");
    }

    #[test]
    fn unknown_names_and_indices_list_what_is_valid() {
        let system = ball();
        let sens = jacobian(&problem(&system), Method::Forward).unwrap();
        let err = sens.final_derivative("h", "e").unwrap_err();
        assert_eq!(err.kind(), "unknown_name");
        assert_eq!(
            err.to_string(),
            "unknown sensitivity input 'e'; valid sensitivity input names: \
             initial.h, initial.v, param.g, param.e"
        );
        let err = sens.final_derivative("x", "param.e").unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown state 'x'; valid state names: h, v"
        );
        let err = sens.event_time_derivative(5, "param.e").unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("the run has 1 events") && text.contains("[0 at t = 0.45"),
            "{text}"
        );
    }

    #[test]
    fn gradient_by_name_matches_the_closed_form() {
        let system = ball();
        let grad = gradient(&problem(&system), &FinalComponent(0)).unwrap();
        assert_eq!(*grad.wrt, *system.wrt_names());
        let expected = dh_final();
        for (name, want) in system.wrt_names().iter().zip(expected) {
            let got = grad.derivative(name).unwrap();
            assert!((got - want).abs() < 1e-8, "dh(T)/d{name}: {got} vs {want}");
        }
        let err = grad.derivative("param.k").unwrap_err();
        assert!(err.to_string().contains("param.g, param.e"), "{err}");
    }

    #[test]
    fn gradient_forward_agrees_with_the_adjoint() {
        let system = ball();
        let run = problem(&system);
        let adjoint = gradient(&run, &FinalComponent(1)).unwrap();
        let forward =
            gradient_forward(&run, &FinalComponent(1), Method::ForwardOnStateSteps).unwrap();
        assert_eq!(forward.wrt, adjoint.wrt);
        for (a, f) in adjoint.concatenated().iter().zip(forward.concatenated()) {
            // Same steps: rounding only.
            assert!((a - f).abs() < 1e-10 * f.abs().max(1.0), "{a} vs {f}");
        }
    }

    #[test]
    fn without_saltation_the_initial_height_derivative_is_wrong() {
        let system = ball();
        let blind = jacobian_without_saltation(&problem(&system)).unwrap();
        let exact = dh_final();
        // The event-time term is what is lost: off by far more than the
        // tolerance for h0, while de has no event-time term (e does not
        // move t1) and stays exact.
        assert!((blind[(0, 0)] - exact[0]).abs() > 0.1, "{}", blind[(0, 0)]);
        assert!((blind[(0, 3)] - exact[3]).abs() < 1e-8, "{}", blind[(0, 3)]);
    }

    #[test]
    fn a_loss_seed_of_the_wrong_shape_is_an_error() {
        let system = ball();
        let bad = |tr: &Trajectory, seeds: &mut LossSeeds| {
            seeds.event_times.push(1.0);
            tr.final_time
        };
        let err = gradient(&problem(&system), &bad).unwrap_err();
        assert_eq!(err.kind(), "dimension_mismatch");
    }

    /// An inverted pendulum `theta' = omega, omega' = (g/l) sin theta` with
    /// a wall it never reaches: with `l = 1e-16` the state grows like
    /// `exp(t sqrt(g/l))` but the fixed steps keep it finite for a while,
    /// while its derivatives overflow (issue 10's rimless wheel).
    struct Inverted;
    impl FlowFn for Inverted {
        fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], d: &mut [S]) {
            d[0] = x[1];
            d[1] = (p[0] / p[1]) * x[0].sin();
        }
    }
    struct FarWall;
    impl GuardFn for FarWall {
        fn direction(&self) -> Direction {
            Direction::Falling
        }
        fn value<S: Scalar>(&self, _t: S, x: &[S], _p: &[S]) -> S {
            -x[0] + 1e300
        }
    }
    struct Keep;
    impl ResetFn for Keep {
        fn apply<S: Scalar>(&self, _t: S, x: &[S], _p: &[S], a: &mut [S]) {
            a.copy_from_slice(x);
        }
    }

    /// Issue 10: `gradient(&problem, &FinalComponent(5))` on a 2-state
    /// system panicked indexing the seeds; it is a clear error naming the
    /// state dimension, by both gradient functions.
    #[test]
    fn final_component_out_of_range_is_an_error() {
        let sys = ball();
        let problem = Problem::new(&sys, vec![1.0, 0.0], vec![9.81, 0.8], 0.4);
        let err = gradient(&problem, &FinalComponent(5)).unwrap_err();
        assert_eq!(err.kind(), "invalid_option");
        assert!(err.to_string().contains("state dimension 2"), "{err}");
        let err = gradient_forward(&problem, &FinalComponent(2), Method::Forward).unwrap_err();
        assert_eq!(err.kind(), "invalid_option");
        // In range, it works (reference: h(T) = h0 - g T^2 / 2 before the
        // first impact, so dh(T)/dh0 = 1).
        let g = gradient(&problem, &FinalComponent(0)).unwrap();
        assert!((g.initial_state[0] - 1.0).abs() < 1e-9, "{g:?}");
    }

    /// Issue 10: no seed of the wrong size panics: seeds resized by a loss,
    /// at any level, are a dimension error.
    #[test]
    fn seeds_of_the_wrong_size_are_an_error() {
        let sys = ball();
        let problem =
            Problem::new(&sys, vec![1.0, 0.0], vec![9.81, 0.8], 0.5).with_observations(vec![0.1]);
        type Resize = fn(&mut LossSeeds);
        let resizes: [Resize; 4] = [
            |s| s.final_state.push(1.0),
            |s| s.final_state.clear(),
            |s| s.observations[0].push(1.0),
            |s| s.event_times.push(1.0),
        ];
        for resize in resizes {
            let loss = move |tr: &Trajectory, seeds: &mut LossSeeds| {
                resize(seeds);
                tr.final_time
            };
            let err = gradient(&problem, &loss).unwrap_err();
            assert_eq!(err.kind(), "dimension_mismatch", "{err}");
            let err = gradient_forward(&problem, &loss, Method::Forward).unwrap_err();
            assert_eq!(err.kind(), "dimension_mismatch", "{err}");
        }
    }

    /// Issue 10: the adjoint returned NaN derivatives where forward
    /// sensitivities report `non_finite`; both now report `non_finite`.
    #[test]
    fn overflowing_derivatives_are_non_finite_for_every_method() {
        let sys = HybridSystem::builder(&["theta", "omega"], &["g", "l"])
            .mode("stance", Autodiff(Inverted))
            .transition(
                "wall",
                FromMode("stance"),
                ToMode("stance"),
                Autodiff(FarWall),
                Autodiff(Keep),
            )
            .build()
            .unwrap();
        let problem = Problem::new(&sys, vec![-0.3, 1.2], vec![9.81, 1e-16], 3.0)
            .with_solver(SolverChoice::Rk4 { dt: 0.001 });
        // The state itself stays finite (the reference: the run succeeds).
        let run = ia_events::simulate(&problem).unwrap();
        assert!(run.final_state.iter().all(|v| v.is_finite()));
        for method in [
            Method::Forward,
            Method::ForwardOnStateSteps,
            Method::Adjoint,
        ] {
            let err = jacobian(&problem, method).unwrap_err();
            assert_eq!(err.kind(), "non_finite", "{method:?}: {err}");
        }
        let err = gradient(&problem, &FinalComponent(0)).unwrap_err();
        assert_eq!(err.kind(), "non_finite", "{err}");
    }

    /// Saltations are kept only when asked for; then one per event, the
    /// same as the workspace forms (reference: `compute_for` on the event).
    #[test]
    fn saltations_are_kept_on_request() {
        let system = ball();
        let run = problem(&system);
        let sens = jacobian(&run, Method::Forward).unwrap();
        assert!(sens.saltations.is_empty());
        let sens = sens.with_saltations(&run);
        assert_eq!(sens.saltations.len(), sens.trajectory.events.len());
        let mut ws = SaltationWorkspace::new(2, 2);
        let event = ia_events::EventAt::recorded(&sens.trajectory, 0);
        assert_eq!(
            &sens.saltations[0],
            ws.compute_for(&system, &run.params, event)
        );
    }
}
