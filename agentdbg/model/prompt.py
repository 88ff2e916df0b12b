"""The prompt a policy was shown at a step, rebuilt from events.

Without memory the policy sees the whole transcript: the task line, then every earlier
step as Thought / Action / Observation lines. With tiered memory it sees the memory's
context, which is a function of the tiers before the step and of the step's recall; both
are in the events, so the debugger can show exactly what the model was given.
"""

from __future__ import annotations

from agentdbg.engine.agent import REFLECT_CUE
from agentdbg.engine.memory import render_context
from agentdbg.model.runs import RunView
from agentdbg.model.state import StepRecord

# How each scratchpad label is written in a transcript.
_TRANSCRIPT_LABELS = {"Reflection", "Thought", "Action", "Observation", "Final Answer"}


def step_text(record: StepRecord) -> str:
    """One step as the transcript shows it (what a memory keeps as a turn)."""
    lines = []
    for label, text in record.transcript():
        if label in _TRANSCRIPT_LABELS:
            lines.append(f"{label}: {text}")
        elif label == "Plan":
            lines.append(f"Plan:\n{text}")
        elif label == "Output":
            lines.append(text)
    return "\n".join(lines)


def prompt_at(run: RunView, step: int, max_steps_shown: int | None = None) -> str:
    """The prompt the policy was shown at ``step`` (1-based).

    Without memory that is the transcript of steps 1..step-1; ``max_steps_shown`` keeps
    only the most recent of them (a run of a million steps has a million-step prompt)."""
    info = run.info
    reflection = run.record(step).reflection
    cue = "" if reflection is None else "\n" + REFLECT_CUE.format(step=reflection.on_step)  # asked to reflect
    if info.memory:
        before = run.state_at(step - 1).memory
        return render_context(info.task_line, before.summary, run.record(step).recalled, list(before.buffer)) + cue
    first = 1 if max_steps_shown is None else max(1, step - max_steps_shown)
    parts = [info.task_line]
    if first > 1:
        parts.append(f"(… {first - 1:,} earlier steps)")
    parts += [step_text(run.record(n)) for n in range(first, step)]
    return "\n".join(part for part in parts if part) + cue
