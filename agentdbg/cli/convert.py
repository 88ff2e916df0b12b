"""``agentdbg convert FILE -o run.jsonl``: a run saved by another agent stack, as an agentdbg trace."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from agentdbg.trace import format as fmt


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from agentdbg.importers import BY_NAME

    parser.add_argument("file", help="the saved run (its format is detected from its content)")
    parser.add_argument("-o", "--output", required=True, metavar="TRACE",
                        help="the agentdbg trace to write (JSON Lines)")
    parser.add_argument("--format", choices=None, metavar="NAME",
                        help=f"read FILE as this format instead of detecting it: {', '.join(BY_NAME)}")
    parser.add_argument("--force", action="store_true", help="replace TRACE if it exists")


def run(args: argparse.Namespace) -> int:
    from agentdbg import importers
    from agentdbg.trace.writer import write_trace

    source, output = Path(args.file), Path(args.output)
    problem = _refusal(source, output, args.force)
    if problem:
        print(f"agentdbg convert: {problem}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    try:
        name, result = importers.convert_file(source, args.format)
    except ValueError as exc:  # NotImportable, UnknownFormat
        print(f"agentdbg convert: {exc}", file=sys.stderr)
        return 2
    for found in result.problems:
        print(f"warning: {found}", file=sys.stderr)
    if not result.runs:
        print(f"agentdbg convert: {source}: no runs found in it as {name}", file=sys.stderr)
        return 2
    try:
        written = write_trace(output, result.runs, header={"source": str(source), "source_format": name})
    except (OSError, ValueError) as exc:
        print(f"agentdbg convert: cannot write {output}: {exc}", file=sys.stderr)
        return 2
    seconds = time.perf_counter() - started
    runs = _plural(written.runs, "run")
    steps = _plural(written.steps, "step")
    raw = _plural(result.raw_count, "record")
    print(f"{source} ({name}) -> {output}: {runs}, {steps}; {raw} kept as raw events; "
          f"{_plural(len(result.problems), 'warning')} ({seconds:.2f} s)")
    return 0


def _refusal(source: Path, output: Path, force: bool) -> str:
    if not source.exists():
        return f"{source}: no such file"
    if source.is_dir():
        return f"{source}: is a directory"
    if output.exists() and output.resolve() == source.resolve():
        return f"{output}: the output would overwrite the input"
    if output.is_dir():
        return f"{output}: is a directory"
    if output.exists() and not force:
        return f"{output}: exists; use --force to replace it"
    try:
        with open(source, "rb") as handle:
            head = handle.read(len(fmt.HEADER_PREFIX))
    except OSError as exc:
        return f"{source}: cannot read: {exc.strerror or exc}"
    if head == fmt.HEADER_PREFIX:
        return f"{source}: is already an agentdbg trace"
    return ""


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"
