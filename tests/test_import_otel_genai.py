"""OpenTelemetry GenAI spans in OTLP/JSON, from hand-written fixtures."""

from __future__ import annotations

from test_import_support import (
    IMPORT_FIXTURES,
    convert,
    counters,
    fixture,
    markers,
    problems_text,
    tools_called,
)

from agentdbg.importers import otel_genai


def test_agent_trace_spans_in_start_order():
    name, result, runs = convert(fixture("otel-genai", "agent_trace.json"))
    assert name == "otel-genai"
    run = runs[0]
    assert run.info.name == "librarian"
    assert run.info.task == "How many copies of Il Gattopardo are available?"
    assert "gpt-4o" in run.info.policy
    assert [t["name"] for t in run.info.tools] == ["catalog", "loans"]
    assert run.info.tools[0]["params"] == {"title": "str"}
    # The second chat span is listed first in the file: start times decide.
    assert tools_called(run) == ["catalog", "loans", None]
    assert run.records[0].thought == "I need the total and the copies on loan."
    assert [r.observation for r in run.records[:2]] == ["5", "3"]
    assert run.records[0].events[2].id == "call_cat"
    assert [r.step_tokens for r in run.records] == [352, 0, 530]
    assert counters(run, "tokens") == [352, 352, 882]
    assert (run.end.outcome, run.end.answer) == ("answered", "2 copies are available.")
    # The HTTP span under the catalog tool is kept raw, with that tool's step (the chat
    # span made both calls' steps at once: the catalog step, not the last one made).
    assert result.raw_count == 1
    assert run.records[0].raw[0].note == "span 'GET /catalog'"


def test_tool_spans_without_an_agent_or_chat_a_timeout_and_structured_arguments():
    _, result, runs = convert(fixture("otel-genai", "tools_only.json"))
    run = runs[0]
    assert tools_called(run) == ["web_search", "fetch"]
    assert run.records[1].args == {"url": "https://example.org/forecast", "retries": 3}
    assert run.records[1].error_kind == "timeout"
    assert run.records[1].error == "timeout: deadline exceeded after 4s"
    assert run.records[1].observation_error
    assert markers(run) == ["", "error"]
    assert [t["name"] for t in run.info.tools] == ["web_search"]  # the one with a description
    assert run.end.outcome == "unfinished"
    assert result.raw_count == 1  # the request span around them


def test_an_agent_span_alone_is_an_empty_run():
    _, result, runs = convert(fixture("otel-genai", "edge_empty_agent.json"))
    assert runs[0].info.name == "idle" and runs[0].info.task == "Say nothing."
    assert runs[0].step_count == 0 and runs[0].end.outcome == "empty"
    assert "no chat or execute_tool spans" in problems_text(result)


def test_duplicated_ids_invalid_arguments_result_key_no_reply_and_a_tool_nobody_asked_for():
    _, result, runs = convert(fixture("otel-genai", "edges.json"))
    run = runs[0]
    assert run.info.task == "Find the broken config."
    assert tools_called(run) == ["lookup", None, "read", "lint", "restart"]
    assert run.records[0].thought == "Two lookups."  # a reasoning part
    bad = run.records[1]
    assert "not valid JSON" in bad.parse_error
    assert bad.observation == "error: arguments are not JSON"  # a 'result' key, not 'response'
    assert run.records[2].observation == "port: eighty"  # the second call with id 'dup'
    assert run.records[3].observation is None
    assert run.records[4].args == {"service": "web"} and run.records[4].observation == "restarted"
    assert run.end.outcome == "unfinished"
    assert "'dup'" in problems_text(result)


def test_json_lines_exports_make_one_run_per_trace_in_start_order():
    _, _, runs = convert(fixture("otel-genai", "exports.jsonl"))
    assert [r.end.answer for r in runs] == ["It is noon.", "Second answer"]
    assert tools_called(runs[0]) == ["clock", None]
    assert runs[0].records[0].step_tokens == 15


