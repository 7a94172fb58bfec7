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
