//! Closed-form references: the project's reference cases, hand derivations,
//! dual numbers against finite differences, and the naive baselines.

use ia_verify::baselines::{interpolated_crossing, naive_time_stepping, Ground};
use ia_verify::closed_form::{
    ball1d, closed_form, closed_form_model, closed_form_with_max_events, thermostat, two_ball,
    ClosedFormError, ClosedFormSolution, ThermostatMode, MODELS,
};
use rstest::rstest;
use serde_json::Value;

// ---------------------------------------------------------------------------
// The reference cases (crates/ia-verify/references/closed_form.json).

fn references() -> Value {
    serde_json::from_str(ia_verify::references::REFERENCE_JSON)
        .expect("closed_form.json is valid JSON")
}

/// Relative 1e-10, absolute 1e-12 where the reference is below 1e-3.
fn agrees(actual: f64, expected: f64) -> bool {
    if expected.abs() < 1e-3 {
        (actual - expected).abs() <= 1e-12
    } else {
        (actual - expected).abs() <= 1e-10 * expected.abs()
    }
}

/// Reads a `{name: value}` object in the order of `names`, checking that it
/// has exactly those names.
fn ordered(object: &Value, names: &[&str]) -> Vec<f64> {
    let map = object.as_object().expect("an object of named values");
    assert_eq!(
        map.len(),
        names.len(),
        "names {:?} vs {:?}",
        map.keys(),
        names
    );
    names
        .iter()
        .map(|n| {
            map[*n]
                .as_f64()
                .unwrap_or_else(|| panic!("{n} is a number"))
        })
        .collect()
}

