"""The screen with patterns a backtracking engine would never finish: the breakpoint
manager, / search, and a long continue that Esc cancels and q quits."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time

import pytest
from test_tui_support import SIZE, press, settle, status, type_text, wait_for

from agentdbg import regex
from agentdbg.debugger.breakpoints import sidecar_path
from agentdbg.documents import open_document
from agentdbg.engine import events as ev
from agentdbg.runs import Document, EventRun
from agentdbg.trace.synthetic import synthetic_run
from agentdbg.trace.writer import write_trace
from agentdbg.tui.app import DebuggerApp

pytestmark = pytest.mark.skipif(regex.ENGINE != regex.RE2, reason="google-re2 is not importable here")

EXPLOSIVE = "a" * 40 + "!"  # a backtracking (a+)+$ takes hours on this
STEPS = 10_000
NO_AUTO_BREAKS = {"tool_error": False, "parse_error": False, "repeat": False, "guard": False, "final": False}


def explosive_document() -> Document:
    events: list[ev.Event] = [ev.RunStart(step=0, task="count")]
    for step in range(1, 7):
        text = "a" * 40 if step == 4 else EXPLOSIVE
        events += [ev.StepStart(step=step), ev.ActionTaken(step=step, tool="calc", args=str(step)),
                   ev.Observation(step=step, text=text)]
    return Document("explosive", "trace", [EventRun(events)])


@pytest.fixture(scope="module")
def large_trace(tmp_path_factory):
    """A synthetic trace of STEPS steps, every 50th observation explosive."""
    def events():
        for event in synthetic_run(STEPS):
            if isinstance(event, ev.Observation) and event.step % 50 == 0:
                event = dataclasses.replace(event, text=EXPLOSIVE)
            yield event

    path = tmp_path_factory.mktemp("large") / "run.jsonl"
    write_trace(path, [events()])
    return path


class Reads:
    """Counts the steps a continue decodes and slows each a little, so a continue over
    the file lasts long enough to be interrupted on any machine; notes any read of a
    closed file."""

    def __init__(self, document) -> None:
        self.document = document
        self.count = 0
        self.after_close = 0
        run = document.runs[0]
        original = run.record

        def record(step):
            if document.source.closed:
                self.after_close += 1
            self.count += 1
            time.sleep(0.0005)
            return original(step)

        run.record = record


def open_with_sidecar(path, spec: str):
    sidecar_path(path).write_text(json.dumps({
        "format": "agentdbg-breakpoints", "version": 1, "auto": NO_AUTO_BREAKS,
        "breakpoints": [{"kind": "filter", "spec": spec, "enabled": True}],
    }), encoding="utf-8")
    document = open_document(path)
    document.wait()
    return document


async def test_escape_cancels_a_long_continue_with_a_catastrophic_filter_and_q_quits(large_trace):
    document = open_with_sidecar(large_trace, "~obs (a+)+$ & ~step >1")
    reads = Reads(document)
    app = DebuggerApp(document)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert [bp.spec for bp in app.breakpoints] == ["~obs (a+)+$ & ~step >1"]
        await pilot.press("c")
        await wait_for(pilot, lambda: reads.count > 300, "the continue to be under way")
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.busy is None, "the continue to stop")
        assert status(app) == "continue cancelled: the cursor stays here"
        assert app.session.cursor == 1
        assert reads.count < STEPS - 1
        await press(pilot, "n")  # the app answers keys again
        assert app.session.cursor == 2
        # Quitting during a continue stops it, and the file is closed once it has stopped.
        started = reads.count
        await pilot.press("c")
        await wait_for(pilot, lambda: reads.count > started + 300, "the continue to be under way")
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running, "the app to exit")
        await asyncio.get_running_loop().shutdown_default_executor()  # as the process does on exit
    assert document.source.closed
    assert reads.after_close == 0
    assert reads.count - started < STEPS - 2  # it stopped: it did not read on to the end


async def test_the_breakpoint_manager_refuses_unsupported_regexes_and_takes_catastrophic_ones():
    app = DebuggerApp(explosive_document(), save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.breakpoints.auto.update(NO_AUTO_BREAKS)
        await press(pilot, "B")
        await type_text(pilot, "~obs (a)\\1")
        await press(pilot, "enter")
        error = str(app.screen.query_one("#bp-error").render())
        assert "~obs: invalid regex '(a)\\\\1' at column 9: backreferences (\\1) are not supported" in error
        assert len(app.breakpoints) == 0
        app.screen.query_one("#bp-spec").value = ""
        await type_text(pilot, "~obs (a+)+$")
        await press(pilot, "enter")
        assert [bp.spec for bp in app.breakpoints] == ["~obs (a+)+$"]
        assert str(app.screen.query_one("#bp-error").render()) == ""
        await press(pilot, "escape", "c")
        assert app.session.cursor == 4
        assert status(app) == "Stopped at step 4: breakpoint: ~obs (a+)+$"
        await press(pilot, "n")
        assert app.session.cursor == 5  # the step line runs the filter too, and it answers


async def test_search_with_a_catastrophic_or_unsupported_regex():
    app = DebuggerApp(explosive_document(), save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "/")
        await type_text(pilot, "(a+)+$")
        await press(pilot, "enter")
        assert app.session.cursor == 4
        assert status(app).startswith("match for '(a+)+$' at step 4")
        await press(pilot, "/")
        app.screen.query_one("Input").value = ""
        await type_text(pilot, "x(?=y)")
        await press(pilot, "enter")
        assert app.session.cursor == 4
        assert status(app) == ("no match for 'x(?=y)' (looked for literally: lookahead (?=...) "
                               "is not supported (at column 2))")
