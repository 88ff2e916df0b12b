"""A trace recorded from a user's own loop opens everywhere a trace opens: show, stats and
the debugger."""

from __future__ import annotations

from test_tui_support import SIZE, pane_text, press, settle, status

import agentdbg
from agentdbg.cli import main
from agentdbg.documents import open_document
from agentdbg.tui.app import DebuggerApp


def search(query: str) -> str:
    """Search the catalogue."""
    return {"gattopardo": "5 copies"}[query]


def record_run(path):
    with agentdbg.record(path, task="How many copies of Il Gattopardo?", tools=[search], name="my-agent",
                         repeat="any") as rec:
        rec.call("web_search", {"q": "gattopardo"}, thought="I search the web.", tokens=40)
        rec.call("search", {"query": "gattopardo"}, thought="The catalogue, then.", tokens=(50, 10))
        rec.answer("5", thought="I have it.", tokens=30)
    return path


def test_show_and_stats_read_the_recorded_run(tmp_path, capsys):
    path = record_run(tmp_path / "run.jsonl")
    assert main(["show", str(path)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "my-agent" in out and "I search the web." in out and "tool 'web_search' does not exist" in out
    assert "answered" in out
    assert main(["stats", "--json", str(path)]) == 0
    import json

    (run,) = json.loads(capsys.readouterr().out)["runs"]
    assert (run["steps"], run["errors"], run["answer"], run["outcome"]) == (3, 1, "5", "answered")
    assert run["tokens"] == {"total": 130, "budget": None}


async def test_the_debugger_opens_the_recorded_run_and_breaks_on_its_error(tmp_path):
    path = record_run(tmp_path / "run.jsonl")
    app = DebuggerApp(open_document(path), save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "Question: How many copies of Il Gattopardo?" in pane_text(app, "scratchpad")
        # a trace opens at its first break: the invented tool
        assert app.session.cursor == 1
        assert "tool error" in status(app) and "web_search" in status(app)
        assert "web_search (unknown tool)" in pane_text(app, "tools")
        await press(pilot, "c")
        assert app.session.cursor == 3 and "final answer: 5" in status(app)
        assert "search(query: str)" in pane_text(app, "tools")
        assert "tokens 130" in pane_text(app, "guards")
