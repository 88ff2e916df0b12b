"""Whether a run got it right: a grader's verdict, as ``run_end.verdict`` holds it.

A verdict is ``{"correct": bool or null, "score": number or null, "expected": text or
null, "grader": text}`` (docs/events.md). Importers copy the one their source recorded
(the ReAct paper's ``em``, a benchmark's ``reward``); a plan that declares ``expected``
gets one from ``judge_answer``. Every view reads it through ``Verdict.read``, which never
raises: a verdict that is missing or malformed reads as none.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

EXPECTED_GRADER = "expected"  # the grader of a plan's own expected answer


def normalise_answer(text: str) -> str:
    """What an exact match compares: case folded, runs of whitespace made one space."""
    return " ".join(text.split()).casefold()


def judge_answer(answer: str | None, expected: str) -> dict[str, Any]:
    """The verdict on ``answer`` against ``expected`` (exact match after normalising
    whitespace and case). No answer at all is wrong."""
    correct = answer is not None and normalise_answer(answer) == normalise_answer(expected)
    return {"correct": correct, "score": None, "expected": expected, "grader": EXPECTED_GRADER}


def _number(value: Any) -> float | int | None:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)) and math.isfinite(value):
        return value
    return None


@dataclass(frozen=True)
class Verdict:
    correct: bool | None = None
    score: float | int | None = None
    expected: str | None = None
    grader: str = ""

    @classmethod
    def read(cls, value: Any) -> Verdict | None:
        """A verdict from ``run_end.verdict`` (a dict) or a ``RunEnd``; None when there is
        none or it is not a verdict's shape."""
        if hasattr(value, "verdict"):
            value = value.verdict
        if not isinstance(value, dict):
            return None
        correct = value.get("correct")
        score = value.get("score")
        expected = value.get("expected")
        grader = value.get("grader")
        return cls(correct if isinstance(correct, bool) else None,
                   None if isinstance(score, bool) else _number(score),
                   expected if isinstance(expected, str) else None,
                   grader if isinstance(grader, str) else "")

    @property
    def word(self) -> str:
        """One word or two: ``correct``, ``wrong``, ``score 0.5``, or ``not judged``."""
        if self.correct is True:
            return "correct"
        if self.correct is False:
            return "wrong"
        if self.score is not None:
            return f"score {format_score(self.score)}"
        return "not judged"

    @property
    def shows_score(self) -> bool:
        """The score says more than the word: partial credit, or a score without a judgement."""
        if self.score is None:
            return False
        implied = {True: 1, False: 0}.get(self.correct) if self.correct is not None else None
        return implied is None or self.score != implied

    def details(self, grader: bool = True) -> str:
        """What the grader recorded beside the word: ``score 0.6; expected: REFUTES; grader: em``
        (the expected answer only when the run did not give it)."""
        parts = []
        if self.correct is not None and self.shows_score and self.score is not None:
            parts.append(f"score {format_score(self.score)}")
        if self.expected is not None and self.correct is not True:
            parts.append(f"expected: {self.expected}")
        if grader and self.named_grader:
            parts.append(f"grader: {self.named_grader}")
        return "; ".join(parts)

    @property
    def named_grader(self) -> str:
        """The grader's name worth showing: not a plan's own ``expected`` (said already)."""
        return "" if self.grader == EXPECTED_GRADER else self.grader

    def to_dict(self) -> dict[str, Any]:
        return {"correct": self.correct, "score": self.score, "expected": self.expected, "grader": self.grader}


def outcome_with_verdict(outcome: str, verdict: Verdict | None) -> str:
    """``answered, wrong``: how a run ended and, when graded, whether it got it right."""
    return f"{outcome}, {verdict.word}" if verdict is not None else outcome


def format_score(score: float | int) -> str:
    return f"{score:g}" if isinstance(score, float) else str(score)
