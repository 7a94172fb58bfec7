//! Catalogue-wide checks: names, defaults, partial derivatives, and a crude
//! fixed-step simulation of every default run.

use ia_core::{Direction, FlowPartials, GuardPartials, HybridError, HybridSystem, ResetPartials};
use ia_models::{by_name, catalog, model_names, Model, ModelSpec};
use rstest::rstest;

/// The public contract: model name, states, parameters, modes, initial mode,
/// transitions `(name, from, to, direction)`.
#[rstest]
#[case("ball1d", &["h", "v"], &["g", "e", "floor"], &["flight"], "flight",
       &[("impact", "flight", "flight", Direction::Falling)])]
#[case("ball2d-flat", &["x", "y", "vx", "vy"], &["g", "e", "mu"], &["flight"], "flight",
       &[("impact", "flight", "flight", Direction::Falling)])]
#[case("ball2d-bowl", &["x", "y", "vx", "vy"], &["g", "e", "c"], &["flight"], "flight",
       &[("impact", "flight", "flight", Direction::Falling)])]
#[case("two-ball", &["x1", "x2", "v1", "v2"], &["r", "m1", "m2", "e"], &["flight"], "flight",
       &[("impact", "flight", "flight", Direction::Falling)])]
#[case("lif", &["V"], &["I", "tau", "Vth", "Vr"], &["subthreshold"], "subthreshold",
       &[("spike", "subthreshold", "subthreshold", Direction::Rising)])]
#[case("lif-network", &["V0", "V1", "V2"],
       &["I0", "I1", "I2", "tau", "Vth", "Vr", "w0_1", "w0_2", "w1_0", "w1_2", "w2_0", "w2_1"],
       &["subthreshold"], "subthreshold",
       &[("spike0", "subthreshold", "subthreshold", Direction::Rising),
         ("spike1", "subthreshold", "subthreshold", Direction::Rising),
         ("spike2", "subthreshold", "subthreshold", Direction::Rising)])]
#[case("thermostat", &["T"], &["a", "b", "Tout", "Tlo", "Thi"], &["off", "on"], "on",
       &[("switch_on", "off", "on", Direction::Falling),
         ("switch_off", "on", "off", Direction::Rising)])]
#[case("impact-pendulum", &["theta", "omega"], &["g", "l", "e", "theta_wall"], &["swing"],
       "swing", &[("impact", "swing", "swing", Direction::Falling)])]
#[case("rimless-wheel", &["theta", "omega"], &["g", "l", "alpha", "gamma"], &["stance"],
       "stance", &[("step", "stance", "stance", Direction::Falling)])]
#[case("slip-hopper", &["x", "y", "vx", "vy", "xf"], &["m", "k", "l0", "g", "theta_td"],
       &["flight", "stance"], "flight",
       &[("touchdown", "flight", "stance", Direction::Falling),
         ("liftoff", "stance", "flight", Direction::Rising)])]
#[case("particle-chain", &["x0", "x1", "x2", "v0", "v1", "v2"], &["L", "r", "e", "m0", "m1", "m2"],
       &["flight"], "flight",
       &[("wall_left", "flight", "flight", Direction::Falling),
         ("impact0", "flight", "flight", Direction::Falling),
         ("impact1", "flight", "flight", Direction::Falling),
         ("wall_right", "flight", "flight", Direction::Falling)])]
#[case("cuba-lif", &["V_h0", "I_h0", "V_h1", "I_h1", "V_h2", "I_h2", "V_o0", "I_o0", "V_o1", "I_o1"],
       &["tau_mem", "tau_syn", "theta", "t_in0", "t_in1",
         "w_h0_in0", "w_h0_in1", "w_h1_in0", "w_h1_in1", "w_h2_in0", "w_h2_in1",
         "w_o0_h0", "w_o0_h1", "w_o0_h2", "w_o1_h0", "w_o1_h1", "w_o1_h2"],
       &["subthreshold"], "subthreshold",
       &[("input0", "subthreshold", "subthreshold", Direction::Rising),
         ("input1", "subthreshold", "subthreshold", Direction::Rising),
         ("spike_h0", "subthreshold", "subthreshold", Direction::Rising),
         ("spike_h1", "subthreshold", "subthreshold", Direction::Rising),
         ("spike_h2", "subthreshold", "subthreshold", Direction::Rising),
         ("spike_o0", "subthreshold", "subthreshold", Direction::Rising),
         ("spike_o1", "subthreshold", "subthreshold", Direction::Rising)])]
