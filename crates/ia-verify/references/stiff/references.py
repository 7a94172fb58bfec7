"""High-precision references for the piecewise-linear stiff test problems.

Run from this folder with mpmath installed (not run by CI; its output, the
*.reference.json files beside it and heated_rod.json, is committed):

    python references.py [FILE.json ...]   (all problems when none is named)

For each of drug.json, ball_kelvin_voigt.json, relay.json, relay_slow.json
and heated_rod.json (the last generated here, HEATED_ROD_CELLS cells) (equation models
whose flows are affine in the state, x' = A(p) x + b(p), with guards affine in
the state and resets that add a constant), it computes at 50 significant
digits, independently of the library:

* the run: between events the state is the matrix exponential of the
  augmented matrix [[A, b], [0, 0]] applied to (x, 1) (mpmath.expm); the
  first crossing of a guard in its direction is bracketed on a grid of the
  exact solution (one exact step matrix per grid spacing) and solved with
  mpmath.findroot (Illinois) to 45 digits; the reset is applied and the run
  restarts there;
* the derivatives: d x(T) / d (initial state, params) and d t_k / d (...) by
  central differences of that whole high-precision run, with steps of 1e-18
  relative: the truncation error (h^2 ~ 1e-36) and the rounding (1e-50 / h)
  are far below double precision. (Not the saltation formula: differences
  of the exact solution assume nothing about how derivatives jump at events.)

The flows below restate the models' expressions as matrices; the parameter
values, initial states and t_end are read from the JSON files, so the two
cannot drift apart on numbers.
"""

import json
import os

import mpmath as mp

mp.mp.dps = 50
HERE = os.path.dirname(os.path.abspath(__file__))


def load(name):
    with open(os.path.join(HERE, name)) as f:
        return json.load(f)


class Affine:
    """A hybrid system with affine flows, affine guards and resets x+ = x- + r(p)."""

    def __init__(self, states, params, modes, transitions, spacing):
        self.states = states  # names, in order
        self.params = params  # names, in order
        self.modes = modes  # mode -> function(p) -> (A, b)
        self.transitions = transitions  # list of dicts
        self.spacing = spacing  # mode -> grid spacing of the crossing search

    def propagator(self, mode, p, s):
        A, b = self.modes[mode](p)
        n = len(self.states)
        M = mp.zeros(n + 1, n + 1)
        for i in range(n):
            for j in range(n):
                M[i, j] = A[i][j]
            M[i, n] = b[i]
        return mp.expm(M * s)

    @staticmethod
    def apply(E, x):
        n = len(x)
        return [mp.fsum(E[i, j] * x[j] for j in range(n)) + E[i, n] for i in range(n)]

    def guard(self, k, x, p):
        c, d = self.transitions[k]["guard"](p)
        return mp.fsum(ci * xi for ci, xi in zip(c, x)) + d

    def run(self, x0, p, mode, t_end):
        x = [mp.mpf(v) for v in x0]
        t = mp.mpf(0)
        events = []
        while True:
            outgoing = [k for k, tr in enumerate(self.transitions) if tr["from"] == mode]
            h = mp.mpf(self.spacing[mode])
            E = self.propagator(mode, p, h)
            prev = [self.guard(k, x, p) for k in outgoing]
            s, y, found = mp.mpf(0), x, None
            while s < t_end - t and found is None:
                step = min(h, t_end - t - s)
                y_next = self.apply(E if step == h else self.propagator(mode, p, step), y)
                now = [self.guard(k, y_next, p) for k in outgoing]
                for i, k in enumerate(outgoing):
                    rising = self.transitions[k]["direction"] == "rising"
                    crossed = (prev[i] < 0 <= now[i]) if rising else (prev[i] > 0 >= now[i])
                    if crossed:
                        g = lambda r, k=k: self.guard(k, self.apply(self.propagator(mode, p, r), x), p)
                        root = mp.findroot(g, (s, s + step), solver="illinois", tol=mp.mpf(10) ** -90)
                        if found is None or root < found[0]:
                            found = (root, k)
                prev, y, s = now, y_next, s + step
            if found is None:
                x = self.apply(self.propagator(mode, p, t_end - t), x)
                return x, events
            root, k = found
            x = self.apply(self.propagator(mode, p, root), x)
            t = t + root
            tr = self.transitions[k]
            jump = tr["reset"](p)
            x = [xi + ji for xi, ji in zip(x, jump)]
            events.append((t, tr["name"]))
            mode = tr["to"]

    def reference(self, model):
        x0 = [mp.mpf(model["states"][s]) for s in self.states]
        p0 = [mp.mpf(model["params"][q]) for q in self.params]
        mode, t_end = model["initial_mode"], mp.mpf(model["t_end"])
        x, events = self.run(x0, p0, mode, t_end)
        columns = [("initial." + s, i, True) for i, s in enumerate(self.states)]
        columns += [("param." + q, i, False) for i, q in enumerate(self.params)]
        jacobian = {s: {} for s in self.states}
        time_gradients = [{} for _ in events]
        for name, i, is_state in columns:
            base = x0[i] if is_state else p0[i]
            h = mp.mpf(10) ** -18 * max(1, abs(base))
            runs = []
            for sign in (1, -1):
                xs, ps = list(x0), list(p0)
                if is_state:
                    xs[i] += sign * h
                else:
                    ps[i] += sign * h
                runs.append(self.run(xs, ps, mode, t_end))
            (xp, ep), (xm, em) = runs
            assert [e[1] for e in ep] == [e[1] for e in events] == [e[1] for e in em], name
            for j, s in enumerate(self.states):
                jacobian[s][name] = float((xp[j] - xm[j]) / (2 * h))
            for k in range(len(events)):
                time_gradients[k][name] = float((ep[k][0] - em[k][0]) / (2 * h))
        return {
            "about": "computed by references.py at 50 significant digits with mpmath "
            "(matrix exponentials, Illinois root finding; derivatives by central "
            "differences of the high-precision solution, step 1e-18 relative), "
            "rounded to double precision",
            "model": model["name"],
            "initial_mode": mode,
            "t_end": float(t_end),
            "final_state": {s: float(v) for s, v in zip(self.states, x)},
            "events": [
                {"transition": name, "time": float(t), "time_gradient": g}
                for (t, name), g in zip(events, time_gradients)
            ],
            "jacobian": jacobian,
        }


