"""Runs as OpenTelemetry GenAI spans in OTLP/JSON (``resourceSpans``), one trace per run.

Each run is an ``invoke_agent`` span (the task, the answer, the tools; error status when
the run ended in an error) with, under it, a ``chat`` span per step (the model's turn:
its thought as a reasoning part, a tool call or the final answer; the step's tokens) and
an ``execute_tool`` span per tool call that got a reply (arguments, result; error status
and ``error.type`` for a failed call). What the conventions have no place for is kept in
``agentdbg.*`` attributes (docs/export.md), which agentdbg's importer reads back.

Ids are derived from the run (its ``run_start`` and its number in the file): the same
input always gives the same file. Events hold no clock time, so times are synthetic: the
first run starts at ``start_ns`` and each span takes a millisecond after the one before.
The spans are written as they are made: the run's own span, which needs its end, last.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agentdbg import __version__
from agentdbg.exporters.output import to_json
from agentdbg.exporters.runs import (
    RunStream,
    arguments_object,
    call_id,
    json_schema,
    model_of,
    observation_id,
    run_facts,
    step_facts,
    turn_text,
    written_call,
)
from agentdbg.model.state import CallRecord, StepRecord
from agentdbg.outputs import AtomicOutput

NAME = "otel-genai"
DESCRIPTION = "OpenTelemetry GenAI spans in OTLP/JSON, one trace per run"

TICK_NS = 1_000_000  # each span takes a synthetic millisecond
SPAN_KIND_INTERNAL, SPAN_KIND_CLIENT = 1, 3
STATUS_ERROR = 2
_ERROR_OUTCOMES = {"error"}


def attribute(key: str, value: Any) -> dict:
    """One OTLP/JSON key-value; structures are JSON text, as the conventions allow."""
    if isinstance(value, bool):
        wrapped: dict = {"boolValue": value}
    elif isinstance(value, int):
        wrapped = {"intValue": str(value)}
    elif isinstance(value, float):
        wrapped = {"doubleValue": value}
    elif isinstance(value, str):
        wrapped = {"stringValue": value}
    elif isinstance(value, list) and value and all(isinstance(item, str) for item in value):
        wrapped = {"arrayValue": {"values": [{"stringValue": item} for item in value]}}
    else:
        wrapped = {"stringValue": to_json(value)}
    return {"key": key, "value": wrapped}


def tool_definitions(tools: list) -> list[dict]:
    return [{"type": "function", "name": str(t.get("name", "")), "description": str(t.get("description") or ""),
             "parameters": json_schema(t.get("params"))} for t in tools if isinstance(t, dict)]


class _Writer:
    def __init__(self, out: AtomicOutput, start_ns: int):
        self.out = out
        self.clock = start_ns
        self.spans = 0

    def tick(self) -> int:
        self.clock += TICK_NS
        return self.clock

    def span(self, run: RunStream, span_id: str, parent: str, name: str, kind: int, start: int, end: int,
             attributes: list[dict], error: str | None = None) -> None:
        span: dict[str, Any] = {"traceId": run.trace_id, "spanId": span_id}
        if parent:
            span["parentSpanId"] = parent
        span.update(name=name, kind=kind, startTimeUnixNano=str(start), endTimeUnixNano=str(end),
                    attributes=attributes)
        if error is not None:
            span["status"] = {"code": STATUS_ERROR, "message": error}
        self.out.write(("," if self.spans else "") + to_json(span))
        self.spans += 1


def export(runs: Iterable[RunStream], out: AtomicOutput, *, start_ns: int, source_format: str = "") -> dict:
    """Write ``runs`` to ``out`` as one OTLP/JSON export; returns what was written."""
    resource = [attribute("service.name", "agentdbg"), attribute("telemetry.sdk.name", "agentdbg"),
                attribute("telemetry.sdk.version", __version__)]
    if source_format:
        resource.append(attribute("agentdbg.source_format", source_format))
    out.write('{"resourceSpans":[{"resource":' + to_json({"attributes": resource})
              + ',"scopeSpans":[{"scope":' + to_json({"name": "agentdbg", "version": __version__}) + ',"spans":[')
    writer = _Writer(out, start_ns)
    count = steps = 0
    for run in runs:
        _run(writer, run)
        count += 1
        steps += run.step_count
    out.write("]}]}]}\n")
    return {"runs": count, "steps": steps, "records": writer.spans, "unit": "span"}


def _run(writer: _Writer, run: RunStream) -> None:
    start = run.start
    provider, model = model_of(start.policy)
    root = run.id("invoke_agent")
    began = writer.clock
    common = [attribute("gen_ai.provider.name", provider)] if provider else []
    if model:
        common.append(attribute("gen_ai.request.model", model))
    tools = tool_definitions(start.tools)
    previous: StepRecord | None = None
    any_usage = False
    for record in run.steps():
        any_usage |= record.step_tokens > 0
        _step(writer, run, record, previous, root, common, model, tools if previous is None else [])
        previous = record
    ended = writer.tick()
    end = run.end
    attributes = [attribute("gen_ai.operation.name", "invoke_agent"), *common]
    if start.name:
        attributes.append(attribute("gen_ai.agent.name", start.name))
    if start.task:
        attributes.append(attribute("gen_ai.input.messages", [_text_message("user", start.task)]))
    if end is not None and end.answer is not None:
        attributes.append(attribute("gen_ai.output.messages",
                                    [{**_text_message("assistant", end.answer), "finish_reason": "stop"}]))
    if tools:
        attributes.append(attribute("gen_ai.tool.definitions", tools))
    if run.tokens and not any_usage:  # a run-wide figure only: on the run, no step had its share
        attributes.append(attribute("gen_ai.usage.input_tokens", run.tokens))
    error = None
    facts = run_facts(run)
    outcome = facts["outcome"]
    if outcome in _ERROR_OUTCOMES or outcome.endswith(" error"):
        error = (end.message if end is not None else "") or outcome
        attributes.append(attribute("error.type", outcome.replace(" ", "_")))
    for key, value in facts.items():
        attributes.append(attribute(f"agentdbg.{key}", value))
    writer.span(run, root, "", f"invoke_agent {start.name}" if start.name else "invoke_agent", SPAN_KIND_INTERNAL,
                began, ended, attributes, error)
    writer.tick()  # the next run starts after this one


def _text_message(role: str, text: str) -> dict:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def _step(writer: _Writer, run: RunStream, record: StepRecord, previous: StepRecord | None, root: str,
          common: list[dict], model: str, tools: list[dict]) -> None:
    n = str(record.step)
    chat_start = writer.clock
    chat_end = writer.tick()
    parts: list[dict] = []
    if record.thought:
        parts.append({"type": "reasoning", "content": record.thought})
    attributes = [attribute("gen_ai.operation.name", "chat"), *common, attribute("agentdbg.step", record.step)]
    error = None
    several = len(record.calls) > 1
    if several:  # one turn, several calls: a part for each, then a tool span for each
        for index, call in enumerate(record.calls, 1):
            parts.append({"type": "tool_call", "id": _several_id(record, call, index), "name": call.tool,
                          "arguments": _call_arguments(call, run.start.tools)})
        reason = "tool_call"
    elif record.tool is not None:
        args, positional = arguments_object(record, run.start.tools)
        call = {"type": "tool_call", "id": call_id(record) or None, "name": record.tool, "arguments": args}
        parts.append(call)
        reason = "tool_call"
        if positional:
            attributes.append(attribute("agentdbg.arguments.positional", True))
        if record.answer is not None:  # an answer beside a call: no place in the turn for both
            attributes.append(attribute("agentdbg.answer", record.answer))
        if record.call and record.call != written_call(record.tool, call["arguments"]):
            attributes.append(attribute("agentdbg.call", record.call))  # the action as written
    elif record.parse_error is not None:
        parts.append({"type": "text", "content": record.output})
        reason = "error"
        error = record.parse_error
        attributes.append(attribute("agentdbg.parse_error", record.parse_error))
    elif record.answer is not None:
        parts.append({"type": "text", "content": record.answer})
        reason = "stop"
    else:
        reason = "error" if record.error_kind else "stop"
        if record.plan is not None or record.reflection is not None:  # what the turn wrote instead of a call
            written = turn_text(record)
            if record.thought and written.startswith(record.thought):
                written = written[len(record.thought):].lstrip("\n")  # the thought is its reasoning part
            parts.append({"type": "text", "content": written})
    if record.tool is None:
        if record.error_kind is not None:
            error = error or record.error or record.error_kind
            attributes += [attribute("agentdbg.error.kind", record.error_kind),
                           attribute("agentdbg.error.message", record.error or "")]
        if record.observation is not None:  # no tool span to carry it
            attributes += [attribute("agentdbg.observation", record.observation),
                           attribute("agentdbg.observation.error", record.observation_error)]
            if observation_id(record):
                attributes.append(attribute("agentdbg.observation.id", observation_id(record)))
    if error is not None:
        attributes.append(attribute("error.type", "parse_error" if record.parse_error is not None else record.error_kind))
    inputs = _inputs(run, previous)
    if inputs:
        attributes.append(attribute("gen_ai.input.messages", inputs))
    attributes.append(attribute("gen_ai.output.messages", [{"role": "assistant", "parts": parts, "finish_reason": reason}]))
    attributes.append(attribute("gen_ai.response.finish_reasons", [reason]))
    if record.step_tokens > 0:
        # agentdbg keeps one figure per step; input tokens are most of an agent's usage
        attributes.append(attribute("gen_ai.usage.input_tokens", record.step_tokens))
    if tools:
        attributes.append(attribute("gen_ai.tool.definitions", tools))
    for key, value in step_facts(record).items():
        attributes.append(attribute(f"agentdbg.{key}", value))
    writer.span(run, run.id("chat", n), root, f"chat {model}" if model else "chat", SPAN_KIND_CLIENT,
                chat_start, chat_end, attributes, error)
    if several:
        for index, call in enumerate(record.calls, 1):
            if call.observation is not None or call.error_kind is not None:
                _several_tool(writer, run, record, call, index, root)
    elif record.tool is not None and (record.observation is not None or record.error_kind is not None):
        _tool(writer, run, record, root)


def _several_id(record: StepRecord, call: CallRecord, index: int) -> str:
    return call.id or f"call_{record.step}_{index}"


def _call_arguments(call: CallRecord, tools: list) -> dict:
    if isinstance(call.args, dict):
        return call.args
    spec = next((t for t in tools if isinstance(t, dict) and t.get("name") == call.tool), None)
    params = spec.get("params") if isinstance(spec, dict) else None
    name = next(iter(params)) if isinstance(params, dict) and len(params) == 1 else "input"
    return {str(name): "" if call.args is None else str(call.args)}


def _several_tool(writer: _Writer, run: RunStream, record: StepRecord, call: CallRecord, index: int,
                  root: str) -> None:
    """The tool span of one of a turn's several calls."""
    start = writer.clock
    end = writer.tick()
    attributes = [attribute("gen_ai.operation.name", "execute_tool"), attribute("gen_ai.tool.name", call.tool),
                  attribute("gen_ai.tool.type", "function"),
                  attribute("gen_ai.tool.call.arguments", _call_arguments(call, run.start.tools)),
                  attribute("gen_ai.tool.call.id", _several_id(record, call, index))]
    if call.observation is not None:
        attributes.append(attribute("gen_ai.tool.call.result", call.observation))
    error = None
    if call.failed:
        error = call.error or call.observation or "the tool call failed"
        attributes += [attribute("error.type", call.error_kind or "_OTHER"),
                       attribute("agentdbg.error.kind", call.error_kind or ""),
                       attribute("agentdbg.error.message", call.error or "")]
    writer.span(run, run.id("execute_tool", f"{record.step}.{index}"), root, f"execute_tool {call.tool}",
                SPAN_KIND_INTERNAL, start, end, attributes, error)


