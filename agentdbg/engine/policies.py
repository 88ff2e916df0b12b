"""Policies: the stand-ins for a model. Each turns what the agent shows it (the prompt)
into its next output, and names the action format that output is written in."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from agentdbg.engine.parsers import get_parser


class Policy:
    """Base class. ``respond(prompt)`` returns the next output (text, tuple or dict)."""

    format: str = "bracket"
    kind: str = "policy"

    def reset(self) -> None:
        """Start again from the beginning, for a new run."""

    @property
    def exhausted(self) -> bool:
        """True when a scripted policy has nothing left to say."""
        return False

    def respond(self, prompt: str) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self) -> str:
        return f"{self.kind} ({self.format} format)"


class _Script(Policy):
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
        if self.exhausted:
            raise IndexError("the script has no more outputs")
        output = self.outputs[min(self.position, len(self.outputs) - 1)]
        self.position += 1
        return output

    def describe(self) -> str:
        repeat = ", then repeats the last" if self.then == "repeat" else ""
        return f"{self.kind}: {len(self.outputs)} scripted outputs ({self.format} format{repeat})"


class ScriptedPlan(_Script):
    """A fixed list of ``(tool, args)`` steps; ``("finish",)`` ends the run."""

    kind = "plan"

    def __init__(self, steps: Sequence[Any]):
        super().__init__(steps, "plan")


class ToyScript(_Script):
    """A ToyLLM-style script: dicts with thought / action / args, or kind = finish."""

    kind = "script"

    def __init__(self, steps: Sequence[dict]):
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
