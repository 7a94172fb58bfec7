//! Newton shooting on the return map, and the parameter derivatives at
//! the orbit it finds.

use crate::error::OrbitError;
use crate::floquet::{eigen_triples, EigenTriple};
use crate::options::OrbitOptions;
use crate::orbit::{ComplexDerivative, OrbitSensitivities};
use crate::reduction::Reduction;
use crate::return_map::Return;
use ia_adjoint::{jacobian_in, Method, Workspace};
use ia_core::HybridSystem;
use ia_events::Problem;
use nalgebra::{Complex, DMatrix, DVector};

/// What one period needs: the system, the section and the options.
pub(crate) struct Shooting<'a> {
    pub(crate) system: &'a HybridSystem,
    pub(crate) section: usize,
    pub(crate) section_name: &'a str,
    pub(crate) start_mode: usize,
    pub(crate) options: &'a OrbitOptions,
    pub(crate) reduction: Reduction,
    /// The buffers of the periods run, kept from one to the next (Newton
    /// iterations, line search, differences).
    pub(crate) workspace: std::cell::RefCell<Workspace>,
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
    pub(crate) fn newton(
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
    pub(crate) fn sensitivities(
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

fn during(error: OrbitError, what: &str) -> OrbitError {
    match error {
        OrbitError::Input(source) => OrbitError::Run {
            during: what.to_string(),
            source,
        },
        other => other,
    }
}
