//! The stiff problems of issue 28 (`crates/ia-verify/references/stiff/`) as
//! one catalogue for the examples that profile and measure them
//! (`stiff_drug_probe`, `probe_accuracy`): each equation model with its
//! mpmath reference (`<stem>.reference.json`, computed by `references.py`),
//! a method by its scenario name, and the normwise error the tests use.

use ia_events::SolverChoice;

/// The problems by stem: the equation model (JSON) and its reference.
pub const PROBLEMS: &[(&str, &str, &str)] = &[
    (
        "drug",
        include_str!("../../crates/ia-verify/references/stiff/drug.json"),
        include_str!("../../crates/ia-verify/references/stiff/drug.reference.json"),
    ),
    (
        "ball_kelvin_voigt",
        include_str!("../../crates/ia-verify/references/stiff/ball_kelvin_voigt.json"),
        include_str!("../../crates/ia-verify/references/stiff/ball_kelvin_voigt.reference.json"),
    ),
    (
        "relay",
        include_str!("../../crates/ia-verify/references/stiff/relay.json"),
        include_str!("../../crates/ia-verify/references/stiff/relay.reference.json"),
    ),
    (
        "relay_slow",
        include_str!("../../crates/ia-verify/references/stiff/relay_slow.json"),
        include_str!("../../crates/ia-verify/references/stiff/relay_slow.reference.json"),
    ),
    (
        "heated_rod",
        include_str!("../../crates/ia-verify/references/stiff/heated_rod.json"),
        include_str!("../../crates/ia-verify/references/stiff/heated_rod.reference.json"),
    ),
];

/// The adaptive methods, by their scenario names.
pub const METHODS: &[&str] = &["dopri5", "dop853", "trbdf2", "kvaerno3", "kvaerno5"];

/// The model and the reference of the problem `stem`, or a message listing
/// the stems.
pub fn problem(stem: &str) -> Result<(&'static str, &'static str), String> {
    PROBLEMS
        .iter()
        .find(|(name, _, _)| *name == stem)
        .map(|&(_, model, reference)| (model, reference))
        .ok_or_else(|| {
            let stems: Vec<&str> = PROBLEMS.iter().map(|p| p.0).collect();
            format!("unknown problem '{stem}'; valid: {}", stems.join(", "))
        })
}

/// The method `method` (a scenario's `solver.method`) at `rtol = atol =
/// tol`, read as the scenario reads it (`ia_scenario::solver::read_solver`).
///
/// ```
/// let solver = ia_benches::stiff::solver("kvaerno5", 1e-8, 1.0).unwrap();
/// assert!(matches!(solver, ia_events::SolverChoice::Kvaerno5 { .. }));
/// assert!(ia_benches::stiff::solver("euler", 1e-8, 1.0).is_err());
/// ```
pub fn solver(method: &str, tol: f64, t_end: f64) -> Result<SolverChoice, String> {
    let value = serde_json::json!({"method": method, "rtol": tol, "atol": tol});
    ia_scenario::solver::read_solver(&value, t_end).map_err(|e| e.to_string())
}

/// `max |a - b| / max |b|` over the entries (0 where `b` is all zeros), the
/// normwise relative error of `crates/ia-verify/tests/stiff.rs`.
///
/// ```
/// assert_eq!(ia_benches::stiff::normwise(&[1.0, 2.5], &[1.0, 2.0]), 0.25);
/// ```
pub fn normwise(a: &[f64], b: &[f64]) -> f64 {
    let scale = b.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let diff = a
        .iter()
        .zip(b)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
    if scale == 0.0 {
        0.0
    } else {
        diff / scale
    }
}
