"""Comparing two runs for the app, in a worker: opening the other file when one was named,
and turning every failure into a message (never a traceback)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentdbg import documents
from agentdbg.diff import Cancelled, RunDiff, compare, split_run
from agentdbg.model.runs import Document
from agentdbg.text import one_line
from agentdbg.tui.opening import OPEN_ERRORS


@dataclass
class Compared:
    result: RunDiff | None  # None: cancelled, or failed (``error`` says why)
    label: str  # how the other run is named on screen
    owned: Document | None = None  # the other file, opened here: closed with the split view
    error: str = ""


def _open_other(spec: str) -> tuple[Document, int]:
    path, number = split_run(spec)
    # A plan is run to its end without a screen: its steps are compared, never stepped here.
    document = documents.open_document(Path(path).expanduser(), live=False, follow=False)
    waiter = getattr(document, "wait", None)
    number = number or 1
    while len(document.runs) < number and callable(waiter) and not getattr(document, "complete", True):
        waiter(0.05)
    if not document.runs:
        document.close()
        raise ValueError(f"{path}: no runs in it")
    if number > len(document.runs):
        count = len(document.runs)
        document.close()
        raise ValueError(f"{spec}: run {number}: {path} has {count} run{'s' if count != 1 else ''}")
    return document, number - 1


def compare_for_app(run: Any, other: Document | str, index: int, owned: bool,
                    progress: Callable[[int], None], cancel) -> Compared:
    """Compare ``run`` with run ``index`` of ``other`` (or of the file ``other`` names,
    ``FILE:N`` picking its run). ``owned``: the other document is closed with the view.
    ``progress`` is told the step reached now and then (a long run takes a while)."""
    opened: Document | None = None
    try:
        if isinstance(other, str):
            opened, index = _open_other(other)
            document = opened
        else:
            document = other
            if owned:
                opened = other
        other_run = document.runs[index]
        label = f"run {index + 1} · {getattr(other_run, 'title', '') or other_run.info.name} · {document.path}"
        result = compare(run, other_run, cancelled=cancel.is_set, progress=lambda side, step: progress(step))
    except Cancelled:
        if opened is not None:
            opened.close()
        return Compared(None, "")
    except (*OPEN_ERRORS, IndexError, RecursionError) as exc:
        if opened is not None:
            opened.close()
        return Compared(None, "", error=one_line(str(exc) or type(exc).__name__, 2000))
    except ModuleNotFoundError as exc:  # no importers in this installation
        return Compared(None, "", error=f"{other}: not an agentdbg trace or plan ({exc.name})")
    return Compared(result, one_line(label, 200), opened)
