"""OpenTelemetry GenAI spans in OTLP/JSON (``resourceSpans[].scopeSpans[].spans[]``).

Spans are read by ``gen_ai.operation.name``: ``invoke_agent`` is a run (its name, task,
answer and status), ``chat`` (also ``text_completion``, ``generate_content``) a model turn
(``gen_ai.output.messages``: text and reasoning parts are the thought, ``tool_call``
parts the actions; ``gen_ai.usage.input_tokens`` + ``output_tokens`` its tokens) and
``execute_tool`` a tool call and its reply (``gen_ai.tool.name``, ``gen_ai.tool.call.id``,
``.arguments``, ``.result``; ``error.type`` or an error status make it an error). A
``tool_call_response`` part in a later turn's ``gen_ai.input.messages`` answers a call
no tool span answered (its text under ``response`` or ``result``: both are in use).

Runs: each outermost ``invoke_agent`` span and the spans under it (by ``parentSpanId``);
spans of a trace under no agent span form one run per trace. Within a run, spans are
taken in start-time order. Any other span (a nested agent, an HTTP call, an embedding)
is kept as a raw record with the step it happened in. A JSON Lines file of OTLP exports
(as the collector's file exporter writes) is read as one export.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentdbg.importers.base import (
    ImportResult,
    Source,
    as_source,
    params_from_schema,
    text_of,
    token_count,
    tool_spec,
)
from agentdbg.importers.builder import RunBuilder
from agentdbg.importers.chat import Call, ChatAssembler
from agentdbg.importers.jsondata import is_json_lines, load_json, load_json_lines
from agentdbg.importers.sniffing import outline

NAME = "otel-genai"
DESCRIPTION = "OpenTelemetry GenAI spans in OTLP/JSON (resourceSpans / scopeSpans / spans)"

MODEL_TURNS = {"chat", "text_completion", "generate_content"}
_ERROR_STATUS = {2, "2", "STATUS_CODE_ERROR", "ERROR"}


def sniff(head: str, path: str = "") -> tuple[bool, str]:
    shape = outline(head)
    if not shape.root:
        return False, "not JSON"
    if shape.has("resourceSpans"):
        return True, "OTLP/JSON resourceSpans"
    return False, "no top-level 'resourceSpans'"


def any_value(value: Any) -> Any:
    """An OTLP/JSON AnyValue as a plain value (``intValue`` may be a string of digits)."""
    if not isinstance(value, dict):
        return value
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        try:
            return int(value["intValue"])
        except (TypeError, ValueError, OverflowError):
            return value["intValue"]
    if "doubleValue" in value:
        return value["doubleValue"]
    if "boolValue" in value:
        return value["boolValue"]
    if "arrayValue" in value:
        items = value["arrayValue"].get("values", []) if isinstance(value["arrayValue"], dict) else []
        return [any_value(item) for item in items]
    if "kvlistValue" in value:
        items = value["kvlistValue"].get("values", []) if isinstance(value["kvlistValue"], dict) else []
        return attributes(items)
    if "bytesValue" in value:
        return value["bytesValue"]
    return None


def attributes(items: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and isinstance(item.get("key"), str):
            out[item["key"]] = any_value(item.get("value"))
    return out


@dataclass
class _Span:
    data: dict
    trace: str
    id: str
    parent: str
    name: str
    start: int
    attrs: dict
    failed: bool
    status_message: str
    depth: int = 0

    @property
    def op(self) -> str:
        return text_of(self.attrs.get("gen_ai.operation.name"))


def _failed(code: Any) -> bool:
    return isinstance(code, (int, str)) and not isinstance(code, bool) and code in _ERROR_STATUS


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _nanos(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return 0


def _spans(src: Source) -> list[_Span]:
    if is_json_lines(src.text):
        exports = [record.value for record in load_json_lines(src)]
    else:
        exports = [load_json(src)]
    spans: list[_Span] = []
    for export in exports:
        for resource in _list(export.get("resourceSpans")) if isinstance(export, dict) else []:
            if not isinstance(resource, dict):
                continue
            for scope in _list(resource.get("scopeSpans") or resource.get("instrumentationLibrarySpans")):
                for span in _list(scope.get("spans")) if isinstance(scope, dict) else []:
                    if not isinstance(span, dict):
                        continue
                    status = span.get("status") if isinstance(span.get("status"), dict) else {}
                    spans.append(_Span(
                        span, text_of(span.get("traceId")), text_of(span.get("spanId")),
                        text_of(span.get("parentSpanId")), text_of(span.get("name")),
                        _nanos(span.get("startTimeUnixNano")), attributes(span.get("attributes")),
                        _failed(status.get("code")), text_of(status.get("message"))))
    return spans


def _runs(spans: list[_Span]) -> list[tuple[_Span | None, list[_Span]]]:
    """(agent span or None, the run's spans in start order), runs in start order."""
    by_id = {(s.trace, s.id): s for s in spans}
    groups: dict[tuple, list[_Span]] = {}
    agents: dict[tuple, _Span | None] = {}
    for span in spans:
        outer, node, depth, seen = None, span, 0, set()
        while node is not None and (node.trace, node.id) not in seen:
            seen.add((node.trace, node.id))
            if node.op == "invoke_agent":
                outer = node
            node = by_id.get((node.trace, node.parent)) if node.parent else None
            depth += 1
        span.depth = depth
        key = (span.trace, outer.id if outer is not None else "")
        groups.setdefault(key, []).append(span)
        agents[key] = outer
    runs = [(agents[key], sorted(members, key=lambda s: (s.start, s.depth)))
            for key, members in groups.items()]
    return sorted(runs, key=lambda run: run[1][0].start if run[1] else 0)


def _messages(value: Any) -> list[dict]:
    """gen_ai.input.messages / output.messages: a JSON string or already structured."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return []
    return [m for m in value if isinstance(m, dict)] if isinstance(value, list) else []


def _parts(message: dict) -> list[dict]:
    parts = message.get("parts")
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


def _user_text(messages: list[dict]) -> str:
    for message in messages:
        if message.get("role") == "user":
            texts = [text_of(p.get("content")) for p in _parts(message) if p.get("type") == "text"]
            if texts:
                return "\n".join(texts)
    return ""


def _reply_text(part: dict) -> str:
    return text_of(part.get("response") if "response" in part else part.get("result"))


def _tokens(attrs: dict) -> int | None:
    keys = ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens")
    counts = [n for n in (token_count(attrs.get(k)) for k in keys) if n is not None]
    return sum(counts) if counts else None


def convert(source: str | bytes | Path, path: str | None = None) -> ImportResult:
    src = as_source(source, path)
    result = ImportResult(problems=src.problems)
    for agent, members in _runs(_spans(src)):
        events, raw = _run_events(src, agent, members)
        result.runs.append(events)
        result.raw_count += raw
    return result


def _run_events(src: Source, agent: _Span | None, members: list[_Span]) -> tuple[list, int]:
    name = (text_of(agent.attrs.get("gen_ai.agent.name")) or agent.name) if agent is not None else ""
    builder = RunBuilder(name=name,
                         source=src.path, policy="recorded: OpenTelemetry GenAI spans")
    chat = ChatAssembler(builder, src, "otel")
    if agent is not None:
        builder.task = _user_text(_messages(agent.attrs.get("gen_ai.input.messages")))
    model = ""
    turns_with_usage = False
    for span in members:
        if span is agent:
            continue
        op = span.op
        if op in MODEL_TURNS:
            model = model or text_of(span.attrs.get("gen_ai.response.model") or span.attrs.get("gen_ai.request.model"))
            turns_with_usage |= _tokens(span.attrs) is not None
            _model_turn(chat, builder, span)
        elif op == "execute_tool":
            _tool_call(chat, builder, span)
        else:
            what = f"{op} span" if op else "span"
            builder.raw("otel span", span.data, f"{what} {span.name!r}", current=True)
    if not any(span.op in MODEL_TURNS or span.op == "execute_tool" for span in members):
        src.problem(f"trace {members[0].trace if members else '?'} has no chat or execute_tool spans")
    outcome, message, total = None, "", None
    if agent is not None:
        answer = _answer(agent)
        if answer and not (builder.steps and builder.steps[-1].tool is None and builder.steps[-1].thought == answer):
            chat.assistant([answer], [])
        if agent.failed or "error.type" in agent.attrs:
            outcome = "error"
            message = ": ".join(m for m in (text_of(agent.attrs.get("error.type")), agent.status_message) if m)
        if not turns_with_usage:
            total = _tokens(agent.attrs)
    chat.finish()
    if model and builder.policy.endswith("spans"):
        builder.policy = f"recorded: {model} (OpenTelemetry GenAI spans)"
    return builder.build(outcome=outcome, message=message, total_tokens=total), builder.raw_count


def _answer(agent: _Span) -> str:
    texts = []
    for message in _messages(agent.attrs.get("gen_ai.output.messages")):
        texts.extend(text_of(p.get("content")) for p in _parts(message) if p.get("type") == "text")
    return "\n".join(texts)


def _model_turn(chat: ChatAssembler, builder: RunBuilder, span: _Span) -> None:
    inputs = _messages(span.attrs.get("gen_ai.input.messages"))
    if not builder.task:
        builder.task = _user_text(inputs)
    for message in inputs:  # replies the tool spans did not record
        for part in _parts(message):
            call_id = text_of(part.get("id"))
            if part.get("type") == "tool_call_response" and call_id and chat.waiting(call_id):
                chat.reply(call_id, _reply_text(part))
    definitions = span.attrs.get("gen_ai.tool.definitions")
    if isinstance(definitions, str):
        try:
            definitions = json.loads(definitions)
        except ValueError:
            definitions = None
    for item in definitions if isinstance(definitions, list) else []:
        if isinstance(item, dict) and item.get("name"):
            builder.add_tool(tool_spec(text_of(item["name"]), text_of(item.get("description")),
                                       params_from_schema(item.get("parameters"))))
    texts: list[str] = []
    calls: list[Call] = []
    outputs = _messages(span.attrs.get("gen_ai.output.messages"))
    for part in _parts(outputs[0]) if outputs else []:
        kind = part.get("type")
        if kind in ("text", "reasoning"):
            texts.append(text_of(part.get("content")))
        elif kind == "tool_call":
            calls.append(Call(text_of(part.get("name")) or "?", part.get("arguments"), text_of(part.get("id"))))
        else:
            builder.raw("otel output part", part, f"{kind} part of {span.name!r}", current=True)
    for extra in outputs[1:]:
        builder.raw("otel output message", extra, f"another choice of {span.name!r}", current=True)
    chat.assistant(texts, calls, _tokens(span.attrs))


def _tool_call(chat: ChatAssembler, builder: RunBuilder, span: _Span) -> None:
    attrs = span.attrs
    name = text_of(attrs.get("gen_ai.tool.name")) or span.name.removeprefix("execute_tool ").strip() or "?"
    call_id = text_of(attrs.get("gen_ai.tool.call.id"))
    if attrs.get("gen_ai.tool.description"):
        builder.add_tool(tool_spec(name, text_of(attrs["gen_ai.tool.description"])))
    error_type = text_of(attrs.get("error.type"))
    failed = span.failed or bool(error_type)
    result = attrs.get("gen_ai.tool.call.result")
    text = text_of(result) if result is not None else ": ".join(
        m for m in (error_type, span.status_message) if m) if failed else ""
    if call_id and chat.waiting(call_id):
        step = chat.reply(call_id, text, error=failed)
    else:
        step = chat.call(Call(name, attrs.get("gen_ai.tool.call.arguments"), call_id))
        chat.close(step)
        step.reply(text, failed or step.parse_error is not None, call_id)
    if failed and step is not None:
        step.error_kind = "timeout" if "timeout" in error_type.lower() else "exception"
        step.error_message = ": ".join(m for m in (error_type, span.status_message) if m) or "the tool span failed"
