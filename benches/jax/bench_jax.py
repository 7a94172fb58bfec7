#!/usr/bin/env python3
"""impact_adjoint.jax against Diffrax on ``ball2d_flat_a`` (issue 30's
targets), every figure from one run of this script.

The case: model ``ball2d-flat``, x0 = (x, y, vx, vy) = (0, 1, 1, 0),
params (g, e, mu) = (9.81, 0.8, 0.7), t_end = 2 (three impacts). Ours runs
DOPRI5 at rtol = atol = 1e-10; Diffrax runs the restart pattern of
``benches/peers/jax_ball2d.py`` (Dopri5, ``PIDController(rtol = atol =
1e-10)``, a terminating ``diffrax.Event`` located by ``optimistix.Newton``
at 1e-12, the reset in user code, a ``lax.scan`` of 6 ``diffeqsolve``
segments). Both are float64 and within 1e-14 of the closed form here (the
flow is polynomial: the error is the event handling's), so the two are in
the same accuracy class; the script checks both gradients against
``crates/ia-verify/references/closed_form.json`` and records the errors.

Target rows (the issue's table):

(a) jitted ``jax.value_and_grad`` of x(T) with respect to every input,
    ours against Diffrax's restart pattern (target: at least 20x faster);
(b) ``jax.vmap(jax.grad)`` over 1,000 parameter sets (g, e, mu varied by
    up to 2 %), per item, ours against Diffrax's
    ``jax.vmap(jax.value_and_grad)`` per item (target: at least 50x);
    ours with ``value_and_grad`` too, for the like-for-like ratio;
(c) jitted ``jax.jacfwd`` of the 4 final states with respect to the 7
    inputs (x0: 4, params: 3) against the library's forward Jacobian
    called from Python, ``model.jacobian(method="forward")`` (target: at
    most 2x).

Context rows: the library's gradient from Python (``model.gradient``), the
Rust call behind a jitted ``jax.grad`` made from Python
(``JaxSolver.cotangent_gradient``), ``jax.grad`` alone, a jitted function
doing no work (JAX's dispatch floor; and one with the inputs and outputs
of (a), a number and two arrays, the fair floor of (a)), and a Python loop of 1,000 single
jitted gradients.

Each time is the median over 7 repeats (5 for batches) of the per-call time
of a loop long enough to take about 0.25 s, after warm-up calls: compile
time is excluded (the first call's time is recorded apart). The target
ratios are paired: the two sides timed back to back in 7 rounds (5 for
the batches), the median of the rounds' ratios (steadier than a ratio of
separate medians when the machine's load moves; both are recorded), and
the same for the process CPU time per call (every thread's: the work done,
not the wait for a core). The load
average before and after the run is recorded: on a shared machine read the
ratios, not the absolute times.

Writes ``bench_jax_results.json`` and ``bench_jax_results.md`` (the
markdown table, also printed) into ``--out-dir`` (default: beside this
script).

Usage (from the repository root, in a venv with the wheel, jax and the
peers of benches/peers/requirements.txt; see benches/peers/README.md):

    python benches/jax/bench_jax.py [--no-diffrax] [--out-dir DIR]
"""

import argparse
import datetime
import importlib.util
import json
import os
import platform
import statistics
import sys
import time
import timeit
from importlib import metadata
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import impact_adjoint as ia  # noqa: E402
import impact_adjoint.jax as iajax  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CASE = "ball2d_flat_a"
TOL = 1e-10
SOLVER = {"method": "dopri5", "rtol": TOL, "atol": TOL}
BATCH = 1000
TARGETS = {"a": 20.0, "b": 50.0, "c": 2.0}