def _inputs(run: RunStream, previous: StepRecord | None) -> list[dict]:
    """What is new to the model at this turn: the task at the first, the previous step's
    reply after that (the whole history on every turn would grow as the run's square)."""
    if previous is None:
        return [_text_message("user", run.start.task)] if run.start.task else []
    if len(previous.calls) > 1:
        return [{"role": "tool", "parts": [{"type": "tool_call_response", "id": _several_id(previous, call, index),
                                             "response": call.observation}
                                            for index, call in enumerate(previous.calls, 1)
                                            if call.observation is not None]}]
    if previous.observation is None:
        return []
    if previous.tool is not None:
        return [{"role": "tool", "parts": [{"type": "tool_call_response", "id": call_id(previous) or None,
                                             "response": previous.observation}]}]
    return [_text_message("user", previous.observation)]


def _tool(writer: _Writer, run: RunStream, record: StepRecord, root: str) -> None:
    start = writer.clock
    end = writer.tick()
    args = arguments_object(record, run.start.tools)[0]
    attributes = [attribute("gen_ai.operation.name", "execute_tool"), attribute("gen_ai.tool.name", record.tool),
                  attribute("gen_ai.tool.type", "function"),
                  attribute("gen_ai.tool.call.arguments", args)]
    identifier = call_id(record)
    if identifier:
        attributes.append(attribute("gen_ai.tool.call.id", identifier))
    if record.observation is not None:
        attributes.append(attribute("gen_ai.tool.call.result", record.observation))
    error = None
    if record.error_kind is not None or record.observation_error:
        error = record.error or record.observation or "the tool call failed"
        attributes += [attribute("error.type", record.error_kind or "_OTHER"),
                       attribute("agentdbg.error.kind", record.error_kind or ""),
                       attribute("agentdbg.error.message", record.error or "")]
    writer.span(run, run.id("execute_tool", str(record.step)), root, f"execute_tool {record.tool}",
                SPAN_KIND_INTERNAL, start, end, attributes, error)
