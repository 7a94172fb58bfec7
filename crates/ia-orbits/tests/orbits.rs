//! Periodic orbits against independent references: the rimless wheel's
//! closed form (and its derivatives, differentiated by hand), finite
//! differences of re-solved orbits, and the slip-hopper's monodromy against
//! finite differences of plain simulations.

use ia_core::HybridSystem;
use ia_events::Problem;
use ia_orbits::{periodic_orbit, OrbitError, OrbitOptions, PeriodicOrbit};
use nalgebra::{DMatrix, DVector};

use rstest::rstest;

const G: f64 = 9.81;
const L: f64 = 1.0;

fn wheel() -> HybridSystem {
    ia_models::by_name("rimless-wheel").unwrap().system()
}

fn wheel_orbit(system: &HybridSystem, params: [f64; 4], k: usize) -> PeriodicOrbit {
    let [_, _, alpha, gamma] = params;
    let options = OrbitOptions::new(10.0).with_events_per_period(k);
    periodic_orbit(system, "step", &[gamma - alpha, 1.2], &params, &options).unwrap()
}

/// The closed form: `omega* = cot(2 alpha) sqrt(4 (g/l) sin(alpha) sin(gamma))`.
fn steady_speed(g: f64, l: f64, alpha: f64, gamma: f64) -> f64 {
    (4.0 * g / l * alpha.sin() * gamma.sin()).sqrt() / (2.0 * alpha).tan()
}

fn nontrivial(orbit: &PeriodicOrbit) -> usize {
    let i: Vec<usize> = (0..orbit.multipliers.len())
        .filter(|&i| !orbit.multipliers[i].trivial)
        .collect();
    assert_eq!(i.len(), 1, "{:?}", orbit.multipliers);
    i[0]
}

/// Reference: the closed form of the step-to-step map
/// `omega' = cos(2 alpha) sqrt(omega^2 + 4 (g/l) sin(alpha) sin(gamma))`.
#[rstest]
#[case(std::f64::consts::FRAC_PI_8, 0.08, 1)]
#[case(0.3, 0.05, 1)]
#[case(0.25, 0.06, 1)]
#[case(std::f64::consts::FRAC_PI_8, 0.08, 2)]
fn rimless_wheel_fixed_point_and_multiplier_match_the_closed_form(
    #[case] alpha: f64,
    #[case] gamma: f64,
    #[case] k: usize,
) {
    let system = wheel();
    let orbit = wheel_orbit(&system, [G, L, alpha, gamma], k);
    assert!((orbit.fixed_point[0] - (gamma - alpha)).abs() < 1e-9);
    let speed = steady_speed(G, L, alpha, gamma);
    assert!((orbit.fixed_point[1] - speed).abs() < 1e-9, "{orbit:?}");
    // k steps: the multiplier of the k-fold map, (cos^2 2 alpha)^k.
    let want = (2.0 * alpha).cos().powi(2 * k as i32);
    let m = orbit.multipliers[nontrivial(&orbit)];
    assert!(
        (m.re - want).abs() < 1e-9 && m.im.abs() < 1e-12,
        "{m:?} vs {want}"
    );
    let trivial = orbit.multipliers.iter().find(|m| m.trivial).unwrap();
    assert!((trivial.re - 1.0).abs() < 1e-9 && trivial.im == 0.0);
    // sorted by modulus, largest first
    assert!(orbit.multipliers[0].modulus() >= orbit.multipliers[1].modulus());
    assert!(orbit.residual < 1e-10);
}

