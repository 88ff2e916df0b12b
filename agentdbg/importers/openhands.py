"""OpenHands event streams: a saved trajectory (a JSON array of events) and evaluation
output (``output.jsonl``: one instance a line, its events under ``history``).

Each event comes from the ``agent``, the ``user`` or the ``environment`` and is either an
``action`` or an ``observation`` (which answers the action whose ``id`` is its
``cause``). Tool actions (``run``, ``run_ipython``, ``read``, ``edit``, ``browse``,
``think``, ``mcp``...) are steps; ``message`` actions of the agent are text steps,
``finish`` the answer; observations are their results. A model response is counted once
however many actions it produced (``tool_call_metadata.model_response.id``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from agentdbg.importers.base import (
    ImportResult,
    NotImportable,
    Source,
    as_source,
    preview,
    text_of,
    token_count,
)
from agentdbg.importers.builder import RunBuilder, StepDraft
from agentdbg.importers.jsondata import is_json_lines, load_json, load_json_lines, parse_arguments
from agentdbg.importers.openai_chat import tools_from_definitions
from agentdbg.importers.sniffing import outline
from agentdbg.importers.streaming import StreamReader

NAME = "openhands"
DESCRIPTION = "OpenHands trajectory (array of agent/user/environment events) or evaluation output.jsonl"

_SOURCES = {"agent", "user", "environment"}
# Actions that are not tool calls: kept raw (``message``, ``finish``, ``system`` are read).
_NOT_CALLS = {"recall", "change_agent_state", "condensation", "condensation_request", "null",
              "reject", "delegate", "pause", "resume", "stop"}
# Bookkeeping in an action's args, not what the model asked for.
_ARG_NOISE = {"thought", "is_input", "blocking", "hidden", "impl_source", "translated_ipython_code",
              "security_risk", "confirmation_state", "include_extra", "kernel_init_code", "is_confirmed"}
_MAX_ITERATIONS = "maximum iteration"
# The function-calling tool an action stands for, for events saved without the call.
_ACTION_TOOLS = {"run": "execute_bash", "run_ipython": "execute_ipython_cell", "read": "str_replace_editor",
                 "edit": "str_replace_editor", "browse_interactive": "browser", "think": "think"}


def sniff(head: str, path: str = "") -> tuple[bool, str]:
    shape = outline(head)
    if not shape.root:
        return False, "not JSON"
    for prefix in (("*",), ("history", "*")):
        sources = shape.strings(*prefix, "source")
        if (shape.has(*prefix, "source") and (shape.has(*prefix, "action") or shape.has(*prefix, "observation"))
                and sources and sources <= _SOURCES):
            what = "evaluation output: instances with a history" if prefix[0] == "history" else "a trajectory"
            return True, f"OpenHands {what} of agent/user/environment events"
    for prefix in (("*",), ("history", "*")):
        sources = shape.strings(*prefix, "source")
        if sources and not sources <= _SOURCES:
            return False, (f"events whose 'source' is {', '.join(sorted(sources - _SOURCES)[:3])}, "
                           "not agent, user or environment")
    return False, "no events with a 'source' (agent/user/environment) and an 'action' or 'observation'"


STREAMS = "evaluation output in JSON Lines (output.jsonl)"


def convert(source: str | bytes | Path, path: str | None = None) -> ImportResult:
    src = as_source(source, path)
    result = ImportResult(problems=src.problems)
    if is_json_lines(src.text):
        records = [(r.value, r.line) for r in load_json_lines(src)]
    else:
        records = [(load_json(src), None)]
    for events, raw in _runs(src, records):
        result.runs.append(events)
        result.raw_count += raw
    return result


def convert_stream(reader: StreamReader, result: ImportResult) -> Iterator[tuple[list, int]] | None:
    """Evaluation output an instance (a line) at a time; a trajectory is read whole."""
    if not reader.is_json_lines():
        return None
    return _runs(reader.src, ((r.value, r.line) for r in reader.json_lines()))


def _runs(src: Source, records: Iterable[tuple[Any, int | None]]) -> Iterator[tuple[list, int]]:
    found = False
    for value, line in records:
        if isinstance(value, list):
            yield _run(src, value, {}, line)
        elif isinstance(value, dict) and isinstance(value.get("history"), list):
            yield _run(src, value["history"], value, line)
        else:
            src.problem("neither a list of events nor an object with a 'history' list; skipped", line)
            continue
        found = True
    if not found:
        raise NotImportable(f"{src.path}: no OpenHands trajectory or evaluation instance in it")


def _dig(value: Any, *keys: Any) -> Any:
    for key in keys:
        if isinstance(key, int):
            if not isinstance(value, list) or len(value) <= key:
                return None
            value = value[key]
        elif isinstance(value, dict):
            value = value.get(key)
        else:
            return None
    return value


class _Reader:
    def __init__(self, src: Source, instance: dict, line: int | None):
        self.src = src
        self.line = line
        metadata = instance.get("metadata") if isinstance(instance.get("metadata"), dict) else {}
        self.model = text_of(_dig(metadata, "llm_config", "model"))
        agent = text_of(metadata.get("agent_class"))
        max_steps = metadata.get("max_iterations")
        self.builder = RunBuilder(
            name=text_of(instance.get("instance_id")), source=src.path,
            max_steps=max_steps if isinstance(max_steps, int) and not isinstance(max_steps, bool) and max_steps > 0 else None)
        self.agent = agent
        self.by_id: dict[Any, StepDraft] = {}
        self.responses: set[str] = set()
        self.cumulative = 0  # llm_metrics' running total, for sources without per-response usage
        self.per_response = False
        self.last_text: StepDraft | None = None
        self.state = ""
        self.actions: set = set()  # ids of the actions seen

    def policy(self) -> str:
        who = " ".join(p for p in ("OpenHands", self.agent) if p)
        return f"recorded: {who} ({self.model})" if self.model else f"recorded: {who}"

    def tokens(self, event: dict) -> int | None:
        response = _dig(event, "tool_call_metadata", "model_response")
        response_id = _dig(response, "id")
        usage = _dig(response, "usage")
        if isinstance(response_id, str) and isinstance(usage, dict):
            if response_id in self.responses:
                return None
            self.responses.add(response_id)
            self.per_response = True
            total = token_count(usage.get("total_tokens"))
            if total is None:
                counted = [n for n in (token_count(usage.get(k)) for k in ("prompt_tokens", "completion_tokens"))
                           if n is not None]
                total = sum(counted) if counted else None
            return total
        if self.per_response:
            return None
        running = _dig(event, "llm_metrics", "accumulated_token_usage")
        if isinstance(running, dict):
            counted = [n for n in (token_count(running.get(k)) for k in ("prompt_tokens", "completion_tokens"))
                       if n is not None]
            if counted and sum(counted) >= self.cumulative:
                spent, self.cumulative = sum(counted) - self.cumulative, sum(counted)
                return spent
        return None

    def thought(self, event: dict) -> str:
        args = event.get("args") if isinstance(event.get("args"), dict) else {}
        thought = text_of(args.get("thought"))
        if not thought.strip():
            response = _dig(event, "tool_call_metadata", "model_response")
            response_id = _dig(response, "id")
            if not (isinstance(response_id, str) and response_id in self.responses):
                thought = text_of(_dig(response, "choices", 0, "message", "content"))
        return thought

    def call(self, event: dict, action: str) -> StepDraft:
        args = event.get("args") if isinstance(event.get("args"), dict) else {}
        metadata = event.get("tool_call_metadata") if isinstance(event.get("tool_call_metadata"), dict) else {}
        call_id = text_of(metadata.get("tool_call_id"))
        tool = text_of(metadata.get("function_name")) or self.tool_of(action)
        arguments = _recorded_arguments(metadata, call_id)
        thought = self.thought(event)
        tokens = self.tokens(event)
        if arguments is None:
            arguments = {k: v for k, v in args.items() if k not in _ARG_NOISE}
        parsed, why = parse_arguments(arguments)
        written = arguments if isinstance(arguments, str) else text_of(arguments)
        if why is None:
            step = self.builder.step(thought=thought, tool=tool, args=parsed, call=f"{tool} {written}",
                                     call_id=call_id, tokens=tokens)
        else:
            step = self.builder.step(thought=thought, parse_error=f"tool call {tool!r}: {why}",
                                     output=f"{tool} {written}", call_id=call_id, tokens=tokens)
        return step

    def tool_of(self, action: str) -> str:
        """An action saved without its call: the registry's tool for it, else its own name."""
        tool = _ACTION_TOOLS.get(action)
        return tool if tool and any(t.get("name") == tool for t in self.builder.tools) else action

    def refused_call(self, event: dict, text: str) -> None:
        """An error the agent got instead of running a call (bad arguments, unknown tool)."""
        metadata = event.get("tool_call_metadata") if isinstance(event.get("tool_call_metadata"), dict) else {}
        call_id = text_of(metadata.get("tool_call_id"))
        arguments = _recorded_arguments(metadata, call_id)
        name = text_of(metadata.get("function_name"))
        written = f"{name} {arguments if isinstance(arguments, str) else text_of(arguments)}" if name else ""
        step = self.builder.step(thought=self.thought(event), parse_error=text or "error",
                                 output=written or text_of(event.get("message")), call_id=call_id,
                                 tokens=self.tokens(event))
        step.reply(text, error=True)
        self.last_text = None

    def action(self, event: dict) -> None:
        self.actions.add(_key(event.get("id")))
        action = text_of(event.get("action"))
        source = event.get("source")
        args = event.get("args") if isinstance(event.get("args"), dict) else {}
        builder = self.builder
        if action == "system":
            builder.tools = tools_from_definitions(args.get("tools"))
            builder.raw("openhands system prompt", event, f"system prompt: {preview(text_of(args.get('content')))}")
        elif action == "message" and source == "user":
            text = text_of(args.get("content") if "content" in args else event.get("message"))
            if not builder.task and not builder.steps:
                builder.task = text
            else:
                builder.raw("openhands user message", event, f"user message: {preview(text)}")
        elif action == "message":
            text = text_of(args.get("content") if "content" in args else event.get("message"))
            step = builder.step(thought=text, tokens=self.tokens(event))
            self.by_id[_key(event.get("id"))] = step
            self.last_text = step
        elif action == "finish":
            answer = args.get("final_thought") or args.get("outputs") or event.get("message") or args.get("thought")
            thought = text_of(args.get("thought")) if args.get("final_thought") else ""
            step = builder.step(thought=thought if thought != text_of(answer) else "", answer=text_of(answer),
                                tokens=self.tokens(event))
            if isinstance(args.get("task_completed"), str):
                builder.raw("openhands finish", {"task_completed": args["task_completed"]},
                            f"task completed: {args['task_completed']}", current=True)
            self.by_id[_key(event.get("id"))] = step
        elif action in _NOT_CALLS or not action:
            builder.raw(f"openhands {action or 'event'}", event, preview(text_of(event.get("message")) or action))
        else:
            self.by_id[_key(event.get("id"))] = self.call(event, action)
            self.last_text = None

    def observation(self, event: dict) -> None:
        kind = text_of(event.get("observation"))
        text = text_of(event.get("content"))
        cause = _key(event.get("cause"))
        step = self.by_id.get(cause) if cause is not None else None
        if kind == "agent_state_changed":
            self.state = text_of(_dig(event, "extras", "agent_state"))
            self.builder.raw("openhands agent state", event, f"agent state: {self.state}", current=True)
            return
        failed, why = _failed(kind, event, text)
        if step is None or step.observation is not None or step.tool is None and step.parse_error is None:
            if kind == "error" and (step is None or step.observation is not None):
                self.refused_call(event, text)
                return
            if cause is not None and cause not in self.actions:
                self.src.problem(f"an observation (event {text_of(event.get('id'))}) answers action "
                                 f"{text_of(cause)}, which the run does not have; kept as a raw record", self.line)
            self.builder.raw(f"openhands {kind or 'observation'}", event, preview(text or text_of(event.get("message"))),
                             current=True)
            return
        step.reply(text, error=failed)
        if failed and why:
            step.error_kind, step.error_message = why

    def events(self, events: list) -> None:
        for index, event in enumerate(events):
            if not isinstance(event, dict):
                self.src.problem(f"event {index + 1} is not an object; kept as a raw record", self.line)
                self.builder.raw("openhands event", event, f"event {index + 1} is not an object")
            elif "action" in event:
                self.action(event)
            elif "observation" in event:
                self.observation(event)
            else:
                self.builder.raw("openhands event", event, preview(text_of(event.get("message"))) or "neither action nor observation")
        last = self.builder.steps[-1] if self.builder.steps else None
        if last is not None and last is self.last_text and last.answer is None:
            last.answer, last.thought = last.thought, ""


