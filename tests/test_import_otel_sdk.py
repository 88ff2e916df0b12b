"""OpenTelemetry spans as the Python SDK writes them (ConsoleSpanExporter, Monocle) and
any-agent traces: hand-written fixtures, then real files."""

from __future__ import annotations

import json

import pytest
from test_import_support import (
    IMPORT_FIXTURES,
    convert,
    counters,
    fixture,
    markers,
    problems_text,
    tools_called,
)

from agentdbg import importers
from agentdbg.importers import otel_sdk

REAL = IMPORT_FIXTURES / "real" / "otel-sdk"


def test_console_exporter_output_is_read_in_start_order():
    name, result, runs = convert(fixture("otel-sdk", "console_agent.txt"))
    assert name == "otel-sdk"
    [run] = runs
    assert run.info.name == "librarian"
    assert run.info.task == "How many copies of Il Gattopardo can I borrow?"
    assert run.info.policy == "recorded: gpt-4o-mini (OpenTelemetry spans)"
    assert [t["name"] for t in run.info.tools] == ["catalog", "loans"]
    # Printed in end order (the agent span last): start times decide.
    assert tools_called(run) == ["catalog", "loans", "loans", None]
    assert run.records[0].thought == "I need the total and the copies on loan."
    assert [r.observation for r in run.records[:3]] == [
        "5", "ConnectionError: loans service unavailable", "3"]
    failed = run.records[1]
    assert (failed.error_kind, failed.error) == ("exception", "ConnectionError: loans service unavailable")
    assert markers(run) == ["", "error", "repeat", "final"]
    assert counters(run, "errors") == [0, 1, 0, 0]
    assert [r.step_tokens for r in run.records] == [138, 0, 180, 209]
    assert (run.end.outcome, run.end.answer) == ("answered", "You can borrow 2 copies.")
    # The HTTP call under the catalog tool is kept raw with the catalog step.
    assert result.raw_count == 1 and run.records[0].raw[0].note == "span 'GET /catalog'"
    assert result.problems == []


def test_monocle_spans_carry_their_content_in_events():
    _, result, runs = convert(fixture("otel-sdk", "monocle_array.json"))
    [run] = runs
    assert run.info.name == "weather_app"
    assert run.info.task == "Is it warmer in Oslo or in Rome?"
    assert run.info.policy == "recorded: gpt-4o (OpenTelemetry spans)"
    assert tools_called(run) == ["get_weather", "get_weather", "to_fahrenheit", None]
    # Calls from the inference's "tools" answered by tool spans that carry no id: by name, in order.
    assert [r.args for r in run.records[:2]] == [{"city": "Oslo"}, {"city": "Rome"}]
    assert [r.observation for r in run.records[:2]] == ["9 °C", "21 °C"]
    assert [e.id for e in run.records[1].events if e.type == "action"] == ["call_rome"]
    # A tool the model announced in its text only (a ReAct turn) is that turn's action;
    # its input is not JSON: one positional argument, not a parse error.
    react = run.records[2]
    assert react.thought == "Thought: I convert Rome's temperature.\nAction: to_fahrenheit"
    assert react.args == "input: {'celsius': 21}" and react.parse_error is None
    assert (react.error_kind, react.observation) == ("exception", "converter crashed")
    assert [r.step_tokens for r in run.records] == [80, 0, 60, 95]
    assert (run.end.outcome, run.end.answer) == ("answered", "Rome is warmer: 21 °C against 9 °C.")
    # The workflow span around the turn, the nested agent, the model API call under the
    # inference and the MCP request under the tool are kept raw.
    assert result.raw_count == 4
    assert [d.note for d in run.records[0].raw] == [
        "span 'workflow'", "span 'agents.run.AgentRunner._run_single_turn'",
        "span 'openai._base_client.AsyncAPIClient.post'", "span 'mcp.shared.session.BaseSession.send_request'"]


def test_any_agent_trace():
    _, result, runs = convert(fixture("otel-sdk", "any_agent.json"))
    [run] = runs
    assert run.info.name == "any_agent"
    assert run.info.task == "Write the current year to year.txt."
    assert run.info.policy == "recorded: gpt-4.1-mini (any-agent trace)"
    assert tools_called(run) == ["get_current_time", "write_file", None]
    assert run.records[0].args == {"timezone": "Europe/Rome"}
    assert run.records[0].observation == '{"datetime": "2026-03-02T11:15:00+01:00"}'
    assert run.records[1].args == {"path": "year.txt", "text": "2026"}
    assert run.records[1].observation == "PermissionError: year.txt is read-only"
    assert run.records[1].error_kind == "exception"
    assert [r.step_tokens for r in run.records] == [216, 280, 325]  # input + output, costs ignored
    assert run.end.answer == "I could not write year.txt: it is read-only. The year is 2026."
    assert result.raw_count == 0 and result.problems == []


