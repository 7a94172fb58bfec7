#!/usr/bin/env python3
"""Instructions of one jitted call on ``ball2d_flat_a``, JAX included:
``bench_jax.py``'s jitted functions (and JAX's no-op floors) called in a
loop under callgrind, which counts only the loop.

Run it under valgrind with instrumentation off at the start (the imports
and the compilation are not counted); after ``--warm`` calls the script
switches it on for itself (``callgrind_control -i on``), makes ``--calls``
calls and dumps the counts (``callgrind_control -d``) into the output
file with the suffix ``.1``::

    valgrind --tool=callgrind --instr-atstart=no \\
        --callgrind-out-file=target/callgrind.vg.%p \\
        python benches/jax/count_calls.py value_and_grad --calls 300
    callgrind_annotate --inclusive=yes target/callgrind.vg.<pid>.1

The "PROGRAM TOTALS" over ``--calls`` is the instructions of one call
(with its ``jax.block_until_ready`` and the freeing of the previous
call's results, as ``bench_jax.py`` times it). Without valgrind the script
prints the wall and process CPU time per call instead.

Functions: ``noop`` (``(x + 1, p + 1)``, ``bench_jax.py``'s dispatch
floor), ``noop_value_and_grad`` (``(x[0] + 1, (x + 1, p + 1))``: the
inputs and outputs of ``value_and_grad``, its floor), ``plain`` (the final
state, one custom call), ``grad``, ``value_and_grad`` (target (a)).
"""

import argparse
import os
import shutil
import subprocess
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402

import impact_adjoint as ia  # noqa: E402
import impact_adjoint.jax as iajax  # noqa: E402

SOLVER = {"method": "dopri5", "rtol": 1e-10, "atol": 1e-10}


def functions():
    """The jitted functions by name, as ``bench_jax.py`` makes them."""
    ball = ia.Model.ready("ball2d-flat")
    run = iajax.solver(ball, 2.0, solver=SOLVER)
    x_t = lambda x, p: run(x, p).final_state[0]
    return {
        "noop": jax.jit(lambda x, p: (x + 1.0, p + 1.0)),
        "noop_value_and_grad": jax.jit(lambda x, p: (x[0] + 1.0, (x + 1.0, p + 1.0))),
        "plain": jax.jit(lambda x, p: run(x, p).final_state),
        "grad": jax.jit(jax.grad(x_t, argnums=(0, 1))),
        "value_and_grad": jax.jit(jax.value_and_grad(x_t, argnums=(0, 1))),
    }


def under_valgrind():
    """Whether this process runs under valgrind (its preloaded library)."""
    return "vgpreload" in os.environ.get("LD_PRELOAD", "")


def callgrind(*command):
    """Sends ``command`` (``-i on``, ``-d``) to the callgrind running this
    process."""
    tool = shutil.which("callgrind_control")
    if tool is None:
        raise SystemExit("callgrind_control is not on the PATH")
    subprocess.run([tool, *command, str(os.getpid())], check=True, stdout=subprocess.DEVNULL)


def main():
    table = functions()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("function", choices=sorted(table))
    parser.add_argument("--calls", type=int, default=300, help="calls counted (default 300)")
    parser.add_argument("--warm", type=int, default=50, help="calls before counting (default 50)")
    args = parser.parse_args()
    fn = table[args.function]
    x0, params = jnp.asarray([0.0, 1.0, 1.0, 0.0]), jnp.asarray([9.81, 0.8, 0.7])
    for _ in range(args.warm):
        jax.block_until_ready(fn(x0, params))
    counting = under_valgrind()
    if counting:
        callgrind("-i", "on")
        time.sleep(0.5)  # callgrind reads the command at its next poll
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(args.calls):
        jax.block_until_ready(fn(x0, params))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if counting:
        callgrind("-d")
        time.sleep(0.5)
        print(f"{args.function}: {args.calls} calls counted (the dump with the suffix .1)")
    else:
        print(f"{args.function}: {wall / args.calls * 1e6:.1f} us wall, {cpu / args.calls * 1e6:.1f} us CPU a call")


if __name__ == "__main__":
    main()
