"""The recorder examples in README.md and docs/recorder.md run as written (the model
replaced by a model API on 127.0.0.1, or by the stub the example names), so they cannot rot."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from loopback_models import ScriptedModelServer, openai_reply

from agentdbg.trace.reader import open_trace

ROOT = Path(__file__).resolve().parents[1]


def python_block(path: Path, heading: str, number: int = 1) -> str:
    """The ``number``-th python block of the section under ``heading``."""
    text = path.read_text()
    section = text[text.index(heading):]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    return blocks[number - 1]


def recorded(path: Path):
    document = open_trace(path)
    document.wait()
    (run,) = document.runs
    return document, run


def test_the_readme_example_records_an_openai_loop(tmp_path, monkeypatch):
    pytest.importorskip("openai", reason="the openai extra is not installed")
    code = python_block(ROOT / "README.md", "## Record your own agent")
    assert len(code.splitlines()) <= 25 and code.count("OpenAI()") == 1
    replies = [openai_reply("Let me look it up.", [("call_1", "search", '{"title": "Il Gattopardo"}')]),
               openai_reply(None, [("call_2", "search", '{"title": "Il Gatopardo"}')]),
               openai_reply("There are 5 copies.")]
    monkeypatch.chdir(tmp_path)
    with ScriptedModelServer(replies) as server:
        exec(compile(code.replace("OpenAI()", f"OpenAI(api_key='test', base_url='{server.url}/v1', max_retries=0)"),
                     "README.md", "exec"), {"__name__": "readme"})
    assert len(server.requests) == 3
    document, run = recorded(tmp_path / "run.jsonl")
    assert run.info.task == "How many copies of Il Gattopardo?"
    assert [run.record(n).tool for n in (1, 2)] == ["search", "search"]
    assert run.record(1).observation == "5" and run.record(1).thought == "Let me look it up."
    assert run.record(2).error_kind == "exception" and run.record(2).observation == "ERROR: KeyError: 'Il Gatopardo'"
    assert run.end.outcome == "answered" and run.end.answer == "There are 5 copies."
    assert run.state_at(3).tokens == [180, None]
    document.close()


def test_the_guide_example_records_a_plain_loop(tmp_path, monkeypatch):
    code = python_block(ROOT / "docs" / "recorder.md", "## A loop of your own")
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "docs/recorder.md", "exec"), {"__name__": "guide"})
    document, run = recorded(tmp_path / "run.jsonl")
    assert run.step_count == 4
    assert run.record(2).error_kind == "exception" and run.record(3).parse_error
    assert run.end.outcome == "answered" and run.end.answer == "5"
    document.close()


def test_the_guide_example_of_dangerous_tools_refunds_each_order_once(tmp_path, monkeypatch, capsys):
    code = python_block(ROOT / "docs" / "recorder.md", "## Dangerous tools and operation keys")
    monkeypatch.chdir(tmp_path)
    for _ in range(2):  # the second run is appended to the trace: nothing is refunded again
        exec(compile(code, "docs/recorder.md", "exec"), {"__name__": "guide"})
    assert (tmp_path / "refunds.txt").read_text().splitlines() == ["A-1 20.0", "B-2 50.0"]
    assert capsys.readouterr().out.splitlines() == ["ERROR: denied by approver review: over 100 needs a manager"] * 2
    document = open_trace(tmp_path / "run.jsonl")
    document.wait()
    first, second = document.runs
    assert [first.record(n).decision for n in (1, 2, 3, 4)] == ["approved", None, "edited", "denied"]
    assert first.record(2).replayed == {"step": 1}
    assert [second.record(n).replayed for n in (1, 2, 3)] == [{"run": 1, "step": 1}] * 2 + [{"run": 1, "step": 3}]
    assert second.record(4).decision == "denied"  # never ran, so never recorded: asked again
    document.close()
