"""Shared test helpers: paths to sample plans, the project's fixtures and the shared real runs."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_PLANS = ROOT / "sample_plans"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
# Real runs recorded elsewhere live beside the project, not in it.
SHARED_FIXTURES = Path(os.environ.get("AGENTDBG_SHARED_FIXTURES", ROOT.parent / "shared" / "fixtures"))


@pytest.fixture(autouse=True)
def user_dirs(tmp_path_factory, monkeypatch) -> Path:
    """The user's data, config and state directories, per test: a plan's breakpoints,
    a keymap, the theme never come from (or go to) the real home directory."""
    home = tmp_path_factory.mktemp("xdg")
    for name in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME"):
        monkeypatch.setenv(name, str(home / name.lower()))
    return home


@pytest.fixture(autouse=True)
def scan_workers() -> Iterator[None]:
    """The scan workers as a test found them: a headless command run in the test's
    process (``main``) enables them for good, and a test's lost pool must not skip later
    tests of them (a pool made by a test is kept for the next ones)."""
    from agentdbg.trace import workers

    before, enabled = workers._workers, workers._enabled
    yield
    workers._enabled = enabled
    if workers._workers is None:
        workers._workers = before


@pytest.fixture
def shared_fixtures() -> Path:
    """The shared real runs (ReAct paper, SWE-agent); skips where they are absent."""
    if not SHARED_FIXTURES.is_dir():
        pytest.skip(f"shared real-run fixtures not found at {SHARED_FIXTURES} (set AGENTDBG_SHARED_FIXTURES)")
    return SHARED_FIXTURES


@pytest.fixture
def sample_plans() -> Path:
    return SAMPLE_PLANS
