#!/usr/bin/env python3
"""Cost of impact_adjoint.jax on ``ball2d_flat_a`` (dopri5, rtol = atol =
1e-10), all figures from one run of this script:

1. the library's gradient of x(T) called from Python (``model.gradient``:
   one taped forward pass and one backward pass, plus the call's checks and
   the conversion of its loss and results);
2. the Rust call behind a jitted ``jax.grad``, made from Python
   (``JaxSolver.cotangent_gradient`` for one run: the same Rust function the
   XLA FFI handler calls, plus PyO3's conversion of five small arrays);
3. one jitted, warm ``jax.grad`` of x(T) through ``impact_adjoint.jax``
   (one XLA custom call: the backward pass; the forward call's outputs are
   not used, so XLA drops it), and one ``jax.value_and_grad`` (two custom
   calls: the forward run for the value, then the backward pass);
4. the same value and gradient by Diffrax's restart pattern
   (``value_and_grad``; the peer script ``benches/peers/jax_ball2d.py``),
   when diffrax is installed, against our ``jax.value_and_grad``;
5. the floors JAX sets: a jitted function doing no work (two arrays in, two
   out: the dispatch of a jitted call), and one making two
   ``pure_callback``s that do nothing (what the solver cost before it was
   an XLA custom call);
6. ``jax.vmap`` of the jitted gradient over 1,000 parameter sets against a
   Python loop of 1,000 single jitted calls.

Each figure is the median over 7 repeats of the per-call time of a loop
long enough to take about 0.25 s. Prints a Markdown table.

Usage: python benches/jax/bench_jax.py [--no-diffrax]
"""

import argparse
import importlib.util
import platform
import statistics
import sys
import timeit
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import impact_adjoint as ia  # noqa: E402
import impact_adjoint.jax as iajax  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
X0 = np.array([0.0, 1.0, 1.0, 0.0])
PARAMS = np.array([9.81, 0.8, 0.7])
T_END = 2.0
TOL = 1e-10
SOLVER = {"method": "dopri5", "rtol": TOL, "atol": TOL}
BATCH = 1000


def per_call(fn, repeats=7, min_total=0.25, block=True):
    """Median seconds per call of ``fn`` (blocked until its result is ready
    when ``block``: JAX dispatches asynchronously; a NumPy result is ready
    when returned, and ``jax.block_until_ready`` would add its own cost)."""
    timer = timeit.Timer((lambda: jax.block_until_ready(fn())) if block else fn)
    number, _ = timer.autorange()
    number = max(1, int(number * min_total / 0.2))
    return statistics.median(r / number for r in timer.repeat(repeat=repeats, number=number))


def diffrax_grad():
    """Diffrax's restart pattern from benches/peers/jax_ball2d.py: value_and_grad
    of x(T) with respect to (y0, vx0, vy0, g, e, mu)."""
    spec = importlib.util.spec_from_file_location("jax_ball2d", ROOT / "benches" / "peers" / "jax_ball2d.py")
    peer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(peer)
    f = peer.make_diffrax(float(X0[0]), T_END, TOL)
    p = jnp.array([X0[1], X0[2], X0[3], *PARAMS])
    g = jax.jit(jax.value_and_grad(lambda p: f(p)[0]))
    return lambda: g(p)