/// Reference: the closed form differentiated by hand, with
/// `K = 4 (g/l) sin(alpha) sin(gamma)`, `omega* = cot(2 alpha) sqrt(K)`:
/// `domega/dg = omega / 2g`, `domega/dl = -omega / 2l`,
/// `domega/dgamma = omega cot(gamma) / 2`,
/// `domega/dalpha = omega (cot(alpha) / 2 - 2 / (sin(2 alpha) cos(2 alpha)))`;
/// `theta* = gamma - alpha`; `d cos^2(2 alpha) / dalpha = -2 sin(4 alpha)`.
#[rstest]
#[case(std::f64::consts::FRAC_PI_8, 0.08)]
#[case(0.3, 0.05)]
fn rimless_wheel_derivatives_match_the_differentiated_closed_form(
    #[case] alpha: f64,
    #[case] gamma: f64,
) {
    let system = wheel();
    let orbit = wheel_orbit(&system, [G, L, alpha, gamma], 1);
    let sens = orbit.sensitivities.as_ref().expect("an isolated orbit");
    let omega = steady_speed(G, L, alpha, gamma);
    let domega = [
        omega / (2.0 * G),
        -omega / (2.0 * L),
        omega * (0.5 / alpha.tan() - 2.0 / ((2.0 * alpha).sin() * (2.0 * alpha).cos())),
        omega / (2.0 * gamma.tan()),
    ];
    let dtheta = [0.0, 0.0, -1.0, 1.0];
    for j in 0..4 {
        let (got_theta, got_omega) = (sens.fixed_point[(0, j)], sens.fixed_point[(1, j)]);
        assert!(
            (got_theta - dtheta[j]).abs() < 1e-9,
            "dtheta/dp{j} {got_theta}"
        );
        assert!(
            (got_omega - domega[j]).abs() < 1e-8 * domega[j].abs().max(1.0),
            "domega/dp{j} {got_omega} vs {}",
            domega[j]
        );
    }
    let i = nontrivial(&orbit);
    let dmultiplier = [0.0, 0.0, -2.0 * (4.0 * alpha).sin(), 0.0];
    for (j, want) in dmultiplier.iter().enumerate() {
        let got = sens.multipliers[i][j];
        assert!(
            (got.re - want).abs() < 1e-8,
            "dlambda/dp{j} {got:?} vs {want}"
        );
        assert_eq!(got.im, 0.0);
    }
    let t = orbit.multipliers.iter().position(|m| m.trivial).unwrap();
    assert!(sens.multipliers[t]
        .iter()
        .all(|d| d.re == 0.0 && d.im == 0.0));
}

/// Reference: the fourth-order central difference of the period of orbits
/// re-solved by Newton at shifted parameters (no derivative code involved).
#[test]
fn rimless_wheel_period_derivative_matches_finite_differences_of_resolved_orbits() {
    let system = wheel();
    let base = [G, L, std::f64::consts::FRAC_PI_8, 0.08];
    let orbit = wheel_orbit(&system, base, 1);
    let sens = orbit.sensitivities.as_ref().unwrap();
    for j in 0..4 {
        let h = 1e-4 * base[j].abs().max(0.1);
        let period = |s: f64| {
            let mut p = base;
            p[j] += s * h;
            wheel_orbit(&system, p, 1).period
        };
        let fd = (period(-2.0) - period(2.0) + 8.0 * (period(1.0) - period(-1.0))) / (12.0 * h);
        assert!(
            (sens.period[j] - fd).abs() < 1e-7 * fd.abs().max(1.0),
            "dT/dp{j} {} vs {fd}",
            sens.period[j]
        );
    }
}

/// `P(x0)` and `T(x0)` from a plain simulation (no sensitivities).
fn plain_return(
    system: &HybridSystem,
    section: &str,
    x0: &[f64],
    p: &[f64],
) -> (DVector<f64>, f64) {
    let mut problem = Problem::new(system, x0.to_vec(), p.to_vec(), 5.0)
        .with_solver(ia_events::SolverChoice::dopri5(1e-12))
        // Wide enough for the perturbed starts: a leg stretched by 1e-4 at
        // touchdown still starts in stance, shortening.
        .with_start_band(1e-3)
        .with_stop_after(section, 1)
        .unwrap();
    let index = system
        .transition_names()
        .iter()
        .position(|t| t == section)
        .unwrap();
    problem.initial_mode = system.transitions()[index].to;
    let trajectory = ia_events::simulate(&problem).unwrap();
    let last = trajectory.events.len() - 1;
    (
        DVector::from_column_slice(trajectory.state_after(last)),
        trajectory.events[last].time,
    )
}

