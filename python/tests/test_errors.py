"""Every exception class, raised from a bad input, with its message: the
command line's message for the same scenario where the command line can
express the input (checked against the binary), else the library's own."""

import json
import math
import subprocess

import numpy as np
import pytest

import impact_adjoint as ia

BALL1D = ia.Model.ready("ball1d")
BALL2D = ia.Model.ready("ball2d-flat")
LIF = ia.Model.ready("lif")

# A model written as equations whose flow reads a name that does not exist.
BAD_EQUATIONS = {"states": {"y": 1.0}, "params": {}, "modes": {"f": {"flow": {"y": "z"}}}, "transitions": []}

# A model written as equations whose rate is not finite at the start.
DIVIDE_BY_STATE = {"states": {"x": 0.0}, "params": {"k": 2.0}, "modes": {"m": {"flow": {"x": "-k / x"}}}}

# (exception class, the Python call, the same scenario for the command line
# and its subcommand)
SAME_AS_CLI = [
    (
        # The message names the expression behind the value in both fronts
        # (the model's hint; Python runs of equations had none before).
        ia.NonFiniteError,
        lambda: ia.Model.from_equations(DIVIDE_BY_STATE).simulate(t_end=1.0),
        {"model": DIVIDE_BY_STATE, "t_end": 1.0},
        ["simulate"],
    ),
    (
        ia.InvalidScenarioError,
        lambda: BALL1D.simulate(t_end=1, solver={"method": "rk4", "dtt": 1e-3}),
        {"model": "ball1d", "t_end": 1, "solver": {"method": "rk4", "dtt": 1e-3}},
        ["simulate"],
    ),
    (
        ia.UnknownNameError,
        lambda: BALL2D.simulate(None, {"q": 1.0}, 1.0),
        {"model": "ball2d-flat", "t_end": 1, "params": {"q": 1.0}},
        ["simulate"],
    ),
    (
        ia.UnknownNameError,
        lambda: ia.Model.ready("nope"),
        {"model": "nope", "t_end": 1},
        ["simulate"],
    ),
    (
        ia.InvalidOptionError,
        lambda: BALL1D.simulate(t_end=-1.0),
        {"model": "ball1d", "t_end": -1.0},
        ["simulate"],
    ),
    (
        ia.InvalidOptionError,
        lambda: BALL2D.simulate(None, {"e": 1.5}, 1.0),
        {"model": "ball2d-flat", "t_end": 1, "params": {"e": 1.5}},
        ["simulate"],
    ),
    (
        ia.InvalidOptionError,
        lambda: BALL2D.gradient(t_end=1.0, loss=[{"of": "event.5.time", "weight": 1.0}]),
        {"model": "ball2d-flat", "t_end": 1, "loss": [{"of": "event.5.time", "weight": 1.0}]},
        ["gradient", "--method", "adjoint"],
    ),
    (
        ia.InvalidScenarioError,
        lambda: BALL1D.gradient(t_end=1.0, loss=[]),
        {"model": "ball1d", "t_end": 1, "loss": []},
        ["gradient"],
    ),
    (
        ia.GuardViolatedAtStartError,
        lambda: BALL1D.simulate({"h": -0.5}, None, 1.0),
        {"model": "ball1d", "t_end": 1, "initial_state": {"h": -0.5}},
        ["simulate"],
    ),
    (
        ia.ZenoError,
        lambda: BALL1D.simulate(t_end=10.0),
        {"model": "ball1d", "t_end": 10},
        ["simulate"],
    ),
    (
        ia.GrazingError,
        lambda: BALL1D.simulate({"h": 1e-14}, None, 0.001),
        {"model": "ball1d", "t_end": 0.001, "initial_state": {"h": 1e-14}},
        ["simulate"],
    ),
    (
        ia.StepSizeUnderflowError,
        lambda: LIF.simulate(None, {"tau": 1e-20}, 1.0),
        {"model": "lif", "t_end": 1, "params": {"tau": 1e-20}},
        ["simulate"],
    ),
    (
        ia.StepLimitError,
        lambda: BALL1D.simulate(t_end=2.0, solver={"method": "dopri5", "max_step": 1e-4}, max_steps=1000),
        {"model": "ball1d", "t_end": 2, "solver": {"method": "dopri5", "max_step": 1e-4}, "max_steps": 1000},
        ["simulate"],
    ),
]


