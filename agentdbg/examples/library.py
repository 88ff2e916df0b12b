"""The library question, with its three hand-written policies as Python callables.

Sample plans reproduce these runs as data (``sample_plans/library_*.toml``); this module is
what a plan names when it says it runs Python code (``library_good_python.toml``)."""

from __future__ import annotations

import re

from agentdbg.engine import (
    ReActAgent,
    RepetitionGuard,
    ToolRegistry,
    calculator,
    table_lookup,
)

CATALOG = {"Il Gattopardo": 5, "Se questo e' un uomo": 2}
LOANS = {"Il Gattopardo": 3, "Se questo e' un uomo": 2}
QUESTION = "How many copies of Il Gattopardo are available?"


def registry() -> ToolRegistry:
    return ToolRegistry(
        [
            table_lookup("catalog", CATALOG, param="title", description="Total copies of a title."),
            table_lookup("loans", LOANS, param="title", description="Copies of a title on loan."),
            calculator("calc"),
        ]
    )


def valid_observations(transcript: str) -> list[str]:
    every = re.findall(r"^Observation: (.*)$", transcript, re.M)
    return [o for o in every if not o.startswith("ERROR")]


def good_policy(transcript: str) -> str:
    ok = valid_observations(transcript)
    if len(ok) == 0:
        return "Thought: I need the total copies.\nAction: catalog[Il Gattopardo]"
    if len(ok) == 1:
        return "Thought: now the copies on loan.\nAction: loans[Il Gattopardo]"
    if len(ok) == 2:
        return f"Thought: I subtract.\nAction: calc[{ok[0]} - {ok[1]}]"
    return f"Thought: I have the number.\nFinal Answer: {ok[2]}"


def hallucinating_policy(transcript: str) -> str:
    if "Observation:" not in transcript:
        return "Thought: I search online.\nAction: web_search[Il Gattopardo copies]"
    return good_policy(transcript)


def stuck_policy(transcript: str) -> str:
    return "Thought: I need the total copies.\nAction: catalog[Il Gattopardo]"


def agent(policy, max_steps: int = 6) -> ReActAgent:
    """The example's agent: step budget 6 and the strict any-repeat brake."""
    return ReActAgent(policy, registry(), max_steps=max_steps, guards=[RepetitionGuard("any")])
