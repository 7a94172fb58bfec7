#!/usr/bin/env python3
"""Where a jitted ``jax.value_and_grad`` of ``ball2d_flat_a`` spends the
time that is neither JAX's dispatch nor the library's gradient (issue 30,
target (a)): the cost of alternating two code paths.

Each figure is the process CPU time per call (user time of every thread:
no system time or page faults were seen in these loops) of a loop of
calls, the median over ``--rounds`` rounds, in one process:

* ``noop``: a jitted function doing no work (JAX's dispatch);
* ``rust``: the library's gradient through the handler's Rust call from
  Python (``JaxSolver.cotangent_gradient``: one taped run and one
  backward pass, no XLA);
* ``numpy``: a small NumPy SVD (a third, unrelated code path);
* ``A+B``: one call of ``A`` then one of ``B``, alternated; against the
  sum of their separate times;
* ``jit grad`` and ``jit value_and_grad``: the benchmark's own calls.

If ``noop+rust`` costs more than ``noop`` plus ``rust`` by about what
the jitted gradient costs over them, the gap is the alternation of two
working sets (caches, branch predictors), not a layer of ``impact_adjoint.jax``
or its handlers: ``numpy+rust`` and ``numpy+noop`` show the same with no
JAX or no library in the pair.

Usage (from the repository root, in a venv with the wheel and jax):

    python benches/jax/interleave.py [--calls N] [--rounds R]
"""

import argparse
import os
import statistics
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import impact_adjoint as ia  # noqa: E402
import impact_adjoint.jax as iajax  # noqa: E402

SOLVER = {"method": "dopri5", "rtol": 1e-10, "atol": 1e-10}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="calls per loop")
    parser.add_argument("--rounds", type=int, default=5, help="loops per figure (median)")
    args = parser.parse_args()

    ball = ia.Model.ready("ball2d-flat")
    x0_np, params_np = np.array([0.0, 1.0, 1.0, 0.0]), np.array([9.81, 0.8, 0.7])
    x0, params = jnp.asarray(x0_np), jnp.asarray(params_np)
    core = iajax.JaxSolver(ball, 2.0, max_events=0, solver=SOLVER)
    seeds = (x0_np[None], params_np[None], np.eye(1, 4), np.zeros((1, 0)), np.zeros((1, 0, 4)))
    run = iajax.solver(ball, 2.0, solver=SOLVER)
    x_t = lambda x, p: run(x, p).final_state[0]
    nothing = jax.jit(lambda x, p: (x + 1.0, p + 1.0))
    grad = jax.jit(jax.grad(x_t, argnums=(0, 1)))
    value_grad = jax.jit(jax.value_and_grad(x_t, argnums=(0, 1)))
    matrix = np.random.default_rng(1).uniform(size=(16, 16))

    noop = lambda: jax.block_until_ready(nothing(x0, params))
    rust = lambda: core.cotangent_gradient(*seeds)
    svd = lambda: np.linalg.svd(matrix)
    calls = {
        "noop": noop,
        "rust": rust,
        "numpy": svd,
        "noop+noop": lambda: (noop(), noop()),
        "rust+rust": lambda: (rust(), rust()),
        "noop+rust": lambda: (noop(), rust()),
        "numpy+rust": lambda: (svd(), rust()),
        "numpy+noop": lambda: (svd(), noop()),
        "jit grad": lambda: jax.block_until_ready(grad(x0, params)),
        "jit value_and_grad": lambda: jax.block_until_ready(value_grad(x0, params)),
    }
    for call in calls.values():
        call()
    load_before = os.getloadavg()
    times = {name: [] for name in calls}
    for _ in range(args.rounds):
        for name, call in calls.items():
            start = time.process_time()
            for _ in range(args.calls):
                call()
            times[name].append((time.process_time() - start) / args.calls)
    cpu = {name: statistics.median(t) for name, t in times.items()}
    print(f"CPU time per call, median of {args.rounds} loops of {args.calls} calls")
    for name, t in cpu.items():
        line = f"{name:20s} {t * 1e6:7.1f} us"
        if "+" in name:
            a, b = name.split("+")
            alone = cpu[a] + cpu[b]
            line += f"   alone {alone * 1e6:7.1f} us, alternating costs {(t - alone) * 1e6:+6.1f} us"
        print(line)
    print(f"load average before {load_before[0]:.1f}, after {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
