"""From zero to a custom model's gradient in JAX: equations -> from_equations
-> impact_adjoint.jax.solver -> jax.grad.

The model: a ball dropped from height h onto a floor (h' = v, v' = -g; at
h = 0 falling, v <- -e v), written as equations (the format of
docs/equations.md). Its first impact time is t1 = sqrt(2 h0 / g), so the
closed form of its gradient is

    d t1 / d h0 = 1 / sqrt(2 g h0),    d t1 / d g = -t1 / (2 g).

The JAX function takes dicts by name (a missing name takes the model's
default) and returns the gradient as a dict of the names given. No global
64-bit switch: float32 inputs are computed in float64 inside and come back
as float32; float64 inputs (``jax.config.update("jax_enable_x64", True)``)
come back as float64.

Run: ``python python/examples/custom_model_jax.py`` (needs the ``jax``
extra: ``pip install "impact_adjoint[jax]"``).
"""

import math

import jax

import impact_adjoint as ia
import impact_adjoint.jax as iajax

EQUATIONS = {
    "name": "dropped-ball",
    "states": {"h": 1.0, "v": 0.0},
    "params": {"g": 9.81, "e": 0.8},
    "modes": {"flight": {"flow": {"h": "v", "v": "-g"}}},
    "transitions": [
        {
            "name": "impact",
            "from": "flight",
            "to": "flight",
            "guard": "h",
            "direction": "falling",
            "reset": {"v": "-e * v"},
        }
    ],
    "initial_mode": "flight",
}


def main():
    """The gradient of the first impact time by the library and by the
    closed form, as ``{"h": (library, closed form), "g": (...)}``."""
    model = ia.Model.from_equations(EQUATIONS)
    run = iajax.solver(model, 1.0, max_events=1)

    def first_impact(x0, params):
        return run(x0, params).event_times[0]

    h0, g = 1.0, 9.81
    dx0, dparams = jax.grad(first_impact, argnums=(0, 1))({"h": h0}, {"g": g})
    t1 = math.sqrt(2.0 * h0 / g)
    return {
        "h": (float(dx0["h"]), 1.0 / math.sqrt(2.0 * g * h0)),
        "g": (float(dparams["g"]), -t1 / (2.0 * g)),
    }


if __name__ == "__main__":
    for name, (library, closed_form) in main().items():
        print(f"d t1 / d {name}: {library:.9g} (closed form {closed_form:.9g})")
