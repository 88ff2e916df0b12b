"""Anthropic Messages, from hand-written fixtures."""

from __future__ import annotations

from test_import_support import convert, counters, fixture, markers, problems_text, tools_called

from agentdbg.importers import anthropic_messages


def test_request_with_thinking_tools_an_error_result_and_usage():
    name, result, runs = convert(fixture("anthropic-messages", "request.json"))
    assert name == "anthropic-messages"
    run = runs[0]
    assert run.info.name == "claude-sonnet-4-5"
    assert run.info.task == "How many copies of Il Gattopardo are available?"
    assert [t["name"] for t in run.info.tools] == ["catalog", "loans"]
    assert run.info.tools[0]["params"] == {"title": "str"}
    assert tools_called(run) == ["catalog", "loans", "loans", None]
    # Thinking and text before the calls are the first call's thought.
    assert run.records[0].thought == ("Available = total minus on loan. I need both numbers.\n"
                                      "I will look up the total and the loans.")
    error = run.records[1]
    assert error.observation == "unknown title: Il Gatopardo" and error.observation_error
    assert markers(run) == ["", "error", "", "final"]
    # Usage per assistant message (input + output + cache reads), on its first step.
    assert [r.step_tokens for r in run.records] == [515, 0, 1000, 640]
    assert counters(run, "tokens") == [515, 515, 1515, 2155]
    assert run.end.answer == "2 copies are available (5 in the catalogue, 3 on loan)."
    assert result.raw_count == 1  # the system prompt


def test_json_lines_transcript_merges_one_message_split_over_lines():
    name, result, runs = convert(fixture("anthropic-messages", "session.jsonl"))
    assert name == "anthropic-messages"
    run = runs[0]
    assert run.info.name == "claude-opus-4-1"
    assert tools_called(run) == ["catalog", "loans", None]
    assert run.records[0].thought == "Total first."
    assert [r.step_tokens for r in run.records] == [130, 170, 185]  # msg_A counted once
    assert run.end.answer == "None."
    # The summary entry and the later user message are kept raw.
    assert result.raw_count == 2
    assert run.records[2].raw[0].note == "user message: Please answer in one word."


def test_an_empty_conversation():
    name, _, runs = convert(fixture("anthropic-messages", "edge_empty.json"))
    assert name == "anthropic-messages"
    assert runs[0].step_count == 0 and runs[0].end.outcome == "empty"


def test_stray_result_duplicated_ids_invalid_input_and_a_call_with_no_result():
    _, result, runs = convert(fixture("anthropic-messages", "edges.json"))
    run = runs[0]
    assert run.info.task == "Tidy the workspace."
    assert tools_called(run) == ["ls", None, "rm"]
    assert run.records[0].observation == "a.txt b.txt"
    assert "not valid JSON" in run.records[1].parse_error
    assert run.records[1].observation == "invalid input" and run.records[1].observation_error
    assert run.records[2].observation is None
    assert run.end.outcome == "unfinished"
    assert result.raw_count == 1
    assert "toolu_ghost" in problems_text(result) and "toolu_same" in problems_text(result)


def test_non_ascii_and_hostile_text_is_kept_verbatim():
    _, _, runs = convert(fixture("anthropic-messages", "unicode.json"))
    assert runs[0].records[0].thought == "Übersetzen — 翻訳する"
    assert runs[0].end.answer == "山猫 — «Il Gattopardo» ✓"
    _, _, runs = convert(fixture("anthropic-messages", "hostile.json"))
    run = runs[0]
    assert run.records[0].tool == "read[/]"
    assert run.records[0].args["osc"] == "\x1b]52;c;ZXZpbA==\x07"
    assert run.records[0].observation.startswith("\x1b]8;;https://evil.example\x1b\\click")
    assert run.end.answer == "[/]Done \x1b]52;c;cm0gLXJm\x07"


def test_sniff():
    assert anthropic_messages.sniff('[{"role": "user", "content": [{"type": "tool_result"}]}]')[0]
    assert anthropic_messages.sniff('{"type": "user", "message": {"role": "user", "content": "x"}}\n')[0]
    assert anthropic_messages.sniff('{"system": "s", "messages": []}')[0]
    ok, why = anthropic_messages.sniff('[{"role": "user", "content": "hi"}]')
    assert not ok and "tool_use" in why
