"""``agentdbg export --table FILE... -o steps.parquet``: every step of every run as a table
(one row per step, ``agentdbg.exporters.table``) for DuckDB, Spark or pandas.

Files and folders are read as ``check`` reads them (``agentdbg.cli.walk``), in path
order, one at a time, each step written as it is read: the table is never held whole.
The output is written beside its name and renamed into place at the end, and only when a
file was read: an export that reads nothing (or is interrupted) leaves OUT as it was.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from agentdbg.cli import render, walk
from agentdbg.cli.many import short_reason
from agentdbg.cli.terminal import terminal_stream
from agentdbg.text import one_line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from agentdbg.exporters.table import MAX_TEXT

    render.add_input_arguments(parser, several=True, folders=True)
    parser.add_argument("--table", action="store_true",
                        help="one row per step: file, run, step, tool, args, observation, error, guard counters, "
                             "tokens, outcome, verdict (docs/export.md lists the columns)")
    parser.add_argument("-o", "--output", required=True, metavar="OUT",
                        help="the table: .parquet (needs pyarrow: pip install 'agentdbg[table]'), .csv or .jsonl")
    parser.add_argument("--table-format", choices=("parquet", "csv", "jsonl"),
                        help="the table's format, when OUT's extension does not say it")
    parser.add_argument("--max-text", type=int, default=MAX_TEXT, metavar="N",
                        help=f"cut texts (thoughts, observations, errors) to N characters (default {MAX_TEXT:,}; 0: whole)")
    parser.add_argument("--force", action="store_true", help="replace OUT if it exists")


def run(args: argparse.Namespace) -> int:
    from agentdbg.exporters import table
    from agentdbg.outputs import AtomicOutput

    if not args.table:
        return render.fail("export", "say what to export: --table (one row per step); "
                                     "for traces, OpenTelemetry spans or OpenAI messages see agentdbg convert")
    output = Path(args.output)
    try:
        kind = table.format_of(args.output, args.table_format)
    except ValueError as exc:
        return render.fail("export", str(exc))
    if args.max_text < 0:
        return render.fail("export", f"--max-text {args.max_text}: give 0 or more characters")
    if output.is_dir():
        return render.fail("export", f"{output}: is a directory")
    if output.exists() and not args.force:
        return render.fail("export", f"{output}: exists; use --force to replace it")
    found = walk.collect(args.files)
    if output.exists():
        found.files = [path for path in found.files if Path(path).resolve() != output.resolve()]
    out = terminal_stream(sys.stderr)
    try:
        sink = AtomicOutput(output)
    except OSError as exc:
        return render.fail("export", f"cannot write {output}: {exc.strerror or exc}")
    skipped, trouble = list(found.skipped), list(found.refused)
    runs_written = files_read = 0
    try:
        writer = table.open_writer(kind, sink)
        for path in found.files:
            try:
                document = render.open_input(argparse.Namespace(**{**vars(args), "file": path, "follow": False}))
            except render.InputError as exc:
                (trouble if path in found.named else skipped).append((path, str(exc)))
                continue
            try:
                counted = [0]
                for row in table.rows_of(path, _runs(document, args, counted), render.iter_records, args.max_text):
                    writer.write(row)
                if not counted[0]:  # a header and nothing more: refused, as every command refuses it
                    raise render.no_runs(document)
                runs_written += counted[0]
                files_read += 1
            except render.InputError as exc:
                trouble.append((path, str(exc)))
            finally:
                render.print_problems(document.problems, path, "export")
                document.close()
        writer.close()
        if files_read:
            sink.commit()
        else:  # nothing to show for it: OUT is not replaced by an empty table
            sink.discard()
    except table.MissingDependency as exc:
        sink.discard()
        return render.fail("export", str(exc))
    except (OSError, ValueError) as exc:
        sink.discard()
        return render.fail("export", f"cannot write {output}: {exc}")
    except BaseException:
        sink.discard()
        raise
    for path, why in sorted(skipped):
        print(f"agentdbg export: note: {one_line(path, 300)}: skipped: {one_line(short_reason(why, path), 300)}", file=out)
    for path, why in trouble:
        print(f"agentdbg export: error: {one_line(path, 300)}: {one_line(short_reason(why, path), 500)}", file=out)
    if not files_read:
        kept = "left as it was" if output.exists() else "not written"
        print(f"agentdbg export: error: no file could be read; {one_line(str(output), 300)} {kept}", file=out)
        return 2
    print(f"wrote {render.plural(writer.rows, 'row')} ({render.plural(runs_written, 'run')} of "
          f"{render.plural(files_read, 'file')}) to {one_line(str(output), 300)}", file=out)
    return 2 if trouble else 0


def _runs(document, args: argparse.Namespace, counted: list[int]):
    """(number, run) of each run to export, counted as they go (read as the index finds them)."""
    for number, run in render.iter_runs(document, args.run, args.max_runs):
        counted[0] += 1
        yield number, run
