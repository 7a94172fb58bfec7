//! The studies of ia-verify: the finite-difference reference against the
//! closed forms, the three-ways study, the convergence study and the
//! reference checks, as a user (or the xtask) calls them.

use ia_events::Problem;
use ia_verify::checks::{fd_validation_rows, reference_case_rows};
use ia_verify::closed_form::closed_form;
use ia_verify::convergence::{convergence_rows, ConvergenceOptions};
use ia_verify::finite_difference::{fd_jacobian, FdError, FdJacobian, FdOptions, FD_SAFETY};
use ia_verify::references::reference_case;
use ia_verify::report::{summary, Verdict};
use ia_verify::three_ways::{three_ways_case, three_ways_rows, Way};
use rstest::rstest;

#[rstest]
#[case("ball2d_flat_a")]
#[case("ball2d_bowl_a")]
#[case("lif_a")]
fn fd_reference_agrees_with_the_closed_form_to_its_estimate(#[case] name: &str) {
    let case = reference_case(name).unwrap();
    let model = ia_models::by_name(&case.model).unwrap();
    let system = model.system();
    let problem = case.problem(model.as_ref(), &system).unwrap();
    // LIF's tau = 0.01: the step max(|tau|, 1) 1e-3 would be a tenth of it.
    let options = FdOptions {
        relative_step: if name == "lif_a" { 1e-5 } else { 1e-3 },
        ..FdOptions::default()
    };
    let fd = fd_jacobian(&problem, &options).unwrap();
    let exact = closed_form(
        &case.model,
        &problem.initial_state,
        &problem.params,
        case.initial_mode.as_deref(),
        case.t_end,
    )
    .unwrap();
    assert_eq!(fd.event_times.len(), exact.event_times.len());
    for (i, s) in fd.state_names.iter().enumerate() {
        for (j, w) in fd.wrt.iter().enumerate() {
            let r = exact.jacobian_entry(s, w).unwrap();
            let (v, est) = (fd.final_jacobian[i][j], fd.final_error[i][j]);
            assert!(
                FdJacobian::agrees(v, r, est),
                "{name} d {s}/d {w}: FD {v} vs exact {r}, estimate {est:e}"
            );
            assert!(
                est < 1e-4 * r.abs().max(1.0),
                "{name} d {s}/d {w}: estimate {est:e}"
            );
        }
    }
    for (k, row) in fd.event_time_jacobian.iter().enumerate() {
        for (j, w) in fd.wrt.iter().enumerate() {
            let r = exact.event_time_derivative(k, w).unwrap();
            let (v, est) = (row[j], fd.event_time_error[k][j]);
            assert!(
                (v - r).abs() <= FD_SAFETY * est,
                "{name} d t*[{k}]/d {w}: FD {v} vs exact {r}, estimate {est:e}"
            );
        }
    }
}

#[test]
fn fd_reports_a_perturbation_that_changes_the_events_by_name() {
    // The rimless wheel's third step is lost when the slope shrinks by 0.01.
    let model = ia_models::by_name("rimless-wheel").unwrap();
    let spec = model.spec();
    let system = model.system();
    let problem = Problem::new(
        &system,
        spec.default_state(),
        spec.default_params(),
        spec.t_end,
    );
    let options = FdOptions {
        relative_step: 1e-2,
        ..FdOptions::default()
    };
    let err = fd_jacobian(&problem, &options).unwrap_err();
    match &err {
        FdError::EventSequenceChanged {
            entry,
            nominal,
            perturbed,
            ..
        } => {
            assert_eq!(entry, "param.gamma");
            assert_eq!((nominal.len(), perturbed.len()), (3, 2));
        }
        other => panic!("expected EventSequenceChanged, got {other}"),
    }
    assert!(err.to_string().contains("param.gamma"), "{err}");
}

#[rstest]
#[case("ball2d_flat_a")]
#[case("ball2d_bowl_a")]
fn three_ways_rows_show_each_way(#[case] name: &str) {
    let points = three_ways_case(name, &[1e-2, 1e-3]).unwrap();
    assert_eq!(points.len(), 2 * Way::ALL.len());
    for p in &points {
        match p.method {
            // (a): exactly zero on flat ground, a nonzero wrong value in the bowl.
            Way::NaiveTimeStepping if name.contains("flat") => {
                assert_eq!(p.value, 0.0, "{p:?}");
                assert_eq!(p.rel_error, 1.0);
            }
            Way::NaiveTimeStepping => assert!(p.value != 0.0 && p.rel_error > 0.5, "{p:?}"),
            // (b): wrong by a dt-dependent amount.
            Way::InterpolatedCrossing => assert!(p.rel_error > 1e-4 && p.rel_error < 0.1, "{p:?}"),
            // (c): the closed form to rounding, at every dt.
            Way::ImpactAdjointRk4 | Way::ImpactAdjointDopri5 => {
                assert!(p.rel_error < 1e-11, "{p:?}")
            }
        }
        assert_ne!(p.verdict, Verdict::Fail, "{p:?}");
    }
    let b: Vec<f64> = points
        .iter()
        .filter(|p| p.method == Way::InterpolatedCrossing)
        .map(|p| p.rel_error)
        .collect();
    assert!(b[1] < b[0], "(b) converges with dt: {b:?}");
    let rows = three_ways_rows(&points);
    assert_eq!(summary(&rows).fail, 0);
    assert!(rows
        .iter()
        .any(|r| r.quantity.contains("naive_time_stepping") && r.case == name));
}

#[test]
fn convergence_study_passes_on_lif() {
    let options = ConvergenceOptions {
        dopri5_tolerances: vec![1e-6, 1e-9, 1e-12],
        rk4_fractions: vec![1e-2, 1e-3],
        ..ConvergenceOptions::quick()
    };
    let rows = convergence_rows(&["lif_a"], &options);
    // Per method: 3 + 1 dopri5 rows and 2 + 1 RK4 rows.
    assert_eq!(rows.len(), 2 * (4 + 3));
    let s = summary(&rows);
    assert_eq!((s.pass, s.fail, s.info), (4, 0, 10), "{rows:#?}");
    // The error comes down with the tolerance.
    let dopri: Vec<f64> = rows
        .iter()
        .filter(|r| r.study == "convergence_dopri5" && r.verdict == Verdict::Info)
        .take(3)
        .map(|r| r.error)
        .collect();
    assert!(dopri[2] < dopri[0] * 1e-3, "{dopri:?}");
}

#[rstest]
#[case("ball2d_flat_a")]
#[case("thermostat_a")]
fn reference_checks_pass(#[case] name: &str) {
    let case = reference_case(name).unwrap();
    let rows = reference_case_rows(name, &case);
    assert!(rows.len() >= 8);
    assert!(rows.iter().all(|r| !r.failed()), "{rows:#?}");
    // The eighth-order method's sensitivities are checked too.
    let dop853 = format!("{name} (dop853)");
    assert!(
        rows.iter().filter(|r| r.case == dop853).count() >= 2,
        "{rows:#?}"
    );
    // And the implicit Kvaerno 5(4)'s.
    let kvaerno5 = format!("{name} (kvaerno5)");
    assert!(
        rows.iter().filter(|r| r.case == kvaerno5).count() >= 2,
        "{rows:#?}"
    );
}

#[test]
fn fd_validation_row_passes() {
    let rows = fd_validation_rows("ball2d_flat_a");
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].verdict, Verdict::Pass, "{:?}", rows[0]);
}
