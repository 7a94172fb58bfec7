//! A custom model written against the public API, as a user would: a ball
//! bouncing with restitution `e`, once generic (exact partials by dual
//! numbers) and once with hand-written partials checked by
//! `ia_core::check`. Its sensitivities are read by name and compared with
//! closed forms; the program exits non-zero when one disagrees.
//!
//! Dependencies: `ia-core` and `ia-adjoint` only (`ia-events` and
//! `nalgebra` come re-exported).

use ia_adjoint::nalgebra::DMatrix;
use ia_adjoint::prelude::*;
use ia_core::check::{check_partials, check_partials_against, sample_points_around};

mod readme;

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

/// v <- -e v, written with a constant on the left made a Scalar:
/// `-e v = (0 - e) v`.
struct Bounce;
impl ResetFn for Bounce {
    fn apply<S: Scalar>(&self, _t: S, x: &[S], p: &[S], a: &mut [S]) {
        a[0] = x[0];
        a[1] = (S::from(0.0) - p[1]) * x[1];
    }
}

/// The same flow with hand-written partials.
struct FallByHand;
impl Flow for FallByHand {
    fn rate(&self, _t: f64, x: &[f64], p: &[f64], d: &mut [f64]) {
        d[0] = x[1];
        d[1] = -p[0];
    }
    fn partials(&self, _t: f64, _x: &[f64], _p: &[f64], out: &mut FlowPartials) {
        out.x.copy_from(&flow_x());
        out.p[(1, 0)] = -1.0;
    }
}

/// `f_x` of the fall, named through the re-exported nalgebra.
fn flow_x() -> DMatrix<f64> {
    DMatrix::from_row_slice(2, 2, &[0.0, 1.0, 0.0, 0.0])
}

struct FloorByHand;
impl Guard for FloorByHand {
    fn direction(&self) -> Direction {
        Direction::Falling
    }
    fn value(&self, _t: f64, x: &[f64], _p: &[f64]) -> f64 {
        x[0]
    }
    fn partials(&self, _t: f64, _x: &[f64], _p: &[f64], out: &mut GuardPartials) {
        out.x[0] = 1.0;
    }
}

struct BounceByHand;
impl Reset for BounceByHand {
    fn apply(&self, _t: f64, x: &[f64], p: &[f64], a: &mut [f64]) {
        a[0] = x[0];
        a[1] = -p[1] * x[1];
    }
    fn partials(&self, _t: f64, x: &[f64], p: &[f64], out: &mut ResetPartials) {
        out.x[(0, 0)] = 1.0;
        out.x[(1, 1)] = -p[1];
        out.p[(1, 1)] = -x[1];
    }
}

fn generic_ball() -> Result<HybridSystem, HybridError> {
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
}

fn hand_ball() -> Result<HybridSystem, HybridError> {
    HybridSystem::builder(&["h", "v"], &["g", "e"])
        .mode("flight", FallByHand)
        .transition(
            "bounce",
            FromMode("flight"),
            ToMode("flight"),
            FloorByHand,
            BounceByHand,
        )
        .build()
}

/// `Err` naming the quantity when `found` is not within `tol` of `expected`.
fn agree(what: &str, found: f64, expected: f64, tol: f64) -> Result<(), String> {
    println!("{what}: {found} (expected {expected})");
    if (found - expected).abs() <= tol {
        Ok(())
    } else {
        Err(format!("{what}: {found}, expected {expected}"))
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ball = generic_ball()?;
    let by_hand = hand_ball()?;

    // The hand-written partials, against finite differences and against the
    // dual-number partials of the generic model.
    let points = sample_points_around(1, &[1.0, -0.5], &[9.81, 0.8], 2.0, 5, 7);
    let report = check_partials(&by_hand, &points, 1e-6)?;
    check_partials_against(&by_hand, &ball, &points, 1e-12)?;
    println!("partials: {} entries agree", report.entries_checked);

    let (g, e, h0) = (9.81, 0.8, 1.0);
    let run = Problem::new(&ball, vec![h0, 0.0], vec![g, e], 2.0)
        .with_solver(SolverChoice::dopri5(1e-12));
    let forward = jacobian(&run, Method::Forward)?;
    let adjoint = jacobian(&run, Method::Adjoint)?;

    // Closed forms from v0 = 0: the first impact at t1 = sqrt(2 h0 / g), so
    // dt1/dh0 = 1 / (g t1) and dt1/dg = -t1 / (2 g); the second at
    // t2 = t1 (1 + 2 e), so dt2/de = 2 t1.
    let t1 = (2.0f64 * h0 / g).sqrt();
    agree(
        "dt1/dh0",
        forward.event_time_derivative(0, "initial.h")?,
        1.0 / (g * t1),
        1e-9,
    )?;
    agree(
        "dt1/dg",
        forward.event_time_derivative(0, "param.g")?,
        -t1 / (2.0 * g),
        1e-9,
    )?;
    agree(
        "dt2/de",
        forward.event_time_derivative(1, "param.e")?,
        2.0 * t1,
        1e-8,
    )?;
    // Forward and adjoint agree entry by entry, read by name.
    for state in ["h", "v"] {
        for wrt in forward.wrt.iter() {
            agree(
                &format!("d{state}(T)/d{wrt}, adjoint vs forward"),
                adjoint.final_derivative(state, wrt)?,
                forward.final_derivative(state, wrt)?,
                1e-7,
            )?;
        }
    }
    // The gradient of one scalar loss by the adjoint, read by name.
    let grad = gradient(&run, &FinalComponent(0))?;
    agree(
        "dh(T)/de by gradient",
        grad.derivative("param.e")?,
        forward.final_derivative("h", "param.e")?,
        1e-7,
    )?;
    // A wrong name is an error that lists the valid ones.
    let wrong = forward.final_derivative("height", "param.e").unwrap_err();
    println!("{wrong}");
    if !wrong.to_string().contains("h, v") {
        return Err(format!("the error does not list the states: {wrong}").into());
    }
    readme::bouncing_ball()?;
    println!("custom model: all checks passed");
    Ok(())
}
