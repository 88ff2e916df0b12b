"""A scripted policy that keeps every prompt it was shown (no tests here)."""

from __future__ import annotations

from agentdbg.engine import ScriptedOutputs
from agentdbg.engine.policies import Policy


class Recording(Policy):
    """Says its script and keeps every prompt it was shown."""

    def __init__(self, outputs, format="bracket"):
        self.inner = ScriptedOutputs(outputs, format)
        self.format = format
        self.prompts: list[str] = []

    @property
    def exhausted(self) -> bool:
        return self.inner.exhausted

    def reset(self) -> None:
        self.inner.reset()
        self.prompts = []

    def respond(self, prompt):
        self.prompts.append(prompt)
        return self.inner.respond(prompt)
