"""SWE-agent trajectories (.traj): one JSON object per run.

``trajectory`` entries are the steps: thought, action (a command line: the tool is its
first word, the arguments the rest; when ``history`` holds the same call in
function-calling form, its tool, parsed arguments and call id), observation. ``info.exit_status`` is the outcome,
``info.submission`` the answer, ``info.model_stats`` the usage (a run total only: it goes
on the last step's running token count and in the run's end message). The tool registry
comes from the command documentation in ``replay_config``. A file with only ``history``
(function-calling messages) is read as an OpenAI chat; without an ``info.exit_status``
its run counts as submitted when its last call is the submit command and was answered.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from agentdbg.engine import events as ev
from agentdbg.importers import openai_chat
from agentdbg.importers.base import (
    ImportResult,
    NotImportable,
    Source,
    as_source,
    preview,
    text_of,
    token_count,
    tool_spec,
)
from agentdbg.importers.builder import RunBuilder
from agentdbg.importers.jsondata import load_json, parse_arguments
from agentdbg.importers.sniffing import outline, wrong_root

NAME = "swe-agent"
DESCRIPTION = "SWE-agent trajectory (.traj): trajectory[] of thought/action/observation, info"


def sniff(head: str, path: str = "") -> tuple[bool, str]:
    shape = outline(head)
    if shape.root != "{":
        return False, wrong_root(shape, "the JSON object of a trajectory")
    if shape.has("trajectory"):
        return True, "a trajectory list"
    if shape.has("history", "*", "role"):
        return True, "a history of function-calling messages"
    if shape.has("history"):
        return False, ("a top-level 'history' of entries without a 'role' (SWE-agent's is a list of "
                       "messages), and no top-level 'trajectory'")
    return False, "no top-level 'trajectory' or 'history'"


def convert(source: str | bytes | Path, path: str | None = None) -> ImportResult:
    src = as_source(source, path)
    data = load_json(src)
    if not isinstance(data, dict):
        raise NotImportable(f"{src.path}: a SWE-agent trajectory is a JSON object, got {type(data).__name__}")
    result = ImportResult(problems=src.problems)
    config = _replay_config(data, src)
    if isinstance(data.get("trajectory"), list):
        events, raw = _trajectory_events(src, data, config)
    elif isinstance(data.get("history"), list):
        events, raw = _history_events(src, data, config)
    else:
        raise NotImportable(f"{src.path}: no 'trajectory' or 'history' list")
    result.runs.append(events)
    result.raw_count += raw
    return result


def _replay_config(data: dict, src: Source) -> dict:
    config = data.get("replay_config")
    if isinstance(config, str):  # older versions store it as JSON text
        try:
            config = json.loads(config)
        except ValueError:
            src.problem("replay_config is not valid JSON; tools and model are unknown")
            return {}
    return config if isinstance(config, dict) else {}


def _dig(value: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


_DOC_TOOL = re.compile(r"^(\S+):\n((?:[ \t]+.*\n?|\n)*)", re.M)
# Spaces, not \s: "^\s*" would run over every blank line below each line start (quadratic).
_DOC_ARG = re.compile(r"^[ \t]*-[ \t]*(\S+)[ \t]*\((\w+)\)", re.M)
_DOC_TYPES = {"string": "str", "integer": "int", "number": "number", "boolean": "bool",
              "array": "array", "object": "object"}


def tools_from_docs(docs: Any) -> list[dict]:
    """The ``command_docs`` text (``name:`` then indented docstring / signature /
    arguments) as tool specs."""
    if not isinstance(docs, str):
        return []
    specs = []
    for match in _DOC_TOOL.finditer(docs):
        name, body = match.group(1), match.group(2)
        described = re.search(r"docstring:\s*(.*)", body)
        params = {arg: _DOC_TYPES.get(kind, "str") for arg, kind in _DOC_ARG.findall(body)}
        specs.append(tool_spec(name, described.group(1).strip() if described else "", params))
    return specs


def _task(data: dict, config: dict) -> str:
    history = data.get("history")
    for message in history if isinstance(history, list) else []:
        if isinstance(message, dict) and message.get("role") == "user" and not _is_demo(message):
            text = openai_chat.content_text(message.get("content"))
            return _issue(text)
    statement = config.get("problem_statement")
    if isinstance(statement, dict):
        return text_of(statement.get("text") or statement.get("id") or statement.get("github_url"))
    return ""


def _is_demo(message: Any) -> bool:
    """A message of the demonstration SWE-agent shows the model before the real issue."""
    return isinstance(message, dict) and message.get("is_demo") is True


def _issue(text: str) -> str:
    """The issue between "ISSUE:" and "INSTRUCTIONS:" in SWE-agent's first prompt, or the
    whole text. Found with str.find: a lazy regex over it is quadratic on long input."""
    start = text.find("ISSUE:\n")
    if start == -1:
        return text
    start += len("ISSUE:\n")
    end = text.find("\nINSTRUCTIONS:", start)
    return text if end == -1 else text[start:end].rstrip("\n")


def _model_stats(info: dict) -> tuple[int | None, str]:
    stats = info.get("model_stats")
    if not isinstance(stats, dict):
        return None, ""
    sent, received = token_count(stats.get("tokens_sent")), token_count(stats.get("tokens_received"))
    total = None
    if sent is not None or received is not None:
        total = (sent or 0) + (received or 0)
    parts = []
    if isinstance(stats.get("instance_cost"), (int, float)):
        parts.append(f"cost {stats['instance_cost']:.4f}")
    if sent is not None:
        parts.append(f"{sent} tokens sent")
    if received is not None:
        parts.append(f"{received} tokens received")
    if isinstance(stats.get("api_calls"), int):
        parts.append(f"{stats['api_calls']} API calls")
    return total, ("model stats: " + ", ".join(parts)) if parts else ""


def _builder(src: Source, data: dict, config: dict) -> RunBuilder:
    model = _dig(config, "agent", "model", "name")
    name = _dig(config, "problem_statement", "id") or data.get("environment") or ""
    return RunBuilder(_task(data, config), name=text_of(name), source=src.path,
                      policy=f"recorded: SWE-agent ({model})" if model else "recorded: SWE-agent",
                      tools=tools_from_docs(_dig(config, "agent", "tools", "command_docs")))


def _history_calls(history: Any) -> dict[str, list[dict]]:
    """The function calls in the history's assistant messages, by the action they carried."""
    calls: dict[str, list[dict]] = {}
    for message in history if isinstance(history, list) else []:
        if isinstance(message, dict) and message.get("role") == "assistant":
            made = message.get("tool_calls")
            if isinstance(made, list) and len(made) == 1 and isinstance(made[0], dict):
                calls.setdefault(text_of(message.get("action")), []).append(made[0])
    return calls


