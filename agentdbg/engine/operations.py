"""One tool call through the containment: the journal, the approver, then the registry.

Shared by the engine's loop and the recorder, so a call to a dangerous or keyed tool
behaves the same whoever runs it:

1. a call with an operation key already in the journal is answered with the recorded
   result (``replayed``) and does not run, nor ask for approval: nothing would happen;
2. a call to a dangerous tool asks the approver: a denial is the answer (an error
   observation), edited arguments are what runs;
3. a keyed call writes its ``operation`` event (its intent) before it runs.

Calls to other tools, and calls that would not run anyway (an unknown tool, bad
arguments), go straight to ``ToolRegistry.dispatch``. The events (``approval``,
``operation``) go out through ``emit`` in the order they happen; the caller writes the
observation, with the key and ``replayed`` this returns.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agentdbg.engine import events as ev
from agentdbg.engine.approval import ApprovalRequest, Approver, Decision, decide, who
from agentdbg.engine.journal import OperationJournal, Recorded
from agentdbg.engine.tools import ToolError, ToolRegistry


@dataclass
class GatedCall:
    """How a call went. ``text`` set: the call was answered without running (denied,
    replayed, or refused because an earlier call with its key has no known result), and
    ``error`` says whether that answer is an error. Otherwise ``value`` is what the
    registry returned (a result, or a ToolError) and ``note`` is to follow its text."""

    value: Any = None
    text: str | None = None
    error: bool = False
    key: str = ""
    replayed: dict[str, Any] | None = None
    decision: Decision | None = None
    note: str = ""

    def observation(self, text: str) -> str:
        """The value's text with the note (an edit's) after it."""
        return f"{text}\n{self.note}" if self.note else text


def gated_dispatch(registry: ToolRegistry, name: str, args: Mapping[str, Any] | str, *, step: int,
                   emit: Callable[[ev.Event], None], approver: Approver | None = None,
                   journal: OperationJournal | None = None, thought: str = "", id: str = "") -> GatedCall:
    tool = registry.get(name)
    if tool is None or not (tool.dangerous or tool.idempotency_key is not None):
        return GatedCall(registry.dispatch(name, args))
    try:
        bound = tool.bind(args)
    except ValueError:
        return GatedCall(registry.dispatch(name, args))  # the bad arguments, as the registry says them
    if tool.validate(bound):
        return GatedCall(registry.dispatch(name, bound))
    key, failed = _key(tool, bound)
    if failed is not None:
        return failed
    if key and journal is not None:
        found = journal.lookup(key)
        if found is not None:
            return _answer_from(found, journal.run)
    decision = None
    note = ""
    if tool.dangerous:
        decision = decide(approver, ApprovalRequest.of(tool, bound, step, thought, key, id))
        if decision.decision == "edited" and decision.args == bound:
            decision = Decision.approve(decision.reason, decision.by)  # nothing was changed
        emit(ev.Approval(step=step, tool=name, decision=decision.decision, by=decision.by, reason=decision.reason,
                         args=decision.args, key=key, id=id))
        if not decision.runs:
            return GatedCall(text=f"ERROR: {decision.denial()}", error=True, decision=decision)
        if decision.args is not None:
            bound = decision.args
            note = (f"(the call ran with arguments edited by {who(decision.by)}: "
                    f"{json.dumps(ev.jsonable(bound), ensure_ascii=False)})")
            if tool.validate(bound):
                return GatedCall(registry.dispatch(name, bound), decision=decision, note=note)
            key, failed = _key(tool, bound)
            if failed is not None:
                return failed
            found = journal.lookup(key) if key and journal is not None else None
            if found is not None and journal is not None:
                return _answer_from(found, journal.run)
    if key and journal is not None:
        emit(ev.Operation(step=step, key=key, tool=name))  # the intent, on record before the effect
    return GatedCall(registry.dispatch(name, bound), key=key, decision=decision, note=note)


def _key(tool: Any, args: dict[str, Any]) -> tuple[str, GatedCall | None]:
    try:
        return tool.operation_key(args) or "", None
    except Exception as exc:  # a key function's bug: the call does not run without its key
        detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        error = ToolError("exception", tool.name, f"not run: no operation key for this call of {tool.name} ({detail})")
        return "", GatedCall(error)


def _answer_from(found: Recorded, run: int) -> GatedCall:
    if found.known:
        return GatedCall(text=found.text, error=found.error, key=found.key, replayed=found.replayed(run))
    if found.evidence:
        text = (f"ERROR: not run: {found.evidence}, so whether the operation {found.key} ran is unknown; "
                "it does not run twice: check it by hand, or use another key")
    else:
        text = (f"ERROR: not run: the operation {found.key} started at {found.where(run)} and no result was "
                "recorded (it may still be running, or the run was cut off while it ran), so its effect is "
                "unknown; it does not run twice: check it by hand, or use another key")
    return GatedCall(text=text, error=True, key=found.key)
