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

    def __post_init__(self) -> None:
        if self.part not in FORK_EDITS:
            raise ValueError(f"a fork edits one of {', '.join(FORK_EDITS)}, got {self.part!r}")

    def metadata(self, parent: int, step: int) -> dict[str, Any]:
        """The ``fork`` field of the fork's ``run_start``."""
        return {"parent": parent, "step": step, "edited": self.part, "text": self.text}


def action_edit(format: str, text: str, thought: str = "") -> tuple[StepEdit, Step]:
    """The action ``text`` as the run's policy would have written it, checked by the
    format's parser: (the edit, what it parses to). ValueError says what is wrong.

    Text formats take what follows ``Action:`` (``catalog[Il Gattopardo]``), or whole
    lines (``Final Answer: 2``); the JSON format also ``tool {"arg": 1}``. A scripted
    plan's or script's action is ``tool {"arg": 1}`` (no object: no arguments), or
    ``finish ANSWER``. The step's thought is kept."""
    if not text.strip():
        raise ValueError("the action is empty")
    try:
        output = _output_in_format(format, text.strip(), thought)
        parsed = get_parser(format)(output)
    except RecursionError:
        raise ValueError("the arguments are nested too deeply") from None
    return StepEdit("action", text, output), parsed


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