def test_any_agent_ids_above_two_to_the_53_stay_exact():
    spans = otel_sdk._span(None, json.loads(fixture("otel-sdk", "any_agent.json").read_text())["spans"][-1], [], None)
    assert spans.trace == "7fffffffffffffffffffffffffffffff"
    assert spans.id == format(9007199254740993, "016x")


def test_edges_in_the_console_encoding_map_as_in_otlp():
    _, result, runs = convert(fixture("otel-sdk", "edges.txt"))
    [run] = runs
    assert run.info.task == "Find the broken config."
    assert tools_called(run) == ["lookup", None, "read", "lint", "restart"]
    assert run.records[0].thought == "Two lookups."
    assert "not valid JSON" in run.records[1].parse_error
    assert run.records[1].observation == "error: arguments are not JSON"
    assert run.records[2].observation == "port: eighty"
    assert run.records[3].observation is None  # a call nobody answered
    assert run.records[4].observation == "restarted"  # a tool span nobody asked for
    assert run.end.outcome == "unfinished"
    text = problems_text(result)
    assert "'dup'" in text
    assert "edges.txt:127: a value that is not a span" in text
    assert result.raw_count == 1 and run.records[3].raw[0].note == "a value that is not a span"


def test_an_agent_that_made_no_call_is_an_empty_run():
    _, result, runs = convert(fixture("otel-sdk", "edge_empty.txt"))
    assert (runs[0].info.name, runs[0].info.task) == ("idle", "Say nothing.")
    assert runs[0].step_count == 0 and runs[0].end.outcome == "empty"
    assert result.raw_count == 1  # the HTTP span beside it
    assert "no chat or execute_tool spans" in problems_text(result)


def test_spans_with_no_agent_model_or_tool_call_are_refused_saying_so(tmp_path):
    text = fixture("otel-sdk", "edge_empty.txt").read_text(encoding="utf-8")
    path = tmp_path / "http.txt"
    path.write_text(text[: text.index("}\n{") + 2], encoding="utf-8")  # the HTTP span alone
    with pytest.raises(importers.NotImportable) as refused:
        importers.convert_file(path)
    assert str(refused.value).startswith(f"{path}: read as otel-sdk but none of its 1 spans is an agent, "
                                         "a model call or a tool call")


def test_hostile_and_non_ascii_text_is_kept_verbatim():
    _, _, runs = convert(fixture("otel-sdk", "hostile_unicode.txt"))
    run = runs[0]
    assert run.info.name == "[link=https://evil.example]agent[/link] 代理 \x1b]52;c;ZXZpbA==\x07"
    assert run.records[0].tool == "echo[/]"
    assert run.records[0].args == {"text": "[link=https://evil.example]x[/link] \x1b[5m"}
    assert run.records[0].thought == "[bold red]Ich prüfe[/] — 確認します \u202eevil\u202c"
    assert run.records[0].observation == "\x1b[31m[blink]red[/blink]\x1b[0m \x1b]52;c;ZXZpbA==\x07 ✓"
    assert run.end.answer == "[/]Fertig — 完了 \x1b]52;c;cm0=\x07"


def test_a_damaged_span_in_a_console_dump_loses_only_that_span(tmp_path):
    text = fixture("otel-sdk", "console_agent.txt").read_text(encoding="utf-8")
    cut = text.index('"gen_ai.tool.call.result": "5"')
    damaged = tmp_path / "damaged.txt"
    damaged.write_text(text[:cut] + "BROKEN" + text[cut:], encoding="utf-8")
    _, result, runs = convert(damaged)
    line = text.count("\n", 0, text.rfind('\n{', 0, cut)) + 2
    assert f"damaged.txt:{line}: not valid JSON" in problems_text(result)
    assert "skipped to the next object" in problems_text(result)
    # The catalog tool span is gone: its call waits unanswered; everything else is there.
    run = runs[0]
    assert tools_called(run) == ["catalog", "loans", "loans", None]
    assert run.records[0].observation is None and run.records[2].observation == "3"


def test_sniff():
    assert otel_sdk.sniff('{\n    "name": "x",\n    "context": {\n        "trace_id": "0x1", "span_id": "0x2"'
                          '},\n    "kind": "SpanKind.INTERNAL",')[0]
    assert otel_sdk.sniff('[{"name": "x", "context": {"trace_id": "0x1", "span_id": "0x2"}, "kind": "SpanKind.CLIENT"')[0]
    assert otel_sdk.sniff('{"spans": [{"name": "call_llm", "kind": "internal", "context": {"trace_id": 1, "span_id": 2')[0]
    ok, why = otel_sdk.sniff('{"kind": "SpanKind.INTERNAL"}')
    assert not ok and "SpanKind" in why
    assert not otel_sdk.sniff('{"resourceSpans": []}')[0]
    assert not otel_sdk.sniff("Thought: x")[0]


# --- real files --------------------------------------------------------------------------------

