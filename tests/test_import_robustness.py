"""Whatever a file holds, an importer either reads it into well-formed runs or says it
cannot (NotImportable): never another exception. Inputs are generated near each format's
shape, so the generator reaches the converters' inner paths."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentdbg import importers
from agentdbg.engine import events as ev

KEYS = st.sampled_from([
    "role", "content", "tool_calls", "id", "function", "name", "arguments", "type", "tool_call_id",
    "tool_call_ids", "messages", "trajectory", "history", "info", "action", "observation", "thought",
    "resourceSpans", "scopeSpans", "spans", "attributes", "key", "value", "stringValue", "intValue",
    "input", "tool_use_id", "is_error", "text", "usage", "exit_status", "submission", "system", "message",
    "context", "trace_id", "span_id", "parent_id", "parent", "kind", "start_time", "final_output", "events",
    "object", "output", "call_id", "summary", "run_type", "inputs", "outputs", "child_runs", "generations",
    "post", "patch", "dotted_order", "raw_item", "generated_items", "$schemaVersion", "kwargs", "lc", "data",
])
LEAF = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=6),
                 st.sampled_from(["assistant", "user", "tool", "chat", "execute_tool", "invoke_agent",
                                  "tool_use", "tool_result", "text", "gen_ai.operation.name", "call_llm",
                                  "function_call", "function_call_output", "reasoning", "message", "response",
                                  "summary_text", "output_text", "web_search_call", "llm", "chain",
                                  "SpanKind.INTERNAL", "inference", "agentic.tool.invocation", "0x01", "0x02"]))
VALUES = st.recursive(LEAF, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                    st.dictionaries(KEYS, inner, max_size=5)), max_leaves=30)
PARTS = st.lists(st.fixed_dictionaries({
    "type": st.sampled_from(["text", "tool_call", "tool_call_response", "reasoning", "other"]),
    "id": LEAF, "name": LEAF, "arguments": VALUES, "response": VALUES, "content": LEAF}), max_size=3)
MESSAGES_ATTR = st.lists(st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "tool"]),
                                                "parts": PARTS}), max_size=3).map(json.dumps)
ATTRIBUTE = st.fixed_dictionaries({
    "key": st.sampled_from(["gen_ai.operation.name", "gen_ai.tool.name", "gen_ai.tool.call.id",
                            "gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "error.type",
                            "gen_ai.usage.input_tokens", "gen_ai.input.messages", "gen_ai.output.messages"]),
    "value": st.one_of(st.fixed_dictionaries({"stringValue": st.one_of(LEAF, MESSAGES_ATTR)}),
                       st.fixed_dictionaries({"intValue": LEAF}), VALUES)})
SPAN = st.fixed_dictionaries({
    "traceId": st.sampled_from(["a", "b", None]), "spanId": st.sampled_from(["1", "2", "3", None]),
    "parentSpanId": st.sampled_from(["1", "2", "", None]), "name": LEAF, "startTimeUnixNano": LEAF,
    "status": VALUES, "attributes": st.lists(ATTRIBUTE, max_size=5)})
OTLP = st.fixed_dictionaries({"resourceSpans": st.lists(st.fixed_dictionaries({"scopeSpans": st.lists(
    st.fixed_dictionaries({"spans": st.lists(SPAN, max_size=5)}), max_size=2)}), max_size=2)})
BLOCK = st.fixed_dictionaries({
    "type": st.sampled_from(["text", "thinking", "tool_use", "tool_result", "image"]),
    "id": LEAF, "tool_use_id": LEAF, "name": LEAF, "input": VALUES, "content": VALUES, "is_error": LEAF})
MESSAGE = st.fixed_dictionaries({
    "role": st.sampled_from(["user", "assistant", "tool", "system", None]),
    "content": st.one_of(LEAF, st.lists(st.one_of(BLOCK, LEAF), max_size=3)),
    "tool_calls": st.one_of(LEAF, st.lists(st.fixed_dictionaries({
        "id": LEAF, "function": st.one_of(LEAF, st.fixed_dictionaries({"name": LEAF, "arguments": VALUES}))}),
        max_size=3)),
    "tool_call_id": LEAF, "usage": VALUES})
TRAJECTORY = st.fixed_dictionaries({
    "trajectory": st.lists(st.one_of(LEAF, st.fixed_dictionaries({"action": LEAF, "observation": LEAF,
                                                                  "thought": LEAF})), max_size=4),
    "history": st.lists(MESSAGE, max_size=3), "info": VALUES, "replay_config": st.one_of(VALUES, st.text(max_size=4))})
# Near the evaluation harnesses' shapes (Inspect logs, OpenHands events, tau-bench records,
# mini-swe-agent trajectories), every field free to be of the wrong type.
EVAL_MESSAGE = st.fixed_dictionaries({
    "role": st.sampled_from(["user", "assistant", "tool", "system", "exit", None]),
    "id": LEAF, "source": st.sampled_from(["input", "generate", None]),
    "content": st.one_of(LEAF, st.sampled_from(["```bash\nls\n```", "<returncode>1</returncode>\nx"]),
                         st.lists(st.one_of(BLOCK, st.fixed_dictionaries({"type": st.just("reasoning"),
                                                                           "reasoning": LEAF, "redacted": LEAF})),
                                  max_size=2)),
    "tool_calls": st.one_of(LEAF, st.lists(st.fixed_dictionaries({
        "id": LEAF, "function": st.one_of(LEAF, st.fixed_dictionaries({"name": LEAF, "arguments": VALUES})),
        "arguments": VALUES, "parse_error": LEAF}), max_size=2)),
    "tool_call_id": LEAF, "error": st.one_of(LEAF, st.fixed_dictionaries({"type": LEAF, "message": LEAF})),
    "extra": VALUES})
INSPECT_EVENT = st.fixed_dictionaries({
    "event": st.sampled_from(["model", "tool", "score", None]), "id": LEAF, "tools": VALUES,
    "output": st.one_of(VALUES, st.fixed_dictionaries({"choices": st.lists(st.fixed_dictionaries(
        {"message": st.one_of(VALUES, EVAL_MESSAGE)}), max_size=1), "usage": VALUES})),
    "result": VALUES, "error": VALUES})
INSPECT = st.fixed_dictionaries({
    "version": st.just(2), "status": LEAF, "error": VALUES, "plan": VALUES,
    "eval": st.one_of(VALUES, st.fixed_dictionaries({"task": LEAF, "model": LEAF, "dataset": VALUES})),
    "samples": st.one_of(LEAF, st.lists(st.one_of(LEAF, st.fixed_dictionaries({
        "id": LEAF, "epoch": LEAF, "input": st.one_of(LEAF, st.lists(EVAL_MESSAGE, max_size=2)), "target": VALUES,
        "messages": st.one_of(LEAF, st.lists(EVAL_MESSAGE, max_size=4)),
        "events": st.one_of(LEAF, st.lists(INSPECT_EVENT, max_size=4)), "scores": VALUES,
        "model_usage": VALUES, "error": VALUES, "limit": VALUES, "attachments": VALUES})), max_size=3))})
OPENHANDS_EVENT = st.fixed_dictionaries({
    "id": LEAF, "source": st.sampled_from(["agent", "user", "environment"]), "cause": LEAF,
    "action": st.sampled_from(["run", "message", "finish", "system", "think", "recall", None]),
    "observation": st.sampled_from(["run", "error", "agent_state_changed", None]),
    "args": VALUES, "content": LEAF, "extras": VALUES, "message": LEAF, "llm_metrics": VALUES,
    "tool_call_metadata": st.one_of(VALUES, st.fixed_dictionaries({
        "function_name": LEAF, "tool_call_id": LEAF,
        "model_response": st.one_of(VALUES, st.fixed_dictionaries({"id": LEAF, "usage": VALUES, "choices": VALUES}))}))})
OPENHANDS = st.one_of(st.lists(OPENHANDS_EVENT, max_size=6), st.fixed_dictionaries({
    "instance_id": LEAF, "history": st.lists(OPENHANDS_EVENT, max_size=5), "metadata": VALUES,
    "metrics": VALUES, "error": LEAF, "test_result": VALUES, "instruction": LEAF}))
TAU = st.lists(st.one_of(LEAF, st.fixed_dictionaries({
    "task_id": LEAF, "reward": LEAF, "trial": LEAF, "info": VALUES,
    "traj": st.one_of(LEAF, st.lists(EVAL_MESSAGE, max_size=5))})), max_size=3)
MINI = st.fixed_dictionaries({
    "trajectory_format": st.just("mini-swe-agent-1"), "info": VALUES, "instance_id": LEAF,
    "messages": st.one_of(LEAF, st.lists(EVAL_MESSAGE, max_size=6))})

LINES = st.lists(st.sampled_from([
    "Question: q", "Claim: c", "Thought: t", "Action: a[b]", "Action: x: y", "Action Input: {", "Observation: o",
    "Final Answer: f", "Answer: a", "Thought 1: t", "Action 1: Search[x]", "Action 2: ", "Finish[x]",
    "Observation 1: Invalid action: x", "{'steps': 2, 'answer': 'b'}", "-----------", "", "junk"]), max_size=12)
# The papers' harnesses' dialects: retries, trial sections, WebShop pages, ALFWorld commands.
DIALECT_LINES = st.lists(st.sampled_from([
    "ohh...", "ohh... t", "Thought 1: t", "Thought 2: t", "Action 1: Search[x]", "Action 2:", "Observation 1: o",
    "Question: q", "Question: q?You have attempted to answer following question before and failed.",
    "Reflections:", "- r", "Correct answer: a", "Context: c", "(END PREVIOUS TRIAL)", "BEGIN TRIAL 1",
    "Trial summary: Correct: 1", "#####", "------------- BEGIN CORRECT AGENTS -------------",
    "------------- BEGIN HALTED AGENTS --------------", "Action: reset", "Observation: ", "Webshop", "Instruction:",
    "Action: search[x]", "Action: click[Buy Now]", "Action: think[t", "Action: x", "Observation: Invalid action!",
    "Observation: Your score (min 0.0, max 1.0): 1.0", "Observation: Your score (min 0.0, max 1.0): 1e999",
    "1 0.5 0.5 0.0", "0.5 0.5 0.0", "-----------------", "3", "STATUS: FAIL", "STATUS: OK", "Next plan: p",
    "New plan: p", "Environment #1:", "Environment #2: Success", "Here is the task:",
    "Your memory for the task below:", "Trial 0:", "Your task is to: t", "> go to x 1", "> think: t", "> ",
    "Nothing happens.", "OK.", "", "junk"]), max_size=16)

ROLLOUT_LINE = st.fixed_dictionaries({
    "timestamp": LEAF, "type": st.sampled_from(["session_meta", "turn_context", "response_item", "event_msg", "x"]),
    "payload": st.one_of(LEAF, st.fixed_dictionaries({
        "type": st.sampled_from(["message", "reasoning", "function_call", "function_call_output", "custom_tool_call",
                                 "custom_tool_call_output", "web_search_call", "user_message", "token_count",
                                 "exec_command_end", "task_started", "task_complete", "turn_aborted", "error"]),
        "role": st.sampled_from(["user", "assistant", "developer"]), "content": VALUES, "name": LEAF,
        "arguments": VALUES, "call_id": st.sampled_from(["c1", "c2", None]), "output": VALUES, "input": LEAF,
        "message": LEAF, "info": VALUES, "exit_code": LEAF, "process_id": LEAF, "summary": VALUES,
        "last_agent_message": LEAF, "model": LEAF, "action": VALUES, "status": LEAF, "id": LEAF}))})
CLAUDE_ENTRY = st.fixed_dictionaries({
    "type": st.sampled_from(["user", "assistant", "system", "summary", "progress"]), "sessionId": LEAF,
    "isSidechain": LEAF, "agentId": LEAF, "uuid": LEAF, "parentUuid": LEAF, "isMeta": LEAF,
    "isApiErrorMessage": LEAF, "message": st.one_of(LEAF, st.fixed_dictionaries({
        "id": st.sampled_from(["m1", "m2", None]), "role": LEAF, "model": st.sampled_from(["c", "<synthetic>", None]),
        "content": st.one_of(LEAF, st.lists(st.one_of(BLOCK, LEAF), max_size=3)), "usage": VALUES}))})
GEMINI_MESSAGE = st.fixed_dictionaries({
    "id": st.sampled_from(["m1", "m2", None]), "type": st.sampled_from(["user", "gemini", "info", "error", "x"]),
    "content": st.one_of(LEAF, st.lists(VALUES, max_size=2)), "thoughts": VALUES, "tokens": VALUES,
    "toolCalls": st.one_of(LEAF, st.lists(st.fixed_dictionaries({
        "id": LEAF, "name": LEAF, "args": VALUES, "status": LEAF, "result": VALUES, "resultDisplay": LEAF}),
        max_size=3))})
GEMINI = st.one_of(
    st.fixed_dictionaries({"sessionId": LEAF, "projectHash": LEAF, "messages": st.one_of(LEAF, st.lists(GEMINI_MESSAGE, max_size=4))}),
    st.lists(st.one_of(GEMINI_MESSAGE, st.fixed_dictionaries({"$rewindTo": LEAF}),
                       st.fixed_dictionaries({"$set": VALUES})), min_size=2, max_size=5).map(
        lambda lines: "\n".join(json.dumps(line) for line in lines)))
PART = st.fixed_dictionaries({
    "type": st.sampled_from(["text", "reasoning", "tool-call", "tool-result", "tool-error", "source"]),
    "text": LEAF, "toolCallId": st.sampled_from(["c1", "c2", None]), "toolName": LEAF, "input": VALUES,
    "output": VALUES, "error": VALUES})
VERCEL_STEP = st.fixed_dictionaries({
    "stepType": LEAF, "text": LEAF, "content": st.one_of(LEAF, st.lists(PART, max_size=3)),
    "toolCalls": st.one_of(LEAF, st.lists(st.fixed_dictionaries({"toolCallId": LEAF, "toolName": LEAF, "args": VALUES}), max_size=2)),
    "toolResults": st.one_of(LEAF, st.lists(st.fixed_dictionaries({"toolCallId": LEAF, "toolName": LEAF, "result": VALUES}), max_size=2)),
    "usage": VALUES, "finishReason": LEAF, "response": VALUES, "warnings": VALUES})
VERCEL = st.fixed_dictionaries({"steps": st.one_of(LEAF, st.lists(st.one_of(VERCEL_STEP, LEAF), max_size=4)),
                                "prompt": LEAF, "messages": VALUES, "finishReason": LEAF, "usage": VALUES})
ATTRIBUTE_KEYS = st.sampled_from([
    "gen_ai.operation.name", "gen_ai.tool.name", "gen_ai.tool.call.id", "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result", "error.type", "gen_ai.usage.input_tokens", "gen_ai.input.messages",
    "gen_ai.output.messages", "gen_ai.prompt.0.role", "gen_ai.prompt.0.content", "gen_ai.prompt.1.tool_call_id",
    "gen_ai.completion.0.content", "gen_ai.completion.0.tool_calls.0.name", "gen_ai.completion.0.tool_calls.0.id",
    "gen_ai.completion.1.content", "llm.request.type", "llm.request.functions.0.name", "llm.usage.total_tokens",
    "traceloop.span.kind", "traceloop.entity.input", "traceloop.entity.output", "gen_ai.output", "gen_ai.tool.args",
    "span.type", "entity.1.name"])
PLAIN_ATTRIBUTES = st.dictionaries(ATTRIBUTE_KEYS, st.one_of(LEAF, MESSAGES_ATTR, VALUES), max_size=6)
SDK_SPAN = st.fixed_dictionaries({
    "name": LEAF, "kind": st.sampled_from(["SpanKind.INTERNAL", "internal", None]),
    "context": st.one_of(LEAF, st.fixed_dictionaries({"trace_id": st.sampled_from(["0x1", "0x2", 1, None]),
                                                      "span_id": st.sampled_from(["0x1", "0x2", "0x3", 2, 3, None])})),
    "parent_id": st.sampled_from(["0x1", "0x2", None, 3]),
    "parent": st.one_of(st.none(), st.fixed_dictionaries({"span_id": st.sampled_from([1, 2, None])})),
    "start_time": st.one_of(LEAF, st.sampled_from(["2026-01-01T00:00:00Z", "2026-13-01", "x"])),
    "status": VALUES, "attributes": st.one_of(VALUES, PLAIN_ATTRIBUTES),
    "events": st.one_of(VALUES, st.lists(st.fixed_dictionaries({
        "name": st.sampled_from(["data.input", "data.output", "metadata", "exception"]), "attributes": VALUES}),
        max_size=3))})
ITEM = st.fixed_dictionaries({
    "type": st.sampled_from(["message", "reasoning", "function_call", "function_call_output", "custom_tool_call",
                             "web_search_call", "code_interpreter_call", "mcp_call", "local_shell_call_output",
                             "compaction", "odd"]),
    "role": st.sampled_from(["user", "assistant", "system", None]), "content": st.one_of(LEAF, VALUES),
    "call_id": st.sampled_from(["c1", "c2", None, 3]), "id": LEAF, "name": LEAF, "arguments": VALUES,
    "output": VALUES, "summary": VALUES, "status": LEAF, "action": VALUES, "input": LEAF})
RESPONSES = st.one_of(
    st.lists(ITEM, max_size=6),
    st.fixed_dictionaries({"object": st.just("response"), "output": st.one_of(st.lists(ITEM, max_size=4), VALUES),
                           "usage": VALUES, "status": LEAF, "model": LEAF, "tools": VALUES, "error": VALUES}),
    st.fixed_dictionaries({"$schemaVersion": st.just("1.13"), "original_input": st.one_of(LEAF, st.lists(ITEM, max_size=3)),
                           "generated_items": st.lists(st.fixed_dictionaries({
                               "type": st.sampled_from(["tool_call_item", "tool_approval_item", "message_output_item"]),
                               "raw_item": st.one_of(ITEM, LEAF)}), max_size=4),
                           "model_responses": VALUES, "current_step": VALUES}))
LC_RUN = st.recursive(
    st.fixed_dictionaries({"id": st.sampled_from(["r1", "r2", "r3", None]), "name": LEAF,
                           "run_type": st.sampled_from(["chain", "llm", "chat_model", "tool", "retriever", None]),
                           "parent_run_id": st.sampled_from(["r1", "r2", None]),
                           "dotted_order": st.sampled_from(["1", "1.2", "1.2.3", None]),
                           "inputs": VALUES, "outputs": VALUES, "error": LEAF, "extra": VALUES,
                           "start_time": LEAF}),
    lambda inner: st.fixed_dictionaries({"id": LEAF, "run_type": st.just("chain"), "inputs": VALUES,
                                         "child_runs": st.lists(inner, max_size=3)}), max_leaves=8)
LANGCHAIN = st.one_of(LC_RUN, st.lists(LC_RUN, max_size=4),
                      st.fixed_dictionaries({"post": st.lists(LC_RUN, max_size=3), "patch": st.lists(LC_RUN, max_size=3)}))

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))


def _every_importer_copes_with(text: str) -> None:
    for module in importers.FORMATS:
        module.sniff(text, "generated")
        try:
            result = module.convert(text, "generated")
        except importers.NotImportable:
            continue
        for events in result.runs:
            assert isinstance(events[0], ev.RunStart) and isinstance(events[-1], ev.RunEnd)
            for event in events:  # each event is one a trace can hold and read back
                assert ev.event_from_dict(json.loads(json.dumps(event.to_dict()))) == event


@SETTINGS
@given(VALUES)
def test_any_json(value):
    _every_importer_copes_with(json.dumps(value))


@SETTINGS
@given(st.one_of(OTLP, TRAJECTORY, st.lists(MESSAGE, max_size=5)))
def test_json_near_each_format(value):
    _every_importer_copes_with(json.dumps(value))


@SETTINGS
@given(st.one_of(INSPECT, OPENHANDS, TAU, MINI))
def test_json_near_each_evaluation_format(value):
    _every_importer_copes_with(json.dumps(value))


@settings(SETTINGS, max_examples=60)
@given(st.lists(OPENHANDS, min_size=2, max_size=3))
def test_evaluation_output_lines(instances):
    _every_importer_copes_with("\n".join(json.dumps(i) for i in instances))


@SETTINGS
@given(st.one_of(st.lists(SDK_SPAN, max_size=5), st.fixed_dictionaries({
    "spans": st.lists(SDK_SPAN, max_size=5), "final_output": VALUES}), RESPONSES, LANGCHAIN))
def test_json_near_the_span_and_run_formats(value):
    _every_importer_copes_with(json.dumps(value))


@SETTINGS
@given(st.lists(SDK_SPAN, max_size=4), st.integers(0, 400))
def test_concatenated_span_dumps_cut_anywhere(spans, cut):
    text = "".join(json.dumps(span, indent=4) + "\n" for span in spans)
    _every_importer_copes_with(text[: cut % (len(text) + 1)] or "{")


@SETTINGS
@given(st.lists(MESSAGE, max_size=5))
def test_json_lines(messages):
    _every_importer_copes_with("\n".join(json.dumps(m) for m in messages) + '\n{"role": "user"}')


@SETTINGS
@given(st.one_of(st.lists(ROLLOUT_LINE, min_size=1, max_size=6), st.lists(CLAUDE_ENTRY, min_size=1, max_size=6)))
def test_session_json_lines(lines):
    _every_importer_copes_with("\n".join(json.dumps(line) for line in lines))


@SETTINGS
@given(st.one_of(GEMINI, VERCEL, st.lists(VERCEL, max_size=2)))
def test_gemini_and_vercel_near_their_shape(value):
    _every_importer_copes_with(value if isinstance(value, str) else json.dumps(value))


@SETTINGS
@given(LINES)
def test_text(lines):
    _every_importer_copes_with("\n".join(lines))


@SETTINGS
@given(DIALECT_LINES)
def test_the_harnesses_text_dialects(lines):
    _every_importer_copes_with("\n".join(lines))


@settings(SETTINGS, max_examples=60)
@given(st.dictionaries(st.text(max_size=4), st.one_of(LEAF, DIALECT_LINES.map("\n".join)), max_size=3))
def test_prompt_files_of_the_text_dialects(prompts):
    _every_importer_copes_with(json.dumps(prompts))


BAD_USAGE = [
    ("openai-chat", [{"role": "user", "content": "q"},
                     {"role": "assistant", "content": "a", "usage": {"total_tokens": -50}},
                     {"role": "assistant", "content": "b", "usage": {"prompt_tokens": True, "completion_tokens": 7}}]),
    ("anthropic-messages", [{"role": "user", "content": [{"type": "text", "text": "q"}]},
                            {"role": "assistant", "content": [{"type": "thinking", "thinking": "a"}],
                             "usage": {"input_tokens": -50, "output_tokens": True}},
                            {"role": "assistant", "content": [{"type": "text", "text": "b"}],
                             "usage": {"input_tokens": 7}}]),
    ("otel-genai", {"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": "t", "spanId": str(n), "name": "chat", "startTimeUnixNano": str(n), "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
            {"key": "gen_ai.output.messages", "value": {"stringValue": json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": text}]}])}},
            {"key": "gen_ai.usage.input_tokens", "value": {"intValue": str(tokens)}}]}
        for n, text, tokens in ((1, "a", -50), (2, "b", 7))]}]}]}),
    ("swe-agent", {"trajectory": [{"action": "ls", "observation": "x", "thought": "a"}],
                   "info": {"model_stats": {"tokens_sent": -50, "tokens_received": 7}}}),
    ("claude-code", "\n".join(json.dumps(entry) for entry in [
        {"type": "user", "sessionId": "s", "message": {"role": "user", "content": "q"}},
        {"type": "assistant", "sessionId": "s", "message": {"id": "m1", "role": "assistant", "content": [
            {"type": "text", "text": "a"}], "usage": {"input_tokens": -50, "output_tokens": True}}},
        {"type": "assistant", "sessionId": "s", "message": {"id": "m2", "role": "assistant", "content": [
            {"type": "text", "text": "b"}], "usage": {"input_tokens": 7, "output_tokens": "9"}}}])),
    ("codex-rollout", "\n".join(json.dumps({"timestamp": "t", "type": kind, "payload": payload}) for kind, payload in [
        ("event_msg", {"type": "user_message", "message": "q"}),
        ("response_item", {"type": "function_call", "name": "ls", "arguments": "{}", "call_id": "c"}),
        ("event_msg", {"type": "token_count", "info": {"total_token_usage": {"total_tokens": -50},
                                                        "last_token_usage": {"total_tokens": True}}}),
        ("event_msg", {"type": "token_count", "info": {"total_token_usage": {"total_tokens": 7}}})])),
    ("gemini-cli", {"sessionId": "s", "projectHash": "h", "messages": [
        {"type": "user", "content": "q"}, {"type": "gemini", "content": "a", "tokens": {"total": -50}},
        {"type": "gemini", "content": "b", "tokens": {"input": True, "output": 7}}]}),
    ("vercel-ai-sdk", {"steps": [{"text": "a", "usage": {"totalTokens": -50}},
                                 {"text": "b", "usage": {"promptTokens": True, "completionTokens": 7}}]}),
    ("inspect-ai", {"version": 2, "eval": {"task": "t"}, "samples": [{
        "id": 1, "input": "q", "messages": [{"role": "user", "content": "q"},
                                            {"role": "assistant", "id": "a", "content": "x"},
                                            {"role": "assistant", "id": "b", "content": "y"}],
        "events": [{"event": "model", "output": {"choices": [{"message": {"id": "a"}}], "usage": {"total_tokens": -50}}},
                   {"event": "model", "output": {"choices": [{"message": {"id": "b"}}],
                                                 "usage": {"input_tokens": True, "output_tokens": 7}}}]}]}),
    ("openhands", [{"id": 0, "source": "user", "action": "message", "args": {"content": "q"}}] + [
        {"id": n, "source": "agent", "action": "message", "args": {"content": text},
         "tool_call_metadata": {"model_response": {"id": f"r{n}", "usage": usage}}}
        for n, text, usage in ((1, "a", {"total_tokens": -50}), (2, "b", {"prompt_tokens": True, "completion_tokens": 7}))]),
    ("mini-swe-agent", {"trajectory_format": "mini-swe-agent-1", "info": {}, "messages": [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "a", "extra": {"response": {"usage": {"total_tokens": -50}}}},
        {"role": "assistant", "content": "b", "extra": {"response": {"usage": {"prompt_tokens": True, "completion_tokens": 7}}}}]}),
    ("otel-sdk", [{"name": "chat", "context": {"trace_id": "0x1", "span_id": f"0x{n}"}, "kind": "SpanKind.CLIENT",
                   "start_time": f"2026-01-01T00:00:0{n}Z", "attributes": {
                       "gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": tokens,
                       "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": text}]}])}}
                  for n, text, tokens in ((1, "a", -50), (2, "b", True), (3, "c", 7))]),
    ("openai-responses", [{"object": "response", "output": [{"type": "message", "role": "assistant",
                                                               "content": [{"type": "output_text", "text": text}]}],
                           "usage": usage} for text, usage in (("a", {"total_tokens": -50}),
                                                               ("b", {"input_tokens": True, "output_tokens": 7}))]),
    ("langchain", {"id": "r", "run_type": "chain", "inputs": {"input": "q"}, "child_runs": [
        {"id": f"l{n}", "run_type": "llm", "parent_run_id": "r", "dotted_order": f"1.{n}",
         "outputs": {"generations": [[{"text": text}]], "llm_output": {"token_usage": usage}}}
        for n, text, usage in ((1, "a", {"total_tokens": -50, "prompt_tokens": False}), (2, "b", {"prompt_tokens": 7}))]}),
]


@pytest.mark.parametrize(("name", "data"), BAD_USAGE, ids=[name for name, _ in BAD_USAGE])
def test_usage_figures_that_are_not_counts_are_not_counted(name, data):
    result = importers.get_format(name).convert(data if isinstance(data, str) else json.dumps(data), "usage")
    [events] = result.runs
    for event in events:  # a converted run is one a trace can hold and read back
        assert ev.event_from_dict(json.loads(json.dumps(event.to_dict()))) == event
    counters = [e for e in events if isinstance(e, ev.GuardCounters)]
    assert counters[-1].tokens == [7, None]
