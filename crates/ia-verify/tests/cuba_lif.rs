//! The `cuba-lif` spiking network against its high-precision reference.
//!
//! Reference: `crates/ia-verify/references/cuba_lif.json`, written by the
//! mpmath script beside it (closed form per stretch at 60 digits, central
//! differences of step 1e-20; see `ia_verify::references::cuba_lif`). The
//! library's spike times, final states and their derivatives with respect
//! to every weight, input time, `tau_mem`, `tau_syn` and `theta`, by
//! forward sensitivities and by the adjoint with the default solver and
//! with the exact solver, must agree with it under the rules of
//! `ia_verify::studies::spiking`, forward with adjoint, and the exact solver
//! with the default one.

use ia_verify::references::cuba_lif::cuba_lif_references;
use ia_verify::studies::spiking::cuba_lif_rows;

#[test]
fn spike_times_final_states_and_their_derivatives_match_the_reference() {
    let rows = cuba_lif_rows();
    let cases = cuba_lif_references().unwrap().cases.len();
    // per case and solver (dopri5, exact): three rows per method, and
    // forward against adjoint; and the exact solver against dopri5
    assert_eq!(rows.len(), cases * 15, "{rows:#?}");
    for row in &rows {
        eprintln!("{} {}: {:.1e}", row.case, row.quantity, row.error);
        assert!(!row.failed(), "{row:#?}");
    }
}
