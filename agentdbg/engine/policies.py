"""Policies: the stand-ins for a model. Each turns what the agent shows it (the prompt)
into its next output, and names the action format that output is written in."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agentdbg import regex
from agentdbg.engine.parsers import get_parser
from agentdbg.engine.texts import SCRIPT_END_ANSWER


class Policy:
    """Base class. ``respond(prompt)`` returns the next output (text, tuple or dict)."""

    format: str = "bracket"
    kind: str = "policy"
    # True when ``reported_tokens`` gives what a call really cost (a model API's usage).
    reports_usage: bool = False
    # True when ``respond`` past the end (``exhausted``) answers a finish instead of failing.
    answers_past_end: bool = False
    # Set by the loop while ``respond`` runs: ``on_note(text, data)`` records a note (a retry,
    # say) in the trace as it happens, as a raw event of the step.
    on_note: Callable[[str, dict[str, Any]], None] | None = None

    def reset(self) -> None:
        """Start again from the beginning, for a new run."""

    def bind_tools(self, specs: Sequence[dict[str, Any]]) -> None:
        """The tools of the run about to start (``ToolRegistry.specs()``), before its first
        step: a policy that calls a model documents them in its system prompt."""

    def reported_tokens(self) -> int | None:
        """Tokens the last ``respond`` really cost (prompt and output, as a model API reports
        its usage), or None when unknown: the loop then estimates them."""
        return None

    def cancel(self) -> None:
        """Asked from another thread to abandon a ``respond`` in progress (a slow model call)."""

    @property
    def exhausted(self) -> bool:
        """True when a scripted policy has nothing left to say."""
        return False

    def respond(self, prompt: str) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self) -> str:
        return f"{self.kind} ({self.format} format)"


class _Script(Policy):
    answers_past_end = True
    def __init__(self, outputs: Sequence[Any], format: str, then: str = "stop"):
        get_parser(format)  # fail early on an unknown format
        if then not in ("stop", "repeat"):
            raise ValueError(f"'then' must be 'stop' or 'repeat', got {then!r}")
        self.outputs = list(outputs)
        self.format = format
        self.then = then
        self.position = 0

    def reset(self) -> None:
        self.position = 0

    @property
    def exhausted(self) -> bool:
        return self.position >= len(self.outputs) and (self.then == "stop" or not self.outputs)

    def respond(self, prompt: str) -> Any:
        if self.exhausted:  # asked again past its end: it finishes, as the ToyLLM script does
            return _FINISH.get(self.format, _FINISH["bracket"])(SCRIPT_END_ANSWER)
        output = self.outputs[min(self.position, len(self.outputs) - 1)]
        self.position += 1
        return output

    def describe(self) -> str:
        repeat = ", then repeats the last" if self.then == "repeat" else ""
        return f"{self.kind}: {len(self.outputs)} scripted outputs ({self.format} format{repeat})"


# A finish step in each format, for a script asked past its end.
_FINISH: dict[str, Callable[[str], Any]] = {
    "plan": lambda answer: ("finish", {"answer": answer}),
    "script": lambda answer: {"kind": "finish", "content": answer},
    "bracket": lambda answer: f"Final Answer: {answer}",
    "json": lambda answer: f"Final Answer: {answer}",
    "colon": lambda answer: f"Answer: {answer}",
    "numbered": lambda answer: f"Action: Finish[{answer}]",
}


class ScriptedPlan(_Script):
    """A fixed list of ``(tool, args)`` steps; ``("finish",)`` ends the run."""

    kind = "plan"

    def __init__(self, steps: Sequence[Any]):
        super().__init__(steps, "plan")


class ToyScript(_Script):
    """A ToyLLM-style script: dicts with thought / action / args, or kind = finish."""

    kind = "script"

    def __init__(self, steps: Sequence[dict[str, Any]]):
        super().__init__(steps, "script")


class ScriptedOutputs(_Script):
    """A list of model outputs written as text in one action format. ``then="repeat"``
    keeps answering with the last one (a stuck model)."""

    kind = "outputs"

    def __init__(self, outputs: Sequence[str], format: str = "bracket", then: str = "stop"):
        super().__init__(outputs, format, then)


class CallablePolicy(Policy):
    """Any Python callable from the prompt (transcript) to the next output."""

    kind = "callable"

    def __init__(self, fn: Callable[[str], Any], format: str = "bracket", name: str = ""):
        get_parser(format)
        self.fn = fn
        self.format = format
        self.name = name or getattr(fn, "__qualname__", repr(fn))

    def respond(self, prompt: str) -> Any:
        return self.fn(prompt)

    def describe(self) -> str:
        return f"python callable {self.name} ({self.format} format)"


def as_policy(policy: Policy | Callable[[str], Any], format: str = "bracket") -> Policy:
    return policy if isinstance(policy, Policy) else CallablePolicy(policy, format)


_PLACEHOLDER = re.compile(r"\{(\d+)\}")


@dataclass(frozen=True)
class Rule:
    """One rule of a ``RulePolicy``: when ``when`` (a compiled ``regex.Pattern``, matched in
    linear time, or None for "always") is found in the prompt, answer ``say`` with ``{1}``, ``{2}``... filled
    from its groups (``{0}``: the whole match). ``once``: fire at most once per run."""

    say: str
    when: regex.Pattern | None = None
    once: bool = False

    @classmethod
    def build(cls, say: str, when: str | None = None, once: bool = False) -> Rule:
        """Compile ``when`` (MULTILINE: ``^`` and ``$`` match at every line; add ``(?s)`` to let
        ``.`` cross lines) and check the placeholders; ValueError says what is wrong."""
        pattern = None
        if when is not None:
            try:
                pattern = regex.compile(when)
            except regex.RegexError as exc:
                where = f" at column {exc.offset + 1}" if exc.offset is not None else ""
                raise ValueError(f"invalid regular expression '{when}'{where}: {exc.reason}") from None
        groups = pattern.groups if pattern is not None else -1
        for found in _PLACEHOLDER.finditer(say):
            number = int(found.group(1))
            if number > groups:
                have = "no 'when'" if pattern is None else f"{groups} group(s) in 'when'"
                raise ValueError(f"'say' uses {found.group(0)} but the rule has {have}")
        return cls(say, pattern, once)

    def answer(self, match: Any) -> str:
        if match is None:
            return self.say
        return _PLACEHOLDER.sub(lambda found: match.group(int(found.group(1))) or "", self.say)


class NoRuleMatched(LookupError):
    """A ``RulePolicy`` found no rule for the prompt (a policy error in the run)."""


class RulePolicy(Policy):
    """Answers from an ordered list of rules; the first rule whose ``when`` is found in the
    prompt answers (a rule without ``when`` always matches). Because it reads its prompt, what
    it says depends on what the agent showed it: a fact that memory failed to bring back
    makes a rule not match. A ``once`` rule that has fired is skipped; when every rule is
    ``once`` and all have fired, the policy is exhausted. No rule matching is an error."""

    kind = "rules"

    def __init__(self, rules: Sequence[Rule], format: str = "bracket"):
        get_parser(format)
        if not rules:
            raise ValueError("a rule policy needs at least one rule")
        self.rules = list(rules)
        self.format = format
        self.fired: set[int] = set()

    def reset(self) -> None:
        self.fired = set()

    @property
    def exhausted(self) -> bool:
        return all(rule.once for rule in self.rules) and len(self.fired) == len(self.rules)

    def respond(self, prompt: str) -> str:
        for index, rule in enumerate(self.rules):
            if rule.once and index in self.fired:
                continue
            match = None
            if rule.when is not None:
                match = rule.when.search(prompt)
                if match is None:
                    continue
            if rule.once:
                self.fired.add(index)
            return rule.answer(match)
        raise NoRuleMatched(f"no rule matched the prompt ({len(self.rules)} rules, {len(self.fired)} spent)")

    def describe(self) -> str:
        return f"rules: {len(self.rules)} rules ({self.format} format)"
