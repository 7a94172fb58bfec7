"""A run of a model as a JAX function, differentiated by the library.

``solver(model, t_end, max_events=K)`` returns ``f(x0, params, t_end=None)``
giving, as JAX arrays:

* ``final_state`` (n): the state at ``t_end``;
* ``event_times`` (K): the first K event times, padded with ``inf``
  (``max_events`` defaults to 0: no event times);
* ``event_count`` (integer): how many events the run had (it may exceed K);
* ``observed`` (n_obs x n): the states at the ``observe`` times;
* ``first_times`` (F): the time each transition named in ``first`` (F
  names, default none) first fires, ``inf`` when it does not fire in the
  run (``first.<transition>.time`` of the library's losses).

``x0`` and ``params`` are arrays in the model's order (``model.state_names``,
``model.param_names``) or dicts by name, whole or partial (a missing name
takes the model's default); a gradient has the structure of its input (a
dict of the names given, for a dict). ``t_end`` given to ``f`` (or a
traced ``t_end`` given to ``solver``) replaces the final time and may be
traced and differentiated: ``d x(T) / dT`` is the flow at the final state
(from the library); event times and observed states do not move with it.

``f`` is a ``jax.custom_jvp`` whose tangent map is a primitive of this
module: linear in the tangents, computed by the library's forward
sensitivities (``jax.jvp``, ``jax.jacfwd``, ``jax.linearize``: every
tangent column of one point in one forward pass), its transpose one
adjoint pass of the library (``jax.grad``, ``jax.value_and_grad``,
``jax.vjp``, ``jax.jacrev``: the gradient of ``L = g_x . x(T) + sum_k
g_t[k] t_k + sum_i g_y[i] . x(t_i)`` for the cotangents ``g``), both exact
through every event (the saltation term included). Second order
(``jax.hessian``, the gradient of a gradient) raises
:class:`impact_adjoint.UnsupportedError`. It runs under ``jax.jit`` and
``jax.vmap`` (a batch goes to the library in one call, its runs spread
over the cores). Under a transformation the run, the tangent pass and
the adjoint pass are XLA custom calls (``jax.ffi.ffi_call``) of handlers
in the extension module, registered for the CPU when this module is
imported: jitted code calls the library from XLA's thread, without
Python. The handlers speak the XLA FFI C API 0.3 (that of jax 0.10): a
jaxlib that does not support it refuses them when this module is
imported (an ``ImportError`` naming both versions), and a call frame of
another layout is an error naming the struct, never a misread.

Precision: the library computes in float64 whatever the inputs' type.
float32 inputs (JAX's default without ``jax_enable_x64``) are widened to
float64, run, and the results rounded to float32; no global switch is
needed. float64 inputs (with ``jax_enable_x64``) give float64 results.

Errors: a plain call ``f(x0, params)`` raises the library's own exception
class (:class:`impact_adjoint.InvalidOptionError`, ...). Under
``jax.jit`` the run happens inside XLA, which raises
``jax.errors.JaxRuntimeError``; its message is XLA's status code, then the
library's kind and message (``INVALID_ARGUMENT: invalid_option: invalid
parameter 'e' = 1.5: ...``): XLA formats every handler error as
``<STATUS CODE>: <message>``, whichever of its codes the handler gives
(see docs/jax.md), so the kind cannot come first. :func:`library_error`
turns it into the library's exception, and :func:`library_errors` (a
context manager and decorator) raises that instead.

A solver may be made inside the differentiated function (``jax.grad`` or
``jax.jit`` of a function that calls ``solver(...)`` itself). Made inside
a function that ``jax.jit`` compiles, it lives as long as the process (JAX
may cache the compiled code and call it again): one solver per tracing,
so jit the function once and call it many times. Otherwise a solver lives
as long as ``f`` and its pending backward passes: jitted code called after
``f`` is gone (a compiled executable kept alone) raises instead of
running.

Padded event times are constants: their derivatives are zero; so are
``inf`` first firing times (a transition that does not fire), whose
cotangents are not read (a NaN there does not spread into the gradient).

Batches: ``jax.vmap`` of ``f`` over samples (per-sample parameters, say
input spike times, with shared weights: ``in_axes=(None, {"t_in0": 0,
..., "w_h0_in0": None, ...})``, or an array of parameters per sample) is
one call of the library, its runs spread over the cores; the gradient
with respect to the shared entries is summed over the batch.

Example (a ball on flat ground, three impacts before ``t_end = 2``)::

    import jax
    import impact_adjoint as ia
    import impact_adjoint.jax as iajax

    f = iajax.solver(ia.Model.ready("ball2d-flat"), 2.0)
    x_T = lambda x0, p: f(x0, p).final_state[0]
    jax.grad(x_T)({"x": 0.0, "y": 1.0, "vx": 1.0, "vy": 0.0}, {"g": 9.81})
    # {"vy": 0.06697247..., ...}: d x(T) / d vy0, where time-stepping autodiff gets 0.0
"""

