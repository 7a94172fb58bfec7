#!/usr/bin/env python3
"""Stiff drug model with redosing: impact-adjoint's Kvaerno 5(4) against
pydiffsol (ESDIRK34 and BDF forward sensitivities) and Diffrax (Kvaerno5,
``jax.grad`` of the restart pattern), issue 28's peer rows.

The problem is ``crates/ia-verify/references/stiff/drug.json`` (a depot
absorbed at ka ~ 1e3 into a central compartment exchanging with a
peripheral one, eliminated at ke ~ 0.1; a dose enters the depot whenever
depot + central fall below a threshold; three redoses before t_end = 50),
and its reference ``drug.reference.json`` (mpmath at 50 digits: matrix
exponentials, root finding, central differences of the high-precision
run). Everything is read from those two files: the initial state, the
parameters, t_end, and the flow, guard and reset expressions, which the
peers evaluate as written (JAX: Python expressions over ``jax.numpy``
scalars; pydiffsol: the same expressions in DiffSL). The derivatives are
with respect to the 9 inputs in the model's order (3 initial states, 6
parameters).

Figures, at rtol = atol = each of ``--tols`` (default 1e-6, 1e-8, 1e-10):

* forward Jacobian of the final state (3 x 9): ours
  (``model.jacobian(method="forward", solver="kvaerno5")``) against
  pydiffsol's ``solve_fwd_sens`` with ESDIRK34 and with BDF (its
  ``sens_rtol``/``sens_atol`` set to the tolerance, so that its error
  control sees the sensitivities as ours does); the reset is a DiffSL
  ``stop``/``reset`` pair, applied by pydiffsol itself (its root function
  has no direction: the guard only falls on this run, which the event
  count confirms);
* adjoint gradient of central(T) (9 entries): ours from Python
  (``model.gradient``, one taped run and one backward pass) and through
  ``impact_adjoint.jax`` (jitted ``jax.grad``), against Diffrax's Kvaerno5
  restart pattern, jitted ``jax.grad``: ``diffeqsolve`` with a terminating
  ``diffrax.Event`` on the guard (falling, located by ``optimistix.Newton``
  at 1e-12), the reset applied in user code at each redose event and the
  solve restarted, a ``lax.scan`` of (reference events + 2) segments.

Errors are normwise relative against the reference (max |a - b| / max |b|,
as ``crates/ia-verify/tests/stiff.rs``). Times are medians over repeats of
warm calls (JIT compilation of DiffSL and XLA excluded; the first call is
recorded apart); the target time ratios are paired (the two sides timed
back to back in rounds, the median of the rounds' ratios: steadier on a
loaded machine than a ratio of separate medians), and given in process CPU
time too (every thread's: the work done, not the wait for a core). The targets are judged at rtol 1e-8: forward error at
most 1/10 of ESDIRK34's; forward time at most 0.5x BDF's at equal or better
error; adjoint time at least 10x faster than Diffrax's at equal or better
error (ours at the loosest tolerance of the sweep whose error is at most
Diffrax's at 1e-8).

Writes ``stiff_drug_results.json`` and ``stiff_drug_results.md`` into
``--out-dir`` (default: beside this script).

Ours runs at ``--ours-tols`` too (between the peers' decades), so that
"at equal or better error" is a work-precision comparison: for every peer
run that finished, ours at the loosest tolerance whose error is at most
the peer's, the time ratio there and at the same rtol (the work-precision
table; the target rows time that match paired).

Usage (from the repository root, in the peers' venv; see README.md):

    python benches/peers/stiff_drug.py [--tols 1e-6,1e-8,1e-10] [--ours-tols 5e-8,2e-8] [--out-dir DIR]
"""

import argparse
import datetime
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

import diffrax  # noqa: E402
import optimistix as optx  # noqa: E402
import pydiffsol as ds  # noqa: E402

import impact_adjoint as ia  # noqa: E402
import impact_adjoint.jax as iajax  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
STIFF = ROOT / "crates" / "ia-verify" / "references" / "stiff"
LOSS_STATE = "central"
TARGET_TOL = 1e-8
TARGETS = {"forward_error_fraction": 0.1, "forward_time_vs_bdf": 0.5, "adjoint_speedup": 10.0}


