"""What agentdbg's own exports keep beside the standard fields, read back (docs/export.md):
the ``agentdbg.*`` attributes of OTLP spans and the ``agentdbg`` object beside an OpenAI
messages list. With them an exported run imports with its outcome, verdict, error kinds,
parse errors, per-step tokens and raw records as they were. Files from elsewhere have
none of it and read as before. Every value is checked: one of the wrong type is ignored.
"""

from __future__ import annotations

import json
from typing import Any

from agentdbg.engine import events as ev
from agentdbg.importers.base import Source, token_count
from agentdbg.importers.builder import RunBuilder, StepDraft
from agentdbg.importers.chat import Call, ChatAssembler

_PREFIX = "agentdbg."
_STRUCTURED = {"tools", "guards", "memory", "verdict", "preamble", "raw", "guard_tripped"}


def _decoded(key: str, value: Any) -> Any:
    if key in _STRUCTURED and isinstance(value, str):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return None
    return value


def _ours(attrs: dict) -> dict:
    return {key[len(_PREFIX):]: _decoded(key[len(_PREFIX):], value)
            for key, value in attrs.items() if isinstance(key, str) and key.startswith(_PREFIX)}


def _valid(event: dict) -> bool:
    try:
        ev.event_from_dict(event)
    except ValueError:
        return False
    return True


class RunFacts:
    """A run's facts (``agentdbg.outcome``, ``agentdbg.verdict``, ...), checked."""

    def __init__(self, facts: dict):
        self.facts = facts

    @classmethod
    def from_attributes(cls, attrs: dict) -> RunFacts | None:
        facts = _ours(attrs)
        return cls(facts) if isinstance(facts.get("outcome"), str) else None

    @classmethod
    def from_object(cls, value: Any) -> RunFacts | None:
        if isinstance(value, dict) and value.get("version") == 1 and isinstance(value.get("outcome"), str):
            return cls(value)
        return None

    def _text(self, key: str) -> str | None:
        value = self.facts.get(key)
        return value if isinstance(value, str) else None

    def apply_preamble(self, builder: RunBuilder) -> None:
        """The records that stood before the run's first step (they go with the first step)."""
        preamble = self.facts.get("preamble")
        for item in preamble if isinstance(preamble, list) else []:
            if isinstance(item, dict) and item.get("type") == "raw":
                builder.raw(str(item.get("source", "")), item.get("data"), str(item.get("note", "")))

    def apply_settings(self, builder: RunBuilder) -> None:
        """The run's name, policy, source, tools and step budget."""
        for key in ("task", "name", "policy", "source"):
            if self._text(key) is not None:
                setattr(builder, key, self._text(key))
        tools = self.facts.get("tools")
        if isinstance(tools, list) and _valid({"type": "run_start", "task": "", "tools": tools}):
            builder.tools = tools
        guards = self.facts.get("guards")
        if isinstance(guards, dict) and token_count(guards.get("max_steps")) is not None:
            builder.max_steps = guards["max_steps"]

    def end(self) -> dict:
        """``RunBuilder.build`` arguments: outcome, answer, message, guard, verdict."""
        found: dict[str, Any] = {"outcome": self.facts["outcome"], "message": self._text("message") or ""}
        if self._text("answer") is not None:
            found["answer"] = self._text("answer")
        if self.facts.get("guard") in ev.GUARD_NAMES:
            found["guard"] = self.facts["guard"]
        verdict = self.facts.get("verdict")
        if isinstance(verdict, dict) and _valid({"type": "run_end", "outcome": "x", "verdict": verdict}):
            found["verdict"] = verdict
        return found


# --- steps --------------------------------------------------------------------------------


def restore_step(builder: RunBuilder, step: StepDraft, facts: dict) -> None:
    """Put back what a step's facts say (see ``agentdbg.exporters``)."""
    if facts.get("not_answer") is True and step.answer is not None:
        step.thought = "\n".join(t for t in (step.thought, step.answer) if t)
        step.answer = None
    if isinstance(facts.get("thought"), str):
        step.thought = facts["thought"]
    failed = facts.get("parse_error")
    if isinstance(failed, dict) and isinstance(failed.get("message"), str):
        step.parse_error, step.answer, step.tool = failed["message"], None, None
        step.output = failed["output"] if isinstance(failed.get("output"), str) else ""
    if isinstance(facts.get("answer"), str) and step.tool is not None:
        step.answer = facts["answer"]
    if isinstance(facts.get("call"), str) and step.tool is not None:
        step.call = facts["call"]
    if facts.get("positional") is True and isinstance(step.args, dict) and len(step.args) == 1:
        value = next(iter(step.args.values()))
        step.args = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if facts.get("no_id") is True:
        step.call_id = step.observation_id = ""
    elif isinstance(facts.get("id"), str):
        step.call_id = facts["id"]
        step.observation_id = facts["id"] if step.observation is not None else ""
    error = facts.get("error")
    if isinstance(error, dict) and error.get("kind") in ev.ERROR_KINDS:
        step.error_kind = error["kind"]
        step.error_message = error["message"] if isinstance(error.get("message"), str) else ""
    if isinstance(facts.get("observation"), str):
        replied_to = facts.get("observation_id")
        step.reply(facts["observation"], facts.get("observation_error") is True,
                   replied_to if isinstance(replied_to, str) else "")
    elif facts.get("observation_error") is True and step.observation is not None:
        step.observation_error = True
    raw = facts.get("raw")
    for item in raw if isinstance(raw, list) else []:
        if isinstance(item, dict):
            builder.raw(str(item.get("source", "")), item.get("data"), str(item.get("note", "")), step=step)