import contextlib
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

from ._core import JaxSolver, ffi_api_version, ffi_targets
from ._errors import (
    DimensionMismatchError,
    Error,
    InvalidScenarioError,
    UnsupportedError,
    error_class,
)

__all__ = ["solver", "Outputs", "library_error", "library_errors", "MINIMUM_JAX"]

#: The oldest jax whose jaxlib speaks the XLA FFI C API of the handlers
#: (the lower bound of the package's ``jax`` extra).
MINIMUM_JAX = "0.10"


class Outputs(NamedTuple):
    """What ``f(x0, params)`` returns."""

    final_state: jax.Array
    event_times: jax.Array
    event_count: jax.Array
    observed: jax.Array
    #: Always an array in what ``f`` returns (empty without ``first``).
    first_times: jax.Array = None


_SECOND_ORDER = (
    "second-order differentiation (jax.hessian, the gradient of a gradient, "
    "jax.jacfwd of jax.jacrev, ...) of an impact_adjoint.jax solver is not "
    "supported: its first derivatives are exact in both modes (jax.grad, "
    "jax.vjp, jax.jacrev: the adjoint; jax.jvp, jax.jacfwd, jax.linearize: "
    "the forward sensitivities), its second derivatives are not computed"
)


def _not_differentiable(function):
    """``function`` (a pass of the library giving first derivatives) as a
    JAX function whose differentiation raises
    :class:`impact_adjoint.UnsupportedError` instead of JAX's "cannot be
    differentiated" or a wrong number."""
    wrapped = jax.custom_jvp(function)

    def refuse(primals, tangents):
        raise UnsupportedError(_SECOND_ORDER)

    wrapped.defjvp(refuse)
    return wrapped


_TARGETS = ffi_targets()
_OUTPUTS_TARGET = _TARGETS["outputs"][0]
_GRADIENT_TARGET = _TARGETS["gradient"][0]
_TANGENT_TARGET = _TARGETS["tangent"][0]


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
                f"(that of jax {MINIMUM_JAX}); install jax>={MINIMUM_JAX}: {error}"
            ) from error


_register()


# --- The tangent-linear pass as a JAX primitive: linear in the tangents,
# its transpose the adjoint pass, its batching one custom call whose
# batch axes broadcast (so that jax.jacfwd, tangents mapped and the point
# not, is one forward pass with every column). ---

_tangent_p = Primitive("impact_adjoint_tangent")
_tangent_p.multiple_results = True


def _tangent_lead(x0, params, x0_tangent, params_tangent, *t_end):
    """The batch axes of the outputs: those of the arguments broadcast
    (``t_end``, a final time per run when given, has no axis of its own)."""
    return np.broadcast_shapes(
        x0.shape[:-1],
        params.shape[:-1],
        x0_tangent.shape[:-1],
        params_tangent.shape[:-1],
        *(t.shape for t in t_end),
    )


