"""One part of a step, changed: what a fork edits (see ``agentdbg.fork``).

``AgentRun.step(edit)`` applies it; ``action_edit`` turns an action the user wrote into
the output the run's policy would have given, checked by the run's parser.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from agentdbg.engine.events import FORK_EDITS
from agentdbg.engine.parsers import Step, get_parser

__all__ = ["FORK_EDITS", "StepEdit", "action_edit"]

TEXT_FORMATS = ("bracket", "colon", "json", "numbered")
_STRUCTURED_CALL = re.compile(r"^\s*([\w.\-]+)\s*(.*)$", re.S)


@dataclass(frozen=True)
class StepEdit:
    """One part of a step, changed: ``part`` is thought, action or observation, ``text``
    what the user wrote. ``output`` (an action only) is the policy's output it stands
    for, in the run's format (``action_edit`` makes it)."""

    part: str
    text: str
    output: Any = None
    call: int = 0  # an observation edit of a step of several calls: which call (1-based; 0: the first)

    def __post_init__(self) -> None:
        if self.part not in FORK_EDITS:
            raise ValueError(f"a fork edits one of {', '.join(FORK_EDITS)}, got {self.part!r}")
        if self.call < 0:
            raise ValueError(f"the call to edit is numbered from 1, got {self.call}")

    def metadata(self, parent: int, step: int) -> dict[str, Any]:
        """The ``fork`` field of the fork's ``run_start``."""
        data: dict[str, Any] = {"parent": parent, "step": step, "edited": self.part, "text": self.text}
        if self.call:
            data["call"] = self.call
        return data


def action_edit(format: str, text: str, thought: str = "", shape: str = "call") -> tuple[StepEdit, Step]:
    """The action ``text`` as the run's policy would have written it, checked by the
    format's parser: (the edit, what it parses to). ValueError says what is wrong.

    Text formats take what follows ``Action:`` (``catalog[Il Gattopardo]``), or whole
    lines (``Final Answer: 2``); the JSON format also ``tool {"arg": 1}``. A scripted
    plan's or script's action is ``tool {"arg": 1}`` (no object: no arguments), or
    ``finish ANSWER``. The step's thought is kept.

    ``shape`` is what the step held: ``call`` (one call or an answer), ``plan`` (a plan:
    its calls, one a line; text formats may write ``Plan:`` and ``1. call`` lines) or
    ``calls`` (several calls at once: one a line; text formats may write ``Action:``
    lines)."""
    if not text.strip():
        raise ValueError("the action is empty")
    if shape not in ("call", "plan", "calls"):
        raise ValueError(f"unknown step shape {shape!r}")
    try:
        if shape == "call":
            output = _output_in_format(format, text.strip(), thought)
        else:
            output = _several_in_format(format, text.strip(), thought, shape)
        parsed = get_parser(format)(output)
    except RecursionError:
        raise ValueError("the arguments are nested too deeply") from None
    return StepEdit("action", text, output), parsed


def _several_in_format(format: str, text: str, thought: str, shape: str) -> Any:
    """A plan, or several calls at once, one call a line, in the run's format."""
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    if format in TEXT_FORMATS:
        if shape == "plan":
            if not re.search(r"^[ \t]*Plan[ \t]*:[ \t]*$", text, re.M):
                numbered = [line if re.match(r"^\d{1,4}[.)]", line) else f"{i}. {line}" for i, line in enumerate(lines, 1)]
                text = "\n".join(["Plan:", *numbered])
        elif not re.search(r"^[ \t]*Action\b", text, re.M):
            text = "\n".join(f"Action {i}: {line}" if format == "numbered" else f"Action: {line}"
                             for i, line in enumerate(lines, 1))
        if thought and not re.search(r"^[ \t]*Thought\b", text, re.M):
            text = f"Thought: {thought}\n{text}"
        return text
    calls = [_output_in_format(format, line, "") for line in lines]
    if any(call[0] == "finish" if isinstance(call, tuple) else call.get("kind") == "finish" for call in calls):
        raise ValueError("finish is not a call: write the calls only, one a line")
    if format == "plan":
        if shape == "plan":
            raise ValueError("a scripted plan's steps cannot write a plan")
        return [tuple(call) for call in calls]
    key = "plan" if shape == "plan" else "actions"
    return {"thought": thought, key: [{"action": call["action"], "args": call["args"]} for call in calls]}


def _output_in_format(format: str, text: str, thought: str) -> Any:
    if format in TEXT_FORMATS:
        # [ \t]*, not \s*: a run of blank lines must not make the search quadratic.
        if not re.search(r"^[ \t]*(?:Action\b|Final[ \t]+Answer[ \t]*:|Answer[ \t]*:)", text, re.M):
            if format == "json" and "Action Input" not in text:
                called = _STRUCTURED_CALL.match(text)
                name, rest = called.groups() if called else (text, "")
                text = f"Action: {name}\nAction Input: {rest.strip() or '{}'}"
            else:
                text = f"Action 1: {text}" if format == "numbered" else f"Action: {text}"
        if thought and not re.search(r"^[ \t]*Thought\b", text, re.M):
            text = f"Thought: {thought}\n{text}"
        return text
    called = _STRUCTURED_CALL.match(text)
    if called is None:
        raise ValueError("write the action as: tool {\"argument\": value}, or finish ANSWER")
    name, rest = called.group(1), called.group(2).strip()
    if name == "finish":
        answer = rest or None
        if format == "plan":
            return ("finish", {} if answer is None else {"answer": answer})
        return {"kind": "finish", "content": answer or "", "thought": thought}
    args: Any = {}
    if rest:
        try:
            args = json.loads(rest)
        except json.JSONDecodeError as exc:
            raise ValueError(f"the arguments are not valid JSON: {exc.msg} (column {exc.colno + len(name) + 1})") from None
        if not isinstance(args, dict):
            raise ValueError(f"the arguments should be a JSON object, got {type(args).__name__}")
    if format == "plan":
        return (name, args)
    return {"thought": thought, "action": name, "args": args}
