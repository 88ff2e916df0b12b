"""A file that is not empty but gives no step is an error that says what the file holds,
never an empty run that passes; forcing a format on a file of another one is refused
alike by every command, with the same message."""

from __future__ import annotations

import json

import pytest
from test_import_support import IMPORT_FIXTURES, all_fixtures, fixture

from agentdbg import importers
from agentdbg.cli import main
from agentdbg.importers.found import describe
from agentdbg.tui.opening import open_for_app

CHAT_WITHOUT_ROLES = {"sessionId": "s", "projectHash": "h",
                      "messages": [{"id": "1", "type": "user", "content": "q"},
                                   {"id": "2", "type": "gemini", "content": "a"}]}
FOUND = "found keys: sessionId, projectHash, messages (2 items with id, type, content)"


@pytest.fixture
def chat(tmp_path):
    path = tmp_path / "session.json"
    path.write_text(json.dumps(CHAT_WITHOUT_ROLES), encoding="utf-8")
    return path


def test_messages_without_roles_forced_as_openai_chat_say_what_was_found(chat):
    with pytest.raises(importers.NotImportable) as caught:
        importers.convert_file(chat, "openai-chat")
    assert str(caught.value) == f"{chat}: read as openai-chat but no message had a role; {FOUND}"


@pytest.mark.parametrize("command", [["show"], ["stats"], ["check"], ["convert", "-o", "OUT"]])
def test_every_command_exits_2_with_the_same_message(command, chat, tmp_path, capsys):
    args = [a if a != "OUT" else str(tmp_path / "out.jsonl") for a in command]
    code = main([args[0], str(chat), *args[1:], "--format", "openai-chat"])
    err = capsys.readouterr().err
    assert code == 2
    assert err == f"agentdbg {args[0]}: error: {chat}: read as openai-chat but no message had a role; {FOUND}\n"
    assert not (tmp_path / "out.jsonl").exists()


def test_the_debugger_is_given_the_same_message(chat):
    document, _, error = open_for_app(str(chat), format="openai-chat")
    assert document is None and error == f"{chat}: read as openai-chat but no message had a role; {FOUND}"


def test_a_gemini_chat_forced_as_openai_chat_says_what_it_found():
    path = fixture("gemini-cli", "session.json")
    with pytest.raises(importers.NotImportable) as caught:
        importers.convert_file(path, "openai-chat")
    assert str(caught.value) == (f"{path}: read as openai-chat but no message had a role; found keys: sessionId, "
                                 "projectHash, startTime, lastUpdated, messages (8 items with id, timestamp, type, "
                                 "content), summary")


def test_a_result_beside_its_prompt_is_not_read_as_a_conversation():
    path = IMPORT_FIXTURES / "real" / "vercel-ai-sdk" / "sample_vercel_ai_session.json"
    with pytest.raises(importers.NotImportable, match=r"read as openai-chat but 'steps' beside 'messages' "
                                                      r"holds records it does not read; found keys: text, "
                                                      r"finishReason, usage, steps \(3 items with stepType"):
        importers.convert_file(path, "openai-chat")


@pytest.mark.parametrize(("name", "text", "why"), [
    ("openai-chat", '{"messages": [{"type": "user"}, {"role": "user", "content": "q"}]}',
     "1 of 2 messages had no role"),
    ("openai-chat", '{"messages": [{"role": "user", "content": "q"}], "steps": [{"text": "a"}]}',
     "'steps' beside 'messages' holds records it does not read"),
    ("anthropic-messages", '[{"type": "user", "content": "q"}]', "no message had a role"),
    ("otel-genai", '{"resourceSpans": []}', "no runs in it"),
    ("codex-rollout", '{"type": "user", "message": {"role": "user"}}\n{"type": "user"}',
     "no prompt and no model turn in it"),
    ("claude-code", '{"timestamp": "t", "type": "session_meta", "payload": {}}\n{"type": "event_msg"}',
     "no prompt and no assistant message in it"),
    ("gemini-cli", '{"sessionId": "s", "messages": [{"role": "user", "content": "q"}]}',
     "no message had a type of user, gemini, info, warning or error"),
    ("vercel-ai-sdk", '{"messages": [{"role": "user", "content": "q"}]}',
     "no result (an object with steps, a finishReason or tool calls) in it"),
    ("reflexion", "BEGIN TRIAL 1\nTrial summary: Correct: 0\n------------- BEGIN CORRECT AGENTS -------------\n",
     "no agent (a Question: and its Thought / Action / Observation lines) in it"),
    ("webshop", "3 0.5 0.3333333333333333 0.0\n-------------\n",
     "no 'Action:' lines (reset, search[...], click[...], think[...]) in it"),
    ("alfworld", '{"react_put_0": "You are in the middle of a room."}',
     "no episode ('Your task is to:' and '> command' lines) in it"),
])
def test_each_format_says_what_it_did_not_find(name, text, why, tmp_path):
    path = tmp_path / "input.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(importers.NotImportable) as caught:
        importers.convert_file(path, name)
    assert f"read as {name} but {why}; found " in str(caught.value)


def test_empty_conversations_are_still_runs():
    # The place a run's steps would be is there and empty: that is what the file holds.
    for path in [fixture("openai-chat", "edge_empty.json"), fixture("anthropic-messages", "edge_empty.json"),
                 fixture("gemini-cli", "edge_empty.json"), fixture("vercel-ai-sdk", "edge_empty.json"),
                 fixture("claude-code", "edge_prompt_only.jsonl"), fixture("codex-rollout", "edge_prompt_only.jsonl"),
                 fixture("swe-agent", "edge_empty.traj"), fixture("otel-genai", "edge_empty_agent.json")]:
        _, result = importers.convert_file(path)
        assert len(result.runs) == 1 and result.step_count == 0, path


def test_a_prompt_with_no_reply_is_an_empty_run(tmp_path):
    path = tmp_path / "prompt.json"
    path.write_text('[{"role": "system", "content": "s"}, {"role": "user", "content": "q"}]', encoding="utf-8")
    _, result = importers.convert_file(path)
    assert len(result.runs) == 1 and result.step_count == 0


def test_a_blank_file_forced_to_a_format_is_not_reported_as_holding_something(tmp_path):
    path = tmp_path / "blank.jsonl"
    path.write_text("\n\n", encoding="utf-8")
    _, result = importers.convert_file(path, "claude-code")  # nothing to misread
    assert result.runs == []


@pytest.mark.parametrize("path", all_fixtures(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_forcing_any_format_on_any_fixture_reads_steps_or_says_why(path):
    for name in importers.BY_NAME:
        try:
            _, result = importers.convert_file(path, name)
        except importers.NotImportable as exc:
            assert str(path) in str(exc)
            continue
        assert result.step_count or result.holds_a_run(), (path, name)


def test_describe():
    assert describe('{"a": 1, "b": [{"x": 1, "y": 2}, {"x": 3}]}') == "keys: a, b (2 items with x)"
    assert describe("[]") == "an empty JSON array"
    assert describe('[1, "two"]') == "a JSON array of 2 items: int, str"
    lines = "\n".join(json.dumps(v) for v in [{"type": "a"}, {"type": "a"}, {"k": 1}, [1]])
    assert describe(lines) == "JSON Lines, 4 records: a ×2, {k} ×1, a JSON list ×1"
    assert describe("Thought: hi\x1b[31m\nmore") == "2 lines of text, the first: 'Thought: hi'"  # escapes go
