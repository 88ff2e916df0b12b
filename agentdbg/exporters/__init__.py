"""Runs written out for other tools: OpenTelemetry backends, tools that take OpenAI chat
messages. The input is anything agentdbg reads as runs: an agentdbg trace (read run by
run, step by step, as it is written out) or a file an importer reads.

One module per target, each with ``NAME``, ``DESCRIPTION`` and ``export(runs, out,
**options) -> {"runs", "steps", "records", "unit"}`` writing ``runs`` (``RunStream``
objects) to an ``AtomicOutput`` as they are read. See docs/export.md.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from agentdbg.exporters import openai_chat, otel_genai
from agentdbg.exporters.runs import RunStream
from agentdbg.model.runs import Problem
from agentdbg.outputs import AtomicOutput

TARGETS: dict[str, ModuleType] = {module.NAME: module for module in (otel_genai, openai_chat)}
TRACE_TARGET = "agentdbg-trace"  # convert's own output, written by agentdbg.trace.writer
CHOICES = (TRACE_TARGET, *TARGETS)

__all__ = ["TARGETS", "TRACE_TARGET", "CHOICES", "ExportSummary", "UnknownTarget", "export_file"]


class UnknownTarget(ValueError):
    """``--to`` named a target that does not exist (the message lists the valid ones)."""


@dataclass
class ExportSummary:
    source_format: str
    runs: int = 0
    steps: int = 0
    records: int = 0  # spans, or lines
    unit: str = ""
    raw_count: int = 0  # records the importer kept raw (0 for a trace)
    problems: list[Problem] = field(default_factory=list)
    bytes_written: int = 0


def get_target(name: str) -> ModuleType:
    try:
        return TARGETS[name]
    except KeyError:
        raise UnknownTarget(f"unknown target {name!r}; choose one of: {', '.join(CHOICES)}") from None


def export_file(source: str | Path, output: str | Path, target: str, *, format: str | None = None,
                start_ns: int | None = None) -> ExportSummary:
    """Read the runs in ``source`` and write them to ``output`` as ``target``. Raises
    ValueError (NotImportable, OpenError, UnknownTarget) for input that cannot be read and
    OSError when the output cannot be written; ``output`` is then left as it was."""
    module = get_target(target)
    source = Path(source)
    if start_ns is None:  # events hold no clock time: the runs are placed when the file was written
        start_ns = int(os.stat(source).st_mtime) * 1_000_000_000
    summary, runs, close = _open(source, format)
    try:
        with AtomicOutput(output) as out:
            written = module.export(runs, out, start_ns=start_ns, source_format=summary.source_format)
            summary.bytes_written = out.bytes_written
    finally:
        close()
    summary.runs, summary.steps = written["runs"], written["steps"]
    summary.records, summary.unit = written["records"], written["unit"]
    return summary


def _open(source: Path, format: str | None) -> tuple[ExportSummary, Iterator[RunStream], object]:
    """(summary so far, the runs as they are read, what closes the input)."""
    from agentdbg import importers
    from agentdbg.trace import reader

    if format == "trace" or (format is None and reader.sniff(source)):
        document = reader.open_trace(source, background=False)
        summary = ExportSummary("trace", problems=document.problems)

        def trace_runs() -> Iterator[RunStream]:
            for number, run in enumerate(document.runs, 1):
                yield RunStream(run.iter_events(), number)
            if not document.runs:  # (raised inside the export: its output is discarded)
                raise importers.NotImportable(f"{source}: no runs in it")

        return summary, trace_runs(), document.close
    name, result = importers.convert_file(source, format)
    if not result.runs:
        raise importers.NotImportable(f"{source}: no runs found in it as {name}")
    summary = ExportSummary(name, raw_count=result.raw_count, problems=result.problems)
    return summary, (RunStream(events, number) for number, events in enumerate(result.runs, 1)), lambda: None
