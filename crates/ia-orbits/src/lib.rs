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

pub use error::OrbitError;

use floquet::{eigen_triples, EigenTriple};
use ia_adjoint::{jacobian_in, Method, Workspace};
use ia_core::{name_index, HybridError, HybridSystem};
use ia_events::{EventOptions, Problem, SolverChoice};
use nalgebra::{Complex, DMatrix, DVector};
use serde::{Deserialize, Serialize};

/// The default integration tolerance of the orbit runs (`rtol = atol`).
pub const DEFAULT_TOLERANCE: f64 = 1e-12;

/// Settings of [`periodic_orbit`].
#[derive(Clone, Debug, PartialEq)]
pub struct OrbitOptions {
    /// Firings of the section's transition in one period (at least 1).
    pub events_per_period: usize,
    /// The longest run allowed for one period.
    pub max_period: f64,
    /// Newton stops when `|P(x) - x| <= tolerance * max(1, |x|)`.
    pub tolerance: f64,
    /// The most Newton iterations.
    pub max_iterations: usize,
    /// The integrator (default: Dormand-Prince at [`DEFAULT_TOLERANCE`]).
    pub solver: SolverChoice,
    /// Event location and pathology options.
    pub events: EventOptions,
    /// A guard within this distance of zero at the start of a period sits
    /// on zero and takes the side its rate points to, as it does right
    /// after an event ([`Problem::with_start_band`]).
    pub start_band: f64,
    /// States that advance each period instead of returning (a runner's
    /// position and its foot's): by one common displacement, which is free,
    /// while their differences return (see the [crate
    /// documentation](crate), "Advancing states"). Empty by default: every
    /// state returns.
    pub advancing: Vec<usize>,
}

impl OrbitOptions {
    /// One firing per period, runs of at most `max_period`, tolerance
    /// `1e-10`, at most 50 Newton iterations, start band `1e-6`.
    pub fn new(max_period: f64) -> Self {
        Self {
            events_per_period: 1,
            max_period,
            tolerance: 1e-10,
            max_iterations: 50,
            solver: SolverChoice::dopri5(DEFAULT_TOLERANCE),
            events: EventOptions::default(),
            start_band: 1e-6,
            advancing: Vec::new(),
        }
    }

    /// Sets [`OrbitOptions::advancing`], by state index.
    ///
    /// The slip-hopper's running gait: every state returns but the mass's
    /// `x` and the foot's `xf`, which move on by one step a period.
    ///
    /// ```
    /// use ia_orbits::{periodic_orbit, OrbitOptions};
    ///
    /// let model = ia_models::by_name("slip-hopper").unwrap();
    /// let (system, params) = (model.system(), model.spec().default_params());
    /// let touchdown = [0.48238, 0.92866, 4.0, -1.18305, 0.8533]; // x, y, vx, vy, xf
    /// let options = OrbitOptions::new(3.0).with_advancing(vec![0, 4]);
    /// let gait = periodic_orbit(&system, "touchdown", &touchdown, &params, &options).unwrap();
    /// assert!((gait.advance[0] - gait.advance[1]).abs() < 1e-9);
    /// assert!(gait.advance[0] > 1.5); // metres a step
    /// assert!(gait.multipliers.iter().any(|m| m.advancing));
    /// ```
    pub fn with_advancing(mut self, states: Vec<usize>) -> Self {
        self.advancing = states;
        self
    }

    /// Sets [`OrbitOptions::events_per_period`].
    pub fn with_events_per_period(mut self, k: usize) -> Self {
        self.events_per_period = k;
        self
    }

    fn validate(&self) -> Result<(), HybridError> {
        if self.events_per_period == 0 {
            return Err(HybridError::invalid(
                "events_per_period",
                0,
                "must be an integer of at least 1",
            ));
        }
        if !(self.max_period.is_finite() && self.max_period > 0.0) {
            return Err(HybridError::invalid_num(
                "max_period",
                self.max_period,
                "must be a finite number greater than 0 (the run length for one period)",
            ));
        }
        if !(self.tolerance.is_finite() && self.tolerance > 0.0) {
            return Err(HybridError::invalid_num(
                "tolerance",
                self.tolerance,
                "must be a finite number greater than 0",
            ));
        }
        if self.max_iterations == 0 {
            return Err(HybridError::invalid(
                "max_iterations",
                0,
                "must be at least 1",
            ));
        }
        Ok(())
    }

