"""OpenTelemetry spans, whatever encoding they came in, read as agentdbg runs.

Each encoding (OTLP/JSON, OTLP protobuf, the Python SDK's span JSON, any-agent's traces)
only turns its records into ``Span`` objects: ids as lowercase hex, times in nanoseconds,
attributes as plain values. Everything after that is here, so every encoding maps the
attributes the same way.

A span's role comes from ``gen_ai.operation.name``: ``invoke_agent`` is a run (its name,
task, answer and status), ``chat`` (also ``text_completion``, ``generate_content`` and
any-agent's ``call_llm``) a model turn, ``execute_tool`` a tool call and its reply. Spans
without it are read in the dialects of other instrumentations: OpenLLMetry / Traceloop
(``llm.request.type``, ``traceloop.span.kind``) and Monocle (``span.type``).

A model turn's content comes from, in this order: ``gen_ai.output.messages`` (text and
reasoning parts are the thought, ``tool_call`` parts the actions), the indexed
``gen_ai.completion.N.*`` attributes (OpenLLMetry), any-agent's ``gen_ai.output``, or
Monocle's ``data.output`` event. Its tokens: ``gen_ai.usage.input_tokens +
output_tokens``, else ``prompt_tokens + completion_tokens``, else ``llm.usage.total_tokens``,
else Monocle's ``metadata`` event, counted once per turn. A tool reply found in a later
turn's input (a ``tool_call_response`` part, an indexed ``tool`` prompt) answers a call no
tool span answered.

Runs: each outermost agent span and the spans under it (by parent id); spans of a trace
under no agent span form one run per trace, unless they hold no model turn and no tool
call and the trace has an agent run (a workflow span around the agent): then they are
kept raw in that run. Within a run, spans are taken in start-time order. Any other span
(a nested agent, an HTTP call, an embedding) is kept as a raw record with the step it
happened in.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from agentdbg.importers import exported
from agentdbg.importers.base import (
    ImportResult,
    Source,
    params_from_schema,
    text_of,
    token_count,
    tool_spec,
)
from agentdbg.importers.builder import RunBuilder, StepDraft
from agentdbg.importers.chat import Call, ChatAssembler
from agentdbg.importers.openai_chat import content_text

MODEL_TURNS = {"chat", "text_completion", "generate_content", "call_llm"}
_MONOCLE_ROLES = {"agentic.turn": "agent", "agentic.request": "agent", "agentic.invocation": "agent",
                  "inference": "model", "agentic.tool.invocation": "tool"}
_TRACELOOP_ROLES = {"agent": "agent", "workflow": "agent", "tool": "tool"}
_INDEXED = re.compile(r"gen_ai\.(prompt|completion)\.(\d+)\.(.+)")
_FUNCTION = re.compile(r"llm\.request\.functions\.(\d+)\.(name|description|parameters)")
_CALL_FIELD = re.compile(r"tool_calls\.(\d+)\.(id|name|arguments)")
_DONE = {"", "completed", "success", "ok", "none"}
_AGENT_NAMES = ("gen_ai.agent.name", "entity.1.name", "workflow.name", "traceloop.entity.name")


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
    note: str = ""  # what its raw record says, when not "span NAME"
    depth: int = 0

    @property
    def op(self) -> str:
        return text_of(self.attrs.get("gen_ai.operation.name"))

    @property
    def role(self) -> str:
        """agent, model, tool or other."""
        op = self.op
        if op:
            if op == "invoke_agent":
                return "agent"
            if op in MODEL_TURNS:
                return "model"
            return "tool" if op == "execute_tool" else "other"
        monocle = self.attrs.get("span.type")
        if isinstance(monocle, str) and monocle in _MONOCLE_ROLES:
            return _MONOCLE_ROLES[monocle]
        traceloop = self.attrs.get("traceloop.span.kind")
        if isinstance(traceloop, str) and traceloop in _TRACELOOP_ROLES:
            return _TRACELOOP_ROLES[traceloop]
        if self.attrs.get("llm.request.type") in ("chat", "completion") or any(
                _INDEXED.fullmatch(key) for key in self.attrs):
            return "model"
        return "other"

    def event(self, name: str) -> dict:
        """The attributes of the first event called ``name`` ({} when there is none)."""
        for item in self.events:
            if item.get("name") == name and isinstance(item.get("attributes"), dict):
                return item["attributes"]
        return {}


def convert_spans(src: Source, spans: list[Span], policy: str = "OpenTelemetry GenAI spans",
                  answer: Any = None) -> ImportResult:
    """Every run in ``spans``; ``policy`` names the source in each run's policy; ``answer``
    is a final output the container recorded beside the spans (any-agent's), the last
    run's answer."""
    result = ImportResult(problems=src.problems)
    if spans and not any(span.role != "other" for span in spans):
        result.unread = (f"none of its {len(spans)} spans is an agent, a model call or a tool call "
                         "(gen_ai.operation.name, indexed gen_ai.prompt / gen_ai.completion attributes, "
                         "Traceloop's or Monocle's span kinds)")
    runs = group_runs(spans)
    for index, (agent, members) in enumerate(runs):
        reader = _RunReader(src, agent, policy)
        events = reader.read(members, answer if index == len(runs) - 1 else None)
        result.runs.append(events)
        result.raw_count += reader.builder.raw_count
        if reader.restored is not None:
            result.empty_run = True  # agentdbg wrote it: a run without steps is one
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
            if node.role == "agent":
                outer = node
            node = by_id.get((node.trace, node.parent)) if node.parent else None
            depth += 1
        span.depth = depth
        key = (span.trace, outer.id if outer is not None else "")
        groups.setdefault(key, []).append(span)
        agents[key] = outer
    for trace, agent_id in list(groups):  # a workflow span around the agent is the agent's
        if agent_id:
            continue
        first_agent_run = min((key for key in groups if key[0] == trace and key[1]),
                              key=lambda key: min(s.start for s in groups[key]), default=None)
        if first_agent_run and all(s.role not in ("model", "tool") for s in groups[(trace, "")]):
            groups[first_agent_run].extend(groups.pop((trace, "")))
    runs = [(agents[key], sorted(members, key=lambda s: (s.start, s.depth)))
            for key, members in groups.items()]
    return sorted(runs, key=lambda run: run[1][0].start if run[1] else 0)


# --- reading values ------------------------------------------------------------------------

def _json(value: Any) -> Any:
    """A value that may hold JSON text, decoded; anything else as it is."""
    if isinstance(value, str) and value.strip()[:1] in ("[", "{", '"'):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return value
    return value


def _messages(value: Any) -> list[dict]:
    """gen_ai.input.messages / output.messages: a JSON string or already structured."""
    value = _json(value)
    return [m for m in value if isinstance(m, dict)] if isinstance(value, list) else []


def _parts(message: dict) -> list[dict]:
    parts = message.get("parts")
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


def _message_text(message: dict) -> str:
    """A message's text: its text parts (semantic conventions) or its ``content`` (the
    chat shape some instrumentations write)."""
    texts = [text_of(p.get("content")) for p in _parts(message) if p.get("type") == "text"]
    if texts:
        return "\n".join(texts)
    content = _json(message.get("content"))
    if isinstance(content, list) and all(isinstance(p, dict) and "type" in p for p in content):
        return content_text(content)
    return text_of(message.get("content")) if "content" in message else ""


def _user_text(messages: list[dict]) -> str:
    for message in messages:
        if message.get("role") == "user":
            text = _message_text(message)
            if text:
                return text
    return ""


def _reply_text(part: dict) -> str:
    return text_of(part.get("response") if "response" in part else part.get("result"))


def _tokens(attrs: dict) -> int | None:
    for keys in (("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"),
                 ("gen_ai.usage.prompt_tokens", "gen_ai.usage.completion_tokens"),
                 ("llm.usage.total_tokens",)):
        counts = [n for n in (token_count(attrs.get(k)) for k in keys) if n is not None]
        if counts:
            return sum(counts)
    return None


def _span_tokens(span: Span) -> int | None:
    tokens = _tokens(span.attrs)
    if tokens is None:  # Monocle
        usage = span.event("metadata")
        tokens = token_count(usage.get("total_tokens"))
        if tokens is None:
            counts = [n for n in (token_count(usage.get(k)) for k in ("prompt_tokens", "completion_tokens"))
                      if n is not None]
            tokens = sum(counts) if counts else None
    return tokens


def _indexed(attrs: dict, kind: str) -> list[dict]:
    """OpenLLMetry's ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` as messages in
    index order: {index, role, content, tool_call_id, calls: [Call], ...}."""
    found: dict[int, dict] = {}
    for key, value in attrs.items():
        match = _INDEXED.fullmatch(key)
        if match and match.group(1) == kind:
            found.setdefault(int(match.group(2)), {})[match.group(3)] = value
    messages = []
    for index in sorted(found):
        fields = found[index]
        calls: dict[int, dict] = {}
        for key, value in fields.items():
            call = _CALL_FIELD.fullmatch(key)
            if call:
                calls.setdefault(int(call.group(1)), {})[call.group(2)] = value
        made = [Call(text_of(c.get("name")) or "?", c.get("arguments"), text_of(c.get("id")))
                for _, c in sorted(calls.items())]
        if "function_call.name" in fields:
            made.append(Call(text_of(fields["function_call.name"]) or "?", fields.get("function_call.arguments")))
        content = _json(fields.get("content"))
        text = content_text(content) if isinstance(content, list) else text_of(fields.get("content"))
        messages.append({"index": index, "role": text_of(fields.get("role")), "content": text,
                         "tool_call_id": text_of(fields.get("tool_call_id")), "calls": made,
                         "fields": fields})
    return messages


def _monocle_input(span: Span) -> list[str]:
    value = span.event("data.input").get("input")
    if isinstance(value, str):
        return [value]
    return [text_of(v) for v in value] if isinstance(value, list) else []


def _monocle_user_text(span: Span) -> str:
    """The user text of a Monocle inference input (each item ``{"user": ...}`` JSON)."""
    for item in _monocle_input(span):
        value = _json(item)
        if isinstance(value, dict) and isinstance(value.get("user"), str):
            return value["user"]
    return ""


def _same(a: str, b: str) -> bool:
    """The same text, or the same JSON written differently."""
    if a.strip() == b.strip():
        return True
    left, right = _json(a), _json(b)
    return not isinstance(left, str) and not isinstance(right, str) and left == right


# --- one run --------------------------------------------------------------------------------

class _RunReader:
    def __init__(self, src: Source, agent: Span | None, policy: str):
        self.src = src
        self.agent = agent
        self.policy = policy
        name = ""
        if agent is not None:
            name = next((text_of(agent.attrs[key]) for key in _AGENT_NAMES if text_of(agent.attrs.get(key))),
                        agent.name)
        self.builder = RunBuilder(name=name, source=src.path, policy=f"recorded: {policy}")
        self.chat = ChatAssembler(self.builder, src, "otel")
        self.model = ""
        self.text_turn: StepDraft | None = None  # the step the last model turn made, text only
        self.text_said = ""  # that turn's text, without its reasoning
        self.step_of: dict[str, StepDraft] = {}  # span id -> the step it made or answered
        self.restored: exported.RunFacts | None = None  # a run agentdbg exported, its facts

    def read(self, members: list[Span], answer: Any = None) -> list:
        builder, agent = self.builder, self.agent
        restored = self.restored = exported.RunFacts.from_attributes(agent.attrs) if agent is not None else None
        if agent is not None:
            builder.task = self._agent_task(agent)
        if restored is not None:
            restored.apply_preamble(builder)
        turns_with_usage = False
        by_id = {span.id: span for span in members if span.id}
        for span in members:
            if span is agent:
                continue
            role = span.role
            if role == "model":
                turns_with_usage |= _span_tokens(span) is not None
                self._model_turn(span)
            elif role == "tool":
                self._tool_call(span)
            else:
                what = f"{span.op} span" if span.op else "span"
                builder.raw("otel span", span.data, span.note or f"{what} {span.name!r}", current=True,
                            step=self._step_above(span, by_id))
        if not any(span.role in ("model", "tool") for span in members):
            self.src.problem(f"trace {members[0].trace if members else '?'} has no chat or execute_tool spans")
        outcome, message, total = None, "", None
        if restored is None and (answer is not None or agent is not None):
            self._answer(text_of(answer) if answer is not None else self._agent_answer(agent))
        if agent is not None:
            error_type = text_of(agent.attrs.get("error.type"))
            if agent.failed or error_type:
                outcome = "error"
                message = ": ".join(m for m in (error_type, agent.status_message) if m)
            if not turns_with_usage:
                total = _tokens(agent.attrs)
        self.chat.finish()
        if self.model:
            builder.policy = f"recorded: {self.model} ({self.policy})"
        if restored is not None:  # a run agentdbg exported: as it was
            restored.apply_settings(builder)
            return builder.build(total_tokens=total, **restored.end())
        return builder.build(outcome=outcome, message=message, total_tokens=total)

    def _step_above(self, span: Span, by_id: dict[str, Span]) -> StepDraft | None:
        """The step of the nearest span above this one that made or answered a step (an
        HTTP call under a tool span goes with that tool's step)."""
        node, seen = by_id.get(span.parent), set()
        while node is not None and node.id not in seen:
            seen.add(node.id)
            if node.id in self.step_of:
                return self.step_of[node.id]
            node = by_id.get(node.parent)
        return None

    # the agent span

    def _agent_task(self, agent: Span) -> str:
        task = _user_text(_messages(agent.attrs.get("gen_ai.input.messages")))
        if not task and agent.attrs.get("span.type"):
            task = "\n".join(_monocle_input(agent))
        if not task and "traceloop.entity.input" in agent.attrs:
            task = _entity_text(agent.attrs["traceloop.entity.input"])
        return task

    def _agent_answer(self, agent: Span) -> str:
        texts = []
        for message in _messages(agent.attrs.get("gen_ai.output.messages")):
            texts.extend(text_of(p.get("content")) for p in _parts(message) if p.get("type") == "text")
        if texts:
            return "\n".join(texts)
        if agent.attrs.get("span.type"):
            return text_of(agent.event("data.output").get("response"))
        if "traceloop.entity.output" in agent.attrs:
            return _entity_text(agent.attrs["traceloop.entity.output"])
        return ""

    def _answer(self, answer: str) -> None:
        """The agent's answer: the last text turn when it says the same (or contains it,
        as a ReAct turn's ``Final Answer:`` line does), else a step of its own."""
        if not answer:
            return
        steps = self.builder.steps
        last = steps[-1] if steps else None
        if last is not None and last.tool is None and last.parse_error is None and last.answer is None:
            if _same(self.text_said if last is self.text_turn else last.thought, answer):
                return
            if answer.strip() and answer.strip() in last.thought:
                last.answer = answer
                return
        self.chat.assistant([answer], [])

    # model turns

    def _model_turn(self, span: Span) -> None:
        attrs, builder, chat = span.attrs, self.builder, self.chat
        self.model = self.model or text_of(attrs.get("gen_ai.response.model") or attrs.get("gen_ai.request.model")
                                           or (attrs.get("entity.2.name") if attrs.get("span.type") else None))
        inputs = _messages(attrs.get("gen_ai.input.messages"))
        prompts = _indexed(attrs, "prompt")
        if not builder.task:
            builder.task = (_user_text(inputs) or _user_text(prompts)
                            or (_monocle_user_text(span) if attrs.get("span.type") else ""))
        for message in inputs:  # replies the tool spans did not record
            for part in _parts(message):
                call_id = text_of(part.get("id"))
                if part.get("type") == "tool_call_response" and call_id and chat.waiting(call_id):
                    chat.reply(call_id, _reply_text(part))
        for prompt in prompts:
            if prompt["role"] == "tool" and prompt["tool_call_id"] and chat.waiting(prompt["tool_call_id"]):
                chat.reply(prompt["tool_call_id"], prompt["content"])
        self._tool_definitions(attrs)
        texts: list[str] = []
        reasoning: list[str] = []  # in the thought, never in a final answer
        calls: list[Call] = []
        extras: list[tuple[str, Any, str]] = []  # kept raw with the turn's first step
        outputs = _messages(attrs.get("gen_ai.output.messages"))
        completions = _indexed(attrs, "completion")
        if outputs:
            for part in _parts(outputs[0]):
                kind = part.get("type")
                if kind in ("text", "reasoning"):
                    (texts if kind == "text" else reasoning).append(text_of(part.get("content")))
                elif kind == "tool_call":
                    calls.append(Call(text_of(part.get("name")) or "?", part.get("arguments"), text_of(part.get("id"))))
                else:
                    extras.append(("otel output part", part, f"{kind} part of {span.name!r}"))
            extras.extend(("otel output message", extra, f"another choice of {span.name!r}") for extra in outputs[1:])
        elif completions:
            texts.append(completions[0]["content"])
            calls.extend(completions[0]["calls"])
            extras.extend(("otel completion", extra["fields"], f"another choice of {span.name!r}")
                          for extra in completions[1:])
        elif "gen_ai.output" in attrs:  # any-agent
            self._any_agent_output(attrs.get("gen_ai.output"), texts, calls)
        elif attrs.get("span.type"):
            self._monocle_output(span, texts, calls)
        steps = exported.model_turn(chat, attrs, texts, calls, _span_tokens(span), reasoning)
        for source, data, note in extras:
            builder.raw(source, data, note, current=True, step=steps[0] if steps else None)
        if steps and span.id:
            self.step_of[span.id] = steps[0]
        self.text_turn = steps[0] if len(steps) == 1 and steps[0].tool is None and steps[0].parse_error is None else None
        self.text_said = "\n".join(t for t in texts if t and t.strip())

    def _tool_definitions(self, attrs: dict) -> None:
        definitions = _json(attrs.get("gen_ai.tool.definitions"))
        for item in definitions if isinstance(definitions, list) else []:
            if isinstance(item, dict) and item.get("name"):
                self.builder.add_tool(tool_spec(text_of(item["name"]), text_of(item.get("description")),
                                                params_from_schema(item.get("parameters"))))
        functions: dict[int, dict] = {}
        for key, value in attrs.items():
            match = _FUNCTION.fullmatch(key)
            if match:
                functions.setdefault(int(match.group(1)), {})[match.group(2)] = value
        for _, spec in sorted(functions.items()):
            if spec.get("name"):
                self.builder.add_tool(tool_spec(text_of(spec["name"]), text_of(spec.get("description")),
                                                params_from_schema(_json(spec.get("parameters")))))

    @staticmethod
    def _any_agent_output(value: Any, texts: list[str], calls: list[Call]) -> None:
        """``gen_ai.output``: a list of ``{"tool.name", "tool.args"}`` calls, or the text."""
        decoded = _json(value)
        if isinstance(decoded, list) and decoded and all(isinstance(c, dict) and "tool.name" in c for c in decoded):
            calls.extend(Call(text_of(c.get("tool.name")) or "?", c.get("tool.args")) for c in decoded)
        else:
            texts.append(text_of(value))

    @staticmethod
    def _monocle_output(span: Span, texts: list[str], calls: list[Call]) -> None:
        """``data.output.response``: ``{"tools": [{tool_id, tool_name, tool_arguments}]}``,
        ``{"assistant": text}`` (or another role), or the text itself."""
        response = span.event("data.output").get("response")
        decoded = _json(response)
        if not isinstance(decoded, dict):
            texts.append(text_of(response))
            return
        tools = decoded.get("tools")
        for call in tools if isinstance(tools, list) else []:
            if isinstance(call, dict):
                calls.append(Call(text_of(call.get("tool_name")) or "?", call.get("tool_arguments"),
                                  text_of(call.get("tool_id"))))
        said = [text_of(v) for k, v in decoded.items() if k != "tools" and isinstance(v, str)]
        if said or not isinstance(tools, list):
            texts.append("\n".join(said) if said else text_of(response))

    # tool calls

    def _tool_call(self, span: Span) -> None:
        attrs, builder, chat = span.attrs, self.builder, self.chat
        name, arguments, result, description, free = _tool_fields(span)
        call_id = text_of(attrs.get("gen_ai.tool.call.id"))
        if description:
            builder.add_tool(tool_spec(name, description))
        error_type = text_of(attrs.get("error.type"))
        exception = span.event("exception")
        failed = span.failed or bool(error_type) or (
            bool(attrs.get("span.type")) and text_of(span.event("data.output").get("error_code")).lower() not in _DONE)
        if failed and not error_type:
            error_type = text_of(exception.get("exception.type"))
        detail = span.status_message or (text_of(exception.get("exception.message")) if failed else "")
        text = text_of(result) if result is not None else ": ".join(
            m for m in (error_type, detail) if m) if failed else ""
        step: StepDraft | None
        if call_id and chat.waiting(call_id):
            step = chat.reply(call_id, text, error=failed)
        elif not call_id and chat.waiting_named(name):  # replies without ids go to calls in order
            step = chat.reply("", text, error=failed, name=name)
        else:
            call = Call(name, arguments, call_id, freeform=free)
            turn = self.text_turn
            if turn is not None and builder.steps and builder.steps[-1] is turn and turn.tool is None:
                # the turn before announced this call in its text only (a ReAct turn)
                builder.steps.pop()
                step = chat.call(call, turn.thought, turn.tokens)
                step.raw[:0] = turn.raw
            else:
                step = chat.call(call)
            chat.close(step)
            step.reply(text, failed or step.parse_error is not None, call_id)
        self.text_turn = None
        if step is not None and span.id:
            self.step_of[span.id] = step
        if failed and step is not None:
            step.error_kind = "timeout" if "timeout" in error_type.lower() else "exception"
            step.error_message = ": ".join(m for m in (error_type, detail) if m) or "the tool span failed"
            exported.tool_error(step, attrs)


def _tool_fields(span: Span) -> tuple[str, Any, Any, str, bool]:
    """(name, arguments, result or None, description, arguments are free text) in
    whichever dialect the span speaks."""
    attrs = span.attrs
    if attrs.get("span.type") == "agentic.tool.invocation":  # Monocle
        args = _monocle_input(span)
        arguments = args[0] if len(args) == 1 else args
        output = span.event("data.output")
        return (text_of(attrs.get("entity.1.name")) or span.name or "?", arguments,
                output.get("response", output.get("output")), text_of(attrs.get("entity.1.description")),
                isinstance(arguments, str) and not isinstance(_json(arguments), dict))
    if attrs.get("traceloop.span.kind") == "tool" and not span.op:  # Traceloop
        name = text_of(attrs.get("traceloop.entity.name")) or span.name.removesuffix(".tool") or "?"
        arguments = _entity_arguments(attrs.get("traceloop.entity.input"))
        output = attrs.get("traceloop.entity.output")
        return (name, arguments, _entity_text(output) if output is not None else None, "",
                isinstance(arguments, str))
    name = text_of(attrs.get("gen_ai.tool.name")) or span.name.removeprefix("execute_tool ").strip() or "?"
    arguments = attrs.get("gen_ai.tool.call.arguments", attrs.get("gen_ai.tool.args"))  # any-agent's
    result = attrs.get("gen_ai.tool.call.result")
    if result is None and "gen_ai.output" in attrs:
        result = attrs["gen_ai.output"]
    return name, arguments, result, text_of(attrs.get("gen_ai.tool.description")), False


def _entity_arguments(value: Any) -> Any:
    """Traceloop's ``traceloop.entity.input`` (``{"args": [...], "kwargs": {...}}``) as
    tool arguments: the keyword arguments, or the one positional argument."""
    decoded = _json(value)
    if not isinstance(decoded, dict) or not ({"args", "kwargs"} >= set(decoded)):
        return decoded if isinstance(decoded, dict) else text_of(value)
    args = decoded.get("args") if isinstance(decoded.get("args"), list) else []
    kwargs = decoded.get("kwargs") if isinstance(decoded.get("kwargs"), dict) else {}
    if not args:
        return kwargs
    if len(args) == 1 and not kwargs:
        return args[0] if isinstance(args[0], dict) else text_of(args[0])
    return decoded


def _entity_text(value: Any) -> str:
    """Traceloop's entity input or output as text: a JSON string's text, else the first
    text argument, else the JSON."""
    decoded = _json(value)
    if isinstance(decoded, str):
        return decoded
    if isinstance(decoded, dict) and {"args", "kwargs"} >= set(decoded):
        args = decoded.get("args") if isinstance(decoded.get("args"), list) else []
        kwargs = decoded.get("kwargs") if isinstance(decoded.get("kwargs"), dict) else {}
        for item in [*args, *kwargs.values()]:
            if isinstance(item, str):
                return item
    return text_of(value)
