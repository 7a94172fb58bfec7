//! diffsol's reset-aware derivatives of `ball2d_flat_a` against ours and the
//! closed form. Needs the `peers` feature (diffsol is not built otherwise):
//!
//! ```text
//! cargo test -p ia-benches --features peers --test diffsol_agreement
//! ```
#![cfg(feature = "peers")]

use ia_adjoint::{gradient, jacobian, FinalComponent, Method};
use ia_benches::{ball2d, peer_diffsol};

fn ours() -> (Vec<f64>, [[f64; 7]; 4]) {
    let system = ball2d::system();
    let problem = ball2d::problem(&system);
    let grad = gradient(&problem, &FinalComponent(0))
        .unwrap()
        .concatenated();
    let jac = jacobian(&problem, Method::Forward).unwrap().final_jacobian;
    (
        grad,
        std::array::from_fn(|i| std::array::from_fn(|j| jac[(i, j)])),
    )
}

#[test]
fn primal_matches_closed_form() {
    let x = peer_diffsol::primal();
    assert!((x[0] - ball2d::CLOSED_FORM_X_T).abs() < 1e-9, "{x:?}");
}

#[test]
fn forward_jacobian_matches_ours_and_closed_form() {
    let (_, ours) = ours();
    let theirs = peer_diffsol::forward_jacobian();
    for (i, row) in theirs.iter().enumerate() {
        let row = peer_diffsol::to_our_order(row);
        for j in 0..7 {
            let scale = 1.0 + ours[i][j].abs();
            assert!(
                (row[j] - ours[i][j]).abs() < 1e-7 * scale,
                "d x_{i}(T) / d theta_{j}: diffsol {} vs ours {}",
                row[j],
                ours[i][j]
            );
        }
    }
    let x_row = peer_diffsol::to_our_order(&theirs[0]);
    for (j, reference) in ball2d::CLOSED_FORM_GRAD_X_T.iter().enumerate() {
        assert!((x_row[j] - reference).abs() < 1e-7, "{j}: {}", x_row[j]);
    }
}

#[test]
fn adjoint_gradient_matches_ours_and_closed_form() {
    let (ours, _) = ours();
    let theirs = peer_diffsol::to_our_order(&peer_diffsol::adjoint_gradient());
    for j in 0..7 {
        let reference = ball2d::CLOSED_FORM_GRAD_X_T[j];
        assert!(
            (theirs[j] - ours[j]).abs() < 1e-6,
            "{j}: diffsol {} vs ours {}",
            theirs[j],
            ours[j]
        );
        assert!((theirs[j] - reference).abs() < 1e-6, "{j}: {}", theirs[j]);
        assert!((ours[j] - reference).abs() < 1e-8, "{j}: {}", ours[j]);
    }
}