def per_call(fn, repeats=7, min_total=0.25):
    """Median seconds per call of ``fn`` (its result ready when returned)."""
    timer = timeit.Timer(lambda: jax.block_until_ready(fn()))
    number, _ = timer.autorange()
    number = max(1, int(number * min_total / 0.2))
    return statistics.median(r / number for r in timer.repeat(repeats, number=number))


def paired(first, second, rounds=7):
    """Times ``first`` and ``second`` back to back in ``rounds`` rounds (each
    a median of 3 loops of about 0.1 s); returns the two median times and
    the median of the rounds' ratios second / first (steadier than a ratio
    of separate medians when the machine's load moves)."""
    a, b, ca, cb = [], [], [], []
    for _ in range(rounds):
        a.append(per_call(first, repeats=3, min_total=0.1))
        ca.append(cpu_per_call(first, a[-1]))
        b.append(per_call(second, repeats=3, min_total=0.1))
        cb.append(cpu_per_call(second, b[-1]))
    ratio = statistics.median(y / x for x, y in zip(a, b))
    cpu_ratio = statistics.median(y / x for x, y in zip(ca, cb))
    return statistics.median(a), statistics.median(b), ratio, statistics.median(ca), statistics.median(cb), cpu_ratio


def cpu_per_call(fn, wall):
    """Process CPU seconds per call of ``fn`` (every thread's), over calls
    taking about 0.1 s of wall time (``wall``: one call's): less moved by
    the machine's load than wall time, as it counts the work, not the
    waiting for a core."""
    calls = max(1, int(0.1 / wall))
    start = time.process_time()
    for _ in range(calls):
        jax.block_until_ready(fn())
    return (time.process_time() - start) / calls


def first_call(fn):
    start = time.perf_counter()
    jax.block_until_ready(fn())
    return time.perf_counter() - start


