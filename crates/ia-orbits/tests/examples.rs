//! The example `rimless_wheel_slope` runs in the test suite: its sweep is
//! checked against the closed forms and its figure is written under the
//! target directory.

use crate::rimless_wheel_slope;

use rimless_wheel_slope::{closed_form_speed, draw, figure_path, sweep, ALPHAS};

/// Reference: `omega* = cot(2 alpha) sqrt(4 (g/l) sin(alpha) sin(gamma))`,
/// `lambda = cos^2(2 alpha)`, and `d omega*/d gamma = omega* cot(gamma) / 2`.
#[test]
fn rimless_wheel_slope_example_matches_the_closed_form_and_draws_its_figure() {
    let points = sweep(&ALPHAS, 5).unwrap();
    assert_eq!(points.len(), 10);
    for p in &points {
        let speed = closed_form_speed(p.alpha, p.gamma);
        assert!((p.speed - speed).abs() < 1e-9, "{p:?}");
        assert!(
            (p.multiplier - (2.0 * p.alpha).cos().powi(2)).abs() < 1e-9,
            "{p:?}"
        );
        let dspeed = speed / (2.0 * p.gamma.tan());
        assert!((p.dspeed_dgamma - dspeed).abs() < 1e-8 * dspeed, "{p:?}");
    }
    let path = figure_path();
    draw(&path, &points, &ALPHAS).unwrap();
    let svg = std::fs::read_to_string(&path).unwrap();
    assert!(svg.contains("<svg") && svg.contains("Rimless wheel"));
}