def drug():
    def flow(p):
        ka, ke, k12, k21 = p[0], p[1], p[2], p[3]
        A = [[-ka, 0, 0], [ka, -(ke + k12), k21], [0, k12, -k21]]
        return A, [0, 0, 0]

    return Affine(
        ["depot", "central", "peripheral"],
        ["ka", "ke", "k12", "k21", "threshold", "dose"],
        {"dosing": flow},
        [{
            "name": "redose", "from": "dosing", "to": "dosing", "direction": "falling",
            "guard": lambda p: ([1, 1, 0], -p[4]),
            "reset": lambda p: [p[5], 0, 0],
        }],
        {"dosing": "0.01"},
    )


def ball():
    def flight(p):
        return [[0, 1], [0, 0]], [0, -p[0]]

    def contact(p):
        return [[0, 1], [-p[1], -p[2]]], [0, -p[0]]

    return Affine(
        ["y", "v"],
        ["g", "k", "c"],
        {"flight": flight, "contact": contact},
        [
            {"name": "touchdown", "from": "flight", "to": "contact", "direction": "falling",
             "guard": lambda p: ([1, 0], 0), "reset": lambda p: [0, 0]},
            {"name": "liftoff", "from": "contact", "to": "flight", "direction": "rising",
             "guard": lambda p: ([1, 0], 0), "reset": lambda p: [0, 0]},
        ],
        {"flight": "0.005", "contact": "0.00005"},
    )


def relay():
    def on(p):
        a, lam, u = p[0], p[1], p[2]
        return [[-a, a], [0, -lam]], [0, lam * u]

    def off(p):
        a, lam = p[0], p[1]
        return [[-a, a], [0, -lam]], [0, 0]

    return Affine(
        ["x", "z"],
        ["a", "lam", "u", "hi", "lo"],
        {"on": on, "off": off},
        [
            {"name": "switch_off", "from": "on", "to": "off", "direction": "rising",
             "guard": lambda p: ([1, 0], -p[3]), "reset": lambda p: [0, 0]},
            {"name": "switch_on", "from": "off", "to": "on", "direction": "falling",
             "guard": lambda p: ([1, 0], -p[4]), "reset": lambda p: [0, 0]},
        ],
        {"on": "0.01", "off": "0.01"},
    )


def relay_slow():
    """The relay around a slow process read through a fast sensor
    (relay_slow.json): the input drives x, the relay reads z."""
    def on(p):
        a, lam, u = p[0], p[1], p[2]
        return [[-a, 0], [lam, -lam]], [a * u, 0]

    def off(p):
        a, lam = p[0], p[1]
        return [[-a, 0], [lam, -lam]], [0, 0]

    return Affine(
        ["x", "z"],
        ["a", "lam", "u", "hi", "lo"],
        {"on": on, "off": off},
        [
            {"name": "switch_off", "from": "on", "to": "off", "direction": "rising",
             "guard": lambda p: ([0, 1], -p[3]), "reset": lambda p: [0, 0]},
            {"name": "switch_on", "from": "off", "to": "on", "direction": "falling",
             "guard": lambda p: ([0, 1], -p[4]), "reset": lambda p: [0, 0]},
        ],
        {"on": "0.01", "off": "0.01"},
    )