/// The orbit's `M` and `DP` against fourth-order central differences of
/// plain simulations of one period along every state direction `d`:
/// `M d = DP d - f+ (dT . d)` (within `1e-6`); returns the differenced `M`.
fn differenced_monodromy(
    system: &HybridSystem,
    orbit: &PeriodicOrbit,
    params: &[f64],
) -> DMatrix<f64> {
    let n = system.state_dim();
    let section = orbit.section.as_str();
    let x = DVector::from_column_slice(&orbit.fixed_point);
    let (state, period) = plain_return(system, section, x.as_slice(), params);
    assert!((period - orbit.period).abs() < 1e-10);
    let mut f_plus = DVector::zeros(n);
    let mode_after = system
        .transitions()
        .iter()
        .find(|t| t.name == section)
        .unwrap()
        .to;
    system.modes()[mode_after]
        .flow
        .rate(period, state.as_slice(), params, f_plus.as_mut_slice());
    let h = 1e-4;
    let mut fd_monodromy = DMatrix::zeros(n, n);
    for i in 0..n {
        let mut d = DVector::zeros(n);
        d[i] = 1.0;
        let at = |s: f64| plain_return(system, section, (&x + s * h * &d).as_slice(), params);
        let ((pm2, tm2), (pm1, tm1), (pp1, tp1), (pp2, tp2)) =
            (at(-2.0), at(-1.0), at(1.0), at(2.0));
        let dp_d = (pm2 - pp2 + 8.0 * (pp1 - pm1)) / (12.0 * h);
        let dt_d = (tm2 - tp2 + 8.0 * (tp1 - tm1)) / (12.0 * h);
        let reference = &dp_d - &f_plus * dt_d;
        let got = &orbit.monodromy * &d;
        assert!(
            (&got - &reference).amax() < 1e-6 * reference.amax().max(1.0),
            "M e{i} {got} vs {reference}"
        );
        assert!((&orbit.return_map_jacobian * &d - &dp_d).amax() < 1e-6 * dp_d.amax().max(1.0));
        fd_monodromy.set_column(i, &reference);
    }
    fd_monodromy
}

/// A running gait of the slip-hopper (`theta_td = 0.38`, the default
/// leg), found from the default run's first touchdown with the position
/// `x` and the foot `xf` advancing. References: a plain simulation of one
/// period from the fixed point (every other state returns, `x` and `xf`
/// advance by the reported step, to `1e-9`); the symmetric stance a
/// periodic SLIP gait must have (liftoff at the touchdown height with the
/// same `vx` and the opposite `vy`, to `1e-8`); `M` and `DP` against
/// differences along every direction; the stance multiplier against the
/// largest eigenvalue of the differenced `M`.
#[test]
fn slip_hopper_running_gait_advances_and_matches_finite_differences() {
    let system = ia_models::by_name("slip-hopper").unwrap().system();
    let params = [80.0, 20000.0, 1.0, 9.81, 0.38];
    let touchdown = [0.48238, 0.92866, 4.0, -1.18305, 0.85330];
    let options = OrbitOptions::new(3.0).with_advancing(vec![0, 4]);
    let orbit = periodic_orbit(&system, "touchdown", &touchdown, &params, &options).unwrap();
    let x = &orbit.fixed_point;
    let (state, _) = plain_return(&system, "touchdown", x, &params);
    for i in [1, 2, 3] {
        assert!((state[i] - x[i]).abs() < 1e-9, "{i}: {state} vs {x:?}");
    }
    assert_eq!(orbit.advancing, ["x", "xf"]);
    for (k, c) in [0, 4].into_iter().enumerate() {
        assert!((state[c] - x[c] - orbit.advance[k]).abs() < 1e-9);
    }
    assert!(orbit.advance[0] > 1.5, "a step of {} m", orbit.advance[0]);
    // The symmetric stance.
    let problem = Problem::new(&system, x.clone(), params.to_vec(), 3.0)
        .with_solver(ia_events::SolverChoice::dopri5(1e-12))
        .with_start_band(1e-6)
        .with_mode("stance")
        .unwrap()
        .with_stop_after("liftoff", 1)
        .unwrap();
    let run = ia_events::simulate(&problem).unwrap();
    let liftoff = run.state_after(run.events.len() - 1);
    assert!((liftoff[1] - params[2] * params[4].cos()).abs() < 1e-8);
    assert!((liftoff[2] - x[2]).abs() < 1e-8 && (liftoff[3] + x[3]).abs() < 1e-8);
    let fd_monodromy = differenced_monodromy(&system, &orbit, &params);
    let mut fd: Vec<f64> = fd_monodromy
        .complex_eigenvalues()
        .iter()
        .map(|z| z.norm())
        .collect();
    fd.sort_by(|a, b| b.total_cmp(a));
    let stance = &orbit.multipliers[0];
    assert!(stance.re > 1.01 && !stance.trivial && !stance.advancing);
    assert!((stance.re - fd[0]).abs() < 1e-6, "{stance:?} vs {fd:?}");
    let flagged =
        |f: fn(&ia_orbits::Multiplier) -> bool| orbit.multipliers.iter().filter(|m| f(m)).count();
    assert_eq!((flagged(|m| m.trivial), flagged(|m| m.advancing)), (1, 1));
    // Energy is conserved: a family of gaits, so no parameter derivatives.
    assert!(orbit
        .sensitivities_unavailable
        .unwrap()
        .contains("not isolated"));
}