@pytest.mark.parametrize(
    "cls, call, scenario, command", SAME_AS_CLI, ids=[c[0].__name__ for c in SAME_AS_CLI]
)
def test_error_is_the_command_lines(cli, cls, call, scenario, command):
    with pytest.raises(cls) as caught:
        call()
    out = subprocess.run(
        [cli, *command, "-"], input=json.dumps(scenario), capture_output=True, text=True
    )
    assert out.returncode == 2, out.stderr
    assert out.stderr == f"error: {caught.value.kind}: {caught.value}\n"
    assert isinstance(caught.value, ia.Error)


# Inputs only Python can give (NaN, a wrong length, a wrong type): the
# library's message.
PYTHON_ONLY = [
    (
        ia.DimensionMismatchError,
        lambda: BALL2D.simulate([0.0, 1.0, 1.0], None, 1.0),
        "dimension mismatch in initial state: expected 4 entries, got 3",
    ),
    (
        ia.NonFiniteError,
        lambda: BALL2D.simulate([0.0, 1.0, math.nan, 0.0], None, 1.0),
        "non-finite initial state 'vx' (= NaN) at t = 0: every state, parameter, derivative and time must be finite",
    ),
    (
        ia.NonFiniteError,
        lambda: BALL2D.simulate(None, {"g": math.inf}, 1.0),
        "non-finite parameter 'g' (= inf) at t = 0: every state, parameter, derivative and time must be finite",
    ),
    (
        ia.InvalidOptionError,
        lambda: BALL2D.simulate(t_end=math.nan),
        "invalid t_end = NaN: every number must be finite",
    ),
    (
        ia.InvalidOptionError,
        lambda: BALL2D.simulate(t_end=1.0, observe=[0.5, math.inf]),
        "invalid observe[1] = inf: every number must be finite",
    ),
    (
        ia.InvalidOptionError,
        lambda: BALL2D.jacobian(t_end=1.0, method="backward"),
        "invalid method = 'backward': must be 'forward' or 'adjoint'",
    ),
    (
        ia.InvalidScenarioError,
        lambda: BALL2D.simulate("abc"),
        "'x0' must be a sequence or array of numbers, or a dict of numbers by name, got str 'abc'",
    ),
    (
        ia.InvalidScenarioError,
        lambda: BALL2D.simulate(np.zeros((1, 4))),
        "'x0' must be one-dimensional (one entry per name), got an array of shape (1, 4)",
    ),
    (
        ia.InvalidScenarioError,
        lambda: BALL2D.simulate(None, {"g": "a"}),
        "'params.g' must be a number, got str 'a'",
    ),
    (
        ia.InvalidScenarioError,
        lambda: BALL2D.simulate(t_end=1.0, solver=3.5j),
        "'solver' must be a number, string, list or dict, got complex 3.5j",
    ),
    (
        ia.UnknownNameError,
        lambda: BALL2D.jacobian(t_end=1.0, wrt=["vy"]),
        "unknown sensitivity column 'vy'; valid sensitivity column names: initial.x, initial.y, initial.vx, initial.vy, param.g, param.e, param.mu",
    ),
]


# A model written as equations: text that is not JSON (the command line
# names its own source, here "the equations"), and a dict that is no model.
PYTHON_ONLY += [
    (
        ia.MalformedJsonError,
        lambda: ia.Model.from_equations('{"states": '),
        "malformed JSON in the equations: EOF while parsing a value at line 1 column 11",
    ),
    (
        # The command line names the scenario's key ("'model' (equations): ...");
        # this call has no scenario, so the message names the equations.
        ia.InvalidEquationsError,
        lambda: ia.Model.from_equations(BAD_EQUATIONS),
        'the equations: mode "f", flow.y, column 1: unknown name "z"; names are y, t; closest is "y"',
    ),
    (
        ia.InvalidScenarioError,
        lambda: ia.Model.from_equations(5),
        "'equations' must be a dict or the JSON text of a model written as equations, got int 5",
    ),
]


@pytest.mark.parametrize("cls, call, message", PYTHON_ONLY, ids=[c[0].__name__ for c in PYTHON_ONLY])
def test_python_only_input_raises(cls, call, message):
    with pytest.raises(cls) as caught:
        call()
    assert str(caught.value) == message
    assert isinstance(caught.value, (ia.Error, ValueError))


def test_bad_input_classes_are_value_errors():
    for cls in (
        ia.InvalidScenarioError,
        ia.UnknownNameError,
        ia.InvalidOptionError,
        ia.DimensionMismatchError,
        ia.NonFiniteError,
        ia.GuardViolatedAtStartError,
    ):
        assert issubclass(cls, ValueError) and issubclass(cls, ia.Error)
