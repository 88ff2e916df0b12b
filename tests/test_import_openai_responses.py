"""OpenAI Responses API runs: Response objects, item lists, Agents SDK run states, from
hand-written fixtures and real files."""

from __future__ import annotations

import json

from test_import_support import (
    IMPORT_FIXTURES,
    convert,
    counters,
    fixture,
    markers,
    problems_text,
    tools_called,
)

from agentdbg.importers import openai_chat, openai_responses

REAL = IMPORT_FIXTURES / "real" / "openai-responses"


def test_a_loop_of_response_objects_is_one_run():
    name, result, runs = convert(fixture("openai-responses", "response_loop.json"))
    assert name == "openai-responses"
    [run] = runs
    assert run.info.name == "gpt-5-mini-2025-08-07"
    assert run.info.policy == "recorded: gpt-5-mini-2025-08-07 (OpenAI Responses)"
    assert [t["name"] for t in run.info.tools] == ["get_weather", "web_search"]
    assert run.info.tools[0]["params"] == {"city": "str"}
    # parallel calls are a step each; a hosted web search carries its result; the text
    # after it is the answer
    assert tools_called(run) == ["get_weather", "get_weather", "web_search", None]
    assert run.records[0].thought == "**Comparing two cities**\n\nI need both temperatures."
    assert [e.id for e in run.records[1].events if e.type == "action"] == ["call_rome"]
    # the function outputs went back in the next request, which a Response does not hold
    assert [r.observation for r in run.records[:2]] == [None, None]
    assert run.records[2].args == {"query": "Rome weather today"}
    assert run.records[2].observation == "https://weather.example/rome"
    # usage once per response, on its first step
    assert [r.step_tokens for r in run.records] == [180, 0, 340, 0]
    assert (run.end.outcome, run.end.answer) == ("answered", "Rome is warmer: 21 °C against 9 °C in Oslo.")
    # the instructions, the same in both responses, are kept once
    assert result.raw_count == 1 and run.records[0].raw[0].note == "instructions: You answer weather questions."


def test_an_item_list_with_every_kind_of_item():
    _, result, runs = convert(fixture("openai-responses", "items.json"))
    [run] = runs
    assert run.info.task == "Fix the typo in README.md and tell me what changed."
    assert tools_called(run) == ["read_file", "apply_patch", "code_interpreter", "create_issue", None]
    first = run.records[0]
    assert first.thought == "**Reading the file first**\nI read the README first."  # reasoning, then text
    assert first.observation == "# Agentdbg\nA debuger for agents."  # output given as input_text parts
    patch = run.records[1]  # a custom tool's input is free text: one positional argument
    assert patch.args.startswith("*** Begin Patch\n") and patch.parse_error is None
    assert patch.observation == "Done: 1 file changed"
    assert run.records[2].args == {"code": "print(open('README.md').read().count('debugger'))"}
    assert run.records[2].observation == "1\n"
    mcp = run.records[3]
    assert mcp.args == {"title": "Typo"}
    assert (mcp.error_kind, mcp.observation) == ("exception", "permission denied: read-only token")
    assert markers(run) == ["", "", "", "error", "final"]
    assert run.end.answer == 'Fixed "debuger" to "debugger" in README.md.'
    assert result.raw_count == 1 and first.raw[0].note == "developer message: Answer briefly."
    assert result.problems == []


def test_edges_invalid_arguments_duplicated_ids_a_reply_to_nothing_and_no_reply():
    _, result, runs = convert(fixture("openai-responses", "edges.json"))
    [run] = runs
    assert tools_called(run) == [None, "lookup", "read", "lint"]
    assert "not valid JSON" in run.records[0].parse_error
    assert run.records[0].observation == "error: arguments are not JSON"
    assert [r.observation for r in run.records[1:]] == ["config.yaml", "port: eighty", None]
    assert counters(run, "errors") == [1, 0, 0, 0]
    assert run.end.outcome == "unfinished"
    text = problems_text(result)
    assert "'dup' is used by more than one call" in text and "'ghost', which no call in the run has" in text
    assert result.raw_count == 2
    assert [r.note for r in run.records[3].raw] == ["item_reference item"]


def test_a_question_alone_is_an_empty_run():
    _, _, runs = convert(fixture("openai-responses", "edge_empty.json"))
    assert runs[0].info.task == "Hello?"
    assert runs[0].step_count == 0 and runs[0].end.outcome == "empty"


def test_a_response_cut_by_its_token_limit():
    _, _, runs = convert(fixture("openai-responses", "incomplete_response.json"))
    [run] = runs
    # reasoning alone is a thought, never the answer
    assert run.records[0].thought == "[encrypted reasoning]" and run.records[0].answer is None
    assert (run.end.outcome, run.end.message, run.end.answer) == ("response incomplete", "max_output_tokens", None)
    assert run.records[0].step_tokens == 4080


def test_an_agents_sdk_run_state():
    _, result, runs = convert(fixture("openai-responses", "run_state.json"))
    [run] = runs
    assert run.info.name == "billing"
    assert run.info.task == "Was invoice INV-7 paid?"
    assert run.info.policy == "recorded: OpenAI Agents SDK run state"
    assert list(run.info.tools) == [{"name": "get_invoice", "description": "An invoice by id.",
                               "params": {"invoice_id": "str"}, "dangerous": False}]
    # a handoff is a call like any other
    assert tools_called(run) == ["transfer_to_billing", "get_invoice", None]
    assert run.records[0].thought == "This is a billing question."
    assert run.records[1].observation == '{"paid": true, "amount": 120, "date": "2026-03-02"}'
    # each model response's usage on the steps it made
    assert [r.step_tokens for r in run.records] == [110, 168, 235]
    assert run.end.answer == "Invoice INV-7 is paid: 120 EUR on 2 March."
    assert result.raw_count == 1 and run.records[2].raw[0].note == "guardrail_note item"


