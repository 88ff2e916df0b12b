"""OpenTelemetry spans, whatever encoding they came in, read as agentdbg runs.

Each encoding (OTLP/JSON, OTLP protobuf, the Python SDK's span JSON, ...) only turns its
records into ``Span`` objects: ids as lowercase hex, times in nanoseconds, attributes as
plain values. Everything after that is here, so every encoding maps attributes the same way.

Spans are read by ``gen_ai.operation.name``: ``invoke_agent`` is a run (its name, task,
answer and status), ``chat`` (also ``text_completion``, ``generate_content``) a model turn
(``gen_ai.output.messages``: text and reasoning parts are the thought, ``tool_call``
parts the actions; ``gen_ai.usage.input_tokens`` + ``output_tokens`` its tokens) and
``execute_tool`` a tool call and its reply (``gen_ai.tool.name``, ``gen_ai.tool.call.id``,
``.arguments``, ``.result``; ``error.type`` or an error status make it an error). A
``tool_call_response`` part in a later turn's ``gen_ai.input.messages`` answers a call
no tool span answered (its text under ``response`` or ``result``: both are in use).

Runs: each outermost agent span and the spans under it (by parent id); spans of a trace
under no agent span form one run per trace. Within a run, spans are taken in start-time
order. Any other span (a nested agent, an HTTP call, an embedding) is kept as a raw
record with the step it happened in.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agentdbg.importers.base import (
    ImportResult,
    Source,
    params_from_schema,
    text_of,
    token_count,
    tool_spec,
)
from agentdbg.importers.builder import RunBuilder
from agentdbg.importers.chat import Call, ChatAssembler

MODEL_TURNS = {"chat", "text_completion", "generate_content"}


@dataclass
class Span:
    """One span as every encoding gives it: ids as lowercase hex, ``start`` in
    nanoseconds since the epoch, attributes and event attributes as plain values."""

    data: Any  # the record as the file holds it: what a raw event keeps
    trace: str
    id: str
    parent: str
    name: str
    start: int
    attrs: dict
    failed: bool = False
    status_message: str = ""
    events: list[dict] = field(default_factory=list)  # [{"name": str, "attributes": dict}]
    depth: int = 0

    @property
    def op(self) -> str:
        return text_of(self.attrs.get("gen_ai.operation.name"))


def convert_spans(src: Source, spans: list[Span], policy: str = "OpenTelemetry GenAI spans") -> ImportResult:
    """Every run in ``spans``; ``policy`` names the source in each run's policy."""
    result = ImportResult(problems=src.problems)
    for agent, members in group_runs(spans):
        events, raw = _run_events(src, agent, members, policy)
        result.runs.append(events)
        result.raw_count += raw
    return result


def group_runs(spans: list[Span]) -> list[tuple[Span | None, list[Span]]]:
    """(agent span or None, the run's spans in start order), runs in start order."""
    by_id = {(s.trace, s.id): s for s in spans}
    groups: dict[tuple, list[Span]] = {}
    agents: dict[tuple, Span | None] = {}
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


def _run_events(src: Source, agent: Span | None, members: list[Span], policy: str) -> tuple[list, int]:
    name = (text_of(agent.attrs.get("gen_ai.agent.name")) or agent.name) if agent is not None else ""
    builder = RunBuilder(name=name, source=src.path, policy=f"recorded: {policy}")
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
    if model:
        builder.policy = f"recorded: {model} ({policy})"
    return builder.build(outcome=outcome, message=message, total_tokens=total), builder.raw_count


def _answer(agent: Span) -> str:
    texts = []
    for message in _messages(agent.attrs.get("gen_ai.output.messages")):
        texts.extend(text_of(p.get("content")) for p in _parts(message) if p.get("type") == "text")
    return "\n".join(texts)


def _model_turn(chat: ChatAssembler, builder: RunBuilder, span: Span) -> None:
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


def _tool_call(chat: ChatAssembler, builder: RunBuilder, span: Span) -> None:
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
