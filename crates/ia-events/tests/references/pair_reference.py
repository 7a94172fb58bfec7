"""High-precision reference for the closed form of a 2x2 linear pair.

Writes pair_reference.json beside this script: for each case, the stretch
map y(s) of y' = A y + b, the first crossing of a level by one entry, and
the derivative of a neuron pair's stretch with respect to tau_mem or
tau_syn (mpmath.diff of the same map),
computed with mpmath at 60 significant digits from the matrix exponential of
the augmented 3x3 matrix [[A, b], [0, 0]] (mpmath.expm), independently of
the library's closed form. Crossings: the interior extremum of the entry is
located by bisection on its derivative [e^{A s} r0]_k after a scan, then
each monotone segment's root by bisection to 1e-45. Every input is a double,
written with repr() so that Rust reads the same number.

Run: python3 pair_reference.py   (needs mpmath; a venv with it under target/)
"""

import json
import os

import mpmath as mp

mp.mp.dps = 60


def stretch(a, b, y0, s):
    m = mp.matrix(3, 3)
    for i in range(2):
        for j in range(2):
            m[i, j] = mp.mpf(a[i][j])
        m[i, 2] = mp.mpf(b[i])
    e = mp.expm(m * mp.mpf(s))
    y = [mp.mpf(y0[0]), mp.mpf(y0[1]), mp.mpf(1)]
    return [sum(e[i, j] * y[j] for j in range(3)) for i in range(2)]


def rate_at(a, b, y0, s, k):
    y = stretch(a, b, y0, s)
    return mp.mpf(a[k][0]) * y[0] + mp.mpf(a[k][1]) * y[1] + mp.mpf(b[k])


def bisect(f, lo, hi, tol=mp.mpf("1e-45")):
    flo = f(lo)
    for _ in range(400):
        if hi - lo < tol * max(1, abs(hi)):
            break
        mid = (lo + hi) / 2
        fm = f(mid)
        if (fm > 0) == (flo > 0) and fm != 0:
            lo, flo = mid, fm
        else:
            hi = mid
    return hi


def first_crossing(a, b, y0, k, level, direction, horizon):
    g = lambda s: stretch(a, b, y0, s)[k] - mp.mpf(level)
    dg = lambda s: rate_at(a, b, y0, s, k)
    horizon = mp.mpf(horizon)
    grid = [horizon * i / 400 for i in range(401)]
    # The extremum: a sign change of g' on the grid, refined.
    ext = None
    d_prev = dg(grid[0])
    for lo, hi in zip(grid, grid[1:]):
        d_hi = dg(hi)
        if d_prev != 0 and (d_hi > 0) != (d_prev > 0):
            ext = bisect(dg, lo, hi)
            break
        d_prev = d_hi
    points = [mp.mpf(0)] + ([ext] if ext is not None else []) + [horizon]
    for lo, hi in zip(points, points[1:]):
        g_lo, g_hi = g(lo), g(hi)
        rising = g_hi > g_lo
        fires = {"rising": rising, "falling": not rising, "either": True}[direction]
        before = g_lo < 0 if rising else g_lo > 0
        after = g_hi >= 0 if rising else g_hi <= 0
        if fires and before and after:
            return bisect(g, lo, hi)
    return None


def num(x):
    return float(x) if x is not None else None


TM, TS = 20.0, 5.0
NEURON = [[-1.0 / TM, 1.0 / TM], [0.0, -1.0 / TS]]
EQUAL = [[-1.0 / 10.0, 1.0 / 10.0], [0.0, -1.0 / 10.0]]
NEAR = [[-1.0 / 10.0, 1.0 / 10.0], [0.0, -1.0 / (10.0 * (1.0 + 1e-9))]]
NEAR2 = [[-1.0 / 10.0, 1.0 / 10.0], [0.0, -1.0 / (10.0 * (1.0 + 1e-5))]]
GENERAL = [[-0.3, 0.2], [0.05, -0.1]]
GROWING = [[0.2, 1.0], [0.0, -0.5]]

# The peak of V from V = 0, I = 1 for the neuron, to place grazing levels.
mp_peak_s = None


def neuron_peak(a, i0):
    dg = lambda s: rate_at(a, [0.0, 0.0], [0.0, i0], s, 0)
    s = bisect(dg, mp.mpf("1e-6"), mp.mpf(200))
    return stretch(a, [0.0, 0.0], [0.0, i0], s)[0]


peak = neuron_peak(NEURON, 1.0)
peak_equal = neuron_peak(EQUAL, 1.0)

