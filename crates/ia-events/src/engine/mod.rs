//! The engines that run a [`Problem`](crate::Problem), beside each other:
//! the Runge-Kutta engine (`runge_kutta`, every stepper of
//! [`SolverChoice`](crate::SolverChoice) but the exact one) and the exact
//! event-driven solver ([`exact`]). Both speak the run vocabulary and
//! follow the event rules of [`crate::vocabulary`], and keep their records
//! through the one recorder. The dispatch between them is
//! [`crate::run_in`]'s; a new engine (implicit methods) is one more module
//! here and one more arm there.

pub mod exact;
pub(crate) mod runge_kutta;
