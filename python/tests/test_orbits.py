"""Periodic orbits from Python: ``Model.periodic_orbit`` against the rimless
wheel's closed form (the step-to-step map of the rate just after a step,
``omega' = cos(2 alpha) sqrt(omega^2 + 4 (g/l) sin(alpha) sin(gamma))``:
fixed point ``cot(2 alpha) sqrt(4 (g/l) sin(alpha) sin(gamma))``, multiplier
``cos^2(2 alpha)``, ``d/dalpha = -2 sin(4 alpha)``), the slip-hopper's
running gait (its position and foot advancing by one common step), and
errors."""

import json
import math

import numpy as np
import pytest

import impact_adjoint as ia

G, L, ALPHA, GAMMA = 9.81, 1.0, math.pi / 8, 0.08


def wheel_orbit(**options):
    wheel = ia.Model.ready("rimless-wheel")
    params = {"g": G, "l": L, "alpha": ALPHA, "gamma": GAMMA}
    return wheel.periodic_orbit("step", [GAMMA - ALPHA, 1.2], params, max_period=5.0, **options)


def test_the_rimless_wheel_matches_its_closed_form():
    orbit = wheel_orbit()
    speed = math.sqrt(4 * G / L * math.sin(ALPHA) * math.sin(GAMMA)) / math.tan(2 * ALPHA)
    assert orbit.state("omega") == pytest.approx(speed, abs=1e-9)
    assert orbit.multipliers.dtype == np.complex128
    assert orbit.multipliers[orbit.trivial] == pytest.approx(1.0, abs=1e-9)
    step = 1 - orbit.trivial
    assert orbit.multipliers[step].real == pytest.approx(math.cos(2 * ALPHA) ** 2, abs=1e-9)
    assert orbit.d_multipliers.shape == (2, 4)
    alpha = orbit.param_names.index("alpha")
    assert orbit.d_multipliers[step, alpha].real == pytest.approx(
        -2 * math.sin(4 * ALPHA), abs=1e-6
    )
    assert orbit.advancing_multiplier is None and orbit.advancing == []
    json.dumps(orbit.to_dict())


def test_a_running_gait_advances():
    hopper = ia.Model.ready("slip-hopper")
    touchdown = {"x": 0.48238, "y": 0.92866, "vx": 4.0, "vy": -1.18305, "xf": 0.8533}
    gait = hopper.periodic_orbit("touchdown", touchdown, max_period=3.0, advancing=["x", "xf"])
    assert gait.advancing == ["x", "xf"]
    assert gait.advance[0] == pytest.approx(gait.advance[1], abs=1e-9)
    assert gait.advance[0] > 1.5
    assert gait.advancing_multiplier is not None
    assert gait.d_fixed_point is None
    assert "not isolated" in gait.sensitivities_unavailable


@pytest.mark.parametrize(
    "options, error, part",
    [
        ({"x0": [GAMMA - ALPHA, -1.0]}, ia.NoReturnError, "max_period"),
        ({"section": "stride"}, ia.UnknownNameError, "step"),
        ({"events_per_period": 0}, ia.InvalidOptionError, "events_per_period"),
        ({"events_per_period": -1}, ia.InvalidOptionError, "events_per_period"),
        ({"advancing": ["q"]}, ia.InvalidScenarioError, "advancing[0]"),
        ({"max_period": -1.0}, ia.InvalidOptionError, "t_end"),
    ],
)
def test_bad_input_raises_a_clear_error(options, error, part):
    wheel = ia.Model.ready("rimless-wheel")
    args = {"section": "step", "x0": [GAMMA - ALPHA, 1.2], "max_period": 5.0}
    args.update(options)
    with pytest.raises(error) as raised:
        wheel.periodic_orbit(args.pop("section"), args.pop("x0"), **args)
    assert part in str(raised.value)


def test_newton_failure_raises_no_convergence():
    wheel = ia.Model.ready("rimless-wheel")
    with pytest.raises(ia.NoConvergenceError) as raised:
        wheel.periodic_orbit("step", [-0.38, 1.2], {"alpha": 0.5, "gamma": 0.12}, max_period=10.0)
    assert "did not converge" in str(raised.value)
