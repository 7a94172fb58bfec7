"""First firing times of named transitions as an output of
impact_adjoint.jax.solver (issue 29): the values, their gradients in both
modes, ``inf`` for a transition that does not fire (zero gradient), the
errors of ``first=``, and batches of samples under ``jax.vmap``.

References: the run's own event record (``model.simulate``), central
differences of the values (plain calls, outside the library's
derivatives), the library's loss term ``first.<transition>.time``
(``model.gradient``, the Rust side's adjoint) and the other mode (forward
against adjoint)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import impact_adjoint as ia
import impact_adjoint.jax as iajax

T_END = 50.0
FIRST = ("spike_o0", "spike_o1", "spike_h1")


@pytest.fixture(scope="module")
def net():
    return ia.Model.ready("cuba-lif", size=[2, 3, 2])


def solver_of(net, first=FIRST, **options):
    return iajax.solver(net, T_END, solver="exact", first=first, **options)


def test_first_times_are_the_runs_first_firings(net):
    """Each entry is the time of the transition's first event in the run's
    record; a transition that does not fire gives inf."""
    run = net.simulate(t_end=T_END, solver="exact")
    f = solver_of(net, first=FIRST + ("input0",), max_events=2)
    out = f(jnp.asarray(net.default_state), jnp.asarray(net.default_params))
    expected = [
        run.event_times[run.event_transitions.index(name)]
        if name in run.event_transitions
        else np.inf
        for name in FIRST + ("input0",)
    ]
    assert np.all(np.isfinite(expected)), "the default network fires each of these"
    np.testing.assert_array_equal(out.first_times, expected)
    np.testing.assert_array_equal(out.event_times, run.event_times[:2])
    # Silencing output neuron 1 (its weights zero): it never fires.
    silent = {f"w_o1_h{j}": 0.0 for j in range(3)}
    out = f(None, silent)
    assert out.first_times[1] == np.inf and np.isfinite(out.first_times[0])


def central_differences(g, params, h=1e-6):
    """d g / d params by central differences of plain calls."""
    columns = []
    for i in range(len(params)):
        step = np.zeros(len(params))
        step[i] = h * max(1.0, abs(params[i]))
        columns.append((g(params + step) - g(params - step)) / (2 * step[i]))
    return np.stack(columns, axis=-1)


def test_first_time_gradients_against_differences_and_both_modes(net):
    """jacrev (adjoint) of the first spike times against central
    differences (1e-6 of the largest entry: the differences' own error),
    against the library's loss term first.<t>.time (to rounding), and
    jacfwd (forward sensitivities) against jacrev (to rounding)."""
    f = solver_of(net)
    x0 = jnp.asarray(net.default_state)
    params = np.asarray(net.default_params)
    times = lambda p: f(x0, p).first_times
    reverse = np.asarray(jax.jacrev(times)(jnp.asarray(params)))
    forward = np.asarray(jax.jacfwd(times)(jnp.asarray(params)))
    scale = np.max(np.abs(reverse))
    np.testing.assert_allclose(forward, reverse, rtol=0, atol=1e-12 * scale)
    numeric = central_differences(lambda p: np.asarray(times(jnp.asarray(p))), params)
    np.testing.assert_allclose(reverse, numeric, rtol=0, atol=1e-6 * scale)
    for row, name in zip(reverse, FIRST):
        library = net.gradient(
            None, None, T_END, loss=[{"of": f"first.{name}.time", "weight": 1.0}], solver="exact"
        )
        expected = [library.derivative(f"param.{p}") for p in net.param_names]
        np.testing.assert_allclose(row, expected, rtol=0, atol=1e-12 * scale)


def test_an_inf_first_time_has_a_zero_gradient(net):
    """A transition that does not fire: its entry is inf, its gradient
    zero in both modes, and a NaN cotangent there does not spread."""
    f = solver_of(net)
    silent = {f"w_o1_h{j}": 0.0 for j in range(3)}
    params = jnp.asarray(net.default_params).at[
        jnp.array([net.param_names.index(k) for k in silent])
    ].set(0.0)
    x0 = jnp.asarray(net.default_state)
    times = lambda p: f(x0, p).first_times
    assert times(params)[1] == jnp.inf
    for jac in (jax.jacrev, jax.jacfwd):
        rows = np.asarray(jac(times)(params))
        assert np.all(rows[1] == 0.0) and np.any(rows[0] != 0.0), jac.__name__
    _, pullback = jax.vjp(times, params)
    (grad,) = pullback(jnp.array([1.0, jnp.nan, 0.0]))
    assert np.all(np.isfinite(grad))
    np.testing.assert_array_equal(grad, np.asarray(jax.jacrev(times)(params))[0])


def test_first_errors(net):
    with pytest.raises(ia.UnknownNameError) as error:
        solver_of(net, first=("spike_o0", "spike_o9"))
    message = str(error.value)
    assert "first[1] transition 'spike_o9'" in message
    assert "spike_o0" in message and "input1" in message and "spike_h2" in message
    with pytest.raises(ia.InvalidOptionError, match="invalid first = .*must be a list of transition names"):
        solver_of(net, first=[1, 2])
    # One name alone is a list of one.
    out = solver_of(net, first="spike_o0")(None, None)
    assert out.first_times.shape == (1,)
    # No names: an empty output.
    assert solver_of(net, first=())(None, None).first_times.shape == (0,)


def test_vmap_over_samples_with_shared_weights(net):
    """Per-sample input times and shared weights (a dict with in_axes):
    the batch equals the samples one by one, and the gradient with respect
    to a shared weight is the sum of the samples' (one taped run and one
    adjoint pass per sample, no replay)."""
    f = solver_of(net)
    t_in = jnp.array([[1.0, 3.0], [2.0, 2.5], [0.5, 6.0], [4.0, 1.0]])
    weights = {name: jnp.asarray(v) for name, v in zip(net.param_names, net.default_params)
               if name.startswith("w_")}

    def loss(weights, t_in):
        def one(t):
            params = {**weights, "t_in0": t[0], "t_in1": t[1]}
            return f(None, params).first_times[0]
        return jax.vmap(one)(t_in)

    batch = np.asarray(loss(weights, t_in))
    alone = [float(loss(weights, t[None])[0]) for t in t_in]
    np.testing.assert_array_equal(batch, alone)
    before = f.statistics()
    value, grad = jax.value_and_grad(lambda w: jnp.sum(loss(w, t_in)))(weights)
    after = f.statistics()
    assert after["taped_runs"] - before["taped_runs"] == 4
    assert after["backward_passes"] - before["backward_passes"] == 4
    assert after["replays"] == before["replays"]
    single = [jax.grad(lambda w: loss(w, t[None])[0])(weights) for t in t_in]
    for name in weights:
        total = sum(float(g[name]) for g in single)
        assert abs(float(grad[name]) - total) <= 1e-12 * max(1.0, abs(total)), name
    # The same through in_axes over a dict of parameters.
    params = {**weights, "t_in0": t_in[:, 0], "t_in1": t_in[:, 1]}
    axes = {name: (0 if name.startswith("t_in") else None) for name in params}
    out = jax.vmap(f, in_axes=(None, axes))(None, params)
    np.testing.assert_array_equal(out.first_times[:, 0], batch)


def test_distinct_neurons_firing_close_together_are_not_zeno():
    """Four hidden neurons driven by one input, weights a hair apart: each
    fires once, at 5.11574, 5.11624, 5.11648 and 5.11661 ms (gaps of 0.50,
    0.25 and 0.12 us, below 1e-5 of the run and shrinking). No transition
    fires twice, so nothing accumulates and the run must succeed (event
    rule 8 reads the gaps between firings of one transition; when it read
    the gaps between all events this run was refused as Zeno). Reference:
    the spike times of the Rust test
    crates/ia-verify/tests/cuba_lif.rs::distinct_neurons_firing_close_together_are_not_zeno,
    whose events equal those of the same run with the gap test off."""
    net = ia.Model.ready("cuba-lif", size=[1, 4, 1])
    a = 5e-4
    weights = [8.0 + 1.75 * a, 8.0 + 0.75 * a, 8.0 + 0.25 * a, 8.0]
    params = {"t_in0": 1.0, **{f"w_h{j}_in0": w for j, w in enumerate(weights)}}
    params.update({f"w_o0_h{j}": 0.1 for j in range(4)})
    run = net.simulate(None, params, T_END, solver="exact")
    assert list(run.event_transitions) == [
        "input0", "spike_h0", "spike_h1", "spike_h2", "spike_h3"]
    np.testing.assert_allclose(
        run.event_times[1:], [5.11574, 5.11624, 5.11648, 5.11661], rtol=0, atol=1e-5)
    gaps = np.diff(run.event_times[1:])
    assert gaps[0] < 5e-4 and gaps[1] < gaps[0] and gaps[2] < gaps[1]
