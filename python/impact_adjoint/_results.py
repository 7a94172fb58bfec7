"""The results of a run: NumPy arrays with the names of their rows and
columns, and ``to_dict()`` for JSON."""

from dataclasses import dataclass, fields

import numpy as np


def _index(names, name, kind):
    """The position of ``name`` in ``names``, or the library's unknown-name
    error listing the valid names."""
    try:
        return names.index(name)
    except ValueError:
        from ._errors import UnknownNameError

        raise UnknownNameError(
            f"unknown {kind} '{name}'; valid {kind} names: {', '.join(names)}"
        ) from None


def _plain(value):
    if isinstance(value, np.ndarray):
        return _plain(value.tolist()) if np.iscomplexobj(value) else value.tolist()
    if isinstance(value, complex):
        return {"re": value.real, "im": value.imag}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


@dataclass(frozen=True, eq=False)
class Simulation:
    """A run: ``model.simulate(...)``.

    Arrays: ``final_state`` (n), ``event_times`` (k), ``event_states_before``
    and ``event_states_after`` (k x n), ``observation_times`` (n_obs),
    ``observations`` (n_obs x n); states in the order of ``state_names``.
    ``event_transitions[i]`` names the transition fired at event i and
    ``event_modes[i]`` its (from, to) modes.
    """

    model: str
    state_names: list
    t_end: float
    final_time: float
    final_mode: str
    final_state: np.ndarray
    event_times: np.ndarray
    event_transitions: list
    event_modes: list
    event_states_before: np.ndarray
    event_states_after: np.ndarray
    observation_times: np.ndarray
    observations: np.ndarray
    stats: dict

    def final(self, state):
        """The final value of the state entry named ``state``."""
        return float(self.final_state[_index(self.state_names, state, "state")])

    def to_dict(self):
        """Every field, arrays as (nested) lists: ready for ``json.dumps``."""
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}


@dataclass(frozen=True, eq=False)
class Jacobian(Simulation):
    """A run with its Jacobians: ``model.jacobian(...)``.

    Rows follow ``state_names``, columns ``wrt`` (``initial.<state>``,
    ``param.<name>``): ``final_jacobian`` (n x m) is ``d x(T) / d wrt``,
    ``observation_jacobians`` (n_obs x n x m) the same at each observation,
    ``event_time_gradients`` (k x m) ``d t_i / d wrt`` for each event.
    """

    method: str
    wrt: list
    final_jacobian: np.ndarray
    observation_jacobians: np.ndarray
    event_time_gradients: np.ndarray

    def final_derivative(self, state, wrt):
        """``d state(T) / d wrt`` by name, e.g. ``("x", "initial.vy")``."""
        i = _index(self.state_names, state, "state")
        return float(self.final_jacobian[i, _index(self.wrt, wrt, "sensitivity column")])


@dataclass(frozen=True, eq=False)
class Gradient(Simulation):
    """The gradient of a loss: ``model.gradient(...)``. ``gradient[j]`` is
    ``dL / d wrt[j]``; ``value`` is the loss."""

    method: str
    value: float
    wrt: list
    gradient: np.ndarray

    def derivative(self, wrt):
        """``dL / d wrt`` by name, e.g. ``"param.e"``."""
        return float(self.gradient[_index(self.wrt, wrt, "sensitivity input")])


@dataclass(frozen=True, eq=False)
class PeriodicOrbit:
    """A periodic orbit: ``model.periodic_orbit(section, ...)``.

    ``fixed_point`` (n) is the state just after ``section`` fires on the
    orbit, ``period`` the time of one period, ``monodromy`` (n x n) the
    flows and saltations of one period chained, ``multipliers`` (complex, n)
    its eigenvalues by modulus, largest first; ``multipliers[trivial]`` is
    the 1 along the flow and ``multipliers[advancing_multiplier]`` the 1 of
    the ``advancing`` states' common shift (``None`` without them), each
    moved by ``advance`` in one period. ``d_fixed_point`` (n x n_p),
    ``d_period`` (n_p) and ``d_multipliers`` (complex, n x n_p) are the
    derivatives with respect to the parameters, ``None`` when they are not
    defined (``sensitivities_unavailable`` says why).
    """

    model: str
    section: str
    state_names: list
    param_names: list
    fixed_point: np.ndarray
    period: float
    newton_iterations: int
    residual: float
    monodromy: np.ndarray
    multipliers: np.ndarray
    trivial: object
    advancing_multiplier: object
    advancing: list
    advance: np.ndarray
    d_fixed_point: object
    d_period: object
    d_multipliers: object
    sensitivities_unavailable: object

    def state(self, name):
        """The fixed point's entry named ``name``."""
        return float(self.fixed_point[_index(self.state_names, name, "state")])

    def to_dict(self):
        """Plain lists and numbers (a complex number as ``{"re", "im"}``),
        for JSON."""
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}


_CLASSES = {cls.__name__: cls for cls in (Simulation, Jacobian, Gradient, PeriodicOrbit)}


def _build(name, values):
    """The result class ``name`` with ``values`` (a dict of every field) as
    its fields: how the extension makes each result. A frozen dataclass's
    ``__init__`` sets its fields one ``object.__setattr__`` call at a time,
    most of a small run's time spent outside the numbers; this sets them at
    once (the tests check that every field is there)."""
    result = object.__new__(_CLASSES[name])
    result.__dict__.update(values)
    return result
