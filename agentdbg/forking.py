"""Forks of the runs in an opened document: which plan re-runs a run, and the fork itself.

A run can be forked only when its own policy and tools can run again here: a plan opened
live, or a trace recorded from a plan (its ``run_start.source`` names the plan, looked for
as written and beside the trace; ``plan`` names it instead). A run imported from another
stack, or recorded from an arbitrary loop (``agentdbg.record``), cannot: ``NotRerunnable``
says what it was recorded from. So does a plan whose policy runs code or calls a model
when ``--allow-code`` / ``--allow-network`` was not given. Loading a plan never runs it.

A trace never chooses the code a fork runs: a plan that runs Python code is run only when
the user names it (the plan opened, ``--plan``) or when it is the very plan the run
recorded (its bytes hash to the run's ``source_sha256``). Anything else is refused before
the plan's code is imported. Every fork starts from the operation journal of the whole
file (``fork_journal``), so no keyed call that any run of it made runs again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from agentdbg.engine import events as ev
from agentdbg.engine.approval import Approver
from agentdbg.engine.journal import OperationJournal
from agentdbg.fork import ForkError, ForkRun, StepEdit
from agentdbg.model.runs import Document, LiveRun
from agentdbg.plans import (
    Plan,
    PlanError,
    load_plan,
    looks_like_plan,
    parse_plan_bytes,
    plan_sha256,
    read_plan_bytes,
)
from agentdbg.text import one_line

__all__ = ["ForkError", "NotRerunnable", "fork_journal", "fork_live_run", "plan_for_run", "start_fork"]


class NotRerunnable(ForkError):
    """The run's policy cannot be re-run here."""


def _cannot(what: str, why: str = "") -> NotRerunnable:
    return NotRerunnable(f"this run was recorded from {what}; its policy cannot be re-run here{why}")


def plan_for_run(document: Document, index: int, *, allow_code: bool = False, allow_network: bool = False,
                 plan: str | Path | None = None) -> Plan:
    """The plan that re-runs run ``index`` of ``document``; NotRerunnable says why none can."""
    run = document.runs[index]
    if plan is not None:
        return _load(Path(plan), allow_code, allow_network)
    own = getattr(document, "plan", None)
    if own is not None:
        return own
    if document.kind not in ("trace", "plan"):
        return _raise(_cannot(f"a {document.kind} file ({one_line(document.path, 200)}), another agent stack"))
    source = run.info.source
    policy = run.info.policy
    if not source:
        what = "your own agent loop (agentdbg.record)" if policy.startswith("your loop") \
            else f"a policy agentdbg does not know ({one_line(policy, 80) or 'none named'})"
        return _raise(_cannot(what))
    found = _find_plan(source, document.path)
    if found is None:
        if source.lower().endswith(".toml"):
            return _raise(_cannot(f"the plan {one_line(source, 200)}, which is not found here",
                                  " (agentdbg fork --plan PLAN names it)"))
        return _raise(_cannot(f"{one_line(source, 200)} ({one_line(policy, 80)})"))
    return _recorded_plan(found, run.info.source_sha256, allow_code, allow_network)


def _raise(error: Exception) -> Plan:
    raise error


def _find_plan(source: str, document_path: str) -> Path | None:
    """The plan ``source`` names: as written (from the current directory), else beside the trace."""
    candidates = [Path(source)]
    if not Path(source).is_absolute():
        candidates.append(Path(document_path).parent / source)
    for candidate in candidates:
        if candidate.is_file() and looks_like_plan(candidate):
            return candidate
    return None


