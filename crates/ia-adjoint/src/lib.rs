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
//! The mathematics is in `docs/method.md` and the module docs of
//! [`saltation`], [`mod@forward`] and [`adjoint`].
//!
//! ```
//! use ia_adjoint::{gradient, jacobian, LossSeeds, Method};
//! use ia_core::{Autodiff, Direction, FlowFn, GuardFn, HybridSystem, ResetFn, Scalar, Trajectory};
//! use ia_events::{Problem, SolverChoice};
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
//!     .transition("bounce", "flight", "flight", Autodiff(Floor), Autodiff(Bounce))
//!     .build()
//!     .unwrap();
//! let problem = Problem::new(&ball, vec![1.0, 0.0], vec![9.81, 0.8], 1.0)
//!     .with_solver(SolverChoice::dopri5(1e-12));
//!
//! // The first impact time t1 = sqrt(2 h0 / g): dt1/dh0 = 1 / (g t1).
//! let sens = jacobian(&problem, Method::Forward).unwrap();
//! let t1 = (2.0f64 / 9.81).sqrt();
//! assert!((sens.event_time_gradients[0][0] - 1.0 / (9.81 * t1)).abs() < 1e-9);
//!
//! // The same derivative by the adjoint, of the loss L = t1.
//! let first_impact = |tr: &Trajectory, seeds: &mut LossSeeds| {
//!     seeds.event_times[0] = 1.0;
//!     tr.events[0].time
//! };
//! let grad = gradient(&problem, &first_impact).unwrap();
//! assert!((grad.initial_state[0] - 1.0 / (9.81 * t1)).abs() < 1e-9);
//! ```

#![deny(missing_docs)]

pub mod adjoint;
pub mod forward;
pub mod saltation;

pub use adjoint::LossSeeds;
pub use saltation::{Saltation, SaltationWorkspace};

use adjoint::{Backward, Tape};
use forward::ForwardSensitivity;
use ia_core::{HybridError, Trajectory};
use ia_events::Problem;
use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

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
/// state entries, then parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sensitivities {
    /// The run (from the sensitivity pass).
    pub trajectory: Trajectory,
    /// Column names: `initial.<state>`, then `param.<name>`.
    pub wrt: Vec<String>,
    /// `d x(T) / d theta`, n x m.
    pub final_jacobian: DMatrix<f64>,
    /// `d x(t_obs) / d theta` per observation, n x m each.
    pub observation_jacobians: Vec<DMatrix<f64>>,
    /// `d t* / d theta` per event, m entries each.
    pub event_time_gradients: Vec<Vec<f64>>,
    /// The saltation of each event.
    pub saltations: Vec<Saltation>,
    /// How they were computed.
    pub method: Method,
}

/// The gradient of a scalar loss.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Gradient {
    /// The loss value.
    pub value: f64,
    /// `dL / d x0`.
    pub initial_state: Vec<f64>,
    /// `dL / d p`.
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
}

/// A scalar loss of a run: returns its value and writes its partial
/// derivatives with respect to what it reads into `seeds` (which arrive
/// zeroed and shaped for the trajectory).
pub trait Loss {
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
    fn evaluate(&self, trajectory: &Trajectory, seeds: &mut LossSeeds) -> f64 {
        seeds.final_state[self.0] = 1.0;
        trajectory.final_state[self.0]
    }
}

fn saltations(problem: &Problem<'_>, trajectory: &Trajectory) -> Vec<Saltation> {
    let sys = problem.system;
    let mut ws = SaltationWorkspace::new(sys.state_dim(), sys.param_dim());
    trajectory
        .events
        .iter()
        .map(|e| ws.compute_for(sys, &problem.params, e.into()).clone())
        .collect()
}

fn adjoint_tableau(
    problem: &Problem<'_>,
) -> Result<&'static ia_events::ButcherTableau, HybridError> {
    problem.solver.tableau().ok_or_else(|| {
        HybridError::Unsupported(
            "the adjoint transposes the Runge-Kutta steps of the forward pass, which the ode_solvers adapter does not expose; use the rk4 or dopri5 solver, or Method::Forward".into(),
        )
    })
}

