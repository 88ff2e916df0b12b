"""How a run ended, said one way by the command line and the screen alike: the outcome
word (or why there is none yet), the grader's verdict, and the style each is shown in
(Rich style names as plain strings: nothing here imports a UI library)."""

from __future__ import annotations

from typing import Any

from agentdbg.engine.verdicts import Verdict, outcome_with_verdict
from agentdbg.model.state import RunState
from agentdbg.text import flat

SUCCESS_OUTCOMES = frozenset({"answered", "finished"})
# What a guard or a failure stops a run with, and a run that has no end; an imported run's
# own status (submitted, unfinished, exit_cost...) is neither success nor failure.
FAILED_OUTCOMES = frozenset({"budget exhausted", "action repeated", "error budget exhausted",
                             "token budget exhausted", "policy error", "memory error", "tokens error",
                             "error", "incomplete", "running"})
OUTCOME_STYLES = {outcome: "bold green" for outcome in SUCCESS_OUTCOMES}
VERDICT_STYLES = {"correct": "bold green", "wrong": "bold red"}


def run_outcome(run: Any, state: RunState | None = None) -> str:
    """The run's outcome word: its end's, else the state's, else ``incomplete`` (no end
    will come) or ``running``."""
    end = run.end
    if end is not None:
        return str(end.outcome)
    if state is not None and state.outcome:
        return state.outcome
    return "incomplete" if run.complete else "running"


def run_verdict(run: Any, state: RunState | None = None) -> Verdict | None:
    """The grader's verdict on the run (``run_end.verdict``), None when it has none."""
    end = run.end
    return Verdict.read(end.verdict if end is not None else state.verdict if state is not None else None)


def outcome_summary(run: Any) -> str:
    """How the run ended on one line, for a status line: ``answered, wrong: ANSWER; expected
    ...`` (``no outcome recorded`` before its end)."""
    end = run.end if run is not None else None
    if end is None:
        return "no outcome recorded"
    verdict = Verdict.read(end)
    answer = f": {flat(end.answer, 60)}" if end.answer is not None else ""
    details = f"; {flat(verdict.details(), 100)}" if verdict is not None and verdict.details() else ""
    return f"{outcome_with_verdict(flat(end.outcome, 60), verdict)}{answer}{details}"


def outcome_style(outcome: str, answered: bool) -> str:
    if outcome in OUTCOME_STYLES:
        return OUTCOME_STYLES[outcome]
    if outcome in FAILED_OUTCOMES:
        return "bold red"
    return "bold green" if answered else "bold yellow"


def verdict_style(verdict: Verdict) -> str:
    return VERDICT_STYLES.get(verdict.word, "bold yellow")
