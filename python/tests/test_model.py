"""Model, simulate, jacobian and gradient against the closed-form references
of crates/ia-verify/references/closed_form.json."""

import json

import numpy as np
import pytest

import impact_adjoint as ia

TIGHT = {"method": "dopri5", "rtol": 1e-12, "atol": 1e-12}


def case_inputs(model, case):
    x0 = [case["initial_state"][s] for s in model.state_names]
    params = [case["params"][p] for p in model.param_names]
    return x0, params


def test_models_and_names():
    names = ia.models()
    assert "ball2d-flat" in names and "lif-network" in names
    ball = ia.Model.ready("ball2d-flat")
    assert ball.state_names == ["x", "y", "vx", "vy"]
    assert ball.param_names == ["g", "e", "mu"]
    assert ball.mode_names == ["flight"] and ball.initial_mode == "flight"
    assert ball.transition_names == ["impact"]
    assert ball.wrt_names[3] == "initial.vy" and ball.wrt_names[-1] == "param.mu"
    assert ball.spec()["name"] == "ball2d-flat"
    net = ia.Model.ready("lif-network", size=5)
    assert len(net.state_names) == 5


def test_cuba_lif_takes_its_layers_as_size():
    """Issue 29: cuba-lif is sized by [n_in, n_hidden, n_out], with the
    issue's names; a size that is not three positive counts, a time constant
    that is not positive and an input time outside the run are errors naming
    the key (reference: the issue's list of bad input)."""
    net = ia.Model.ready("cuba-lif", size=[2, 3, 2])
    assert net.state_names[:4] == ["V_h0", "I_h0", "V_h1", "I_h1"]
    assert len(net.state_names) == 10
    assert net.param_names[:6] == ["tau_mem", "tau_syn", "theta", "t_in0", "t_in1", "w_h0_in0"]
    assert net.transition_names[:3] == ["input0", "input1", "spike_h0"]
    run = net.simulate(t_end=50.0)
    assert run.event_transitions[:2] == ["input0", "input1"]
    for bad in ([2, 3], [2, 0, 1], 3, [1, 2, 3, 4]):
        with pytest.raises(ia.InvalidOptionError, match="size"):
            ia.Model.ready("cuba-lif", size=bad)
    for params, key in (({"tau_syn": 0.0}, "tau_syn"), ({"tau_mem": -20.0}, "tau_mem"), ({"t_in1": 60.0}, "t_in1")):
        with pytest.raises(ia.InvalidOptionError, match=key):
            net.simulate(params=params, t_end=50.0)


def test_simulate_matches_closed_form(closed_form):
    case = closed_form["ball2d_flat_a"]
    ball = ia.Model.ready(case["model"])
    x0, params = case_inputs(ball, case)
    run = ball.simulate(x0, params, case["t_end"], solver=TIGHT, observe=[0.5, 1.0])
    expected = [case["final_state"][s] for s in ball.state_names]
    np.testing.assert_allclose(run.final_state, expected, rtol=0, atol=1e-10)
    np.testing.assert_allclose(run.event_times, case["event_times"], rtol=0, atol=1e-10)
    assert run.event_transitions == ["impact"] * 3
    assert run.event_states_before.shape == (3, 4)
    assert run.observations.shape == (2, 4)
    assert run.final("x") == run.final_state[0]
    json.dumps(run.to_dict())


@pytest.mark.parametrize("method", ["forward", "adjoint"])
def test_jacobian_matches_closed_form(closed_form, method):
    case = closed_form["ball2d_flat_a"]
    ball = ia.Model.ready(case["model"])
    x0, params = case_inputs(ball, case)
    jac = ball.jacobian(x0, params, case["t_end"], method=method, solver=TIGHT)
    assert jac.wrt == ball.wrt_names and jac.state_names == ball.state_names
    for state, row in case["jacobian"].items():
        for wrt, value in row.items():
            assert abs(jac.final_derivative(state, wrt) - value) < 1e-9, (state, wrt)
    chosen = ball.jacobian(x0, params, case["t_end"], method=method, wrt=["initial.vy", "param.mu"], solver=TIGHT)
    # The same columns; forward sensitivities steer the step size by the
    # columns they carry, so the steps (and the last digits) may differ.
    np.testing.assert_allclose(chosen.final_jacobian, jac.final_jacobian[:, [3, 6]], rtol=0, atol=1e-9)
    json.dumps(jac.to_dict())


def test_inputs_as_sequences_arrays_and_dicts_agree():
    ball = ia.Model.ready("ball2d-flat")
    by_list = ball.simulate([0.0, 1.0, 1.0, 0.0], [9.81, 0.8, 0.7], 2.0)
    by_array = ball.simulate(np.array([0.0, 1.0, 1.0, 0.0]), np.array([9.81, 0.8, 0.7]), 2.0)
    by_dict = ball.simulate({"x": 0.0, "y": 1.0, "vx": 1.0, "vy": 0.0}, {"g": 9.81, "e": 0.8, "mu": 0.7}, 2.0)
    by_default = ball.simulate()  # the model's defaults are ball2d_flat_a
    for run in (by_array, by_dict, by_default):
        np.testing.assert_array_equal(run.final_state, by_list.final_state)


