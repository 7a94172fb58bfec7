//! Implicit Runge-Kutta methods for stiff flows: the stiffly accurate,
//! L-stable ESDIRK pairs TR-BDF2, Kvaerno 3(2) and Kvaerno 5(4) as method
//! objects ([`EsdirkTableau`]), the stepper that runs them
//! ([`ImplicitStepper`]: simplified Newton with a reused dense LU of
//! `I - h gamma J`), and the dense LU ([`DenseLu`], solving with the matrix
//! and its transpose) that the discrete adjoint (ia-adjoint) shares.

mod linear;
mod lu;
mod stages;
mod stepper;
mod tableau;

pub use linear::{sparse_pays, IterationMatrix, SPARSE_MAX_DENSITY, SPARSE_MIN_DIM};
pub use lu::DenseLu;
pub use stages::{solve_stages_exactly, StageWorkspace};
pub use stepper::{ImplicitStepper, NewtonStats, NEWTON_KAPPA, NEWTON_MAX_ITERATIONS};
pub use tableau::{EsdirkTableau, ESDIRK_METHODS, KVAERNO3, KVAERNO5, TRBDF2};
