"""Gradients die at events: a bouncing ball differentiated two ways in JAX.

The ball of ``ball2d_flat_a`` flies over flat ground (x' = vx, y' = vy,
vx' = 0, vy' = -g) from (x, y, vx, vy) = (0, 1, 1, 0); at each impact
vx <- mu vx and vy <- -e vy (g = 9.81, e = 0.8, mu = 0.7). We want
d x(T) / d vy0 at T = 2, after three impacts.

1. Pure JAX: RK4 in ``lax.scan`` with the reset applied through
   ``jnp.where``. ``jax.grad`` differentiates the steps, but the step at
   which the ball hits the ground is an integer: the impact time never moves
   with vy0, and the answer is exactly 0.0 at every step size.
2. ``impact_adjoint.jax``: the same loss; the library locates each impact
   and carries the saltation term, so ``jax.grad`` is exact.
3. The closed form: with vy0 = 0 every impact time moves by 1/g per unit of
   vy0, and x(T) = x0 + vx0 [(1 - mu) t1 + mu (1 - mu) t2 + mu^2 (1 - mu) t3
   + mu^3 T], so d x(T) / d vy0 = vx0 (1 - mu^3) / g.

Run: ``python python/examples/bouncing_ball_jax.py``.
"""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402

import impact_adjoint as ia  # noqa: E402
import impact_adjoint.jax as iajax  # noqa: E402

X0 = jnp.array([0.0, 1.0, 1.0, 0.0])  # x, y, vx, vy
PARAMS = jnp.array([9.81, 0.8, 0.7])  # g, e, mu
T_END = 2.0


def rk4_x_final(x0, params, steps):
    """x(T) by RK4 time stepping with the impact as a jnp.where reset."""
    g, e, mu = params
    dt = T_END / steps

    def rate(s):
        return jnp.array([s[2], s[3], 0.0, -g])

    def step(s, _):
        k1 = rate(s)
        k2 = rate(s + dt / 2 * k1)
        k3 = rate(s + dt / 2 * k2)
        k4 = rate(s + dt * k3)
        s = s + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        hit = (s[1] < 0.0) & (s[3] < 0.0)
        s = jnp.where(hit, jnp.array([s[0], s[1], mu * s[2], -e * s[3]]), s)
        return s, None

    final, _ = jax.lax.scan(step, x0, None, length=steps)
    return final[0]


def main():
    print("d x(T) / d vy0 for ball2d_flat_a (three impacts before T = 2)")
    print()
    print("pure JAX, RK4 + jnp.where reset:")
    time_stepping = []
    for steps in (200, 2000, 20000):
        grad = jax.grad(rk4_x_final)(X0, PARAMS, steps)
        time_stepping.append(float(grad[3]))
        print(f"  dt = {T_END / steps:<7g} x(T) = {rk4_x_final(X0, PARAMS, steps):.6f}"
              f"   d x(T)/d vy0 = {float(grad[3])!r}")

    ball = ia.Model.ready("ball2d-flat")
    run = iajax.solver(ball, T_END, max_events=8, solver={"method": "dopri5", "rtol": 1e-12, "atol": 1e-12})
    x_final = jax.jit(lambda x0, params: run(x0, params).final_state[0])
    grad = jax.grad(x_final)(X0, PARAMS)
    print()
    print("impact_adjoint.jax (one adjoint pass):")
    print(f"  x(T) = {float(x_final(X0, PARAMS)):.6f}   d x(T)/d vy0 = {float(grad[3]):+}")

    g, _, mu = (float(p) for p in PARAMS)
    closed = float(X0[2]) * (1.0 - mu**3) / g
    print()
    print(f"closed form vx0 (1 - mu^3) / g:          d x(T)/d vy0 = {closed:+}")
    return {"time_stepping": time_stepping, "impact_adjoint": float(grad[3]), "closed_form": closed}


if __name__ == "__main__":
    main()