def _any_agent_figures(path):
    spans = json.loads(path.read_text(encoding="utf-8"))["spans"]
    llm = [s["attributes"] for s in sorted(spans, key=lambda s: s["start_time"])
           if s["attributes"]["gen_ai.operation.name"] == "call_llm"]
    tools = [s["attributes"]["gen_ai.tool.name"] for s in sorted(spans, key=lambda s: s["start_time"])
             if s["attributes"]["gen_ai.operation.name"] == "execute_tool"]
    tokens = [a["gen_ai.usage.input_tokens"] + a["gen_ai.usage.output_tokens"] for a in llm]
    return tools, tokens


def test_real_any_agent_traces():
    for name, answered_by_final_answer_tool in (("OPENAI_trace.json", False), ("TINYAGENT_trace.json", True)):
        path = REAL / "any-agent" / name
        tools, tokens = _any_agent_figures(path)
        fmt, result, runs = convert(path)
        assert fmt == "otel-sdk"
        [run] = runs
        assert run.info.name == "any_agent"
        assert run.info.task.startswith("Find what year it is in the America/New_York timezone")
        assert run.info.policy == "recorded: mistral/mistral-small-latest (any-agent trace)"
        # every call_llm is one model turn: one step per tool call, then the structured answer
        assert tools_called(run) == [*tools, None]
        assert [r.step_tokens for r in run.records] == tokens
        assert counters(run, "tokens")[-1] == sum(tokens)
        assert run.end.outcome == "answered"
        final = json.loads(path.read_text(encoding="utf-8"))["final_output"]
        assert json.loads(run.end.answer) == final
        assert run.records[0].args == {"timezone": "America/New_York"}
        assert ("final_answer" in tools) == answered_by_final_answer_tool
        assert result.raw_count == 0 and result.problems == []


def test_real_monocle_openai_agents_run():
    _, result, runs = convert(REAL / "monocle" / "test_openai_agents_sdk.json")
    [run] = runs
    assert run.info.name == "agents_sdk_dev_1"
    assert run.info.task.startswith("What's the weather like in New York, London, and Tokyo?")
    assert tools_called(run) == ["get_weather"] * 3 + [None]
    assert [r.args for r in run.records[:3]] == [{"city": "New York"}, {"city": "London"}, {"city": "Tokyo"}]
    assert [json.loads(json.loads(r.observation)["text"])["temperature"] for r in run.records[:3]] == [50, 48, 44]
    assert [r.step_tokens for r in run.records] == [105, 0, 0, 307]
    assert run.end.answer.startswith("Here are the current temperatures:")
    # 12 spans: 2 inferences and 3 tool invocations mapped, the turn read for task and answer,
    # the rest (workflow, 2 agent invocations, 3 MCP requests) kept raw
    assert result.raw_count == 6 and result.problems == []


def test_real_monocle_crewai_react_run():
    _, result, runs = convert(REAL / "monocle" / "test_crewai_single_agent.json")
    [run] = runs
    assert run.info.task == "Book Marriott Hotel in New York for 2 nights for next week"
    assert tools_called(run) == ["book_hotel", None]
    assert run.records[0].thought.startswith("Thought: I need to book a room at Marriott")
    assert run.records[0].args.startswith("input: {'hotel_name': 'Marriott'")
    assert run.records[0].observation.startswith("YOUR BOOKING CONFIRMED #BK307820")
    # the last turn's "Final Answer:" line holds the crew's answer: one step, not two
    assert run.records[1].thought.startswith("Thought: I now know the final answer")
    assert run.end.answer == "YOUR BOOKING CONFIRMED #BK307820: Marriott in New York for 2 nights - $300"
    assert [r.step_tokens for r in run.records] == [363, 425]
    assert result.raw_count == 4 and result.problems == []


def test_real_monocle_adk_multi_agent_run():
    _, result, runs = convert(REAL / "monocle" / "test_adk_multi_agent.json")
    [run] = runs
    assert tools_called(run) == ["book_flight", None, "book_hotel", None]
    assert run.records[0].args == {"to_airport": "Mumbai", "from_airport": "San Francisco"}
    assert run.info.policy == "recorded: gemini-2.0-flash (OpenTelemetry spans)"
    # the hotel agent's first model call recorded no output: its tokens go with the next step
    assert [r.step_tokens for r in run.records] == [163, 193, 257, 287]
    assert run.end.answer == "OK. I have booked a stay at Taj Mahal in Mumbai.\n"
    assert result.raw_count == 4 and result.problems == []


def test_real_console_exporter_output():
    _, result, runs = convert(REAL / "console" / "console_exporter_stdout.txt")
    [run] = runs
    assert run.info.name == "librarian"
    assert tools_called(run) == ["catalog", None]
    assert (run.records[0].error_kind, run.records[0].observation) == (
        "timeout", "TimeoutError: catalog service did not answer in 5 s")
    assert [r.step_tokens for r in run.records] == [138, 185]
    assert run.end.answer == "The catalogue did not answer; please try again later."
    assert result.raw_count == 0 and result.problems == []
