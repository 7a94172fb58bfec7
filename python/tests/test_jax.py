"""impact_adjoint.jax: jax.grad through the library's adjoint against the
closed form and against the library's forward Jacobians; jit, vmap and eager
agree; padding has no gradient; forward mode refuses."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import impact_adjoint as ia
import impact_adjoint.jax as iajax

TIGHT = {"method": "dopri5", "rtol": 1e-12, "atol": 1e-12}
RK4 = {"method": "rk4", "dt": 1e-3}


@pytest.mark.parametrize(
    "solver",
    [TIGHT, {"method": "dop853", "rtol": 1e-12, "atol": 1e-12}, "ode_solvers.dop853"],
    ids=["dopri5", "dop853", "ode_solvers.dop853"],
)
def test_grad_matches_closed_form(closed_form, solver):
    """d x(T) / d (x0, params) on ball2d_flat_a against the closed form, with
    each Dormand-Prince pair (the adapter's runs as the built-in one)."""
    case = closed_form["ball2d_flat_a"]
    ball = ia.Model.ready(case["model"])
    x0 = jnp.array([case["initial_state"][s] for s in ball.state_names])
    params = jnp.array([case["params"][p] for p in ball.param_names])
    run = iajax.solver(ball, case["t_end"], max_events=5, solver=solver)
    gx, gp = jax.grad(lambda x, p: run(x, p).final_state[0], argnums=(0, 1))(x0, params)
    row = case["jacobian"]["x"]
    expected = [row.get(w, 1.0 if w == "initial.x" else 0.0) for w in ball.wrt_names]
    np.testing.assert_allclose(np.concatenate([gx, gp]), expected, rtol=0, atol=1e-10)
    assert abs(float(gx[3]) - 0.06697247706422019) < 1e-10


def equation_model(name):
    """A model written as equations, from crates/ia-equations/tests/data."""
    from conftest import ROOT

    path = ROOT / "crates" / "ia-equations" / "tests" / "data" / f"{name}.json"
    return ia.Model.from_equations(path.read_text())


# Two ready models and one equation model on fixed RK4 steps (forward and
# adjoint run the same discretisation), and three models through the exact
# event-driven solver, one of them written as equations: (name, model,
# t_end, observation times, event slots, solver, rtol).
CASES = [
    ("ball2d-flat", lambda: ia.Model.ready("ball2d-flat"), 2.0, [0.3, 1.2], 3, RK4, 0.0),
    ("two-ball", lambda: ia.Model.ready("two-ball"), 1.0, [0.25, 0.5], 3, RK4, 0.0),
    ("thermostat (equations)", lambda: equation_model("thermostat"), 2.0, [0.5, 1.5], 3, RK4, 0.0),
    ("thermostat, exact", lambda: ia.Model.ready("thermostat"), 5.0, [5.0 / 3.0], 5, "exact", 1e-10),
    ("thermostat (equations), exact", lambda: equation_model("thermostat"), 5.0, [5.0 / 3.0], 5, "exact", 1e-10),
    (
        "lif-network, exact",
        lambda: ia.Model.ready("lif-network", size=5),
        0.02,
        [0.02 / 3.0],
        20,
        "exact",
        1e-10,
    ),
]


@pytest.mark.parametrize(
    "name, make, t_end, observe, k, solver, rtol", CASES, ids=[c[0] for c in CASES]
)
def test_grad_is_forward_jacobian_contracted(name, make, t_end, observe, k, solver, rtol):
    """jax.grad of L = w.x(T) + v.t + sum u_i.x(t_i) equals the library's
    forward Jacobians, by the same solver, contracted with the same weights
    (the exact solver's adjoint against its forward pass: the other mode)."""
    model = make()
    n = len(model.state_names)
    run = iajax.solver(model, t_end, observe=observe, max_events=k, solver=solver)
    x0 = jnp.asarray(model.default_state)
    params = jnp.asarray(model.default_params)
    rng = np.random.default_rng(15)
    w, v, u = rng.normal(size=n), rng.normal(size=k), rng.normal(size=(len(observe), n))

    def loss(x0, params):
        out = run(x0, params)
        times = jnp.where(jnp.arange(k) < out.event_count, out.event_times, 0.0)
        return w @ out.final_state + v @ times + jnp.sum(u * out.observed)

    gx, gp = jax.grad(loss, argnums=(0, 1))(x0, params)
    jac = model.jacobian(x0, params, t_end, method="forward", solver=solver, observe=observe)
    events = min(k, len(jac.event_times))
    assert events >= (2 if solver == "exact" else 1), "the case must have events"
    expected = (
        w @ jac.final_jacobian
        + v[:events] @ jac.event_time_gradients[:events]
        + np.einsum("on,onm->m", u, jac.observation_jacobians)
    )
    np.testing.assert_allclose(np.concatenate([gx, gp]), expected, rtol=rtol, atol=1e-10)


def test_jit_vmap_and_eager_agree():
    ball = ia.Model.ready("ball2d-flat")
    run = iajax.solver(ball, 2.0, observe=[1.0], max_events=4)
    params = jnp.array([9.81, 0.8, 0.7])
    x0s = jnp.array([[0.0, 1.0, 1.0, 0.0], [0.0, 1.2, 0.8, 0.5], [0.1, 0.9, 1.1, -0.3]])

    def loss(x0, params):
        out = run(x0, params)
        return out.final_state[0] + out.event_times[0] + out.observed[0, 1]

    eager = [run(x, params) for x in x0s]
    jitted = [jax.jit(run)(x, params) for x in x0s]
    mapped = jax.vmap(run, in_axes=(0, None))(x0s, params)
    mapped_jit = jax.jit(jax.vmap(run, in_axes=(0, None)))(x0s, params)
    for i, out in enumerate(eager):
        for field in iajax.Outputs._fields:
            a = np.asarray(getattr(out, field))
            np.testing.assert_array_equal(a, np.asarray(getattr(jitted[i], field)))
            np.testing.assert_array_equal(a, np.asarray(getattr(mapped, field))[i])
            np.testing.assert_array_equal(a, np.asarray(getattr(mapped_jit, field))[i])

    grad = jax.grad(loss, argnums=(0, 1))
    eager_grads = [grad(x, params) for x in x0s]
    jit_grads = [jax.jit(grad)(x, params) for x in x0s]
    vmap_grads = jax.vmap(grad, in_axes=(0, None))(x0s, params)
    vmap_jit_grads = jax.jit(jax.vmap(grad, in_axes=(0, None)))(x0s, params)
    for i, (gx, gp) in enumerate(eager_grads):
        for other in (jit_grads[i], (vmap_grads[0][i], vmap_grads[1][i]), (vmap_jit_grads[0][i], vmap_jit_grads[1][i])):
            np.testing.assert_array_equal(gx, other[0])
            np.testing.assert_array_equal(gp, other[1])
    # Batched parameters too (both arguments mapped).
    ps = jnp.stack([params, params.at[1].set(0.7), params.at[2].set(0.5)])
    both = jax.vmap(grad)(x0s, ps)
    for i in range(3):
        single = grad(x0s[i], ps[i])
        np.testing.assert_array_equal(both[0][i], single[0])
        np.testing.assert_array_equal(both[1][i], single[1])


def test_value_and_grad():
    ball = ia.Model.ready("ball2d-flat")
    run = iajax.solver(ball, 2.0, max_events=4)
    x0, params = jnp.asarray(ball.default_state), jnp.asarray(ball.default_params)
    value, (gx, gp) = jax.value_and_grad(
        lambda x, p: run(x, p).final_state[0], argnums=(0, 1)
    )(x0, params)
    lib = ball.gradient(x0, params, 2.0, loss=[{"of": "final.x", "weight": 1.0}])
    assert float(value) == lib.final_state[0]
    np.testing.assert_array_equal(np.concatenate([gx, gp]), lib.gradient)


def test_padded_event_times_have_zero_gradient():
    """Three impacts, K = 6: entries 3..5 are inf padding, constants."""
    ball = ia.Model.ready("ball2d-flat")
    run = iajax.solver(ball, 2.0, max_events=6)
    x0, params = jnp.asarray(ball.default_state), jnp.asarray(ball.default_params)
    out = run(x0, params)
    assert int(out.event_count) == 3
    assert np.all(np.isinf(np.asarray(out.event_times[3:])))
    for j in range(3, 6):
        gx, gp = jax.grad(lambda x, p: run(x, p).event_times[j], argnums=(0, 1))(x0, params)
        assert np.all(np.asarray(gx) == 0.0) and np.all(np.asarray(gp) == 0.0)
    # A loss reading the whole (padded) vector: the padding adds nothing.
    masked = lambda x, p: jnp.sum(jnp.where(jnp.isfinite(run(x, p).event_times), run(x, p).event_times, 0.0))
    first3 = lambda x, p: jnp.sum(run(x, p).event_times[:3])
    np.testing.assert_array_equal(jax.grad(masked)(x0, params), jax.grad(first3)(x0, params))


def test_bad_inputs_raise():
    ball = ia.Model.ready("ball2d-flat")
    run = iajax.solver(ball, 2.0, max_events=4)
    with pytest.raises(ia.DimensionMismatchError, match="expected 4 entries, got 3"):
        run(jnp.zeros(3), jnp.asarray(ball.default_params))
    with pytest.raises(ia.InvalidOptionError, match="parameter 'e' = 1.5"):
        run(jnp.asarray(ball.default_state), jnp.array([9.81, 1.5, 0.7]))
    with pytest.raises(ia.UnknownNameError, match="solver method"):
        iajax.solver(ball, 2.0, max_events=4, solver="rk5")
    with pytest.raises(ia.InvalidOptionError, match="max_events"):
        iajax.solver(ball, 2.0, max_events=-1)
    # Under jit the failure surfaces as JAX's runtime error carrying the
    # library's kind and message (returned by the FFI handler).
    bad = jnp.array([9.81, 1.5, 0.7])
    x0 = jnp.asarray(ball.default_state)
    expected = "invalid_option: invalid parameter 'e' = 1.5: must lie in"
    with pytest.raises(jax.errors.JaxRuntimeError, match=expected):
        jax.jit(run)(x0, bad)
    with pytest.raises(jax.errors.JaxRuntimeError, match=expected):
        jax.jit(jax.grad(lambda x, p: run(x, p).final_state[0]))(x0, bad)
    # One bad run of a batch fails the batch, with its message.
    batch = jnp.stack([jnp.asarray(ball.default_params), bad])
    with pytest.raises(jax.errors.JaxRuntimeError, match=expected):
        jax.jit(jax.vmap(run, in_axes=(None, 0)))(x0, batch)
    # The same under vmap of grad (one backward call, each item's problem
    # made by the worker that runs it) and of value_and_grad (a taped
    # forward call, then the backward call).
    x_end = lambda x, p: run(x, p).final_state[0]
    for transform in (jax.grad, jax.value_and_grad):
        mapped = jax.jit(jax.vmap(transform(x_end, argnums=1), in_axes=(None, 0)))
        with pytest.raises(jax.errors.JaxRuntimeError, match=expected):
            mapped(x0, batch)
    # Several bad items: the first in input order gives the error.
    bad_g = jnp.array([-9.81, 0.8, 0.7])
    first_bad = jnp.stack([jnp.asarray(ball.default_params), bad_g, bad])
    with pytest.raises(jax.errors.JaxRuntimeError, match="parameter 'g' = -9.81"):
        jax.jit(jax.vmap(jax.grad(x_end, argnums=1), in_axes=(None, 0)))(x0, first_bad)


def test_jit_lowers_to_the_ffi_custom_calls():
    """A jitted value_and_grad is two XLA custom calls of the extension's
    handlers (the forward outputs, the backward pass), no Python callback."""
    ball = ia.Model.ready("ball2d-flat")
    run = iajax.solver(ball, 2.0, max_events=4)
    x0, params = jnp.asarray(ball.default_state), jnp.asarray(ball.default_params)
    loss = lambda x, p: run(x, p).final_state[0]
    text = jax.jit(jax.value_and_grad(loss, argnums=(0, 1))).lower(x0, params).as_text()
    calls = [line for line in text.splitlines() if "custom_call" in line]
    assert len(calls) == 2, calls
    assert "@impact_adjoint_jax_outputs(" in calls[0]
    assert "@impact_adjoint_jax_gradient(" in calls[1]
    assert "callback" not in text
    # vmap keeps the one call, batched (every operand has the batch axis).
    mapped = jax.jit(jax.vmap(loss, in_axes=(0, None))).lower(jnp.stack([x0, x0]), params).as_text()
    (call,) = [line for line in mapped.splitlines() if "custom_call" in line]
    assert "@impact_adjoint_jax_outputs(" in call and "tensor<2x3xf64>" in call


def test_ffi_handler_checks_its_inputs():
    """The handlers check what XLA hands them (dtype, shapes, the solver
    attribute) and return the failure as an error, never a crash: calls
    made directly with jax.ffi.ffi_call, as a wrong lowering would."""
    ball = ia.Model.ready("ball2d-flat")
    core = iajax.JaxSolver(ball, 2.0, max_events=4)
    f64 = jnp.float64
    shapes = (
        jax.ShapeDtypeStruct((4,), f64),
        jax.ShapeDtypeStruct((4,), f64),
        jax.ShapeDtypeStruct((), jnp.int64),
        jax.ShapeDtypeStruct((0, 4), f64),
    )
    call = jax.ffi.ffi_call("impact_adjoint_jax_outputs", shapes)
    x0, params = jnp.asarray(ball.default_state), jnp.asarray(ball.default_params)
    solver = np.uint64(core.ffi_id)
    # The right call works, and agrees with the Python method.
    out = call(x0, params, solver=solver)
    direct = core.outputs(np.asarray(x0)[None], np.asarray(params)[None])
    np.testing.assert_array_equal(np.asarray(out[0]), direct[0][0])
    error = jax.errors.JaxRuntimeError
    with pytest.raises(error, match=r"dimension mismatch in the initial state: expected shape \[4\], got \[3\]"):
        call(jnp.zeros(3), params, solver=solver)
    with pytest.raises(error, match="the parameters must be float64, got float32"):
        call(x0, params.astype(jnp.float32), solver=solver)
    with pytest.raises(error, match="no solver with id 0"):
        call(x0, params, solver=np.uint64(0))
    # (-1: JAX caches eager calls by attribute value, and -1 equals no id
    # used before, whatever its type.)
    with pytest.raises(error, match="the attribute 'solver' must be a uint64 scalar"):
        call(x0, params, solver=np.int32(-1))
    with pytest.raises(error, match="no attribute 'solver'"):
        call(x0, params)
    with pytest.raises(error, match=r"dimension mismatch in the event times: expected shape \[4\], got \[5\]"):
        wrong = shapes[:1] + (jax.ShapeDtypeStruct((5,), f64),) + shapes[2:]
        jax.ffi.ffi_call("impact_adjoint_jax_outputs", wrong)(x0, params, solver=solver)
    with pytest.raises(error, match="takes 2 arguments, got 1"):
        call(x0, solver=solver)


def test_compiled_code_outliving_its_solver_raises():
    """Jitted code names its solver by id: run after the solver is freed,
    it raises (the id is no longer registered) instead of reading freed
    memory."""
    import gc

    ball = ia.Model.ready("ball2d-flat")
    run = iajax.solver(ball, 2.0, max_events=4)
    x0, params = jnp.asarray(ball.default_state), jnp.asarray(ball.default_params)
    compiled = jax.jit(run).lower(x0, params).compile()
    expected = np.asarray(run(x0, params).final_state)
    np.testing.assert_array_equal(np.asarray(compiled(x0, params).final_state), expected)
    del run
    gc.collect()
    # A compiled executable called directly raises XLA's INVALID_ARGUMENT
    # status as ValueError (jit's dispatch as JaxRuntimeError).
    with pytest.raises((jax.errors.JaxRuntimeError, ValueError), match="no solver with id .* has been freed"):
        compiled(x0, params)


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
def test_batches_run_in_a_forked_child():
    """The batch pool is made once per process: a child forked after the
    parent ran a batch (the pool's threads do not survive fork) makes its
    own instead of waiting forever on the parent's. The child uses the
    JaxSolver method (the same batch code as the FFI handler) and compares
    with the parent's result."""
    import os
    import time
    import warnings

    ball = ia.Model.ready("ball2d-flat")
    core = iajax.JaxSolver(ball, 2.0, max_events=4)
    x0s = np.array([[0.0, 1.0, 1.0, 0.0], [0.0, 1.2, 0.8, 0.5], [0.1, 0.9, 1.1, -0.3]])
    params = np.tile(ball.default_params, (3, 1))
    expected = core.outputs(x0s, params)[0]
    with warnings.catch_warnings():
        # Python warns that forking a process with threads may deadlock:
        # the child here touches only the extension, which is the point.
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        ok = False
        try:
            ok = np.array_equal(core.outputs(x0s, params)[0], expected)
        finally:
            os._exit(0 if ok else 1)
    deadline = time.monotonic() + 30.0
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0, "the child's batch differs"
            return
        time.sleep(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    pytest.fail("the child's batch did not finish in 30 s (the parent's pool, inherited through fork)")


def test_nested_vmap_empty_batches_and_no_event_times():
    """The handlers take any number of batch axes (vmap of vmap: each
    gradient equals the single call's), an empty batch, and K = 0 (a
    zero-size result buffer)."""
    ball = ia.Model.ready("ball2d-flat")
    run = iajax.solver(ball, 2.0, observe=[0.5], max_events=3)
    x, p = jnp.asarray(ball.default_state), jnp.asarray(ball.default_params)
    loss = lambda x, p: run(x, p).final_state[0] + run(x, p).observed[0, 1]
    grid = jnp.stack([
        jnp.stack([x, x.at[1].set(1.1), x.at[1].set(1.2)]),
        jnp.stack([x.at[2].set(0.5), x, x.at[3].set(0.1)]),
    ])
    nested = jax.jit(jax.vmap(jax.vmap(jax.grad(loss), in_axes=(0, None)), in_axes=(0, None)))(grid, p)
    assert nested.shape == (2, 3, 4)
    for i in range(2):
        for j in range(3):
            np.testing.assert_array_equal(nested[i, j], jax.grad(loss)(grid[i, j], p))
    empty = jax.jit(jax.vmap(jax.grad(loss), in_axes=(0, None)))(jnp.zeros((0, 4)), p)
    assert empty.shape == (0, 4)
    no_times = iajax.solver(ball, 2.0, max_events=0)
    out = jax.jit(no_times)(x, p)
    assert out.event_times.shape == (0,) and int(out.event_count) == 3
    # The same steps as with K = 3 (observation times would add stops).
    with_times = iajax.solver(ball, 2.0, max_events=3)
    np.testing.assert_array_equal(
        jax.jit(jax.grad(lambda x, p: no_times(x, p).final_state[0]))(x, p),
        jax.grad(lambda x, p: with_times(x, p).final_state[0])(x, p),
    )


def test_concurrent_jitted_calls_agree():
    """The handlers run on whichever thread calls: four Python threads
    making jitted single and batched gradients of one solver at once get
    the single-threaded result, bit for bit."""
    import threading

    ball = ia.Model.ready("ball2d-flat")
    run = iajax.solver(ball, 2.0, max_events=4)
    x0, params = jnp.asarray(ball.default_state), jnp.asarray(ball.default_params)
    loss = lambda x, p: run(x, p).final_state[0]
    single = jax.jit(jax.grad(loss, argnums=(0, 1)))
    batched = jax.jit(jax.vmap(jax.grad(loss, argnums=1), in_axes=(None, 0)))
    expected = np.concatenate(single(x0, params))
    rows = jnp.stack([params] * 8)
    failures = []

    def work():
        try:
            for _ in range(50):
                if not np.array_equal(np.concatenate(single(x0, params)), expected):
                    failures.append("single")
                if not np.all(np.asarray(batched(x0, rows)) == expected[4:]):
                    failures.append("batch")
        except Exception as error:  # reported below, not lost in the thread
            failures.append(repr(error))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures[:3]


@pytest.mark.parametrize(
    "k, shown", [(-1, "invalid max_events = -1:"), (2.5, "invalid max_events = float 2.5:")]
)
def test_a_bad_max_events_is_named_with_its_value(k, shown):
    with pytest.raises(ia.InvalidOptionError) as caught:
        iajax.solver(ia.Model.ready("ball2d-flat"), 2.0, max_events=k)
    assert shown in str(caught.value), str(caught.value)


@pytest.mark.parametrize("value", [False, True], ids=["grad", "value_and_grad"])
def test_batches_in_kept_workspaces_equal_single_gradients(value):
    """The batch's workers keep their workspaces (and tapes) from one call
    to the next: items of no impact up to about eight in one batch (heights
    from 0.2 to 15: t_end = 1.5 ends before the first impact or after
    several, none near the accumulation of bounces, at 9 times the first
    fall with e = 0.8),
    an observation and the first event times among the outputs, then the
    same batch reversed and again with other velocities, each item equal
    bit for bit to the library's one-shot gradient of the same loss
    (`model.gradient`, its own thread-kept workspace)."""
    ball = ia.Model.ready("ball2d-flat")
    run = iajax.solver(ball, 1.5, observe=[0.5], max_events=3)
    params = jnp.array([9.81, 0.8, 0.7])
    heights = [0.2, 0.3, 0.5, 0.8, 1.2, 2.0, 3.0, 5.0, 8.0, 12.0, 15.0, 0.25]
    x0s = jnp.array([[0.0, h, 1.0, 0.3 * (i % 3) - 0.3] for i, h in enumerate(heights)])

    def loss(x0, params):
        out = run(x0, params)
        return out.final_state[1] + out.observed[0, 3] + jnp.sum(jnp.where(jnp.isfinite(out.event_times), out.event_times, 0.0))

    def library(x0):
        counts = int(run(x0, params).event_count)
        terms = [{"of": "final.y", "weight": 1.0}, {"of": "observation.0.vy", "weight": 1.0}]
        terms += [{"of": f"event.{k}.time", "weight": 1.0} for k in range(min(counts, 3))]
        return ball.gradient(np.asarray(x0), np.asarray(params), 1.5, loss=terms, observe=[0.5]).gradient, counts

    how = jax.value_and_grad if value else jax.grad
    mapped = jax.jit(jax.vmap(how(loss, argnums=(0, 1)), in_axes=(0, None)))
    counts = set()
    for batch in (x0s, x0s[::-1], x0s.at[:, 3].add(0.2)):
        out = mapped(batch, params)
        gx, gp = out[1] if value else out
        for i, x0 in enumerate(batch):
            expected, k = library(x0)
            counts.add(k)
            np.testing.assert_array_equal(np.concatenate([gx[i], gp[i]]), expected)
    assert len(counts) >= 4 and 0 in counts, counts
