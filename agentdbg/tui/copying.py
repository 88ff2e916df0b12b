"""What ``y`` and ``Y`` put on the clipboard: a step as text (the transcript lines, as
the scratchpad shows them) or as JSON (its events, as a trace holds them). The text is
the run's own, not cleaned for the screen: what is pasted is what the agent wrote."""

from __future__ import annotations

import json

from agentdbg.model.state import StepRecord

COPY_LIMIT = 4_000_000  # characters: a terminal's clipboard (OSC 52) takes no more


def step_text(record: StepRecord) -> str:
    lines = [f"Step {record.step}"]
    lines.extend(f"{label}: {value}" for label, value in record.transcript())
    return "\n".join(lines)


def step_json(record: StepRecord) -> str:
    return json.dumps([event.to_dict() for event in record.events], ensure_ascii=False, indent=2)


def limited(text: str) -> tuple[str, int]:
    """``text`` cut to ``COPY_LIMIT`` characters, and how many were left out."""
    if len(text) <= COPY_LIMIT:
        return text, 0
    return text[:COPY_LIMIT], len(text) - COPY_LIMIT
