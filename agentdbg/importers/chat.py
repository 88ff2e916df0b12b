"""Chat-shaped runs (assistant turns with tool calls, tool replies matched by id) -> steps.

Shared by the OpenAI, Anthropic and OpenTelemetry importers so they agree on what a step
is: each tool call is one step (the turn's text is the first call's thought); a turn with
text and no call is a step of its own, and the run's last such turn is its final answer.
A reply goes to the oldest call with its id that has no reply yet; a reply that matches
no call is kept as a raw record.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentdbg.importers.base import ImportResult, Source
from agentdbg.importers.builder import RunBuilder, StepDraft
from agentdbg.importers.jsondata import parse_arguments


@dataclass
class Call:
    """A tool call as recorded: ``arguments`` is the JSON text or the object itself."""

    name: str
    arguments: Any = None
    id: str = ""
    freeform: bool = False  # the arguments are text the tool takes as it is (a patch), not JSON


def written(call: Call) -> str:
    """The call as text: its name and its arguments exactly as recorded."""
    args = call.arguments
    if args is None:
        return call.name
    if not isinstance(args, str):
        args = json.dumps(args, ensure_ascii=False)
    return f"{call.name} {args}"


class ChatAssembler:
    def __init__(self, builder: RunBuilder, src: Source, kind: str):
        self.builder = builder
        self.src = src
        self.kind = kind  # names the source in raw records ("openai", "anthropic", ...)
        self._open: dict[str, list[StepDraft]] = {}
        self._ids: set[str] = set()
        self._by_id: dict[str, StepDraft] = {}  # the latest step of each call id
        self._reported: set[str] = set()  # duplicated ids already reported
        self._text_turn: StepDraft | None = None
        self._text_turn_parts = ("", "")  # that turn's (reasoning, text): the text can be the answer
        self._tokens: int | None = None  # usage waiting for the step it paid for

    def _take_tokens(self, tokens: int | None) -> int | None:
        if self._tokens is not None:
            tokens = (tokens or 0) + self._tokens
            self._tokens = None
        return tokens

    def assistant(self, texts: list[str], calls: list[Call], tokens: int | None = None,
                  line: int | None = None, reasoning: list[str] | None = None) -> list[StepDraft]:
        """One assistant turn; returns the steps it made. ``reasoning`` (thinking) goes
        before ``texts`` in the thought, and is never part of a final answer."""
        said = "\n".join(t for t in texts if t and t.strip())
        thinking = "\n".join(t for t in reasoning or () if t and t.strip())
        thought = "\n".join(t for t in (thinking, said) if t)
        tokens = self._take_tokens(tokens)
        if not calls:
            if not thought:
                if tokens is not None:
                    self._tokens = tokens  # usage of a turn that left no content
                return []
            step = self.builder.step(thought=thought, tokens=tokens)
            self._text_turn = step if said else None
            self._text_turn_parts = (thinking, said)
            return [step]
        steps = [self.call(call, thought if i == 0 else "", tokens if i == 0 else None, line)
                 for i, call in enumerate(calls)]
        return steps

    def call(self, call: Call, thought: str = "", tokens: int | None = None,
             line: int | None = None) -> StepDraft:
        tokens = self._take_tokens(tokens)
        text = written(call)
        if call.freeform and isinstance(call.arguments, str):
            args, why = call.arguments, None
        else:
            args, why = parse_arguments(call.arguments)
        if why is None:
            step = self.builder.step(thought=thought, tool=call.name, args=args, call=text,
                                     call_id=call.id, tokens=tokens)
        else:
            step = self.builder.step(thought=thought, parse_error=f"tool call {call.name!r}: {why}",
                                     output=text, call_id=call.id, tokens=tokens)
        if call.id:
            self._by_id[call.id] = step
            if call.id in self._ids and call.id not in self._reported:
                self._reported.add(call.id)
                self.src.problem(f"tool call id {call.id!r} is used by more than one call; "
                                 "replies go to the calls in order", line)
            self._ids.add(call.id)
            self._open.setdefault(call.id, []).append(step)
        else:
            self._open.setdefault("", []).append(step)
        self._text_turn = None
        return step

    def close(self, step: StepDraft) -> None:
        """The step's reply came with it (a span that recorded call and result together)."""
        keys = [step.call_id] if step.call_id in self._open else list(self._open)
        for key in keys:
            if step in self._open[key]:
                self._take(key, self._open[key].index(step))
                return

    def waiting(self, call_id: str) -> bool:
        return bool(self._open.get(call_id))

    def waiting_named(self, name: str) -> bool:
        """A call to tool ``name`` still waits for a reply (for replies that carry no id)."""
        return any(step.tool == name for steps in self._open.values() for step in steps)

    def step_for(self, call_id: str) -> StepDraft | None:
        """The latest step that made the call with this id."""
        return self._by_id.get(call_id) if call_id else None

    def reply(self, call_id: str, text: str, error: bool = False, name: str = "",
              data: Any = None, line: int | None = None) -> StepDraft | None:
        """A tool's reply. One that matches no waiting call is kept raw and reported."""
        step = self._match(call_id, name)
        if step is not None:
            step.reply(text, error or step.parse_error is not None, call_id)
            return step
        if call_id and call_id in self._ids:
            note = f"a second reply to tool call {call_id!r}"
        elif call_id:
            note = f"a reply to tool call {call_id!r}, which no call in the run has"
        else:
            note = "a tool reply without a call id and no call waiting for one"
        self.src.problem(note + "; kept as a raw record", line)
        self.builder.raw(f"{self.kind} tool reply", data if data is not None else text, note,
                         current=True)
        return None

    def _match(self, call_id: str, name: str) -> StepDraft | None:
        if self._open.get(call_id):
            return self._take(call_id, 0)
        if not call_id and name:  # the legacy function role: matched by name
            for key, steps in self._open.items():
                for i, step in enumerate(steps):
                    if step.tool == name:
                        return self._take(key, i)
        return None

    def _take(self, key: str, index: int) -> StepDraft:
        """A call that waits no more; only calls still waiting are kept, so looking one
        up stays quick in a long run."""
        steps = self._open[key]
        step = steps.pop(index)
        if not steps:
            del self._open[key]
        return step

    def finish(self) -> None:
        """The run's last turn, when it was text without a call, is its final answer."""
        steps = self.builder.steps
        if steps and steps[-1] is self._text_turn and steps[-1].answer is None:
            steps[-1].thought, steps[-1].answer = self._text_turn_parts
        if self._tokens is not None and steps and steps[-1].tokens is None:
            steps[-1].tokens = self._tokens  # usage recorded after the last step
        elif self._tokens is not None and steps:
            steps[-1].tokens += self._tokens
        self._tokens = None


def convert_conversations(src: Source, conversations: list[dict],
                          to_events: Callable[..., tuple[list, int]]) -> ImportResult:
    """One run per conversation: ``to_events(src, **conversation) -> (events, raw count)``."""
    result = ImportResult(problems=src.problems)
    for conversation in conversations:
        events, raw = to_events(src, **conversation)
        result.runs.append(events)
        result.raw_count += raw
    return result