/// The vertical hopping orbit of the slip-hopper (`theta_td = 0`, no
/// forward speed). Reference for the monodromy: `M d = DP d - f+ (dT . d)`
/// with `DP d` and `dT . d` by fourth-order central differences of plain
/// simulations of one period along `d`.
///
/// Every state direction is compared. Along `x - xf` and `vx` the stance
/// tilts and the leg lifts off flatter than it touched down, below the
/// touchdown height: the touchdown guard starts that flight beyond zero and
/// heading back, so it is disarmed and fires when the mass falls through
/// the touchdown height again (docs/method.md, section 3, rule 4), and the
/// return map is smooth there too.
///
/// Two sections: touchdown, and liftoff from a guess 2 cm below the
/// touchdown height and rising, whose first period starts with the
/// touchdown guard disarmed (a start band declares the start a state right
/// after an event; without that rule the guess is refused as starting
/// beyond the guard).
#[rstest]
#[case::touchdown("touchdown", [0.0, 1.0, 0.0, -2.0, 0.0])]
#[case::liftoff_from_below("liftoff", [0.0, 0.98, 0.0, 2.0, 0.0])]
fn slip_hopper_monodromy_and_multipliers_match_finite_differences(
    #[case] section: &str,
    #[case] guess: [f64; 5],
) {
    let system = ia_models::by_name("slip-hopper").unwrap().system();
    let params = [80.0, 20000.0, 1.0, 9.81, 0.0];
    let orbit = periodic_orbit(&system, section, &guess, &params, &OrbitOptions::new(5.0)).unwrap();
    let fd_monodromy = differenced_monodromy(&system, &orbit, &params);
    // M splits into a vertical block (y, vy) and a horizontal one (x, vx,
    // xf). The vertical block carries the trivial multiplier and the energy
    // family's: a Jordan block at 1, so its trace and determinant (well
    // conditioned) are compared, both 2 and 1.
    let block = |m: &DMatrix<f64>, entries: &[usize]| {
        DMatrix::from_fn(entries.len(), entries.len(), |r, c| {
            m[(entries[r], entries[c])]
        })
    };
    let (vertical, vertical_fd) = (
        block(&orbit.monodromy, &[1, 3]),
        block(&fd_monodromy, &[1, 3]),
    );
    let (trace, det) = (vertical.trace(), vertical.determinant());
    assert!((trace - vertical_fd.trace()).abs() < 1e-6 && (trace - 2.0).abs() < 1e-6);
    assert!((det - vertical_fd.determinant()).abs() < 1e-6 && (det - 1.0).abs() < 1e-6);
    // The horizontal block's eigenvalues are distinct (the tilt's growth,
    // the translation's 1, and 0 for the foot placed by the section): the
    // largest multiplier, the tilt's, against the finite-difference block's.
    let mut horizontal_fd: Vec<f64> = block(&fd_monodromy, &[0, 2, 4])
        .complex_eigenvalues()
        .iter()
        .map(|z| z.norm())
        .collect();
    horizontal_fd.sort_by(|a, b| b.total_cmp(a));
    let tilt = &orbit.multipliers[0];
    assert!(tilt.re > 1.5 && tilt.im == 0.0, "{tilt:?}");
    assert!(
        (tilt.re - horizontal_fd[0]).abs() < 1e-6,
        "{tilt:?} vs {horizontal_fd:?}"
    );
    assert_eq!(orbit.multipliers.iter().filter(|m| m.trivial).count(), 1);
    // A family of orbits: no parameter derivatives, and the reason why.
    assert!(orbit.sensitivities.is_none());
    assert!(orbit
        .sensitivities_unavailable
        .unwrap()
        .contains("not isolated"));
}

