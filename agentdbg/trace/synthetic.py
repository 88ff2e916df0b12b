"""Synthetic runs of any length, for benchmarks and crash tests.

Deterministic for a given seed, and shaped like real runs: thoughts, tool calls and
observations, an unknown tool now and then (an error observation), repeated actions,
unreadable outputs (parse errors), memory updates with evictions, growing token counts,
and a final answer. Nothing here runs a tool: the events are made up directly.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from agentdbg.engine import events as ev

TOOLS = [
    {"name": "catalog", "description": "Total copies of a title.", "params": {"title": "str"}, "dangerous": False},
    {"name": "loans", "description": "Copies of a title on loan.", "params": {"title": "str"}, "dangerous": False},
    {"name": "calc", "description": "Arithmetic on numbers.", "params": {"expression": "str"}, "dangerous": False},
]
MEMORY_BUFFER = 4  # turns kept in the recent buffer before the oldest is evicted


def synthetic_run(steps: int, *, seed: int = 0, name: str = "synthetic") -> Iterator[ev.Event]:
    """The events of one run of ``steps`` steps (the last one answers)."""
    rng = random.Random(seed)
    yield ev.RunStart(
        step=0,
        task=f"Count the available copies of {steps} titles.",
        tools=TOOLS,
        guards={"max_steps": None, "repeat": None, "max_consecutive_errors": None, "token_budget": None},
        memory={"buffer": MEMORY_BUFFER, "summary": True},
        policy="synthetic",
        name=name,
        source="agentdbg.trace.synthetic",
    )
    tokens = 0
    errors_in_row = 0
    buffer: list[str] = []
    last_call = ""
    for step in range(1, steps + 1):
        yield ev.StepStart(step=step)
        title = rng.randrange(10_000)
        step_tokens = 30 + rng.randrange(40)
        tokens += step_tokens
        is_error = False
        repeats = 1
        if step == steps:
            yield ev.Thought(step=step, text="I have the number.")
            answer = str(rng.randrange(100))
            yield ev.Answered(step=step, answer=answer)
            yield ev.GuardCounters(step=step, steps=[step, None], repeats=[1, None],
                                   errors=[errors_in_row, None], tokens=[tokens, None], step_tokens=step_tokens)
            yield ev.RunEnd(step=step, outcome="answered", answer=answer, steps=step)
            return
        if step % 101 == 0:
            text = f"Thought: title {title}?\nAction catalog title {title}"
            yield ev.ParseFailed(step=step, message="no Action or Final Answer line", text=text)
            yield ev.Observation(step=step, text="ERROR: no Action or Final Answer line", error=True)
            is_error = True
            turn = text
        else:
            if step % 53 == 0 and last_call:
                call = last_call
                repeats = 2
                yield ev.Thought(step=step, text="Check that again.")
            else:
                tool = "web_search" if step % 37 == 0 else ("catalog", "loans", "calc")[step % 3]
                arg = f"{title}-{rng.randrange(10)}" if tool == "calc" else str(title)
                call = f"{tool}[{arg}]"
                if step % 4 == 1:  # like function-calling agents, most turns say no thought
                    yield ev.Thought(step=step, text=f"Ask {tool}.")
            tool, _, rest = call.partition("[")
            yield ev.ActionTaken(step=step, tool=tool, args=rest[:-1], call=call)
            if tool == "web_search":
                message = "tool 'web_search' does not exist, available: ['calc', 'catalog', 'loans']"
                yield ev.StepError(step=step, kind="unknown_tool", message=message, tool=tool)
                yield ev.Observation(step=step, text=f"ERROR: {message}", error=True)
                is_error = True
                observation = "ERROR"
            else:
                observation = str(rng.randrange(100))
                yield ev.Observation(step=step, text=observation)
            last_call = call
            turn = f"{call} -> {observation}"
        if step % 20 == 0:
            buffer.append(turn)
            evicted = buffer[:-MEMORY_BUFFER]
            del buffer[:-MEMORY_BUFFER]
            summary = f"{step} steps so far, last title {title}" if step % 50 == 0 else None
            yield ev.MemoryUpdate(step=step, added=[turn], evicted=evicted, summary=summary)
        errors_in_row = errors_in_row + 1 if is_error else 0
        yield ev.GuardCounters(step=step, steps=[step, None], repeats=[repeats, None],
                               errors=[errors_in_row, None], tokens=[tokens, None], step_tokens=step_tokens)
