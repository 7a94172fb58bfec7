"""Fit the restitution e and the gravity g of a bouncing ball to observed
heights, by gradient descent in JAX through impact_adjoint.

The ball (model ``ball1d``: h' = v, v' = -g, v <- -e v at h = 0) is dropped
from h = 1 m; its height is observed every 0.1 s for 2 s, through three
bounces. The observations are made by the library itself with the true
values g = 9.81, e = 0.8. Starting from g = 9, e = 0.7, Adam steps on the
mean squared error recover them: every gradient is one adjoint pass of the
library, exact through the impacts (a time-stepping simulator
differentiated by JAX would see the impact times frozen).

Run: ``python python/examples/fit_bouncing_ball.py``.
"""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402

import impact_adjoint as ia  # noqa: E402
import impact_adjoint.jax as iajax  # noqa: E402

TRUE = {"g": 9.81, "e": 0.8}
TIMES = [0.1 * k for k in range(1, 20)]
X0 = jnp.array([1.0, 0.0])  # h, v


def fit(steps=400, rate=0.02):
    ball = ia.Model.ready("ball1d")
    data = jnp.asarray(ball.simulate(X0, TRUE, 2.0, observe=TIMES).observations[:, 0])
    run = iajax.solver(ball, 2.0, observe=TIMES, max_events=4)

    def loss(theta):
        g, e = theta
        heights = run(X0, jnp.stack([g, e, 0.0])).observed[:, 0]
        return jnp.mean((heights - data) ** 2)

    step_loss = jax.jit(jax.value_and_grad(loss))
    theta = jnp.array([9.0, 0.7])
    # Adam: steps of about `rate` in each coordinate, whatever its scale.
    m = jnp.zeros(2)
    v = jnp.zeros(2)
    for k in range(1, steps + 1):
        value, grad = step_loss(theta)
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad**2
        m_hat = m / (1 - 0.9**k)
        v_hat = v / (1 - 0.999**k)
        theta = theta - rate * m_hat / (jnp.sqrt(v_hat) + 1e-12)
        if k % 50 == 0 or k == 1:
            print(f"step {k:4d}  loss {float(value):.3e}  g = {float(theta[0]):.6f}  e = {float(theta[1]):.6f}")
    return float(theta[0]), float(theta[1]), float(step_loss(theta)[0])


def main():
    g, e, final_loss = fit()
    print(f"fitted g = {g:.6f} (true {TRUE['g']}), e = {e:.6f} (true {TRUE['e']}), loss {final_loss:.3e}")
    return g, e, final_loss


if __name__ == "__main__":
    main()
