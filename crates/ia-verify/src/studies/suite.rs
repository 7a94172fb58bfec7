//! Every study of `cargo xtask verify`, in order, as one library call.
//!
//! [`run`] runs the reference checks ([`crate::studies::checks`]), the partials check,
//! the forward-versus-adjoint agreement, the finite-difference references,
//! the convergence study ([`crate::studies::convergence`]) and the three-ways study
//! ([`crate::studies::three_ways`]), and returns their rows; the xtask prints and
//! writes them.

use crate::studies::checks;
use crate::studies::convergence::{self, ConvergenceOptions};
use crate::studies::report::Row;
use crate::studies::three_ways::{self, ThreeWaysPoint};
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// The body of one study: hears a progress callback, returns rows.
type Study<'a> = &'a mut dyn FnMut(&mut dyn FnMut(&str)) -> Vec<Row>;

/// What to run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SuiteOptions {
    /// The quick subset for CI: the three-ways study without `dt = 1e-5`
    /// and the RK4 convergence sweep without its smallest step.
    pub quick: bool,
}

/// The result of [`run`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SuiteResult {
    /// Every row, in study order.
    pub rows: Vec<Row>,
    /// The points of the three-ways study (also summarised in `rows`).
    pub three_ways: Vec<ThreeWaysPoint>,
    /// Wall time of each study, in seconds, in order.
    pub study_seconds: Vec<(String, f64)>,
}

/// Runs every study; `progress` hears one line as each study starts and one
/// as it ends (with its row count and time).
pub fn run(options: &SuiteOptions, progress: &mut dyn FnMut(&str)) -> SuiteResult {
    let mut rows = Vec::new();
    let mut study_seconds = Vec::new();
    let mut three_ways_points = Vec::new();
    let mut stage = |name: &str, progress: &mut dyn FnMut(&str), work: Study<'_>| {
        progress(&format!("{name} ..."));
        let start = Instant::now();
        let new = work(progress);
        let seconds = start.elapsed().as_secs_f64();
        let failed = new.iter().filter(|r| r.failed()).count();
        progress(&format!(
            "{name}: {} rows, {failed} failed, {seconds:.1} s",
            new.len()
        ));
        study_seconds.push((name.to_string(), seconds));
        rows.extend(new);
    };
    stage("reference cases (closed_form.json)", progress, &mut |_| {
        let mut rows = crate::studies::reference_copy::shared_copy_rows();
        rows.extend(checks::reference_rows());
        rows
    });
    stage(
        "closed forms (ball1d, two-ball, lif-network)",
        progress,
        &mut |_| checks::closed_form_rows(),
    );
    stage("partials of every model", progress, &mut |_| {
        checks::partials_rows()
    });
    stage("forward vs adjoint, every model", progress, &mut |_| {
        checks::agreement_rows()
    });
    stage("finite-difference references", progress, &mut |_| {
        checks::fd_rows()
    });
    stage("cuba-lif high-precision reference", progress, &mut |_| {
        crate::studies::spiking::cuba_lif_rows()
    });
    let conv = if options.quick {
        ConvergenceOptions::quick()
    } else {
        ConvergenceOptions::full()
    };
    stage("convergence study", progress, &mut |_| {
        convergence::convergence_rows(convergence::CASES, &conv)
    });
    let dts = if options.quick {
        three_ways::QUICK_DTS
    } else {
        three_ways::DTS
    };
    stage("three-ways study", progress, &mut |progress| {
        let mut note = |case: &str| progress(&format!("  three-ways: {case}"));
        match three_ways::three_ways(dts, &mut note) {
            Ok(points) => {
                let rows = three_ways::three_ways_rows(&points);
                three_ways_points = points;
                rows
            }
            Err(e) => vec![Row::failure("three_ways", "-", "study", e)],
        }
    });
    SuiteResult {
        rows,
        three_ways: three_ways_points,
        study_seconds,
    }
}