def per_call(fn, repeats=7, min_total=0.25, block=True):
    """Median seconds per call of ``fn`` (blocked until its result is ready
    when ``block``: JAX dispatches asynchronously; a NumPy result is ready
    when returned, and ``jax.block_until_ready`` would add its own cost)."""
    timer = timeit.Timer((lambda: jax.block_until_ready(fn())) if block else fn)
    number, _ = timer.autorange()
    number = max(1, int(number * min_total / 0.2))
    return statistics.median(r / number for r in timer.repeat(repeats, number=number))


def paired(first, second, rounds=7, block_first=True, block_second=True, per=1):
    """Times ``first`` and ``second`` back to back in ``rounds`` rounds (each
    time a median of 3 loops of about 0.1 s): on a loaded machine the load
    moves between rounds, and the ratio of one round's two times is steadier
    than a ratio of separate medians. Returns the two median times (divided
    by ``per``) and the median of the rounds' ratios second / first."""
    a, b, ca, cb = [], [], [], []
    for _ in range(rounds):
        a.append(per_call(first, repeats=3, min_total=0.1, block=block_first) / per)
        ca.append(cpu_per_call(first, a[-1] * per, block_first) / per)
        b.append(per_call(second, repeats=3, min_total=0.1, block=block_second) / per)
        cb.append(cpu_per_call(second, b[-1] * per, block_second) / per)
    ratio = statistics.median(y / x for x, y in zip(a, b))
    cpu_ratio = statistics.median(y / x for x, y in zip(ca, cb))
    return statistics.median(a), statistics.median(b), ratio, statistics.median(ca), statistics.median(cb), cpu_ratio


def cpu_per_call(fn, wall, block=True):
    """Process CPU seconds per call of ``fn`` (every thread's), over calls
    taking about 0.1 s of wall time (``wall``: one call's): less moved by
    the machine's load than wall time, as it counts the work, not the
    waiting for a core."""
    calls = max(1, int(0.1 / wall))
    start = time.process_time()
    for _ in range(calls):
        out = fn()
        if block:
            jax.block_until_ready(out)
    return (time.process_time() - start) / calls


def first_call(fn):
    """Seconds of the first call (tracing and compiling included)."""
    start = time.perf_counter()
    jax.block_until_ready(fn())
    return time.perf_counter() - start


def fmt(seconds):
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    if seconds < 1.0:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def load_peer():
    """benches/peers/jax_ball2d.py as a module (its Diffrax restart pattern)."""
    spec = importlib.util.spec_from_file_location("jax_ball2d", ROOT / "benches" / "peers" / "jax_ball2d.py")
    peer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(peer)
    return peer


