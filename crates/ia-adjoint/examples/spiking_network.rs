//! A network of 1,000 leaky integrate-and-fire neurons by the exact
//! event-driven solver (`SolverChoice::Exact`): the run, then the
//! sensitivity of the last spike time and of one neuron's final potential
//! to the membrane time constant, next to the same by DOPRI5 at 1e-12 and
//! to a central finite difference through the exact solver; then the
//! gradient of `t_last + V0(T)` with respect to every parameter (drives,
//! `tau`, the thresholds and the ten thousand weights) by one adjoint pass
//! through the exact solver, its `tau` entry against the forward column.
//!
//! `cargo run --release -p ia-adjoint --example spiking_network`

use ia_adjoint::prelude::*;
use ia_adjoint::{gradient, jacobian_wrt};
use ia_models::{LifNetwork, Model};
use std::time::Instant;

fn main() -> Result<(), HybridError> {
    let net = LifNetwork::new(1000)?;
    let (system, spec) = (net.system(), net.spec());
    let t_end = 0.05;
    let tau = spec.param_index("tau")?;
    let problem = |params: Vec<f64>, solver| {
        Problem::new(&system, spec.default_state(), params, t_end).with_solver(solver)
    };
    let exact = problem(spec.default_params(), SolverChoice::Exact);
    let stepped = problem(spec.default_params(), SolverChoice::dopri5(1e-12));

    let clock = Instant::now();
    let run = ia_events::simulate(&exact)?;
    println!(
        "{} neurons, {} spikes to t = {t_end} s in {:.1} ms (exact solver, no steps)",
        net.size(),
        run.events.len(),
        clock.elapsed().as_secs_f64() * 1e3
    );

    let wrt = ["param.tau"];
    let clock = Instant::now();
    let by_exact = jacobian_wrt(&exact, Method::Forward, &wrt)?;
    let exact_ms = clock.elapsed().as_secs_f64() * 1e3;
    let clock = Instant::now();
    let by_dopri5 = jacobian_wrt(&stepped, Method::Forward, &wrt)?;
    let dopri5_ms = clock.elapsed().as_secs_f64() * 1e3;
    let last = by_exact.trajectory.events.len() - 1;

    // Central difference through the exact solver (its runs are exact to
    // rounding, so only the difference's own error is left).
    let h = 1e-7 * spec.default_params()[tau];
    let shifted = |sign: f64| {
        let mut p = spec.default_params();
        p[tau] += sign * h;
        ia_events::simulate(&problem(p, SolverChoice::Exact))
    };
    let (up, down) = (shifted(1.0)?, shifted(-1.0)?);
    let fd_time = (up.events[last].time - down.events[last].time) / (2.0 * h);
    let fd_v0 = (up.final_state[0] - down.final_state[0]) / (2.0 * h);

    println!("d t_last / d tau: exact solver {:.10e} ({exact_ms:.1} ms), dopri5 {:.10e} ({dopri5_ms:.1} ms), finite difference {fd_time:.6e}",
        by_exact.event_time_gradients[(last, 0)],
        by_dopri5.event_time_gradients[(last, 0)]);
    println!(
        "d V0(T) / d tau:   exact solver {:.10e}, dopri5 {:.10e}, finite difference {fd_v0:.6e}",
        by_exact.final_jacobian[(0, 0)],
        by_dopri5.final_jacobian[(0, 0)]
    );
    let agree = |a: f64, b: f64, tol: f64| (a - b).abs() <= tol * b.abs().max(1e-3);
    assert!(agree(
        by_exact.event_time_gradients[(last, 0)],
        by_dopri5.event_time_gradients[(last, 0)],
        1e-6
    ));
    assert!(agree(
        by_exact.final_jacobian[(0, 0)],
        by_dopri5.final_jacobian[(0, 0)],
        1e-6
    ));
    assert!(agree(
        by_exact.event_time_gradients[(last, 0)],
        fd_time,
        1e-5
    ));
    assert!(agree(by_exact.final_jacobian[(0, 0)], fd_v0, 1e-5));

    // One backward pass gives the gradient with respect to every parameter.
    let loss = LossTerms::new(
        vec![
            Term {
                of: "event.-1.time".into(),
                weight: 1.0,
                target: None,
            },
            Term {
                of: "final.V0".into(),
                weight: 1.0,
                target: None,
            },
        ],
        &system,
    )?;
    let clock = Instant::now();
    let grad = gradient(&exact, &loss)?;
    let adjoint_ms = clock.elapsed().as_secs_f64() * 1e3;
    let (strongest, weight) = grad
        .params
        .iter()
        .enumerate()
        .filter(|(j, _)| system.param_names()[*j].starts_with('w'))
        .max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))
        .expect("the network has weights");
    let by_forward = by_exact.event_time_gradients[(last, 0)] + by_exact.final_jacobian[(0, 0)];
    println!(
        "d (t_last + V0(T)) / d theta, {} parameters, one adjoint pass ({adjoint_ms:.1} ms): d/d tau {:.10e} (forward {by_forward:.10e}); largest weight entry d/d {} = {weight:.4e}",
        grad.params.len(),
        grad.params[tau],
        system.param_names()[strongest]
    );
    assert!(agree(grad.params[tau], by_forward, 1e-9));
    Ok(())
}