def _tangent_abstract(
    x0, params, after, x0_tangent, params_tangent, *t_end, core, sizes, adjoint
):
    n, _, k, n_obs = sizes
    lead = _tangent_lead(x0, params, x0_tangent, params_tangent, *t_end)
    return [
        jax.core.ShapedArray(lead + shape, x0.dtype)
        for shape in [(n,), (k,), (n_obs, n)]
    ]


def _tangent_impl(x0, params, after, x0_tangent, params_tangent, *t_end, core, sizes, adjoint):
    """One custom call: the tangents with a column axis of 1 (batch axes of
    size 1 broadcast in the handler). ``after`` (an output of the run at
    this point) is not read: it orders the adjoint pass after the run in
    the transpose. A final time per run goes with the initial state (on
    its batch axes)."""
    n, _, k, n_obs = sizes
    lead = _tangent_lead(x0, params, x0_tangent, params_tangent, *t_end)
    rank = len(lead)
    if t_end:
        point = np.broadcast_shapes(x0.shape[:-1], t_end[0].shape)
        x0 = jnp.broadcast_to(x0, point + (n,))
        ones = (1,) * (rank - len(point))
        t_end = (jnp.reshape(jnp.broadcast_to(t_end[0], point), ones + point),)
    widen = lambda a: jnp.reshape(a, (1,) * (rank + 1 - a.ndim) + a.shape)
    shapes = [
        jax.ShapeDtypeStruct(lead + (1,) + shape, x0.dtype) for shape in [(n,), (k,), (n_obs, n)]
    ]
    final, times, observed = jax.ffi.ffi_call(_TANGENT_TARGET, shapes)(
        widen(x0),
        widen(params),
        widen(x0_tangent)[..., None, :],
        widen(params_tangent)[..., None, :],
        *t_end,
        solver=np.uint64(core.ffi_id),
    )
    return [final[..., 0, :], times[..., 0, :], observed[..., 0, :, :]]


def _tangent_batch(args, dims, **params):
    """Every mapped axis to the front, an axis of 1 for an argument not
    mapped: the handler broadcasts them."""
    size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
    moved = [
        jnp.expand_dims(a, 0) if d is None else jnp.moveaxis(a, d, 0)
        for a, d in zip(args, dims)
    ]
    out = _tangent_p.bind(*moved, **params)
    return [jnp.broadcast_to(o, (size,) + o.shape[1:]) for o in out], [0, 0, 0]


def _tangent_transpose(
    cotangents, x0, params, after, x0_tangent, params_tangent, *t_end, core, sizes, adjoint
):
    """The adjoint pass: the cotangents of the tangents from those of the
    outputs (one adjoint pass per batch entry), summed over the batch
    axes a tangent was broadcast along. It depends on ``after`` (an
    output of the taped run), so that XLA runs it after the run whose
    tape it reads."""
    n, n_params, k, n_obs = sizes
    tx_aval = x0_tangent.aval if ad.is_undefined_primal(x0_tangent) else x0_tangent
    tp_aval = params_tangent.aval if ad.is_undefined_primal(params_tangent) else params_tangent
    lead = _tangent_lead(x0, params, tx_aval, tp_aval, *t_end)
    g_final, g_times, g_observed = (
        jnp.zeros(lead + shape, x0.dtype) if type(ct) is ad.Zero else jnp.broadcast_to(ct, lead + shape)
        for ct, shape in zip(cotangents, [(n,), (k,), (n_obs, n)])
    )
    x0, params, _ = jax.lax.optimization_barrier((x0, params, after))
    gx, gp = adjoint(
        jnp.broadcast_to(x0, lead + (n,)),
        jnp.broadcast_to(params, lead + (n_params,)),
        g_final,
        g_times,
        g_observed,
        *(jnp.broadcast_to(t, lead) for t in t_end),
    )

    def reduce_to(g, shape):
        extra = g.ndim - len(shape)
        g = jnp.sum(g, axis=tuple(range(extra))) if extra else g
        axes = tuple(i for i, (a, b) in enumerate(zip(g.shape, shape)) if b == 1 and a != 1)
        return jnp.sum(g, axis=axes, keepdims=True) if axes else g

    return [
        None,
        None,
        None,
        reduce_to(gx, tx_aval.shape) if ad.is_undefined_primal(x0_tangent) else None,
        reduce_to(gp, tp_aval.shape) if ad.is_undefined_primal(params_tangent) else None,
    ] + [None] * len(t_end)


