"""Every import fixture opens in the debugger (pilot): step count, tools and outcome shown,
the last step reachable, each run of a multi-run file selectable, nothing raw on screen."""

from __future__ import annotations

import pytest
from test_import_support import IMPORT_FIXTURES, all_fixtures, convert, fixture
from test_tui_support import SIZE, pane_text, press, screen_text, settle

from agentdbg import importers
from agentdbg.documents import open_document
from agentdbg.tui.app import DebuggerApp
from agentdbg.tui.widgets.timeline import Timeline

FORCED = {"transcript/edge_empty.txt": "transcript"}


def _open(path):
    forced = FORCED.get(f"{path.parent.name}/{path.name}")
    return importers.open_import(path, format=forced) if forced else open_document(path)


# Real files from other projects (tests/fixtures/import/real/FORMAT/SOURCE/), beside their
# notices; not the OTLP files of HTTP spans alone, which hold no agent run (refused).
REAL_FILES = sorted(p for p in (IMPORT_FIXTURES / "real").glob("*/*/*")
                    if p.is_file() and p.name not in ("LICENSE", "NOTICE", "SOURCE.md")
                    and p.parent.name != "otlp2parquet")


@pytest.mark.parametrize("path", all_fixtures(), ids=lambda p: f"{p.parent.name}/{p.name}")
async def test_fixture_opens_in_the_debugger(path):
    await _opens_in_the_debugger(path)


@pytest.mark.parametrize("path", REAL_FILES, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
async def test_real_file_opens_in_the_debugger(path):
    await _opens_in_the_debugger(path)


async def _opens_in_the_debugger(path):
    _, _, runs = convert(path, FORCED.get(f"{path.parent.name}/{path.name}"))
    document = _open(path)
    app = DebuggerApp(document, save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for index, expected in enumerate(runs):
            if index:
                await press(pilot, "r", "down", "enter")  # the list opens on the current run
            assert app.run_index == index
            await press(pilot, "end")
            count = expected.step_count
            assert app.session.cursor == count
            header = app.query_one("#header").text
            assert f"step {count}/{count}" in header
            assert f"outcome: {expected.end.outcome}" in header
            if len(runs) > 1:
                assert f"(run {index + 1}/{len(runs)})" in header
            timeline = app.query_one(Timeline)
            for step in range(1, count + 1):
                assert timeline.row_text(step).strip()
            tools = pane_text(app, "tools")
            for record in expected.records:
                if record.tool is not None:
                    assert _visible(record.tool) in tools
            assert "\x1b" not in screen_text(app)


def _visible(name: str) -> str:
    """A tool name as a pane shows it (control characters are stripped there)."""
    return "".join(ch for ch in name if ch.isprintable())[:12]


async def test_the_looping_react_run_shows_its_repeats_and_the_step_budget():
    app = DebuggerApp(open_document(fixture("react-paper", "runs.log")), save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "r", "down", "enter")
        assert "question 40" in app.query_one("#header").text
        await press(pilot, "end")
        assert "budget exhausted" in app.query_one("#header").text
        guards = pane_text(app, "guards")
        assert "7/7" in guards
        scratchpad = pane_text(app, "scratchpad")
        assert "Invalid action: Finish[REFUTES]" in scratchpad


async def test_a_run_with_no_steps_shows_what_was_kept_before_them():
    document = open_document(fixture("anthropic-messages", "edge_empty.json"))
    app = DebuggerApp(document, save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        scratchpad = pane_text(app, "scratchpad")
        assert "Raw: anthropic system prompt: system prompt: Be brief." in scratchpad
        assert "This run has no steps." in scratchpad
        assert "press n to step" not in scratchpad