    /// Checks [`OrbitOptions::advancing`] against the system's states.
    fn validate_advancing(&self, system: &HybridSystem) -> Result<(), HybridError> {
        let n = system.state_dim();
        for (k, &i) in self.advancing.iter().enumerate() {
            if i >= n {
                return Err(HybridError::invalid(
                    "advancing",
                    i,
                    format!("must be a state index below {n}"),
                ));
            }
            if self.advancing[..k].contains(&i) {
                return Err(HybridError::invalid(
                    "advancing",
                    &system.state_names()[i],
                    "is listed twice",
                ));
            }
        }
        if self.advancing.len() == n {
            return Err(HybridError::invalid(
                "advancing",
                self.advancing.len(),
                "must leave at least one state that returns",
            ));
        }
        Ok(())
    }
}

/// The coordinates Newton works in when some states advance
/// ([`OrbitOptions::advancing`], `C = {c_1, ..., c_m}`): the residual
/// `Q (P(x) - x)` keeps every returning state and the differences `c_k -
/// c_1`, and the unknowns `x = x_0 + B z` are the returning states and
/// `c_2 .. c_m` (`c_1` stays where the guess put it). Both are `I` when no
/// state advances.
struct Reduction {
    /// `Q`, `(n - 1) x n` (or `n x n`).
    residual: DMatrix<f64>,
    /// `B`, `n x (n - 1)` (or `n x n`).
    unknowns: DMatrix<f64>,
}

impl Reduction {
    fn new(n: usize, advancing: &[usize]) -> Self {
        let Some((&first, rest)) = advancing.split_first() else {
            return Self {
                residual: DMatrix::identity(n, n),
                unknowns: DMatrix::identity(n, n),
            };
        };
        let kept: Vec<usize> = (0..n).filter(|i| !advancing.contains(i)).collect();
        let m = n - 1;
        let mut residual = DMatrix::zeros(m, n);
        let mut unknowns = DMatrix::zeros(n, m);
        for (r, &i) in kept.iter().enumerate() {
            residual[(r, i)] = 1.0;
            unknowns[(i, r)] = 1.0;
        }
        for (k, &c) in rest.iter().enumerate() {
            let r = kept.len() + k;
            residual[(r, c)] = 1.0;
            residual[(r, first)] = -1.0;
            unknowns[(c, r)] = 1.0;
        }
        Self { residual, unknowns }
    }

    /// `Q (P(x) - x)`.
    fn of(&self, ret: &Return, x: &DVector<f64>) -> DVector<f64> {
        &self.residual * (&ret.state - x)
    }

    /// `Q A B` for an `n x n` matrix `A`.
    fn reduce(&self, a: &DMatrix<f64>) -> DMatrix<f64> {
        &self.residual * a * &self.unknowns
    }
}

/// A Floquet multiplier: an eigenvalue of the monodromy matrix.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Multiplier {
    /// Real part.
    pub re: f64,
    /// Imaginary part.
    pub im: f64,
    /// Whether this is the multiplier 1 along the flow.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub trivial: bool,
    /// Whether this is the multiplier 1 of the common shift of the
    /// [advancing](OrbitOptions::advancing) states.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub advancing: bool,
}

impl Multiplier {
    /// `|lambda|`.
    pub fn modulus(&self) -> f64 {
        self.re.hypot(self.im)
    }
}

/// A complex derivative `d lambda / dp = re + i im`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ComplexDerivative {
    /// Real part.
    pub re: f64,
    /// Imaginary part.
    pub im: f64,
}