def _key(value: Any) -> int | str | None:
    """An event id or cause as a key (ids are numbers; anything else that is not text is no id)."""
    return value if isinstance(value, (int, str)) and not isinstance(value, bool) else None


def _recorded_arguments(metadata: dict, call_id: str) -> Any:
    """The call's arguments as the model wrote them, from the response that made it."""
    for made in _dig(metadata, "model_response", "choices", 0, "message", "tool_calls") or []:
        if isinstance(made, dict) and call_id and made.get("id") == call_id:
            return _dig(made, "function", "arguments")
    return None


def _failed(kind: str, event: dict, text: str) -> tuple[bool, tuple[str, str] | None]:
    """Whether an observation reports a failure, and (error kind, message) when it does."""
    if kind == "error":
        return True, ("exception", preview(text, 300))
    exit_code = _dig(event, "extras", "metadata", "exit_code")
    if kind in ("run", "run_ipython") and isinstance(exit_code, int) and not isinstance(exit_code, bool):
        if exit_code == -1 and "timed out" in text_of(event.get("message")) + text[-500:]:
            return True, ("timeout", preview(text_of(event.get("message")), 300))
        if exit_code not in (0, -1):
            return True, ("exception", f"exit code {exit_code}")
    if kind == "edit" and text.startswith("ERROR:"):
        return True, ("exception", preview(text, 300))
    if _dig(event, "extras", "error") is True or event.get("success") is False:
        return True, ("exception", preview(text, 300))
    return False, None


