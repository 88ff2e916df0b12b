"""OpenAI Chat Completions message lists, from hand-written fixtures."""

from __future__ import annotations

from test_import_support import convert, counters, fixture, markers, problems_text, tools_called

from agentdbg.importers import openai_chat


def test_request_body_with_tools_and_parallel_calls():
    name, result, runs = convert(fixture("openai-chat", "weather_request.json"))
    assert name == "openai-chat"
    run = runs[0]
    assert run.info.task == "Is it a good evening for a walk in Turin?"
    assert run.info.name == "gpt-4o-2024-08-06"
    assert [t["name"] for t in run.info.tools] == ["get_weather", "get_time"]
    assert run.info.tools[0]["params"] == {"city": "str", "unit": "str"}
    assert run.info.tools[1]["params"] == {"city": "str", "utc_offset": "int"}
    assert run.info.tools[0]["description"] == "Current weather for a city."
    # Each call is a step; the turn's text is the first call's thought.
    assert tools_called(run) == ["get_weather", "get_time", "get_weather", None]
    assert run.records[0].thought == "I will check the weather and the local time."
    assert run.records[1].thought == ""
    # Replies matched by id, whatever their order.
    assert run.records[0].observation == '{"temp": 21, "sky": "clear"}'
    assert run.records[1].observation == "19:40"
    assert run.records[0].call == 'get_weather {"city": "Turin", "unit": "c"}'
    assert run.records[0].args == {"city": "Turin", "unit": "c"}
    assert counters(run, "repeats") == [1, 1, 2, 0]
    assert run.end.outcome == "answered" and run.end.answer.startswith("Yes: it is 21 °C")
    assert result.raw_count == 1  # the system message
    assert run.records[0].raw[0].source == "openai system message"


def test_bare_list_with_content_parts_and_usage():
    _, _, runs = convert(fixture("openai-chat", "plain_list.json"))
    run = runs[0]
    assert run.info.task == "What is 17 * 23?"
    assert tools_called(run) == ["calc", None]
    assert counters(run, "tokens") == [52, 120]
    assert [r.step_tokens for r in run.records] == [52, 68]
    assert run.end.answer == "17 * 23 = 391"


def test_json_lines_one_conversation_per_line_with_a_damaged_line():
    _, result, runs = convert(fixture("openai-chat", "conversations.jsonl"))
    assert [r.step_count for r in runs] == [1, 2, 0]
    assert [r.end.outcome for r in runs] == ["answered", "answered", "empty"]
    assert runs[1].info.name == "gpt-4o-mini"
    assert len(result.problems) == 1 and result.problems[0].line == 3


def test_an_empty_conversation():
    name, _, runs = convert(fixture("openai-chat", "edge_empty.json"))
    assert name == "openai-chat"
    assert runs[0].step_count == 0 and runs[0].end.outcome == "empty"


def test_a_call_with_no_reply_leaves_the_run_unfinished():
    _, _, runs = convert(fixture("openai-chat", "edge_no_reply.json"))
    run = runs[0]
    assert tools_called(run) == ["shell", "shell"]
    assert run.records[1].observation is None
    assert run.end.outcome == "unfinished"


def test_replies_with_no_call_are_kept_raw_and_reported():
    _, result, runs = convert(fixture("openai-chat", "edge_reply_without_call.json"))
    run = runs[0]
    assert tools_called(run) == ["ping", None]
    assert run.records[0].observation == "pong"
    assert result.raw_count == 2
    assert [r.note for r in run.records[0].raw] == [
        "a reply to tool call 'call_never_made', which no call in the run has",
        "a second reply to tool call 'call_ping'",
    ]
    assert "call_never_made" in problems_text(result)


def test_invalid_argument_json_is_a_parse_error_not_a_crash():
    _, _, runs = convert(fixture("openai-chat", "edge_invalid_arguments.json"))
    run = runs[0]
    assert run.step_count == 4
    assert "not valid JSON" in run.records[0].parse_error
    assert run.records[0].output == 'book {"people": 2, "time": "20:00"'
    assert "should be a JSON object, got list" in run.records[1].parse_error
    assert markers(run) == ["error", "error", "", "final"]
    assert counters(run, "errors") == [1, 2, 0, 0]
    assert run.records[2].args == {"people": 2, "time": "20:00"}


def test_duplicated_ids_match_replies_in_order():
    _, result, runs = convert(fixture("openai-chat", "edge_duplicate_ids.json"))
    run = runs[0]
    assert [r.observation for r in run.records[:3]] == ["a is up", "b is down", "a is up"]
    assert counters(run, "repeats") == [1, 1, 2, 0]
    assert len(result.problems) == 1 and "'call_0'" in problems_text(result)


def test_non_ascii_and_hostile_text_is_kept_verbatim():
    _, _, runs = convert(fixture("openai-chat", "unicode.json"))
    assert runs[0].records[0].args["note"] == "è — 🌙"
    assert runs[0].records[0].observation == "おやすみなさい / تصبح على خير"
    _, _, runs = convert(fixture("openai-chat", "hostile.json"))
    run = runs[0]
    assert run.records[0].tool == "fetch[/]"
    assert run.records[0].args["esc"] == "\x1b]52;c;ZXZpbA==\x07"
    assert run.records[0].observation.startswith("\x1b]52;c;ZXZpbA==\x07 [blink]")
    observation = next(e for e in run.records[0].events if e.type == "observation")
    assert observation.id == "x\x1b[1m"  # matched by an id that holds an escape sequence
    assert run.end.answer == "[/][bold]Done[/bold] \x1b[5m!\x1b[0m"


def test_sniff_leaves_anthropic_blocks_and_swe_agent_files_to_their_importers():
    assert openai_chat.sniff('[{"role": "user", "content": "hi"}]')[0]
    ok, why = openai_chat.sniff('[{"role": "assistant", "content": [{"type": "tool_use", "id": "t"}]}]')
    assert not ok and "Anthropic" in why
    ok, why = openai_chat.sniff('{"history": [{"role": "user"}]}')
    assert not ok and why == "has a top-level 'history': an agent's run record, not a message list"
    ok, why = openai_chat.sniff("Question: q")
    assert not ok and why == "not JSON"
