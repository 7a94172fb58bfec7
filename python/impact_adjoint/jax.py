"""A run of a model as a JAX function, differentiated by the library.

``solver(model, t_end, max_events=K)`` returns ``f(x0, params)`` giving, as
JAX arrays:

* ``final_state`` (n): the state at ``t_end``;
* ``event_times`` (K): the first K event times, padded with ``inf``;
* ``event_count`` (integer): how many events the run had (it may exceed K);
* ``observed`` (n_obs x n): the states at the ``observe`` times.

``f`` is a ``jax.custom_vjp``: its backward pass is one adjoint pass of the
library (the gradient of ``L = g_x . x(T) + sum_k g_t[k] t_k + sum_i g_y[i] .
x(t_i)`` for the cotangents ``g``), exact through every event (the saltation
term included). It runs under ``jax.jit`` (through ``jax.pure_callback``),
``jax.grad``, ``jax.value_and_grad``, ``jax.vjp``, ``jax.jacrev`` and
``jax.vmap`` (a batch goes to the library in one call). Padded event times
are constants: their gradient is zero. Forward mode (``jax.jvp``,
``jax.jacfwd``) raises :class:`impact_adjoint.UnsupportedError`: use
``model.jacobian(method="forward")`` for forward sensitivities.

The results are 64-bit: enable JAX's 64-bit mode first
(``jax.config.update("jax_enable_x64", True)``).

Example (a ball on flat ground, three impacts before ``t_end = 2``)::

    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import impact_adjoint as ia
    import impact_adjoint.jax as iajax

    f = iajax.solver(ia.Model.ready("ball2d-flat"), 2.0, max_events=4)
    x_T = lambda x0, p: f(x0, p).final_state[0]
    jax.grad(x_T)(jnp.array([0.0, 1.0, 1.0, 0.0]), jnp.array([9.81, 0.8, 0.7]))
    # d x(T) / d vy0 = 0.0669724770642..., where time-stepping autodiff gets 0.0
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ._core import JaxSolver
from ._errors import DimensionMismatchError, InvalidOptionError, UnsupportedError

__all__ = ["solver", "Outputs"]


class Outputs(NamedTuple):
    """What ``f(x0, params)`` returns."""

    final_state: jax.Array
    event_times: jax.Array
    event_count: jax.Array
    observed: jax.Array


_FORWARD_MODE = (
    "forward-mode differentiation (jax.jvp, jax.jacfwd, jax.linearize) of an "
    "impact_adjoint.jax solver is not supported: its derivative is one adjoint "
    "pass, reverse mode (jax.grad, jax.value_and_grad, jax.vjp, jax.jacrev); "
    "for forward sensitivities use model.jacobian(x0, params, t_end, method=\"forward\")"
)


def _batched(array, batch, tail):
    """``array`` broadcast to ``batch + tail`` as a C-contiguous float64
    array of shape ``(B,) + tail`` (B runs, the product of ``batch``)."""
    runs = int(np.prod(batch, dtype=np.int64))
    wide = np.broadcast_to(np.asarray(array, dtype=np.float64), batch + tail)
    return np.ascontiguousarray(wide.reshape((runs,) + tail))


def solver(model, t_end, *, observe=(), max_events, solver=None, mode=None):
    """``f(x0, params) -> Outputs`` for the runs of ``model`` from ``t = 0``
    to ``t_end`` (see the module documentation). ``observe`` are the
    observation times, ``max_events`` the number K of event times returned,
    ``solver`` and ``mode`` as in ``model.simulate``. The solver is the one
    the adjoint runs (an ``ode_solvers.*`` method runs as its built-in
    equivalent, as ``model.gradient`` does), so values and gradients come
    from the same steps. Options are checked here, with the messages of
    ``model.simulate``."""
    if not jax.config.read("jax_enable_x64"):
        raise InvalidOptionError(
            "invalid jax_enable_x64 = False: impact_adjoint.jax returns 64-bit "
            "results; call jax.config.update(\"jax_enable_x64\", True) first"
        )
    observe = [float(t) for t in np.asarray(observe, dtype=np.float64).reshape(-1)]
    core = JaxSolver(
        model, t_end, observe=observe, max_events=max_events, solver=solver, mode=mode
    )
    n, n_params, k, n_obs = core.sizes
    f64 = jnp.float64
    shapes = Outputs(
        jax.ShapeDtypeStruct((n,), f64),
        jax.ShapeDtypeStruct((k,), f64),
        jax.ShapeDtypeStruct((), jnp.int64),
        jax.ShapeDtypeStruct((n_obs, n), f64),
    )

    def outputs_callback(x0, params):
        # Under jax.vmap ("expand_dims") the inputs carry leading batch axes
        # (of size 1 where unbatched); every run of the batch in one call.
        batch = np.broadcast_shapes(np.shape(x0)[:-1], np.shape(params)[:-1])
        x0s = _batched(x0, batch, (n,))
        ps = _batched(params, batch, (n_params,))
        final, times, counts, observed = core.outputs(x0s, ps)
        return Outputs(
            final.reshape(batch + (n,)),
            times.reshape(batch + (k,)),
            counts.reshape(batch),
            observed.reshape(batch + (n_obs, n)),
        )

    def gradient_callback(x0, params, g_final, g_times, g_observed):
        batch = np.broadcast_shapes(
            np.shape(x0)[:-1],
            np.shape(params)[:-1],
            np.shape(g_final)[:-1],
            np.shape(g_times)[:-1],
            np.shape(g_observed)[:-2],
        )
        gx, gp = core.cotangent_gradient(
            _batched(x0, batch, (n,)),
            _batched(params, batch, (n_params,)),
            _batched(g_final, batch, (n,)),
            _batched(g_times, batch, (k,)),
            _batched(g_observed, batch, (n_obs, n)),
        )
        return gx.reshape(batch + (n,)), gp.reshape(batch + (n_params,))

    def primal(x0, params):
        return Outputs(
            *jax.pure_callback(
                outputs_callback, shapes, x0, params, vmap_method="expand_dims"
            )
        )

    @jax.custom_vjp
    def run(x0, params):
        return primal(x0, params)

    def run_fwd(x0, params):
        return primal(x0, params), (x0, params)

    def run_bwd(residuals, cotangents):
        x0, params = residuals
        g_final, g_times, _count, g_observed = cotangents
        grads = (
            jax.ShapeDtypeStruct((n,), f64),
            jax.ShapeDtypeStruct((n_params,), f64),
        )
        return jax.pure_callback(
            gradient_callback,
            grads,
            x0,
            params,
            g_final,
            g_times,
            g_observed,
            vmap_method="expand_dims",
        )

    run.defvjp(run_fwd, run_bwd)

    def f(x0, params):
        x0 = _vector(x0, n, "initial state")
        params = _vector(params, n_params, "parameters")
        if not any(isinstance(a, jax.core.Tracer) for a in (x0, params)):
            # A plain call (no transformation): the library directly, so that
            # a failure raises its own exception class, not JAX's wrapper.
            return Outputs(*map(jnp.asarray, outputs_callback(x0, params)))
        try:
            return run(x0, params)
        except TypeError as error:
            if "forward-mode" in str(error) or "jvp" in str(error):
                raise UnsupportedError(_FORWARD_MODE) from None
            raise

    f.__doc__ = (
        f"Runs {model.name} from t = 0 to {t_end}: x0 ({n}: {', '.join(model.state_names)}), "
        f"params ({n_params}: {', '.join(model.param_names)}) -> Outputs."
    )
    return f


def _vector(value, length, what):
    """``value`` as a float64 JAX vector of ``length`` entries."""
    array = jnp.asarray(value, dtype=jnp.float64)
    if array.ndim != 1 or array.shape[0] != length:
        found = array.shape[0] if array.ndim == 1 else f"an array of shape {array.shape}"
        raise DimensionMismatchError(
            f"dimension mismatch in {what}: expected {length} entries, got {found}"
        )
    return array