def normwise(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def fmt(seconds):
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    if seconds < 1.0:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


class Problem:
    """The drug model as its JSON states it: names, defaults, the one mode's
    flow, the one transition's guard, direction and reset."""

    def __init__(self, model, reference):
        self.model = model
        self.states = list(model["states"])
        self.params = list(model["params"])
        assert len(model["modes"]) == 1 and len(model["transitions"]) == 1, "one mode, one transition"
        mode = next(iter(model["modes"].values()))
        self.flow = [mode["flow"][s] for s in self.states]
        tr = model["transitions"][0]
        assert tr["from"] == tr["to"], "a self-transition"
        self.guard, self.direction = tr["guard"], tr["direction"]
        self.reset = {s: tr["reset"].get(s, s) for s in self.states}
        self.t_end = float(reference["t_end"])
        self.x0 = np.array([model["states"][s] for s in self.states], dtype=float)
        self.p = np.array([model["params"][p] for p in self.params], dtype=float)
        self.wrt = [f"initial.{s}" for s in self.states] + [f"param.{p}" for p in self.params]
        self.jacobian = np.array([[reference["jacobian"][s][w] for w in self.wrt] for s in self.states])
        self.gradient = self.jacobian[self.states.index(LOSS_STATE)]
        self.events = len(reference["events"])
        self.final = np.array([reference["final_state"][s] for s in self.states])

    # --- JAX (Diffrax): the expressions evaluated over jax.numpy scalars.
    def scope(self, z, params):
        names = {s: z[i] for i, s in enumerate(self.states)}
        names.update({p: params[i] for i, p in enumerate(self.params)})
        return names

    def jax_flow(self, t, z, params):
        scope = self.scope(z, params)
        return jnp.stack([eval(e, {}, scope) for e in self.flow])  # noqa: S307 (the model's own expressions)

    def jax_guard(self, z, params):
        return eval(self.guard, {}, self.scope(z, params))  # noqa: S307

    def jax_reset(self, z, params):
        scope = self.scope(z, params)
        return jnp.stack([eval(self.reset[s], {}, scope) for s in self.states])  # noqa: S307

    # --- DiffSL (pydiffsol): the initial state as inputs too, so that its
    # forward sensitivities cover the 9 inputs.
    def diffsl(self):
        inputs = [f"{s}0 = {float(v)!r}" for s, v in zip(self.states, self.x0)]
        inputs += [f"{p} = {float(v)!r}" for p, v in zip(self.params, self.p)]
        return "\n".join([
            "in_i { " + ", ".join(inputs) + " }",
            "u_i { " + ", ".join(f"{s} = {s}0" for s in self.states) + " }",
            "F_i { " + ", ".join(self.flow) + " }",
            "stop_i { " + self.guard + " }",
            "reset_i { " + ", ".join(self.reset[s] for s in self.states) + " }",
        ])


def ours_forward(model, problem, tol):
    solver = {"method": "kvaerno5", "rtol": tol, "atol": tol}
    call = lambda: model.jacobian(problem.x0, problem.p, problem.t_end, method="forward", solver=solver)
    jac = call()
    return {
        "error": normwise(jac.final_jacobian, problem.jacobian),
        "events": len(jac.event_times),
        "seconds": per_call(lambda: call().final_jacobian),
        "steps": jac.stats.get("steps") if isinstance(jac.stats, dict) else None,
        "_call": lambda: call().final_jacobian,
    }


def pydiffsol_forward(problem, method, tol, sens_tol):
    """pydiffsol's forward sensitivities at rtol = atol = ``tol``;
    ``sens_tol``: its ``sens_rtol`` and ``sens_atol`` (None: its default,
    sensitivities outside the error control). A failed solve is recorded
    with its message."""
    start = time.perf_counter()
    ode = ds.Ode(problem.diffsl(), matrix_type=ds.nalgebra_dense, ode_solver=method)
    compile_s = time.perf_counter() - start
    ode.rtol = ode.atol = tol
    if sens_tol is not None:
        ode.sens_rtol = ode.sens_atol = sens_tol
    inputs = np.concatenate([problem.x0, problem.p])
    t_eval = np.array([problem.t_end])

    def call():
        sens = ode.solve_fwd_sens(inputs, t_eval).sens
        return np.stack([np.asarray(s)[:, -1] for s in sens], axis=1)  # 3 x 9

    try:
        jac = call()
    except RuntimeError as error:
        return {"error": None, "events": None, "seconds": None, "failure": str(error),
                "first_call_seconds": compile_s}
    primal = ode.solve(inputs, problem.t_end)
    dose = problem.p[problem.params.index("dose")] if "dose" in problem.params else 1.0
    # Redoses: the depot jumps up by a dose between two output points.
    jumps = int(np.sum(np.diff(np.asarray(primal.ys)[0]) > 0.5 * dose))
    return {
        "error": normwise(jac, problem.jacobian),
        "events": jumps,
        "seconds": per_call(call),
        "first_call_seconds": compile_s,
        "_call": call,
    }


def ours_adjoint(model, problem, tol):
    solver = {"method": "kvaerno5", "rtol": tol, "atol": tol}
    loss = [{"of": f"final.{LOSS_STATE}", "weight": 1.0}]
    call = lambda: model.gradient(problem.x0, problem.p, problem.t_end, loss=loss, solver=solver).gradient
    grad = call()
    out = {"error": normwise(grad, problem.gradient), "seconds": per_call(call)}
    run = iajax.solver(model, problem.t_end, solver=solver)
    k = problem.states.index(LOSS_STATE)
    jgrad = jax.jit(jax.grad(lambda x, p: run(x, p).final_state[k], argnums=(0, 1)))
    x0, p = jnp.asarray(problem.x0), jnp.asarray(problem.p)
    out["jax_first_call_seconds"] = first_call(lambda: jgrad(x0, p))
    out["jax_seconds"] = per_call(lambda: jgrad(x0, p))
    gx, gp = jgrad(x0, p)
    out["jax_error"] = normwise(np.concatenate([gx, gp]), problem.gradient)
    out["_jax_call"] = lambda: jgrad(x0, p)
    return out


def diffrax_adjoint(problem, tol):
    """jax.grad of central(T) by Diffrax's restart pattern with Kvaerno5."""
    n = len(problem.states)
    k = problem.states.index(LOSS_STATE)
    segments = problem.events + 2
    term = diffrax.ODETerm(problem.jax_flow)
    solver = diffrax.Kvaerno5()
    controller = diffrax.PIDController(rtol=tol, atol=tol)
    event = diffrax.Event(
        lambda t, y, args, **kwargs: problem.jax_guard(y, args),
        root_finder=optx.Newton(rtol=1e-12, atol=1e-12),
        direction={"falling": False, "rising": True, "either": None}[problem.direction],
    )

    def segment(t0, z, params):
        sol = diffrax.diffeqsolve(
            term, solver, t0, problem.t_end, None, z, args=params,
            stepsize_controller=controller, event=event,
            saveat=diffrax.SaveAt(t1=True), max_steps=65536,
        )
        hit = sol.event_mask
        t1, z1 = sol.ts[-1], sol.ys[-1]
        return t1, jnp.where(hit, problem.jax_reset(z1, params), z1), hit

    def final(inputs):
        z0, params = inputs[:n], inputs[n:]

        def body(carry, _):
            t, z = carry
            t1, z1, hit = segment(t, z, params)
            return (t1, z1), hit

        (_, z_end), hits = jax.lax.scan(body, (jnp.asarray(0.0), z0), None, length=segments)
        return z_end[k], jnp.sum(hits.astype(jnp.int32))

    grad = jax.jit(jax.grad(lambda q: final(q)[0]))
    count = jax.jit(lambda q: final(q)[1])
    inputs = jnp.asarray(np.concatenate([problem.x0, problem.p]))
    out = {"first_call_seconds": first_call(lambda: grad(inputs))}
    out["seconds"] = per_call(lambda: grad(inputs), repeats=5)
    out["error"] = normwise(np.asarray(grad(inputs)), problem.gradient)
    out["events"] = int(count(inputs))
    out["_call"] = lambda: grad(inputs)
    return out


def versions():
    out = {"python": platform.python_version()}
    for name in ["impact_adjoint", "pydiffsol", "jax", "jaxlib", "diffrax", "optimistix", "equinox", "lineax",
                 "numpy"]:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    out["diffsol (in pydiffsol)"] = ds.diffsol_version()
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tols", default="1e-6,1e-7,1e-8,1e-9,1e-10",
                        help="comma-separated rtol = atol list (pydiffsol; ours too)")
    parser.add_argument("--ours-tols", default="5e-7,2e-7,5e-8,2e-8,5e-9,2e-9,5e-10,2e-10",
                        help="further rtol = atol values for ours only, between the peers' (the work-precision "
                             "comparison: ours at the loosest tolerance whose error is at most the peer's)")
    parser.add_argument("--diffrax-tols", default="1e-6,1e-8,1e-10,1e-12",
                        help="comma-separated rtol = atol list for Diffrax (each one compiles for 30 s or more)")
    parser.add_argument("--out-dir", default=str(HERE))
    parser.add_argument("--no-diffrax", action="store_true", help="skip the Diffrax rows")
    args = parser.parse_args()
    tols = [float(s) for s in args.tols.split(",") if s]
    ours_tols = sorted(set(tols) | {float(s) for s in args.ours_tols.split(",") if s}, reverse=True)
    diffrax_tols = [] if args.no_diffrax else [float(s) for s in args.diffrax_tols.split(",") if s]
    assert TARGET_TOL in tols, f"--tols must include {TARGET_TOL:g} (the targets' tolerance)"
    assert not diffrax_tols or TARGET_TOL in diffrax_tols, f"--diffrax-tols must include {TARGET_TOL:g}"
    load_before = os.getloadavg()
    wall = time.perf_counter()

    model_json = json.loads((STIFF / "drug.json").read_text())
    reference = json.loads((STIFF / "drug.reference.json").read_text())
    problem = Problem(model_json, reference)
    model = ia.Model.from_equations(model_json)
    assert model.wrt_names == problem.wrt, model.wrt_names

    forward, adjoint = [], []
    for tol in sorted(set(ours_tols) | set(diffrax_tols), reverse=True):
        if tol in diffrax_tols:
            adjoint.append({"who": "Diffrax Kvaerno5", "tol": tol, **diffrax_adjoint(problem, tol)})
        if tol not in ours_tols:
            continue
        forward.append({"who": "impact-adjoint kvaerno5", "tol": tol, **ours_forward(model, problem, tol)})
        adjoint.append({"who": "impact-adjoint kvaerno5", "tol": tol, **ours_adjoint(model, problem, tol)})
        if tol not in tols:
            continue
        for name, method in [("ESDIRK34", ds.esdirk34), ("BDF", ds.bdf)]:
            for sens, sens_tol in [("sens_tol = tol", tol), ("sens_tol default", None)]:
                forward.append({"who": f"pydiffsol {name}", "sens": sens, "tol": tol,
                                **pydiffsol_forward(problem, method, tol, sens_tol)})
        print(f"tol {tol:g} done ({time.perf_counter() - wall:.0f} s)", file=sys.stderr, flush=True)

    def pick(rows, who, tol):
        return next(r for r in rows if r["who"] == who and r["tol"] == tol)

    def loosest(rows, key, error):
        """Our row at the loosest tolerance whose error (``key``) is at most ``error``."""
        ours = sorted((r for r in rows if r["who"] == "impact-adjoint kvaerno5"), key=lambda r: -r["tol"])
        return next((r for r in ours if r[key] <= error), None)

    ours_f = pick(forward, "impact-adjoint kvaerno5", TARGET_TOL)
    verdicts = []
    for sens in ["sens_tol = tol", "sens_tol default"]:
        esdirk = next(r for r in forward if r["who"] == "pydiffsol ESDIRK34" and r.get("sens") == sens
                      and r["tol"] == TARGET_TOL)
        bdf = next(r for r in forward if r["who"] == "pydiffsol BDF" and r.get("sens") == sens
                   and r["tol"] == TARGET_TOL)
        if esdirk["error"] is None:
            verdicts.append({"figure": f"forward Jacobian error, ours / pydiffsol ESDIRK34 ({sens}, rtol 1e-8)",
                             "measured": None, "target": f"<= {TARGETS['forward_error_fraction']:g}",
                             "met": None, "detail": f"ESDIRK34 failed: {esdirk['failure']}"})
        else:
            frac = ours_f["error"] / esdirk["error"]
            verdicts.append({
                "figure": f"forward Jacobian error, ours / pydiffsol ESDIRK34 ({sens}, rtol 1e-8)",
                "measured": frac, "target": f"<= {TARGETS['forward_error_fraction']:g}",
                "met": frac <= TARGETS["forward_error_fraction"],
                "detail": f"{ours_f['error']:.1e} against {esdirk['error']:.1e}",
            })
        if bdf["error"] is None:
            verdicts.append({"figure": f"forward Jacobian time, ours / pydiffsol BDF ({sens}, rtol 1e-8)",
                             "measured": None, "target": f"<= {TARGETS['forward_time_vs_bdf']:g}",
                             "met": None, "detail": f"BDF failed: {bdf['failure']}"})
        else:
            match = loosest(forward, "error", bdf["error"])
            ratio = None
            if match is not None:
                pair = paired(match["_call"], bdf["_call"])
                ratio = 1.0 / pair[2]
            verdicts.append({
                "figure": f"forward Jacobian time, ours / pydiffsol BDF ({sens}, rtol 1e-8)",
                "measured": ratio, "target": f"<= {TARGETS['forward_time_vs_bdf']:g} at equal or better error",
                "met": ratio is not None and ratio <= TARGETS["forward_time_vs_bdf"],
                "cpu_measured": None if match is None else 1.0 / pair[5],
                "detail": f"BDF: {fmt(bdf['seconds'])}, error {bdf['error']:.1e}; " + (
                    "no tolerance of ours reached it" if match is None else
                    f"ours at rtol {match['tol']:g}: {fmt(match['seconds'])}, error {match['error']:.1e}; paired "
                    f"rounds {fmt(pair[0])} against {fmt(pair[1])}, CPU time ratio {1.0 / pair[5]:.2f}; "
                    f"at the same rtol 1e-8: {fmt(ours_f['seconds'])} ({ours_f['seconds'] / bdf['seconds']:.2f}x), "
                    f"error {ours_f['error']:.1e}"),
            })
    if not args.no_diffrax:
        peer = pick(adjoint, "Diffrax Kvaerno5", TARGET_TOL)
        ours_a = pick(adjoint, "impact-adjoint kvaerno5", TARGET_TOL)
        match = loosest(adjoint, "jax_error", peer["error"])
        if match is not None:
            pair = paired(match["_jax_call"], peer["_call"], rounds=5)
            speed = pair[2]
            verdicts.append({
                "figure": "adjoint gradient, Diffrax Kvaerno5 `jax.grad` / ours `jax.grad` (jit)",
                "measured": speed, "target": f">= {TARGETS['adjoint_speedup']:g} at equal or better error",
                "met": speed >= TARGETS["adjoint_speedup"],
                "cpu_measured": pair[5],
                "detail": f"Diffrax at rtol 1e-8: {fmt(peer['seconds'])}, error {peer['error']:.1e}; ours at rtol "
                          f"{match['tol']:g}: {fmt(match['jax_seconds'])}, error {match['jax_error']:.1e}; paired "
                          f"rounds {fmt(pair[0])} against {fmt(pair[1])}, CPU time ratio {pair[5]:.1f} "
                          f"(`model.gradient`: {fmt(match['seconds'])}); at the same rtol 1e-8: "
                          f"{peer['seconds'] / ours_a['jax_seconds']:.1f}x, ours' error {ours_a['jax_error']:.1e}",
            })
        else:
            verdicts.append({"figure": "adjoint gradient against Diffrax", "measured": None,
                             "target": f">= {TARGETS['adjoint_speedup']:g}", "met": False,
                             "detail": "no tolerance of ours reached Diffrax's error"})

    # Work-precision: every peer run that finished, against ours at the
    # loosest tolerance whose error is at most the peer's (separate medians),
    # and against ours at the same rtol.
    precision = []
    for r in forward:
        if r["who"] == "impact-adjoint kvaerno5" or r["error"] is None:
            continue
        match = loosest(forward, "error", r["error"])
        same = next((o for o in forward if o["who"] == "impact-adjoint kvaerno5" and o["tol"] == r["tol"]), None)
        precision.append({
            "peer": r["who"], "sens": r.get("sens"), "peer_tol": r["tol"], "peer_error": r["error"],
            "peer_seconds": r["seconds"],
            "ours_tol": None if match is None else match["tol"],
            "ours_error": None if match is None else match["error"],
            "ours_seconds": None if match is None else match["seconds"],
            "ratio_at_matched_error": None if match is None else match["seconds"] / r["seconds"],
            "ratio_at_same_rtol": None if same is None else same["seconds"] / r["seconds"],
            "same_rtol_error": None if same is None else same["error"],
        })

    load_after = os.getloadavg()
    total = time.perf_counter() - wall
    v = versions()
    generated = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    command = " ".join(["python", "benches/peers/stiff_drug.py"] + sys.argv[1:])
    md = [
        f"Stiff drug model with redosing (`drug.json`, {problem.events} redoses, t_end = {problem.t_end:g}); "
        f"errors normwise relative against `drug.reference.json` (mpmath, 50 digits).",
        f"impact_adjoint {v['impact_adjoint']}, pydiffsol {v['pydiffsol']} (diffsol {v['diffsol (in pydiffsol)']}), "
        f"jax {v['jax']}, diffrax {v['diffrax']}, optimistix {v['optimistix']}; python {v['python']}, "
        f"nproc {os.cpu_count()}.",
        f"Generated {generated} by `{command}` ({total:.0f} s); load average (1, 5, 15 min) "
        f"{', '.join(f'{x:.1f}' for x in load_before)} before, {', '.join(f'{x:.1f}' for x in load_after)} after.",
        "",
        "Forward Jacobian of the final state (3 x 9):",
        "",
        "| method | rtol = atol | error | time (median) | redoses |",
        "|---|---|---|---|---|",
    ]
    for r in forward:
        who = r["who"] + (f" ({r['sens']})" if "sens" in r else "")
        if r["error"] is None:
            md.append(f"| {who} | {r['tol']:g} | failed: {r['failure']} | | |")
        else:
            md.append(f"| {who} | {r['tol']:g} | {r['error']:.1e} | {fmt(r['seconds'])} | {r['events']} |")
    md += [
        "",
        f"Adjoint gradient of {LOSS_STATE}(T) (9 entries):",
        "",
        "| method | rtol = atol | error | time (median) | first call |",
        "|---|---|---|---|---|",
    ]
    for r in adjoint:
        if r["who"].startswith("impact-adjoint"):
            md.append(f"| impact-adjoint kvaerno5, `model.gradient` | {r['tol']:g} | {r['error']:.1e} | "
                      f"{fmt(r['seconds'])} | |")
            md.append(f"| impact-adjoint kvaerno5, `jax.grad` (jit) | {r['tol']:g} | {r['jax_error']:.1e} | "
                      f"{fmt(r['jax_seconds'])} | {fmt(r['jax_first_call_seconds'])} |")
        else:
            md.append(f"| {r['who']} `jax.grad` (jit), {r['events']} redoses | {r['tol']:g} | {r['error']:.1e} | "
                      f"{fmt(r['seconds'])} | {fmt(r['first_call_seconds'])} |")
    md += [
        "",
        "Work-precision, forward Jacobian: each peer run that finished, against ours at the loosest tolerance "
        "whose error is at most the peer's (ratio of separate medians, ours / peer), and ours at the same rtol:",
        "",
        "| peer | rtol | peer's error, time | ours matched: rtol, error, time | ours / peer at matched error "
        "| ours / peer at the same rtol (ours' error) |",
        "|---|---|---|---|---|---|",
    ]
    for w in precision:
        who = w["peer"] + (f" ({w['sens']})" if w["sens"] else "")
        matched = ("none reaches it" if w["ours_tol"] is None else
                   f"{w['ours_tol']:g}, {w['ours_error']:.1e}, {fmt(w['ours_seconds'])}")
        ratio = "-" if w["ratio_at_matched_error"] is None else f"{w['ratio_at_matched_error']:.2f}"
        same = ("-" if w["ratio_at_same_rtol"] is None else
                f"{w['ratio_at_same_rtol']:.2f} ({w['same_rtol_error']:.1e})")
        md.append(f"| {who} | {w['peer_tol']:g} | {w['peer_error']:.1e}, {fmt(w['peer_seconds'])} | {matched} "
                  f"| {ratio} | {same} |")
    md += ["", "| target | measured | met? | detail |", "|---|---|---|---|"]
    for t in verdicts:
        measured = "-" if t["measured"] is None else f"{t['measured']:.3g}"
        met = "n/a" if t["met"] is None else ("yes" if t["met"] else "**no**")
        md.append(f"| {t['figure']}: {t['target']} | {measured} | {met} | "
                  f"{t['detail']} |")
    markdown = "\n".join(md) + "\n"
    print(markdown)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "stiff_drug_results.md").write_text(markdown)
    record = {
        "problem": "crates/ia-verify/references/stiff/drug.json", "reference": "drug.reference.json",
        "command": command, "generated_utc": generated, "total_wall_s": total,
        "load_average_before": load_before, "load_average_after": load_after, "versions": v,
        "nproc": os.cpu_count(), "verdicts": verdicts, "work_precision": precision,
        "forward": [{k: v for k, v in r.items() if not k.startswith("_")} for r in forward],
        "adjoint": [{k: v for k, v in r.items() if not k.startswith("_")} for r in adjoint],
        "diffsl": problem.diffsl(),
    }
    (out / "stiff_drug_results.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
