"""OpenAI Codex CLI rollouts, from hand-written fixtures."""

from __future__ import annotations

import json

from test_import_support import convert, counters, fixture, markers, problems_text, tools_called

from agentdbg.engine import events as ev
from agentdbg.importers import codex_rollout
from agentdbg.state import group_run


def test_a_session_is_one_run_per_prompt():
    name, result, runs = convert(fixture("codex-rollout", "session.jsonl"))
    assert name == "codex-rollout"
    assert [r.info.name for r in runs] == ["019e0c0d turn 1", "019e0c0d turn 2"]
    assert [r.info.task for r in runs] == ["How many copies of Il Gattopardo can be borrowed?",
                                           "And Se questo è un uomo?"]
    assert runs[0].info.policy == "recorded: gpt-5.5"
    assert [r.end.outcome for r in runs] == ["answered", "interrupted"]
    assert runs[0].end.answer == "2 copies can be borrowed: 5 owned, 3 on loan."
    assert runs[1].end.message == "turn aborted: interrupted"
    # Kept raw: session_meta, the developer message, AGENTS.md, the two turn_context lines.
    assert result.raw_count == 5 and result.problems == []


def test_calls_thoughts_and_outputs():
    _, _, runs = convert(fixture("codex-rollout", "session.jsonl"))
    run = runs[0]
    assert tools_called(run) == ["exec_command", "exec_command", "write_stdin", "web_search", "apply_patch", None]
    first = run.records[0]
    assert first.thought == "Look up the copies owned, then the loans."  # the reasoning summary
    assert first.args == {"cmd": "catalog 'Il Gattopardo'"}
    assert [e.id for e in first.events if isinstance(e, ev.ActionTaken)] == ["call_1"]
    assert first.observation.endswith("Output:\n5\n")
    assert run.records[1].thought == "Now the loans."  # commentary before the call
    # A web search has no output in a rollout; its query is the call.
    assert run.records[3].args == {"query": "Il Gattopardo copies on loan"}
    assert run.records[3].observation is None
    # apply_patch takes a patch, not JSON: the call keeps it as written.
    patch = run.records[4]
    assert patch.args == "*** Begin Patch\n*** Add File: answer.txt\n+2\n*** End Patch\n"
    assert patch.parse_error is None
    assert patch.observation == "Success. Updated the following files:\nA answer.txt\n"


def test_a_failed_command_is_one_error_where_its_exit_was_reported():
    _, _, runs = convert(fixture("codex-rollout", "session.jsonl"))
    run = runs[0]
    # The loans command kept running; the poll (write_stdin) got "exited with code 1",
    # and exec_command_end said exit_code 1: one error, on the poll's step.
    assert markers(run) == ["", "", "error", "", "", "final"]
    assert "Process exited with code 1" in run.records[2].observation
    assert counters(run, "errors") == [0, 0, 1, 1, 0, 0]


def test_cumulative_token_counts_are_charged_once():
    _, _, runs = convert(fixture("codex-rollout", "session.jsonl"))
    run = runs[0]
    # token_count totals 1000 (written twice), 2200, 3500, 4900, 6000: each step is
    # charged what the total grew by, the repeated count nothing.
    assert [r.step_tokens for r in run.records] == [1000, 1200, 1300, 1400, 0, 1100]
    assert counters(run, "tokens")[-1] == 6000
    assert [r.step_tokens for r in runs[1].records] == [1000]  # 7000 - 6000


def test_edges_invalid_arguments_duplicated_ids_stray_output_damage_and_an_error():
    _, result, runs = convert(fixture("codex-rollout", "edges.jsonl"))
    run = runs[0]
    assert run.info.task == "Tidy the workspace."  # no prompt events: the user message item
    assert tools_called(run) == [None, "exec_command", "exec_command", "mcp__planner__update_plan"]
    assert "not valid JSON" in run.records[0].parse_error
    assert run.records[0].observation == "failed to parse function arguments"
    # Replies go to the calls with the same id in order; success: false is an error.
    assert run.records[1].observation == "a.txt b.txt" and not run.records[1].observation_error
    assert run.records[2].observation_error
    assert run.records[3].observation is None  # a call with no output
    assert markers(run) == ["error", "", "error", ""]
    assert run.end.outcome == "error" and run.end.message == "stream disconnected before completion"
    text = problems_text(result)
    assert ":10: not valid JSON" in text
    assert "'call_ghost', which no call in the run has" in text
    assert "'call_dup' is used by more than one call" in text
    notes = [raw.note for record in run.records for raw in record.raw]
    assert any("ghost_snapshot item" in note for note in notes)
    assert any("not a rollout line" in note for note in notes)


def test_a_prompt_alone_is_an_empty_run():
    _, _, runs = convert(fixture("codex-rollout", "edge_prompt_only.jsonl"))
    assert runs[0].info.task == "Which shelf holds Italian novels?"
    assert runs[0].step_count == 0 and runs[0].end.outcome == "empty"


def test_non_ascii_and_hostile_text_is_kept_verbatim():
    _, _, runs = convert(fixture("codex-rollout", "hostile_unicode.jsonl"))
    run = runs[0]
    assert run.info.task == "Trova «Il Gattopardo» 📚 \u202eevil\u202c [bold]now[/bold]"
    assert run.records[0].tool == "[red]catalog[/red]"
    assert run.records[0].thought == "\x1b]52;c;ZXZpbA==\x07 copy?"
    assert run.records[0].args == {"title": "[link=https://evil.example]x[/link]"}
    assert run.end.answer == "Risposta: \x1b[1A\x1b[2K due copie — مرحبا"


def test_an_exit_code_only_the_harness_reported_marks_the_call():
    lines = [
        {"timestamp": "t", "type": "event_msg", "payload": {"type": "user_message", "message": "q"}},
        {"timestamp": "t", "type": "response_item",
         "payload": {"type": "function_call", "name": "shell", "arguments": '{"command": ["false"]}', "call_id": "c"}},
        {"timestamp": "t", "type": "response_item",
         "payload": {"type": "function_call_output", "call_id": "c", "output": "no header here"}},
        {"timestamp": "t", "type": "event_msg",
         "payload": {"type": "exec_command_end", "call_id": "c", "exit_code": 2, "process_id": ""}},
    ]
    result = codex_rollout.convert("\n".join(json.dumps(line) for line in lines))
    run = group_run(result.runs[0])
    assert run.records[0].observation_error and run.records[0].observation == "no header here"


def test_sniff():
    assert codex_rollout.sniff('{"timestamp": "t", "type": "session_meta", "payload": {"id": "x"}}\n')[0]
    assert codex_rollout.sniff('{"timestamp": "t", "type": "response_item", "payload": {"type": "message"}}')[0]
    ok, why = codex_rollout.sniff('{"type": "user", "message": {"role": "user", "content": "x"}}\n')
    assert not ok and "payload" in why
    assert not codex_rollout.sniff("Question: what?")[0]
