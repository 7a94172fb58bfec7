//! The Jacobians of a run: [`jacobian`] and its forms with chosen columns
//! ([`jacobian_wrt`]) and in a kept [`Workspace`] ([`jacobian_in`],
//! [`jacobian_wrt_in`]), by forward sensitivities or by one adjoint pass
//! per output row.

use crate::adjoint::{adjoint_stepping, Backward};
use crate::forward::SensitivityAt;
use crate::loss::LossSeeds;
use crate::results::{Method, Sensitivities};
use crate::tape::AdjointOptions;
use crate::tape::Cursor;
use crate::workspace::{self, Workspace};
use ia_core::{name_index, HybridError, Wrt};
use ia_events::Problem;
use nalgebra::DMatrix;
use std::sync::Arc;

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
            let wrt = sys.shared_wrt_names();
            forward_jacobian(problem, method, Carried::All, wrt, workspace)
        }
        Method::Adjoint => {
            let wrt = sys.shared_wrt_names();
            let stepping = adjoint_stepping(problem)?;
            let mut tape = workspace.tape(&AdjointOptions::default());
            let run = workspace.run_on_taped_steps(
                problem,
                &mut ia_events::NoExtraState,
                &mut *tape,
                |_, tape| tape.forget_run(),
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
            let mut row = |seeds: &LossSeeds, end: Cursor| {
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
            let columns: Vec<Wrt> = indices.iter().map(|&j| Wrt::of_column(j, n)).collect();
            forward_jacobian(problem, method, Carried::Chosen(&columns), names, workspace)
        }
    }
}

/// Directional derivatives of a run along `m` seed directions: column `c`
/// moves the initial state by `x0_seeds[:, c]` (`n x m`) and the parameters
/// by `param_seeds[:, c]` (`n_p x m`), and the result holds `J d_c` for
/// every output, with `J` the Jacobian of [`jacobian`] (final state,
/// observed states, event times) and `d_c` the column stacked
/// (`[x0_seeds; param_seeds]`): the Jacobian-vector products, columns
/// named `seed.<c>` in [`Sensitivities::wrt`].
///
/// By forward sensitivities (both forward methods) it is one run carrying
/// `m` sensitivity columns through the flow, the events and their
/// saltation: its cost grows with `m`, not with the number of inputs (a
/// column whose parameter direction is zero or a unit direction takes the
/// flow's and the reset's Jacobian-vector products; any other the flow's
/// dense partials times the direction; the unit directions of every input
/// in their order are the whole Jacobian, [`jacobian`]'s numbers). With
/// [`Method::ForwardOnStateSteps`] the steps are those of the plain run, so
/// the products are linear in the seeds and agree to rounding with the
/// adjoint's transposed steps; with [`Method::Forward`] the columns also
/// control the step size (as in [`jacobian`]). [`Method::Adjoint`] forms
/// the whole Jacobian by the adjoint and multiplies (a reference). The
/// saltation matrices are not kept. Runs in buffers its thread keeps, as
/// [`jacobian`].
///
/// ```
/// use ia_adjoint::nalgebra::DMatrix;
/// use ia_adjoint::{jacobian_along, Method};
/// use ia_events::{Problem, SolverChoice};
///
/// let model = ia_models::by_name("ball2d-flat").unwrap();
/// let system = model.system();
/// let problem = Problem::new(&system, vec![0.0, 1.0, 1.0, 0.0], vec![9.81, 0.8, 0.7], 2.0)
///     .with_solver(SolverChoice::dopri5(1e-12));
/// // Two directions: vy0 alone, and (x0 + vx0) together with the friction mu.
/// let x0_seeds = DMatrix::from_column_slice(4, 2, &[0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0]);
/// let param_seeds = DMatrix::from_column_slice(3, 2, &[0.0, 0.0, 0.0, 0.0, 0.0, 1.0]);
/// let along = jacobian_along(&problem, Method::ForwardOnStateSteps, &x0_seeds, &param_seeds)
///     .unwrap();
/// assert_eq!(*along.wrt, ["seed.0", "seed.1"]);
/// // d x(T) / d vy0: the saltation term at work (closed form 0.0669724770642)
/// assert!((along.final_jacobian[(0, 0)] - 0.06697247706422019).abs() < 1e-9);
/// ```
pub fn jacobian_along(
    problem: &Problem<'_>,
    method: Method,
    x0_seeds: &DMatrix<f64>,
    param_seeds: &DMatrix<f64>,
) -> Result<Sensitivities, HybridError> {
    workspace::in_thread_workspace(problem.system, |kept| {
        jacobian_along_in(problem, method, x0_seeds, param_seeds, kept)
    })
}

