//! `ball2d_flat_a` through diffsol (the Rust peer), with its reset-aware
//! derivatives.
//!
//! diffsol has no initial-state sensitivities apart from the parameters, so
//! the initial state is made a parameter: the parameter vector is
//! `(g, e, mu, x0, y0, vx0, vy0)` and `init(p) = p[3..7]`. The impact is a
//! diffsol root function (index 0) with a configured reset
//! `(x, y, mu vx, -e vy)`, and diffsol applies the reset itself and carries
//! the derivatives across it (its reset-aware machinery, not a restart
//! pattern in user code):
//!
//! * forward: `solve_dense_sensitivities` stops on the root, pins the state
//!   to the root time, and `apply_reset_with_sens` applies the event-time
//!   (saltation) correction to every sensitivity column;
//! * adjoint: `solve_with_checkpointing` splits the checkpointing path at each
//!   reset, and the backward pass applies `apply_reset_with_adjoint` at each
//!   split.
//!
//! The solver is diffsol's explicit Runge-Kutta with the Tsitouras 5(4)
//! tableau (`tsit45`, its only explicit tableau), at the same
//! `rtol = atol = 1e-10` as ours.
//!
//! **The root function is not the plain guard `y`.** diffsol's roots have no
//! direction and are not re-armed after a reset: the root finder restarts
//! from the sign of the root function at the reset state, and the located
//! impact leaves `y` a rounding error on either side of zero (here
//! `-4.2e-17` after the first impact). With `y` as the root function the
//! first step after the first impact (0.74 s long: the flow is quadratic, so
//! the step-size control lets steps grow, and diffsol has no maximum step)
//! goes from `-4e-17` to `-0.066` with no sign change and the second and
//! third impacts are missed (`x(T) = 1.535` instead of `1.3255`); had the
//! next step ended above zero, the sign change from `-4e-17` would have fired
//! a spurious impact at once. The root function used here is
//! `y + max(vy, 0)`: equal to `y` (with partials `(0, 1, 0, 0)`) at every
//! impact, where `vy < 0`, and positive right after each reset.
//!
//! diffsol's adjoint closures return the *negated* transposed products
//! (`-J^T v`, `-f_p^T v`, ...), as its own test models do.

use crate::ball2d::{INITIAL_STATE, PARAMS, TOL, T_END};
use diffsol::{
    AdjointOdeSolverMethod, DenseMatrix, Matrix, MatrixCommon, NalgebraMat, OdeBuilder,
    OdeSolverMethod, OdeSolverState, SensitivitiesOdeSolverMethod, Vector, VectorView,
};

type M = NalgebraMat<f64>;

/// Number of diffsol parameters: `(g, e, mu, x0, y0, vx0, vy0)`.
pub const NPARAMS: usize = 7;

/// diffsol's parameter vector for `ball2d_flat_a`.
pub fn params() -> Vec<f64> {
    PARAMS.iter().chain(&INITIAL_STATE).copied().collect()
}

/// Maps a gradient in diffsol's parameter order `(g, e, mu, x0, y0, vx0,
/// vy0)` to ours (`initial.x, initial.y, initial.vx, initial.vy, param.g,
/// param.e, param.mu`).
pub fn to_our_order(grad: &[f64]) -> [f64; 7] {
    [
        grad[3], grad[4], grad[5], grad[6], grad[0], grad[1], grad[2],
    ]
}