/// Derivatives of an orbit with respect to the parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OrbitSensitivities {
    /// `dx*/dp`, states by parameters.
    pub fixed_point: DMatrix<f64>,
    /// `dT*/dp`, one entry per parameter.
    pub period: Vec<f64>,
    /// `dlambda/dp`: for each multiplier (in the order of
    /// [`PeriodicOrbit::multipliers`]), one entry per parameter.
    pub multipliers: Vec<Vec<ComplexDerivative>>,
    /// The finite-difference step `h` of each parameter used for the
    /// derivative of the return map's Jacobian (see the [crate
    /// documentation](crate)).
    pub return_map_steps: Vec<f64>,
}

/// A periodic orbit through the section of one transition.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PeriodicOrbit {
    /// Names of the state entries.
    pub state_names: Vec<String>,
    /// Names of the parameters.
    pub param_names: Vec<String>,
    /// The section's transition.
    pub section: String,
    /// Firings of it in one period.
    pub events_per_period: usize,
    /// `x*`: the state just after the section's transition fires.
    pub fixed_point: Vec<f64>,
    /// `T*`: the time of one period.
    pub period: f64,
    /// Newton iterations taken.
    pub newton_iterations: usize,
    /// `|P(x*) - x*|` over the returning states and the differences of
    /// the advancing ones.
    pub residual: f64,
    /// The [advancing](OrbitOptions::advancing) states, by name.
    pub advancing: Vec<String>,
    /// How far each advancing state moves in one period, `P(x*)_c - x*_c`
    /// (equal for all of them, to the tolerance).
    pub advance: Vec<f64>,
    /// `M = dx(T+)/dx0` at fixed time: flows and saltations chained.
    pub monodromy: DMatrix<f64>,
    /// `DP = M + f+ (dT/dx0)^T`: the Jacobian of the return map.
    pub return_map_jacobian: DMatrix<f64>,
    /// The eigenvalues of `M`, largest modulus first.
    pub multipliers: Vec<Multiplier>,
    /// Parameter derivatives, when defined.
    pub sensitivities: Option<OrbitSensitivities>,
    /// Why [`PeriodicOrbit::sensitivities`] is `None`, if it is.
    pub sensitivities_unavailable: Option<String>,
}

/// One period from `x0`: the return state and its first derivatives.
struct Return {
    state: DVector<f64>,
    period: f64,
    /// `M`, n x n.
    monodromy: DMatrix<f64>,
    /// `N = dx(T+)/dp` at fixed time, n x n_p.
    param_jacobian: DMatrix<f64>,
    /// `dT/dx0`.
    period_x: DVector<f64>,
    /// `dT/dp`.
    period_p: DVector<f64>,
    /// `f+` at the return.
    flow_after: DVector<f64>,
}

impl Return {
    /// `DP = M + f+ (dT/dx0)^T`.
    fn return_jacobian(&self) -> DMatrix<f64> {
        &self.monodromy + &self.flow_after * self.period_x.transpose()
    }

    /// `dP/dp = N + f+ (dT/dp)^T`.
    fn return_param_jacobian(&self) -> DMatrix<f64> {
        &self.param_jacobian + &self.flow_after * self.period_p.transpose()
    }
}

/// What one period needs: the system, the section and the options.
struct Shooting<'a> {
    system: &'a HybridSystem,
    section: usize,
    section_name: &'a str,
    start_mode: usize,
    options: &'a OrbitOptions,
    reduction: Reduction,
    /// The buffers of the periods run, kept from one to the next (Newton
    /// iterations, line search, differences).
    workspace: std::cell::RefCell<Workspace>,
}