def _span_step_facts(attrs: dict) -> dict:
    ours = _ours(attrs)
    facts: dict[str, Any] = {}
    if token_count(ours.get("step")):
        facts["exported"] = True  # a step of its own, even with nothing to say
    if isinstance(ours.get("parse_error"), str):
        facts["parse_error"] = {"message": ours["parse_error"]}
    if isinstance(ours.get("error.kind"), str):
        facts["error"] = {"kind": ours["error.kind"], "message": ours.get("error.message")}
    if isinstance(ours.get("observation"), str):
        facts["observation"] = ours["observation"]
        facts["observation_error"] = ours.get("observation.error") is True
        facts["observation_id"] = ours.get("observation.id")
    for key in ("raw", "call", "answer"):
        if key in ours:
            facts[key] = ours[key]
    if ours.get("arguments.positional") is True:
        facts["positional"] = True
    return facts


def model_turn(chat: ChatAssembler, attrs: dict, texts: list[str], calls: list[Call], tokens: int | None,
               reasoning: list[str]) -> list[StepDraft]:
    """A model turn's steps (``ChatAssembler.assistant``), with the facts its span keeps.
    A turn whose output could not be read, or that failed before any call, is a step of
    its own, never a final answer."""
    facts = _span_step_facts(attrs)
    if not facts:
        return chat.assistant(texts, calls, tokens, reasoning=reasoning)
    said = any(t and t.strip() for t in (*texts, *reasoning))
    if calls or (said and "parse_error" not in facts and "error" not in facts):
        steps = chat.assistant(texts, calls, tokens, reasoning=reasoning)
    else:
        steps = [chat.builder.step(thought="\n".join(t for t in reasoning if t and t.strip()), tokens=tokens)]
    if "parse_error" in facts:
        facts["parse_error"]["output"] = "\n".join(texts)
    if steps:
        restore_step(chat.builder, steps[0], facts)
    return steps


def tool_error(step: StepDraft, attrs: dict) -> None:
    """A failed tool span's error kind as agentdbg had it (none: only the reply was an error)."""
    kind = attrs.get(_PREFIX + "error.kind")
    if not isinstance(kind, str):
        return
    message = attrs.get(_PREFIX + "error.message")
    step.error_kind = kind if kind in ev.ERROR_KINDS else None
    step.error_message = message if isinstance(message, str) and step.error_kind else ""


class ChatFacts:
    """The ``agentdbg`` object beside an exported messages list."""

    def __init__(self, value: Any, src: Source, line: int | None):
        self.run = RunFacts.from_object(value)
        self.src, self.line = src, line
        feedback = value.get("feedback") if self.run is not None else None
        self.feedback = {i for i in feedback if isinstance(i, int)} if isinstance(feedback, list) else set()

    def start(self, builder: RunBuilder) -> None:
        if self.run is not None:
            self.run.apply_settings(builder)
            self.run.apply_preamble(builder)

    def fed_back(self, index: int) -> bool:
        """Message ``index`` is an error fed back to the model, not the user speaking."""
        return index in self.feedback

    def finish(self, builder: RunBuilder) -> dict:
        """Apply the per-step facts; returns ``RunBuilder.build`` arguments."""
        if self.run is None:
            return {}
        facts = self.run.facts
        count = facts.get("steps")
        if count != len(builder.steps):
            self.src.problem(f"the agentdbg facts beside the messages are for {count!r} steps and the messages "
                             f"make {len(builder.steps)}: they are not applied", self.line)
            return {}
        tokens = facts.get("step_tokens")
        per_step = facts.get("facts") if isinstance(facts.get("facts"), dict) else {}
        for number, step in enumerate(builder.steps, 1):
            if isinstance(tokens, list) and len(tokens) == len(builder.steps):
                step.tokens = token_count(tokens[number - 1]) or None
            found = per_step.get(str(number))
            if isinstance(found, dict):
                restore_step(builder, step, found)
        found = self.run.end()
        total = token_count(facts.get("tokens"))
        if total and not any(step.tokens for step in builder.steps):
            found["total_tokens"] = total  # a run-wide figure only
        return found