@pytest.mark.parametrize("method", ["forward", "adjoint"])
def test_gradient_is_the_jacobian_contracted(method):
    """The loss gradient against the forward Jacobian contracted by hand with
    the same weights (fixed RK4 steps: forward and adjoint run the same
    discretisation)."""
    ball = ia.Model.ready("ball2d-flat")
    rk4 = {"method": "rk4", "dt": 1e-3}
    loss = [
        {"of": "final.x", "weight": 2.0},
        {"of": "event.1.time", "weight": -0.5},
        {"of": "observation.0.y", "weight": 1.5, "target": 0.1},
    ]
    grad = ball.gradient(None, None, 2.0, loss=loss, method=method, solver=rk4, observe=[0.7])
    jac = ball.jacobian(None, None, 2.0, solver=rk4, observe=[0.7])
    y_obs = jac.observations[0, 1]
    expected = (
        2.0 * jac.final_jacobian[0]
        - 0.5 * jac.event_time_gradients[1]
        + 1.5 * 2.0 * (y_obs - 0.1) * jac.observation_jacobians[0, 1]
    )
    np.testing.assert_allclose(grad.gradient, expected, rtol=0, atol=1e-10)
    value = 2.0 * jac.final_state[0] - 0.5 * jac.event_times[1] + 1.5 * (y_obs - 0.1) ** 2
    assert abs(grad.value - value) < 1e-12
    assert grad.derivative("param.e") == grad.gradient[5]


def test_derivative_probes_keyword():
    """The adjoint's derivative probes (on by default) are turned off with
    derivative_probes=0: both gradients lie within the tolerance's reach of
    the forward pass's (the same derivative, on different steps); the
    probes change the taped run's steps, so the two differ; a bad value
    names the key."""
    ball = ia.Model.ready("ball2d-flat")
    loss = [{"of": "final.x", "weight": 1.0}]
    solver = {"method": "dopri5", "rtol": 1e-8, "atol": 1e-8}
    forward = ball.gradient(None, None, 2.0, loss=loss, method="forward", solver=solver)
    probed = ball.gradient(None, None, 2.0, loss=loss, solver=solver)
    plain = ball.gradient(None, None, 2.0, loss=loss, solver=solver, derivative_probes=0)
    for grad in (probed, plain):
        np.testing.assert_allclose(grad.gradient, forward.gradient, rtol=0, atol=1e-6)
    # On a flow whose derivative needs shorter steps than its state, the
    # probe makes the taped run take more of them.
    lif = ia.Model.ready("lif")
    lif_loss = [{"of": f"final.{lif.state_names[0]}", "weight": 1.0}]
    lif_probed = lif.gradient(loss=lif_loss, solver=solver)
    lif_plain = lif.gradient(loss=lif_loss, solver=solver, derivative_probes=0)
    assert lif_probed.stats["steps"] > lif_plain.stats["steps"]
    jac = ball.jacobian(None, None, 2.0, method="adjoint", solver=solver, derivative_probes=2)
    np.testing.assert_allclose(jac.final_jacobian[0], forward.gradient, rtol=0, atol=1e-6)
    with pytest.raises(ia.Error, match="adjoint.derivative_probes"):
        ball.gradient(None, None, 2.0, loss=loss, derivative_probes=-1)


def test_solve_releases_the_gil():
    """While a long solve runs on another thread, this thread runs Python:
    the solve holds no GIL (with it held, the loop below would stall for the
    whole solve)."""
    import threading
    import time

    chain = ia.Model.ready("particle-chain", size=8)
    worker = threading.Thread(
        target=lambda: chain.simulate(t_end=20.0, solver={"method": "rk4", "dt": 1e-4})
    )
    start = time.perf_counter()
    worker.start()
    turns = 0
    while worker.is_alive():
        turns += 1
    elapsed = time.perf_counter() - start
    assert elapsed > 0.05, f"the solve took {elapsed} s: too short to tell"
    # Released: millions of turns a second; held: none during the solve (a
    # Python worker that yields the GIL every 5 ms lets about 70,000 a second).
    assert turns > 100_000, f"{turns} loop turns in {elapsed:.3f} s of solving"


