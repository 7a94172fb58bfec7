//! The closed form of a 2x2 linear pair and its first crossing against a
//! high-precision reference: `references/pair_reference.json`, written by
//! `references/pair_reference.py` with mpmath at 60 digits from the matrix
//! exponential of the augmented matrix (independent of the closed form).

use ia_core::Direction;
use ia_events::exact::{advance_pair, first_crossing, PairRates, PairStretch};
use serde::Deserialize;

#[derive(Deserialize)]
struct Stretch {
    name: String,
    a: [[f64; 2]; 2],
    b: [f64; 2],
    y0: [f64; 2],
    s: f64,
    y: [f64; 2],
}

#[derive(Deserialize)]
struct Crossing {
    name: String,
    a: [[f64; 2]; 2],
    b: [f64; 2],
    y0: [f64; 2],
    entry: usize,
    level: f64,
    direction: Direction,
    delay: Option<f64>,
}

#[derive(Deserialize)]
struct TangentCase {
    tau_mem: f64,
    tau_syn: f64,
    y0: [f64; 2],
    s: f64,
    wrt: String,
    dy: [f64; 2],
}

#[derive(Deserialize)]
struct Reference {
    stretches: Vec<Stretch>,
    crossings: Vec<Crossing>,
    tangents: Vec<TangentCase>,
}

fn reference() -> Reference {
    serde_json::from_str(include_str!("references/pair_reference.json")).unwrap()
}

/// Each entry of the map to a few units of rounding of the state's scale.
#[test]
fn stretches_match_the_high_precision_reference() {
    for case in reference().stretches {
        let rates = PairRates::of(&case.a);
        let mut y = case.y0;
        advance_pair(&case.a, &case.b, &rates, &rates.factors(case.s), &mut y);
        let scale = case
            .y0
            .iter()
            .chain(&case.y)
            .fold(0f64, |m, v| m.max(v.abs()));
        for (got, want) in y.iter().zip(&case.y) {
            assert!(
                (got - want).abs() <= 8.0 * f64::EPSILON * scale,
                "{} at s = {}: {got} vs {want} ({:e})",
                case.name,
                case.s,
                (got - want).abs() / scale
            );
        }
    }
}

/// Each crossing found (or not) as the reference finds it, to a few units
/// of rounding of the delay; grazing levels a relative 1e-10 above and
/// below the peak tell a crossing that rises and falls back from none.
#[test]
fn crossings_match_the_high_precision_reference() {
    for case in reference().crossings {
        let rates = PairRates::of(&case.a);
        let got = first_crossing(
            &case.a,
            &case.b,
            &rates,
            &case.y0,
            case.entry,
            case.level,
            case.direction,
        );
        match (got, case.delay) {
            (Some(got), Some(want)) => {
                // The state is exact to rounding of its scale: a delay is
                // as good as that rounding over the entry's rate there
                // (small near a grazing peak, or with a crossing at the
                // start whose level differs from the state in its last
                // bits).
                let mut y = case.y0;
                advance_pair(&case.a, &case.b, &rates, &rates.factors(got), &mut y);
                let row = case.a[case.entry];
                let rate = row[0] * y[0] + row[1] * y[1] + case.b[case.entry];
                let scale = case.level.abs().max(y[case.entry].abs());
                let tol = 1e-14 * want + 8.0 * f64::EPSILON * scale / rate.abs();
                assert!(
                    (got - want).abs() <= tol,
                    "{}: {got} vs {want} ({:e})",
                    case.name,
                    (got - want).abs() / want
                );
            }
            (got, want) => assert_eq!(got, want, "{}", case.name),
        }
    }
}

/// The returned delay is a double at which the guard, as the run evaluates
/// it, has reached the level, and one double earlier it has not (polished
/// to the last bit).
#[test]
fn crossings_are_polished_to_the_last_double() {
    for case in reference().crossings {
        let rates = PairRates::of(&case.a);
        let Some(s) = first_crossing(
            &case.a,
            &case.b,
            &rates,
            &case.y0,
            case.entry,
            case.level,
            case.direction,
        ) else {
            continue;
        };
        let value = |s: f64| {
            let mut y = case.y0;
            advance_pair(&case.a, &case.b, &rates, &rates.factors(s), &mut y);
            y[case.entry] - case.level
        };
        let before = f64::from_bits(s.to_bits() - 1);
        let sign = if value(0.0) < 0.0 { 1.0 } else { -1.0 };
        assert!(sign * value(s) >= 0.0, "{}: not reached at {s}", case.name);
        assert!(
            sign * value(before) < 0.0,
            "{}: reached before {s}",
            case.name
        );
    }
}

/// The derivative of a neuron pair's stretch (`tau_mem V' = -V + I`,
/// `tau_syn I' = -I`) with respect to each time constant, carried by
/// `PairStretch::carry_tangent` (the augmented exponential, `E = dA/dtau`),
/// against mpmath's derivative of the 60-digit map; and its transpose
/// against it (`lambda . v` both ways).
#[test]
fn tangents_match_the_high_precision_reference() {
    for case in reference().tangents {
        let (tm, ts) = (case.tau_mem, case.tau_syn);
        let a = [[-1.0 / tm, 1.0 / tm], [0.0, -1.0 / ts]];
        let e = if case.wrt == "tau_mem" {
            [[1.0 / (tm * tm), -1.0 / (tm * tm)], [0.0, 0.0]]
        } else {
            [[0.0, 0.0], [0.0, 1.0 / (ts * ts)]]
        };
        let rates = PairRates::of(&a);
        let pair = PairStretch {
            entries: [0, 1],
            a,
            b: [0.0; 2],
            rates,
            factors: rates.factors(case.s),
        };
        let mut v = [0.0; 2];
        pair.carry_tangent(case.s, case.y0, e, [0.0; 2], &mut v);
        let scale = case.dy.iter().fold(1e-3f64, |m, x| m.max(x.abs()));
        for (got, want) in v.iter().zip(&case.dy) {
            assert!(
                (got - want).abs() <= 1e-13 * scale,
                "d/d{} at s = {} (tau {tm}, {ts}): {got} vs {want}",
                case.wrt,
                case.s
            );
        }
        let lambda = [0.7, -1.3];
        let c = pair.transpose_tangent(case.s, case.y0, lambda);
        let ge = c.g.iter().flatten().zip(e.iter().flatten());
        let dot: f64 = ge.map(|(g, e)| g * e).sum();
        let want = lambda[0] * case.dy[0] + lambda[1] * case.dy[1];
        assert!(
            (dot - want).abs() <= 1e-13 * scale,
            "transpose: {dot} vs {want}"
        );
    }
}