def _tangent_jvp(primals, tangents, **params):
    raise UnsupportedError(_SECOND_ORDER)


_tangent_p.def_impl(_tangent_impl)
_tangent_p.def_abstract_eval(_tangent_abstract)
mlir.register_lowering(_tangent_p, mlir.lower_fun(_tangent_impl, multiple_results=True))
batching.primitive_batchers[_tangent_p] = _tangent_batch
ad.primitive_transposes[_tangent_p] = _tangent_transpose
ad.primitive_jvps[_tangent_p] = _tangent_jvp


# The solvers made inside a traced function whose calls were staged into
# compiled code (``jax.jit``): JAX may cache that code and call it as long
# as the process lives, so they live as long (one per tracing).
_PINNED = {}


def _trace_chain():
    """The types of the traces active now, innermost first."""
    from jax._src import core

    trace = core.trace_ctx.trace
    while trace is not None:
        yield type(trace).__name__
        trace = getattr(trace, "parent_trace", None)


def _tracing():
    """Whether a JAX transformation is tracing the caller."""
    from jax._src import core

    return not core.trace_state_clean()


def _staged():
    """Whether the caller is being staged into compiled code (``jax.jit``
    tracing, possibly under other transformations)."""
    return "DynamicJaxprTrace" in _trace_chain()


def library_error(error):
    """The library's exception for ``error``, a ``jax.errors.JaxRuntimeError``
    raised by jitted code whose run failed (its message carries the
    library's ``kind: message``); ``error`` itself if it is not one of the
    library's. Use it as::

        try:
            jax.jit(f)(x0, params)
        except jax.errors.JaxRuntimeError as e:
            raise iajax.library_error(e) from e
    """
    if isinstance(error, Error):
        return error
    text = str(error)
    for line in text.splitlines():
        # XLA may put its status code first ("INVALID_ARGUMENT: kind: ...").
        for start in range(2):
            parts = line.split(": ", start + 1)
            if len(parts) == start + 2:
                kind, message = parts[start], parts[start + 1]
                if error_class(kind) is not Error:
                    return error_class(kind)(message)
    return error


@contextlib.contextmanager
def library_errors():
    """Raises the library's exception (:func:`library_error`) in place of
    the ``jax.errors.JaxRuntimeError`` of a jitted run that failed inside
    it, chained to it; other errors pass unchanged. A context manager and
    a decorator::

        with iajax.library_errors():
            jax.jit(f)(x0, params)   # an ia.InvalidOptionError, ...
    """
    try:
        yield
    except jax.errors.JaxRuntimeError as error:
        converted = library_error(error)
        if converted is error:
            raise
        raise converted from error


