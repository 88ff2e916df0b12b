"""The type checker passes: strict on the core (engine, model, trace, debugger), lenient
elsewhere (settings in pyproject.toml). Runs with the test suite, so the README's test
command covers it."""

from __future__ import annotations

import tomllib
from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parents[1]



def test_mypy_passes():
    stdout, stderr, status = api.run(["--config-file", str(ROOT / "pyproject.toml"),
                                      "--no-error-summary", str(ROOT / "agentdbg")])
    assert status == 0, stdout + stderr


def test_the_core_is_checked_strictly():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    strict = next(o for o in config["overrides"] if o.get("disallow_untyped_defs"))
    for package in ("agentdbg.engine.*", "agentdbg.trace.*", "agentdbg.debugger.*", "agentdbg.model.*"):
        assert package in strict["module"]
    assert strict["disallow_any_generics"] and strict["warn_return_any"]
