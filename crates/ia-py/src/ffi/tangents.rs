//! The handler body of [`super::TANGENT_TARGET`] (forward mode): the
//! arguments and results of the tangent-linear custom call checked and
//! handed to [`crate::jax::SolverCore::tangents`].

use super::{
    buffer, check_counts, check_shape, final_times, float_type, input, library_failure, solver,
    to_f32, CallFrame, Failure, Narrowed, View, DTYPE_F64,
};
use crate::broadcast::broadcast_items;
use crate::jax::{Sizes, TangentsIn, TangentsOut};

/// The leading (batch) axes of a buffer whose last `tail` axes are its
/// own.
fn lead_of<'a>(what: &str, view: &View<'a>, tail: usize) -> Result<&'a [i64], Failure> {
    view.dims
        .len()
        .checked_sub(tail)
        .map(|r| &view.dims[..r])
        .ok_or_else(|| {
            Failure::invalid(format!(
                "impact_adjoint.jax: {what} must have at least {tail} axes, got {:?}",
                view.dims
            ))
        })
}

/// [`TANGENT_TARGET`] at execution: arguments `x0 (..., n)`, `params
/// (..., n_params)`, their `m` tangent columns `(..., m, n)` and `(..., m,
/// n_params)`, whose batch axes broadcast (size 1 where an argument is not
/// mapped); results, on the broadcast batch axes, the tangents of the
/// final states `(..., m, n)`, of the event times `(..., m, K)` and of the
/// observed states `(..., m, n_obs, n)`. Entries at one point (`jax.jacfwd`:
/// tangents mapped, the point not) share one forward pass.
pub(super) fn run_tangents(frame: &CallFrame) -> Result<(), Failure> {
    let timed = frame.args.size == 5;
    check_counts(frame, 4 + usize::from(timed), 3)?;
    let core = solver(frame)?;
    let Sizes {
        n,
        n_params,
        k,
        n_obs,
    } = core.sizes();
    let names = [
        "the initial state",
        "the parameters",
        "the tangents of the initial state",
        "the tangents of the parameters",
    ];
    let (b0, x0) = buffer(&frame.args, 0, names[0])?;
    let (b1, p) = buffer(&frame.args, 1, names[1])?;
    let (b2, tx) = buffer(&frame.args, 2, names[2])?;
    let (b3, tp) = buffer(&frame.args, 3, names[3])?;
    let float = float_type(names[0], b0)?;
    let m = match lead_of(names[2], &tx, 1)?.last() {
        Some(&m) if m >= 0 => m as usize,
        _ => {
            return Err(Failure::invalid(
                "impact_adjoint.jax: the tangents of the initial state must have a column axis"
                    .into(),
            ))
        }
    };
    let leads = [
        lead_of(names[0], &x0, 1)?,
        lead_of(names[1], &p, 1)?,
        lead_of(names[2], &tx, 2)?,
        lead_of(names[3], &tp, 2)?,
    ];
    let nx = check_shape(names[0], b0, x0.dims, float, leads[0], &[n])?;
    let np = check_shape(names[1], b1, p.dims, float, leads[1], &[n_params])?;
    let ntx = check_shape(names[2], b2, tx.dims, float, leads[2], &[m, n])?;
    let ntp = check_shape(names[3], b3, tp.dims, float, leads[3], &[m, n_params])?;
    let t_end = timed
        .then(|| final_times(frame, 4, float, leads[0]))
        .transpose()?;
    let (lead, items) = broadcast_items(leads).map_err(Failure::invalid)?;
    let (r0, df) = buffer(&frame.rets, 0, "the tangents of the final state")?;
    let what = "the tangents of the final state";
    let ndf = check_shape(what, r0, df.dims, float, &lead, &[m, n])?;
    let (r1, dt) = buffer(&frame.rets, 1, "the tangents of the event times")?;
    let what = "the tangents of the event times";
    let ndt = check_shape(what, r1, dt.dims, float, &lead, &[m, k])?;
    let (r2, dobs) = buffer(&frame.rets, 2, "the tangents of the observed states")?;
    let what = "the tangents of the observed states";
    let ndo = check_shape(what, r2, dobs.dims, float, &lead, &[m, n_obs, n])?;
    let wide = float == DTYPE_F64;
    // SAFETY: each buffer's dtype and shape were checked just above.
    let (x0s, ps, txs, tps, mut df, mut dt, mut dobs) = unsafe {
        (
            input(&x0, nx, float),
            input(&p, np, float),
            input(&tx, ntx, float),
            input(&tp, ntp, float),
            Narrowed::<f64, f32>::new(&df, ndf, wide),
            Narrowed::<f64, f32>::new(&dt, ndt, wide),
            Narrowed::<f64, f32>::new(&dobs, ndo, wide),
        )
    };
    let input_ = TangentsIn {
        columns: m,
        x0s: &x0s,
        params: &ps,
        x0_tangents: &txs,
        param_tangents: &tps,
        t_ends: t_end.as_deref(),
        items: &items,
    };
    let out = TangentsOut {
        final_state: df.values(),
        event_times: dt.values(),
        observed: dobs.values(),
    };
    core.tangents(&input_, out).map_err(library_failure)?;
    df.store(to_f32);
    dt.store(to_f32);
    dobs.store(to_f32);
    Ok(())
}
