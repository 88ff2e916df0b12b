"""Open anything agentdbg can show: a plan, an agentdbg trace, or a run saved elsewhere.

Detection is by content, never by running anything: a TOML file with a [policy] table is a
plan (run live by the engine), a file whose first line is an agentdbg trace header is a
trace (read by offset), anything else is offered to the importers.
"""

from __future__ import annotations

from pathlib import Path

from agentdbg.engine.approval import APPROVE_CHOICES, Approver, always, never
from agentdbg.plans import Plan, load_plan, looks_like_plan
from agentdbg.runs import Document, EventRun, LiveRun


class OpenError(ValueError):
    """The input cannot be opened at all (says which file and why)."""


def plan_document(plan: Plan, path: str = "", approver: Approver | None = None) -> Document:
    """The plan as a live run, stepped on demand; ``approver`` decides on its dangerous
    calls (the debugger's dialog when None)."""
    run = LiveRun(lambda on_event, approve: plan.start(on_event, approver=approve), title=plan.name,
                  approver=approver)
    return Document(path or str(plan.path or plan.name), "plan", [run])


def run_plan_to_end(plan: Plan, path: str = "", approver: Approver | None = None) -> Document:
    """A plan run to the end up front (for headless commands)."""
    trace = plan.run(approver=approver)
    return Document(path or str(plan.path or plan.name), "plan", [EventRun(trace.events, plan.name)])


def command_line_approver(approve: str | None) -> Approver | None:
    """``--approve always|never`` as an approver (None: nobody decided in advance)."""
    if approve is None:
        return None
    if approve not in APPROVE_CHOICES:
        raise ValueError(f"--approve must be always or never, got {approve!r}")
    return always() if approve == "always" else never()


def check_approval(plan: Plan, approve: str | None, path: str | Path = "") -> None:
    """A plan with dangerous tools runs without a screen only when ``--approve`` says in
    advance what happens to their calls: raise OpenError saying why, otherwise."""
    if not plan.dangerous_tools or approve is not None:
        return
    names = ", ".join(plan.dangerous_tools)
    which = f"tool {names} is" if len(plan.dangerous_tools) == 1 else f"tools {names} are"
    raise OpenError(f"{path or plan.path or plan.name}: the plan's {which} dangerous: each call waits for a "
                    "decision, and nobody is here to make it; pass --approve always (run every call) or "
                    "--approve never (deny every call: the policy reads the denial), or open the plan in the "
                    "debugger to decide each call")


def open_document(path: str | Path, *, format: str | None = None, allow_code: bool = False,
                  allow_network: bool = False, live: bool = True, approve: str | None = None) -> Document:
    """Open ``path``; ``format`` forces an importer (or "plan" / "trace"). ``approve``
    (``always`` or ``never``) decides a plan's dangerous calls in advance: a plan with
    such tools is not run to the end without it."""
    path = Path(path)
    if not path.exists():
        raise OpenError(f"{path}: no such file")
    if path.is_dir():
        raise OpenError(f"{path}: is a directory; give a trace, a plan or a saved run")
    if format == "plan" or (format is None and looks_like_plan(path)):
        plan = load_plan(path, allow_code=allow_code, allow_network=allow_network)
        approver = command_line_approver(approve)
        if live:
            return plan_document(plan, str(path), approver)
        check_approval(plan, approve, path)
        return run_plan_to_end(plan, str(path), approver)
    from agentdbg.trace import reader

    if format == "trace" or (format is None and reader.sniff(path)):
        return reader.open_trace(path)
    from agentdbg import importers

    return importers.open_import(path, format=format)
