#!/usr/bin/env python3
"""High-precision reference for the `cuba-lif` model (issue 29).

Writes `cuba_lif.json` (next to this script): for each case, a small
network of current-based leaky integrate-and-fire neurons, its events (the
input spikes and every neuron spike, in order), its final state, and the
derivatives of every event time and final state entry with respect to every
parameter.

Nothing of the library is used. Between events every neuron follows its
closed form, with s the time since the stretch began:

    I(s) = I0 exp(-s / tau_syn)
    V(s) = (V0 + A) exp(-s / tau_mem) - A exp(-s / tau_syn),
           A = I0 tau_syn / (tau_mem - tau_syn)          (tau_mem != tau_syn)
    V(s) = (V0 + I0 s / tau) exp(-s / tau)              (tau_mem = tau_syn = tau)

V(s) has at most one interior extremum, found in closed form; a neuron
below threshold crosses it in a stretch only before a maximum at or above
the threshold, so the crossing is bracketed between the stretch's start and
that maximum (or the stretch's end) and found by mpmath's bracketing root
finder, then polished by Newton steps, at 60 significant digits. The
derivatives are central differences of the whole event-driven solution with
step 1e-20 (truncation error about 1e-40, rounding about 1e-40 at 60
digits), then rounded to double precision.

Run: python3 cuba_lif.py   (needs mpmath; rewrites cuba_lif.json)
"""

import json
import os

import mpmath as mp

mp.mp.dps = 60
H = mp.mpf("1e-20")


def names(n_in, n_h, n_o):
    states = []
    for layer, count in (("h", n_h), ("o", n_o)):
        for j in range(count):
            states += [f"V_{layer}{j}", f"I_{layer}{j}"]
    params = ["tau_mem", "tau_syn", "theta"] + [f"t_in{i}" for i in range(n_in)]
    params += [f"w_h{j}_in{i}" for j in range(n_h) for i in range(n_in)]
    params += [f"w_o{k}_h{j}" for k in range(n_o) for j in range(n_h)]
    return states, params


def advance(v0, i0, s, tm, ts):
    """(V, I) after s of free flow from (v0, i0)."""
    if s == 0:
        return v0, i0
    i = i0 * mp.exp(-s / ts)
    if tm == ts:
        v = (v0 + i0 * s / tm) * mp.exp(-s / tm)
    else:
        a = i0 * ts / (tm - ts)
        v = (v0 + a) * mp.exp(-s / tm) - a * mp.exp(-s / ts)
    return v, i


def extremum(v0, i0, tm, ts):
    """The time s > 0 where V'(s) = 0, or None."""
    if i0 == 0:
        return None
    if tm == ts:
        s = tm * (i0 - v0) / i0
        return s if s > 0 else None
    a = i0 * ts / (tm - ts)
    c, b = v0 + a, -a  # V = c e^{-s/tm} + b e^{-s/ts}
    # V' = 0  <=>  c/tm e^{-s/tm} = -b/ts e^{-s/ts}
    ratio = -(b * tm) / (c * ts) if c != 0 else mp.mpf(0)
    if ratio <= 0:
        return None
    s = mp.log(ratio) / (1 / ts - 1 / tm)
    return s if s > 0 else None


def crossing(v0, i0, horizon, tm, ts, theta):
    """First s in (0, horizon] where V rises through theta, or None."""
    if v0 >= theta:
        raise ValueError("a neuron starts a stretch at or above threshold")
    peak = extremum(v0, i0, tm, ts)
    hi = horizon if peak is None else min(peak, horizon)
    f = lambda s: advance(v0, i0, s, tm, ts)[0] - theta
    if f(hi) < 0:
        return None  # V stays below theta (it peaks below it, or later)
    s = mp.findroot(f, (mp.mpf(0), hi), solver="anderson")
    for _ in range(3):  # Newton polish
        v, i = advance(v0, i0, s, tm, ts)
        s -= (v - theta) / ((i - v) / tm)
    return s


