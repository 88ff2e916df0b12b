"""Claude Code sessions, from hand-written fixtures."""

from __future__ import annotations

import json

from test_import_support import convert, counters, fixture, markers, problems_text, tools_called

from agentdbg import importers
from agentdbg.importers import claude_code
from agentdbg.state import group_run


def test_a_session_is_one_run_per_prompt_and_one_per_sidechain():
    name, result, runs = convert(fixture("claude-code", "session.jsonl"))
    assert name == "claude-code"
    assert [r.info.name for r in runs] == ["7d1c2b3a turn 1", "7d1c2b3a turn 2", "7d1c2b3a sidechain 00000008"]
    assert [r.info.task for r in runs] == ["How many copies of Il Gattopardo can be borrowed?",
                                           "And how many copies of Se questo è un uomo?",
                                           "How many copies of Il Gattopardo are on loan?"]
    assert runs[0].info.policy == "recorded: claude-sonnet-4-5-20250929"
    assert [r.end.outcome for r in runs] == ["answered", "interrupted", "answered"]
    assert runs[0].end.answer == "2 copies can be borrowed."
    assert runs[2].end.answer == "3 copies are on loan."
    assert runs[1].end.message == "[Request interrupted by user for tool use]"
    # Kept raw: 2 file-history snapshots, the progress entry, the stop-hook summary,
    # the interruption's text and the title (summary).
    assert result.raw_count == 6 and result.problems == []


def test_one_message_over_three_lines_is_one_turn_with_its_usage_once():
    _, _, runs = convert(fixture("claude-code", "session.jsonl"))
    run = runs[0]
    assert tools_called(run) == ["catalog", "Task", "Read", None]
    # msg_01: a thinking line, a progress entry, a text line, the tool_use line.
    assert run.records[0].thought == ("I need the copies owned and the copies on loan.\n"
                                      "I look the title up in the catalogue.")
    assert run.records[0].args == {"title": "Il Gattopardo"}
    # Usage once per message id, from its last line: input + cache reads + output.
    assert [r.step_tokens for r in run.records] == [100 + 50 + 40, 160 + 140 + 30, 200 + 180 + 25, 230 + 200 + 12]
    assert counters(run, "tokens")[-1] == 1367
    assert [raw.note for raw in run.records[1].raw] == ["progress: hook_progress"]


def test_results_errors_and_the_final_answer():
    _, _, runs = convert(fixture("claude-code", "session.jsonl"))
    run = runs[0]
    assert run.records[0].observation == "5"
    assert run.records[1].observation == "3 copies are on loan."  # the sub-agent's reply
    assert run.records[2].observation == "<tool_use_error>File does not exist.</tool_use_error>"
    assert markers(run) == ["", "", "error", "final"]
    # The final message's thinking is its thought, never part of the answer.
    assert run.records[3].thought == "5 owned, 3 on loan, no holds file."
    assert run.records[3].answer == "2 copies can be borrowed."
    interrupted = runs[1]
    assert interrupted.records[0].observation_error
    assert tools_called(runs[2]) == ["loans", None]


def test_edges():
    _, result, runs = convert(fixture("claude-code", "edges.jsonl"))
    [run] = runs
    assert run.info.task == "Tidy the workspace."  # the command and caveat lines are not prompts
    assert tools_called(run) == [None, "Bash", "Bash", "Bash"]
    assert "not valid JSON" in run.records[0].parse_error
    assert run.records[0].observation == "InputValidationError"
    assert [r.observation for r in run.records[1:]] == ["a.txt b.txt", "", None]
    # Claude Code's own API-error message ends the run in an error.
    assert run.end.outcome == "error" and run.end.message.startswith("API Error: 529")
    text = problems_text(result)
    assert ":7: not valid JSON" in text
    assert "'toolu_never', which no call in the run has" in text
    assert "'toolu_dup' is used by more than one call" in text
    notes = [raw.note for record in run.records for raw in record.raw]
    assert any(note.startswith("injected text: <command-name>/model") for note in notes)
    assert any(note.startswith("meta: Caveat:") for note in notes)
    assert any(note.startswith("Claude Code's own message: API Error") for note in notes)
    assert result.raw_count == 5


