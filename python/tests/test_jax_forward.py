"""Forward mode of impact_adjoint.jax (issue 30): jax.jvp, jax.jacfwd and
jax.linearize run the library's forward sensitivities (every tangent
column of a point in one forward pass), reverse mode stays the adjoint,
and second order is a clear error.

References: the closed form of ball2d_flat_a (crates/ia-verify/references/
closed_form.json, computed outside the project), the library's forward
Jacobian (model.jacobian(method="forward"), checked against the closed
forms by ia-verify) and the adjoint (jax.jacrev, the other mode)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import impact_adjoint as ia
import impact_adjoint.jax as iajax
from test_jax import CASES, TIGHT


def test_jvp_and_jacfwd_match_the_closed_form(closed_form):
    case = closed_form["ball2d_flat_a"]
    ball = ia.Model.ready(case["model"])
    x0 = jnp.array([case["initial_state"][s] for s in ball.state_names])
    params = jnp.array([case["params"][p] for p in ball.param_names])
    run = iajax.solver(ball, case["t_end"], max_events=5, solver=TIGHT)
    row = case["jacobian"]["x"]
    expected = [row.get(w, 1.0 if w == "initial.x" else 0.0) for w in ball.wrt_names]
    jx, jp = jax.jacfwd(lambda x, p: run(x, p).final_state[0], argnums=(0, 1))(x0, params)
    np.testing.assert_allclose(np.concatenate([jx, jp]), expected, rtol=0, atol=1e-10)
    # d x(T) / d vy0 by one jvp with the tangent e_vy.
    _, tangent = jax.jvp(lambda x: run(x, params).final_state[0], (x0,), (jnp.eye(4)[3],))
    assert abs(float(tangent) - 0.06697247706422019) < 1e-10


@pytest.mark.parametrize(
    "name, make, t_end, observe, k, solver, rtol", CASES, ids=[c[0] for c in CASES]
)
def test_jacfwd_is_the_library_forward_jacobian(name, make, t_end, observe, k, solver, rtol):
    """jacfwd of every output against model.jacobian(method="forward") by
    the same solver (the same numbers: each column is one of its columns),
    and against jacrev (the adjoint) to 1e-10."""
    model = make()
    n = len(model.state_names)
    run = iajax.solver(model, t_end, observe=observe, max_events=k, solver=solver)
    x0 = jnp.asarray(model.default_state)
    params = jnp.asarray(model.default_params)
    jac = model.jacobian(x0, params, t_end, method="forward", solver=solver, observe=observe)
    outputs = lambda x, p: (run(x, p).final_state, run(x, p).observed)
    fwd = jax.jacfwd(outputs, argnums=(0, 1))(x0, params)
    final = np.concatenate(fwd[0], axis=1)
    observed = np.concatenate(fwd[1], axis=2)
    np.testing.assert_allclose(final, jac.final_jacobian, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(observed, jac.observation_jacobians, rtol=1e-13, atol=1e-13)
    events = min(k, len(jac.event_times))
    times = jax.jacfwd(lambda x, p: run(x, p).event_times, argnums=(0, 1))(x0, params)
    times = np.concatenate(times, axis=1)
    np.testing.assert_allclose(times[:events], jac.event_time_gradients[:events], rtol=1e-13, atol=1e-13)
    assert np.all(times[events:] == 0.0), "padding has no tangent"
    # The adjoint agrees (the other mode).
    rev = jax.jacrev(outputs, argnums=(0, 1))(x0, params)
    np.testing.assert_allclose(np.concatenate(rev[0], axis=1), final, rtol=max(rtol, 1e-12), atol=1e-10)
    assert final.shape == (n, n + len(model.param_names))


def test_jvp_vjp_jacfwd_jacrev_agree_under_jit_and_vmap():
    ball = ia.Model.ready("ball2d-flat")
    run = iajax.solver(ball, 2.0, observe=[1.0], max_events=4)
    p = jnp.array([9.81, 0.8, 0.7])
    x0s = jnp.array([[0.0, 1.0, 1.0, 0.0], [0.0, 1.2, 0.8, 0.5], [0.1, 0.9, 1.1, -0.3]])
    f = lambda x: jnp.concatenate([run(x, p).final_state, run(x, p).observed[0], run(x, p).event_times[:2]])
    v = jnp.array([0.3, -0.2, 0.5, 1.0])
    for x in x0s:
        jf = jax.jacfwd(f)(x)
        np.testing.assert_array_equal(jax.jit(jax.jacfwd(f))(x), jf)
        np.testing.assert_allclose(jax.jacrev(f)(x), jf, rtol=1e-9, atol=1e-10)
        np.testing.assert_allclose(jax.jit(jax.jacrev(f))(x), jf, rtol=1e-9, atol=1e-10)
        _, tangent = jax.jvp(f, (x,), (v,))
        np.testing.assert_allclose(tangent, jf @ v, rtol=1e-13, atol=1e-13)
        np.testing.assert_array_equal(jax.jit(lambda x, v: jax.jvp(f, (x,), (v,))[1])(x, v), tangent)
        w = jnp.arange(10.0)
        _, pullback = jax.vjp(f, x)
        np.testing.assert_allclose(pullback(w)[0], w @ jf, rtol=1e-9, atol=1e-10)
        _, lin = jax.linearize(f, x)
        np.testing.assert_allclose(lin(v), tangent, rtol=1e-13, atol=1e-13)
    mapped = jax.vmap(jax.jacfwd(f))(x0s)
    mapped_jit = jax.jit(jax.vmap(jax.jacfwd(f)))(x0s)
    jvps = jax.vmap(lambda x: jax.jvp(f, (x,), (v,))[1])(x0s)
    for i, x in enumerate(x0s):
        np.testing.assert_array_equal(mapped[i], jax.jacfwd(f)(x))
        np.testing.assert_array_equal(mapped_jit[i], mapped[i])
        np.testing.assert_allclose(jvps[i], mapped[i] @ v, rtol=1e-13, atol=1e-13)
    # Tangents mapped over another axis than the point (in_axes mixed).
    vs = jnp.stack([v, 2.0 * v])
    both = jax.vmap(lambda x, v: jax.jvp(f, (x,), (v,))[1])(x0s[:2], vs)
    np.testing.assert_allclose(both[1], 2.0 * (mapped[1] @ v), rtol=1e-13, atol=1e-13)


def test_jacfwd_is_one_tangent_call_and_reverse_mode_the_adjoint():
    """jit(jacfwd) lowers to ONE tangent-linear custom call for all 7
    columns, which the handler runs as one forward pass (one per distinct
    point);
    jit(value_and_grad) to the run and the adjoint pass, no tangent call."""
    ball = ia.Model.ready("ball2d-flat")
    run = iajax.solver(ball, 2.0, max_events=4)
    x0, params = jnp.asarray(ball.default_state), jnp.asarray(ball.default_params)
    f = lambda x, p: run(x, p).final_state
    text = jax.jit(jax.jacfwd(f, argnums=(0, 1))).lower(x0, params).as_text()
    calls = [line for line in text.splitlines() if "custom_call" in line]
    tangent = [c for c in calls if "@impact_adjoint_jax_tangent(" in c]
    # One tangent call: the point once (1 x 4, 1 x 3), the 7 columns of the
    # basis as a batch of tangents broadcast against it.
    assert len(tangent) == 1, calls
    assert "(tensor<1x4xf64>, tensor<1x3xf64>, tensor<7x1x4xf64>, tensor<7x1x3xf64>)" in tangent[0], tangent
    assert all("@impact_adjoint_jax_outputs(" in c for c in calls if c not in tangent), calls
    loss = lambda x, p: run(x, p).final_state[0]
    text = jax.jit(jax.value_and_grad(loss, argnums=(0, 1))).lower(x0, params).as_text()
    assert "@impact_adjoint_jax_tangent(" not in text
    assert "@impact_adjoint_jax_gradient(" in text


@pytest.mark.parametrize(
    "second",
    [
        lambda g: jax.hessian(g),
        lambda g: jax.grad(lambda x: jax.grad(g)(x)[0]),
        lambda g: jax.jacfwd(jax.jacfwd(g)),
        lambda g: jax.jacrev(jax.jacfwd(g)),
    ],
    ids=["hessian", "grad-of-grad", "jacfwd-of-jacfwd", "jacrev-of-jacfwd"],
)
def test_second_order_is_a_clear_error(second):
    """Before: JAX's internal "The FFI call ... cannot be differentiated"."""
    ball = ia.Model.ready("ball2d-flat")
    run = iajax.solver(ball, 2.0)
    params = jnp.asarray(ball.default_params)
    g = lambda x: run(x, params).final_state[0]
    with pytest.raises(ia.UnsupportedError, match="second-order differentiation .* not supported"):
        second(g)(jnp.asarray(ball.default_state))


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_value_and_grad_is_one_taped_run(jit):
    """Before: a plain run for the value, then a taped run for the
    gradient. Now the forward call's tape is the backward pass's residual:
    one taped run, one adjoint pass, no replay (the solver's statistics),
    and the gradient of the library to the last bit."""
    ball = ia.Model.ready("ball2d-flat")
    run = iajax.solver(ball, 2.0, max_events=4)
    x0, params = jnp.asarray(ball.default_state), jnp.asarray(ball.default_params)
    value_and_grad = jax.value_and_grad(lambda x, p: run(x, p).final_state[0], argnums=(0, 1))
    if jit:
        value_and_grad = jax.jit(value_and_grad)
    value, (gx, gp) = value_and_grad(x0, params)
    assert run.statistics() == {
        "runs": 0,
        "taped_runs": 1,
        "backward_passes": 1,
        "replays": 0,
        "tangent_passes": 0,
        "tangent_columns": 0,
    }, run.statistics()
    lib = ball.gradient(x0, params, 2.0, loss=[{"of": "final.x", "weight": 1.0}])
    assert float(value) == lib.final_state[0]
    np.testing.assert_array_equal(np.concatenate([gx, gp]), lib.gradient)
    # A batch: one taped run per item, each backward pass finds its tape.
    xs = jnp.stack([x0, x0.at[1].set(1.2), x0.at[3].set(0.4)])
    grads = jax.vmap(jax.grad(lambda x: run(x, params).final_state[0]))(xs)
    stats = run.statistics()
    assert (stats["taped_runs"], stats["backward_passes"], stats["replays"]) == (4, 4, 0), stats
    np.testing.assert_array_equal(grads[0], gx)
    # jacfwd: one forward pass for the 4 columns, at one point.
    jax.jacfwd(lambda x: run(x, params).final_state)(x0)
    assert run.statistics()["tangent_passes"] == 1


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_grad_is_one_taped_run_and_a_replay_is_a_second_run(jit):
    """Before: a jitted jax.grad counted a replay, though the model ran
    once (XLA drops the forward call whose outputs a grad does not use, and
    the backward call records the run). Now `replays` counts only a
    backward pass that runs the model again at inputs a forward call ran:
    a jax.vjp whose backward function is called twice (the tape serves its
    first call), or one called after the tape was evicted by later forward
    calls (more than tapes.rs's MIN_KEPT = 16 runs since). The gradients
    are the library's to the last bit every time."""
    ball = ia.Model.ready("ball2d-flat")
    run = iajax.solver(ball, 2.0, max_events=4)
    x0, params = jnp.asarray(ball.default_state), jnp.asarray(ball.default_params)
    x_t = lambda x, p: run(x, p).final_state[0]
    lib = ball.gradient(x0, params, 2.0, loss=[{"of": "final.x", "weight": 1.0}]).gradient
    grad = jax.grad(x_t, argnums=(0, 1))
    if jit:
        grad = jax.jit(grad)
    gx, gp = grad(x0, params)
    np.testing.assert_array_equal(np.concatenate([gx, gp]), lib)
    stats = run.statistics()
    assert (stats["runs"], stats["taped_runs"], stats["backward_passes"], stats["replays"]) == (
        0, 1, 1, 0
    ), stats
    # Called again at the same point: one more run (a new tape eagerly,
    # or the backward call's own under jit), still no replay.
    grad(x0, params)
    stats = run.statistics()
    assert (stats["taped_runs"], stats["backward_passes"], stats["replays"]) == (2, 2, 0), stats
    # A vjp's backward function called twice: the second call runs the
    # model again at the forward call's inputs, a replay.
    value, backward = jax.vjp(x_t, x0, params)
    for replays in (0, 1):
        gx, gp = backward(jnp.float64(1.0))
        np.testing.assert_array_equal(np.concatenate([gx, gp]), lib)
        stats = run.statistics()
        assert (stats["taped_runs"], stats["replays"]) == (3 + replays, replays), stats
    # A tape evicted by 17 later forward calls (16 runs are kept at least):
    # its backward pass replays the run.
    value, backward = jax.vjp(x_t, x0, params)
    for k in range(17):
        jax.vjp(x_t, x0.at[1].set(1.0 + 0.01 * (k + 1)), params)
    before = run.statistics()
    gx, gp = backward(jnp.float64(1.0))
    np.testing.assert_array_equal(np.concatenate([gx, gp]), lib)
    after = run.statistics()
    assert after["replays"] - before["replays"] == 1, (before, after)
    assert after["taped_runs"] - before["taped_runs"] == 1, (before, after)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_jacfwd_carries_only_its_tangent_columns(jit):
    """Before: the tangent pass formed the full forward Jacobian (n + n_params
    = 7 columns on ball2d-flat) per point and contracted it. Now a jacfwd
    of m columns is one forward pass carrying m columns (the statistics
    say so), and a jvp along a direction mixing the initial state and the
    parameters carries one; the numbers are the library's: the columns of
    its forward Jacobian on the same steps (jax.jacrev, the adjoint, agrees)."""
    ball = ia.Model.ready("ball2d-flat")
    run = iajax.solver(ball, 2.0, observe=[1.0], max_events=4)
    x0, params = jnp.asarray(ball.default_state), jnp.asarray(ball.default_params)

    def f(x, p):
        out = run(x, p)
        return jnp.concatenate([out.final_state, out.observed[0], out.event_times[:2]])

    jacfwd = jax.jacfwd(f, argnums=1)
    jvp = lambda x, p, vx, vp: jax.jvp(f, (x, p), (vx, vp))[1]
    if jit:
        jacfwd, jvp = jax.jit(jacfwd), jax.jit(jvp)
    jp = jacfwd(x0, params)
    stats = run.statistics()
    assert (stats["tangent_passes"], stats["tangent_columns"]) == (1, 3), stats
    vx, vp = jnp.array([0.3, -0.2, 0.5, 1.0]), jnp.array([0.1, -0.4, 0.25])
    tangent = jvp(x0, params, vx, vp)
    stats = run.statistics()
    assert (stats["tangent_passes"], stats["tangent_columns"]) == (2, 4), stats
    jx_rev, jp_rev = jax.jacrev(f, argnums=(0, 1))(x0, params)
    np.testing.assert_allclose(jp, jp_rev, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(tangent, jx_rev @ vx + jp_rev @ vp, rtol=1e-9, atol=1e-10)
    # The same numbers as the whole Jacobian's columns, on the same steps.
    jx_all, jp_all = jax.jacfwd(f, argnums=(0, 1))(x0, params)
    np.testing.assert_allclose(jp, jp_all, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(tangent, jx_all @ vx + jp_all @ vp, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_jacrev_of_m_outputs_is_one_taped_run(jit):
    """Before: a kept tape served one backward pass, so jax.jacrev of m
    outputs at one point ran the model m - 1 more times (statistics:
    replays = m - 1, taped_runs = m). Now the m cotangents at the point
    share the one taped run: one run, m backward passes; the rows are the
    library's adjoint gradients to the last bit."""
    ball = ia.Model.ready("ball2d-flat")
    run = iajax.solver(ball, 2.0, max_events=4)
    x0, params = jnp.asarray(ball.default_state), jnp.asarray(ball.default_params)
    jacrev = jax.jacrev(lambda x, p: run(x, p).final_state, argnums=(0, 1))
    if jit:
        jacrev = jax.jit(jacrev)
    jx, jp = jacrev(x0, params)
    stats = run.statistics()
    # One taped run in all: eagerly the forward call's; under jit XLA drops
    # the forward call (its outputs unused by a jacrev), and the backward
    # call records the run once for its 4 passes (not a replay: the model
    # ran once).
    assert (stats["runs"], stats["taped_runs"], stats["backward_passes"], stats["replays"]) == (
        0, 1, 4, 0
    ), stats
    for i, state in enumerate(ball.state_names):
        lib = ball.gradient(x0, params, 2.0, loss=[{"of": f"final.{state}", "weight": 1.0}])
        np.testing.assert_array_equal(np.concatenate([jx[i], jp[i]]), lib.gradient)