def _trajectory_events(src: Source, data: dict, config: dict) -> tuple[list, int]:
    builder = _builder(src, data, config)
    calls = _history_calls(data.get("history"))
    history = data.get("history") if isinstance(data.get("history"), list) else []
    for message in history:  # the system prompt the model was given: kept whole, with step 1
        if isinstance(message, dict) and message.get("role") == "system" and not _is_demo(message):
            text = openai_chat.content_text(message.get("content"))
            builder.raw("swe-agent system message", message, f"system message: {preview(text)}")
    for index, entry in enumerate(data["trajectory"]):
        if not isinstance(entry, dict):
            src.problem(f"trajectory entry {index + 1} is not an object; kept as a raw record")
            builder.raw("swe-agent trajectory entry", entry, f"entry {index + 1} is not an object")
            continue
        action = text_of(entry.get("action"))
        thought = text_of(entry.get("thought") if entry.get("thought") is not None else entry.get("response"))
        observation = entry.get("observation")
        step = builder.step(thought=thought, observation=None if observation is None else text_of(observation))
        if not action.strip():
            step.parse_error, step.output = "the step has no action", text_of(entry.get("response"))
            step.observation_error = step.observation is not None
            continue
        step.tool, step.args = _command(action)
        step.call = action
        waiting = calls.get(action)
        if waiting:  # the same call in function-calling form: its tool, arguments and id
            call = waiting.pop(0)
            function = call.get("function") if isinstance(call.get("function"), dict) else {}
            args, why = parse_arguments(function.get("arguments"))
            if function.get("name") and why is None:
                step.tool, step.args = str(function["name"]), args
            step.call_id = text_of(call.get("id"))
            step.observation_id = step.call_id if step.observation is not None else ""
    info = data.get("info") if isinstance(data.get("info"), dict) else {}
    total, stats = _model_stats(info)
    status = info.get("exit_status")
    submission = info.get("submission")
    outcome = text_of(status) if status else None
    answer = submission if isinstance(submission, str) and submission else None
    return builder.build(outcome=outcome, answer=answer, message=stats, total_tokens=total), builder.raw_count


