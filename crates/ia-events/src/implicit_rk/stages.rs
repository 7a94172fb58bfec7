//! The stages of one ESDIRK step solved to rounding, from the step's start
//! alone: what the discrete adjoint differentiates (ia-adjoint recomputes
//! each step's stages with it, and replays checkpointed segments with it).

use super::linear::IterationMatrix;
use super::tableau::EsdirkTableau;
use crate::stepper::OdeRhs;

/// The most Newton iterations [`solve_stages_exactly`] takes on one stage.
const EXACT_MAX_ITERATIONS: usize = 12;

/// Buffers of [`solve_stages_exactly`], kept between steps.
#[derive(Clone, Debug, Default)]
pub struct StageWorkspace {
    matrix: IterationMatrix,
    w: Vec<f64>,
    f: Vec<f64>,
    dz: Vec<f64>,
}

/// Solves the stages of one step of `tableau` of size `h` from `(t0, y0)`
/// to rounding: full Newton on each stage (the Jacobian, from
/// [`OdeRhs::jacobian`] or [`OdeRhs::sparse_jacobian`], dense or sparse as
/// [`IterationMatrix`] chooses, re-evaluated and `I - h gamma J` factorised at
/// every iterate) until the increment is within a few units of rounding of
/// the stage, or stops decreasing once below `1e-8` of it. The stage states
/// go into `states` and the stage rates `K_i = (Y_i - W_i) / (h gamma)` into
/// `rates` (`s n` floats each, `n = y0.len()`, stage by stage), the state
/// at the step's end being the last stage. `rhs` must be closed (no
/// components after its [`OdeRhs::closed_dim`]) and have a Jacobian;
/// returns false when it has none, a matrix is singular, a value is not
/// finite or a stage does not converge (the buffers then hold the last
/// iterates).
///
/// The result depends on `(t0, h, y0)` only: the same start gives the same
/// stages to the last bit.
#[allow(clippy::too_many_arguments)]
pub fn solve_stages_exactly(
    tableau: &EsdirkTableau,
    rhs: &mut dyn OdeRhs,
    t0: f64,
    h: f64,
    y0: &[f64],
    states: &mut [f64],
    rates: &mut [f64],
    ws: &mut StageWorkspace,
) -> bool {
    let n = y0.len();
    let s = tableau.stages();
    let hg = h * tableau.gamma;
    ws.matrix.configure(rhs, n);
    for (buffer, len) in [(&mut ws.w, n), (&mut ws.f, n), (&mut ws.dz, n)] {
        buffer.resize(len, 0.0);
    }
    states[..n].copy_from_slice(y0);
    rhs.eval(t0, y0, &mut rates[..n]);
    for i in 1..s {
        let ti = t0 + tableau.c[i] * h;
        ws.w.copy_from_slice(y0);
        for (j, &a) in tableau.a[i].iter().enumerate() {
            if a != 0.0 {
                for (w, &k) in ws.w.iter_mut().zip(&rates[j * n..(j + 1) * n]) {
                    *w += h * a * k;
                }
            }
        }
        let z = &mut states[i * n..(i + 1) * n];
        for ((z, &w), &k) in z.iter_mut().zip(&ws.w).zip(&rates[(i - 1) * n..i * n]) {
            *z = w + hg * k;
        }
        let mut previous = f64::INFINITY;
        let mut converged = false;
        for _ in 0..EXACT_MAX_ITERATIONS {
            if !ws.matrix.evaluate(rhs, ti, z) || !ws.matrix.factor(hg) {
                return false;
            }
            rhs.eval(ti, z, &mut ws.f);
            for (((dz, &w), &f), &z) in ws.dz.iter_mut().zip(&ws.w).zip(&ws.f).zip(z.iter()) {
                *dz = w + hg * f - z;
            }
            ws.matrix.solve(&mut ws.dz);
            let mut step = 0.0f64;
            let mut size = 0.0f64;
            for (z, &dz) in z.iter_mut().zip(&ws.dz) {
                *z += dz;
                step = step.max(dz.abs());
                size = size.max(z.abs());
            }
            if !(step.is_finite() && size.is_finite()) {
                return false;
            }
            if step <= 4.0 * f64::EPSILON * size || (step <= 1e-8 * size && step >= 0.5 * previous)
            {
                converged = true;
                break;
            }
            previous = step;
        }
        for ((k, &z), &w) in rates[i * n..(i + 1) * n]
            .iter_mut()
            .zip(z.iter())
            .zip(&ws.w)
        {
            *k = (z - w) / hg;
        }
        if !converged {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::implicit_rk::KVAERNO5;

    /// `y' = -50 (y - cos t)`, a stiff scalar flow with its exact Jacobian.
    struct Relax;
    impl OdeRhs for Relax {
        fn dim(&self) -> usize {
            1
        }
        fn eval(&mut self, t: f64, y: &[f64], dydt: &mut [f64]) {
            dydt[0] = -50.0 * (y[0] - t.cos());
        }
        fn jacobian(&mut self, _t: f64, _y: &[f64], jacobian: &mut [f64]) -> bool {
            jacobian[0] = -50.0;
            true
        }
    }

    #[test]
    fn the_stages_satisfy_their_equations_to_rounding() {
        // Reference: the stage equations themselves, Y_i = W_i + h gamma f(Y_i),
        // whose residual must be at rounding level.
        let s = KVAERNO5.stages();
        let (mut states, mut rates) = (vec![0.0; s], vec![0.0; s]);
        let mut ws = StageWorkspace::default();
        let h = 0.3;
        assert!(solve_stages_exactly(
            &KVAERNO5,
            &mut Relax,
            0.0,
            h,
            &[2.0],
            &mut states,
            &mut rates,
            &mut ws
        ));
        for i in 0..s {
            let mut f = [0.0];
            Relax.eval(KVAERNO5.c[i] * h, &states[i..=i], &mut f);
            assert!(
                (f[0] - rates[i]).abs() < 1e-12 * f[0].abs().max(1.0),
                "stage {i}"
            );
        }
    }
}