STRETCHES = [
    ("neuron ratio 4", NEURON, [0.0, 0.0], [0.3, 2.0], [0.1, 1.0, 7.5, 40.0, 300.0]),
    ("equal rates", EQUAL, [0.0, 0.0], [0.3, 2.0], [0.1, 1.0, 7.5, 40.0, 300.0]),
    ("nearly equal 1e-9", NEAR, [0.0, 0.0], [0.3, 2.0], [0.1, 1.0, 7.5, 40.0, 300.0]),
    ("nearly equal 1e-5", NEAR2, [0.0, 0.0], [0.3, 2.0], [0.1, 1.0, 7.5, 40.0, 300.0]),
    ("general with input", GENERAL, [0.1, -0.2], [1.0, -0.5], [0.01, 2.0, 9.0, 50.0]),
    ("growing", GROWING, [0.0, 0.1], [0.5, 1.0], [0.01, 1.0, 5.0]),
    ("tiny delays", NEURON, [0.0, 0.0], [0.7, 1.5], [1e-12, 1e-6, 1e-3]),
]

LEVEL_UP = float(peak) * (1.0 - 1e-10)
LEVEL_OVER = float(peak) * (1.0 + 1e-10)
CROSSINGS = [
    ("rises through theta", NEURON, [0.0, 0.0], [0.0, 10.0], 0, 1.0, "rising", 400.0),
    ("stays below", NEURON, [0.0, 0.0], [0.0, 1.0], 0, 1.0, "rising", 400.0),
    ("grazing just above the level", NEURON, [0.0, 0.0], [0.0, 1.0], 0, LEVEL_UP, "rising", 400.0),
    ("grazing just below the level", NEURON, [0.0, 0.0], [0.0, 1.0], 0, LEVEL_OVER, "rising", 400.0),
    ("equal rates", EQUAL, [0.0, 0.0], [0.2, 2.5], 0, 0.6, "rising", 400.0),
    ("equal rates grazing", EQUAL, [0.0, 0.0], [0.0, 1.0], 0, float(peak_equal) * (1.0 - 1e-9), "rising", 400.0),
    ("nearly equal rates", NEAR, [0.0, 0.0], [0.2, 2.5], 0, 0.6, "rising", 400.0),
    ("at the very start", NEURON, [0.0, 0.0], [1.0 - 1e-12, 2.0], 0, 1.0, "rising", 400.0),
    ("falls back through", NEURON, [0.0, 0.0], [0.9, 0.0], 0, 0.5, "falling", 400.0),
    ("above, falls then rises: no rising", NEURON, [0.0, 0.0], [1.2, -3.0], 0, 1.0, "rising", 400.0),
    ("below, dips then rises through", NEURON, [0.06, 0.0], [0.9, -0.3], 0, 0.95, "rising", 400.0),
    ("above, falls through", NEURON, [0.0, 0.0], [1.2, -3.0], 0, 1.0, "falling", 400.0),
    ("general, falls to its equilibrium", GENERAL, [0.1, -0.2], [-1.0, 0.5], 0, -1.2, "falling", 400.0),
    ("growing away", GROWING, [0.0, 0.1], [0.5, 1.0], 0, 30.0, "rising", 400.0),
    ("current entry decays through", NEURON, [0.0, 0.0], [0.0, 2.0], 1, 0.5, "falling", 400.0),
]


def neuron(tm, ts):
    return [[-1 / tm, 1 / tm], [0, -1 / ts]]


def tangent(tm, ts, y0, s, wrt):
    """d y(s) / d tau (tau_mem or tau_syn) of the neuron pair at fixed y0."""
    tm, ts = mp.mpf(tm), mp.mpf(ts)

    def y(tau, k):
        m, n = (tau, ts) if wrt == "tau_mem" else (tm, tau)
        return stretch(neuron(m, n), [0, 0], y0, s)[k]

    at = tm if wrt == "tau_mem" else ts
    return [mp.diff(lambda t: y(t, k), at) for k in range(2)]


TANGENTS = [
    (tm, ts, [0.3, 2.0], s, wrt)
    for tm, ts in [(20.0, 5.0), (10.0, 10.0), (10.0, 10.0 * (1.0 + 1e-9))]
    for s in [1.0, 7.5, 40.0]
    for wrt in ["tau_mem", "tau_syn"]
]


def main():
    out = {
        "about": "mpmath 60 digits, augmented-matrix expm; see pair_reference.py",
        "stretches": [],
        "crossings": [],
        "tangents": [],
    }
    for tm, ts, y0, s, wrt in TANGENTS:
        v = tangent(tm, ts, y0, s, wrt)
        out["tangents"].append(
            {"tau_mem": tm, "tau_syn": ts, "y0": y0, "s": s, "wrt": wrt, "dy": [num(x) for x in v]}
        )
    for name, a, b, y0, delays in STRETCHES:
        for s in delays:
            y = stretch(a, b, y0, s)
            out["stretches"].append(
                {"name": name, "a": a, "b": b, "y0": y0, "s": s, "y": [num(v) for v in y]}
            )
    for name, a, b, y0, k, level, direction, horizon in CROSSINGS:
        s = first_crossing(a, b, y0, k, level, direction, horizon)
        out["crossings"].append(
            {
                "name": name,
                "a": a,
                "b": b,
                "y0": y0,
                "entry": k,
                "level": level,
                "direction": direction,
                "delay": num(s),
            }
        )
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "pair_reference.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
