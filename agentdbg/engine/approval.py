"""Approval of calls to dangerous tools: the containment for irreversible actions.

Before a call to a tool marked ``dangerous`` runs, the loop asks an *approver* (any
callable from an ``ApprovalRequest`` to a ``Decision``): approve it, deny it (the denial
is the observation, an error the policy reads and can recover from), or edit its
arguments (the edited call is what runs). The approver is pluggable: the debugger's
dialog, ``--approve always|never`` on the command line, a function of your own in
``agentdbg.record(approve=...)``. Nothing here waits or shows anything; an approver that
waits for a person (the debugger's) does so in the loop's thread, never in a UI's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentdbg.engine.events import DECISIONS
from agentdbg.engine.tools import Tool, argument_problems

__all__ = ["ApprovalRequest", "Approver", "Decision", "always", "approver_from", "never", "who"]

APPROVE_CHOICES = ("always", "never")  # what --approve and approve="..." accept


@dataclass(frozen=True)
class ApprovalRequest:
    """A call waiting for a decision: the tool, its description and parameter types (so
    edited arguments can be checked), the arguments as proposed, and where it is."""

    tool: str
    args: dict[str, Any]
    step: int = 0
    thought: str = ""
    description: str = ""
    params: Mapping[str, str] = field(default_factory=dict)  # name -> type name
    optional: frozenset[str] = frozenset()
    key: str = ""  # the call's operation key, for a tool with one
    id: str = ""  # the call's id, in a step of several calls

    @classmethod
    def of(cls, tool: Tool, args: dict[str, Any], step: int = 0, thought: str = "", key: str = "",
           id: str = "") -> ApprovalRequest:
        return cls(tool.name, dict(args), step, thought, tool.description, dict(tool.param_types),
                   frozenset(tool.optional), key, id)

    def problems(self, args: Any) -> list[str]:
        """What is wrong with ``args`` as edited arguments for this tool (empty: they may run)."""
        if not isinstance(args, dict):
            return [f"the arguments should be a JSON object, got {_json_kind(args)}"]
        return argument_problems(self.params, self.optional, args)

    def call_text(self, args: Mapping[str, Any] | None = None) -> str:
        """``tool({"name": value})``: the call as the trace shows it."""
        return f"{self.tool}({json.dumps(self.args if args is None else dict(args), ensure_ascii=False)})"


@dataclass(frozen=True)
class Decision:
    """``approved``, ``denied`` or ``edited`` (then ``args`` are the arguments to run);
    ``by`` says who decided (``user`` in the debugger), ``reason`` why."""

    decision: str
    by: str = ""
    reason: str = ""
    args: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.decision not in DECISIONS:
            raise ValueError(f"a decision is one of {', '.join(DECISIONS)}, got {self.decision!r}")
        if (self.decision == "edited") != (self.args is not None):
            raise ValueError("edited arguments go with the decision 'edited', and only with it")
        for name in ("by", "reason"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"a decision's {name} should be text, got {type(getattr(self, name)).__name__}")

    @classmethod
    def approve(cls, reason: str = "", by: str = "") -> Decision:
        return cls("approved", by, reason)

    @classmethod
    def deny(cls, reason: str = "", by: str = "") -> Decision:
        return cls("denied", by, reason)

    @classmethod
    def edit(cls, args: Mapping[str, Any], reason: str = "", by: str = "") -> Decision:
        if not isinstance(args, Mapping):
            raise TypeError(f"edited arguments should be a mapping, got {type(args).__name__}")
        return cls("edited", by, reason, dict(args))

    @property
    def runs(self) -> bool:
        return self.decision != "denied"

    def denial(self) -> str:
        """The denied call's observation text (after ``ERROR: ``)."""
        text = f"denied by {who(self.by)}"
        return f"{text}: {self.reason}" if self.reason else text


Approver = Callable[[ApprovalRequest], "Decision | bool"]


def who(by: str) -> str:
    """``by`` as a sentence says it: ``the user`` for the debugger's user."""
    return "the user" if by in ("", "user") else by


def always(by: str = "--approve always") -> Approver:
    """Approve every call (for runs whose dangerous tools are mock ones, or trusted)."""
    return lambda request: Decision.approve(by=by)


def never(by: str = "--approve never", reason: str = "no call to a dangerous tool may run") -> Approver:
    """Deny every call: the policy reads each denial and may find another way."""
    return lambda request: Decision.deny(reason, by=by)


def approver_from(value: Any, by: str = "") -> Approver | None:
    """``"always"``, ``"never"``, a callable, or None (nobody to ask)."""
    if value is None or callable(value):
        approver: Approver | None = value
        return approver
    if value == "always":
        return always(by or 'approve="always"')
    if value == "never":
        return never(by or 'approve="never"')
    raise ValueError(f'approve should be "always", "never", a function of an ApprovalRequest, or None; got {value!r:.80}')


def decide(approver: Approver | None, request: ApprovalRequest) -> Decision:
    """Ask ``approver``; never raises. Nobody to ask, an approver that raises or answers
    something that is not a decision: the call is denied, saying why (the safe side)."""
    if approver is None:
        return Decision.deny("nobody was asked to approve it (no approver)", by="agentdbg")
    name = getattr(approver, "__name__", type(approver).__name__)
    try:
        answer = approver(request)
    except Exception as exc:  # an approver's bug must not run the call, nor crash the run
        detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return Decision.deny(f"the approver raised {detail}", by=f"approver {name}")
    if answer is True:
        return Decision.approve(by=f"approver {name}")
    if answer is False:
        return Decision.deny(by=f"approver {name}")
    if isinstance(answer, Decision):
        return answer if answer.by else Decision(answer.decision, f"approver {name}", answer.reason, answer.args)
    return Decision.deny(f"the approver answered {answer!r:.60}, not a Decision", by=f"approver {name}")


def _json_kind(value: Any) -> str:
    return {list: "an array", str: "a string", bool: "true or false", type(None): "null",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)
