"""impact_adjoint.jax as a new user meets it (issue 30): a solver made inside
the differentiated function, pytrees, optional max_events, float32 without
the global 64-bit switch, errors under jit, the README's and the docs'
Python blocks as written, the extras, and the custom-model example.

References: the closed form of ball2d_flat_a (crates/ia-verify/references/
closed_form.json, computed outside the project) and the library's own
array interface (the same run, checked against that closed form in
test_jax.py)."""

import gc
import re
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import impact_adjoint as ia
import impact_adjoint.jax as iajax
from conftest import ROOT

BALL_X0 = [0.0, 1.0, 1.0, 0.0]
BALL_PARAMS = [9.81, 0.8, 0.7]
# d x(T) / d vy0 on ball2d_flat_a: vx0 (1 - mu^3) / g (closed_form.json).
D_X_D_VY0 = 0.06697247706422019


def x_final_of_a_solver_made_inside(x0, params):
    """A loss that makes its solver itself, as JAX users write it."""
    run = iajax.solver(ia.Model.ready("ball2d-flat"), 2.0)
    return run(x0, params).final_state[0]


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_a_solver_made_inside_the_traced_function(jit):
    """Before: "no solver with id 2: ... has been freed"."""
    grad = jax.grad(x_final_of_a_solver_made_inside)
    if jit:
        grad = jax.jit(grad)
    x0, params = jnp.array(BALL_X0), jnp.array(BALL_PARAMS)
    for _ in range(2):  # a second call runs the cached compiled code
        gc.collect()
        gx = grad(x0, params)
        assert abs(float(gx[3]) - D_X_D_VY0) < 1e-10
    value, _ = jax.jit(jax.value_and_grad(x_final_of_a_solver_made_inside))(x0, params)
    gc.collect()
    again, _ = jax.jit(jax.value_and_grad(x_final_of_a_solver_made_inside))(x0, params)
    assert float(value) == float(again)


def test_dicts_whole_and_partial_give_gradients_by_name():
    """Before: TypeError "float() argument must be ... not 'dict'"."""
    ball = ia.Model.ready("ball2d-flat")
    run = iajax.solver(ball, 2.0)
    loss = lambda x0, p: run(x0, p).final_state[0]
    arrays = jax.grad(loss, argnums=(0, 1))(jnp.array(BALL_X0), jnp.array(BALL_PARAMS))
    whole_x0 = dict(zip(ball.state_names, BALL_X0))
    whole_p = dict(zip(ball.param_names, BALL_PARAMS))
    gx, gp = jax.grad(loss, argnums=(0, 1))(whole_x0, whole_p)
    assert set(gx) == set(ball.state_names) and set(gp) == set(ball.param_names)
    np.testing.assert_array_equal([gx[s] for s in ball.state_names], arrays[0])
    np.testing.assert_array_equal([gp[p] for p in ball.param_names], arrays[1])
    # Partial: the missing names take the model's defaults (those of
    # ball2d_flat_a), and the gradient has only the names given.
    gx, gp = jax.grad(loss, argnums=(0, 1))({"vy": 0.0}, {"e": 0.8})
    assert set(gx) == {"vy"} and set(gp) == {"e"}
    assert abs(float(gx["vy"]) - D_X_D_VY0) < 1e-10
    assert float(gp["e"]) == float(arrays[1][1])
    # A dict of arrays in a pytree, under jit and vmap too.
    jitted = jax.jit(jax.grad(loss))({"vy": 0.0, "vx": 1.0}, whole_p)
    assert abs(float(jitted["vy"]) - D_X_D_VY0) < 1e-10
    vys = jnp.array([0.0, 0.5])
    mapped = jax.vmap(lambda vy: run({"vy": vy}, {}).final_state)(vys)
    for i, vy in enumerate([0.0, 0.5]):
        np.testing.assert_array_equal(mapped[i], run({"vy": vy}, None).final_state)
    # The values: the same run as arrays.
    np.testing.assert_array_equal(run({}, {}).final_state, run(jnp.array(BALL_X0), jnp.array(BALL_PARAMS)).final_state)