impl Shooting<'_> {
    /// Runs one period from `x0` with parameters `p`.
    fn one_return(&self, x0: &[f64], p: &[f64]) -> Result<Return, OrbitError> {
        let (n, k) = (self.system.state_dim(), self.options.events_per_period);
        let mut problem = Problem::new(
            self.system,
            x0.to_vec(),
            p.to_vec(),
            self.options.max_period,
        )
        .with_solver(self.options.solver.clone())
        .with_event_options(self.options.events.clone())
        .with_start_band(self.options.start_band)
        .with_stop_after(self.section_name, k)?;
        problem.initial_mode = self.start_mode;
        let mut workspace = self.workspace.borrow_mut();
        let sens = jacobian_in(&problem, Method::Forward, &mut workspace)?;
        let events = &sens.trajectory.events;
        let fired = events
            .iter()
            .filter(|e| e.transition == self.section)
            .count();
        let last = events.last().filter(|e| e.transition == self.section);
        let Some(last) = last.filter(|_| fired == k) else {
            return Err(OrbitError::NoReturn {
                section: self.section_name.to_string(),
                state: (self.system.state_names().iter().cloned())
                    .zip(x0.iter().copied())
                    .collect(),
                fired,
                needed: k,
                max_period: self.options.max_period,
            });
        };
        let gradient = sens.event_time_gradients.row(events.len() - 1).transpose();
        let state_after = sens.trajectory.state_after(events.len() - 1);
        let mut flow_after = DVector::zeros(n);
        let to = self.system.transitions()[self.section].to;
        self.system.modes()[to]
            .flow
            .rate(last.time, state_after, p, flow_after.as_mut_slice());
        let period = Return {
            state: DVector::from_column_slice(state_after),
            period: last.time,
            monodromy: sens.final_jacobian.columns(0, n).into_owned(),
            param_jacobian: sens.final_jacobian.columns(n, p.len()).into_owned(),
            period_x: gradient.rows(0, n).into_owned(),
            period_p: gradient.rows(n, p.len()).into_owned(),
            flow_after,
        };
        workspace.recycle(sens);
        Ok(period)
    }

    /// Newton's method with backtracking from `guess`: the fixed point, its
    /// return, the iterations and the residual.
    fn newton(
        &self,
        guess: &[f64],
        p: &[f64],
    ) -> Result<(DVector<f64>, Return, usize, f64), OrbitError> {
        let tolerance = self.options.tolerance;
        let mut x = DVector::from_column_slice(guess);
        let mut ret = self
            .one_return(guess, p)
            .map_err(|e| during(e, "the starting guess"))?;
        let mut residual = self.reduction.of(&ret, &x).norm();
        let mut iterations = 0;
        let fail = |iterations, residual, reason: String, ret: &Return| OrbitError::NoConvergence {
            section: self.section_name.to_string(),
            iterations,
            residual,
            tolerance,
            reason: reason + &self.advancing_hint(ret),
        };
        while residual > tolerance * x.norm().max(1.0) {
            if iterations == self.options.max_iterations {
                return Err(fail(
                    iterations,
                    residual,
                    format!("the iteration limit max_iterations = {iterations} was reached"),
                    &ret,
                ));
            }
            let n = x.len();
            let jac = self
                .reduction
                .reduce(&(ret.return_jacobian() - DMatrix::identity(n, n)));
            let svd = jac.svd(true, true);
            let cutoff = 1e-9 * svd.singular_values.max();
            let step = -(&self.reduction.unknowns
                * svd
                    .solve(&self.reduction.of(&ret, &x), cutoff)
                    .expect("U and V were computed"));
            let mut fraction = 1.0;
            let mut last_failure = None;
            loop {
                let trial = &x + fraction * &step;
                match self.one_return(trial.as_slice(), p) {
                    Ok(trial_ret) => {
                        let trial_residual = self.reduction.of(&trial_ret, &trial).norm();
                        if trial_residual <= (1.0 - 1e-4 * fraction) * residual {
                            (x, ret, residual) = (trial, trial_ret, trial_residual);
                            break;
                        }
                    }
                    Err(e) => last_failure = Some(e),
                }
                fraction *= 0.5;
                if fraction < 1.0 / 1024.0 {
                    let why = last_failure.map_or(String::new(), |e| {
                        format!(" (the last trial run failed: {e})")
                    });
                    return Err(fail(
                        iterations,
                        residual,
                        format!("the line search found no step along the Newton direction, down to 1/1024 of it, that lowers the residual{why}: the guess is outside the orbit's basin, or the return map is not smooth there (an event appears or disappears along the way)"),
                        &ret,
                    ));
                }
            }
            iterations += 1;
        }
        Ok((x, ret, iterations, residual))
    }

    /// When Newton fails and no state is declared advancing: the states
    /// that, moved alone or in pairs by the same amount, move the return
    /// by just that amount (`(DP - I) u = 0`), a position that may advance
    /// each period, named with the option that handles it.
    fn advancing_hint(&self, ret: &Return) -> String {
        if !self.options.advancing.is_empty() {
            return String::new();
        }
        let n = ret.state.len();
        let unmoved = ret.return_jacobian() - DMatrix::identity(n, n);
        let scale = unmoved.amax().max(1.0);
        let shifts_alone = |u: &DVector<f64>| (&unmoved * u).amax() <= 1e-9 * scale;
        let names = self.system.state_names();
        let mut found: Option<Vec<usize>> = None;
        'search: for i in 0..n {
            for j in i..n {
                let mut u = DVector::zeros(n);
                u[i] = 1.0;
                u[j] = 1.0;
                if shifts_alone(&u) {
                    found = Some(if i == j { vec![i] } else { vec![i, j] });
                    break 'search;
                }
            }
        }
        found.map_or(String::new(), |states| {
            let listed: Vec<String> = states.iter().map(|&i| format!("\"{}\"", names[i])).collect();
            format!(
                "; moving {}{} by some amount moves the return by just that amount: if that is a position that advances each period, list it as \"advancing\": [{}]",
                states.iter().map(|&i| format!("'{}'", names[i])).collect::<Vec<_>>().join(" and "),
                if states.len() > 1 { " together" } else { "" },
                listed.join(", ")
            )
        })
    }

    /// `d(DP)/dp_j` along the family of orbits, `d/dh DP(x* + h dx*/dp_j,
    /// p + h e_j)` at `h = 0`, by the fourth-order central difference of
    /// the exact `DP` of four runs.
    fn return_jacobian_derivative(
        &self,
        x: &DVector<f64>,
        p: &[f64],
        dx_dp: &DVector<f64>,
        j: usize,
        h: f64,
    ) -> Result<DMatrix<f64>, OrbitError> {
        let at = |s: f64| -> Result<DMatrix<f64>, OrbitError> {
            let xs = x + s * h * dx_dp;
            let mut ps = p.to_vec();
            ps[j] += s * h;
            Ok(self.one_return(xs.as_slice(), &ps)?.return_jacobian())
        };
        let (m2, m1, p1, p2) = (at(-2.0)?, at(-1.0)?, at(1.0)?, at(2.0)?);
        Ok((m2 - p2 + 8.0 * (p1 - m1)) / (12.0 * h))
    }

    /// The parameter derivatives at the fixed point `x`, or why they are not
    /// defined.
    fn sensitivities(
        &self,
        x: &DVector<f64>,
        p: &[f64],
        ret: &Return,
        triples: &[EigenTriple],
        exactly_one: &[usize],
    ) -> Result<OrbitSensitivities, String> {
        let n = x.len();
        let a = self
            .reduction
            .reduce(&(DMatrix::identity(n, n) - ret.return_jacobian()));
        let svd = a.clone().svd(false, false);
        let (smax, smin) = (svd.singular_values.max(), svd.singular_values.min());
        if smin <= 1e-8 * smax {
            return Err(format!(
                "the orbit is not isolated: I - DP is singular (smallest singular value {smin:e} of {smax:e}), so a nontrivial multiplier is 1 (a family of orbits, from a conserved quantity or a symmetry) and the fixed point does not depend on the parameters alone"
            ));
        }
        // The nontrivial multipliers are also the eigenvalues of DP, whose
        // eigenvectors are far better conditioned than M's (M is strongly
        // non-normal along the flow): each is differentiated there.
        let return_triples = eigen_triples(&ret.return_jacobian());
        let mut on_return_map = Vec::with_capacity(triples.len());
        for (i, t) in triples.iter().enumerate() {
            if exactly_one.contains(&i) {
                on_return_map.push(None);
                continue;
            }
            let tol = 1e-8 * t.value.norm().max(1.0);
            let close = triples.iter().enumerate().any(|(k, o)| {
                k != i && !exactly_one.contains(&k) && (o.value - t.value).norm() <= tol
            });
            let same = return_triples
                .iter()
                .min_by(|a, b| {
                    (a.value - t.value)
                        .norm()
                        .total_cmp(&(b.value - t.value).norm())
                })
                .filter(|r| (r.value - t.value).norm() <= 1e-6 * t.value.norm().max(1.0));
            match same {
                Some(r) if !close && r.condition().norm() >= 1e-8 => on_return_map.push(Some(r)),
                _ => {
                    return Err(format!(
                        "multiplier {i} ({:.6} {:+.6} i) is not simple, so its derivative is not defined",
                        t.value.re, t.value.im
                    ))
                }
            }
        }
        let dx_dp = &self.reduction.unknowns
            * a.lu()
                .solve(&(&self.reduction.residual * ret.return_param_jacobian()))
                .expect("I - DP is not singular");
        let period = (ret.period_x.transpose() * &dx_dp + ret.period_p.transpose())
            .iter()
            .copied()
            .collect();
        let steps: Vec<f64> = p.iter().map(|v| 1e-4 * v.abs().max(1.0)).collect();
        let mut multipliers = vec![Vec::with_capacity(p.len()); triples.len()];
        for (j, &h) in steps.iter().enumerate() {
            let d_return = self
                .return_jacobian_derivative(x, p, &dx_dp.column(j).into_owned(), j, h)
                .map_err(|e| {
                    format!(
                        "the multipliers' derivatives need runs from the orbit moved along its family by +-h and +-2h in parameter '{}' (h = {}), and one failed: {e}",
                        self.system.param_names()[j],
                        ia_core::short_num(h)
                    )
                })?;
            for (i, r) in on_return_map.iter().enumerate() {
                let d = r.map_or(Complex::new(0.0, 0.0), |r| r.derivative(&d_return));
                multipliers[i].push(ComplexDerivative { re: d.re, im: d.im });
            }
        }
        Ok(OrbitSensitivities {
            fixed_point: dx_dp,
            period,
            multipliers,
            return_map_steps: steps,
        })
    }
}

