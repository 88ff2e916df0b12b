"""The prompt a policy was shown at a step, rebuilt from events.

Without memory the policy sees the whole transcript: the task line, then every earlier
step as Thought / Action / Observation lines. With tiered memory it sees the memory's
context, which is a function of the tiers before the step and of the step's recall; both
are in the events, so the debugger can show exactly what the model was given.
"""

from __future__ import annotations

from typing import Any

from agentdbg.engine import events as ev
from agentdbg.engine.agent import REFLECT_CUE
from agentdbg.engine.memory import render_context
from agentdbg.model.runs import RunView
from agentdbg.model.state import StepRecord

SYSTEM_HEADER = "System prompt (as the source recorded it):"
TASK_HEADER = "Task and transcript:"
# Raw records an importer keeps for a system (or developer) message, by their source.
_SYSTEM_SOURCES = ("system message", "developer message", "system prompt")

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
    only the most recent of them (a run of a million steps has a million-step prompt).
    A run imported from a stack that recorded its system prompt shows that first."""
    body = _prompt_body(run, step, max_steps_shown)
    system = source_system_prompt(run)
    return f"{SYSTEM_HEADER}\n{system}\n\n{TASK_HEADER}\n{body}" if system else body


def source_system_prompt(run: RunView) -> str:
    """The system (or developer) messages the source recorded, kept as raw records before
    or with step 1; "" when it recorded none (a plan's policy has no such message)."""
    raws = [event for event in _preamble(run) if isinstance(event, ev.RawRecord)]
    try:
        raws += [event for event in run.record(1).raw if isinstance(event, ev.RawRecord)]
    except (IndexError, ValueError, OSError, AttributeError):
        pass
    texts = [_message_text(raw.data) for raw in raws if str(raw.source).endswith(_SYSTEM_SOURCES)]
    return "\n\n".join(text for text in texts if text)


def _preamble(run: RunView) -> tuple[Any, ...]:
    try:
        return tuple(run.preamble)
    except (AttributeError, ValueError, OSError):
        return ()


def _message_text(data: Any) -> str:
    """A chat message's text: its content as a string, or its text parts joined."""
    content = data.get("content") if isinstance(data, dict) else data
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [part.get("text") if isinstance(part, dict) else part for part in content]
        return "\n".join(part for part in parts if isinstance(part, str))
    return ""


def _prompt_body(run: RunView, step: int, max_steps_shown: int | None) -> str:
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
