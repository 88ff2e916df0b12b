"""Helpers for the debugger's pilot tests (no tests here)."""

from __future__ import annotations

import shutil
from pathlib import Path

from agentdbg.documents import open_document, run_plan_to_end
from agentdbg.plans import load_plan
from agentdbg.runs import Document, EventRun
from agentdbg.tui.app import DebuggerApp
from agentdbg.tui.opening import open_demo

ROOT = Path(__file__).resolve().parents[1]
PLANS = ROOT / "sample_plans"
SIZE = (120, 40)


async def settle(pilot) -> None:
    """Let workers finish and the screen catch up."""
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def wait_for(pilot, condition, what: str) -> None:
    """Pause until ``condition()`` holds (without waiting for the workers, as ``settle`` does)."""
    for _ in range(2000):
        if condition():
            return
        await pilot.pause(0.01)
    raise AssertionError(f"never happened: {what}")


async def search_for(pilot, text: str, settled: bool = True) -> None:
    """``/``, the text (replacing what the dialog held), Enter; with ``settled``, every
    worker done (the search and the count behind it)."""
    await pilot.press("slash")
    await wait_for(pilot, lambda: pilot.app.screen.id == "search", "the search dialog")
    await pilot.press("ctrl+u")
    pilot.app.screen.query_one("Input").insert_text_at_cursor(text)
    await pilot.press("enter")
    if settled:
        await settle(pilot)


async def press(pilot, *keys: str) -> None:
    for key in keys:
        await pilot.press(key)
        await settle(pilot)


async def type_text(pilot, text: str) -> None:
    for ch in text:
        await pilot.press(ch)


def keys(*pressed: str, then=None):
    """A snapshot's ``run_before``: settle, press each key (``"type:TEXT"`` types TEXT), settle,
    then ``then(app)`` (e.g. to steady a blinking cursor)."""
    async def run_before(pilot) -> None:
        await settle(pilot)
        for key in pressed:
            if key.startswith("type:"):
                await type_text(pilot, key[5:])
            else:
                await press(pilot, key)
        await settle(pilot)
        if then is not None:
            then(pilot.app)

    return run_before


def plan_copy(tmp_path: Path, name: str) -> Path:
    """A sample plan copied to tmp (breakpoint files are saved beside what is opened)."""
    target = tmp_path / name
    shutil.copy(PLANS / name, target)
    return target


def live_app(tmp_path: Path, name: str = "library_hallucinating.toml", **kwargs) -> DebuggerApp:
    return DebuggerApp(open_document(plan_copy(tmp_path, name)), **kwargs)


def demo_app() -> DebuggerApp:
    return DebuggerApp(open_demo(), save_breakpoints=False)


def recorded_document(name: str = "library_hallucinating.toml") -> Document:
    plan = load_plan(PLANS / name)
    return run_plan_to_end(plan, str(PLANS / name))


def event_document(*names: str) -> Document:
    """Several plans run to the end, as the runs of one document (a multi-run file)."""
    runs = []
    for name in names:
        plan = load_plan(PLANS / name)
        runs.append(EventRun(plan.run().events, plan.name))
    return Document("several runs", "trace", runs)


def status(app) -> str:
    return app.query_one("#status").message


def pane_text(app, pane: str) -> str:
    """A pane's lines joined, whitespace collapsed (wrapping does not split phrases)."""
    return " ".join(" ".join(app.query_one(f"#{pane}").line_texts).split())


def screen_text(app) -> str:
    """What the terminal shows, as plain text."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


def deferred_index(monkeypatch) -> None:
    """Traces index only their first 4 KiB on opening; the rest only once someone waits for it."""
    from agentdbg.trace import index as trace_index
    from agentdbg.trace import reader

    pending: list = []
    start_thread, wait = reader.TraceIndex.start_thread, reader.TraceIndex.wait

    def start_when_waited_for(index, timeout=None):
        while pending:
            start_thread(pending.pop())
        return wait(index, timeout)

    monkeypatch.setattr(trace_index, "FIRST_CHUNK_BYTES", 4096)
    monkeypatch.setattr(reader.TraceIndex, "start_thread", lambda index: pending.append(index))
    monkeypatch.setattr(reader.TraceIndex, "wait", start_when_waited_for)