HEATED_ROD_CELLS = 6


def heated_rod_model(cells):
    """The heated rod's equation model with `cells` cells (written to
    heated_rod.json): a rod of unit length cut into N cells, temperatures
    T0..T{N-1} with insulated ends, diffusivity kappa (rate D = kappa N^2
    between neighbours), loss beta to an ambient at 0, a heater of total
    power P in cell 0 (rate P N there) switched by a thermostat reading the
    far cell. The same model for any N; crates/ia-verify's
    references::stiff::heated_rod writes it for a given N too (its test
    checks the two agree at HEATED_ROD_CELLS)."""
    last = cells - 1
    states = {f"T{i}": 0.0 for i in range(cells)}

    def flow(heating):
        rates = {}
        for i in range(cells):
            terms = []
            if i > 0:
                terms.append(f"D * (T{i - 1} - T{i})")
            if i < last:
                terms.append(f"D * (T{i + 1} - T{i})")
            terms.append(f"beta * T{i}")
            expr = " + ".join(terms[:-1]) + " - " + terms[-1]
            if heating and i == 0:
                expr += " + heat"
            rates[f"T{i}"] = expr
        return {"flow": rates}

    return {
        "name": "heated-rod",
        "description": f"A rod of unit length in {cells} cells (insulated ends, diffusivity kappa, loss beta to the ambient) with a heater of total power P in cell 0, switched on below lo and off above hi by a thermostat at cell {last}.",
        "states": states,
        "params": {"kappa": 3.0, "beta": 1.0, "P": 3.5, "lo": 2.0, "hi": 3.0},
        "let": {"D": f"kappa * {cells * cells}", "heat": f"P * {cells}"},
        "modes": {"heating": flow(True), "cooling": flow(False)},
        "transitions": [
            {"name": "heater_off", "from": "heating", "to": "cooling",
             "guard": f"T{last} - hi", "direction": "rising", "reset": {}},
            {"name": "heater_on", "from": "cooling", "to": "heating",
             "guard": f"T{last} - lo", "direction": "falling", "reset": {}},
        ],
        "initial_mode": "heating",
        "t_end": 5.5,
    }


def heated_rod(cells):
    last = cells - 1

    def mode(heating):
        def flow(p):
            D, beta, P = p[0] * cells * cells, p[1], p[2] * cells
            A = [[0] * cells for _ in range(cells)]
            for i in range(cells):
                for j in (i - 1, i + 1):
                    if 0 <= j < cells:
                        A[i][j] += D
                        A[i][i] -= D
                A[i][i] -= beta
            b = [0] * cells
            if heating:
                b[0] = P
            return A, b
        return flow

    sensor = [0] * cells
    sensor[last] = 1
    return Affine(
        [f"T{i}" for i in range(cells)],
        ["kappa", "beta", "P", "lo", "hi"],
        {"heating": mode(True), "cooling": mode(False)},
        [
            {"name": "heater_off", "from": "heating", "to": "cooling", "direction": "rising",
             "guard": lambda p: (sensor, -p[4]), "reset": lambda p: [0] * cells},
            {"name": "heater_on", "from": "cooling", "to": "heating", "direction": "falling",
             "guard": lambda p: (sensor, -p[3]), "reset": lambda p: [0] * cells},
        ],
        {"heating": "0.01", "cooling": "0.01"},
    )


def main():
    import sys

    with open(os.path.join(HERE, "heated_rod.json"), "w") as f:
        json.dump(heated_rod_model(HEATED_ROD_CELLS), f, indent=1)
        f.write("\n")
    problems = [
        ("drug.json", drug()),
        ("ball_kelvin_voigt.json", ball()),
        ("relay.json", relay()),
        ("relay_slow.json", relay_slow()),
        ("heated_rod.json", heated_rod(HEATED_ROD_CELLS)),
    ]
    only = sys.argv[1:]
    for file, system in problems:
        if only and file not in only:
            continue
        model = load(file)
        assert list(model["states"]) == system.states, file
        assert list(model["params"]) == system.params, file
        out = system.reference(model)
        target = os.path.join(HERE, file.replace(".json", ".reference.json"))
        with open(target, "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")
        print(file, [(e["transition"], e["time"]) for e in out["events"]], out["final_state"])


if __name__ == "__main__":
    main()