def test_hostile_and_non_ascii_attributes_are_kept_verbatim():
    _, _, runs = convert(fixture("otel-genai", "hostile_unicode.json"))
    run = runs[0]
    assert run.info.name.startswith("[link=https://evil.example]agent[/link] 代理 \x1b]52;")
    assert run.records[0].tool == "echo[/]"
    assert run.records[0].observation.startswith("\x1b[31m[blink]red[/blink]")
    assert run.end.answer == "[/]Fertig — 完了 \x1b]52;c;cm0=\x07"


def test_otlp_values():
    assert otel_genai.any_value({"intValue": "42"}) == 42
    assert otel_genai.any_value({"doubleValue": 0.5}) == 0.5
    assert otel_genai.any_value({"boolValue": True}) is True
    assert otel_genai.any_value({"arrayValue": {"values": [{"stringValue": "a"}, {"intValue": 1}]}}) == ["a", 1]
    assert otel_genai.any_value({"kvlistValue": {"values": [{"key": "k", "value": {"stringValue": "v"}}]}}) == {"k": "v"}
    assert otel_genai.any_value({}) is None


def test_sniff():
    assert otel_genai.sniff('{"resourceSpans": [{"scopeSpans": [')[0]
    ok, why = otel_genai.sniff('{"spans": []}')
    assert not ok and "resourceSpans" in why


def test_openllmetry_indexed_prompt_and_completion_attributes():
    _, result, runs = convert(fixture("otel-genai", "legacy_indexed.json"))
    [run] = runs
    # A Traceloop workflow span is the run: its name, its input as the task.
    assert run.info.name == "support_bot"
    assert run.info.task == "Where is my order 42?"
    assert run.info.policy == "recorded: gpt-4o-2024-08-06 (OpenTelemetry GenAI spans)"
    # llm.request.functions.N.* is the tool registry
    assert run.info.tools[0] == {"name": "order_status", "description": "Where an order is.",
                                 "params": {"order_id": "int"}, "dangerous": False}
    assert [t["name"] for t in run.info.tools] == ["order_status", "order_address"]
    # gen_ai.completion.0.tool_calls.N.* are the actions; a Traceloop tool span (no call id)
    # answers the call to its tool; a tool prompt (gen_ai.prompt.N.tool_call_id) answers one
    # no tool span answered.
    assert tools_called(run) == ["order_status", "order_address", None]
    assert run.records[0].args == {"order_id": 42}
    assert run.records[0].observation == '{"status": "packed", "ships": "tomorrow"}'
    assert run.records[1].thought == "Let me also check the address."
    assert run.records[1].observation == "12 Via Roma, Milano"
    # prompt + completion tokens (not also llm.usage.total_tokens), else the total
    assert [r.step_tokens for r in run.records] == [95, 140, 150]
    assert (run.end.outcome, run.end.answer) == ("answered", "Order 42 ships tomorrow to 12 Via Roma, Milano.")
    # gen_ai.completion.1.* is another choice: kept raw
    assert result.raw_count == 1
    assert run.records[2].raw[0].note == "another choice of 'openai.chat'"
    assert run.records[2].raw[0].data["content"] == "It ships tomorrow."
    assert result.problems == []


def test_real_indexed_attributes_from_agx():
    path = IMPORT_FIXTURES / "real" / "otel-genai" / "agx" / "sample_otel_json_traces.json"
    name, result, [run] = convert(path)
    assert name == "otel-genai"
    assert run.info.task == "List files in the current directory."  # gen_ai.prompt.0.content
    assert run.info.policy == "recorded: gpt-5 (OpenTelemetry GenAI spans)"
    # the first turn announced the tool in its text only (gen_ai.completion.0.content): the
    # tool span no turn asked for is that turn's action
    assert tools_called(run) == ["list_dir", None]
    assert run.records[0].thought == "I'll list the files using the list_dir tool."
    assert run.records[0].args == {"path": "."}
    assert run.records[0].observation == "README.md\nCargo.toml\nsrc/\n"
    assert [r.step_tokens for r in run.records] == [120 + 45, 180 + 30]
    assert run.end.answer == "The directory contains README.md, Cargo.toml, and a src/ folder."
    assert result.raw_count == 0 and result.problems == []
