//! Implicit Runge-Kutta methods for stiff flows: the stiffly accurate,
//! L-stable ESDIRK pairs TR-BDF2, Kvaerno 3(2) and Kvaerno 5(4) as method
//! objects ([`EsdirkTableau`]), the stepper that runs them
//! ([`ImplicitStepper`]: simplified Newton with a reused LU of
//! `I - h gamma J`), and the linear algebra that the discrete adjoint
//! (ia-adjoint) shares: [`IterationMatrix`], dense ([`DenseLu`]) or sparse
//! (faer's sparse LU, for a large flow that declares its sparsity), solving
//! with the matrix and its transpose.

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