/// [`jacobian_along`] in `workspace` (see [`jacobian_in`]); the numbers are
/// those of [`jacobian_along`].
///
/// ```
/// use ia_adjoint::nalgebra::DMatrix;
/// use ia_adjoint::{jacobian_along, jacobian_along_in, Method, Workspace};
/// use ia_events::{Problem, SolverChoice};
///
/// let model = ia_models::by_name("ball2d-flat").unwrap();
/// let system = model.system();
/// let problem = Problem::new(&system, vec![0.0, 1.0, 1.0, 0.0], vec![9.81, 0.8, 0.7], 2.0)
///     .with_solver(SolverChoice::dopri5(1e-10));
/// let (dx0, dp) = (DMatrix::from_element(4, 1, 0.5), DMatrix::from_element(3, 1, 0.25));
/// let mut workspace = Workspace::new();
/// let method = Method::ForwardOnStateSteps;
/// let along = jacobian_along_in(&problem, method, &dx0, &dp, &mut workspace).unwrap();
/// assert_eq!(along, jacobian_along(&problem, method, &dx0, &dp).unwrap());
/// workspace.recycle(along);
/// ```
pub fn jacobian_along_in(
    problem: &Problem<'_>,
    method: Method,
    x0_seeds: &DMatrix<f64>,
    param_seeds: &DMatrix<f64>,
    workspace: &mut Workspace,
) -> Result<Sensitivities, HybridError> {
    let sys = problem.system;
    let (n, n_params, m) = (sys.state_dim(), sys.param_dim(), x0_seeds.ncols());
    for (what, rows, found) in [
        ("rows of the initial-state seeds", n, x0_seeds.nrows()),
        ("rows of the parameter seeds", n_params, param_seeds.nrows()),
        ("columns of the parameter seeds", m, param_seeds.ncols()),
    ] {
        if rows != found {
            return Err(HybridError::DimensionMismatch {
                what: what.into(),
                expected: rows,
                found,
            });
        }
    }
    let names: Arc<[String]> = (0..m).map(|c| format!("seed.{c}")).collect();
    match method {
        Method::Adjoint => {
            let full = jacobian_in(problem, method, workspace)?;
            let seeds = DMatrix::from_fn(n + n_params, m, |i, c| {
                if i < n {
                    x0_seeds[(i, c)]
                } else {
                    param_seeds[(i - n, c)]
                }
            });
            Ok(Sensitivities {
                final_jacobian: &full.final_jacobian * &seeds,
                observation_jacobians: full
                    .observation_jacobians
                    .iter()
                    .map(|j| j * &seeds)
                    .collect(),
                event_time_gradients: &full.event_time_gradients * &seeds,
                saltations: Vec::new(),
                wrt: names,
                state_names: full.state_names,
                trajectory: full.trajectory,
                method,
            })
        }
        Method::Forward | Method::ForwardOnStateSteps => {
            // Every input's unit direction in order: the whole Jacobian,
            // by the flows' dense fast paths where they have them.
            let whole = m == n + n_params
                && x0_seeds
                    .iter()
                    .enumerate()
                    .all(|(k, &v)| v == if k % n == k / n { 1.0 } else { 0.0 })
                && param_seeds.iter().enumerate().all(|(k, &v)| {
                    v == if k % n_params + n == k / n_params {
                        1.0
                    } else {
                        0.0
                    }
                });
            let carried = if whole {
                Carried::All
            } else {
                Carried::Seeds(x0_seeds, param_seeds)
            };
            forward_jacobian(problem, method, carried, names, workspace)
        }
    }
}