def solver(model, t_end, *, observe=(), max_events=0, first=(), solver=None, mode=None):
    """``f(x0, params) -> Outputs`` for the runs of ``model`` from ``t = 0``
    to ``t_end`` (see the module documentation). ``observe`` are the
    observation times, ``max_events`` the number K of event times returned
    (default 0), ``first`` the transitions whose first firing times are
    returned (``outputs.first_times``; an unknown name raises
    :class:`impact_adjoint.UnknownNameError` listing the valid ones),
    ``solver`` and ``mode`` as in ``model.simulate``. The
    solver is the one the adjoint runs (an ``ode_solvers.*`` method runs as
    its built-in equivalent, as ``model.gradient`` does), so values and
    gradients come from the same steps. Options are checked here, with the
    messages of ``model.simulate``."""
    observe = [float(t) for t in np.asarray(observe, dtype=np.float64).reshape(-1)]

    if isinstance(first, str):
        first = (first,)
    # A traced t_end (a solver made inside a transformed function) is a
    # per-call final time; the solver's own is then the model's.
    traced = isinstance(t_end, jax.core.Tracer)
    core = JaxSolver(
        model,
        None if traced else t_end,
        observe=observe,
        max_events=max_events,
        first=first,
        solver=solver,
        mode=mode,
    )
    made_inside = _tracing()
    return _function(model, t_end, core, made_inside, t_end if traced else None)


def _split_times(out, max_events):
    """``out`` with its time outputs (the library's: the first K event
    times, then the first firing times) split into ``event_times`` and
    ``first_times``."""
    times = out.event_times
    return out._replace(event_times=times[..., :max_events], first_times=times[..., max_events:])