/// Checks that the advancing states are a symmetry at the orbit: moving
/// them all by one unit moves the return by the same unit and nothing
/// else, `DP u = u` with `u` the sum of their unit vectors. Otherwise the
/// orbit found would not repeat: the next period starts from a shifted
/// state whose dynamics differ.
fn shifts_alike(
    system: &HybridSystem,
    advancing: &[usize],
    return_jacobian: &DMatrix<f64>,
) -> Result<(), HybridError> {
    let n = system.state_dim();
    let mut shift = DVector::zeros(n);
    for &c in advancing {
        shift[c] = 1.0;
    }
    let moved = return_jacobian * &shift;
    let scale = return_jacobian.amax().max(1.0);
    let worst = (&moved - &shift).iamax();
    if (moved[worst] - shift[worst]).abs() <= 1e-6 * scale {
        return Ok(());
    }
    let names = system.state_names();
    let listed: Vec<&str> = advancing.iter().map(|&c| names[c].as_str()).collect();
    Err(HybridError::invalid(
        "advancing",
        format!("[{}]", listed.join(", ")),
        format!(
            "must be states the system does not depend on except through their differences: moving them all by 1 at the start moves the return of '{}' by {} instead of {}; list the states of a position that advances each period (a runner's x and its foot's), all of them",
            names[worst],
            ia_core::short_num(moved[worst]),
            shift[worst],
        ),
    ))
}

