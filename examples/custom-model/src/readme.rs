//! The README's "A bouncing ball of your own", verbatim between the markers
//! (checked by crates/ia-adjoint/tests/custom_model.rs), so that the README's
//! code is known to compile against the public API.

// README begin
use ia_adjoint::prelude::*; // the builder, the traits, Problem, SolverChoice, jacobian, gradient

/// Runs the README's program.
#[rustfmt::skip]
pub fn bouncing_ball() -> Result<(), HybridError> {
    struct Fall;   // h' = v, v' = -g
    impl FlowFn for Fall { fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], d: &mut [S]) { d[0] = x[1]; d[1] = -p[0]; } }
    struct Floor;  // impact when h falls through 0
    impl GuardFn for Floor { fn direction(&self) -> Direction { Direction::Falling } fn value<S: Scalar>(&self, _t: S, x: &[S], _p: &[S]) -> S { x[0] } }
    struct Bounce; // v <- -e v
    impl ResetFn for Bounce { fn apply<S: Scalar>(&self, _t: S, x: &[S], p: &[S], a: &mut [S]) { a[0] = x[0]; a[1] = -p[1] * x[1]; } }

    let ball = HybridSystem::builder(&["h", "v"], &["g", "e"])
        .mode("flight", Autodiff(Fall))
        .transition("bounce", FromMode("flight"), ToMode("flight"), Autodiff(Floor), Autodiff(Bounce))
        .build()?;
    let run = Problem::new(&ball, vec![1.0, 0.0], vec![9.81, 0.8], 2.0).with_solver(SolverChoice::dopri5(1e-12));
    let sens = jacobian(&run, Method::Adjoint)?;   // d(h, v)(T) / d(h0, v0, g, e), and every dt*/dtheta
    let dh_de = sens.final_derivative("h", "param.e")?;         // read by name
    let dt1_dh0 = sens.event_time_derivative(0, "initial.h")?; // the first impact time
    println!("dh(T)/de = {dh_de}, dt1/dh0 = {dt1_dh0}");
    Ok(())
}
// README end
