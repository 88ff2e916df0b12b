"""A hostile trace: markup and terminal control sequences in every field are shown
literally or stripped, never interpreted."""

from __future__ import annotations

import json
from pathlib import Path

from test_tui_support import SIZE, press, settle

from agentdbg.engine.events import event_from_dict
from agentdbg.runs import Document, EventRun
from agentdbg.tui.app import DebuggerApp

HOSTILE = Path(__file__).parent / "fixtures" / "hostile" / "hostile.jsonl"
FORBIDDEN = ("\x1b", "\x07", "\x9b", "\x9d", "\r", "\x00")


def hostile_document() -> Document:
    from agentdbg.trace import reader

    if hasattr(reader, "open_trace"):
        document = reader.open_trace(HOSTILE)
        reader_wait(document)
        return document
    lines = HOSTILE.read_text(encoding="utf-8").splitlines()[1:]
    return Document(str(HOSTILE), "trace", [EventRun([event_from_dict(json.loads(line)) for line in lines])])


def reader_wait(document: Document) -> None:
    import time

    deadline = time.monotonic() + 10
    while not all(run.complete for run in document.runs) and time.monotonic() < deadline:
        time.sleep(0.01)


def painted(app) -> list:
    return app.screen._compositor.render_strips()


def assert_safe(app) -> str:
    strips = painted(app)
    text = "\n".join(strip.text for strip in strips)
    for bad in FORBIDDEN:
        assert bad not in text, f"{bad!r} reached the screen"
    for strip in strips:
        for segment in strip:
            style = segment.style
            assert style is None or not style.link, f"a link was made from {segment.text!r}"
            assert style is None or not style.blink
    return text


async def test_hostile_trace_is_shown_literally_and_without_control_sequences():
    app = DebuggerApp(hostile_document(), save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        seen = ""
        for _ in range(4):
            seen += assert_safe(app)
            panes = " ".join(" ".join(app.query_one(f"#{pane}").line_texts)
                             for pane in ("scratchpad", "tools", "memory", "guards"))
            for bad in FORBIDDEN:
                assert bad not in panes
            await press(pilot, "n")
        assert "[red]red?[/red]" in seen
        assert "[link=https://evil.example]" in seen
        assert "[bold]bold?[/bold]" in seen
        # A breakpoint reason and the status line are sanitised too.
        await press(pilot, "home", "c")
        assert_safe(app)
        assert not any(bad in app.query_one("#status").message for bad in FORBIDDEN)
        scratch = " ".join(app.query_one("#scratchpad").line_texts)
        assert "RED" in scratch and "click me" in scratch  # the text stays, the sequences go
        svg = app.export_screenshot()
        assert 'href="https://evil' not in svg
        # Dialogs that show run text: the run switcher, problems, help, breakpoints.
        await press(pilot, "B")
        assert_safe(app)
        await press(pilot, "escape", "question_mark")
        assert_safe(app)


async def test_problems_from_a_file_are_notified_literally():
    from agentdbg.runs import Problem

    document = hostile_document()
    document.problems.append(Problem(str(HOSTILE), 7, "bad [link=https://evil.example]x[/link] [red]y[/red] \x1b[2J"))
    app = DebuggerApp(document, save_breakpoints=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        text = assert_safe(app)
        assert "Problems reading the file" in text
        assert "[red]y[/red]" in text  # the notification shows the problem as written
        await press(pilot, "e")
        text = assert_safe(app)
        assert "[link=https://evil.example]x[/link]" in text
