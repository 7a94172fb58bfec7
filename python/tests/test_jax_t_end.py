"""A traceable, differentiable final time (issue 30, item 6): ``f(x0,
params, t_end=T)`` and a solver made with a traced ``t_end`` work under
jit, grad, jvp and vmap. Before: ``t_end`` was fixed when the solver was
made (a traced one raised ``ConcretizationTypeError``; ``f`` took no
``t_end``).

References: the closed form of ball2d_flat_a (crates/ia-verify/references/
closed_form.json, computed outside the project): after the last impact
``d x(T)/dT = vx(T)``, ``d y(T)/dT = vy(T)``, ``d vx/dT = 0``, ``d vy/dT =
-g``; central differences of the run in ``T``; event times and observed
states do not move with ``T`` (observation times fixed)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import impact_adjoint as ia
import impact_adjoint.jax as iajax
from test_jax import TIGHT


@pytest.fixture(scope="module")
def case(closed_form):
    case = closed_form["ball2d_flat_a"]
    ball = ia.Model.ready(case["model"])
    x0 = jnp.array([case["initial_state"][s] for s in ball.state_names])
    params = jnp.array([case["params"][p] for p in ball.param_names])
    final = np.array([case["final_state"][s] for s in ball.state_names])
    return ball, x0, params, case["t_end"], final


def expected_rate(final, g):
    """d x(T)/dT in flight after the last impact: (vx, vy, 0, -g)."""
    return np.array([final[2], final[3], 0.0, -g])


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_derivatives_in_t_end_match_the_closed_form(case, jit):
    ball, x0, params, t_end, final = case
    run = iajax.solver(ball, 1.0, observe=[0.5], max_events=5, solver=TIGHT)
    f = lambda T: run(x0, params, t_end=T).final_state
    jac = jax.jacfwd(f)
    rev = jax.jacrev(f)
    grad_x = jax.grad(lambda T: f(T)[0])
    if jit:
        jac, rev, grad_x = jax.jit(jac), jax.jit(rev), jax.jit(grad_x)
    rate = expected_rate(final, float(params[0]))
    np.testing.assert_allclose(f(t_end), final, rtol=0, atol=1e-10)
    np.testing.assert_allclose(jac(t_end), rate, rtol=0, atol=1e-10)
    np.testing.assert_allclose(rev(t_end), rate, rtol=0, atol=1e-10)
    assert abs(float(grad_x(t_end)) - final[2]) < 1e-10
    # Central differences of the run in T (a flight stretch: quadratic in T).
    h = 1e-3
    central = (np.asarray(f(t_end + h)) - np.asarray(f(t_end - h))) / (2 * h)
    np.testing.assert_allclose(jac(t_end), central, rtol=0, atol=1e-8)


def test_event_times_and_observations_do_not_move_with_t_end(case):
    ball, x0, params, t_end, _ = case
    run = iajax.solver(ball, 1.0, observe=[0.5], max_events=5, solver=TIGHT)
    out = lambda T: run(x0, params, t_end=T)
    times = jax.jacfwd(lambda T: out(T).event_times)(t_end)
    observed = jax.jacrev(lambda T: out(T).observed)(t_end)
    assert np.all(np.asarray(times) == 0.0) and np.all(np.asarray(observed) == 0.0)
    # Together with the other inputs: one jvp, the T column added.
    tx = jnp.array([0.0, 0.0, 0.0, 1.0])
    _, both = jax.jvp(lambda x, T: run(x, params, t_end=T).final_state, (x0, t_end), (tx, 1.0))
    _, alone = jax.jvp(lambda x: run(x, params, t_end=t_end).final_state, (x0,), (tx,))
    rate = expected_rate(np.asarray(out(t_end).final_state), float(params[0]))
    np.testing.assert_allclose(both, np.asarray(alone) + rate, rtol=1e-13, atol=1e-13)
    # The gradient with respect to (x0, T) of a loss reading x(T).
    gx, gT = jax.grad(lambda x, T: run(x, params, t_end=T).final_state[0], argnums=(0, 1))(x0, t_end)
    assert abs(float(gx[3]) - 0.06697247706422019) < 1e-10
    assert abs(float(gT) - float(out(t_end).final_state[2])) < 1e-12


def test_vmap_over_t_end_and_a_solver_made_with_a_traced_t_end(case):
    ball, x0, params, t_end, final = case
    run = iajax.solver(ball, 1.0, max_events=5, solver=TIGHT)
    ts = jnp.array([1.5, 1.9, t_end])
    batch = jax.vmap(lambda T: run(x0, params, t_end=T).final_state)(ts)
    for row, T in zip(batch, ts):
        np.testing.assert_array_equal(row, run(x0, params, t_end=T).final_state)
    np.testing.assert_allclose(batch[2], final, rtol=0, atol=1e-10)
    rates = jax.vmap(jax.jacfwd(lambda T: run(x0, params, t_end=T).final_state))(ts)
    np.testing.assert_allclose(rates[:, 3], -float(params[0]), rtol=1e-13)
    # The solver made inside the traced function, t_end a tracer: under
    # jit and grad, with the closed form's value and derivative.
    def x_at(T):
        return iajax.solver(ball, T, solver=TIGHT)(x0, params).final_state[0]

    assert abs(float(jax.jit(x_at)(t_end)) - final[0]) < 1e-10
    assert abs(float(jax.grad(x_at)(t_end)) - final[2]) < 1e-10
    assert abs(float(jax.jit(jax.grad(x_at))(t_end)) - final[2]) < 1e-10
    # A plain (concrete) t_end per call is the same run as the solver's own.
    own = iajax.solver(ball, t_end, solver=TIGHT)
    np.testing.assert_allclose(run(x0, params, t_end=t_end).final_state, own(x0, params).final_state, rtol=1e-13)


def test_a_bad_t_end_is_named(case):
    ball, x0, params, _, _ = case
    run = iajax.solver(ball, 1.0, observe=[0.5])
    with pytest.raises(ia.DimensionMismatchError, match="t_end"):
        run(x0, params, t_end=jnp.array([1.0, 2.0]))
    with pytest.raises(ia.Error, match="t_end"):
        run(x0, params, t_end=-1.0)
    with pytest.raises(jax.errors.JaxRuntimeError, match="t_end"):
        jax.jit(lambda T: run(x0, params, t_end=T))(-1.0)


def test_float32_inputs_with_a_traced_t_end(case):
    """float32 inputs: T is a float32 number too, the run in float64 inside,
    the results and d x(T)/dT rounded to float32."""
    ball, x0, params, t_end, final = case
    run = iajax.solver(ball, 1.0, max_events=5, solver=TIGHT)
    x32, p32 = x0.astype(jnp.float32), params.astype(jnp.float32)
    out = jax.jit(lambda T: run(x32, p32, t_end=T).final_state)(jnp.float32(t_end))
    assert out.dtype == jnp.float32
    np.testing.assert_allclose(out, final, rtol=1e-5, atol=1e-5)
    rate = jax.jacfwd(lambda T: run(x32, p32, t_end=T).final_state)(jnp.float32(t_end))
    assert rate.dtype == jnp.float32
    np.testing.assert_allclose(rate, expected_rate(final, 9.81), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_value_and_grad_with_a_traced_t_end_reads_its_tape(case, jit):
    """The backward call finds the forward call's tape by the bits of its
    inputs, the final time included, and builds its run without checking
    those inputs again (the forward call did): one taped run per point, no
    replay, and the gradient the backward call's own run gives when it has
    no tape (jax.vjp's backward function called a second time: a replay),
    to the last bit, at two final times."""
    ball, x0, params, t_end, _ = case
    run = iajax.solver(ball, 1.0, observe=[0.5], max_events=5, solver=TIGHT)
    g = lambda x, p, T: run(x, p, t_end=T).final_state[0]
    value_and_grad = jax.value_and_grad(g, argnums=(0, 1))
    if jit:
        value_and_grad = jax.jit(value_and_grad)
    counted = lambda: [run.statistics()[s] for s in ("taped_runs", "backward_passes", "replays")]
    for T in [t_end, t_end + 0.125]:
        before = counted()
        _, (gx, gp) = value_and_grad(x0, params, T)
        after = counted()
        assert [a - b for a, b in zip(after, before)] == [1, 1, 0], (before, after)
        # The reference: the backward pass recording its own run.
        _, backward = jax.vjp(lambda x, p: g(x, p, T), x0, params)
        first = backward(jnp.float64(1.0))
        replayed = backward(jnp.float64(1.0))
        assert counted()[2] - after[2] == 1, "the second backward call replays"
        for ours, tape, fresh in zip((gx, gp), first, replayed):
            np.testing.assert_array_equal(ours, fresh)
            np.testing.assert_array_equal(tape, fresh)