fn contract_names(
    #[case] name: &str,
    #[case] states: &[&str],
    #[case] params: &[&str],
    #[case] modes: &[&str],
    #[case] initial: &str,
    #[case] transitions: &[(&str, &str, &str, Direction)],
) {
    let model = by_name(name).unwrap();
    assert_eq!(model.name(), name);
    let spec = model.spec();
    assert_eq!(spec.name, name);
    assert_eq!(spec.state_names(), states);
    assert_eq!(spec.param_names(), params);
    assert_eq!(spec.modes, modes);
    assert_eq!(spec.initial_mode, initial);
    let found: Vec<(&str, &str, &str, Direction)> = spec
        .transitions
        .iter()
        .map(|t| (t.name.as_str(), t.from.as_str(), t.to.as_str(), t.direction))
        .collect();
    assert_eq!(found, transitions);
}

#[test]
fn catalogue_lists_every_model_once() {
    assert_eq!(
        model_names(),
        [
            "ball1d",
            "ball2d-flat",
            "ball2d-bowl",
            "two-ball",
            "lif",
            "lif-network",
            "thermostat",
            "impact-pendulum",
            "rimless-wheel",
            "slip-hopper",
            "particle-chain",
            "cuba-lif",
        ]
    );
}

#[test]
fn unknown_model_lists_valid_names() {
    let err = by_name("nope").unwrap_err();
    assert_eq!(err.kind(), "unknown_name");
    match &err {
        HybridError::UnknownName { kind, name, valid } => {
            assert_eq!(kind, "model");
            assert_eq!(name, "nope");
            assert_eq!(valid, &model_names());
        }
        other => panic!("unexpected error {other:?}"),
    }
    let text = err.to_string();
    for name in model_names() {
        assert!(text.contains(name), "{text}");
    }
}

#[test]
fn spec_index_helpers() {
    let spec = by_name("ball2d-flat").unwrap().spec();
    assert_eq!(spec.state_index("vy").unwrap(), 3);
    assert_eq!(spec.param_index("mu").unwrap(), 2);
    assert_eq!(spec.mode_index("flight").unwrap(), 0);
    assert_eq!(spec.initial_mode_index(), 0);
    assert_eq!(spec.default_params(), vec![9.81, 0.8, 0.7]);
    let err = spec.param_index("zz").unwrap_err();
    assert!(err.to_string().contains("g, e, mu"), "{err}");
    let spec = by_name("thermostat").unwrap().spec();
    assert_eq!(spec.initial_mode_index(), 1);
    assert_eq!(spec.transition_names(), ["switch_on", "switch_off"]);
}

fn models() -> Vec<(Box<dyn Model>, ModelSpec, HybridSystem)> {
    catalog()
        .into_iter()
        .map(|m| {
            let (spec, system) = (m.spec(), m.system());
            (m, spec, system)
        })
        .collect()
}

#[test]
fn systems_build_with_the_spec_names() {
    for (model, spec, system) in models() {
        let name = model.name();
        assert_eq!(
            system.state_names(),
            spec.state_names().as_slice(),
            "{name}"
        );
        assert_eq!(
            system.param_names(),
            spec.param_names().as_slice(),
            "{name}"
        );
        assert_eq!(system.mode_names(), spec.modes, "{name}");
        assert_eq!(system.transition_names(), spec.transition_names(), "{name}");
        for (t, ts) in system.transitions().iter().zip(&spec.transitions) {
            assert_eq!(system.modes()[t.from].name, ts.from, "{name}");
            assert_eq!(system.modes()[t.to].name, ts.to, "{name}");
            assert_eq!(t.guard.direction(), ts.direction, "{name}");
            assert!(!t.terminal, "{name}");
        }
        system.mode_index(&spec.initial_mode).unwrap();
        assert!(spec.t_end > 0.0, "{name}");
        assert!(!spec.description.is_empty(), "{name}");
        for q in spec.states.iter().chain(&spec.params) {
            assert!(
                q.default.is_finite() && !q.unit.is_empty(),
                "{name}.{}",
                q.name
            );
        }
    }
}

#[test]
fn default_state_is_strictly_before_every_initial_guard() {
    for (model, spec, system) in models() {
        let (x, p) = (spec.default_state(), spec.default_params());
        let mode = &system.modes()[spec.initial_mode_index()];
        assert!(!mode.outgoing.is_empty(), "{}", model.name());
        for &i in &mode.outgoing {
            let t = &system.transitions()[i];
            let g = t.guard.value(0.0, &x, &p);
            assert!(
                !t.guard.direction().violated_at_start(g),
                "{}: guard of '{}' is {g} at the start",
                model.name(),
                t.name
            );
        }
    }
}

