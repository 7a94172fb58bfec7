#!/usr/bin/env python3
"""JAX peer comparison for the impact-adjoint case ``ball2d_flat_a``.

Gradient of x(T) with respect to (y0, vx0, vy0, g, e, mu) for a 2D bouncing ball
(state (x, y, vx, vy); flow x'=vx, y'=vy, vx'=0, vy'=-g; guard y falling through 0;
reset vx <- mu*vx, vy <- -e*vy), computed three ways with JAX in float64:

  (a) ``rk4_grid``    fixed-step RK4 in ``lax.scan``; the reset is applied at the grid
                      point after a step that ends with y < 0 and vy < 0 (``jnp.where``).
  (b) ``rk4_interp``  same RK4 loop, but a step in which y crosses zero is split: the
                      crossing fraction is found by linear interpolation of y, the
                      (linearly interpolated) state there is reset, and the rest of the
                      step is re-integrated with RK4.
  (c) ``diffrax``     ``diffrax.diffeqsolve`` (Dopri5, PIDController) with a terminating
                      ``diffrax.Event`` on y (downward crossing) located by
                      ``optimistix.Newton``; the reset is applied in user code and the
                      solver restarted from the event time.  The restarts are a fixed-length
                      ``jax.lax.scan`` of ``N_SEGMENTS`` diffeqsolve calls (so the whole
                      thing is jitted); a segment that ends at t_end without an event
                      leaves the state alone, and later segments start with t0 == t1 == t_end
                      (no-op solves).

All three are differentiated with ``jax.grad`` (reverse mode, via
``jax.value_and_grad``) and compared with the closed-form reference read from
``closed_form.json``.  Timings are the median time of one jitted value-and-grad call
after warm-up, with ``block_until_ready``.

Usage:  python3 benches/peers/jax_ball2d.py [--reference PATH] [--dts 1e-2,1e-3,1e-4,1e-5]
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import statistics
import subprocess
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

CASE = "ball2d_flat_a"
PARAM_NAMES = ["initial.y", "initial.vx", "initial.vy", "param.g", "param.e", "param.mu"]
SHORT = ["y0", "vx0", "vy0", "g", "e", "mu"]
N_SEGMENTS = 6  # diffrax restarts: up to N_SEGMENTS - 1 events before t_end (case has 3)
MAX_EVENTS_RECORDED = 8  # size of the event-time buffer for (a), (b)

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]


# --------------------------------------------------------------------------------------
# reference
# --------------------------------------------------------------------------------------
def find_reference(cli_path: str | None) -> Path:
    candidates = []
    if cli_path:
        candidates.append(Path(cli_path))
    if os.environ.get("IMPACT_ADJOINT_REFERENCE"):
        candidates.append(Path(os.environ["IMPACT_ADJOINT_REFERENCE"]))
    candidates.append(REPO_ROOT / "crates" / "ia-verify" / "references" / "closed_form.json")
    for c in candidates:
        if c.is_file():
            return c.resolve()
    raise SystemExit(
        "closed_form.json not found; pass --reference PATH "
        f"(tried: {', '.join(str(c) for c in candidates)})"
    )


def display_path(path: Path) -> str:
    """The path relative to the repository where it lies inside it, so that no
    written result names a folder of the machine it ran on."""
    try:
        return str(path.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return path.name


def load_case(path: Path) -> dict:
    with open(path) as fh:
        data = json.load(fh)
    case = data["cases"][CASE]
    assert case["model"] == "ball2d-flat", case["model"]
    return case


# --------------------------------------------------------------------------------------
# model
# --------------------------------------------------------------------------------------
def flow(z, g):
    # z = (x, y, vx, vy)
    return jnp.stack([z[2], z[3], jnp.zeros_like(z[2]), -g * jnp.ones_like(z[3])])


def reset(z, e, mu):
    return jnp.stack([z[0], z[1], mu * z[2], -e * z[3]])


def rk4_step(z, h, g):
    k1 = flow(z, g)
    k2 = flow(z + 0.5 * h * k1, g)
    k3 = flow(z + 0.5 * h * k2, g)
    k4 = flow(z + h * k3, g)
    return z + (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)


def unpack(p, x0):
    y0, vx0, vy0, g, e, mu = (p[i] for i in range(6))
    z0 = jnp.stack([jnp.asarray(x0, p.dtype), y0, vx0, vy0])
    return z0, g, e, mu


# (a) pure time stepping, reset at the grid point --------------------------------------
def make_rk4_grid(x0: float, t_end: float, dt: float):
    n = int(round(t_end / dt))
    h = t_end / n

    def f(p):
        z0, g, e, mu = unpack(p, x0)
        evts = jnp.full((MAX_EVENTS_RECORDED,), jnp.nan)

        def body(carry, _):
            z, i, k, evts = carry
            z1 = rk4_step(z, h, g)
            hit = (z1[1] < 0.0) & (z1[3] < 0.0)
            z1 = jnp.where(hit, reset(z1, e, mu), z1)
            t1 = (i + 1) * h
            evts = jnp.where(hit, evts.at[jnp.minimum(k, MAX_EVENTS_RECORDED - 1)].set(t1), evts)
            return (z1, i + 1, k + hit.astype(jnp.int32), evts), None

        (zT, _, nev, evts), _ = jax.lax.scan(
            body, (z0, jnp.int32(0), jnp.int32(0), evts), None, length=n
        )
        return zT[0], (evts, nev)

    return f, n


# (b) RK4 with linearly interpolated crossing -------------------------------------------
def make_rk4_interp(x0: float, t_end: float, dt: float):
    n = int(round(t_end / dt))
    h = t_end / n

    def f(p):
        z0, g, e, mu = unpack(p, x0)
        evts = jnp.full((MAX_EVENTS_RECORDED,), jnp.nan)

        def body(carry, _):
            z, i, k, evts = carry
            z1 = rk4_step(z, h, g)
            cross = (z[1] > 0.0) & (z1[1] <= 0.0)
            # double-where so the untaken branch cannot produce NaN/inf cotangents
            denom = jnp.where(cross, z[1] - z1[1], 1.0)
            s = jnp.where(cross, z[1] / denom, 0.5)
            zc = z + s * (z1 - z)  # linear interpolation of the whole state
            zr = reset(zc, e, mu)
            z2 = rk4_step(zr, (1.0 - s) * h, g)
            znew = jnp.where(cross, z2, z1)
            tc = (i + s) * h
            evts = jnp.where(cross, evts.at[jnp.minimum(k, MAX_EVENTS_RECORDED - 1)].set(tc), evts)
            return (znew, i + 1, k + cross.astype(jnp.int32), evts), None

        (zT, _, nev, evts), _ = jax.lax.scan(
            body, (z0, jnp.int32(0), jnp.int32(0), evts), None, length=n
        )
        return zT[0], (evts, nev)

    return f, n


# (c) Diffrax: terminating Event + Newton root find, restart in user code ----------------
def make_diffrax(x0: float, t_end: float, tol: float, solver_name: str = "Dopri5"):
    solver = {"Dopri5": diffrax.Dopri5(), "Tsit5": diffrax.Tsit5()}[solver_name]
    term = diffrax.ODETerm(lambda t, z, args: flow(z, args[0]))

    def cond_fn(t, y, args, **kwargs):
        return y[1]

    event = diffrax.Event(cond_fn, root_finder=optx.Newton(rtol=1e-12, atol=1e-12), direction=False)
    controller = diffrax.PIDController(rtol=tol, atol=tol)

    def segment(t0, z, args):
        sol = diffrax.diffeqsolve(
            term,
            solver,
            t0,
            t_end,
            None,
            z,
            args=args,
            stepsize_controller=controller,
            event=event,
            saveat=diffrax.SaveAt(t1=True),
            max_steps=4096,
        )
        hit = sol.event_mask  # single cond_fn -> scalar bool
        t1 = sol.ts[-1]
        z1 = sol.ys[-1]
        _, e, mu = args
        z1 = jnp.where(hit, reset(z1, e, mu), z1)
        return t1, z1, hit, sol.stats["num_accepted_steps"]

    def f(p):
        z0, g, e, mu = unpack(p, x0)
        args = (g, e, mu)

        def body(carry, _):
            t, z = carry
            t1, z1, hit, nsteps = segment(t, z, args)
            return (t1, z1), (jnp.where(hit, t1, jnp.nan), hit, nsteps)

        (tT, zT), (evts, hits, nsteps) = jax.lax.scan(
            body, (jnp.asarray(0.0, p.dtype), z0), None, length=N_SEGMENTS
        )
        return zT[0], (evts, jnp.sum(hits.astype(jnp.int32)), tT, jnp.sum(nsteps))

    return f


# --------------------------------------------------------------------------------------
# measurement
# --------------------------------------------------------------------------------------
def time_call(fn, p, min_total=0.25, repeats=7):
    timer = timeit.Timer(lambda: jax.block_until_ready(fn(p)))
    number, _ = timer.autorange()  # smallest 1,2,5,10,... taking >= 0.2 s
    number = max(1, int(number * min_total / 0.2))
    runs = timer.repeat(repeat=repeats, number=number)
    per_call = [r / number for r in runs]
    return statistics.median(per_call), number, repeats


def run_method(label, method, setting, f, p, ref):
    vg = jax.jit(jax.value_and_grad(f, has_aux=True))
    t0 = time.perf_counter()
    (val, aux), grad = jax.block_until_ready(vg(p))
    compile_s = time.perf_counter() - t0
    jax.block_until_ready(vg(p))  # second warm-up call
    t_call, number, repeats = time_call(vg, p)

    grad = np.asarray(grad, dtype=np.float64)
    ref_grad = np.array([ref["jacobian"]["x"][k] for k in PARAM_NAMES])
    ref_val = ref["final_state"]["x"]
    ref_ev = np.array(ref["event_times"])
    evts = np.asarray(aux[0], dtype=np.float64)
    nev = int(aux[1])
    evts = evts[~np.isnan(evts)][:nev]
    ev_err = (
        float(np.max(np.abs(evts - ref_ev))) if len(evts) == len(ref_ev) else None
    )
    row = {
        "label": label,
        "method": method,
        **setting,
        "value_x_T": float(val),
        "grad": {k: float(v) for k, v in zip(PARAM_NAMES, grad)},
        "abs_err_value": abs(float(val) - ref_val),
        "grad_abs_err": {k: float(abs(v - r)) for k, v, r in zip(PARAM_NAMES, grad, ref_grad)},
        "max_abs_err_grad": float(np.max(np.abs(grad - ref_grad))),
        "abs_err_dx_dvy0": float(abs(grad[2] - ref_grad[2])),
        "num_events": nev,
        "event_times": [float(t) for t in evts],
        "max_abs_err_event_times": ev_err,
        "time_per_value_and_grad_s": t_call,
        "timing": {"calls_per_repeat": number, "repeats": repeats, "statistic": "median"},
        "first_call_incl_compile_s": compile_s,
    }
    if label.startswith("diffrax"):
        row["t_final"] = float(aux[2])
        row["accepted_steps_total"] = int(aux[3])
    print(
        f"  {label:<28s} x(T)={float(val):.15g}  max|dgrad|={row['max_abs_err_grad']:.3e}"
        f"  |d dvy0|={row['abs_err_dx_dvy0']:.3e}  {t_call * 1e3:.4g} ms/call"
        f"  (compile+1st {compile_s:.1f}s)",
        flush=True,
    )
    return row


def fmt_time(s):
    if s < 1e-3:
        return f"{s * 1e6:.1f} µs"
    if s < 1.0:
        return f"{s * 1e3:.3g} ms"
    return f"{s:.3g} s"


def markdown_table(rows, ref):
    hdr = (
        "| method | dt / tol | x(T) | dx/dy0 | dx/dvx0 | dx/dvy0 | dx/dg | dx/de | dx/dmu "
        "| max abs err (grad) | abs err dx/dvy0 | abs err x(T) | max abs err event t | time / value+grad |"
    )
    sep = "|" + "---|" * 14
    lines = [hdr, sep]
    rg = [ref["jacobian"]["x"][k] for k in PARAM_NAMES]
    lines.append(
        "| closed form | – | "
        + f"{ref['final_state']['x']:.12g} | "
        + " | ".join(f"{v:.12g}" for v in rg)
        + " | – | – | – | – | – |"
    )
    for r in rows:
        g = [r["grad"][k] for k in PARAM_NAMES]
        ev = r["max_abs_err_event_times"]
        ev_s = f"{ev:.2e}" if ev is not None else f"n/a ({r['num_events']} ev)"
        lines.append(
            f"| {r['method']} | {r['setting_str']} | {r['value_x_T']:.12g} | "
            + " | ".join(f"{v:.12g}" for v in g)
            + f" | {r['max_abs_err_grad']:.2e} | {r['abs_err_dx_dvy0']:.2e} | {r['abs_err_value']:.2e}"
            + f" | {ev_s} | {fmt_time(r['time_per_value_and_grad_s'])} |"
        )
    return "\n".join(lines)


def cpu_info():
    model = None
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        nproc = int(subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip())
    except Exception:  # noqa: BLE001
        nproc = os.cpu_count()
    return {"nproc": nproc, "model_name": model or platform.processor(), "machine": platform.machine()}


def versions():
    out = {"python": platform.python_version()}
    for pkg in ["jax", "jaxlib", "diffrax", "optimistix", "equinox", "lineax", "numpy"]:
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = None
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reference", help="path to closed_form.json")
    ap.add_argument("--dts", default="1e-2,1e-3,1e-4,1e-5", help="comma-separated dt list for (a), (b)")
    ap.add_argument("--tols", default="1e-10,1e-12", help="comma-separated PIDController rtol=atol list for (c)")
    ap.add_argument("--out-dir", default=str(HERE))
    args = ap.parse_args()

    wall0 = time.perf_counter()
    ref_path = find_reference(args.reference)
    ref = load_case(ref_path)
    ini, par = ref["initial_state"], ref["params"]
    t_end = float(ref["t_end"])
    x0 = float(ini["x"])
    p = jnp.array([ini["y"], ini["vx"], ini["vy"], par["g"], par["e"], par["mu"]], dtype=jnp.float64)

    print(f"reference: {display_path(ref_path)} [{CASE}]")
    print(f"jax {jax.__version__} on {jax.devices()}, diffrax {diffrax.__version__}")
    dts = [float(s) for s in args.dts.split(",") if s]
    tols = [float(s) for s in args.tols.split(",") if s]

    rows = []
    print("(a) RK4 fixed dt, reset at grid point")
    for dt in dts:
        f, n = make_rk4_grid(x0, t_end, dt)
        r = run_method(f"rk4_grid dt={dt:g}", "(a) RK4 grid reset", {"dt": dt, "n_steps": n}, f, p, ref)
        r["setting_str"] = f"dt={dt:g}"
        rows.append(r)
    print("(b) RK4 fixed dt, linearly interpolated crossing + re-integration")
    for dt in dts:
        f, n = make_rk4_interp(x0, t_end, dt)
        r = run_method(f"rk4_interp dt={dt:g}", "(b) RK4 interp crossing", {"dt": dt, "n_steps": n}, f, p, ref)
        r["setting_str"] = f"dt={dt:g}"
        rows.append(r)
    print(f"(c) diffrax Dopri5 + Event/Newton, lax.scan of {N_SEGMENTS} restarts")
    for tol in tols:
        f = make_diffrax(x0, t_end, tol, "Dopri5")
        r = run_method(
            f"diffrax Dopri5 tol={tol:g}",
            "(c) Diffrax Dopri5 + Event restarts",
            {"rtol": tol, "atol": tol, "solver": "Dopri5", "root_finder": "optx.Newton(1e-12,1e-12)",
             "n_segments": N_SEGMENTS},
            f, p, ref,
        )
        r["setting_str"] = f"rtol=atol={tol:g}"
        rows.append(r)

    table = markdown_table(rows, ref)
    total = time.perf_counter() - wall0
    try:
        rel = Path(__file__).resolve().relative_to(Path.cwd())
    except ValueError:
        rel = Path(__file__).resolve().relative_to(REPO_ROOT)
    command = " ".join(["python3", str(rel)] + sys.argv[1:])
    meta = {
        "case": CASE,
        "reference_file": display_path(ref_path),
        "command": command,
        "generated_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "versions": versions(),
        "jax_devices": [str(d) for d in jax.devices()],
        "cpu": cpu_info(),
        "platform": platform.platform(),
        "float64": bool(jax.config.jax_enable_x64),
        "gradient_wrt": PARAM_NAMES,
        "total_wall_s": total,
        "notes": [
            "Gradients by jax.value_and_grad (reverse mode) inside jax.jit.",
            "time_per_value_and_grad_s: median over repeats of (batch time / calls), after two warm-up calls, "
            "with jax.block_until_ready; includes Python dispatch overhead.",
            f"(c) restarts: fixed-length jax.lax.scan over {N_SEGMENTS} diffeqsolve segments (jitted, not a "
            "Python loop); segments after the last event are no-op solves with t0 == t1 == t_end.",
            "The flow is polynomial (quadratic in t), so RK4 and Dopri5 (and its dense output) are exact between "
            "events; all errors come from event handling.",
        ],
    }
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / "jax_results.json", "w") as fh:
        json.dump({"meta": meta, "reference": {"x_T": ref["final_state"]["x"],
                                               "grad": ref["jacobian"]["x"],
                                               "event_times": ref["event_times"]},
                   "results": rows}, fh, indent=1)
    v = meta["versions"]
    md = [
        f"# JAX peer results: {CASE}",
        "",
        f"Gradient of x(T) (T = {t_end}) w.r.t. (y0, vx0, vy0, g, e, mu), float64, CPU.",
        "",
        f"- command: `{command}`",
        f"- versions: python {v['python']}, jax {v['jax']}, jaxlib {v['jaxlib']}, diffrax {v['diffrax']}, "
        f"optimistix {v['optimistix']}, equinox {v['equinox']}, lineax {v['lineax']}, numpy {v['numpy']}",
        f"- CPU: {meta['cpu']['model_name']}, nproc = {meta['cpu']['nproc']}",
        f"- reference: `{display_path(ref_path)}`",
        f"- generated: {meta['generated_utc']}, total wall time {total:.0f} s",
        "",
        table,
        "",
        "Timings: median per-call wall time of a jitted `value_and_grad` after warm-up "
        "(`block_until_ready`, includes dispatch overhead).",
        f"(c) uses a `lax.scan` of {N_SEGMENTS} `diffeqsolve` segments (restart after each terminating event, "
        "reset applied in user code).",
        "",
    ]
    with open(out_dir / "jax_results.md", "w") as fh:
        fh.write("\n".join(md))
    print()
    print(table)
    print(f"\nwrote {out_dir / 'jax_results.json'} and {out_dir / 'jax_results.md'}  (total {total:.0f} s)")


if __name__ == "__main__":
    main()