def test_a_model_answer_after_an_api_error_clears_it():
    lines = [{"type": "user", "sessionId": "s", "message": {"role": "user", "content": "q"}},
             {"type": "assistant", "sessionId": "s", "isApiErrorMessage": True,
              "message": {"id": "m1", "role": "assistant", "model": "<synthetic>",
                          "content": [{"type": "text", "text": "API Error: overloaded"}]}},
             {"type": "assistant", "sessionId": "s",
              "message": {"id": "m2", "role": "assistant", "model": "claude", "content": [{"type": "text", "text": "a"}]}}]
    result = claude_code.convert("\n".join(json.dumps(line) for line in lines))
    run = group_run(result.runs[0])
    assert run.end.outcome == "answered" and run.end.answer == "a"


def test_a_prompt_alone_is_an_empty_run():
    _, _, runs = convert(fixture("claude-code", "edge_prompt_only.jsonl"))
    assert runs[0].info.task == "Which shelf holds Italian novels?"
    assert runs[0].step_count == 0 and runs[0].end.outcome == "empty"


def test_non_ascii_and_hostile_text_is_kept_verbatim():
    _, _, runs = convert(fixture("claude-code", "hostile_unicode.jsonl"))
    run = runs[0]
    assert run.info.task == "Trova «Il Gattopardo» 📚 \u202eevil\u202c [bold]now[/bold]"
    assert run.records[0].tool == "[red]catalog[/red]"
    assert run.records[0].thought == "\x1b]52;c;ZXZpbA==\x07 copy?"
    assert run.records[0].observation == "\x1b[2J\x1b[H cleared 北京 ✓"
    assert run.end.answer == "Risposta: \x1b[1A\x1b[2K due copie — مرحبا"


def test_forced_as_anthropic_messages_the_split_message_is_counted_once_too():
    _, _, runs = convert(fixture("claude-code", "session.jsonl"), "anthropic-messages")
    # anthropic-messages reads the file as one conversation; the lines of msg_01 are one
    # turn even with the progress entry between them.
    assert runs[0].records[0].step_tokens == 190


def test_sniff():
    entry = '{"type": "user", "sessionId": "s", "message": {"role": "user", "content": "x"}}\n'
    assert claude_code.sniff(entry)[0]
    ok, why = claude_code.sniff('{"type": "user", "uuid": "u", "message": {"role": "user", "content": "x"}}\n')
    assert not ok and "session keys" in why  # a plain transcript: anthropic-messages reads it
    assert [name for name, ok, _ in importers.sniff_all(entry) if ok] == ["claude-code"]
    assert not claude_code.sniff('[{"role": "user", "content": "x"}]')[0]


def test_a_line_separator_inside_a_record_does_not_split_it(tmp_path):
    """JavaScript writes U+2028, U+2029 and form feeds raw inside JSON strings: only a
    newline ends a JSON Lines record."""
    import json as _json

    from agentdbg import importers

    lines = [
        {"type": "user", "uuid": "u1", "sessionId": "s", "message": {"role": "user", "content": "count\u2028the\u2029copies\x0c"}},
        {"type": "assistant", "uuid": "a1", "sessionId": "s",
         "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "Two.\u2028Done."}]}},
    ]
    path = tmp_path / "session.jsonl"
    path.write_text("".join(_json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    assert "\u2028" in path.read_text(encoding="utf-8")
    name, result = importers.convert_file(path)
    assert name == "claude-code"
    assert not result.problems
    document = importers.open_import(path)
    run = document.runs[0]
    assert run.info.task == "count\u2028the\u2029copies\x0c"
