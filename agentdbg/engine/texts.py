"""The words the loop writes itself: error observations, the retry prompts, what a run that
ran out of steps or of script says, and what a missing key reads as.

Everything else in a run comes from the policy and the tools. These few texts differ from
one well-known walkthrough to the next, and a policy written against one of them reads
them (a rule that retries on ``please retry``, a model prompted with the other's examples),
so a plan chooses them (``texts = "..."``, docs/plans.md). Each set is data: nothing here
changes what the loop does, only what it says.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from agentdbg.engine.tools import ToolError

# A script that runs out finishes with this answer when its texts say so (the ToyLLM
# walkthrough's scripted model does exactly that).
SCRIPT_END_ANSWER = "no more actions"


@dataclass(frozen=True)
class LoopTexts:
    """``name``: what plans call it. ``tool_error``: a failed call's observation.
    ``parse_error``: the observation for output that is not a readable action (given the
    parser's message). ``budget``: what a run that used its step budget says (its outcome
    message and, with ``describe()``, its result); None keeps the guard's own message.
    ``script_ends_with_answer``: a scripted policy that runs out finishes with the answer
    ``SCRIPT_END_ANSWER`` instead of stopping as ``script exhausted``. ``kv_missing``:
    what ``kv_get`` returns for a missing key (``{key}`` filled in); None: a KeyError
    observation."""

    name: str
    description: str
    tool_error: Callable[[ToolError], str]
    parse_error: Callable[[str], str]
    budget: str | None = None
    script_ends_with_answer: bool = False
    kv_missing: str | None = None


def _toyllm_tool_error(error: ToolError) -> str:
    if error.kind == "unknown_tool":
        return f"error: unknown tool {error.tool!r}"
    if error.kind == "bad_args":
        return f"error: bad args for {error.tool}: {error.message.removeprefix(f'bad arguments for {error.tool}: ')}"
    return f"error: {error.message}"


def _agent_loop_tool_error(error: ToolError) -> str:
    if error.kind == "unknown_tool":
        return f"unknown tool '{error.tool}' — please retry"
    return error.observation


AGENTDBG = LoopTexts(
    "agentdbg",
    "ERROR: lines naming what went wrong and, for an unknown tool, the tools there are "
    "(the library example's executor)",
    tool_error=lambda error: error.observation,
    parse_error=lambda message: f"ERROR: {message}",
)
TOYLLM = LoopTexts(
    "toyllm",
    "the ToyLLM agent loop's: error: lines, missing:KEY from kv_get, a script that runs out "
    "answers 'no more actions', a run out of turns answers 'budget exhausted'",
    tool_error=_toyllm_tool_error,
    parse_error=lambda message: f"error: {message}",
    budget="budget exhausted",
    script_ends_with_answer=True,
    kv_missing="missing:{key}",
)
AGENT_LOOP = LoopTexts(
    "agent_loop",
    "the agent_loop() controller's: '... — please retry' for an unreadable action or an "
    "unknown tool, 'Agent did not converge to an answer within max_turns' when out of turns",
    tool_error=_agent_loop_tool_error,
    parse_error=lambda _message: "could not parse Action — please retry",
    budget="Agent did not converge to an answer within max_turns",
)

TEXTS: dict[str, LoopTexts] = {texts.name: texts for texts in (AGENTDBG, TOYLLM, AGENT_LOOP)}


def get_texts(name: str) -> LoopTexts:
    try:
        return TEXTS[name]
    except KeyError:
        raise ValueError(f"unknown texts {name!r}; known: {', '.join(TEXTS)}") from None
