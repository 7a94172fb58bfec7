"""jax.jacfwd against jax.jacrev on every ready model's final state (issue
30's target: equal to 1e-10).

Reference: the other mode. jacfwd runs the library's forward
sensitivities, jacrev its adjoint (the transpose of the steps taken); on
the same steps they are each other's transposes and agree to rounding.
The runs use fixed-step RK4 (2,000 steps over the model's run length) so
that both modes take the same steps: with an adaptive method the forward
pass's error control also sees the sensitivities, so its steps differ from
the adjoint's and the two agree only to the tolerance (measured with each
model's default solver: up to 2.4e-9 normwise, the rimless wheel; see
docs/performance.md, "Python and JAX")."""

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


@pytest.mark.parametrize("name", ia.models())
def test_jacfwd_equals_jacrev_on_the_final_state(name):
    model = ia.Model.ready(name, SIZES.get(name))
    t_end = model.t_end
    run = iajax.solver(model, t_end, solver={"method": "rk4", "dt": t_end / STEPS})
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