def test_bad_dicts_name_the_key():
    run = iajax.solver(ia.Model.ready("ball2d-flat"), 2.0)
    with pytest.raises(ia.UnknownNameError, match="unknown parameter 'q'.*valid.*g, e, mu"):
        run({}, {"q": 1.0})
    with pytest.raises(ia.UnknownNameError, match="unknown state 'z'"):
        run({"z": 1.0}, {})
    with pytest.raises(ia.InvalidScenarioError, match="'params.e' must be a number, got 'high'"):
        run({}, {"e": "high"})


def test_max_events_is_optional():
    """Before: TypeError "missing 1 required keyword-only argument"."""
    run = iajax.solver(ia.Model.ready("ball2d-flat"), 2.0)
    out = run(jnp.array(BALL_X0), jnp.array(BALL_PARAMS))
    assert out.event_times.shape == (0,) and int(out.event_count) == 3


def run_python(code, *, x64=None):
    """``code`` in a fresh interpreter (JAX's 64-bit switch untouched unless
    ``x64``), from outside the repository's python/ folder; its stdout."""
    env_code = "" if x64 is None else f"import jax; jax.config.update('jax_enable_x64', {x64})\n"
    done = subprocess.run(
        [sys.executable, "-c", env_code + code],
        capture_output=True,
        text=True,
        cwd=ROOT / "target",
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_float32_inputs_without_the_64_bit_switch():
    """Before: InvalidOptionError "jax_enable_x64 = False". float32 in,
    float32 out, equal to the float64 results rounded (the run is in
    float64 inside), eager, jitted, vmapped and differentiated."""
    code = """
import jax, jax.numpy as jnp, numpy as np
import impact_adjoint as ia, impact_adjoint.jax as iajax
assert not jax.config.read("jax_enable_x64")
ball = ia.Model.ready("ball2d-flat")
run = iajax.solver(ball, 2.0, observe=[1.0], max_events=4)
x0, p = jnp.array([0.0, 1.0, 1.0, 0.0]), jnp.array([9.81, 0.8, 0.7])
assert x0.dtype == jnp.float32
loss = lambda x, p: run(x, p).final_state[0]
eager = run(x0, p)
jitted = jax.jit(run)(x0, p)
mapped = jax.vmap(run, in_axes=(0, None))(jnp.stack([x0, x0]), p)
g = jax.grad(loss, argnums=(0, 1))(x0, p)
gj = jax.jit(jax.grad(loss, argnums=(0, 1)))(x0, p)
gd = jax.grad(loss)({"vy": 0.0}, {})
jf = jax.jacfwd(lambda x: run(x, p).final_state)(x0)
jr = jax.jacrev(lambda x: run(x, p).final_state)(x0)
assert jf.dtype == jr.dtype == jnp.float32 and np.allclose(jf[0], g[0], rtol=1e-6, atol=1e-7), (jf, g)
for a in (eager.final_state, eager.event_times, jitted.final_state, jitted.observed, mapped.final_state, g[0], g[1], gj[0], gd["vy"]):
    assert a.dtype == jnp.float32, a.dtype
assert eager.event_count.dtype == jnp.int32
for name, x in [("final", eager.final_state), ("jit", jitted.final_state), ("vmap", mapped.final_state[1]),
                ("times", eager.event_times), ("obs", jitted.observed[0]), ("gx", g[0]), ("gp", g[1]),
                ("gjx", gj[0]), ("vy", gd["vy"])]:
    print(name, *[float(v) for v in np.ravel(x)])
"""
    f32 = run_python(code)
    ball = ia.Model.ready("ball2d-flat")
    run = iajax.solver(ball, 2.0, observe=[1.0], max_events=4)
    # The float32 inputs, widened exactly: what the library ran.
    widened = lambda v: jnp.asarray(np.asarray(v, dtype=np.float32), dtype=jnp.float64)
    x0, p = widened(BALL_X0), widened(BALL_PARAMS)
    out = run(x0, p)
    loss = lambda x, p: run(x, p).final_state[0]
    gx, gp = jax.grad(loss, argnums=(0, 1))(x0, p)
    expected = {
        "final": out.final_state,
        "jit": out.final_state,
        "vmap": out.final_state,
        "times": out.event_times,
        "obs": out.observed[0],
        "gx": gx,
        "gp": gp,
        "gjx": gx,
        "vy": gx[3:4],
    }
    for line in f32.splitlines():
        name, *values = line.split()
        rounded = np.asarray(expected[name], dtype=np.float64).astype(np.float32)
        np.testing.assert_array_equal(np.array(values, dtype=np.float64), rounded.astype(np.float64), err_msg=name)


def test_a_failed_run_under_jit_names_its_kind_and_key():
    ball = ia.Model.ready("ball2d-flat")
    run = iajax.solver(ball, 2.0)
    bad = {"e": 1.5}
    with pytest.raises(jax.errors.JaxRuntimeError) as caught:
        jax.jit(run)({}, bad)
    message = str(caught.value)
    # XLA puts its status code first; the library's message follows,
    # starting with its kind.
    first = message.splitlines()[0]
    assert first.startswith("INVALID_ARGUMENT: invalid_option: invalid parameter 'e' = 1.5"), message
    error = iajax.library_error(caught.value)
    assert isinstance(error, ia.InvalidOptionError)
    assert str(error).startswith("invalid parameter 'e' = 1.5: must lie in"), str(error)
    # The plain call raises the same class with the same message.
    with pytest.raises(ia.InvalidOptionError) as plain:
        run({}, bad)
    assert str(plain.value) == str(error)
    # An error of another origin is returned as it is.
    other = ValueError("something else")
    assert iajax.library_error(other) is other


def test_library_errors_raises_the_library_exception_under_jit():
    """Before: no way to get the library's exception raised from jitted
    code (only library_error to convert a caught one). XLA puts its
    status code before any handler message (docs/jax.md: every code
    measured), so the message under jit starts with INVALID_ARGUMENT, and
    the context manager raises the library's class, chained to XLA's
    error, with the plain call's message (naming the key)."""
    ball = ia.Model.ready("ball2d-flat")
    run = iajax.solver(ball, 2.0)
    with pytest.raises(ia.InvalidOptionError) as caught:
        with iajax.library_errors():
            jax.jit(run)({}, {"e": 1.5})
    assert str(caught.value).startswith("invalid parameter 'e' = 1.5: must lie in"), str(caught.value)
    assert caught.value.kind == "invalid_option"
    assert isinstance(caught.value.__cause__, jax.errors.JaxRuntimeError)
    assert str(caught.value.__cause__).startswith("INVALID_ARGUMENT: invalid_option: ")
    # As a decorator; an error that is not the library's passes unchanged.
    @iajax.library_errors()
    def fails():
        raise ValueError("something else")

    with pytest.raises(ValueError, match="something else"):
        fails()


def python_blocks(path):
    return re.findall(r"```python\n(.*?)```", (ROOT / path).read_text(), re.S)


@pytest.mark.parametrize(
    "path, index",
    [("README.md", i) for i in range(len(python_blocks("README.md")))]
    + [("docs/jax.md", i) for i in range(len(python_blocks("docs/jax.md")))],
)
def test_python_blocks_of_the_docs_run_as_written(path, index):
    """Each ```python block alone, in a fresh interpreter (JAX as
    installed, no 64-bit switch but the block's own)."""
    run_python(python_blocks(path)[index])


def test_the_extras_declare_what_the_modules_need():
    """The [jax] extra's lower bound is the jax whose XLA FFI the handlers
    speak; the Dask example's dependency is an extra too."""
    text = (ROOT / "pyproject.toml").read_text()
    extras = text.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    assert f'jax = ["jax>={iajax.MINIMUM_JAX}"]' in extras, extras
    assert 'dask = ["dask[distributed]"]' in extras, extras
    installed = tuple(int(x) for x in jax.__version__.split(".")[:2])
    assert installed >= tuple(int(x) for x in iajax.MINIMUM_JAX.split("."))
    assert '"impact_adjoint[dask]"' in (ROOT / "python" / "examples" / "dask_ensemble.py").read_text()
    assert "impact_adjoint[dask]" in (ROOT / "README.md").read_text()
