"""A hostile trace: markup and terminal control sequences in every field are shown
literally or stripped, never interpreted."""

from __future__ import annotations

import re
from pathlib import Path

from hostile_inputs import FORMATS, NEVER_ON_A_TERMINAL, write_input
from hostile_inputs import HOSTILE as HOSTILE_TEXT
from test_tui_support import SIZE, press, settle, type_text
from textual.widgets import Input

from agentdbg.runs import Document
from agentdbg.tui.app import DebuggerApp
from agentdbg.tui.safe import one_line

HOSTILE = Path(__file__).parent / "fixtures" / "hostile" / "hostile.jsonl"
FORBIDDEN = ("\x1b", "\x07", "\x9b", "\x9d", "\r", "\x00")


def hostile_document() -> Document:
    from agentdbg.trace import reader

    document = reader.open_trace(HOSTILE)
    reader_wait(document)
    return document


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


# -- what draws nothing, and lone surrogates: shown visibly in every pane and dialog ----------

UNSAFE_ON_SCREEN = re.compile(f"\x1b|{NEVER_ON_A_TERMINAL.pattern}|[\ud800-\udfff]")


def assert_nothing_unsafe(app, where: str) -> str:
    strips = painted(app)
    text = "\n".join(strip.text for strip in strips)
    found = UNSAFE_ON_SCREEN.search(text)
    assert found is None, f"{where}: {found.group()!r} painted near {text[max(found.start() - 30, 0):found.end() + 30]!r}"
    for strip in strips:
        for segment in strip:
            assert segment.style is None or not segment.style.link, where
    for field in app.screen.query(Input):  # an input shows whatever it holds, scrolled anywhere
        assert UNSAFE_ON_SCREEN.search(field.value) is None, f"{where}: {field.value!r} in an input"
    return text


async def step_through(app, pilot, steps: int = 4) -> str:
    seen = ""
    await settle(pilot)
    for _ in range(steps):
        seen += assert_nothing_unsafe(app, f"step {app.session.cursor if app.session else '-'}")
        await press(pilot, "n")
    await press(pilot, "v")  # the prompt the policy saw
    seen += assert_nothing_unsafe(app, "prompt view")
    await press(pilot, "v")
    return seen


async def test_bidi_zero_width_and_surrogates_are_shown_in_every_pane_and_dialog(tmp_path):
    from agentdbg.documents import open_document

    folder = tmp_path / "runs\x1b]2;PWNED\x07\u202e"  # its name is shown too (problems, open dialog)
    folder.mkdir()
    document = open_document(write_input("trace", folder))
    reader_wait(document)
    app = DebuggerApp(document, save_breakpoints=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        seen = await step_through(app, pilot)
        assert "<U+202E>evil<U+202C>" in seen and "<U+D800>" in seen and "z<U+200B>w" in seen
        assert "<U+E0041>" in seen  # hidden tag text is shown
        await press(pilot, "f", "end", "C", "home", "c")
        seen = assert_nothing_unsafe(app, "continue")
        await press(pilot, "home", "B")
        assert_nothing_unsafe(app, "breakpoints")
        app.screen.query_one("#bp-kind").value = "tool"  # offers step 1's tool, as shown
        await settle(pilot)
        assert_nothing_unsafe(app, "breakpoints: tool")
        app.screen.query_one("#bp-spec").focus()
        await press(pilot, "enter")
        assert_nothing_unsafe(app, "breakpoints: tool added")
        assert [(bp.kind, bp.spec) for bp in app.breakpoints] == [("tool", one_line(HOSTILE_TEXT))]
        for key, where in (("e", "problems"), ("r", "runs"), ("o", "open"), ("w", "write")):
            await press(pilot, "escape", "escape", key)
            assert_nothing_unsafe(app, where)
        await press(pilot, "escape", "escape", "slash")
        await type_text(pilot, "evil")
        await press(pilot, "enter")
        assert_nothing_unsafe(app, "search result")
        app.breakpoints.auto = dict.fromkeys(app.breakpoints.auto, False)
        await press(pilot, "escape", "home", "c")  # on to the next step with that tool
        assert app.session.cursor == 3 and "breakpoint: tool" in app.query_one("#status").message
        assert_nothing_unsafe(app, "reverse-continue")
        assert app.is_running


async def test_every_format_opens_harmlessly(tmp_path):
    from agentdbg.tui.opening import open_for_app

    app = DebuggerApp(None, save_breakpoints=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        for kind in FORMATS:
            if kind == "trace":
                continue  # every dialog is visited on it above
            document, _, error = open_for_app(str(write_input(kind, tmp_path)))
            assert document is not None, error
            reader_wait(document)
            app.set_document(document)
            seen = await step_through(app, pilot, steps=3)
            assert "<U+202E>" in seen, kind
            await press(pilot, "e")
            assert_nothing_unsafe(app, f"problems of {kind}")
            await press(pilot, "escape")
        assert app.is_running
