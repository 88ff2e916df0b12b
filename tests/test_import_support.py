"""Helpers for the importer tests (no tests here): fixtures, converted runs, summaries."""

from __future__ import annotations

from pathlib import Path

from agentdbg import importers
from agentdbg.engine import events as ev
from agentdbg.state import Run, group_run

IMPORT_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "import"


def fixture(fmt: str, name: str) -> Path:
    return IMPORT_FIXTURES / fmt / name


def all_fixtures() -> list[Path]:
    return sorted(p for p in IMPORT_FIXTURES.glob("*/*") if p.is_file())


def convert(path: Path, format: str | None = None) -> tuple[str, importers.ImportResult, list[Run]]:
    """(format detected or forced, the import result, each run grouped into steps)."""
    name, result = importers.convert_file(path, format)
    return name, result, [group_run(events) for events in result.runs]


def tools_called(run: Run) -> list[str | None]:
    return [record.tool for record in run.records]


def markers(run: Run) -> list[str]:
    return [record.marker() for record in run.records]


def counters(run: Run, name: str) -> list[int]:
    """One guard counter's value at every step (steps, repeats, errors, tokens)."""
    return [getattr(record.guards, name)[0] for record in run.records]


def event_types(events: list[ev.Event]) -> list[str]:
    return [event.type for event in events]


def problems_text(result: importers.ImportResult) -> str:
    return "\n".join(str(p) for p in result.problems)
