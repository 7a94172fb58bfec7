"""The examples of python/examples run, and print what they claim."""

import runpy

from conftest import ROOT

EXAMPLES = ROOT / "python" / "examples"


def run_example(name):
    return runpy.run_path(str(EXAMPLES / name))["main"]()


def test_bouncing_ball_jax():
    result = run_example("bouncing_ball_jax.py")
    # Time stepping differentiated by JAX: the impact steps never move.
    assert result["time_stepping"] == [0.0, 0.0, 0.0]
    # The library and the closed form vx0 (1 - mu^3) / g.
    assert abs(result["closed_form"] - 0.06697247706422019) < 1e-16
    assert abs(result["impact_adjoint"] - result["closed_form"]) < 1e-10


def test_fit_bouncing_ball():
    g, e, loss = run_example("fit_bouncing_ball.py")
    assert abs(g - 9.81) < 1e-5 and abs(e - 0.8) < 1e-6 and loss < 1e-12


def test_dask_ensemble(closed_form):
    """Two worker processes compute what the sequential loop computes; the
    ensemble's ball2d_flat_a member matches the closed form."""
    distributed, sequential = run_example("dask_ensemble.py")
    assert len(distributed) == 12 and distributed == sequential
    assert len({r["x_final"] for r in distributed}) == 12
    case = closed_form["ball2d_flat_a"]
    member = distributed[4]  # e = 0.8, y0 = 1.0
    assert abs(member["x_final"] - case["final_state"]["x"]) < 1e-9
    for wrt, value in case["jacobian"]["x"].items():
        assert abs(member["gradient"][wrt] - value) < 1e-8, wrt


def test_custom_model_jax():
    """equations -> from_equations -> iajax.solver -> jax.grad, against the
    closed form of the first impact time t1 = sqrt(2 h0 / g)."""
    result = run_example("custom_model_jax.py")
    assert set(result) == {"h", "g"}
    for name, (library, closed_form) in result.items():
        assert abs(library - closed_form) < 1e-9 * abs(closed_form), name


def test_yinyang_learns_in_one_short_epoch(capsys):
    """python/examples/yinyang.py, shortened (40 hidden neurons, 640
    training samples, one epoch, Adam at 0.02 instead of the paper's 5e-3 so
    that 20 steps show learning): its JSON on stdout, and a test accuracy
    well above what the untrained network gets. Reference: the same run
    with the gradient zeroed (stop_gradient on the first spike times) stays
    at 0.42 (checked by hand), and chance is 1/3; the correct gradient
    reached 0.77."""
    import json

    script = runpy.run_path(str(EXAMPLES / "yinyang.py"))
    result = script["main"]([
        "--hidden", "40", "--epochs", "1", "--train-size", "640", "--test-size", "200",
        "--validation-size", "200", "--learning-rate", "0.02", "--json",
    ])
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(json.dumps(result))
    assert set(printed) >= {"test_accuracy", "seconds_per_epoch", "history"}
    assert len(printed["history"]) == 1 and printed["history"][0]["epoch"] == 1
    assert printed["test_accuracy"] >= 0.65, printed



def test_yinyang_loss_drops_samples_whose_label_neuron_is_silent():
    """python/examples/yinyang.py's loss on a batch with a silent label
    neuron, a sample where nothing fires, and silent wrong neurons. The
    reference is the loss written out by hand over the two samples whose
    label fires (silent neurons out of the softmax), divided by the batch
    size of four; the silent-label samples get exactly zero gradient (no
    NaN from the where-masked inf), the others the central difference's."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    loss_and_correct = runpy.run_path(str(EXAMPLES / "yinyang.py"))["loss_and_correct"]
    inf = np.inf
    first = jnp.array(
        [[3.0, 5.0, inf], [inf, inf, inf], [inf, 4.0, 6.0], [2.0, 2.5, 3.0]], dtype=jnp.float64
    )
    labels = jnp.array([0, 1, 0, 2])
    loss, (correct, silent) = loss_and_correct(first, labels)

    def by_hand(t, label):
        z = -np.asarray(t) / 0.5
        return -(z[label] - np.log(np.sum(np.exp(z)))) + 3e-3 * (np.exp(t[label] / 6.4) - 1)

    expected = (by_hand([3.0, 5.0], 0) + by_hand([2.0, 2.5, 3.0], 2)) / 4
    assert abs(float(loss) - expected) < 1e-14 * expected
    assert int(correct) == 1 and int(silent) == 2

    grad = np.asarray(jax.grad(lambda t: loss_and_correct(t, labels)[0])(first))
    assert np.all(grad[1:3] == 0.0) and grad[0, 2] == 0.0
    h = 1e-5
    for i, j in [(0, 0), (0, 1), (3, 0), (3, 1), (3, 2)]:
        step = np.zeros(first.shape)
        step[i, j] = h
        up = float(loss_and_correct(first + step, labels)[0])
        down = float(loss_and_correct(first - step, labels)[0])
        assert abs(grad[i, j] - (up - down) / (2 * h)) < 1e-8, (i, j)