#[test]
fn spec_round_trips_through_json() {
    for (_, spec, _) in models() {
        let text = serde_json::to_string(&spec).unwrap();
        let back: ModelSpec = serde_json::from_str(&text).unwrap();
        assert_eq!(back, spec);
    }
    let text = serde_json::to_string(&by_name("lif").unwrap().spec()).unwrap();
    assert!(text.contains(r#""direction":"rising""#), "{text}");
    assert!(text.contains(r#""t_end":0.05"#), "{text}");
}

// ---------------------------------------------------------------------------
// Partial derivatives against central finite differences.

const H: f64 = 1e-6;

/// `(t, x, p)` with input `j` (states, then parameters, then time) moved by `h`.
fn shifted(t: f64, x: &[f64], p: &[f64], j: usize, h: f64) -> (f64, Vec<f64>, Vec<f64>) {
    let (mut t, mut x, mut p) = (t, x.to_vec(), p.to_vec());
    let n = x.len();
    if j < n {
        x[j] += h;
    } else if j < n + p.len() {
        p[j - n] += h;
    } else {
        t += h;
    }
    (t, x, p)
}

/// Compares `exact(i, j)`, the derivative of output `i` of `eval` with respect
/// to input `j` (states, then parameters, then time), with a central finite
/// difference.
fn check_against_fd(
    what: &str,
    outputs: usize,
    (t, x, p): (f64, &[f64], &[f64]),
    eval: impl Fn(f64, &[f64], &[f64], &mut [f64]),
    exact: impl Fn(usize, usize) -> f64,
) {
    let (mut up, mut down) = (vec![0.0; outputs], vec![0.0; outputs]);
    for j in 0..=x.len() + p.len() {
        let (tu, xu, pu) = shifted(t, x, p, j, H);
        let (td, xd, pd) = shifted(t, x, p, j, -H);
        eval(tu, &xu, &pu, &mut up);
        eval(td, &xd, &pd, &mut down);
        for i in 0..outputs {
            let (e, fd) = (exact(i, j), (up[i] - down[i]) / (2.0 * H));
            assert!(
                (e - fd).abs() <= 1e-6 * (1.0 + e.abs().max(fd.abs())),
                "{what} d{i}/d{j}: exact {e} vs finite difference {fd}"
            );
        }
    }
}

/// Sample points near the default state and parameters, perturbed
/// deterministically so that no coordinate sits at a special value.
fn samples(spec: &ModelSpec) -> Vec<(f64, Vec<f64>, Vec<f64>)> {
    let (x0, p0) = (spec.default_state(), spec.default_params());
    (0..3)
        .map(|k| {
            let wiggle = |i: usize, v: f64| {
                let s = ((i * 7 + k * 3) % 5) as f64 * 0.01 + 0.01 * k as f64;
                v + s * (1.0 + v.abs())
            };
            let x = x0.iter().enumerate().map(|(i, &v)| wiggle(i, v)).collect();
            let p = p0
                .iter()
                .enumerate()
                .map(|(i, &v)| wiggle(i + 11, v))
                .collect();
            (0.1 * k as f64, x, p)
        })
        .collect()
}

#[test]
fn partials_match_finite_differences() {
    for (model, spec, system) in models() {
        let name = model.name();
        let (n, np) = (system.state_dim(), system.param_dim());
        for (t, x, p) in samples(&spec) {
            let at = (t, x.as_slice(), p.as_slice());
            for mode in system.modes() {
                let mut d = FlowPartials::zeros(n, np);
                mode.flow.partials(t, &x, &p, &mut d);
                check_against_fd(
                    &format!("{name} flow '{}'", mode.name),
                    n,
                    at,
                    |t, x, p, out| mode.flow.rate(t, x, p, out),
                    |i, j| match j {
                        j if j < n => d.x[(i, j)],
                        j if j < n + np => d.p[(i, j - n)],
                        _ => d.t[i],
                    },
                );
            }
            for tr in system.transitions() {
                let mut d = GuardPartials::zeros(n, np);
                tr.guard.partials(t, &x, &p, &mut d);
                check_against_fd(
                    &format!("{name} guard '{}'", tr.name),
                    1,
                    at,
                    |t, x, p, out| out[0] = tr.guard.value(t, x, p),
                    |_, j| match j {
                        j if j < n => d.x[j],
                        j if j < n + np => d.p[j - n],
                        _ => d.t,
                    },
                );
                let mut d = ResetPartials::zeros(n, np);
                tr.reset.partials(t, &x, &p, &mut d);
                check_against_fd(
                    &format!("{name} reset '{}'", tr.name),
                    n,
                    at,
                    |t, x, p, out| tr.reset.apply(t, x, p, out),
                    |i, j| match j {
                        j if j < n => d.x[(i, j)],
                        j if j < n + np => d.p[(i, j - n)],
                        _ => d.t[i],
                    },
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------
// A crude reference simulation of the default runs: fixed-step RK4, events
// located by bisection on a fresh RK4 step. Enough to check that every
// default run has events and stays physical; the real integrator lives in
// ia-events.

fn rk4(system: &HybridSystem, mode: usize, t: f64, x: &[f64], p: &[f64], h: f64) -> Vec<f64> {
    let flow = &system.modes()[mode].flow;
    let n = x.len();
    let mut k = [vec![0.0; n], vec![0.0; n], vec![0.0; n], vec![0.0; n]];
    flow.rate(t, x, p, &mut k[0]);
    let shift =
        |c: f64, k: &[f64]| -> Vec<f64> { x.iter().zip(k).map(|(a, b)| a + c * b).collect() };
    let x1 = shift(h / 2.0, &k[0]);
    flow.rate(t + h / 2.0, &x1, p, &mut k[1]);
    let x2 = shift(h / 2.0, &k[1]);
    flow.rate(t + h / 2.0, &x2, p, &mut k[2]);
    let x3 = shift(h, &k[2]);
    flow.rate(t + h, &x3, p, &mut k[3]);
    (0..n)
        .map(|i| x[i] + h / 6.0 * (k[0][i] + 2.0 * k[1][i] + 2.0 * k[2][i] + k[3][i]))
        .collect()
}

/// Guard values within this distance of zero right after a reset take the
/// side their rate points to (as in the ia-events integrator).
const RESIDUAL: f64 = 1e-9;

/// `(event time, transition name)` of each event, and every state visited.
///
/// Mirrors the event rules of the ia-events integrator: a transition fires
/// when its guard goes from its recorded side to zero or beyond in its
/// direction; right after a reset every guard of the new mode is re-armed,
/// a guard within [`RESIDUAL`] of zero taking the side of its rate, and a
/// guard already beyond zero in its direction firing at once.
fn simulate(
    system: &HybridSystem,
    spec: &ModelSpec,
    steps: usize,
) -> (Vec<(f64, String)>, Vec<Vec<f64>>) {
    let p = spec.default_params();
    let (n, np) = (system.state_dim(), system.param_dim());
    let mut x = spec.default_state();
    let mut mode = spec.initial_mode_index();
    let mut t = 0.0;
    let h = spec.t_end / steps as f64;
    let guard = |i: usize, t: f64, x: &[f64]| system.transitions()[i].guard.value(t, x, &p);
    // Records each outgoing guard's side; returns a transition that must
    // fire at once.
    let arm = |mode: usize, t: f64, x: &[f64], sides: &mut Vec<f64>| -> Option<usize> {
        sides.clear();
        for &i in &system.modes()[mode].outgoing {
            let tr = &system.transitions()[i];
            let mut heading = guard(i, t, x);
            if heading.abs() <= RESIDUAL {
                let mut rate = vec![0.0; n];
                system.modes()[mode].flow.rate(t, x, &p, &mut rate);
                let mut d = GuardPartials::zeros(n, np);
                tr.guard.partials(t, x, &p, &mut d);
                heading = d.x.iter().zip(&rate).map(|(a, b)| a * b).sum::<f64>() + d.t;
            }
            if tr.guard.direction().violated_at_start(heading) {
                return Some(i);
            }
            sides.push(heading.signum());
        }
        None
    };
    let mut sides = Vec::new();
    assert_eq!(arm(mode, t, &x, &mut sides), None, "{}", spec.name);
    let (mut events, mut visited) = (Vec::new(), vec![x.clone()]);
    let mut pending: Option<(usize, f64, Vec<f64>)> = None;
    while t < spec.t_end - 1e-12 {
        if let Some((i, te, xe)) = pending.take() {
            let tr = &system.transitions()[i];
            let mut after = vec![0.0; n];
            tr.reset.apply(te, &xe, &p, &mut after);
            t = te;
            x = after;
            mode = tr.to;
            events.push((t, tr.name.clone()));
            assert!(events.len() < 1000, "{}: runaway events", spec.name);
            if let Some(now) = arm(mode, t, &x, &mut sides) {
                pending = Some((now, t, x.clone()));
            }
            visited.push(x.clone());
            continue;
        }
        let step = h.min(spec.t_end - t);
        let next = rk4(system, mode, t, &x, &p, step);
        let outgoing = &system.modes()[mode].outgoing;
        let fired = outgoing.iter().enumerate().find(|&(k, &i)| {
            system.transitions()[i]
                .guard
                .direction()
                .crossed(sides[k], guard(i, t + step, &next))
        });
        match fired {
            None => {
                t += step;
                x = next;
                for (k, &i) in outgoing.iter().enumerate() {
                    let g = guard(i, t, &x);
                    if g != 0.0 {
                        sides[k] = g.signum();
                    }
                }
            }
            Some((k, &i)) => {
                let side = sides[k];
                let (mut lo, mut hi) = (0.0, step);
                for _ in 0..60 {
                    let mid = 0.5 * (lo + hi);
                    let xm = rk4(system, mode, t, &x, &p, mid);
                    if guard(i, t + mid, &xm) * side > 0.0 {
                        lo = mid;
                    } else {
                        hi = mid;
                    }
                }
                pending = Some((i, t + hi, rk4(system, mode, t, &x, &p, hi)));
            }
        }
        assert!(
            x.iter().all(|v| v.is_finite()),
            "{}: non-finite state at t = {t}",
            spec.name
        );
        visited.push(x.clone());
    }
    (events, visited)
}

#[rstest]
#[case("ball1d", 3)]
#[case("ball2d-flat", 3)]
#[case("ball2d-bowl", 3)]
#[case("two-ball", 1)]
#[case("lif", 3)]
#[case("lif-network", 24)]
#[case("thermostat", 12)]
#[case("impact-pendulum", 3)]
#[case("rimless-wheel", 3)]
#[case("slip-hopper", 6)]
#[case("particle-chain", 6)]
fn default_run_has_events(#[case] name: &str, #[case] at_least: usize) {
    let model = by_name(name).unwrap();
    let (spec, system) = (model.spec(), model.system());
    let (events, visited) = simulate(&system, &spec, 20_000);
    println!("{name}: {} events: {events:?}", events.len());
    assert!(events.len() >= at_least, "{name}: {events:?}");
    if name == "slip-hopper" {
        assert!(
            visited.iter().all(|x| x[1] > 0.5),
            "{name}: the hopper fell"
        );
        let kinds: Vec<&str> = events.iter().map(|e| e.1.as_str()).collect();
        assert_eq!(
            kinds,
            [
                "touchdown",
                "liftoff",
                "touchdown",
                "liftoff",
                "touchdown",
                "liftoff"
            ]
        );
        // Events alternate with time between them: no touchdown at once
        // after a liftoff.
        assert!(
            events.windows(2).all(|w| w[1].0 - w[0].0 > 0.1),
            "{events:?}"
        );
    }
    if name == "rimless-wheel" {
        assert!(
            visited.iter().all(|x| x[1] > 0.0),
            "{name}: the wheel rolled back"
        );
    }
}

#[test]
fn closed_form_event_times() {
    let run = |name: &str| {
        let model = by_name(name).unwrap();
        simulate(&model.system(), &model.spec(), 20_000).0
    };
    let ball = run("ball1d");
    assert!(
        (ball[0].0 - (2.0f64 / 9.81).sqrt()).abs() < 1e-6,
        "{ball:?}"
    );
    let lif = run("lif");
    let first = 0.01 * (1.1f64 / 0.3).ln();
    let period = 0.01 * (1.3f64 / 0.3).ln();
    for (k, e) in lif.iter().enumerate() {
        assert!((e.0 - (first + k as f64 * period)).abs() < 1e-8, "{lif:?}");
    }
    let thermo = run("thermostat");
    assert_eq!(thermo[0].1, "switch_off");
    assert!(
        (thermo[0].0 - (14.0f64 / 12.0).ln() / 0.2).abs() < 1e-8,
        "{thermo:?}"
    );
    assert_eq!(thermo[1].1, "switch_on");
    let two = run("two-ball");
    assert_eq!(two.len(), 1);
    assert!((two[0].0 - 0.32).abs() < 1e-9, "{two:?}");
}

/// A guard that names its support writes its partials nowhere else, and
/// its value does not move when a state entry outside it does (reference:
/// the guard's own dense partials and its value at a shifted state).
#[test]
fn guard_supports_cover_what_the_guards_read() {
    let mut checked = 0;
    for model in catalog() {
        let spec = model.spec();
        let system = model.system();
        let (x, p) = (spec.default_state(), spec.default_params());
        for tr in system.transitions() {
            let Some(support) = tr.guard.support() else {
                continue;
            };
            let mut d = GuardPartials::zeros(x.len(), p.len());
            tr.guard.partials(0.0, &x, &p, &mut d);
            for i in 0..x.len() {
                if !support.states.contains(&i) {
                    assert_eq!(d.x[i], 0.0, "{} {}: x{i}", model.name(), tr.name);
                    let mut shifted = x.clone();
                    shifted[i] += 0.37;
                    assert_eq!(
                        tr.guard.value(0.0, &shifted, &p),
                        tr.guard.value(0.0, &x, &p),
                        "{} {}: reads x{i}",
                        model.name(),
                        tr.name
                    );
                }
            }
            for j in 0..p.len() {
                if !support.params.contains(&j) {
                    assert_eq!(d.p[j], 0.0, "{} {}: p{j}", model.name(), tr.name);
                }
            }
            checked += 1;
        }
    }
    assert!(checked >= 5, "{checked} guards with a support");
}

/// Reference: each model's own `rate` and guard `value`. Where a flow
/// declares itself decoupled and linear (`Flow::decoupled_linear`), its rate
/// at every sample point is `a x + b` to rounding; where a guard declares a
/// threshold, its value is `x_k - level`. The models that declare them
/// (`lif`, `lif-network`, `thermostat`) are listed, so a declaration cannot
/// silently disappear.
#[test]
fn declared_linear_flows_and_thresholds_match_the_model() {
    let mut declaring = Vec::new();
    for (model, spec, system) in models() {
        let n = system.state_dim();
        let mut linear_everywhere = true;
        for (t, x, p) in samples(&spec) {
            for mode in system.modes() {
                let (mut a, mut b, mut f) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
                if !mode.flow.decoupled_linear(&p, &mut a, &mut b) {
                    linear_everywhere = false;
                    continue;
                }
                mode.flow.rate(t, &x, &p, &mut f);
                for i in 0..n {
                    let want = a[i] * x[i] + b[i];
                    assert!(
                        (f[i] - want).abs() <= 1e-12 * (1.0 + want.abs()),
                        "{} mode {}: rate {} vs a x + b = {want}",
                        model.name(),
                        mode.name,
                        f[i]
                    );
                }
            }
            for tr in system.transitions() {
                match tr.guard.threshold(&p) {
                    Some(threshold) => {
                        let want = x[threshold.state] - threshold.level;
                        assert_eq!(
                            tr.guard.value(t, &x, &p),
                            want,
                            "{} {}",
                            model.name(),
                            tr.name
                        );
                    }
                    None => linear_everywhere = false,
                }
            }
        }
        if linear_everywhere {
            declaring.push(model.name());
        }
    }
    assert_eq!(declaring, ["lif", "lif-network", "thermostat"]);
}

/// Reference: each reset's own `apply`. Where a reset declares the entries
/// it writes (`Reset::writes`, which the exact solver trusts to predict
/// again only the guards on them), every other entry comes out of `apply`
/// unchanged, to the bit, at every sample point. The resets that declare
/// them are counted, so the check cannot pass by finding none.
#[test]
fn declared_reset_writes_cover_every_changed_entry() {
    let mut declaring = 0;
    for (model, spec, system) in models() {
        let n = system.state_dim();
        for tr in system.transitions() {
            let Some(writes) = tr.reset.writes() else {
                continue;
            };
            declaring += 1;
            for (t, x, p) in samples(&spec) {
                let mut after = vec![f64::NAN; n];
                tr.reset.apply(t, &x, &p, &mut after);
                for i in (0..n).filter(|i| !writes.contains(i)) {
                    assert_eq!(
                        after[i].to_bits(),
                        x[i].to_bits(),
                        "{} {}: entry {i} changed ({} -> {}) but is not among the declared writes {writes:?}",
                        model.name(),
                        tr.name,
                        x[i],
                        after[i]
                    );
                }
            }
        }
    }
    assert!(declaring >= 3, "{declaring} resets declare their writes");
}
