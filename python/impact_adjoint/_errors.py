"""The exceptions of impact_adjoint: one class per kind of error the command
line prints (``error: <kind>: <message>``), each carrying the same message.

Every class derives from :class:`Error`; those of bad input also derive from
:class:`ValueError`. ``err.kind`` is the command line's kind. The command
line's kinds ``io`` and ``usage`` (reading files and arguments) have no
class: no Python call produces them.
"""


class Error(Exception):
    """An error of impact_adjoint (its ``kind`` names which)."""

    kind = "error"


class MalformedJsonError(Error, ValueError):
    """Text that is not JSON of the expected form (a model written as
    equations, given as text); the message has the line and column."""

    kind = "malformed_json"


class InvalidScenarioError(Error, ValueError):
    """A value of the wrong type or shape, or a missing or unknown key of a
    dict option (``solver``, ``loss``)."""

    kind = "invalid_scenario"


class InvalidEquationsError(InvalidScenarioError):
    """A mistake in a model written as equations: the message names the
    mode or transition, the key and the column. A subclass of
    :class:`InvalidScenarioError`, so code that catches that still catches
    it."""

    kind = "invalid_equations"


class UnknownNameError(Error, ValueError):
    """A name that does not exist (model, state, parameter, mode, solver
    method, derivative column); the message lists the valid names."""

    kind = "unknown_name"


class InvalidOptionError(Error, ValueError):
    """A value outside its valid range (``t_end``, a tolerance, a
    parameter that is not physically possible, a NaN option...)."""

    kind = "invalid_option"


class DimensionMismatchError(Error, ValueError):
    """A vector of the wrong length (``x0``, ``params``)."""

    kind = "dimension_mismatch"


class NonFiniteError(Error, ValueError):
    """A NaN or infinite state, parameter or derivative."""

    kind = "non_finite"


class GuardViolatedAtStartError(Error, ValueError):
    """A run that starts on or past a guard's zero."""

    kind = "guard_violated_at_start"


class ZenoError(Error):
    """Events accumulate (too many, or too close together)."""

    kind = "zeno"


class GrazingError(Error):
    """A guard met tangentially: event-time sensitivities are unbounded."""

    kind = "grazing"


class StepSizeUnderflowError(Error):
    """The step size fell below the smallest the solver accepts."""

    kind = "step_size_underflow"


class NewtonFailureError(Error):
    """The stage equations of an implicit method (``trbdf2``, ``kvaerno3``,
    ``kvaerno5``) did not converge at any step size (the message names the
    time and the mode)."""

    kind = "newton_failure"


class StepLimitError(Error):
    """The run took ``max_steps`` steps before its end."""

    kind = "step_limit"


class EventLocationError(Error):
    """An event could not be located in the step where its guard changed
    sign."""

    kind = "event_location"


class UnsupportedError(Error):
    """A request the chosen method cannot serve."""

    kind = "unsupported"


class NoConvergenceError(Error):
    """Newton's method found no periodic orbit from the starting guess (the
    message has the iterations, the residual and what to try)."""

    kind = "no_convergence"


class NoReturnError(Error):
    """A periodic orbit's section did not fire often enough within
    ``max_period``."""

    kind = "no_return"


ERRORS = {
    cls.kind: cls
    for cls in (
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
}


def error_class(kind):
    """The exception class of the command line's error kind ``kind``."""
    return ERRORS.get(kind, Error)