fn rhs(x: &[f64], p: &[f64], _t: f64, y: &mut [f64]) {
    y[0] = x[2];
    y[1] = x[3];
    y[2] = 0.0;
    y[3] = -p[0];
}
fn rhs_jac(_x: &[f64], _p: &[f64], _t: f64, v: &[f64], y: &mut [f64]) {
    y[0] = v[2];
    y[1] = v[3];
    y[2] = 0.0;
    y[3] = 0.0;
}
fn rhs_sens(_x: &[f64], _p: &[f64], _t: f64, v: &[f64], y: &mut [f64]) {
    y[0] = 0.0;
    y[1] = 0.0;
    y[2] = 0.0;
    y[3] = -v[0];
}
/// `-f_x^T v`.
fn rhs_adjoint(_x: &[f64], _p: &[f64], _t: f64, v: &[f64], y: &mut [f64]) {
    y[0] = 0.0;
    y[1] = 0.0;
    y[2] = -v[0];
    y[3] = -v[1];
}
/// `-f_p^T v`.
fn rhs_sens_adjoint(_x: &[f64], _p: &[f64], _t: f64, v: &[f64], y: &mut [f64]) {
    y.fill(0.0);
    y[0] = v[3];
}
fn init(p: &[f64], _t: f64, y: &mut [f64]) {
    y.copy_from_slice(&p[3..7]);
}
fn init_sens(_p: &[f64], _t: f64, v: &[f64], y: &mut [f64]) {
    y.copy_from_slice(&v[3..7]);
}
/// `-(dx0/dp)^T v`.
fn init_sens_adjoint(_p: &[f64], _t: f64, v: &[f64], y: &mut [f64]) {
    y.fill(0.0);
    for i in 0..4 {
        y[3 + i] = -v[i];
    }
}
/// The root function: `y + max(vy, 0)`; see the module documentation for why
/// not plain `y`. At every impact `vy < 0`, where it is `y` with partials
/// `(0, 1, 0, 0)`.
fn root(x: &[f64], _p: &[f64], _t: f64, y: &mut [f64]) {
    y[0] = x[1] + x[3].max(0.0);
}
fn root_jac(x: &[f64], _p: &[f64], _t: f64, v: &[f64], y: &mut [f64]) {
    y[0] = v[1] + if x[3] > 0.0 { v[3] } else { 0.0 };
}
fn root_sens(_x: &[f64], _p: &[f64], _t: f64, _v: &[f64], y: &mut [f64]) {
    y[0] = 0.0;
}
/// `-g_x^T v`.
fn root_adjoint(x: &[f64], _p: &[f64], _t: f64, v: &[f64], y: &mut [f64]) {
    y.fill(0.0);
    y[1] = -v[0];
    if x[3] > 0.0 {
        y[3] = -v[0];
    }
}
fn zero_adjoint(_x: &[f64], _p: &[f64], _t: f64, _v: &[f64], y: &mut [f64]) {
    y.fill(0.0);
}
fn reset(x: &[f64], p: &[f64], _t: f64, y: &mut [f64]) {
    y[0] = x[0];
    y[1] = x[1];
    y[2] = p[2] * x[2];
    y[3] = -p[1] * x[3];
}
fn reset_jac(_x: &[f64], p: &[f64], _t: f64, v: &[f64], y: &mut [f64]) {
    y[0] = v[0];
    y[1] = v[1];
    y[2] = p[2] * v[2];
    y[3] = -p[1] * v[3];
}
fn reset_sens(x: &[f64], _p: &[f64], _t: f64, v: &[f64], y: &mut [f64]) {
    y[0] = 0.0;
    y[1] = 0.0;
    y[2] = x[2] * v[2];
    y[3] = -x[3] * v[1];
}
/// `-r_x^T v`.
fn reset_adjoint(_x: &[f64], p: &[f64], _t: f64, v: &[f64], y: &mut [f64]) {
    y[0] = -v[0];
    y[1] = -v[1];
    y[2] = -p[2] * v[2];
    y[3] = p[1] * v[3];
}
/// `-r_p^T v`.
fn reset_sens_adjoint(x: &[f64], _p: &[f64], _t: f64, v: &[f64], y: &mut [f64]) {
    y.fill(0.0);
    y[1] = x[3] * v[3];
    y[2] = -x[2] * v[2];
}
fn out(x: &[f64], _p: &[f64], _t: f64, y: &mut [f64]) {
    y[0] = x[0];
}
fn out_jac(_x: &[f64], _p: &[f64], _t: f64, v: &[f64], y: &mut [f64]) {
    y[0] = v[0];
}
fn out_adjoint(_x: &[f64], _p: &[f64], _t: f64, v: &[f64], y: &mut [f64]) {
    y.fill(0.0);
    y[0] = -v[0];
}