#[test]
fn newton_failure_is_a_clear_error() {
    let system = wheel();
    let (alpha, gamma) = (std::f64::consts::FRAC_PI_8, 0.08);
    let options = OrbitOptions {
        max_iterations: 1,
        ..OrbitOptions::new(10.0)
    };
    let e = periodic_orbit(
        &system,
        "step",
        &[gamma - alpha, 3.0],
        &[G, L, alpha, gamma],
        &options,
    )
    .unwrap_err();
    assert_eq!(e.kind(), "no_convergence");
    let text = e.to_string();
    for part in [
        "after 1 iterations",
        "residual",
        "max_iterations",
        "starting guess",
    ] {
        assert!(text.contains(part), "{text}");
    }
    let OrbitError::NoConvergence { residual, .. } = e else {
        unreachable!()
    };
    assert!(residual > 1e-6 && residual.is_finite());
}

#[test]
fn a_guess_that_never_returns_and_an_unknown_section_are_clear_errors() {
    let system = wheel();
    let (alpha, gamma) = (std::f64::consts::FRAC_PI_8, 0.08);
    let params = [G, L, alpha, gamma];
    // Rolling back uphill: the next spoke never strikes.
    let e = periodic_orbit(
        &system,
        "step",
        &[gamma - alpha, -2.0],
        &params,
        &OrbitOptions::new(3.0),
    )
    .unwrap_err();
    assert_eq!(e.kind(), "no_return", "{e}");
    assert!(e.to_string().contains("max_period = 3"), "{e}");
    assert!(
        e.to_string().contains("omega: -2}"),
        "the state by name: {e}"
    );
    let e = periodic_orbit(
        &system,
        "stride",
        &[gamma - alpha, 1.2],
        &params,
        &OrbitOptions::new(3.0),
    )
    .unwrap_err();
    assert_eq!(e.kind(), "unknown_name");
    assert!(e.to_string().contains("step"), "{e}");
    let e = periodic_orbit(
        &system,
        "step",
        &[gamma - alpha, 1.2],
        &params,
        &OrbitOptions::new(3.0).with_events_per_period(0),
    )
    .unwrap_err();
    assert!(e.to_string().contains("events_per_period"), "{e}");
}