def run(size, p, t_end):
    """Events [(name, time)] and the final state of a run."""
    n_in, n_h, n_o = size
    tm, ts, theta = p["tau_mem"], p["tau_syn"], p["theta"]
    neurons = [[mp.mpf(0), mp.mpf(0)] for _ in range(n_h + n_o)]
    inputs = sorted((p[f"t_in{i}"], i) for i in range(n_in))
    t = mp.mpf(0)
    events = []
    while True:
        next_input = inputs[0][0] if inputs else mp.inf
        window = min(next_input, t_end) - t
        best = None
        for m, (v, i) in enumerate(neurons):
            s = crossing(v, i, window, tm, ts, theta)
            if s is not None and (best is None or s < best[0]):
                best = (s, m)
        if best is None and next_input > t_end:
            for st in neurons:
                st[0], st[1] = advance(st[0], st[1], t_end - t, tm, ts)
            return events, [x for st in neurons for x in st]
        s = best[0] if best is not None else next_input - t
        for st in neurons:
            st[0], st[1] = advance(st[0], st[1], s, tm, ts)
        t += s
        if best is not None and (best[0] < next_input - (t - s)):
            m = best[1]
            neurons[m][0] = mp.mpf(0)
            if m < n_h:
                events.append((f"spike_h{m}", t))
                for k in range(n_o):
                    neurons[n_h + k][1] += p[f"w_o{k}_h{m}"]
            else:
                events.append((f"spike_o{m - n_h}", t))
        else:
            _, i = inputs.pop(0)
            t = next_input
            events.append((f"input{i}", t))
            for j in range(n_h):
                neurons[j][1] += p[f"w_h{j}_in{i}"]
        if len(events) > 1000:
            raise RuntimeError("runaway events")


def rounded(d):
    """A derivative in double precision; below 1e-30 it is the root
    finder's last digits (60-digit solutions differenced over 1e-20), so 0."""
    return float(d) if abs(d) > mp.mpf("1e-30") else 0.0


def case(name, size, values, t_end, about):
    states, params = names(*size)
    p = {k: mp.mpf(str(values[k])) for k in params}
    t_end = mp.mpf(str(t_end))
    events, final = run(size, p, t_end)
    jac_final = [[None] * len(params) for _ in states]
    jac_times = [[None] * len(params) for _ in events]
    for j, key in enumerate(params):
        up, down = dict(p), dict(p)
        up[key] += H
        down[key] -= H
        ev_u, fin_u = run(size, up, t_end)
        ev_d, fin_d = run(size, down, t_end)
        if [e[0] for e in ev_u] != [e[0] for e in events] or [
            e[0] for e in ev_d
        ] != [e[0] for e in events]:
            raise RuntimeError(f"{name}: the event sequence changes with {key}")
        for i in range(len(states)):
            jac_final[i][j] = rounded((fin_u[i] - fin_d[i]) / (2 * H))
        for k in range(len(events)):
            jac_times[k][j] = rounded((ev_u[k][1] - ev_d[k][1]) / (2 * H))
    return {
        "name": name,
        "about": about,
        "size": list(size),
        "t_end": float(t_end),
        "params": {k: values[k] for k in params},
        "states": states,
        "wrt": params,
        "events": [{"transition": e[0], "time": float(e[1])} for e in events],
        "final_state": [float(x) for x in final],
        "final_jacobian": jac_final,
        "event_time_jacobian": jac_times,
    }


def weights(size, hidden, output):
    n_in, n_h, n_o = size
    out = {}
    for j in range(n_h):
        for i in range(n_in):
            out[f"w_h{j}_in{i}"] = hidden[j][i]
    for k in range(n_o):
        for j in range(n_h):
            out[f"w_o{k}_h{j}"] = output[k][j]
    return out


def main():
    cases = []
    size = (2, 3, 2)
    values = {"tau_mem": 20.0, "tau_syn": 5.0, "theta": 1.0, "t_in0": 1.0, "t_in1": 4.0}
    values.update(
        weights(size, [[14.0, 6.0], [4.0, 5.0], [2.0, 2.5]], [[4.0, 3.5, 1.0], [2.0, -1.0, 3.0]])
    )
    cases.append(
        case(
            "cuba_a",
            size,
            values,
            40.0,
            "2-3-2, tau_mem = 4 tau_syn: hidden neuron 0 fires twice, hidden "
            "neuron 2 rises and falls back below threshold",
        )
    )
    size = (2, 2, 1)
    values = {"tau_mem": 5.0, "tau_syn": 5.0, "theta": 1.0, "t_in0": 2.0, "t_in1": 3.5}
    values.update(weights(size, [[4.0, 2.0], [1.5, 1.0]], [[2.0, 1.5]]))
    cases.append(
        case(
            "cuba_equal",
            size,
            values,
            30.0,
            "2-2-1, tau_mem = tau_syn (the closed form V = (V0 + I0 s/tau) e^{-s/tau})",
        )
    )
    out = {
        "about": "cuba-lif references: event times, final states and their derivatives "
        "with respect to every parameter, from the closed form per stretch at 60 digits "
        "(mpmath) and central differences of step 1e-20; see cuba_lif.py",
        "cases": cases,
    }
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cuba_lif.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    for c in cases:
        print(c["name"], [(e["transition"], round(e["time"], 4)) for e in c["events"]])
        print("  final", [round(x, 4) for x in c["final_state"]])


if __name__ == "__main__":
    main()