def _function(model, t_end, core, made_inside, default_t_end):
    """The JAX function of the prepared solver ``core`` (``made_inside`` a
    traced function: pinned when staged, see ``_PINNED``); its final time
    ``default_t_end`` when traced, otherwise the solver's. Its custom calls
    return the time outputs whole (K event times, then the first firing
    times); ``f`` splits them."""
    n, n_params, k, n_obs = core.sizes
    max_events = k - core.first_count
    state_defaults = np.asarray(model.default_state, dtype=np.float64)
    param_defaults = np.asarray(model.default_params, dtype=np.float64)

    # The handlers find the solver by this id; ``f`` keeps ``core`` alive
    # (through the closures below), and with it the id's registry entry.
    solver_id = np.uint64(core.ffi_id)
    calls = {}

    def custom_calls(float_type, rated=False, lead=()):
        """The two custom calls for results of ``float_type``: the run (with
        ``rated``, also returning ``d x(T) / dT``) and the adjoint pass
        (the tangent-linear pass is ``_tangent_p``). Each takes a final
        time per run as its last argument where one is given. ``lead``:
        batch axes the adjoint pass's arguments carry themselves (the
        transpose of a batched tangent pass, as in ``jax.grad`` of a
        ``jax.vmap``-ed function), which its results carry too."""
        if (float_type, rated, lead) not in calls:
            count_type = jax.dtypes.canonicalize_dtype(jnp.int64)
            shapes = Outputs(
                jax.ShapeDtypeStruct((n,), float_type),
                jax.ShapeDtypeStruct((k,), float_type),
                jax.ShapeDtypeStruct((), count_type),
                jax.ShapeDtypeStruct((n_obs, n), float_type),
            )
            rate = (jax.ShapeDtypeStruct((n,), float_type),) if rated else ()
            # "broadcast_all": under jax.vmap every argument and result
            # carries the same leading batch axes, run as one batch.
            calls[float_type, rated, lead] = (
                # The call's four results (``first_times`` is split from
                # the time outputs afterwards, ``_split_times``), and the
                # rate where asked.
                jax.ffi.ffi_call(
                    _OUTPUTS_TARGET, tuple(shapes)[:4] + rate, vmap_method="broadcast_all"
                ),
                jax.ffi.ffi_call(
                    _GRADIENT_TARGET,
                    (
                        jax.ShapeDtypeStruct(lead + (n,), float_type),
                        jax.ShapeDtypeStruct(lead + (n_params,), float_type),
                    ),
                    vmap_method="broadcast_all",
                ),
            )
        return calls[float_type, rated, lead]

    def outputs_now(x0, params, float_type, timed):
        """The outputs of one run, computed now (a plain call)."""
        final, times, counts, observed = core.outputs(
            np.asarray(x0, dtype=np.float64).reshape(1, n),
            np.asarray(params, dtype=np.float64).reshape(1, n_params),
            np.asarray(timed[0], dtype=np.float64).reshape(1) if timed else None,
        )
        return Outputs(
            jnp.asarray(final[0], dtype=float_type),
            jnp.asarray(times[0], dtype=float_type),
            jnp.asarray(counts[0]),
            jnp.asarray(observed[0], dtype=float_type),
        )

    @jax.custom_jvp
    def run(x0, params, *t_end):
        outputs_call = custom_calls(x0.dtype)[0]
        return Outputs(*outputs_call(x0, params, *t_end, solver=solver_id))

    @_not_differentiable
    def taped_run(x0, params, *t_end):
        """The run of a differentiated forward call: its tapes are kept
        for the backward pass. With a final time given, also ``d x(T) /
        dT`` (the flow at the final state, from the library)."""
        outputs_call = custom_calls(x0.dtype, rated=bool(t_end))[0]
        return tuple(outputs_call(x0, params, *t_end, solver=solver_id, taped=np.uint64(1)))

    @_not_differentiable
    def adjoint_pass(x0, params, g_final, g_times, g_observed, *t_end):
        """The cotangents of the inputs: one adjoint pass of the library."""
        gradient_call = custom_calls(x0.dtype, lead=tuple(x0.shape[:-1]))[1]
        # The id read from ``core`` here: the closure keeps the solver
        # alive until the backward pass of an eager jax.grad, even when
        # ``f`` itself is gone by then.
        solver = np.uint64(core.ffi_id)
        return tuple(
            gradient_call(x0, params, g_final, g_times, g_observed, *t_end, solver=solver)
        )

    @run.defjvp
    def run_jvp(primals, tangents):
        # The tangent map is linear in the tangents, its transpose the
        # adjoint pass: forward mode runs the forward sensitivities,
        # reverse mode (its transpose) the adjoint.
        x0, params, *t_end = primals
        x0_tangent, params_tangent, *t_end_tangent = tangents
        # The differentiated forward call records its tapes, kept for the
        # backward pass (jax.value_and_grad: one taped run, no replay).
        taped = taped_run(x0, params, *t_end)
        out = Outputs(*taped[:4])
        final, times, observed = _tangent_p.bind(
            x0,
            params,
            out.final_state,
            x0_tangent,
            params_tangent,
            *t_end,
            core=core,
            sizes=(n, n_params, k, n_obs),
            adjoint=adjoint_pass,
        )
        if t_end:
            # d x(T) / dT: the flow at the final state; event times and
            # observed states do not move with T.
            final = final + taped[4] * t_end_tangent[0]
        count = np.zeros(np.shape(out.event_count), dtype=jax.dtypes.float0)
        return out, Outputs(final, times, count, observed)

    def f(x0, params, t_end=None):
        x0 = _vector(x0, n, "x0", "state", model.state_names, state_defaults, core)
        params = _vector(
            params, n_params, "params", "parameter", model.param_names, param_defaults, core
        )
        float_type = _float_type(x0, params)
        x0, params = x0.astype(float_type), params.astype(float_type)
        timed = _final_time(default_t_end if t_end is None else t_end, float_type)
        if made_inside and _staged():
            _PINNED[core.ffi_id] = core
        if not any(isinstance(a, jax.core.Tracer) for a in (x0, params, *timed)):
            # A plain call (no transformation): the library directly, so that
            # a failure raises its own exception class, not JAX's wrapper.
            return _split_times(outputs_now(x0, params, float_type, timed), max_events)
        return _split_times(run(x0, params, *timed), max_events)

    def statistics():
        """How many passes of each kind this solver has made: ``runs``
        (plain runs), ``taped_runs`` (runs recording a tape: differentiated
        forward calls, and backward passes that found no kept tape),
        ``backward_passes`` (adjoint passes), ``replays`` (backward passes
        that ran the model again at inputs a forward call had run, its
        tape used already or evicted; under ``jax.jit`` XLA drops the
        forward call of a ``jax.grad`` or ``jax.jacrev``, whose backward
        pass then runs the model once, taped: a taped run, not a replay),
        ``tangent_passes``
        (forward-sensitivity passes, one per point) and ``tangent_columns``
        (the sensitivity columns they carried: the tangent columns, one
        per column of a ``jax.jacfwd``)."""
        return core.statistics()

    f.statistics = statistics
    f.__doc__ = (
        f"Runs {model.name} from t = 0 to {t_end}: x0 ({n}: {', '.join(model.state_names)}), "
        f"params ({n_params}: {', '.join(model.param_names)}) -> Outputs; "
        "x0 and params are arrays in that order or dicts by name; "
        "t_end (optional, traceable) replaces the final time."
    )
    return f


