"""An interactive agent's session (Codex CLI, Claude Code, Gemini CLI) as runs: one run
per prompt the user typed, so each run has its task, its steps and its own outcome.

What comes before the first prompt (the session's settings, a system prompt) is kept
with the first run; what comes after a prompt, until the next, belongs to that prompt's run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentdbg.engine import events as ev
from agentdbg.importers.base import Source
from agentdbg.importers.builder import RunBuilder
from agentdbg.importers.chat import ChatAssembler


@dataclass
class Turn:
    """One prompt and what the agent did about it."""

    builder: RunBuilder
    chat: ChatAssembler
    outcome: str | None = None  # the source's own word (interrupted, error); else computed
    message: str = ""
    answer: str | None = None  # the source's final answer when no step gave one
    extra: dict = field(default_factory=dict)  # what an importer tracks per turn

    @property
    def started(self) -> bool:
        return bool(self.builder.task or self.builder.steps)


class Session:
    def __init__(self, src: Source, kind: str, name: str = "", tools: list[dict] | None = None):
        self.src = src
        self.kind = kind  # names the source in raw records
        self.name = name
        self.tools = list(tools or [])
        self.model = ""
        self.turns: list[Turn] = []

    @property
    def current(self) -> Turn:
        """The turn being read (the first one is opened by whatever comes first)."""
        if not self.turns:
            return self._open()
        return self.turns[-1]

    def prompt(self, task: str) -> Turn:
        """The user's prompt: the task of the turn just opened, else of a new one."""
        turn = self.next_turn()
        turn.builder.task = task
        return turn

    def next_turn(self) -> Turn:
        """A new turn, unless the current one has neither a task nor a step yet."""
        if self.turns and not self.turns[-1].started:
            return self.turns[-1]
        return self._open()

    def set_model(self, model: Any) -> None:
        if isinstance(model, str) and model.strip() and model != self.model:
            self.model = model
            self.current.builder.policy = f"recorded: {model}"

    def raw(self, data: Any, note: str, what: str = "record", *, current: bool = False) -> None:
        self.current.builder.raw(f"{self.kind} {what}", data, note, current=current)

    def _open(self) -> Turn:
        builder = RunBuilder(source=self.src.path, tools=self.tools,
                             policy=f"recorded: {self.model}" if self.model else f"recorded {self.kind} session")
        turn = Turn(builder, ChatAssembler(builder, self.src, self.kind))
        self.turns.append(turn)
        return turn

    def build(self) -> list[list[ev.Event]]:
        runs = []
        for number, turn in enumerate(self.turns, 1):
            turn.chat.finish()
            turn.builder.name = self.name if len(self.turns) == 1 else f"{self.name} turn {number}".strip()
            outcome = turn.outcome
            if outcome is None and turn.answer is not None and turn.builder.default_outcome() != "answered":
                outcome = "answered"
            runs.append(turn.builder.build(outcome=outcome, message=turn.message,
                                           answer=turn.answer if outcome == "answered" else None))
        return runs
