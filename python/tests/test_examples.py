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