/// `d x(T) / dT` of a run of `problem` that gave `trajectory`: the flow
/// at the final state, in the final mode (after the last reset), written
/// into `out` (`n` entries); zero where the run ended before `t_end` (a
/// terminal transition: the final state does not move with `T`). Event
/// times and observed states do not move with `T`.
///
/// ```
/// use ia_adjoint::final_state_rate;
/// use ia_events::{simulate, Problem, SolverChoice};
///
/// let model = ia_models::by_name("ball2d-flat").unwrap();
/// let system = model.system();
/// let problem = Problem::new(&system, vec![0.0, 1.0, 1.0, 0.0], vec![9.81, 0.8, 0.7], 2.0)
///     .with_solver(SolverChoice::dopri5(1e-12));
/// let trajectory = simulate(&problem).unwrap();
/// let mut rate = [0.0; 4];
/// final_state_rate(&problem, &trajectory, &mut rate);
/// // x' = vx, y' = vy, vx' = 0, vy' = -g after the last impact.
/// assert_eq!(rate[0], trajectory.final_state[2]);
/// assert_eq!(rate[3], -9.81);
/// ```
pub fn final_state_rate(problem: &Problem<'_>, trajectory: &ia_core::Trajectory, out: &mut [f64]) {
    if trajectory.final_time < problem.t_end {
        out.fill(0.0);
        return;
    }
    problem.system.modes()[trajectory.final_mode].flow.rate(
        trajectory.final_time,
        &trajectory.final_state,
        &problem.params,
        out,
    );
}

/// The sensitivity columns [`forward_jacobian`] carries.
enum Carried<'a> {
    /// Every input's.
    All,
    /// The chosen inputs'.
    Chosen(&'a [Wrt]),
    /// Seed directions: `dx0` (`n x m`) and `dp` (`n_p x m`).
    Seeds(&'a DMatrix<f64>, &'a DMatrix<f64>),
}

/// Forward sensitivities of `problem` in `workspace`, with respect to every
/// input, to chosen columns or along seed directions (`carried`), named
/// `wrt`.
fn forward_jacobian(
    problem: &Problem<'_>,
    method: Method,
    carried: Carried<'_>,
    wrt: Arc<[String]>,
    workspace: &mut Workspace,
) -> Result<Sensitivities, HybridError> {
    let sys = problem.system;
    let fresh = workspace
        .forward(sys, method == Method::Forward, true)
        .with_recording(problem.events.record);
    let mut carried = match carried {
        Carried::All => fresh,
        Carried::Chosen(columns) => fresh.with_columns(columns),
        Carried::Seeds(x0, params) => {
            fresh.with_seeds(x0.as_slice().to_vec(), params.as_slice().to_vec())
        }
    };
    // On the taped run's steps, the derivative probes ride before `S`
    // (which `at` reads off the end).
    let mut at = SensitivityAt::of(&carried);
    at.spare = std::mem::take(&mut workspace.matrices);
    at.observation_jacobians = workspace.observation_list();
    let run = match method {
        Method::ForwardOnStateSteps => {
            workspace.run_on_taped_steps(problem, &mut carried, &mut at, |carried, at| {
                carried.forget_run();
                at.forget_run();
            })
        }
        _ => ia_events::run_in(problem, &mut workspace.run, &mut carried, &mut at),
    };
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
    let mut carried = crate::forward::ForwardSensitivity::new(problem.system, true, false);
    let mut at = SensitivityAt::of(&carried);
    ia_events::run(problem, &mut carried, &mut at)?;
    at.final_jacobian
        .take()
        .ok_or_else(|| HybridError::Unsupported("the run ended without a final state".into()))
}