def versions():
    out = {"python": platform.python_version()}
    for name in ["impact_adjoint", "jax", "jaxlib", "diffrax", "optimistix", "equinox", "lineax", "numpy"]:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def cpu_model():
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def normwise(a, b):
    """max |a - b| / max |b|."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-diffrax", action="store_true", help="skip the Diffrax figures")
    parser.add_argument("--out-dir", default=str(HERE), help="where the JSON and markdown go")
    args = parser.parse_args()
    load_before = os.getloadavg()
    wall = time.perf_counter()

    case = json.loads((ROOT / "crates" / "ia-verify" / "references" / "closed_form.json").read_text())["cases"][CASE]
    ball = ia.Model.ready(case["model"])
    x0_np = np.array([case["initial_state"][s] for s in ball.state_names])
    params_np = np.array([case["params"][p] for p in ball.param_names])
    t_end = float(case["t_end"])
    row = case["jacobian"]["x"]
    reference = np.array([row.get(w, 1.0 if w == "initial.x" else 0.0) for w in ball.wrt_names])
    x0, params = jnp.asarray(x0_np), jnp.asarray(params_np)
    figures, compile_s, errors = {}, {}, {}

    # --- context: the library from Python, the Rust call, the dispatch floor.
    loss = [{"of": "final.x", "weight": 1.0}]
    library_grad = ball.gradient(x0_np, params_np, t_end, loss=loss, solver=SOLVER).gradient
    figures["library_gradient_python"] = per_call(
        lambda: ball.gradient(x0_np, params_np, t_end, loss=loss, solver=SOLVER).gradient, block=False
    )
    core = iajax.JaxSolver(ball, t_end, max_events=4, solver=SOLVER)
    seeds = (x0_np[None], params_np[None], np.eye(1, 4), np.zeros((1, 4)), np.zeros((1, 0, 4)))
    figures["rust_call_python"] = per_call(lambda: core.cotangent_gradient(*seeds), block=False)
    nothing = jax.jit(lambda x, p: (x + 1.0, p + 1.0))
    first_call(lambda: nothing(x0, params))
    figures["dispatch_floor"] = per_call(lambda: nothing(x0, params))
    # The floor of (a): the same inputs and the same outputs as a
    # value_and_grad with respect to (x0, params) (a number, then two
    # arrays): JAX's cost of the call without the library's custom calls.
    nothing_vg = jax.jit(lambda x, p: (x[0] + 1.0, (x + 1.0, p + 1.0)))
    first_call(lambda: nothing_vg(x0, params))
    figures["dispatch_floor_value_and_grad"] = per_call(lambda: nothing_vg(x0, params))

    # --- (a) value_and_grad, ours.
    run = iajax.solver(ball, t_end, solver=SOLVER)
    # One custom call's cost: a jitted plain run against its Rust call from
    # Python (``JaxSolver.outputs``, what the handler runs) and the floor.
    plain = jax.jit(lambda x, p: run(x, p).final_state)
    first_call(lambda: plain(x0, params))
    figures["ours_jit_run"] = per_call(lambda: plain(x0, params))
    core_run = iajax.JaxSolver(ball, t_end, max_events=0, solver=SOLVER)
    figures["rust_run_python"] = per_call(lambda: core_run.outputs(x0_np[None], params_np[None]), block=False)
    x_t = lambda x, p: run(x, p).final_state[0]
    grad = jax.jit(jax.grad(x_t, argnums=(0, 1)))
    compile_s["ours_grad"] = first_call(lambda: grad(x0, params))
    figures["ours_grad"] = per_call(lambda: grad(x0, params))
    value_grad = jax.jit(jax.value_and_grad(x_t, argnums=(0, 1)))
    compile_s["ours_value_and_grad"] = first_call(lambda: value_grad(x0, params))
    figures["ours_value_and_grad"] = per_call(lambda: value_grad(x0, params))
    value, (gx, gp) = value_grad(x0, params)
    ours = np.concatenate([gx, gp])
    assert np.array_equal(ours, library_grad), "jax.value_and_grad differs from model.gradient"
    errors["ours_value_and_grad"] = {"value": abs(float(value) - case["final_state"]["x"]),
                                     "gradient_normwise": normwise(ours, reference)}

    # --- (b) vmap over 1,000 parameter sets, ours.
    rng = np.random.default_rng(15)
    batch_np = params_np * (1.0 + 0.02 * rng.uniform(-1, 1, size=(BATCH, 3)))
    batch = jnp.asarray(batch_np)
    many = jax.jit(jax.vmap(jax.grad(x_t, argnums=(0, 1)), in_axes=(None, 0)))
    compile_s["ours_vmap_grad"] = first_call(lambda: many(x0, batch))
    figures["ours_vmap_grad_per_item"] = per_call(lambda: many(x0, batch), repeats=5) / BATCH
    many_vg = jax.jit(jax.vmap(jax.value_and_grad(x_t, argnums=(0, 1)), in_axes=(None, 0)))
    compile_s["ours_vmap_value_and_grad"] = first_call(lambda: many_vg(x0, batch))
    figures["ours_vmap_value_and_grad_per_item"] = per_call(lambda: many_vg(x0, batch), repeats=5) / BATCH
    one = jax.jit(jax.grad(lambda p: x_t(x0, p)))
    singles = [jnp.asarray(p) for p in batch_np]  # on the device before timing
    figures["ours_loop_grad_per_item"] = per_call(lambda: [one(p) for p in singles], repeats=5) / BATCH
    mapped_gp = np.asarray(many(x0, batch)[1])
    # Where the batch's time goes: the same 1,000 one-pass gradients by the
    # handler's Rust call made from Python (no XLA, no tape kept).
    batch_seeds = (np.tile(x0_np, (BATCH, 1)), batch_np, np.tile(np.eye(1, 4), (BATCH, 1)),
                   np.zeros((BATCH, 4)), np.zeros((BATCH, 0, 4)))
    figures["rust_call_batch_per_item"] = per_call(lambda: core.cotangent_gradient(*batch_seeds), repeats=5,
                                                   block=False) / BATCH
    np.testing.assert_array_equal(core.cotangent_gradient(*batch_seeds)[1][:3], mapped_gp[:3])
    np.testing.assert_array_equal(mapped_gp[:3], np.stack([one(p) for p in singles[:3]]))

    # --- (c) jacfwd of the 4 final states against model.jacobian(method="forward").
    final = lambda x, p: run(x, p).final_state
    jacfwd = jax.jit(jax.jacfwd(final, argnums=(0, 1)))
    compile_s["ours_jacfwd"] = first_call(lambda: jacfwd(x0, params))
    figures["ours_jacfwd"] = per_call(lambda: jacfwd(x0, params))
    figures["library_forward_jacobian_python"] = per_call(
        lambda: ball.jacobian(x0_np, params_np, t_end, method="forward", solver=SOLVER).final_jacobian,
        block=False,
    )
    pairs = {}
    paired_c = pairs["c: model.jacobian, jax.jacfwd"] = paired(
        lambda: ball.jacobian(x0_np, params_np, t_end, method="forward", solver=SOLVER).final_jacobian,
        lambda: jacfwd(x0, params), block_first=False,
    )
    jf = np.concatenate(jacfwd(x0, params), axis=1)
    jl = ball.jacobian(x0_np, params_np, t_end, method="forward", solver=SOLVER).final_jacobian
    np.testing.assert_allclose(jf, jl, rtol=1e-13, atol=1e-13)
    assert jf.shape == (4, 7)
    errors["ours_jacfwd_row_x"] = {"gradient_normwise": normwise(jf[0], reference)}

    # --- Diffrax: the restart pattern (value_and_grad, and vmap of it).
    peer_versions = {}
    if not args.no_diffrax:
        peer = load_peer()
        f = peer.make_diffrax(float(x0_np[0]), t_end, TOL)
        p = jnp.concatenate([x0[1:], params])  # (y0, vx0, vy0, g, e, mu)
        d_value_grad = jax.jit(jax.value_and_grad(lambda p: f(p)[0]))
        compile_s["diffrax_value_and_grad"] = first_call(lambda: d_value_grad(p))
        figures["diffrax_value_and_grad"] = per_call(lambda: d_value_grad(p))
        paired_a = pairs["a: ours value_and_grad, Diffrax value_and_grad"] = paired(
            lambda: value_grad(x0, params), lambda: d_value_grad(p)
        )
        d_value, d_grad = d_value_grad(p)
        # Diffrax's x0 is fixed (d x(T) / d x0 = 1 by construction).
        errors["diffrax_value_and_grad"] = {
            "value": abs(float(d_value) - case["final_state"]["x"]),
            "gradient_normwise": normwise(np.concatenate([[1.0], d_grad]), reference),
        }
        d_batch = jnp.concatenate([jnp.broadcast_to(x0[1:], (BATCH, 3)), batch], axis=1)
        d_many = jax.jit(jax.vmap(jax.value_and_grad(lambda p: f(p)[0])))
        compile_s["diffrax_vmap_value_and_grad"] = first_call(lambda: d_many(d_batch))
        figures["diffrax_vmap_value_and_grad_per_item"] = per_call(lambda: d_many(d_batch), repeats=5) / BATCH
        paired_b = pairs["b: ours vmap(grad), Diffrax vmap(value_and_grad), per item"] = paired(
            lambda: many(x0, batch), lambda: d_many(d_batch), rounds=5, per=BATCH
        )
        d_mapped = np.asarray(d_many(d_batch)[1])
        errors["vmap_ours_vs_diffrax"] = {"gradient_max_abs": float(np.max(np.abs(d_mapped[:, 3:] - mapped_gp)))}
        peer_versions = {k: metadata.version(k) for k in ["diffrax", "optimistix", "equinox", "lineax"]}

    F = figures
    rows = [
        ("library gradient from Python (`model.gradient`)", F["library_gradient_python"], "", "", ""),
        ("the handler's Rust call from Python (`JaxSolver.cotangent_gradient`)", F["rust_call_python"], "", "", ""),
        ("a jitted function doing no work (dispatch floor)", F["dispatch_floor"], "", "", ""),
        ("the handler's Rust run from Python (`JaxSolver.outputs`, no tape)", F["rust_run_python"], "", "", ""),
        ("a jitted plain run through `impact_adjoint.jax` (one custom call)", F["ours_jit_run"],
         f"+{fmt(F['ours_jit_run'] - F['dispatch_floor'] - F['rust_run_python'])} over the floor and the Rust run",
         "", ""),
        ("`jax.grad` through `impact_adjoint.jax` (jit)", F["ours_grad"], "", "", ""),
        ("a jitted function doing no work, with the inputs and outputs of (a) (its floor)",
         F["dispatch_floor_value_and_grad"], "", "", ""),
        ("(a) `jax.value_and_grad` through `impact_adjoint.jax` (jit)", F["ours_value_and_grad"],
         f"+{fmt(F['ours_value_and_grad'] - F['dispatch_floor_value_and_grad'])} over its floor", "", ""),
    ]
    results = {}
    if "diffrax_value_and_grad" in F:
        ratio = paired_a[2]
        results["a"] = ratio
        results["a_separate_medians"] = F["diffrax_value_and_grad"] / F["ours_value_and_grad"]
        rows.append(("(a) Diffrax restart pattern `jax.value_and_grad` (jit)", F["diffrax_value_and_grad"],
                     f"ours {ratio:.1f}x faster (paired rounds; {results['a_separate_medians']:.1f}x by "
                     f"separate medians; CPU time {paired_a[5]:.1f}x)", f">= {TARGETS['a']:g}x", "yes" if ratio >= TARGETS["a"] else "**no**"))
    rows.append((f"(b) `jax.vmap(jax.grad)` over {BATCH} sets, ours, per item", F["ours_vmap_grad_per_item"], "", "", ""))
    rows.append((f"(b) `jax.vmap(jax.value_and_grad)` over {BATCH} sets, ours, per item",
                 F["ours_vmap_value_and_grad_per_item"], "", "", ""))
    rows.append((f"the handler's Rust call from Python for the {BATCH} sets in one batch, per item",
                 F["rust_call_batch_per_item"], "", "", ""))
    rows.append((f"Python loop of {BATCH} single jitted `jax.grad`, ours, per item", F["ours_loop_grad_per_item"],
                 f"vmap {F['ours_loop_grad_per_item'] / F['ours_vmap_grad_per_item']:.2f}x faster", "", ""))
    if "diffrax_vmap_value_and_grad_per_item" in F:
        d = F["diffrax_vmap_value_and_grad_per_item"]
        ratio = paired_b[2]
        like = d / F["ours_vmap_value_and_grad_per_item"]
        results["b"] = ratio
        results["b_separate_medians"] = d / F["ours_vmap_grad_per_item"]
        results["b_value_and_grad"] = like
        rows.append((f"(b) Diffrax `jax.vmap(jax.value_and_grad)` over {BATCH} sets, per item", d,
                     f"ours (grad) {ratio:.1f}x faster (paired rounds; {results['b_separate_medians']:.1f}x by "
                     f"separate medians; CPU time {paired_b[5]:.1f}x); ours (value_and_grad) {like:.1f}x",
                     f">= {TARGETS['b']:g}x", "yes" if ratio >= TARGETS["b"] else "**no**"))
    ratio = paired_c[2]
    results["c"] = ratio
    results["c_separate_medians"] = F["ours_jacfwd"] / F["library_forward_jacobian_python"]
    rows.append(("(c) library forward Jacobian from Python (`model.jacobian(method=\"forward\")`, 4 x 7)",
                 F["library_forward_jacobian_python"], "", "", ""))
    rows.append(("(c) `jax.jacfwd` of the 4 final states, 7 inputs (jit)", F["ours_jacfwd"],
                 f"{ratio:.2f}x the library's (paired rounds; {results['c_separate_medians']:.2f}x by separate "
                 f"medians; CPU time {paired_c[5]:.2f}x)", f"<= {TARGETS['c']:g}x", "yes" if ratio <= TARGETS["c"] else "**no**"))

    load_after = os.getloadavg()
    total = time.perf_counter() - wall
    v = versions()
    generated = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    command = " ".join(["python", "benches/jax/bench_jax.py"] + sys.argv[1:])
    head = [
        f"`{CASE}`, DOPRI5 rtol = atol = {TOL:g} (ours and Diffrax); python {v['python']}, "
        f"jax {v['jax']}, diffrax {v['diffrax']}, numpy {v['numpy']}; {cpu_model()}, nproc {os.cpu_count()}.",
        f"Generated {generated} by `{command}` ({total:.0f} s); load average (1, 5, 15 min) "
        f"{', '.join(f'{x:.1f}' for x in load_before)} before, {', '.join(f'{x:.1f}' for x in load_after)} after.",
    ]
    lines = ["| figure | time (median, per call or item) | ratio | target | met? |", "|---|---|---|---|---|"]
    lines += [f"| {name} | {fmt(t)} | {ratio} | {target} | {met} |" for name, t, ratio, target, met in rows]
    accuracy = [
        "Accuracy against the closed form (normwise relative gradient error): "
        + ", ".join(f"{k} {e['gradient_normwise']:.1e}" for k, e in errors.items() if "gradient_normwise" in e)
        + "."
    ]
    if "vmap_ours_vs_diffrax" in errors:
        accuracy.append(f"Batched gradients, ours against Diffrax's (g, e, mu entries): max abs difference "
                        f"{errors['vmap_ours_vs_diffrax']['gradient_max_abs']:.1e}.")
    accuracy.append("First calls (tracing and compiling, excluded above): "
                    + ", ".join(f"{k} {fmt(s)}" for k, s in compile_s.items()) + ".")
    markdown = "\n".join(head + [""] + lines + [""] + accuracy) + "\n"
    print(markdown)

    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_jax_results.md").write_text(markdown)
    record = {
        "case": CASE, "solver": SOLVER, "batch": BATCH, "command": command, "generated_utc": generated,
        "total_wall_s": total, "load_average_before": load_before, "load_average_after": load_after,
        "versions": {**v, **peer_versions}, "cpu": {"model_name": cpu_model(), "nproc": os.cpu_count()},
        "seconds": figures, "first_call_seconds": compile_s, "errors": errors,
        "ratios": results,
        "paired_rounds": {k: {"first_s": v[0], "second_s": v[1], "ratio_second_over_first": v[2],
                              "first_cpu_s": v[3], "second_cpu_s": v[4], "cpu_ratio_second_over_first": v[5]}
                          for k, v in pairs.items()},
        "targets": {"a_min": TARGETS["a"], "b_min": TARGETS["b"], "c_max": TARGETS["c"]},
    }
    (out / "bench_jax_results.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