/// The problem types are unnameable closures' types, so each entry point
/// builds its problem; building is cheap next to solving and is included in
/// the timings, as building ours (`Problem::new`) is in ours.
macro_rules! primal_problem {
    () => {
        OdeBuilder::<M>::new()
            .p(params())
            .rtol(TOL)
            .atol([TOL])
            .rhs_implicit(rhs, rhs_jac)
            .init(init, 4)
            .root(root, 1)
            .reset(reset)
            .build()
            .expect("diffsol primal problem")
    };
}

/// The state at `T`: `(x, y, vx, vy)`.
pub fn primal() -> [f64; 4] {
    let problem = primal_problem!();
    let mut solver = problem.tsit45().expect("tsit45");
    let (ys, _ts, _stop) = solver.solve(T_END).expect("diffsol primal solve");
    let last = ys.ncols() - 1;
    let col = ys.column(last).into_owned();
    std::array::from_fn(|i| col.get_index(i))
}

/// The full Jacobian `d x(T) / d p` by forward sensitivities (error-controlled,
/// like ours with `Method::Forward`), 4 x 7 in diffsol's parameter order,
/// row-major.
pub fn forward_jacobian() -> [[f64; NPARAMS]; 4] {
    let problem = OdeBuilder::<M>::new()
        .p(params())
        .rtol(TOL)
        .atol([TOL])
        .sens_rtol(TOL)
        .sens_atol([TOL])
        .rhs_sens_implicit(rhs, rhs_jac, rhs_sens)
        .init_sens(init, init_sens, 4)
        .root_sens_implicit(root, root_jac, root_sens, 1)
        .reset_sens_implicit(reset, reset_jac, reset_sens)
        .build()
        .expect("diffsol sensitivity problem");
    let mut solver = problem.tsit45_sens().expect("tsit45_sens");
    let (_ys, sens, _stop) = solver
        .solve_dense_sensitivities(&[T_END])
        .expect("diffsol forward sensitivities");
    let mut jac = [[0.0; NPARAMS]; 4];
    for (j, s) in sens.iter().enumerate() {
        for (i, row) in jac.iter_mut().enumerate() {
            row[j] = s.column(0).into_owned().get_index(i);
        }
    }
    jac
}

/// The gradient of `x(T)` by diffsol's adjoint (checkpointed forward pass,
/// backward pass with reset corrections), in diffsol's parameter order.
pub fn adjoint_gradient() -> [f64; NPARAMS] {
    let problem = OdeBuilder::<M>::new()
        .p(params())
        .rtol(TOL)
        .atol([TOL])
        .rhs_adjoint_implicit(rhs, rhs_jac, rhs_adjoint, rhs_sens_adjoint)
        .init_adjoint(init, init_sens_adjoint, 4)
        .out_adjoint_implicit(out, out_jac, out_adjoint, zero_adjoint, 1)
        .root_adjoint_implicit(root, root_jac, root_adjoint, zero_adjoint, 1)
        .reset_adjoint_implicit(reset, reset_jac, reset_adjoint, reset_sens_adjoint)
        .build()
        .expect("diffsol adjoint problem");
    let mut solver = problem.tsit45().expect("tsit45");
    let (checkpointer, _ys, _ts, _stop) = solver
        .solve_with_checkpointing(T_END, None)
        .expect("diffsol checkpointed forward pass");
    let adjoint = problem
        .tsit45_solver_adjoint(checkpointer, Some(solver), None)
        .expect("tsit45 adjoint");
    let ctx = *problem.context();
    let mut dgdu = <M as Matrix>::zeros(1, 1, ctx);
    dgdu.set_index(0, 0, 1.0);
    let (state, _) = adjoint
        .solve_adjoint_backwards_pass(&[T_END], &[&dgdu])
        .expect("diffsol adjoint backward pass");
    let sg = state.as_ref().sg;
    std::array::from_fn(|j| sg.get_index(j))
}
