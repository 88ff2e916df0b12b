"""Public files from Codex CLI, Claude Code, Gemini CLI and the Vercel AI SDK (and agx's
samples of each), committed under tests/fixtures/import/real/ with their SOURCE.md:
detected, converted as the file says, and read back from a converted trace unchanged."""

from __future__ import annotations

import json

import pytest
from test_import_support import IMPORT_FIXTURES, convert, counters, markers, tools_called
from test_tui_support import SIZE, pane_text, press, settle

from agentdbg import importers
from agentdbg.cli import main
from agentdbg.documents import open_document
from agentdbg.trace.reader import open_trace
from agentdbg.tui.app import DebuggerApp

REAL = IMPORT_FIXTURES / "real"
FORMAT_OF = {"codex-rollout": "codex-rollout", "claude-code": "claude-code", "gemini-cli": "gemini-cli",
             "vercel-ai-sdk": "vercel-ai-sdk", "openai-chat": "openai-chat"}
FILES = sorted(p for folder in FORMAT_OF for p in (REAL / folder).glob("*.json*"))


def _lines(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_detected_by_its_own_format_only(path):
    accepted = [name for name, ok, _ in importers.sniff_all(path.read_bytes()[: importers.HEAD_BYTES]) if ok]
    assert accepted == [FORMAT_OF[path.parent.name]]


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_converted_and_read_back_unchanged(path, tmp_path, capsys):
    _, result, runs = convert(path)
    assert result.step_count > 0
    out = tmp_path / "run.jsonl"
    assert main(["convert", str(path), "-o", str(out)]) == 0, capsys.readouterr().err
    document = open_trace(out, background=False)
    try:
        assert [r.events() for r in document.runs] == result.runs
    finally:
        document.close()


def test_claude_code_session_usage_once_per_message_id():
    path = REAL / "claude-code" / "session-v2.1.7-simple-turn-2.first30.jsonl"
    _, result, runs = convert(path)
    # The file's own figures: per assistant message id, the usage of its line with the
    # most output tokens (the count grows line by line), summed once.
    best: dict = {}
    for entry in _lines(path):
        if entry.get("type") == "assistant":
            usage = entry["message"]["usage"]
            known = best.get(entry["message"]["id"])
            if known is None or usage["output_tokens"] >= known["output_tokens"]:
                best[entry["message"]["id"]] = usage
    keys = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    expected = sum(u.get(k, 0) for u in best.values() for k in keys)
    assert sum(counters(run, "tokens")[-1] for run in runs) == expected == 93417
    # "show tools" is one message over two lines with four summary entries between them.
    assert [r.info.task for r in runs] == ["show tools", "hi", "expore current repo and provide highlevel information"]
    assert [r.step_count for r in runs] == [1, 1, 1]
    assert runs[0].records[0].thought.startswith('The user is asking me to "show tools".')
    assert runs[0].end.answer.startswith("# Available Tools")
    assert [r.end.outcome for r in runs] == ["answered", "answered", "unfinished"]
    assert tools_called(runs[2]) == ["Task"]  # cut while its sub-agent ran


def test_claude_code_three_prompts_three_runs():
    _, result, runs = convert(REAL / "claude-code" / "session-v2.0.64-4c2ddfdc.jsonl")
    assert [r.info.task for r in runs] == ["create hello.py, md and js", "update py with one liner comment", "delete js"]
    assert [tools_called(r) for r in runs] == [["Write", "Write", "Write", None], ["Read", "Edit", None], ["Bash", None]]
    assert all(r.end.outcome == "answered" for r in runs)
    assert runs[2].end.answer == "Done! I've deleted hello.js."
    assert [counters(r, "tokens")[-1] for r in runs] == [71212, 108389, 73037]
    assert result.problems == []


def test_claude_code_agx_sample():
    _, _, runs = convert(REAL / "claude-code" / "sample_session.jsonl")
    [run] = runs
    assert tools_called(run) == ["Write", "Bash", "Edit", None]
    # input + output + cache creation + cache reads of each message: 500+120+1500, 100+40+2100, ...
    assert [r.step_tokens for r in run.records] == [2120, 2240, 2450, 2585]


def test_codex_rollout_first_turn():
    path = REAL / "codex-rollout" / "rollout-2026-05-11T11-26-55-019e1625.first19.jsonl"
    _, result, runs = convert(path)
    [run] = runs
    lines = _lines(path)
    counts = [e["payload"]["info"] for e in lines if e["type"] == "event_msg" and e["payload"]["type"] == "token_count"]
    assert counters(run, "tokens")[-1] == counts[-1]["total_token_usage"]["total_tokens"] == 58280
    assert [r.step_tokens for r in run.records] == [c["last_token_usage"]["total_tokens"] for c in counts]
    assert run.info.task == "show tools" and run.info.policy == "recorded: gpt-5.5"
    assert tools_called(run) == ["exec_command", "write_stdin", None]
    complete = next(e["payload"] for e in lines if e["payload"].get("type") == "task_complete")
    assert run.end.outcome == "answered" and run.end.answer == complete["last_agent_message"]
    assert result.raw_count == 4  # session_meta, developer message, AGENTS.md, turn_context


def test_codex_desktop_rollout_and_agx_sample():
    _, _, runs = convert(REAL / "codex-rollout" / "rollout-2026-05-11T13-28-45-019e1695.first5.jsonl")
    [run] = runs
    assert run.info.task.startswith("\n# Files mentioned by the user:")  # the prompt event only
    assert tools_called(run) == ["exec_command"] and run.end.outcome == "unfinished"
    _, _, runs = convert(REAL / "codex-rollout" / "sample_codex_session.jsonl")
    [run] = runs
    assert tools_called(run) == ["apply_patch", "exec_command", None]
    assert run.records[0].thought == "I'll create fib.py with an iterative implementation."


def test_gemini_cli_session():
    path = REAL / "gemini-cli" / "session-2026-01-16T11-01-file-ops-37b7abef.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    _, result, runs = convert(path)
    prompts = [m["content"] for m in data["messages"] if m["type"] == "user"]
    assert [r.info.task for r in runs] == prompts
    calls = sum(len(m.get("toolCalls") or []) for m in data["messages"])
    answers = sum(1 for m in data["messages"] if m["type"] == "gemini" and not m.get("toolCalls"))
    assert sum(r.step_count for r in runs) == calls + answers == 19
    assert sum(counters(r, "tokens")[-1] for r in runs) == sum(
        m["tokens"]["total"] for m in data["messages"] if m["type"] == "gemini") == 91773
    assert all(r.end.outcome == "answered" for r in runs)
    assert tools_called(runs[2]) == ["write_file", None]
    assert runs[2].records[0].args == {"content": "# Hello World", "file_path": "hello.md"}
    assert result.problems == [] and result.raw_count == 0


def test_vercel_results_and_agx_samples():
    _, _, runs = convert(REAL / "vercel-ai-sdk" / "ai-v5.generateText.json")
    assert markers(runs[0]) == ["", "error", "final"]
    assert runs[0].records[1].observation == "loans service unavailable"
    _, _, runs = convert(REAL / "vercel-ai-sdk" / "ai-v5.generateText.getters.json")
    assert [r.step_tokens for r in runs[0].records] == [66, 92, 129]  # content parts, not counted twice
    _, _, runs = convert(REAL / "vercel-ai-sdk" / "sample_vercel_ai_session.json")
    assert runs[0].info.task == "List files in the current directory and tell me what's there."
    assert tools_called(runs[0]) == ["list_dir", None]
    _, _, runs = convert(REAL / "openai-chat" / "sample_generic_session.json")
    assert tools_called(runs[0]) == ["write_file", "run_command", None]


async def test_a_real_session_opens_in_the_debugger_one_run_per_prompt():
    document = open_document(REAL / "claude-code" / "session-v2.0.64-4c2ddfdc.jsonl")
    app = DebuggerApp(document, save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "end")
        header = app.query_one("#header").text
        assert "step 4/4" in header and "outcome: answered" in header and "(run 1/3)" in header
        assert "Write" in pane_text(app, "tools")
        await press(pilot, "r", "down", "down", "enter")
        await press(pilot, "end")
        header = app.query_one("#header").text
        assert "(run 3/3)" in header and "step 2/2" in header
        assert "Bash" in pane_text(app, "tools")