def _recorded_plan(path: Path, recorded: str, allow_code: bool, allow_network: bool) -> Plan:
    """The plan a trace names, read once: its code is allowed only when its bytes are the
    ones the run recorded; otherwise a plan that runs code is refused before it is built."""
    try:
        data = read_plan_bytes(path)
    except PlanError as exc:
        raise ForkError(f"the plan that re-runs this run cannot be loaded: {exc}") from None
    same = bool(recorded) and plan_sha256(data) == recorded
    try:
        return parse_plan_bytes(data, path, allow_code=allow_code and same, allow_network=allow_network)
    except PlanError as exc:
        if allow_code and not same and "--allow-code" in str(exc):
            name = one_line(str(path), 200)
            why = (f"the plan {name} is not the one the run was recorded with (its SHA-256 differs from the "
                   "trace's)" if recorded else
                   f"the trace does not record which plan the run was made with (no plan hash), so {name} "
                   "may not be it")
            raise ForkError(f"{why}; a plan that runs Python code is re-run only as recorded or when named: "
                            "--plan PLAN") from None
        raise _refused(exc, path) from None


def _load(path: Path, allow_code: bool, allow_network: bool) -> Plan:
    try:
        return load_plan(path, allow_code=allow_code, allow_network=allow_network)
    except PlanError as exc:
        raise _refused(exc, path) from None


def _refused(exc: PlanError, path: Path) -> ForkError:
    text = str(exc)
    if "--allow-network" in text:
        return _cannot(f"the plan {one_line(str(path), 200)}, whose policy calls a model", " without --allow-network")
    if "--allow-code" in text:
        return _cannot(f"the plan {one_line(str(path), 200)}, which runs Python code", " without --allow-code")
    return ForkError(f"the plan that re-runs this run cannot be loaded: {text}")


def fork_journal(plan: Plan, document: Document, forks: Sequence = ()) -> OperationJournal:
    """The operations a fork of any run of ``document`` must not run again: those of every
    run of the file (read from the trace file itself, damaged lines included), then those
    of ``forks`` (runs made since, listed after the file's). Empty for a plan without keyed
    tools: nothing would look in it."""
    journal = OperationJournal()
    if not plan.keyed_tools:
        return journal
    if document.kind == "trace" and Path(document.path).is_file():
        from agentdbg.trace.journal import read_journal

        try:
            journal = read_journal(document.path)
        except OSError as exc:
            raise ForkError(f"cannot read the operation journal of {one_line(document.path, 200)}: "
                            f"{exc.strerror or exc}") from None
    else:
        forks = [*document.runs, *forks]
    for run in forks:
        for event in run.events():
            journal.note(event)
    return journal


def start_fork(plan: Plan, parent_events: Sequence[ev.Event], step: int, edit: StepEdit, *, parent: int = 1,
               journal: OperationJournal | None = None, approver: Approver | None = None,
               on_event: Callable[[ev.Event], None] | None = None,
               cancelled: Callable[[], bool] | None = None) -> ForkRun:
    """The fork, replayed up to ``step`` (``ForkError`` when it cannot be)."""
    return ForkRun(plan.build_agent(), plan.task, list(parent_events), step, edit, parent=parent,
                   on_event=on_event, journal=journal, approver=approver, cancelled=cancelled)


def fork_live_run(plan: Plan, document: Document, runs: Sequence, index: int, step: int, edit: StepEdit,
                  approver: Approver | None = None, cancelled: Callable[[], bool] | None = None) -> LiveRun:
    """A fork of ``runs[index]`` as a live run, to be listed after ``runs`` (the runs of
    ``document``, then the forks made since): replayed up to ``step`` now (``ForkError``
    when it cannot be), then stepped on demand like a plan opened in the debugger. The
    operation keys of every run of the file and of those forks count as done."""
    parent_events = runs[index].events()
    journal = fork_journal(plan, document, runs[len(document.runs):])

    def factory(on_event: Callable[[ev.Event], None], approve: Approver) -> ForkRun:
        return start_fork(plan, parent_events, step, edit, parent=index + 1, journal=journal,
                          approver=approve, on_event=on_event, cancelled=cancelled)

    title = f"{getattr(runs[index], 'title', '') or plan.name} (fork)"
    return LiveRun(factory, title=title, approver=approver)