/// The thermostat's limit cycle, through the section just after
/// `switch_off` (`T = Thi`, cooling). Reference: the closed-form period
/// `T* = (ln(A/B) + ln(C/D)) / a` with `A = Thi - Tout`, `B = Tlo - Tout`,
/// `C = Tout + b/a - Tlo`, `D = Tout + b/a - Thi`, differentiated by hand.
/// The state is one-dimensional: `M` is the trivial multiplier alone and
/// `DP = M + f+ dT/dx0 = 0` (every start returns to `Thi`), which checks the
/// `f+ dT/dx0` term across a section whose flow after differs from the one
/// before.
#[rstest]
#[case([0.2, 5.0, 10.0, 19.0, 23.0])]
#[case([0.5, 16.0, -5.0, 18.0, 21.0])]
fn thermostat_period_and_its_derivatives_match_the_closed_form(#[case] params: [f64; 5]) {
    let system = ia_models::by_name("thermostat").unwrap().system();
    let [a, b, tout, tlo, thi] = params;
    let orbit = periodic_orbit(
        &system,
        "switch_off",
        &[thi + 0.5],
        &params,
        &OrbitOptions::new(50.0),
    )
    .unwrap();
    let (ca, cb, cc, cd) = (
        thi - tout,
        tlo - tout,
        tout + b / a - tlo,
        tout + b / a - thi,
    );
    let period = ((ca / cb).ln() + (cc / cd).ln()) / a;
    assert!((orbit.fixed_point[0] - thi).abs() < 1e-9);
    assert!(
        (orbit.period - period).abs() < 1e-9,
        "{} vs {period}",
        orbit.period
    );
    assert_eq!(orbit.multipliers.len(), 1);
    assert!(orbit.multipliers[0].trivial && (orbit.multipliers[0].re - 1.0).abs() < 1e-9);
    assert!(orbit.return_map_jacobian[(0, 0)].abs() < 1e-9);
    let sens = orbit.sensitivities.as_ref().unwrap();
    let dperiod = [
        -period / a - b / a.powi(3) * (1.0 / cc - 1.0 / cd),
        (1.0 / cc - 1.0 / cd) / (a * a),
        (-1.0 / ca + 1.0 / cb + 1.0 / cc - 1.0 / cd) / a,
        (-1.0 / cb - 1.0 / cc) / a,
        (1.0 / ca + 1.0 / cd) / a,
    ];
    for (j, want) in dperiod.iter().enumerate() {
        assert!(
            (sens.period[j] - want).abs() < 1e-8 * want.abs().max(1.0),
            "dT/dp{j} {} vs {want}",
            sens.period[j]
        );
        let want_x = if j == 4 { 1.0 } else { 0.0 };
        assert!((sens.fixed_point[(0, j)] - want_x).abs() < 1e-9);
        assert_eq!(sens.multipliers[0][j].re, 0.0);
    }
}

/// The thermostat's cycle in closed form: cooling from `Thi` to `Tlo`
/// towards `Tout` takes `ln((Thi - Tout) / (Tlo - Tout)) / a`, heating from
/// `Tlo` to `Thi` towards `Tout + b / a` takes
/// `ln((Tout + b/a - Tlo) / (Tout + b/a - Thi)) / a`.
fn thermostat_period(p: &[f64]) -> f64 {
    let [a, b, t_out, t_lo, t_hi] = p[..] else {
        unreachable!("five parameters")
    };
    let equilibrium = t_out + b / a;
    ((t_hi - t_out) / (t_lo - t_out)).ln() / a
        + ((equilibrium - t_lo) / (equilibrium - t_hi)).ln() / a
}

/// Reference: the closed form above, and for the derivatives its
/// fourth-order central difference. The thermostat's cycle through the
/// section `switch_off` (fixed point `T* = Thi`), by DOPRI5 at 1e-12 and
/// by the exact event-driven solver: the period and the fixed point to
/// `tol`, and `dT*/dp` of every parameter to 1e-8 (scaled).
#[rstest]
#[case::dopri5(ia_events::SolverChoice::dopri5(1e-12), 1e-10)]
#[case::exact_solver(ia_events::SolverChoice::Exact, 1e-13)]
fn the_thermostat_cycle_matches_its_closed_form(
    #[case] solver: ia_events::SolverChoice,
    #[case] tol: f64,
) {
    let system = ia_models::by_name("thermostat").unwrap().system();
    let p = [0.2, 5.0, 10.0, 19.0, 23.0];
    let mut options = OrbitOptions::new(10.0);
    options.solver = solver;
    let orbit = periodic_orbit(&system, "switch_off", &[23.0], &p, &options).unwrap();
    let period = thermostat_period(&p);
    assert!(
        (orbit.period - period).abs() <= tol * period,
        "{} vs {period}",
        orbit.period
    );
    assert!((orbit.fixed_point[0] - p[4]).abs() <= tol * p[4]);
    let sens = orbit.sensitivities.expect("period derivatives");
    for (j, &got) in sens.period.iter().enumerate() {
        let h = 1e-4 * p[j];
        let at = |k: f64| {
            let mut q = p;
            q[j] += k * h;
            thermostat_period(&q)
        };
        let want = (8.0 * (at(1.0) - at(-1.0)) - (at(2.0) - at(-2.0))) / (12.0 * h);
        assert!(
            (got - want).abs() <= 1e-8 * want.abs().max(1.0),
            "dT*/d{}: {got} vs {want}",
            system.param_names()[j]
        );
    }
}
