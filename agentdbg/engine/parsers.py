"""Action formats: one small pure parser per format.

Each parser turns one policy output into an Action or a FinalAnswer and raises ValueError,
with a message a policy (or a person) can act on, when the output is malformed. Inside a
run that ValueError becomes an observation, so the policy can recover.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any


@dataclass(frozen=True)
class Action:
    """A tool call. ``args`` is an object, or a single positional string (``calc[5 - 3]``)."""

    thought: str
    name: str
    args: dict[str, Any] | str
    call: str = field(default="", compare=False)  # the action as written, for transcripts

    def signature(self) -> str:
        """What the repetition guard compares: the tool and its arguments, canonically."""
        return self.name + "\x00" + json.dumps(self.args, sort_keys=True, default=repr)


@dataclass(frozen=True)
class FinalAnswer:
    thought: str
    answer: str | None  # None: the policy finished without an answer (a plan's "finish")


@dataclass(frozen=True)
class ParallelCalls:
    """Several tool calls in one turn: dispatched together, observed in this order."""

    thought: str
    actions: tuple[Action, ...]

    @property
    def call(self) -> str:
        return "\n".join(action.call for action in self.actions)


@dataclass(frozen=True)
class ActionPlan:
    """A whole plan written at once: the calls to make, in order (plan-and-execute)."""

    thought: str
    actions: tuple[Action, ...]


Step = Action | FinalAnswer | ParallelCalls | ActionPlan

MAX_CALLS = 64  # calls in one turn, items in one plan: more is a runaway output, not a plan

# --- text formats -----------------------------------------------------------------------

_THOUGHT = re.compile(r"^[ \t]*Thought[ \t]*:[ \t]*", re.M)


def _thought_before(text: str, end: int) -> str:
    """The text of the Thought: line(s) ahead of position ``end``, or '' when there are none."""
    head = text[:end]
    found = list(_THOUGHT.finditer(head))
    return head[found[-1].end():].strip() if found else ""


def _require_text(text: Any) -> str:
    if not isinstance(text, str):
        raise ValueError(f"expected the policy's text output, got {type(text).__name__}")
    return text


_FINAL = re.compile(r"^[ \t]*Final[ \t]+Answer[ \t]*:[ \t]*", re.M)
_ACTION_LINE = re.compile(r"^[ \t]*Action[ \t]*:[ \t]*(.*)$", re.M)  # the bracket, colon and JSON formats
_BRACKET_CALL = re.compile(r"^(\w+)[ \t]*\[(.*)\]$", re.S)  # name[argument]: bracket and numbered formats


def parse_bracket_action(text: str) -> Step:
    """``Thought: ...`` / ``Action: name[argument]`` or ``Final Answer: ...`` (the library example's format)."""
    text = _require_text(text)
    final = _FINAL.search(text)
    if final:
        return FinalAnswer(_thought_before(text, final.start()), text[final.end():].strip())
    line = _ACTION_LINE.search(text)
    if not line:
        plan = _PLAN.search(text)
        if plan:
            return _bracket_plan(text, plan)
        raise ValueError("invalid format, use Action: name[argument] or Final Answer: ...")
    written = line.group(1).strip()
    call = _BRACKET_CALL.match(written)
    if not call:
        raise ValueError(f"invalid format {written!r}, use Action: name[argument]")
    name, argument = call.groups()
    return Action(_thought_before(text, line.start()), name, argument.strip(), call=f"{name}[{argument.strip()}]")


_PLAN = re.compile(r"^[ \t]*Plan[ \t]*:[ \t]*$", re.M)
_PLAN_ITEM = re.compile(r"^[ \t]*(\d{1,4})[.)][ \t]*(.*)$")


def _bracket_plan(text: str, plan: re.Match[str]) -> ActionPlan:
    """``Plan:`` then numbered lines ``1. name[argument]``, one call each (blank lines and
    text after the last item end the plan)."""
    actions: list[Action] = []
    for line in text[plan.end():].split("\n"):
        if not line.strip():
            if actions:
                break
            continue
        item = _PLAN_ITEM.match(line)
        if not item:
            break
        written = item.group(2).strip()
        call = _BRACKET_CALL.match(written)
        if not call:
            raise ValueError(f"plan item {item.group(1)} {written!r:.80} is not a call, use N. name[argument]")
        name, argument = call.groups()
        actions.append(Action("", name, argument.strip(), call=f"{name}[{argument.strip()}]"))
    if not actions:
        raise ValueError("a Plan: needs numbered items, one call each: 1. name[argument]")
    if len(actions) > MAX_CALLS:
        raise ValueError(f"a plan of {len(actions)} items; at most {MAX_CALLS}")
    return ActionPlan(_thought_before(text, plan.start()), tuple(actions))


_ANSWER = re.compile(r"^[ \t]*(?:Final[ \t]+)?Answer[ \t]*:[ \t]*", re.M)
_COLON_CALL = re.compile(r"^(\w+)[ \t]*:[ \t]*(.*)$", re.S)


def parse_colon_action(text: str) -> Step:
    """``Action: tool: argument`` or ``Answer: ...``."""
    text = _require_text(text)
    answer = _ANSWER.search(text)
    if answer:
        return FinalAnswer(_thought_before(text, answer.start()), text[answer.end():].strip())
    line = _ACTION_LINE.search(text)
    if not line:
        raise ValueError("could not parse Action, use Action: tool: argument or Answer: ...")
    written = line.group(1).strip()
    call = _COLON_CALL.match(written)
    if not call:
        raise ValueError(f"could not parse Action {written!r}, use Action: tool: argument")
    name, argument = call.groups()
    return Action(_thought_before(text, line.start()), name, argument.strip(), call=f"{name}: {argument.strip()}")


_JSON_INPUT = re.compile(r"^[ \t]*Action[ \t]+Input[ \t]*:[ \t]*", re.M)


def parse_json_action(text: str) -> Step:
    """``Thought:`` / ``Action: name`` / ``Action Input: {json}`` or ``Final Answer:``."""
    text = _require_text(text)
    final = _FINAL.search(text)
    if final:
        return FinalAnswer(_thought_before(text, final.start()), text[final.end():].strip())
    action = _ACTION_LINE.search(text)
    if not action:
        raise ValueError("no Action: line and no Final Answer:")
    name = action.group(1).strip()
    if not re.fullmatch(r"[\w.\-]+", name):
        raise ValueError(f"Action should be a tool name, got {name!r}")
    given = _JSON_INPUT.search(text, action.end())
    if not given:
        raise ValueError(f"no Action Input: after Action: {name}")
    raw = text[given.end():].strip()
    try:
        args = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"Action Input is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    if not isinstance(args, dict):
        raise ValueError(f"Action Input must be a JSON object, got {type(args).__name__}")
    # The call as written, so a transcript rebuilt from events reads as the model wrote it.
    return Action(_thought_before(text, action.start()), name, args, call=f"{name}\nAction Input: {raw}")


# Each run of spaces is read once ("[ \t]*\d*[ \t]*" would try every split of a long run: quadratic).
_NUM_THOUGHT = re.compile(r"^[ \t]*Thought[ \t]*(?:\d+[ \t]*)?:[ \t]*", re.M)
_NUM_ACTION = re.compile(r"^[ \t]*Action[ \t]*(?:\d+[ \t]*)?:\s*(.*)$", re.M)  # the first non-blank line after the colon


def parse_numbered_action(text: str) -> Step:
    """The ReAct paper's ``Thought 1:`` / ``Action 1: Search[x]`` / ``Finish[answer]``,
    with or without a space after the colon."""
    text = _require_text(text)
    action = _NUM_ACTION.search(text)
    if not action:
        raise ValueError("no 'Action N:' line, use Action N: Search[entity] or Finish[answer]")
    head = text[: action.start()]
    found = list(_NUM_THOUGHT.finditer(head))
    thought = head[found[-1].end():].strip() if found else ""
    written = action.group(1).strip()
    call = _BRACKET_CALL.match(written)
    if not call:
        raise ValueError(f"invalid action {written!r}, use Search[entity], Lookup[keyword] or Finish[answer]")
    name, argument = call.groups()
    if name.lower() == "finish":
        return FinalAnswer(thought, argument.strip())
    return Action(thought, name, argument.strip(), call=f"{name}[{argument.strip()}]")


# --- structured formats -----------------------------------------------------------------


def _describe_call(name: str, args: dict[str, Any]) -> str:
    return f"{name}({args!r})"


def parse_plan_step(step: Any) -> Step:
    """A scripted plan's step: a ``(tool, args)`` tuple; missing args mean ``{}``; ``finish`` ends the run
    and is not a tool call (an ``answer`` argument, if given, is the answer)."""
    if isinstance(step, str):
        step = (step,)
    if isinstance(step, (tuple, list)) and step and all(isinstance(part, (tuple, list)) for part in step):
        calls = [parse_plan_step(part) for part in step]
        if not all(isinstance(call, Action) for call in calls):
            raise ValueError("several calls in one plan step cannot include finish")
        return _parallel("", calls)  # type: ignore[arg-type]
    if not isinstance(step, (tuple, list)) or not 1 <= len(step) <= 2:
        raise ValueError(f"a plan step is (tool, args), got {step!r:.80}")
    name = step[0]
    args = step[1] if len(step) == 2 else {}
    if not isinstance(name, str) or not name:
        raise ValueError(f"a plan step's tool must be a name, got {name!r:.80}")
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise ValueError(f"a plan step's args must be a dict, got {type(args).__name__}")
    if name == "finish":
        answer = args.get("answer")
        return FinalAnswer("", None if answer is None else str(answer))
    return Action("", name, dict(args), call=_describe_call(name, args))


def parse_script_step(step: Any) -> Step:
    """A ToyLLM-style script step: ``{"kind": "finish", "content": ...}`` or
    ``{"thought": ..., "action": name, "args": {...}}`` (``action`` may also be
    ``{"name": ..., "args": ...}``)."""
    if not isinstance(step, dict):
        raise ValueError(f"a script step is a dict, got {type(step).__name__}")
    thought = step.get("thought", "")
    if not isinstance(thought, str):
        raise ValueError(f"'thought' must be text, got {type(thought).__name__}")
    if step.get("kind") == "finish":
        for key in ("content", "answer"):
            if key in step:
                return FinalAnswer(thought, str(step[key]))
        raise ValueError("a finish step needs 'content' (the answer)")
    for key, make in (("actions", _parallel), ("plan", _plan)):
        if key in step:
            items = step[key]
            if not isinstance(items, list) or not items:
                raise ValueError(f"'{key}' must be a non-empty list of calls")
            return make(thought, [_script_call(item, f"{key} #{i + 1}") for i, item in enumerate(items)])
    return _script_call(step, "a script step", thought)


def _parallel(thought: str, actions: list[Action]) -> Step:
    if len(actions) > MAX_CALLS:
        raise ValueError(f"{len(actions)} calls in one turn; at most {MAX_CALLS}")
    if len(actions) == 1:
        return replace(actions[0], thought=thought)
    return ParallelCalls(thought, tuple(actions))


def _plan(thought: str, actions: list[Action]) -> Step:
    if len(actions) > MAX_CALLS:
        raise ValueError(f"a plan of {len(actions)} items; at most {MAX_CALLS}")
    return ActionPlan(thought, tuple(actions))


def _script_call(step: Any, what: str, thought: str = "") -> Action:
    """One call of a script: ``{"action": name, "args": {...}}`` (or ``action = {"name", "args"}``)."""
    if not isinstance(step, dict):
        raise ValueError(f"{what} is a dict, got {type(step).__name__}")
    action = step.get("action")
    args = step.get("args", {})
    if isinstance(action, dict):
        args = action.get("args", action.get("arguments", {}))
        action = action.get("name", action.get("tool"))
    if not isinstance(action, str) or not action:
        raise ValueError(f"{what} needs an 'action' naming a tool" + (", or kind = 'finish'" if what == "a script step" else ""))
    if not isinstance(args, dict):
        raise ValueError(f"'args' must be a dict, got {type(args).__name__}")
    return Action(thought, action, dict(args), call=_describe_call(action, args))


_REFLECTION = re.compile(r"^[ \t]*Reflection[ \t]*:[ \t]*", re.M)
MAX_REFLECTION_CHARS = 20_000


def parse_reflection(output: Any) -> str:
    """A critique the policy wrote when asked to reflect, in any format: a script's
    ``{"reflection": ...}``, or text (what follows ``Reflection:`` if it says so, else all
    of it). ValueError when there is none."""
    if isinstance(output, dict):
        output = output.get("reflection", output.get("thought"))
    if not isinstance(output, str):
        raise ValueError(f"a reflection is text, got {type(output).__name__}")
    found = _REFLECTION.search(output)
    text = (output[found.end():] if found else output).strip()
    if not text:
        raise ValueError("the reflection is empty")
    return text[:MAX_REFLECTION_CHARS]


PARSERS: dict[str, Callable[[Any], Step]] = {
    "bracket": parse_bracket_action,
    "colon": parse_colon_action,
    "json": parse_json_action,
    "numbered": parse_numbered_action,
    "plan": parse_plan_step,
    "script": parse_script_step,
}


def get_parser(name: str) -> Callable[[Any], Step]:
    try:
        return PARSERS[name]
    except KeyError:
        raise ValueError(f"unknown action format {name!r}; known: {', '.join(PARSERS)}") from None
