"""impact_adjoint: exact derivatives through event-driven simulation.

A model is a hybrid system (flows, guards, resets); ``Model.ready(name)``
gives one of the ready models (``models()`` lists them), and
``Model.from_equations(dict_or_json)`` one written as equations. Its runs return
NumPy arrays::

    import impact_adjoint as ia

    ball = ia.Model.ready("ball2d-flat")
    jac = ball.jacobian([0.0, 1.0, 1.0, 0.0], {"g": 9.81, "e": 0.8, "mu": 0.7}, 2.0)
    jac.final_derivative("x", "initial.vy")   # 0.0669724770642..., through three impacts

Every number is computed by the Rust library; errors are exceptions derived
from :class:`Error`, one class per kind the command line prints, with the
same message. ``impact_adjoint.jax`` makes a run a JAX function whose
``jax.grad`` is one adjoint pass of the library.
"""

from ._core import Model, models, __version__
from ._errors import (
    Error,
    MalformedJsonError,
    InvalidScenarioError,
    InvalidEquationsError,
    UnknownNameError,
    InvalidOptionError,
    DimensionMismatchError,
    NonFiniteError,
    GuardViolatedAtStartError,
    ZenoError,
    GrazingError,
    StepSizeUnderflowError,
    NewtonFailureError,
    StepLimitError,
    EventLocationError,
    UnsupportedError,
    NoConvergenceError,
    NoReturnError,
)
from ._results import Simulation, Jacobian, Gradient, PeriodicOrbit

__all__ = [
    "Model",
    "models",
    "Simulation",
    "Jacobian",
    "Gradient",
    "PeriodicOrbit",
    "Error",
    "MalformedJsonError",
    "InvalidScenarioError",
    "InvalidEquationsError",
    "UnknownNameError",
    "InvalidOptionError",
    "DimensionMismatchError",
    "NonFiniteError",
    "GuardViolatedAtStartError",
    "ZenoError",
    "GrazingError",
    "StepSizeUnderflowError",
    "NewtonFailureError",
    "StepLimitError",
    "EventLocationError",
    "UnsupportedError",
    "NoConvergenceError",
    "NoReturnError",
    "__version__",
]
