"""jax.jacfwd against jax.jacrev on every ready model's final state (issue
30's target: equal to 1e-10).

Reference: the other mode. jacfwd runs the library's forward
sensitivities on the steps of the adjoint's taped run (the state's steps,
`ForwardOnStateSteps`), jacrev the adjoint (the transpose of those
steps): the same steps, so each is the other's transpose and they agree
to rounding, with the model's default solver (adaptive) as with fixed-step
RK4 (2,000 steps over the model's run length)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import impact_adjoint as ia
import impact_adjoint.jax as iajax

# Small sizes for the sized models (a few neurons, balls, layers): the
# check is per model, not per size.
SIZES = {"lif-network": 3, "particle-chain": 3, "cuba-lif": [2, 3, 2]}

STEPS = 2000


@pytest.mark.parametrize("solver", ["default", "rk4"])
@pytest.mark.parametrize("name", ia.models())
def test_jacfwd_equals_jacrev_on_the_final_state(name, solver):
    model = ia.Model.ready(name, SIZES.get(name))
    t_end = model.t_end
    if solver == "rk4":
        run = iajax.solver(model, t_end, solver={"method": "rk4", "dt": t_end / STEPS})
    else:
        run = iajax.solver(model, t_end)
    x0 = jnp.asarray(model.default_state)
    params = jnp.asarray(model.default_params)
    final = lambda x, p: run(x, p).final_state
    forward = np.concatenate(jax.jacfwd(final, argnums=(0, 1))(x0, params), axis=1)
    reverse = np.concatenate(jax.jacrev(final, argnums=(0, 1))(x0, params), axis=1)
    n = len(model.state_names)
    assert forward.shape == (n, n + len(model.param_names))
    scale = np.max(np.abs(forward))
    assert scale > 0.0, "a Jacobian of zeros checks nothing"
    gap = np.max(np.abs(forward - reverse)) / scale
    assert gap <= 1e-10, f"{name}: jacfwd and jacrev differ by {gap:.2e} normwise"
