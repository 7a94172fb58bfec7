//! # ia-orbits: periodic orbits of hybrid systems and their stability
//!
//! [`periodic_orbit`] finds a periodic orbit by Newton shooting on the
//! Poincaré section of a chosen transition, and returns its fixed point,
//! period, monodromy matrix, Floquet multipliers, and the derivatives of
//! all of these with respect to the parameters ([`PeriodicOrbit`]).
//!
//! ## The return map
//!
//! The section is "just after transition `s` fires". From a state `x0` there
//! (in the mode `s` leads to, at `t = 0`) the system runs until `s` has fired
//! `k` more times (`events_per_period`, default 1); `T(x0)` is the time of
//! the `k`-th firing and `P(x0) = x+(T)` the state just after its reset. A
//! periodic orbit is a fixed point `x* = P(x*)`.
//!
//! One forward-sensitivity run (`ia_adjoint::jacobian`, ended right after
//! the `k`-th firing by [`ia_events::Problem::with_stop_after`]) gives, at
//! `t = T+`:
//!
//! * `M = dx(T+)/dx0` at fixed time: the flows' transition matrices chained
//!   with the saltation matrices `Xi` of every event on the way, the
//!   **monodromy matrix** (`S+ = Xi S-` at each event, so at the last one
//!   `M = Xi_k Phi_k ... Xi_1 Phi_1`);
//! * `N = dx(T+)/dp` at fixed time, likewise;
//! * `dT/dx0` and `dT/dp`, the event-time gradients of the last firing.
//!
//! `P` differs from the fixed-time map because its end time moves with the
//! start: `dP = d[x(T(x0), x0)] = M dx0 + f+ dT` with `f+` the flow just
//! after the event, so
//!
//! ```text
//! DP = M + f+ (dT/dx0)^T,        dP/dp = N + f+ (dT/dp)^T.
//! ```
//!
//! `M` maps `f+(x*)` to itself (starting a little later along the orbit ends
//! a little later along it), so it has the **trivial multiplier 1**; `DP`
//! has 0 there instead (a start moved along the orbit returns to the same
//! point) and the same other eigenvalues, the nontrivial multipliers. The
//! multipliers reported are the eigenvalues of `M`, sorted by modulus,
//! largest first, with the one closest to 1 flagged `trivial`. The orbit is
//! asymptotically stable when every nontrivial multiplier lies inside the
//! unit circle.
//!
//! ## Newton shooting
//!
//! `F(x) = P(x) - x = 0` is solved by Newton's method, `(DP - I) dx = -F`.
//! `DP - I` is invertible at an isolated orbit (its trivial direction has
//! eigenvalue `-1`); at a family of orbits (a conserved quantity, a
//! symmetry: a nontrivial multiplier 1) the step is the least-squares one
//! (singular values below `1e-9` of the largest are dropped), which moves
//! to the nearest member. A backtracking line search halves the step until
//! `|F|` falls by at least `1e-4` of the step fraction (a trial whose run
//! fails counts as no decrease). Newton stops when `|F| <= tol max(1, |x|)`.
//!
//! ## Advancing states
//!
//! A runner's position never returns: its gait repeats while `x` and the
//! foot `xf` move on by one step. [`OrbitOptions::advancing`] lists such
//! states, `C = {c_1, ..., c_m}`; they advance by one common, free
//! displacement while their differences return. Newton then solves
//! `Q (P(x) - x) = 0` (the returning states and `x_{c_k} - x_{c_1}`) for
//! `x = x0 + B z` (the returning states and `c_2 .. c_m`; `c_1` stays at
//! the guess), and the derivatives use `Q (I - DP) B`. Moving every
//! advancing state by the same amount must move the return by just that
//! amount (`DP u = u`, checked at the orbit); `M` then has a second
//! multiplier 1, flagged [`Multiplier::advancing`], and
//! [`PeriodicOrbit::advance`] is the step of one period.
//!
//! ## Derivatives with respect to the parameters
//!
//! Implicit function theorem on `P(x*(p), p) = x*(p)`:
//!
//! ```text
//! dx*/dp = (I - DP)^-1 dP/dp,       dT*/dp = (dT/dx0) . dx*/dp + dT/dp.
//! ```
//!
//! A nontrivial multiplier `lambda` is an eigenvalue of both `M` and `DP`
//! at the fixed point; `M` is strongly non-normal (its trivial direction
//! mixes in the time shift), `DP` much less, so `lambda` is differentiated
//! as an eigenvalue of `DP(x*(p), p)`. With right and left eigenvectors `v`,
//! `w` of `DP` (simple eigenvalue),
//!
//! ```text
//! dlambda/dp = w^H (dDP/dp) v / (w^H v),
//! dDP/dp = (dDP/dx0) dx*/dp + dDP/dp|x0,
//! ```
//!
//! the derivative of the return map's Jacobian along the family of orbits.
//! These second derivatives of the flow are not available from
//! first-order sensitivities, so `dDP/dp_j` is the **central finite
//! difference of the exact `DP`** (fourth order, steps `+-h, +-2h` with
//! `h = 1e-4 max(1, |p_j|)`) along the direction `(dx*/dp_j, e_j)`: four
//! forward-sensitivity runs per parameter. Its error is `O(h^4)` plus the
//! integration error over `h` (about `1e-8` relative at the default
//! tolerance; `1e-10` on the rimless wheel). The trivial multiplier is 1
//! for every `p`: its derivative is exactly 0.
//!
//! The derivatives are not defined when the orbit is not isolated (`I - DP`
//! singular) or a multiplier is not simple, and cannot be formed when a run
//! of the finite difference fails (an orbit at the edge of its existence);
//! then [`PeriodicOrbit::sensitivities`] is `None` and
//! [`PeriodicOrbit::sensitivities_unavailable`] says why.
//!
//! The system must be autonomous (flows, guards and resets independent of
//! `t`): every period starts at `t = 0`.
//!
//! ## Example
//!
//! The rimless wheel's step-to-step map of the rate just after a step is
//! `omega' = cos(2 alpha) sqrt(omega^2 + 4 (g/l) sin(alpha) sin(gamma))`;
//! its fixed point is `cot(2 alpha) sqrt(4 (g/l) sin(alpha) sin(gamma))` and
//! its multiplier `cos^2(2 alpha)`:
//!
//! ```
//! use ia_orbits::{periodic_orbit, OrbitOptions};
//!
//! let model = ia_models::by_name("rimless-wheel").unwrap();
//! let system = model.system();
//! let (g, l, alpha, gamma) = (9.81, 1.0, std::f64::consts::FRAC_PI_8, 0.08);
//! let params = [g, l, alpha, gamma];
//! let guess = [gamma - alpha, 1.2]; // theta just after a step, omega
//! let orbit = periodic_orbit(&system, "step", &guess, &params, &OrbitOptions::new(5.0)).unwrap();
//!
//! let speed = (4.0 * g / l * alpha.sin() * gamma.sin()).sqrt() / (2.0 * alpha).tan();
//! assert!((orbit.fixed_point[1] - speed).abs() < 1e-9);
//! let nontrivial = orbit.multipliers.iter().find(|m| !m.trivial).unwrap();
//! assert!((nontrivial.re - (2.0 * alpha).cos().powi(2)).abs() < 1e-9);
//! // d(cos^2 2 alpha)/d alpha = -2 sin(4 alpha)
//! let sens = orbit.sensitivities.as_ref().unwrap();
//! let i = orbit.multipliers.iter().position(|m| !m.trivial).unwrap();
//! assert!((sens.multipliers[i][2].re + 2.0 * (4.0 * alpha).sin()).abs() < 1e-6);
//! ```

#![deny(missing_docs)]

mod error;
mod floquet;
mod options;
mod orbit;
mod reduction;
mod return_map;
mod shooting;
mod solve;

pub use error::OrbitError;
pub use options::{OrbitOptions, DEFAULT_TOLERANCE};
pub use orbit::{ComplexDerivative, Multiplier, OrbitSensitivities, PeriodicOrbit};
pub use solve::periodic_orbit;
