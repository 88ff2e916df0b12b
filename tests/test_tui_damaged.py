"""Damaged and unknown files: the reader's problems are shown in the app and whatever is
valid opens; a file that cannot be a trace at all starts the app with the reason."""

from __future__ import annotations

import json
import os
import time

import pytest
from test_cli_support import release_readers
from test_tui_support import PLANS, SIZE, pane_text, press, screen_text, settle, status

from agentdbg.plans import load_plan
from agentdbg.runs import Problem
from agentdbg.trace.reader import TraceDocument
from agentdbg.trace.writer import write_trace
from agentdbg.tui.app import DebuggerApp
from agentdbg.tui.opening import open_for_app


def recorded(tmp_path, name="library_hallucinating.toml"):
    path = tmp_path / "run.jsonl"
    write_trace(path, [load_plan(PLANS / name).run().events])
    return path


def damage(tmp_path, how: str):
    path = recorded(tmp_path)
    data = path.read_bytes()
    lines = data.splitlines(keepends=True)
    step_lines = [i for i, line in enumerate(lines) if line.startswith(b'{"type":"step"')]
    middle = step_lines[2] + 1  # an event inside step 3
    if how == "truncated last line":
        path.write_bytes(data[:-25])
    elif how == "corrupt middle line":
        lines[middle] = b'{"type":"thought","step":3,"text":"cut\n'
        path.write_bytes(b"".join(lines))
    elif how == "invalid utf-8":
        lines[middle] = lines[middle].replace(b"copies", b"cop\xff\xfeies").replace(b"loan", b"lo\xffan")
        path.write_bytes(b"".join(lines))
    elif how == "huge line":
        lines[middle] = json.dumps({"type": "observation", "step": 3, "text": "x" * 9_000_000}).encode() + b"\n"
        path.write_bytes(b"".join(lines))
    elif how == "newer version":
        header = json.loads(lines[0])
        header["version"] = 99
        lines[0] = json.dumps(header, separators=(",", ":")).encode() + b"\n"
        path.write_bytes(b"".join(lines))
    elif how in ("header format 5", "header format with a NUL"):
        header = json.loads(lines[0])
        header["format"] = 5 if how == "header format 5" else "agentdbg-trace\u0000x"
        lines[0] = json.dumps(header, separators=(",", ":")).encode() + b"\n"
        path.write_bytes(b"".join(lines))
    # Damaged a while ago: a file without a writer's lock that grew in the last seconds may
    # still be being written, and its cut last line is waited for (agentdbg.trace.follow).
    old = time.time() - 60
    os.utime(path, (old, old))
    return path


async def open_app(path) -> DebuggerApp:
    document, _, error = open_for_app(str(path))
    if isinstance(document, TraceDocument):
        document.wait(10)
    return DebuggerApp(document, error=error or None, save_breakpoints=False)


@pytest.mark.parametrize("how", ["truncated last line", "corrupt middle line", "invalid utf-8",
                                 "huge line", "newer version", "header format 5", "header format with a NUL"])
async def test_a_damaged_trace_opens_what_is_valid_and_lists_the_problems(tmp_path, how):
    app = await open_app(damage(tmp_path, how))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.problems or how == "newer version" and app.session is None, how
        if app.session is not None:
            assert app.session.run.step_count >= 4
            await press(pilot, "c", "c", "c", "c")
            assert "Stopped at step" in status(app)
            await press(pilot, "p", "home", "end")
        await press(pilot, "e")
        assert app.screen.id == "log"
        shown = screen_text(app)
        assert "run.jsonl" in shown
        await press(pilot, "escape")


@pytest.mark.parametrize("how", ["empty file", "directory", "binary file", "not json"])
async def test_a_file_that_is_no_trace_starts_the_app_with_the_reason(tmp_path, how):
    path = tmp_path / "input.jsonl"
    if how == "empty file":
        path.write_bytes(b"")
    elif how == "directory":
        path.mkdir()
    elif how == "binary file":
        path.write_bytes(bytes(range(256)) * 64)
    else:
        path.write_text("hello, this is not a run\n")
    app = await open_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.session is None
        assert "Could not open the file" in pane_text(app, "scratchpad")
        assert "input.jsonl" in pane_text(app, "scratchpad")
        await press(pilot, "n", "c", "p")  # nothing to do, nothing breaks
        await press(pilot, "o")
        app.screen.query_one("#prompt-input").value = str(recorded(tmp_path))
        await press(pilot, "enter")
        assert app.session is not None and app.document.kind == "trace"
        assert app.session.cursor == 1 and "web_search" in status(app)  # step 1 is the error
        await press(pilot, "c")
        assert app.session.cursor == 5 and "final answer: 2" in status(app)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
async def test_opening_a_named_pipe_with_o_says_why_in_place_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    app = await open_app(recorded(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "o")
        app.screen.query_one("#prompt-input").value = str(fifo)
        release_readers(fifo, after=15)  # were the open to block, it ends there and fails below
        await press(pilot, "enter")
        assert "pipe.jsonl: is a named pipe (FIFO), not a regular file" in status(app)
        assert app.session is not None and app.document.kind == "trace"  # what was open stays open


@pytest.mark.parametrize("tools", [None, True, 5, [1, "a", None]])
async def test_run_start_tools_that_are_not_a_list_of_specs_open_as_no_tools(tmp_path, tools):
    path = recorded(tmp_path)
    lines = path.read_bytes().split(b"\n")
    lines[1] = json.dumps({**json.loads(lines[1]), "tools": tools}, separators=(",", ":")).encode()
    path.write_bytes(b"\n".join(lines))
    app = await open_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.session.cursor == 1 and "web_search" in status(app)  # step 1 is the error
        assert "This run declares no tools; the tools it called: ▶ web_search 1× 1✗" in pane_text(app, "tools")
        await press(pilot, "e")
        assert app.screen.id == "log"
        shown = " ".join(screen_text(app).replace("│", " ").split())
        assert "run.jsonl:2: run_start: 'tools'" in shown
        await press(pilot, "escape", "c")
        assert app.session.cursor == 5 and "final answer: 2" in status(app)


async def test_problems_found_while_drawing_a_step_are_listed_at_once(tmp_path):
    app = await open_app(damage(tmp_path, "invalid utf-8"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        # No message tells of this one: e must list what is known now.
        app.document.problems.append(Problem(str(tmp_path / "run.jsonl"), 99, "found just now"))
        await press(pilot, "e")
        assert "found just now" in " ".join(screen_text(app).replace("│", " ").split())  # (wrapped)
