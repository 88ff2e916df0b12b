"""Open anything agentdbg can show: a plan, an agentdbg trace, or a run saved elsewhere.

Detection is by content, never by running anything: a TOML file with a [policy] table is a
plan (run live by the engine), a file whose first line is an agentdbg trace header is a
trace (read by offset), anything else is offered to the importers. Only regular files are
read (``agentdbg.files``): a named pipe or a device is refused before anything reads it,
and so are an empty file and a binary one, in one line each.
"""

from __future__ import annotations

from pathlib import Path

from agentdbg.engine.approval import APPROVE_CHOICES, Approver, always, never
from agentdbg.errors import OpenError
from agentdbg.files import read_head, unreadable_text
from agentdbg.model.runs import Document, EventRun, LiveRun
from agentdbg.plans import Plan, load_plan, looks_like_plan

__all__ = ["OpenError", "open_document", "plan_document", "run_plan_to_end"]
HEAD_BYTES = 64 * 1024  # what telling a trace or a binary file apart looks at


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


def _binary_format_reads(head: bytes, path: Path, format: str | None) -> bool:
    """True when an importer of a binary format (a zip archive) reads this file."""
    if format in ("plan", "trace"):
        return False
    try:
        from agentdbg import importers
    except ModuleNotFoundError:  # no importers in this installation
        return False
    return importers.binary_format(head, str(path), format) is not None
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
                  allow_network: bool = False, live: bool = True, follow: bool | None = None,
                  approve: str | None = None) -> Document:
    """Open ``path``; ``format`` forces an importer (or "plan" / "trace"). ``live``: a plan
    runs step by step; ``follow`` (default: ``live``): a trace grows as it is written.
    ``approve`` (``always`` or ``never``) decides a plan's dangerous calls in advance: a
    plan with such tools is not run to the end without it."""
    path = Path(path)
    head = read_head(path, HEAD_BYTES, what="a trace, a plan or a saved run")
    if not head:
        raise OpenError(f"{path}: is empty")
    from agentdbg.trace import reader

    is_trace = reader.looks_like_trace(head)
    unreadable = None if is_trace else unreadable_text(head)
    if unreadable and not _binary_format_reads(head, path, format):  # said once, not by every format
        raise OpenError(f"{path}: is {unreadable}")
    if format == "plan" or (format is None and looks_like_plan(path)):
        plan = load_plan(path, allow_code=allow_code, allow_network=allow_network)
        approver = command_line_approver(approve)
        if live:
            return plan_document(plan, str(path), approver)
        check_approval(plan, approve, path)
        return run_plan_to_end(plan, str(path), approver)
    if format == "trace" or (format is None and is_trace):
        return reader.open_trace(path, follow=live if follow is None else follow)
    from agentdbg import importers

    return importers.open_import(path, format=format)
