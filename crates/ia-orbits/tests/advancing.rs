//! Orbits whose position advances each period ([`OrbitOptions::advancing`])
//! against independent references.
//!
//! A ball kicked upwards at every bounce on a moving belt (states `x, y,
//! vy`; parameters `v0, g, e, c`): `x' = v0, y' = vy, vy' = -g`; `bounce`
//! when `y` falls through 0, reset `vy <- -e vy + c`. Its height and speed
//! repeat while `x` advances by `v0 T` each period. By hand, the bounce map
//! of the speed just after a bounce is `vy' = e vy + c`: fixed point `vy* =
//! c / (1 - e)`, period `T* = 2 vy* / g`, multiplier `e` (with the trivial
//! one and the belt's shift, both 1), and their derivatives.

use ia_core::{
    Autodiff, Direction, FlowFn, FromMode, GuardFn, HybridSystem, ResetFn, Scalar, ToMode,
};
use ia_orbits::{periodic_orbit, OrbitOptions};

struct Belt;
impl FlowFn for Belt {
    fn rate<S: Scalar>(&self, _t: S, x: &[S], p: &[S], dxdt: &mut [S]) {
        dxdt[0] = p[0];
        dxdt[1] = x[2];
        dxdt[2] = -p[1];
    }
}

struct Floor;
impl GuardFn for Floor {
    fn direction(&self) -> Direction {
        Direction::Falling
    }
    fn value<S: Scalar>(&self, _t: S, x: &[S], _p: &[S]) -> S {
        x[1]
    }
}

struct Kick;
impl ResetFn for Kick {
    fn apply<S: Scalar>(&self, _t: S, x: &[S], p: &[S], x_after: &mut [S]) {
        x_after[0] = x[0];
        x_after[1] = x[1];
        x_after[2] = -p[2] * x[2] + p[3];
    }
}

fn kicked_ball() -> HybridSystem {
    HybridSystem::builder(&["x", "y", "vy"], &["v0", "g", "e", "c"])
        .mode("air", Autodiff(Belt))
        .transition(
            "bounce",
            FromMode("air"),
            ToMode("air"),
            Autodiff(Floor),
            Autodiff(Kick),
        )
        .build()
        .unwrap()
}

const PARAMS: [f64; 4] = [2.0, 9.81, 0.5, 3.0];

#[test]
fn a_kicked_ball_on_a_belt_matches_its_closed_form() {
    let system = kicked_ball();
    let [v0, g, e, c] = PARAMS;
    let guess = [0.3, 0.0, 5.0];
    let options = OrbitOptions::new(5.0).with_advancing(vec![0]);
    let orbit = periodic_orbit(&system, "bounce", &guess, &PARAMS, &options).unwrap();
    let speed = c / (1.0 - e);
    let period = 2.0 * speed / g;
    assert_eq!(
        orbit.fixed_point[0], guess[0],
        "the first advancing state stays"
    );
    assert!(orbit.fixed_point[1].abs() < 1e-12);
    assert!(
        (orbit.fixed_point[2] - speed).abs() < 1e-9,
        "{:?}",
        orbit.fixed_point
    );
    assert!((orbit.period - period).abs() < 1e-9);
    assert_eq!(orbit.advancing, ["x"]);
    assert!((orbit.advance[0] - v0 * period).abs() < 1e-9);
    // e, and two multipliers 1: along the flow and the belt's shift.
    let flags: Vec<(bool, bool)> = orbit
        .multipliers
        .iter()
        .map(|m| (m.trivial, m.advancing))
        .collect();
    assert_eq!(flags.iter().filter(|f| f.0).count(), 1);
    assert_eq!(flags.iter().filter(|f| f.1).count(), 1);
    let bounce = orbit
        .multipliers
        .iter()
        .position(|m| !m.trivial && !m.advancing)
        .unwrap();
    assert!((orbit.multipliers[bounce].re - e).abs() < 1e-9);
    for m in orbit
        .multipliers
        .iter()
        .filter(|m| m.trivial || m.advancing)
    {
        assert!((m.re - 1.0).abs() < 1e-9 && m.im.abs() < 1e-9, "{m:?}");
    }
    // Derivatives by hand, over (v0, g, e, c).
    let sens = orbit.sensitivities.as_ref().expect("an isolated orbit");
    let d_speed = [0.0, 0.0, c / (1.0 - e).powi(2), 1.0 / (1.0 - e)];
    for (j, d) in d_speed.iter().enumerate() {
        let d_period = 2.0 * d / g - if j == 1 { 2.0 * speed / (g * g) } else { 0.0 };
        assert_eq!(sens.fixed_point[(0, j)], 0.0);
        assert!((sens.fixed_point[(2, j)] - d).abs() < 1e-8, "dvy*/dp{j}");
        assert!((sens.period[j] - d_period).abs() < 1e-8, "dT*/dp{j}");
        let d_multiplier = if j == 2 { 1.0 } else { 0.0 };
        assert!(
            (sens.multipliers[bounce][j].re - d_multiplier).abs() < 1e-6,
            "de/dp{j}: {:?}",
            sens.multipliers[bounce][j]
        );
    }
}

/// Without `advancing` the position cannot return: a clear error. Listing
/// a state the dynamics depend on is refused, naming what moved.
#[test]
fn a_position_that_advances_must_be_declared_and_must_be_a_symmetry() {
    let system = kicked_ball();
    let guess = [0.3, 0.0, 5.0];
    let e =
        periodic_orbit(&system, "bounce", &guess, &PARAMS, &OrbitOptions::new(5.0)).unwrap_err();
    assert_eq!(e.kind(), "no_convergence", "{e}");
    assert!(
        e.to_string().contains(r#"list it as "advancing": ["x"]"#),
        "{e}"
    );
    let options = OrbitOptions::new(5.0).with_advancing(vec![0, 2]);
    let e = periodic_orbit(&system, "bounce", &guess, &PARAMS, &options).unwrap_err();
    assert_eq!(e.kind(), "invalid_option", "{e}");
    let text = e.to_string();
    assert!(
        text.contains("advancing") && text.contains("'vy'"),
        "{text}"
    );
    for bad in [vec![3], vec![0, 0], vec![0, 1, 2]] {
        let options = OrbitOptions::new(5.0).with_advancing(bad.clone());
        let e = periodic_orbit(&system, "bounce", &guess, &PARAMS, &options).unwrap_err();
        assert_eq!(e.kind(), "invalid_option", "{bad:?}: {e}");
    }
}
