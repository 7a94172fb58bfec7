//! The closed form of a 2x2 linear pair and its first crossing against a
//! high-precision reference: `references/pair_reference.json`, written by
//! `references/pair_reference.py` with mpmath at 60 digits from the matrix
//! exponential of the augmented matrix (independent of the closed form).

use ia_core::Direction;
use ia_events::exact::{advance_pair, first_crossing, PairRates};
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
struct Reference {
    stretches: Vec<Stretch>,
    crossings: Vec<Crossing>,
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

/// The returned delay is the first double at which the guard has reached
/// the level: one double earlier it has not (polished to the last bit).
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