/// Runs `problem` with sensitivities: the final-state and observation
/// Jacobians and the event-time gradients.
///
/// With [`Method::Adjoint`], one forward pass is taped and each output row
/// (each final-state entry, each observed entry, each event time) is one
/// backward pass.
pub fn jacobian(problem: &Problem<'_>, method: Method) -> Result<Sensitivities, HybridError> {
    let sys = problem.system;
    let wrt = sys.wrt_names().to_vec();
    match method {
        Method::Forward | Method::ForwardOnStateSteps => {
            let mut aug =
                ForwardSensitivity::new(sys, &problem.params, method == Method::Forward, true);
            let trajectory = ia_events::run(problem, &mut aug)?;
            let final_jacobian = aug.final_jacobian.take().ok_or_else(|| {
                HybridError::Unsupported("the run ended without a final state".into())
            })?;
            Ok(Sensitivities {
                saltations: aug.saltations,
                trajectory,
                wrt,
                final_jacobian,
                observation_jacobians: aug.observation_jacobians,
                event_time_gradients: aug.event_time_gradients,
                method,
            })
        }
        Method::Adjoint => {
            let tableau = adjoint_tableau(problem)?;
            let mut tape = Tape::default();
            let trajectory = ia_events::run(problem, &mut tape)?;
            let mut backward = Backward::new(sys, &problem.params, tableau);
            let n = sys.state_dim();
            let m = wrt.len();
            let mut row = |seeds: &LossSeeds| {
                let (dx0, dp) = backward.gradient(&tape, &trajectory, seeds);
                dx0.into_iter().chain(dp).collect::<Vec<f64>>()
            };
            let mut seeds = LossSeeds::zeros(&trajectory);
            let mut final_jacobian = DMatrix::zeros(n, m);
            for i in 0..n {
                seeds.final_state[i] = 1.0;
                final_jacobian.row_mut(i).copy_from_slice(&row(&seeds));
                seeds.final_state[i] = 0.0;
            }
            let mut observation_jacobians = Vec::with_capacity(trajectory.observations.len());
            for k in 0..trajectory.observations.len() {
                let mut jac = DMatrix::zeros(n, m);
                for i in 0..n {
                    seeds.observations[k][i] = 1.0;
                    jac.row_mut(i).copy_from_slice(&row(&seeds));
                    seeds.observations[k][i] = 0.0;
                }
                observation_jacobians.push(jac);
            }
            let mut event_time_gradients = Vec::with_capacity(trajectory.events.len());
            for k in 0..trajectory.events.len() {
                seeds.event_times[k] = 1.0;
                event_time_gradients.push(row(&seeds));
                seeds.event_times[k] = 0.0;
            }
            Ok(Sensitivities {
                saltations: saltations(problem, &trajectory),
                trajectory,
                wrt,
                final_jacobian,
                observation_jacobians,
                event_time_gradients,
                method,
            })
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
/// assert_eq!(two.wrt, ["initial.vy", "param.mu"]);
/// // d x(T) / d vy0: the saltation term at work (closed form 0.0669724770642)
/// assert!((two.final_jacobian[(0, 0)] - 0.06697247706422019).abs() < 1e-9);
/// ```
pub fn jacobian_wrt(
    problem: &Problem<'_>,
    method: Method,
    wrt: &[&str],
) -> Result<Sensitivities, HybridError> {
    let sys = problem.system;
    let n = sys.state_dim();
    let all = sys.wrt_names();
    let indices = wrt
        .iter()
        .map(|name| {
            all.iter()
                .position(|w| w == name)
                .ok_or_else(|| HybridError::UnknownName {
                    kind: "sensitivity column".into(),
                    name: name.to_string(),
                    valid: all.to_vec(),
                })
        })
        .collect::<Result<Vec<usize>, _>>()?;
    let names: Vec<String> = indices.iter().map(|&j| all[j].clone()).collect();
    match method {
        Method::Adjoint => {
            let full = jacobian(problem, method)?;
            let select = |row: &[f64]| indices.iter().map(|&j| row[j]).collect::<Vec<f64>>();
            let columns = |m: &DMatrix<f64>| m.select_columns(indices.iter());
            Ok(Sensitivities {
                final_jacobian: columns(&full.final_jacobian),
                observation_jacobians: full.observation_jacobians.iter().map(columns).collect(),
                event_time_gradients: full
                    .event_time_gradients
                    .iter()
                    .map(|r| select(r))
                    .collect(),
                saltations: Vec::new(),
                wrt: names,
                trajectory: full.trajectory,
                method,
            })
        }
        Method::Forward | Method::ForwardOnStateSteps => {
            let columns = indices
                .iter()
                .map(|&j| {
                    if j < n {
                        forward::Column::Initial(j)
                    } else {
                        forward::Column::Param(j - n)
                    }
                })
                .collect();
            let mut aug =
                ForwardSensitivity::new(sys, &problem.params, method == Method::Forward, true)
                    .with_columns(columns);
            let trajectory = ia_events::run(problem, &mut aug)?;
            let final_jacobian = aug.final_jacobian.take().ok_or_else(|| {
                HybridError::Unsupported("the run ended without a final state".into())
            })?;
            Ok(Sensitivities {
                saltations: Vec::new(),
                trajectory,
                wrt: names,
                final_jacobian,
                observation_jacobians: aug.observation_jacobians,
                event_time_gradients: aug.event_time_gradients,
                method,
            })
        }
    }
}

/// Forward sensitivities with the saltation term dropped: each event maps
/// `S+ = r_x S- + r_p`, as if the event time did not move with the
/// parameters. This is the answer automatic differentiation of a
/// time-stepping simulator gives; it exists to show what is lost (on a ball
/// bouncing on flat ground, `d x(T)/d vy0` comes out 0). Never use it for
/// real sensitivities.
pub fn jacobian_without_saltation(problem: &Problem<'_>) -> Result<DMatrix<f64>, HybridError> {
    let mut aug = ForwardSensitivity::new(problem.system, &problem.params, true, false);
    ia_events::run(problem, &mut aug)?;
    aug.final_jacobian
        .take()
        .ok_or_else(|| HybridError::Unsupported("the run ended without a final state".into()))
}

/// The gradient of `loss` by the reverse-mode (discrete) adjoint: one taped
/// forward pass and one backward pass, whatever the number of parameters.
pub fn gradient(problem: &Problem<'_>, loss: &dyn Loss) -> Result<Gradient, HybridError> {
    let tableau = adjoint_tableau(problem)?;
    let mut tape = Tape::default();
    let trajectory = ia_events::run(problem, &mut tape)?;
    let mut seeds = LossSeeds::zeros(&trajectory);
    let value = loss.evaluate(&trajectory, &mut seeds);
    check_seeds(&seeds, &trajectory)?;
    let mut backward = Backward::new(problem.system, &problem.params, tableau);
    let (initial_state, params) = backward.gradient(&tape, &trajectory, &seeds);
    Ok(Gradient {
        value,
        initial_state,
        params,
        tape_floats: tape.stored_floats(),
        trajectory,
    })
}

/// The gradient of `loss` by forward sensitivities (the full Jacobian
/// contracted with the loss's seeds): the reference the adjoint is checked
/// against.
pub fn gradient_forward(
    problem: &Problem<'_>,
    loss: &dyn Loss,
    method: Method,
) -> Result<Gradient, HybridError> {
    let sens = jacobian(problem, method)?;
    let trajectory = sens.trajectory;
    let mut seeds = LossSeeds::zeros(&trajectory);
    let value = loss.evaluate(&trajectory, &mut seeds);
    check_seeds(&seeds, &trajectory)?;
    let m = sens.wrt.len();
    let mut total = vec![0.0; m];
    let mut add = |weights: &[f64], jac: &DMatrix<f64>| {
        for (j, t) in total.iter_mut().enumerate() {
            *t += (0..weights.len())
                .map(|i| weights[i] * jac[(i, j)])
                .sum::<f64>();
        }
    };
    add(&seeds.final_state, &sens.final_jacobian);
    for (w, jac) in seeds.observations.iter().zip(&sens.observation_jacobians) {
        add(w, jac);
    }
    for (k, &w) in seeds.event_times.iter().enumerate() {
        for (t, g) in total.iter_mut().zip(&sens.event_time_gradients[k]) {
            *t += w * g;
        }
    }
    let n = problem.system.state_dim();
    Ok(Gradient {
        value,
        initial_state: total[..n].to_vec(),
        params: total[n..].to_vec(),
        tape_floats: 0,
        trajectory,
    })
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
    for (what, expected, found) in shapes {
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