fn during(error: OrbitError, what: &str) -> OrbitError {
    match error {
        OrbitError::Input(source) => OrbitError::Run {
            during: what.to_string(),
            source,
        },
        other => other,
    }
}

/// Finds the periodic orbit through the section of transition `section`
/// (the state just after it fires) by Newton shooting from `guess`, with
/// parameters `params`; see the [crate documentation](crate) for the
/// mathematics and an example.
///
/// Errors: an unknown section (listing the transitions), invalid options, a
/// run that fails from the guess, no return within `max_period`
/// ([`OrbitError::NoReturn`]), or no convergence
/// ([`OrbitError::NoConvergence`], with the iterations, the residual and
/// what to try).
///
/// ```
/// use ia_orbits::{periodic_orbit, OrbitOptions};
///
/// let system = ia_models::by_name("rimless-wheel").unwrap().system();
/// let params = [9.81, 1.0, 0.3, 0.1]; // g, l, alpha, gamma
/// let guess = [0.1 - 0.3, 1.5];
/// let one = periodic_orbit(&system, "step", &guess, &params, &OrbitOptions::new(5.0)).unwrap();
/// // Two steps a period: the same orbit, twice the period, the multiplier squared.
/// let options = OrbitOptions::new(10.0).with_events_per_period(2);
/// let two = periodic_orbit(&system, "step", &guess, &params, &options).unwrap();
/// assert!((two.period - 2.0 * one.period).abs() < 1e-9);
/// assert!((two.multipliers[1].re - one.multipliers[1].re.powi(2)).abs() < 1e-9);
/// assert!(one.multipliers[0].trivial);
///
/// // Rolling uphill, the next spoke never strikes: a clear error.
/// let e = periodic_orbit(&system, "step", &[0.1 - 0.3, -1.0], &params, &OrbitOptions::new(5.0));
/// assert_eq!(e.unwrap_err().kind(), "no_return");
/// ```
pub fn periodic_orbit(
    system: &HybridSystem,
    section: &str,
    guess: &[f64],
    params: &[f64],
    options: &OrbitOptions,
) -> Result<PeriodicOrbit, OrbitError> {
    options.validate()?;
    let names = system.transition_names();
    let index = name_index("section transition", &names, section)?;
    for (what, expected, found) in [
        ("initial state", system.state_dim(), guess.len()),
        ("parameters", system.param_dim(), params.len()),
    ] {
        if expected != found {
            return Err(HybridError::DimensionMismatch {
                what: what.to_string(),
                expected,
                found,
            }
            .into());
        }
    }
    options.validate_advancing(system)?;
    let n = system.state_dim();
    let shooting = Shooting {
        system,
        section: index,
        section_name: &names[index],
        start_mode: system.transitions()[index].to,
        options,
        reduction: Reduction::new(n, &options.advancing),
        workspace: std::cell::RefCell::new(Workspace::new()),
    };
    let (x, ret, newton_iterations, residual) = shooting.newton(guess, params)?;
    let return_jacobian = ret.return_jacobian();
    if !options.advancing.is_empty() {
        shifts_alike(system, &options.advancing, &return_jacobian)?;
    }
    let triples = eigen_triples(&ret.monodromy);
    // The multipliers that are 1 whatever the parameters: the trivial one
    // along the flow, then the advancing states' shift, each the closest
    // to 1 of those left.
    let mut exactly_one: Vec<usize> = Vec::with_capacity(2);
    for _ in 0..1 + usize::from(!options.advancing.is_empty()) {
        let one = Complex::new(1.0, 0.0);
        let closest = (0..triples.len())
            .filter(|i| !exactly_one.contains(i))
            .min_by(|&a, &b| {
                (triples[a].value - one)
                    .norm()
                    .total_cmp(&(triples[b].value - one).norm())
            });
        exactly_one.extend(closest);
    }
    let multipliers = triples
        .iter()
        .enumerate()
        .map(|(i, t)| Multiplier {
            re: t.value.re,
            im: t.value.im,
            trivial: exactly_one.first() == Some(&i),
            advancing: exactly_one.get(1) == Some(&i),
        })
        .collect();
    let sensitivities = shooting.sensitivities(&x, params, &ret, &triples, &exactly_one);
    let advance = options
        .advancing
        .iter()
        .map(|&c| ret.state[c] - x[c])
        .collect();
    Ok(PeriodicOrbit {
        advancing: options
            .advancing
            .iter()
            .map(|&c| system.state_names()[c].clone())
            .collect(),
        advance,
        state_names: system.state_names().to_vec(),
        param_names: system.param_names().to_vec(),
        section: section.to_string(),
        events_per_period: options.events_per_period,
        fixed_point: x.iter().copied().collect(),
        period: ret.period,
        newton_iterations,
        residual,
        return_map_jacobian: return_jacobian,
        monodromy: ret.monodromy,
        multipliers,
        sensitivities_unavailable: sensitivities.as_ref().err().cloned(),
        sensitivities: sensitivities.ok(),
    })
}