def _final_time(t_end, float_type):
    """``()`` for the solver's own final time (``None``), otherwise
    ``(t_end,)`` as a number of ``float_type`` (traced or not)."""
    if t_end is None:
        return ()
    try:
        value = jnp.asarray(t_end)
    except TypeError:
        value = None
    if value is None or not jnp.issubdtype(value.dtype, jnp.number):
        raise InvalidScenarioError(f"'t_end' must be a number, got {t_end!r}")
    if value.ndim != 0:
        raise DimensionMismatchError(
            f"dimension mismatch in t_end: expected a number, got an array of shape {value.shape}"
        )
    return (value.astype(float_type),)


def _float_type(x0, params):
    """The type of the results: float64 if an input is float64 (JAX's
    64-bit mode), float32 otherwise; the library computes in float64 in
    both cases."""
    if jnp.float64 in (x0.dtype, params.dtype):
        return jnp.dtype(jnp.float64)
    return jnp.dtype(jnp.float32)


def _vector(value, length, what, kind, names, defaults, core):
    """``value`` (an array in the model's order, or a dict by name over the
    defaults) as a floating JAX vector of ``length`` entries. The entries of
    a dict keep their own values (traced ones too), so that a gradient with
    respect to the dict is a dict of the same names."""
    if value is None:
        value = {}
    if isinstance(value, dict):
        entries = list(defaults)
        given = []
        for name, entry in value.items():
            if not isinstance(name, str):
                raise InvalidScenarioError(
                    f"'{what}' must have names as keys, got the key {name!r}"
                )
            try:
                entry = jnp.asarray(entry)
            except TypeError:
                entry = None
            if entry is None or not jnp.issubdtype(entry.dtype, jnp.number):
                raise InvalidScenarioError(
                    f"'{what}.{name}' must be a number, got {value[name]!r}"
                )
            if entry.ndim != 0:
                raise DimensionMismatchError(
                    f"dimension mismatch in {what}.{name}: expected a number, "
                    f"got an array of shape {entry.shape}"
                )
            entries[core.position(kind, name)] = entry
            given.append(entry)
        float_type = jnp.result_type(*given) if given else jnp.float64
        if not jnp.issubdtype(float_type, jnp.floating):
            float_type = jnp.float64
        float_type = jax.dtypes.canonicalize_dtype(float_type)
        if not entries:
            return jnp.zeros((0,), dtype=float_type)
        return jnp.stack([jnp.asarray(e, dtype=float_type) for e in entries])
    array = jnp.asarray(value)
    if not jnp.issubdtype(array.dtype, jnp.floating):
        array = array.astype(jax.dtypes.canonicalize_dtype(jnp.float64))
    if array.ndim != 1 or array.shape[0] != length:
        found = array.shape[0] if array.ndim == 1 else f"an array of shape {array.shape}"
        raise DimensionMismatchError(
            f"dimension mismatch in {_WHAT[what]}: expected {length} entries, got {found}"
        )
    return array


_WHAT = {"x0": "initial state", "params": "parameters"}