#[rstest]
#[case::ball2d_flat_a("ball2d_flat_a")]
#[case::ball2d_flat_b("ball2d_flat_b")]
#[case::ball2d_bowl_a("ball2d_bowl_a")]
#[case::lif_a("lif_a")]
#[case::thermostat_a("thermostat_a")]
fn reproduces_reference_case(#[case] name: &str) {
    let all = references();
    let case = &all["cases"][name];
    let spec = closed_form_model(case["model"].as_str().unwrap()).unwrap();
    let x0 = ordered(&case["initial_state"], spec.states);
    let p = ordered(&case["params"], spec.params);
    let sol = closed_form(
        spec.name,
        &x0,
        &p,
        case["initial_mode"].as_str(),
        case["t_end"].as_f64().unwrap(),
    )
    .unwrap();

    let mut mismatches = Vec::new();
    let mut check = |what: String, actual: f64, expected: f64| {
        if !agrees(actual, expected) {
            mismatches.push(format!(
                "{what}: closed form {actual:e}, reference {expected:e}, difference {:e}",
                actual - expected
            ));
        }
    };

    let expected_final = ordered(&case["final_state"], spec.states);
    for (i, s) in spec.states.iter().enumerate() {
        check(format!("final {s}"), sol.final_state[i], expected_final[i]);
    }
    let times: Vec<f64> = case["event_times"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(
        sol.event_times.len(),
        times.len(),
        "{name}: number of events"
    );
    for (k, (&a, &e)) in sol.event_times.iter().zip(&times).enumerate() {
        check(format!("event time {k}"), a, e);
    }
    let mut entries = 0;
    for (state, row) in case["jacobian"].as_object().unwrap() {
        for (wrt, value) in row.as_object().unwrap() {
            let actual = sol
                .jacobian_entry(state, wrt)
                .unwrap_or_else(|| panic!("{name}: no column d{state}/d{wrt}"));
            check(
                format!("d {state} / d {wrt}"),
                actual,
                value.as_f64().unwrap(),
            );
            entries += 1;
        }
    }
    assert!(entries > 0);
    if let Some(rows) = case.get("event_time_jacobian") {
        for (k, row) in rows.as_object().unwrap() {
            let k: usize = k.parse().unwrap();
            for (wrt, value) in row.as_object().unwrap() {
                let actual = sol.event_time_derivative(k, wrt).unwrap();
                check(format!("d t{k} / d {wrt}"), actual, value.as_f64().unwrap());
            }
        }
    }
    assert!(mismatches.is_empty(), "{name}:\n{}", mismatches.join("\n"));
}

#[test]
fn the_reference_file_has_exactly_the_reproduced_cases() {
    let all = references();
    let mut names: Vec<&String> = all["cases"].as_object().unwrap().keys().collect();
    names.sort();
    assert_eq!(
        names,
        [
            "ball2d_bowl_a",
            "ball2d_flat_a",
            "ball2d_flat_b",
            "lif_a",
            "thermostat_a"
        ]
    );
}

// ---------------------------------------------------------------------------
// Hand derivations.

fn assert_close(actual: f64, expected: f64, what: &str) {
    assert!(
        (actual - expected).abs() <= 1e-12 * expected.abs().max(1.0),
        "{what}: {actual} vs hand-derived {expected}"
    );
}

fn assert_row(sol: &ClosedFormSolution, state: &str, expected: &[f64]) {
    for (wrt, &e) in sol.wrt.iter().zip(expected) {
        assert_close(
            sol.jacobian_entry(state, wrt).unwrap(),
            e,
            &format!("d{state}/d{wrt}"),
        );
    }
}

/// Ball dropped from h0 = 1 at rest, g = 2, e = 1/2, floor 0, observed at
/// T = 2.4, between the second and the third impact.
///
/// With u = sqrt(v0^2 + 2 g (h0 - floor)) the impact speed (2 here):
/// t1 = (v0 + u)/g = 1, t2 = t1 + 2 e u / g = 2, t3 = 2.5; after t2 the ball
/// rises from the floor at e^2 u = 1/2, so with tau = T - t2 = 0.4:
/// h = floor + e^2 u tau - g tau^2/2 = 0.04 and v = e^2 u - g tau = -0.3.
/// Derivatives (du/dh0 = g/u = 1, du/dv0 = v0/u = 0, du/dg = (h0 - floor)/u =
/// 1/2, du/dfloor = -1; dt2/dh0 = 1, dt2/dv0 = 1/g = 1/2, dt2/dg = -1/2,
/// dt2/de = 2u/g = 2, dt2/dfloor = -1; dtau = -dt2):
/// dh = e^2 tau du + v dtau (+ dfloor), dv = e^2 du + 2 e u de - g dtau - tau dg.
#[test]
fn ball1d_matches_hand_derivation() {
    let sol = ball1d(&[1.0, 0.0], &[2.0, 0.5, 0.0], 2.4).unwrap();
    assert_eq!(sol.event_times.len(), 2);
    assert_close(sol.event_times[0], 1.0, "t1");
    assert_close(sol.event_times[1], 2.0, "t2");
    assert_close(sol.final_state[0], 0.04, "h(T)");
    assert_close(sol.final_state[1], -0.3, "v(T)");
    // Columns: h0, v0, g, e, floor.
    assert_row(&sol, "h", &[0.4, 0.15, -0.18, 1.4, 0.6]);
    assert_row(&sol, "v", &[2.25, 1.0, -1.275, 6.0, -2.25]);
    let t1 = [0.5, 0.5, -0.25, 0.0, -0.5];
    let t2 = [1.0, 0.5, -0.5, 2.0, -1.0];
    for (k, row) in [t1, t2].iter().enumerate() {
        for (j, &e) in row.iter().enumerate() {
            assert_close(
                sol.event_time_jacobian[k][j],
                e,
                &format!("dt{k}/d{}", sol.wrt[j]),
            );
        }
    }
}

/// Two equal balls (r = 0.1, m = 1, e = 1): x1 = 0 at 1 m/s, x2 = 0.52 at
/// rest. Impact at t* = (x2 - x1 - 2r)/(v1 - v2) = 0.32; the velocities are
/// exchanged, so for T = 1: x2(T) = x1 + 2r + v1 T = 1.2 and
/// x1(T) = x2 - 2r + v2 T = 0.32. With the general reset,
/// v1+ = ((m1 - e m2) v1 + (1 + e) m2 v2)/M and
/// v2+ = ((m2 - e m1) v2 + (1 + e) m1 v1)/M, M = m1 + m2, the parameter
/// derivatives at v2 = 0 are dv1+/d(m1, m2, e) = (1/2, -1/2, -1/2),
/// dv2+/d(m1, m2, e) = (1/2, -1/2, 1/2), each multiplied by T - t* = 0.68 in
/// the positions.
#[test]
fn two_ball_matches_hand_derivation() {
    let sol = two_ball(&[0.0, 0.52, 1.0, 0.0], &[0.1, 1.0, 1.0, 1.0], 1.0).unwrap();
    assert_eq!(sol.event_times.len(), 1);
    assert_close(sol.event_times[0], 0.32, "t*");
    for (i, e) in [0.32, 1.2, 0.0, 1.0].into_iter().enumerate() {
        assert_close(sol.final_state[i], e, &format!("final state {i}"));
    }
    // Columns: x1, x2, v1, v2, r, m1, m2, e.
    assert_row(&sol, "x1", &[0.0, 1.0, 0.0, 1.0, -2.0, 0.34, -0.34, -0.34]);
    assert_row(&sol, "x2", &[1.0, 0.0, 1.0, 0.0, 2.0, 0.34, -0.34, 0.34]);
    assert_row(&sol, "v1", &[0.0, 0.0, 0.0, 1.0, 0.0, 0.5, -0.5, -0.5]);
    assert_row(&sol, "v2", &[0.0, 0.0, 1.0, 0.0, 0.0, 0.5, -0.5, 0.5]);
    // dt*/d(...) = (-1, 1, -gap/w^2, gap/w^2, -2/(v1 - v2), 0, 0, 0).
    for (j, e) in [-1.0, 1.0, -0.32, 0.32, -2.0, 0.0, 0.0, 0.0]
        .into_iter()
        .enumerate()
    {
        assert_close(
            sol.event_time_jacobian[0][j],
            e,
            &format!("dt*/d{}", sol.wrt[j]),
        );
    }
}

/// Thermostat starting off at 21 with Tout = 10, Tlo = 19: the off phase lasts
/// ln((21 - 10)/(19 - 10))/a; its derivative in T0 is 1/(a (T0 - Tout)).
#[test]
fn thermostat_first_switch_matches_hand_derivation() {
    let (a, t0) = (0.2_f64, 21.0);
    let sol = thermostat(&[t0], &[a, 5.0, 10.0, 19.0, 23.0], ThermostatMode::Off, 1.5).unwrap();
    assert_eq!(sol.event_times.len(), 1);
    let s = (11.0_f64 / 9.0).ln() / a;
    assert_close(sol.event_times[0], s, "switch time");
    assert_close(sol.event_time_jacobian[0][0], 1.0 / (a * 11.0), "ds/dT0");
    assert_close(sol.event_time_jacobian[0][1], -s / a, "ds/da");
    assert_eq!(sol.final_mode.as_deref(), Some("on"));
    // After the switch: T = E + (Tlo - E) exp(-a (T - s)), E = Tout + b/a = 35.
    let tau = 1.5 - s;
    let expected = 35.0 + (19.0 - 35.0) * (-a * tau).exp();
    assert_close(sol.final_state[0], expected, "T(T_end)");
    // dT/dTlo = exp(-a tau) + (Tlo - E) exp(-a tau) a ds/dTlo, ds/dTlo = -1/(a (Tlo - Tout)).
    let d_tlo = (-a * tau).exp() * (1.0 - (19.0 - 35.0) / 9.0);
    assert_close(
        sol.jacobian_entry("T", "param.Tlo").unwrap(),
        d_tlo,
        "dT/dTlo",
    );
}

// ---------------------------------------------------------------------------
// Dual numbers against central finite differences of the f64 closed form.

#[rstest]
#[case::ball1d_drop("ball1d", &[1.0, 0.0], &[9.81, 0.8, 0.0], None, 1.5)]
#[case::ball1d_thrown_down("ball1d", &[2.0, -1.5], &[9.81, 0.9, 0.3], None, 2.5)]
#[case::ball1d_thrown_up("ball1d", &[0.05, 3.0], &[9.81, 0.7, 0.0], None, 1.0)]
#[case::flat_a("ball2d-flat", &[0.0, 1.0, 1.0, 0.0], &[9.81, 0.8, 0.7], None, 2.0)]
#[case::flat_b("ball2d-flat", &[0.0, 2.0, 0.5, 1.5], &[9.81, 0.9, 0.8], None, 4.0)]
#[case::bowl_a("ball2d-bowl", &[0.1, 0.8, 0.3, 0.2], &[9.81, 0.8, 0.5], None, 2.0)]
#[case::bowl_steep("ball2d-bowl", &[-0.3, 1.2, 0.8, -0.4], &[9.81, 0.7, 1.5], None, 1.5)]
#[case::two_ball_unequal("two-ball", &[0.0, 0.5, 1.0, -0.5], &[0.1, 2.0, 0.7, 0.6], None, 1.0)]
#[case::lif_a("lif", &[0.2], &[1.3, 0.01, 1.0, 0.0], None, 0.05)]
#[case::lif_reset_high("lif", &[-0.1], &[2.0, 0.02, 1.0, 0.4], None, 0.1)]
#[case::thermostat_on("thermostat", &[21.0], &[0.2, 5.0, 10.0, 19.0, 23.0], Some("on"), 20.0)]
#[case::thermostat_off("thermostat", &[25.0], &[0.3, 9.0, 12.0, 18.0, 24.0], Some("off"), 9.0)]
fn dual_jacobians_match_central_differences(
    #[case] model: &str,
    #[case] x0: &[f64],
    #[case] p: &[f64],
    #[case] mode: Option<&str>,
    #[case] t_end: f64,
) {
    let sol = closed_form(model, x0, p, mode, t_end).unwrap();
    assert!(
        !sol.event_times.is_empty(),
        "{model}: a case without events tests little"
    );
    let n = x0.len();
    for j in 0..n + p.len() {
        let base = if j < n { x0[j] } else { p[j - n] };
        let h = 1e-6 * base.abs().max(1.0);
        let shifted = |delta: f64| {
            let (mut x, mut q) = (x0.to_vec(), p.to_vec());
            if j < n {
                x[j] += delta;
            } else {
                q[j - n] += delta;
            }
            closed_form(model, &x, &q, mode, t_end).unwrap()
        };
        let (plus, minus) = (shifted(h), shifted(-h));
        assert_eq!(plus.event_times.len(), sol.event_times.len());
        assert_eq!(minus.event_times.len(), sol.event_times.len());
        let fd = |a: f64, b: f64| (a - b) / (2.0 * h);
        let agree = |ad: f64, fd: f64| (ad - fd).abs() <= 1e-6 * ad.abs() + 1e-8;
        for i in 0..n {
            let (ad, fd) = (
                sol.jacobian[i][j],
                fd(plus.final_state[i], minus.final_state[i]),
            );
            assert!(
                agree(ad, fd),
                "{model}: d{}/d{}: dual {ad:e}, central difference {fd:e}",
                sol.state_names[i],
                sol.wrt[j]
            );
        }
        for k in 0..sol.event_times.len() {
            let (ad, fd) = (
                sol.event_time_jacobian[k][j],
                fd(plus.event_times[k], minus.event_times[k]),
            );
            assert!(
                agree(ad, fd),
                "{model}: dt{k}/d{}: dual {ad:e}, central difference {fd:e}",
                sol.wrt[j]
            );
        }
    }
}

// ---------------------------------------------------------------------------
// Errors and limits.

#[test]
fn unknown_model_names_the_valid_ones() {
    let err = closed_form("ball3d", &[], &[], None, 1.0).unwrap_err();
    assert!(matches!(err, ClosedFormError::UnknownModel { .. }));
    let message = err.to_string();
    for m in MODELS {
        assert!(message.contains(m.name), "{message}");
    }
    // Underscores are accepted for hyphens.
    assert!(closed_form(
        "ball2d_flat",
        &[0.0, 1.0, 1.0, 0.0],
        &[9.81, 0.8, 0.7],
        None,
        0.1
    )
    .is_ok());
}

#[test]
fn wrong_lengths_and_modes_are_reported() {
    let err = closed_form("lif", &[0.0, 1.0], &[1.3, 0.01, 1.0, 0.0], None, 1.0).unwrap_err();
    assert!(matches!(
        err,
        ClosedFormError::DimensionMismatch {
            expected: 1,
            found: 2,
            ..
        }
    ));
    let p = [0.2, 5.0, 10.0, 19.0, 23.0];
    let err = closed_form("thermostat", &[21.0], &p, None, 1.0).unwrap_err();
    assert!(err.to_string().contains("off, on"), "{err}");
    let err = closed_form("thermostat", &[21.0], &p, Some("heating"), 1.0).unwrap_err();
    assert!(matches!(err, ClosedFormError::UnknownMode { .. }), "{err}");
}

#[test]
fn event_cap_is_an_error_not_a_loop() {
    let p = [0.2, 5.0, 10.0, 19.0, 23.0];
    let err =
        closed_form_with_max_events("thermostat", &[21.0], &p, Some("on"), 20.0, 5).unwrap_err();
    assert!(
        matches!(err, ClosedFormError::TooManyEvents { max_events: 5, .. }),
        "{err}"
    );
    assert!(closed_form_with_max_events("thermostat", &[21.0], &p, Some("on"), 20.0, 12).is_ok());
}

#[test]
fn bouncing_to_rest_is_reported_as_zeno() {
    // Accumulation at t1 + 2 v1 / (g (1 - e)) = 0.4515 + 2 * 0.8 * 4.4294 / (9.81 * 0.2) = 4.06.
    let err = ball1d(&[1.0, 0.0], &[9.81, 0.8, 0.0], 5.0).unwrap_err();
    match err {
        ClosedFormError::Zeno { time, .. } => assert!((time - 4.0645).abs() < 1e-3, "{time}"),
        other => panic!("expected Zeno, got {other}"),
    }
    // Before the accumulation point all is well.
    assert!(ball1d(&[1.0, 0.0], &[9.81, 0.8, 0.0], 4.0).is_ok());
}

#[test]
fn grazing_and_starting_on_the_guard_are_reported() {
    // e = 0 in the bowl: after the impact the ball slides on the surface.
    let err = closed_form(
        "ball2d-bowl",
        &[0.1, 0.8, 0.3, 0.2],
        &[9.81, 0.0, 0.5],
        None,
        2.0,
    )
    .unwrap_err();
    assert!(matches!(err, ClosedFormError::Grazing { .. }), "{err}");
    let err = ball1d(&[0.0, -1.0], &[9.81, 0.8, 0.0], 1.0).unwrap_err();
    assert!(
        matches!(err, ClosedFormError::InitialOnGuard { .. }),
        "{err}"
    );
    let err = closed_form("lif", &[1.0], &[1.3, 0.01, 1.0, 0.0], None, 1.0).unwrap_err();
    assert!(
        matches!(err, ClosedFormError::InitialOnGuard { .. }),
        "{err}"
    );
}

// ---------------------------------------------------------------------------
// The naive baselines of the three-ways study.

const FLAT_A: ([f64; 4], [f64; 3], f64) = ([0.0, 1.0, 1.0, 0.0], [9.81, 0.8, 0.7], 2.0);
const BOWL_A: ([f64; 4], [f64; 3], f64) = ([0.1, 0.8, 0.3, 0.2], [9.81, 0.8, 0.5], 2.0);
/// Column of `initial.vy`, row of `x`.
const VY0: usize = 3;
const X: usize = 0;

#[rstest]
#[case(1e-2)]
#[case(1e-3)]
fn naive_time_stepping_gives_exactly_zero_on_flat_ground(#[case] dt: f64) {
    let (x0, p, t_end) = FLAT_A;
    let naive = naive_time_stepping(Ground::Flat, &x0, &p, t_end, dt).unwrap();
    assert_eq!(naive.jacobian[X][VY0], 0.0);
    assert_eq!(naive.reset_times.len(), 3, "{:?}", naive.reset_times);
    let exact = closed_form("ball2d-flat", &x0, &p, None, t_end).unwrap();
    assert!(exact.jacobian[X][VY0] > 0.06, "the true value is not zero");
}

#[rstest]
#[case(1e-2)]
#[case(1e-3)]
#[case(1e-4)]
fn naive_time_stepping_is_nonzero_and_wrong_in_the_bowl(#[case] dt: f64) {
    let (x0, p, t_end) = BOWL_A;
    let naive = naive_time_stepping(Ground::Bowl, &x0, &p, t_end, dt).unwrap();
    let exact = closed_form("ball2d-bowl", &x0, &p, None, t_end).unwrap();
    let (wrong, right) = (naive.jacobian[X][VY0], exact.jacobian[X][VY0]);
    assert!(wrong != 0.0);
    assert!(
        (wrong - right).abs() > 0.1 * right.abs(),
        "naive {wrong} vs exact {right}"
    );
}

#[test]
fn interpolated_crossing_converges_as_dt_shrinks() {
    let (x0, p, t_end) = FLAT_A;
    let exact = closed_form("ball2d-flat", &x0, &p, None, t_end).unwrap();
    let errors: Vec<f64> = [1e-2, 1e-3, 1e-4]
        .into_iter()
        .map(|dt| {
            let sol = interpolated_crossing(Ground::Flat, &x0, &p, t_end, dt).unwrap();
            assert_eq!(sol.reset_times.len(), 3);
            (sol.jacobian[X][VY0] - exact.jacobian[X][VY0]).abs()
        })
        .collect();
    assert!(
        errors[0] > errors[1] && errors[1] > errors[2],
        "errors do not shrink: {errors:?}"
    );
    assert!(
        errors[2] < 1e-2 * exact.jacobian[X][VY0].abs(),
        "{errors:?}"
    );
}

#[test]
fn interpolated_crossing_approaches_the_bowl_closed_form() {
    let (x0, p, t_end) = BOWL_A;
    let exact = closed_form("ball2d-bowl", &x0, &p, None, t_end).unwrap();
    let sol = interpolated_crossing(Ground::Bowl, &x0, &p, t_end, 1e-4).unwrap();
    assert_eq!(sol.reset_times.len(), exact.event_times.len());
    for (a, e) in sol.reset_times.iter().zip(&exact.event_times) {
        assert!((a - e).abs() < 1e-4, "crossing {a} vs event {e}");
    }
    for i in 0..4 {
        assert!((sol.final_state[i] - exact.final_state[i]).abs() < 1e-3);
    }
    assert_eq!(sol.wrt, exact.wrt);
}

/// Prints the study table (`cargo test -p ia-verify -- --nocapture three_ways`).
#[test]
fn three_ways_table() {
    for (ground, (x0, p, t_end)) in [(Ground::Flat, FLAT_A), (Ground::Bowl, BOWL_A)] {
        let exact = closed_form(ground.model(), &x0, &p, None, t_end).unwrap();
        let right = exact.jacobian[X][VY0];
        println!("{}: exact dx(T)/dvy0 = {right:.12}", ground.model());
        for dt in [1e-2, 1e-3, 1e-4] {
            let a = naive_time_stepping(ground, &x0, &p, t_end, dt).unwrap();
            let b = interpolated_crossing(ground, &x0, &p, t_end, dt).unwrap();
            println!(
                "  dt {dt:.0e}: (a) {:+.12} error {:.3e}   (b) {:+.12} error {:.3e}",
                a.jacobian[X][VY0],
                (a.jacobian[X][VY0] - right).abs(),
                b.jacobian[X][VY0],
                (b.jacobian[X][VY0] - right).abs()
            );
        }
    }
}