def fmt(seconds):
    return f"{seconds * 1e6:.1f} us" if seconds < 1e-3 else f"{seconds * 1e3:.2f} ms"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-diffrax", action="store_true", help="skip the Diffrax figure")
    args = parser.parse_args()

    ball = ia.Model.ready("ball2d-flat")
    loss = [{"of": "final.x", "weight": 1.0}]
    library = per_call(
        lambda: ball.gradient(X0, PARAMS, T_END, loss=loss, solver=SOLVER).gradient, block=False
    )

    core = iajax.JaxSolver(ball, T_END, max_events=4, solver=SOLVER)
    seeds = (X0[None], PARAMS[None], np.eye(1, 4), np.zeros((1, 4)), np.zeros((1, 0, 4)))
    rust = per_call(lambda: core.cotangent_gradient(*seeds), block=False)

    run = iajax.solver(ball, T_END, max_events=4, solver=SOLVER)
    grad = jax.jit(jax.grad(lambda x0, p: run(x0, p).final_state[0], argnums=(0, 1)))
    x0, params = jnp.asarray(X0), jnp.asarray(PARAMS)
    through_jax = per_call(lambda: grad(x0, params))
    value_grad = jax.jit(jax.value_and_grad(lambda x0, p: run(x0, p).final_state[0], argnums=(0, 1)))
    with_value = per_call(lambda: value_grad(x0, params))

    # The two compute the same numbers (one library adjoint pass each).
    lib = ball.gradient(X0, PARAMS, T_END, loss=loss, solver=SOLVER).gradient
    gx, gp = grad(x0, params)
    assert np.array_equal(np.concatenate([gx, gp]), lib), "jax.grad differs from model.gradient"
    assert np.array_equal(np.concatenate(core.cotangent_gradient(*seeds), axis=1)[0], lib)

    # The dispatch of a jitted call doing no work, arrays of the same sizes.
    nothing = jax.jit(lambda x, p: (x + 1.0, p + 1.0))
    dispatch = per_call(lambda: nothing(x0, params))

    # The floor JAX sets: a jitted function making two pure_callbacks that
    # do nothing (the forward and backward calls of a jax.grad).
    noop = jax.ShapeDtypeStruct((4,), jnp.float64)
    two_callbacks = jax.jit(
        lambda x: jax.pure_callback(np.asarray, noop, jax.pure_callback(np.asarray, noop, x))
    )
    floor = per_call(lambda: two_callbacks(x0))

    rows = [
        ("library gradient from Python (`model.gradient`)", library, f"{library / rust:.2f}x"),
        ("the handler's Rust call from Python (`JaxSolver.cotangent_gradient`)", rust, "1.00x"),
        ("`jax.grad` through `impact_adjoint.jax` (jit, warm)", through_jax,
         f"{through_jax / rust:.2f}x of the Rust call, +{fmt(through_jax - rust)}"),
        ("`jax.value_and_grad` through `impact_adjoint.jax` (jit, warm)", with_value,
         f"{with_value / rust:.2f}x of the Rust call"),
        ("a jitted function doing no work (dispatch floor)", dispatch, f"{dispatch / rust:.2f}x"),
        ("two empty `jax.pure_callback`s in a jitted function", floor, f"{floor / rust:.2f}x"),
    ]
    if not args.no_diffrax:
        try:
            peer = diffrax_grad()
        except ImportError as error:
            print(f"(no Diffrax figure: {error})", file=sys.stderr)
        else:
            peer_time = per_call(peer)
            rows.append(("Diffrax restart pattern `value_and_grad` (jit, warm)", peer_time,
                         f"impact_adjoint.jax's `value_and_grad` is {peer_time / with_value:.1f}x faster"))

    rng = np.random.default_rng(15)
    rows_np = PARAMS * (1.0 + 0.02 * rng.uniform(-1, 1, size=(BATCH, 3)))
    singles = [jnp.asarray(p) for p in rows_np]  # on the device before timing
    batch = jnp.asarray(rows_np)
    one = jax.jit(jax.grad(lambda p: run(x0, p).final_state[0]))
    many = jax.jit(jax.vmap(jax.grad(lambda p: run(x0, p).final_state[0])))
    mapped = per_call(lambda: many(batch), repeats=5)
    looped = per_call(lambda: [one(p) for p in singles], repeats=5)
    np.testing.assert_array_equal(np.asarray(many(batch))[:3], np.stack([one(p) for p in singles[:3]]))
    rows.append((f"`jax.vmap` of the gradient over {BATCH} parameter sets", mapped,
                 f"{looped / mapped:.2f}x faster than a Python loop of single calls"))
    rows.append((f"Python loop of {BATCH} single jitted gradient calls", looped, "1.00x"))

    print(f"ball2d_flat_a, dopri5 rtol = atol = {TOL:g}; python {platform.python_version()}, "
          f"jax {jax.__version__}, numpy {np.__version__}, {platform.machine()}")
    print()
    print("| figure | time per call | ratio |")
    print("|---|---|---|")
    for name, seconds, ratio in rows:
        print(f"| {name} | {fmt(seconds)} | {ratio} |")


if __name__ == "__main__":
    main()