def test_hostile_and_non_ascii_text_is_kept_verbatim():
    _, _, runs = convert(fixture("openai-responses", "hostile_unicode.jsonl"))
    run = runs[0]
    assert run.info.task == "Sag \x1b[1mHallo\x1b[0m [i]bitte[/i] — 你好"
    assert run.records[0].tool == "echo[/]"
    assert run.records[0].args == {"text": "[link=https://evil.example]x[/link] \x1b]52;c;ZXZpbA==\x07"}
    assert run.records[0].thought == "[bold red]Ich prüfe[/] \u202eevil\u202c"
    assert run.end.answer == "[/]Fertig — 完了 \x1b]52;c;cm0=\x07"


def test_sniff_and_openai_chat_refuses_responses_items():
    items = '[{"role": "user", "content": "q"}, {"type": "function_call", "call_id": "c", "name": "x"'
    assert openai_responses.sniff(items)[0]
    ok, why = openai_chat.sniff(items)
    assert not ok and "OpenAI Responses" in why
    assert openai_responses.sniff('{"id": "resp_1", "object": "response", "output": [')[0]
    assert openai_responses.sniff('{"$schemaVersion": "1.2", "current_agent": {"name": "a"}')[0]
    assert openai_responses.sniff('[{"type": "message", "role": "user", "content": [{"type": "input_text"')[0]
    # Chat Completions and Anthropic messages are not Responses items
    assert not openai_responses.sniff('[{"role": "user", "content": "q"}, {"role": "tool", "tool_call_id": "c"}]')[0]
    assert not openai_responses.sniff('{"type": "message", "role": "assistant", "content": [{"type": "text"')[0]


# --- real files ----------------------------------------------------------------------------

def test_real_item_lists_open_as_responses_not_as_chat():
    path = REAL / "pydantic-ai" / "thinking_with_tool_calls.items.json"
    items = json.loads(path.read_text(encoding="utf-8"))
    name, result, runs = convert(path)
    assert name == "openai-responses"
    head = path.read_text(encoding="utf-8")[:65536]
    assert openai_chat.sniff(head) == (False, "Responses API items (function_call, function_call_output, "
                                              "output_text, reasoning, summary_text): OpenAI Responses, "
                                              "not Chat Completions")
    [run] = runs
    assert run.info.task == items[0]["content"]
    assert tools_called(run) == ["update_plan", None]
    summaries = [s["text"] for s in items[1]["summary"]]
    assert run.records[0].thought == "\n".join(summaries)
    assert run.records[0].args == json.loads(items[2]["arguments"])
    assert run.records[0].observation == "plan updated"
    assert run.end.answer == items[4]["content"][0]["text"]
    assert result.raw_count == 0 and result.problems == []

    _, _, [simple] = convert(REAL / "pydantic-ai" / "simple_response_with_tool_call.items.json")
    assert tools_called(simple) == ["get_capital", None]
    assert simple.records[0].observation == "Potato City"
    assert simple.end.answer == "The capital of PotatoLand is Potato City."


def test_real_response_objects():
    for name, tokens in (("thinking_with_tool_calls.responses.json", [2050, 2211]),
                         ("simple_response_with_tool_call.responses.json", [58, 78])):
        path = REAL / "pydantic-ai" / name
        responses = json.loads(path.read_text(encoding="utf-8"))
        _, result, [run] = convert(path)
        assert run.info.name == responses[0]["model"]
        assert [r.step_tokens for r in run.records] == tokens
        assert tokens == [r["usage"]["total_tokens"] for r in responses]
        assert run.records[0].tool == responses[0]["output"][-1]["name"]
        assert run.end.answer == responses[1]["output"][0]["content"][0]["text"]
        assert [t["name"] for t in run.info.tools] == [responses[0]["tools"][0]["name"]]


def test_real_run_states():
    folder = REAL / "agents-sdk"
    _, result, [pending] = convert(folder / "v1_13_pending_tool_approval.json")
    assert pending.info.name == "compat-agent" and pending.info.task == "historical input"
    assert tools_called(pending) == ["historical_approval"]
    assert pending.records[0].args == {"account_id": "account-1"}
    assert (pending.end.outcome, pending.end.message) == ("awaiting approval", "waiting for approval: historical_approval")
    assert [t["name"] for t in pending.info.tools] == ["historical_approval"]
    assert result.raw_count == 1  # the approval item, which repeats the call

    _, result, [orphan] = convert(folder / "v1_11_tool_output_custom_data.json")
    assert orphan.step_count == 0 and result.raw_count == 1
    assert "'custom-data-1', which no call in the run has" in problems_text(result)

    _, result, [empty] = convert(folder / "v1_2_reasoning_item_id_policy.json")
    assert empty.step_count == 0 and result.raw_count == 1  # a reasoning item with no summary: kept

    _, _, [owned] = convert(folder / "v1_13_nested_history_ownership.json")
    assert owned.end.answer == "owned history"
