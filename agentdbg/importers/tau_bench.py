"""tau-bench results: a JSON array of ``{task_id, reward, info, traj, trial}``.

Each record (a task, one trial) is a run. ``traj`` is the conversation between the
agent and a simulated user, as OpenAI Chat Completions messages: assistant tool calls are
steps, ``tool`` messages their observations (a tool's ``Error: ...`` is an error
observation), the simulated user's later turns are kept raw between the steps. ``reward``
is the grader's verdict (correct when it is 1); ``info`` (the user's instructions, the
expected actions and outputs, the reward breakdown) is kept raw on the last step.
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
)
from agentdbg.importers.builder import RunBuilder
from agentdbg.importers.chat import Call, ChatAssembler
from agentdbg.importers.jsondata import load_json
from agentdbg.importers.openai_chat import content_text
from agentdbg.importers.sniffing import outline, wrong_root
from agentdbg.importers.streaming import StreamReader

NAME = "tau-bench"
DESCRIPTION = "tau-bench results: array of {task_id, reward, info, traj, trial}, one run per task and trial"

_STOP_MARKERS = ("###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###")


def sniff(head: str, path: str = "") -> tuple[bool, str]:
    shape = outline(head)
    if shape.root != "[":
        return False, wrong_root(shape, "a JSON array of result records")
    if not (shape.has("*", "task_id") and shape.has("*", "reward")):
        return False, "no records with a 'task_id' and a 'reward'"
    if not (shape.has("*", "traj") or shape.has("*", "info", "task")):
        return False, "records with a 'task_id' and a 'reward', but no 'traj' or 'info.task'"
    return True, "tau-bench result records: task_id, reward, info, traj"


STREAMS = "its JSON array of results"


def convert(source: str | bytes | Path, path: str | None = None) -> ImportResult:
    src = as_source(source, path)
    data = load_json(src)
    if not isinstance(data, list):
        raise NotImportable(f"{src.path}: tau-bench results are a JSON array, got {type(data).__name__}")
    result = ImportResult(problems=src.problems)
    for events, raw in _runs(src, data):
        result.runs.append(events)
        result.raw_count += raw
    return result


def convert_stream(reader: StreamReader, result: ImportResult) -> Iterator[tuple[list, int]] | None:
    """The results a record at a time (anything but an array: read whole)."""
    return _runs(reader.src, reader.array_items()) if reader.opens_array() else None


def _runs(src: Source, records: Iterable) -> Iterator[tuple[list, int]]:
    for index, record in enumerate(records):
        if not isinstance(record, dict):
            src.problem(f"record {index + 1} is not an object; skipped")
            continue
        yield _run(src, record, index)


def _number(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value and abs(value) != float("inf"):
        return float(value)
    return None


def _run(src: Source, record: dict, index: int) -> tuple[list, int]:
    task_id, trial = text_of(record.get("task_id")), text_of(record.get("trial"))
    name = f"task {task_id or index}" + (f" trial {trial}" if trial else "")
    builder = RunBuilder(name=name, source=src.path, policy="recorded: tau-bench agent")
    chat = ChatAssembler(builder, src, "tau-bench")
    traj = record.get("traj")
    if not isinstance(traj, list):
        src.problem(f"{name}: 'traj' is not a list of messages; the run has no steps")
        traj = []
    ended = ""
    for number, message in enumerate(traj, 1):
        if not isinstance(message, dict):
            src.problem(f"{name}: message {number} is not an object; kept as a raw record")
            builder.raw("tau-bench message", message, f"message {number} is not an object")
            continue
        role = message.get("role")
        text = content_text(message.get("content"))
        if role == "assistant":
            chat.assistant([text], _calls(message))
        elif role == "tool":
            chat.reply(text_of(message.get("tool_call_id")), text, error=text.startswith("Error"),
                       name=text_of(message.get("name")), data=message)
        elif role == "user" and not builder.task and not builder.steps:
            builder.task = text
        elif role == "user":
            ended = next((m for m in _STOP_MARKERS if m in text), "") or ended
            builder.raw("tau-bench user", message, f"user: {preview(text)}")
        else:
            builder.raw(f"tau-bench {text_of(role) or 'message'}", message, f"{text_of(role)} message: {preview(text)}")
    chat.finish()
    info = record.get("info")
    if isinstance(info, dict) and info:
        builder.raw("tau-bench info", info, "the user's instructions, expected actions and outputs, reward details")
    reward = _number(record.get("reward"))
    verdict = None
    if reward is not None:
        outputs = _dig(info, "task", "outputs")
        expected = "; ".join(text_of(o) for o in outputs) if isinstance(outputs, list) and outputs else None
        verdict = {"correct": reward == 1.0, "score": reward, "expected": expected, "grader": "reward"}
    message = f"the user ended the conversation with {ended}" if ended else ""
    return builder.build(message=message, verdict=verdict), builder.raw_count


def _dig(value: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _calls(message: dict) -> list[Call]:
    calls = []
    made = message.get("tool_calls")
    for item in made if isinstance(made, list) else []:
        if isinstance(item, dict):
            function = item.get("function") if isinstance(item.get("function"), dict) else {}
            calls.append(Call(text_of(function.get("name")) or "?", function.get("arguments"), text_of(item.get("id"))))
    return calls
