//! A user-defined bouncing ball: the model in a dozen lines, then its
//! sensitivities by forward mode and by the adjoint, and the first impact
//! time's gradient next to its closed form.
//!
//! `cargo run -p ia-adjoint --example bouncing_ball`

use ia_adjoint::prelude::*;

/// h' = v, v' = -g.
struct Fall;
impl FlowFn for Fall {
    fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], d: &mut [S]) {
        d[0] = x[1];
        d[1] = -p[0];
    }
}

/// Impact when h falls through 0.
struct Floor;
impl GuardFn for Floor {
    fn direction(&self) -> Direction {
        Direction::Falling
    }
    fn value<S: Scalar>(&self, _t: S, x: &[S], _p: &[S]) -> S {
        x[0]
    }
}

/// v <- -e v.
struct Bounce;
impl ResetFn for Bounce {
    fn apply<S: Scalar>(&self, _t: S, x: &[S], p: &[S], a: &mut [S]) {
        a[0] = x[0];
        a[1] = -p[1] * x[1];
    }
}

fn main() -> Result<(), HybridError> {
    let ball = HybridSystem::builder(&["h", "v"], &["g", "e"])
        .mode("flight", Autodiff(Fall))
        .transition(
            "bounce",
            FromMode("flight"),
            ToMode("flight"),
            Autodiff(Floor),
            Autodiff(Bounce),
        )
        .build()?;
    let run = Problem::new(&ball, vec![1.0, 0.0], vec![9.81, 0.8], 2.0)
        .with_solver(SolverChoice::dopri5(1e-12));

    let forward = jacobian(&run, Method::Forward)?;
    let adjoint = jacobian(&run, Method::Adjoint)?;
    println!("impacts at {:?}", forward.trajectory.event_times());
    println!("final state (h, v) = {:?}", forward.trajectory.final_state);
    println!("columns: {:?}", forward.wrt);
    println!("d(h, v)(T)/d(theta), forward:{}", forward.final_jacobian);
    println!("d(h, v)(T)/d(theta), adjoint:{}", adjoint.final_jacobian);

    // t1 = (v0 + sqrt(v0^2 + 2 g h0)) / g, differentiated at v0 = 0.
    let (g, h0) = (9.81f64, 1.0f64);
    let t1 = (2.0 * h0 / g).sqrt();
    let exact = [1.0 / (g * t1), 1.0 / g, -t1 / (2.0 * g), 0.0];
    println!(
        "dt1/d(h0, v0, g, e): library {:?}",
        forward
            .event_time_gradients
            .row(0)
            .iter()
            .collect::<Vec<_>>()
    );
    println!("                     closed form {exact:?}");
    println!(
        "dt1/dh0 by name: {} (closed form {})",
        forward.event_time_derivative(0, "initial.h")?,
        exact[0]
    );

    let grad = gradient(&run, &FinalComponent(0))?;
    println!(
        "dh(T)/d(h0, v0) = {:?}, dh(T)/d(g, e) = {:?}",
        grad.initial_state, grad.params
    );
    println!(
        "dh(T)/de by name: gradient {}, jacobian {}",
        grad.derivative("param.e")?,
        adjoint.final_derivative("h", "param.e")?
    );
    Ok(())
}
