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
term included). It runs under ``jax.jit``, ``jax.grad``,
``jax.value_and_grad``, ``jax.vjp``, ``jax.jacrev`` and ``jax.vmap`` (a batch
goes to the library in one call, its runs spread over the cores). Under a
transformation the forward run and the backward pass are XLA custom calls
(``jax.ffi.ffi_call``) of handlers in the extension module, registered for
the CPU when this module is imported: jitted code calls the library from
XLA's thread, without Python. The handlers speak the XLA FFI C API 0.3
(that of jax 0.10): a jaxlib that does not support it refuses them when
this module is imported (an ``ImportError`` naming both versions), and a
call frame of another layout is an error naming the struct, never a
misread. A failed run under ``jax.jit`` raises JAX's runtime error carrying
the library's message, prefixed by its kind (``invalid_option: ...``); a
plain call ``f(x0, params)`` raises the library's own exception class.
The jitted code names its solver by an id: called after ``f`` is gone
(a compiled executable kept alone), it raises instead of running.

Padded event times are constants: their gradient is zero. Forward mode (``jax.jvp``,
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

from ._core import JaxSolver, ffi_api_version, ffi_targets
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


_TARGETS = ffi_targets()
_OUTPUTS_TARGET = _TARGETS["outputs"][0]
_GRADIENT_TARGET = _TARGETS["gradient"][0]


def _register():
    """The extension's XLA FFI handlers as custom-call targets on the CPU
    (once per process: this module is imported once). XLA asks each
    handler for its FFI API version here and refuses one it does not
    support."""
    major, minor = ffi_api_version()
    for name, capsule in _TARGETS.values():
        try:
            jax.ffi.register_ffi_target(name, capsule, platform="cpu")
        except Exception as error:
            raise ImportError(
                f"impact_adjoint.jax: jax {jax.__version__} refused the XLA FFI "
                f"handler {name}, written for the XLA FFI C API {major}.{minor} "
                f"(that of jax 0.10); install a jax whose jaxlib supports it: {error}"
            ) from error


_register()


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

    # The handlers find the solver by this id; ``f`` keeps ``core`` alive
    # (through ``outputs_now``), and with it the id's registry entry.
    solver_id = np.uint64(core.ffi_id)

    def outputs_now(x0, params):
        """The outputs of one run, computed now (a plain call)."""
        final, times, counts, observed = core.outputs(
            np.asarray(x0, dtype=np.float64).reshape(1, n),
            np.asarray(params, dtype=np.float64).reshape(1, n_params),
        )
        return Outputs(final[0], times[0], counts[0], observed[0])

    # "broadcast_all": under jax.vmap every argument and result carries the
    # same leading batch axes, which the handler runs as one batch.
    outputs_call = jax.ffi.ffi_call(_OUTPUTS_TARGET, tuple(shapes), vmap_method="broadcast_all")
    gradient_call = jax.ffi.ffi_call(
        _GRADIENT_TARGET,
        (jax.ShapeDtypeStruct((n,), f64), jax.ShapeDtypeStruct((n_params,), f64)),
        vmap_method="broadcast_all",
    )

    def primal(x0, params):
        return Outputs(*outputs_call(x0, params, solver=solver_id))

    @jax.custom_vjp
    def run(x0, params):
        return primal(x0, params)

    def run_fwd(x0, params):
        return primal(x0, params), (x0, params)

    def run_bwd(residuals, cotangents):
        x0, params = residuals
        g_final, g_times, _count, g_observed = cotangents
        return tuple(gradient_call(x0, params, g_final, g_times, g_observed, solver=solver_id))

    run.defvjp(run_fwd, run_bwd)

    def f(x0, params):
        x0 = _vector(x0, n, "initial state")
        params = _vector(params, n_params, "parameters")
        if not any(isinstance(a, jax.core.Tracer) for a in (x0, params)):
            # A plain call (no transformation): the library directly, so that
            # a failure raises its own exception class, not JAX's wrapper.
            return Outputs(*map(jnp.asarray, outputs_now(x0, params)))
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
