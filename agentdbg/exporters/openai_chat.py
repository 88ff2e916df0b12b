"""Runs as OpenAI Chat Completions messages: JSON Lines, one ``{"messages": [...]}`` object
per run (a file of one run is one line too).

Each run is the user's task, then per step an assistant message (the thought as its
content, the tool call as its one ``tool_calls`` entry) and the tool's reply as a ``tool``
message; the final answer is the last assistant message. An unreadable output is the
assistant message as written, and the error fed back to the model a ``user`` message.
Beside the messages: ``tools`` (function definitions), ``model`` where the run names one,
and ``agentdbg``: what messages have no place for (outcome, verdict, per-step tokens,
error kinds, raw records, ...; docs/export.md), which agentdbg's importer reads back and
other tools ignore. Messages are written as the steps are read; the per-step facts,
known at the run's end, follow them.
"""

from __future__ import annotations

import json
import tempfile
from array import array
from collections.abc import Iterable
from typing import IO, Any

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
from agentdbg.model.state import StepRecord
from agentdbg.outputs import AtomicOutput

NAME = "openai-chat"
DESCRIPTION = "OpenAI Chat Completions messages, JSON Lines: one {messages, tools} object per run"
FACTS_VERSION = 1


def export(runs: Iterable[RunStream], out: AtomicOutput, **_: Any) -> dict:
    count = steps = 0
    for run in runs:
        _run(out, run)
        count += 1
        steps += run.step_count
    return {"runs": count, "steps": steps, "records": count, "unit": "line"}


class _Messages:
    def __init__(self, out: AtomicOutput):
        self.out = out
        self.count = 0

    def add(self, message: dict) -> int:
        self.out.write(("," if self.count else "") + to_json(message))
        self.count += 1
        return self.count - 1


def _run(out: AtomicOutput, run: RunStream) -> None:
    start = run.start
    out.write('{"messages":[')
    messages = _Messages(out)
    if start.task:
        messages.add({"role": "user", "content": start.task})
    tokens = array("q")  # per step: compact, a million steps cost 8 MB
    feedback: list[int] = []  # user messages that are an error fed back, not the user speaking
    unanswered: set[str] = set()  # ids of calls no reply has pointed at yet
    with tempfile.TemporaryFile() as spill:  # the steps' facts wait here until the messages are out
        spilled = 0
        for record in run.steps():
            tokens.append(record.step_tokens)
            found = _step(messages, run, record, feedback, unanswered)
            found.update(step_facts(record))
            found.pop("guards", None)  # the importer computes them again
            if found:  # only the steps that need them
                spill.write((("," if spilled else "") + to_json(str(record.step)) + ":" + to_json(found)).encode())
                spilled += 1
        out.write("]")
        _tail(out, run, tokens, feedback, spill)


def _tail(out: AtomicOutput, run: RunStream, tokens: array, feedback: list[int], spill: IO[bytes]) -> None:
    start = run.start
    tools = [{"type": "function", "function": {"name": str(t.get("name", "")),
                                               "description": str(t.get("description") or ""),
                                               "parameters": json_schema(t.get("params"))}}
             for t in start.tools if isinstance(t, dict)]
    if tools:
        out.write(',"tools":' + to_json(tools))
    model = model_of(start.policy)[1]
    if model:
        out.write(',"model":' + to_json(model))
    ext = {"version": FACTS_VERSION, **run_facts(run), "step_tokens": tokens.tolist(), "feedback": feedback}
    out.write(',"agentdbg":' + to_json(ext)[:-1] + ',"facts":{')
    spill.seek(0)
    while chunk := spill.read(1 << 20):
        out.write_bytes(chunk)
    out.write("}}}\n")


def _step(messages: _Messages, run: RunStream, record: StepRecord, feedback: list[int],
          unanswered: set[str]) -> dict:
    """Write the step's messages; returns its facts the messages do not carry."""
    facts: dict[str, Any] = {}
    if len(record.calls) > 1:
        return _calls(messages, record, facts)
    if record.tool is not None:
        args, positional = arguments_object(record, run.start.tools)
        identifier = call_id(record)
        if not identifier:
            identifier = f"call_{record.step}"  # a reply needs an id to point at
            facts["no_id"] = True
        elif identifier in unanswered:  # the reply must not go to the earlier call
            facts["id"] = identifier
            identifier = f"{identifier}_{record.step}"
        if record.observation is None:
            unanswered.add(identifier)
        if positional:
            facts["positional"] = True
        if record.call and record.call != written_call(record.tool, args):
            facts["call"] = record.call  # the action as written
        messages.add({"role": "assistant", "content": record.thought or None,
                      "tool_calls": [{"id": identifier, "type": "function",
                                      "function": {"name": record.tool,
                                                   "arguments": json.dumps(args, ensure_ascii=False)}}]})
        if record.observation is not None:
            messages.add({"role": "tool", "tool_call_id": identifier, "content": record.observation})
            if record.observation_error:
                facts["observation_error"] = True
        if record.error_kind is not None:
            facts["error"] = {"kind": record.error_kind, "message": record.error or ""}
        if record.answer is not None:  # an answer beside a call
            facts["answer"] = record.answer
        return facts
    if record.parse_error is not None:
        said = "\n".join(t for t in (record.thought, record.output) if t)
        messages.add({"role": "assistant", "content": said or record.parse_error})
        facts["parse_error"] = {"message": record.parse_error, "output": record.output}
        facts["thought"] = record.thought
    elif record.answer is not None:
        messages.add({"role": "assistant", "content": record.answer})
        if record.thought:
            facts["thought"] = record.thought
    else:
        error = f"[{record.error_kind}] {record.error or ''}".strip() if record.error_kind else ""
        text = turn_text(record) or error or "(no output)"  # a message without text makes no step
        messages.add({"role": "assistant", "content": text})
        facts["not_answer"] = True
        if text != record.thought:
            facts["thought"] = record.thought
    if record.error_kind is not None:
        facts["error"] = {"kind": record.error_kind, "message": record.error or ""}
    if record.observation is not None:
        feedback.append(messages.add({"role": "user", "content": record.observation}))
        facts["observation"] = record.observation
        facts["observation_error"] = record.observation_error
        if observation_id(record):
            facts["observation_id"] = observation_id(record)
    return facts


def _calls(messages: _Messages, record: StepRecord, facts: dict) -> dict:
    """A turn of several calls: one assistant message with every call, then each reply."""
    ids = [call.id or f"call_{record.step}_{i}" for i, call in enumerate(record.calls, 1)]
    calls = [{"id": identifier, "type": "function",
              "function": {"name": call.tool, "arguments": json.dumps(
                  call.args if isinstance(call.args, dict) else {"input": "" if call.args is None else str(call.args)},
                  ensure_ascii=False)}}
             for identifier, call in zip(ids, record.calls, strict=True)]
    messages.add({"role": "assistant", "content": record.thought or None, "tool_calls": calls})
    for identifier, call in zip(ids, record.calls, strict=True):
        if call.observation is not None:
            messages.add({"role": "tool", "tool_call_id": identifier, "content": call.observation})
    failed = [{"id": identifier, "kind": call.error_kind, "message": call.error or ""}
              for identifier, call in zip(ids, record.calls, strict=True) if call.error_kind is not None]
    if failed:
        facts["call_errors"] = failed
    facts["calls"] = len(record.calls)  # one turn: not read back, the importer makes a step of each call
    return facts
