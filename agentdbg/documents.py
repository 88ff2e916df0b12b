"""Open anything agentdbg can show: a plan, an agentdbg trace, or a run saved elsewhere.

Detection is by content, never by running anything: a TOML file with a [policy] table is a
plan (run live by the engine), a file whose first line is an agentdbg trace header is a
trace (read by offset), anything else is offered to the importers.
"""

from __future__ import annotations

from pathlib import Path

from agentdbg.plans import Plan, load_plan, looks_like_plan
from agentdbg.runs import Document, EventRun, LiveRun


class OpenError(ValueError):
    """The input cannot be opened at all (says which file and why)."""


def plan_document(plan: Plan, path: str = "") -> Document:
    run = LiveRun(lambda on_event: plan.start(on_event), title=plan.name)
    return Document(path or str(plan.path or plan.name), "plan", [run])


def run_plan_to_end(plan: Plan, path: str = "") -> Document:
    """A plan run to the end up front (for headless commands)."""
    trace = plan.run()
    return Document(path or str(plan.path or plan.name), "plan", [EventRun(trace.events, plan.name)])


def open_document(path: str | Path, *, format: str | None = None, allow_code: bool = False,
                  allow_network: bool = False, live: bool = True) -> Document:
    """Open ``path``; ``format`` forces an importer (or "plan" / "trace")."""
    path = Path(path)
    if not path.exists():
        raise OpenError(f"{path}: no such file")
    if path.is_dir():
        raise OpenError(f"{path}: is a directory; give a trace, a plan or a saved run")
    if format == "plan" or (format is None and looks_like_plan(path)):
        plan = load_plan(path, allow_code=allow_code, allow_network=allow_network)
        return plan_document(plan, str(path)) if live else run_plan_to_end(plan, str(path))
    from agentdbg.trace import reader

    if format == "trace" or (format is None and reader.sniff(path)):
        return reader.open_trace(path)
    from agentdbg import importers

    return importers.open_import(path, format=format)