def test_equation_model_equals_the_ready_model(closed_form):
    """ball2d-flat written as equations (crates/ia-equations/tests/data) runs
    and differentiates like the ready model, as a dict or as JSON text."""
    from conftest import ROOT

    text = (ROOT / "crates" / "ia-equations" / "tests" / "data" / "ball2d-flat.json").read_text()
    by_text = ia.Model.from_equations(text)
    by_dict = ia.Model.from_equations(json.loads(text))
    ready = ia.Model.ready("ball2d-flat")
    for model in (by_text, by_dict):  # a dict keeps its key order
        assert model.state_names == ready.state_names and model.param_names == ready.param_names
    assert by_text.transition_names == ["impact"] and by_text.name == "ball2d-flat"
    case = closed_form["ball2d_flat_a"]
    x0, params = case_inputs(ready, case)
    reference = ready.jacobian(x0, params, case["t_end"], solver=TIGHT)
    for model in (by_text, by_dict):
        jac = model.jacobian(x0, params, case["t_end"], solver=TIGHT)
        np.testing.assert_allclose(jac.final_jacobian, reference.final_jacobian, rtol=0, atol=1e-12)
        assert abs(jac.final_derivative("x", "initial.vy") - case["jacobian"]["x"]["initial.vy"]) < 1e-9


def test_the_exact_solver_matches_dopri5():
    """Reference: DOPRI5 at 1e-12. The exact event-driven solver on a
    network of 20 neurons: the same spikes, times and states within 1e-8,
    the same forward Jacobian within 1e-7; through the exact solver, the
    adjoint's Jacobian equals the forward one within 1e-10 (reference: the
    other mode)."""
    net = ia.Model.ready("lif-network", size=20)
    exact = net.simulate(t_end=0.05, solver="exact")
    stepped = net.simulate(t_end=0.05, solver=TIGHT)
    assert len(exact.event_times) == len(stepped.event_times) > 20
    assert exact.event_transitions == stepped.event_transitions
    np.testing.assert_allclose(exact.event_times, stepped.event_times, rtol=1e-8)
    np.testing.assert_allclose(exact.final_state, stepped.final_state, rtol=1e-8, atol=1e-10)
    jac = net.jacobian(t_end=0.05, solver="exact")
    ref = net.jacobian(t_end=0.05, solver=TIGHT)
    np.testing.assert_allclose(jac.final_jacobian, ref.final_jacobian, rtol=1e-7, atol=1e-7)
    np.testing.assert_allclose(jac.event_time_gradients, ref.event_time_gradients, rtol=1e-7, atol=1e-7)
    adjoint = net.jacobian(t_end=0.05, solver="exact", method="adjoint")
    np.testing.assert_allclose(adjoint.final_jacobian, jac.final_jacobian, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(adjoint.event_time_gradients, jac.event_time_gradients, rtol=1e-10, atol=1e-10)


def test_from_equations_doc_names_the_let_key():
    # Reference: the key of a model written as equations is `let`
    # (docs/equations.md; ia-equations reads `let`, there is no `lets`).
    doc = ia.Model.from_equations.__doc__
    assert "`let`" in doc, doc
    assert "lets" not in doc, doc


@pytest.mark.parametrize("method", ["forward", "adjoint"])
def test_kvaerno5_runs_ready_and_equation_models(closed_form, method):
    """Reference: the closed form of ball2d_flat_a
    (crates/ia-verify/references/closed_form.json). ``solver="kvaerno5"``
    (the implicit Kvaerno 5(4) at its default tolerance, 1e-10) on the ready
    model and on its equation form gives the closed-form Jacobian within
    1e-7."""
    from conftest import ROOT

    text = (ROOT / "crates" / "ia-equations" / "tests" / "data" / "ball2d-flat.json").read_text()
    ready = ia.Model.ready("ball2d-flat")
    case = closed_form["ball2d_flat_a"]
    x0, params = case_inputs(ready, case)
    for model in (ready, ia.Model.from_equations(text)):
        jac = model.jacobian(x0, params, case["t_end"], solver="kvaerno5", method=method)
        for s, row in case["jacobian"].items():
            for w, want in row.items():
                got = jac.final_derivative(s, w)
                assert abs(got - want) <= 1e-7 * max(abs(want), 1.0), (s, w, got, want)


def test_results_have_every_field_of_their_class():
    """The extension fills each result's fields at once (``_results._build``,
    not the frozen dataclass's ``__init__``): every declared field is set,
    nothing else is, and the result stays frozen (reference: the dataclass
    declarations in ``impact_adjoint/_results.py``)."""
    import dataclasses

    ball = ia.Model.ready("ball2d-flat")
    wheel = ia.Model.ready("rimless-wheel")
    params = {"g": 9.81, "l": 1.0, "alpha": 0.3927, "gamma": 0.08}
    results = [
        ball.simulate(),
        ball.jacobian(),
        ball.gradient(loss=[{"of": "final.x", "weight": 1.0}]),
        wheel.periodic_orbit("step", [0.08 - 0.3927, 1.2], params, max_period=5.0),
    ]
    for result in results:
        declared = {f.name for f in dataclasses.fields(result)}
        assert set(vars(result)) == declared, type(result).__name__
        with pytest.raises(dataclasses.FrozenInstanceError):
            result.model = "changed"
    assert results[2].value == results[2].final("x")