def _command(action: str) -> tuple[str, str]:
    """A command line -> (tool, arguments): the first word names the tool."""
    stripped = action.strip()
    head, _, rest = stripped.partition("\n")
    first, _, args = head.partition(" ")
    if rest:
        args = (args + "\n" + rest) if args else rest
    return first, args.strip(" ")


def _history_events(src: Source, data: dict, config: dict) -> tuple[list, int]:
    model = _dig(config, "agent", "model", "name")
    demos = [m for m in data["history"] if _is_demo(m)]
    events, raw = openai_chat.conversation_events(
        src, [m for m in data["history"] if not _is_demo(m)], model=model,
        name=text_of(_dig(config, "problem_statement", "id") or ""),
        policy=f"recorded: SWE-agent ({model})" if model else "recorded: SWE-agent", kind="swe-agent",
        task=_task(data, config))
    info = data.get("info") if isinstance(data.get("info"), dict) else {}
    return _with_demos(_submitted(events, info), demos), raw + len(demos)


def _with_demos(events: list, demos: list) -> list:
    """The demonstration's messages kept raw where the builder keeps records that come
    before the first step: with step 1 (after its run_start when the run has no step)."""
    if not demos:
        return events
    first = next((i for i, e in enumerate(events) if isinstance(e, ev.StepStart)), None)
    step = 0 if first is None else 1
    kept = [ev.RawRecord(step=step, source="swe-agent demonstration", data=ev.jsonable(m),
                         note=f"demonstration {m.get('role')} message: "
                              f"{preview(openai_chat.content_text(m.get('content')))}") for m in demos]
    if first is None:
        return events[:1] + kept + events[1:]
    at = next(i for i, e in enumerate(events) if isinstance(e, ev.GuardCounters) and e.step == 1)
    return events[:at] + kept + events[at:]


def _submitted(events: list, info: dict) -> list:
    """The run's end from ``info`` when it has an exit status; else a history whose last
    call is an answered submit command counts as submitted, that call's output the answer."""
    end = events[-1]
    if not isinstance(end, ev.RunEnd):
        return events
    submission = info.get("submission") if isinstance(info.get("submission"), str) else None
    if info.get("exit_status"):
        outcome, message = text_of(info["exit_status"]), end.message
    else:
        actions = [e for e in events if isinstance(e, ev.ActionTaken)]
        replies = [e for e in events if isinstance(e, ev.Observation)]
        if (end.outcome != "unfinished" or not actions or actions[-1].tool != "submit"
                or not replies or replies[-1].id != actions[-1].id):
            return events
        outcome, message = "submitted", "the last call was the submit command"
        submission = submission if submission is not None else replies[-1].text
    return events[:-1] + [ev.RunEnd(step=end.step, outcome=outcome, answer=submission, steps=end.steps,
                                    guard=end.guard, message=message)]
