"""Gemini CLI chat recordings, from hand-written fixtures."""

from __future__ import annotations

from test_import_support import convert, counters, fixture, markers, problems_text, tools_called

from agentdbg import importers
from agentdbg.importers import gemini_cli


def test_a_session_is_one_run_per_prompt():
    name, result, runs = convert(fixture("gemini-cli", "session.json"))
    assert name == "gemini-cli"
    assert [r.info.name for r in runs] == ["37b7abef turn 1", "37b7abef turn 2"]
    assert [r.info.task for r in runs] == ["How many copies of Il Gattopardo can be borrowed?",
                                           "And Se questo è un uomo?"]
    assert runs[0].info.policy == "recorded: gemini-3-pro"
    assert [r.end.outcome for r in runs] == ["answered", "error"]
    assert runs[0].end.answer == "2 copies can be borrowed."
    assert runs[1].end.message == "[API Error: Quota exceeded for gemini-3-pro]"
    assert result.raw_count == 2  # the info notice, the error notice
    assert result.problems == []


def test_each_tool_call_is_a_step_with_its_own_result():
    _, _, runs = convert(fixture("gemini-cli", "session.json"))
    run = runs[0]
    assert tools_called(run) == ["read_file", "read_file", "search_file_content", None]
    # The thought summaries (subject: description) and the text are the first call's thought.
    assert run.records[0].thought == "Reading the catalogue: I need the copies owned and on loan."
    assert run.records[0].args == {"file_path": "catalog.csv"}
    assert run.records[0].observation == "Il Gattopardo,5"
    assert run.records[1].observation == "File not found: loans.csv"  # status error, response.error
    assert markers(run) == ["", "error", "", "final"]
    assert run.records[3].thought == "Answer: 5 minus 3."
    # tokens.total of each gemini message, on its first step.
    assert [r.step_tokens for r in run.records] == [2130, 0, 2320, 2525]
    assert counters(run, "tokens")[-1] == 6975
    cancelled = runs[1].records[0]
    assert cancelled.observation == "[cancelled]" and cancelled.observation_error


def test_the_json_lines_log_replays_updates_and_rewinds():
    name, result, runs = convert(fixture("gemini-cli", "session.jsonl"))
    assert name == "gemini-cli"
    # m2 was written twice (the last write has the result); m3 was rewound away.
    assert [r.info.task for r in runs] == ["Which shelf holds Italian novels?", "Check the file again, please."]
    assert runs[0].records[0].observation == "Italian novels: shelf 4"
    assert runs[0].records[0].step_tokens == 520
    assert runs[0].end.outcome == "unfinished"  # its answer ("Shelf 9.") was undone
    assert runs[1].end.answer == "Shelf 4."
    assert result.problems == []


def test_edges():
    _, result, runs = convert(fixture("gemini-cli", "edges.json"))
    [run] = runs
    assert run.info.task == "Tidy the workspace."
    assert tools_called(run) == [None, "run_shell_command", "run_shell_command", "list_directory", "run_shell_command"]
    assert "not valid JSON" in run.records[0].parse_error
    assert run.records[0].thought == "I list the files first."
    assert [r.observation for r in run.records[1:]] == ["a.txt b.txt", "", "a.txt", None]
    assert run.end.outcome == "unfinished"  # the last call has no result
    assert "'dup' is used by more than one call" in problems_text(result)
    notes = [raw.note for record in run.records for raw in record.raw]
    assert "Running without a sandbox." in notes  # the raw source names it a warning
    assert "not a message (a JSON str)" in notes
    assert "a message of type compression" in notes


def test_an_empty_session_is_an_empty_run():
    _, _, runs = convert(fixture("gemini-cli", "edge_empty.json"))
    assert len(runs) == 1 and runs[0].step_count == 0 and runs[0].end.outcome == "empty"


def test_non_ascii_and_hostile_text_is_kept_verbatim():
    _, _, runs = convert(fixture("gemini-cli", "hostile_unicode.json"))
    run = runs[0]
    assert run.info.task == "Trova «Il Gattopardo» 📚 \u202eevil\u202c [bold]now[/bold]\n[inlineData]"
    assert run.records[0].tool == "[red]read_file[/red]"
    assert run.records[0].thought == "\x1b]52;c;ZXZpbA==\x07: copy?"
    assert run.records[0].observation == "\x1b[2J\x1b[H cleared 北京 ✓"
    assert run.end.answer == "Risposta: \x1b[1A\x1b[2K due copie — مرحبا"


def test_sniff():
    head = fixture("gemini-cli", "session.json").read_text(encoding="utf-8")
    assert [name for name, ok, _ in importers.sniff_all(head) if ok] == ["gemini-cli"]
    assert gemini_cli.sniff('{"id": "m1", "type": "gemini", "content": "x"}\n{"$rewindTo": "m1"}')[0]
    ok, why = gemini_cli.sniff('[{"sessionId": "s", "messageId": 0, "type": "user", "message": "hi"}]')
    assert not ok and "prompt log" in why
    assert not gemini_cli.sniff('{"messages": [{"role": "user", "content": "x"}]}')[0]
