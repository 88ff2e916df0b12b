"""``agentdbg convert FILE -o run.jsonl``: a run saved by another agent stack, as an agentdbg trace
(a plan is run headless, as ``agentdbg record`` does);
``--to otel-genai|openai-chat``: any runs agentdbg reads (a trace too) for other tools
(``agentdbg.exporters``)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from agentdbg.cli import render
from agentdbg.engine import events as ev
from agentdbg.files import OpenError, read_head
from agentdbg.plans import looks_like_plan
from agentdbg.text import one_line
from agentdbg.trace.reader import SNIFF_BYTES, looks_like_trace


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from agentdbg.exporters import CHOICES, TRACE_TARGET
    from agentdbg.importers import BY_NAME

    parser.add_argument("file", help="the saved run (its format is detected from its content)")
    parser.add_argument("-o", "--output", required=True, metavar="OUT",
                        help="the file to write: an agentdbg trace (JSON Lines) unless --to says otherwise")
    parser.add_argument("--to", metavar="TARGET", default=TRACE_TARGET,
                        help=f"what to write: {', '.join(CHOICES)} (default {TRACE_TARGET}); "
                             "the other targets also read an agentdbg trace")
    parser.add_argument("--format", metavar="NAME",
                        help=f"read FILE as this format instead of detecting it: {', '.join(BY_NAME)}")
    parser.add_argument("--force", action="store_true", help="replace OUT if it exists")
    plans = parser.add_argument_group("a plan (run headless, as agentdbg record does)")
    plans.add_argument("--allow-code", action="store_true", help="allow a plan whose policy runs Python code")
    plans.add_argument("--allow-network", action="store_true", help="allow a plan whose policy calls a model")
    plans.add_argument("--approve", choices=("always", "never"), help="decide a plan's dangerous calls in advance")


def run(args: argparse.Namespace) -> int:
    from agentdbg import exporters, importers
    from agentdbg.trace.writer import write_trace

    source, output = Path(args.file), Path(args.output)
    exporting = args.to != exporters.TRACE_TARGET
    if exporting and args.to not in exporters.TARGETS:
        return render.fail("convert", f"--to {args.to}: unknown target; choose one of: {', '.join(exporters.CHOICES)}")
    if not exporting and args.format in (None, "plan") and looks_like_plan(source):
        return _record_plan(source, output, args)
    problem = _refusal(source, output, args.force, trace_ok=exporting)
    if problem:
        return render.fail("convert", problem)
    if exporting:
        return _export(source, output, args)
    started = time.perf_counter()
    try:
        streamed = importers.stream_file(source, args.format)
        if streamed is not None:
            return _convert_streamed(streamed, source, output, started)
        name, result = importers.convert_file(source, args.format)
    except ValueError as exc:  # NotImportable, UnknownFormat
        return render.fail("convert", str(exc))
    render.print_problems(result.problems, str(source), "convert")
    if not result.runs:
        return render.fail("convert", f"{source}: no runs found in it as {name}")
    try:
        written = write_trace(output, result.runs, header={"source": str(source), "source_format": name})
    except (OSError, ValueError) as exc:
        return render.fail("convert", f"cannot write {output}: {exc}")
    seconds = time.perf_counter() - started
    # The raw events written: what ``stats`` reports as raw_records, summed over the runs.
    raw = sum(isinstance(event, ev.RawRecord) for events in result.runs for event in events)
    print(f"{one_line(str(source))} ({name}) -> {one_line(str(output))}: {render.plural(written.runs, 'run')}, "
          f"{render.plural(written.steps, 'step')}; {render.plural(raw, 'record')} kept as raw events; "
          f"{render.plural(len(result.problems), 'warning')} ({seconds:.2f} s)")
    return 0


def _convert_streamed(streamed, source: Path, output: Path, started: float) -> int:
    """A format that streams: each run is written as it is read, so a file of any size
    converts in the memory one run takes; problems are printed at the end. TRACE is
    renamed into place only when every run is written."""
    from agentdbg import importers
    from agentdbg.trace.writer import write_trace

    def every_run():
        yield from streamed.runs()
        if not streamed.run_count:
            raise ValueError(f"{source}: no runs found in it as {streamed.name}")

    try:
        written = write_trace(output, every_run(), header={"source": str(source), "source_format": streamed.name})
    except OSError as exc:
        return render.fail("convert", f"cannot write {output}: {exc}")
    except importers.NotImportable as exc:  # nothing was written
        return render.fail("convert", str(exc))
    except ValueError as exc:  # no runs: nothing was written
        render.print_problems(streamed.problems, str(source), "convert")
        return render.fail("convert", str(exc))
    render.print_problems(streamed.problems, str(source), "convert")
    seconds = time.perf_counter() - started
    print(f"{one_line(str(source))} ({streamed.name}) -> {one_line(str(output))}: {render.plural(written.runs, 'run')}, "
          f"{render.plural(written.steps, 'step')}; {render.plural(streamed.raw_events, 'record')} kept as raw events; "
          f"{render.plural(len(streamed.problems), 'warning')} ({seconds:.2f} s)")
    return 0


def _export(source: Path, output: Path, args: argparse.Namespace) -> int:
    from agentdbg import exporters

    started = time.perf_counter()
    try:
        summary = exporters.export_file(source, output, args.to, format=args.format)
    except ValueError as exc:  # NotImportable, UnknownFormat, OpenError
        return render.fail("convert", str(exc))
    except OSError as exc:
        return render.fail("convert", f"cannot write {output}: {exc.strerror or exc}")
    render.print_problems(summary.problems, str(source), "convert")
    seconds = time.perf_counter() - started
    raw = f"; {render.plural(summary.raw_count, 'record')} kept raw on import" if summary.raw_count else ""
    print(f"{one_line(str(source))} ({summary.source_format}) -> {one_line(str(output))} ({args.to}): "
          f"{render.plural(summary.runs, 'run')}, {render.plural(summary.steps, 'step')}, "
          f"{render.plural(summary.records, summary.unit)}{raw}; "
          f"{render.plural(len(summary.problems), 'warning')} ({seconds:.2f} s)")
    return 0


def _record_plan(source: Path, output: Path, args: argparse.Namespace) -> int:
    """A plan has no run to convert until it runs: run it headless, as ``agentdbg record``
    does (its refusals too: code, network and dangerous tools need saying so)."""
    from agentdbg.cli import record

    argv = [str(source), "-o", str(output)]
    argv += [flag for flag, on in (("--allow-code", args.allow_code), ("--allow-network", args.allow_network),
                                   ("--force", args.force)) if on]
    if args.approve:
        argv += ["--approve", args.approve]
    parser = argparse.ArgumentParser(prog="agentdbg convert")
    record.add_arguments(parser)
    return record.run(parser.parse_args(argv))


def _refusal(source: Path, output: Path, force: bool, trace_ok: bool = False) -> str:
    try:  # a named pipe or a device is refused here, before anything waits on it
        head = read_head(source, SNIFF_BYTES, what="a saved run")
    except OpenError as exc:
        return str(exc)
    if output.exists() and output.resolve() == source.resolve():
        return f"{output}: the output would overwrite the input"
    if output.is_dir():
        return f"{output}: is a directory"
    if output.exists() and not force:
        return f"{output}: exists; use --force to replace it"
    if looks_like_trace(head) and not trace_ok:
        return f"{source}: is already an agentdbg trace"
    return ""