def _run(src: Source, events: list, instance: dict, line: int | None) -> tuple[list, int]:
    reader = _Reader(src, instance, line)
    reader.events(events)
    builder = reader.builder
    if not builder.task and isinstance(instance.get("instruction"), str):
        builder.task = instance["instruction"]
    builder.policy = reader.policy()
    metrics = instance.get("metrics") if isinstance(instance.get("metrics"), dict) else {}
    total = None
    if not any(step.tokens is not None for step in builder.steps):
        usage = metrics.get("accumulated_token_usage")
        counted = [n for n in (token_count(_dig(usage, k)) for k in ("prompt_tokens", "completion_tokens")) if n is not None]
        total = sum(counted) if counted else None
    notes = []
    cost = metrics.get("accumulated_cost")
    if isinstance(cost, (int, float)) and not isinstance(cost, bool):
        notes.append(f"cost {cost:.4f}")
    outcome, guard = None, None
    error = instance.get("error")
    if isinstance(error, str) and error:
        notes.insert(0, error)
        if _MAX_ITERATIONS in error:
            outcome, guard = "budget exhausted", ("max_steps" if builder.steps else None)
        else:
            outcome = "error"
    elif reader.state == "error":
        outcome = "error"
    test_result = instance.get("test_result")
    if isinstance(test_result, dict) and test_result:
        patch = text_of(test_result.get("git_patch"))
        builder.raw("openhands test_result", test_result,
                    f"test result: git patch of {patch.count(chr(10))} lines" if patch else "test result")
    return builder.build(outcome=outcome, guard=guard, message="; ".join(notes), total_tokens=total,
                         verdict=_verdict(test_result)), builder.raw_count


def _verdict(test_result: Any) -> dict | None:
    """A graded instance's ``resolved`` (in ``test_result`` or its ``report``)."""
    if not isinstance(test_result, dict):
        return None
    for where in (test_result, test_result.get("report")):
        if isinstance(where, dict) and isinstance(where.get("resolved"), bool):
            resolved = where["resolved"]
            return {"correct": resolved, "score": 1.0 if resolved else 0.0, "expected": None, "grader": "resolved"}
    return None
