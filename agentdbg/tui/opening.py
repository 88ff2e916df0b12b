"""Opening and writing files for the app: every failure becomes a message, never a
traceback (these run in worker threads; the app shows what they return)."""

from __future__ import annotations

import re
from dataclasses import replace
from importlib import resources
from pathlib import Path

from agentdbg import documents
from agentdbg.engine import events as ev
from agentdbg.model.runs import Document
from agentdbg.plans import PlanError, parse_plan
from agentdbg.trace.writer import write_trace

DEMO = "library_hallucinating.toml"
OPEN_ERRORS = (documents.OpenError, PlanError, ValueError, OSError, UnicodeDecodeError)


def open_demo() -> Document:
    """The bundled demo: the library question with the hallucinating policy."""
    text = resources.files("agentdbg").joinpath("demo", DEMO).read_text(encoding="utf-8")
    plan = parse_plan(text, DEMO)
    return documents.plan_document(plan, f"demo: {DEMO}")


def open_for_app(path: str, format: str | None = None, allow_code: bool = False,
                 allow_network: bool = False, approve: str | None = None) -> tuple[Document | None, str, str]:
    """(document, path, "") or (None, path, why it cannot be opened). ``approve`` decides a
    live plan's dangerous calls in advance; without it the debugger asks for each."""
    try:
        document = documents.open_document(Path(path).expanduser(), format=format, allow_code=allow_code,
                                           allow_network=allow_network, approve=approve)
        return document, path, ""
    except OPEN_ERRORS as exc:
        return None, path, str(exc) or type(exc).__name__
    except RecursionError:
        return None, path, f"{path}: nested too deeply to read"


def default_trace_name(document: Document | None, run) -> str:
    base = getattr(run, "title", "") or run.info.name or "run"
    if document is not None and document.kind != "trace":
        stem = Path(document.path.removeprefix("demo: ")).stem
        base = stem or base
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", base).strip("-.") or "run"
    return f"{safe}.trace.jsonl"


def write_run(run, path: str, parent=None) -> tuple[str, int]:
    """Write ``run`` (as far as it has gone, for a live run) to ``path`` as a trace; a fork
    is written after its ``parent``, so that the file says what it was forked from."""
    target = Path(path).expanduser().absolute()
    runs = [run.events()]
    if parent is not None:
        runs = [parent.events(), with_parent_number(runs[0], 1)]
    summary = write_trace(target, runs)
    return str(target), summary.events


def with_parent_number(events: list, number: int) -> list:
    """A fork's events with its ``run_start`` naming its parent as run ``number``."""
    return [replace(event, fork={**event.fork, "parent": number})
            if isinstance(event, ev.RunStart) and event.fork else event for event in events]
