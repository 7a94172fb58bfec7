"""Shared set-up of the Python tests: 64-bit JAX, the repository's closed-form
references, and the command-line binary whose messages the exceptions must
repeat."""

import json
import os
import pathlib

import jax
import pytest

jax.config.update("jax_enable_x64", True)

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def closed_form():
    """The closed-form cases of crates/ia-verify/references/closed_form.json
    (computed outside the project, symbolically or at 50 digits)."""
    path = ROOT / "crates" / "ia-verify" / "references" / "closed_form.json"
    return json.loads(path.read_text())["cases"]


@pytest.fixture(scope="session")
def cli():
    """The `impact-adjoint` binary: $IMPACT_ADJOINT_BIN, or the debug build
    under $CARGO_TARGET_DIR (default target/). `cargo xtask test` builds it
    before the Python tests."""
    given = os.environ.get("IMPACT_ADJOINT_BIN")
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    path = pathlib.Path(given) if given else target / "debug" / "impact-adjoint"
    assert path.is_file(), (
        f"no command-line binary at {path}: run `cargo build -p ia-cli` first "
        "(or set IMPACT_ADJOINT_BIN); `cargo xtask test` does both"
    )
    return str(path)
