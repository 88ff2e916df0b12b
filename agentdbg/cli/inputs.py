"""The headless commands' input: the file arguments, opening them, and walking runs and
steps as a file is indexed."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import Any

from agentdbg.cli.terminal import make_console as make_console
from agentdbg.cli.text_output import plural
from agentdbg.model.outcome import VERDICT_STYLES as VERDICT_STYLES
from agentdbg.model.runs import Document, Indexing, Problem
from agentdbg.model.state import StepRecord

MAX_RUNS = 20_000  # runs a command reads from one file by default (--max-runs): bounded time


class InputError(Exception):
    """The input or an argument cannot be used: the command exits with 2."""


# -- arguments and input ------------------------------------------------------------------


def add_input_arguments(parser: argparse.ArgumentParser, several: bool = False) -> None:
    """FILE and the options on how to read it; ``several``: FILE... (``args.files``)."""
    what = "a trace (.jsonl), a plan (.toml, run headless) or a run saved by another agent stack"
    if several:
        parser.add_argument("files", nargs="+", metavar="FILE", help=f"{what}; several may be given")
    else:
        parser.add_argument("file", help=what)
    parser.add_argument("--run", type=int, metavar="N", help="only run N of a file with several (1-based)")
    parser.add_argument("--format", metavar="NAME", help="read FILE as this format instead of detecting it (plan, trace, or an importer's name)")
    parser.add_argument("--allow-code", action="store_true", help="allow a plan whose policy runs Python code")
    parser.add_argument("--allow-network", action="store_true", help="allow a plan whose policy calls a model over the network (the plan names the server)")
    parser.add_argument("--max-runs", type=int, default=MAX_RUNS, metavar="N",
                        help=f"read at most N runs of a file with more (default {MAX_RUNS:,}; 0: no limit)")
    parser.add_argument("--approve", choices=("always", "never"),
                        help="decide every call to a plan's dangerous tools in advance: run it (always) or deny it "
                             "(never); a plan with dangerous tools needs one")


def open_input(args: argparse.Namespace) -> Document:
    from agentdbg.documents import open_document

    try:
        return open_document(args.file, format=args.format, allow_code=args.allow_code,
                             allow_network=getattr(args, "allow_network", False), live=False,
                             follow=getattr(args, "follow", False), approve=getattr(args, "approve", None))
    except ModuleNotFoundError as exc:  # no importers in this installation
        if exc.name and exc.name.startswith("agentdbg.importers"):
            raise InputError(f"{args.file}: not an agentdbg trace or plan") from None
        raise
    except (ValueError, OSError) as exc:  # OpenError, PlanError, an importer's NotImportable
        raise InputError(str(exc)) from None


def no_runs(document: Document) -> InputError:
    """A file with no run (a header and nothing more, or nothing readable): nothing to
    show, count or check, so every command refuses it alike."""
    return InputError(f"{document.path}: no runs in it")


def wait_for_index(document: Document) -> None:
    document.wait()


def wait_for_runs(document: Document, count: int) -> None:
    """Wait until a file still being indexed has found ``count`` runs, or has no more."""
    while len(document.runs) < count and not document.complete:
        document.wait(0.05)


def iter_runs(document: Document, only: int | None = None, limit: int | None = None) -> Iterator[tuple[int, Any]]:
    """(number, run) for each run, as soon as the index has found it; ``only`` picks one.
    With ``limit``, runs after the first ``limit`` are left unread and reported as a
    problem (``runs_left_unread`` says so afterwards)."""
    if limit is not None and limit < 0:
        raise InputError(f"--max-runs {limit}: give a number of runs, or 0 for no limit")
    if only is not None:
        if only < 1:
            raise InputError(f"--run {only}: runs are numbered from 1")
        wait_for_runs(document, only)
        if len(document.runs) < only:
            raise InputError(f"--run {only}: {document.path} has {plural(len(document.runs), 'run')}")
        yield only, document.runs[only - 1]
        return
    number = 0
    while True:
        if number < len(document.runs):
            if limit and number >= limit:
                _report_unread_runs(document, limit)
                return
            number += 1
            yield number, document.runs[number - 1]
        elif document.complete:
            if number >= len(document.runs):
                return
        else:
            document.wait(0.05)


def _report_unread_runs(document: Document, limit: int) -> None:
    document.wait()  # the whole count, for the message
    line_of = getattr(document.runs[limit], "line", None)
    message = (f"run {limit + 1:,} starts here: the file has {len(document.runs):,} runs, and only the first "
               f"{limit:,} are read (--max-runs N reads more, 0 all; --run N reads any one)")
    document.problems.append(Problem(document.path, line_of, message))
    document.runs_left_unread = len(document.runs) - limit


def runs_left_unread(document: Document) -> int:
    """Runs ``iter_runs`` left unread because of its limit (0 when it read them all)."""
    return document.runs_left_unread


def iter_records(run: Any, start: int = 1, stop: int | None = None) -> Iterator[StepRecord]:
    """Steps ``start``..``stop`` in order, waiting for a file's index where needed."""
    step = start
    while stop is None or step <= stop:
        if step > run.step_count:
            if isinstance(run, Indexing):
                run.wait_for(step)
            if step > run.step_count:
                return
        yield run.record(step)
        step += 1


def wait_for_step(run: Any, step: int) -> None:
    if isinstance(run, Indexing):
        run.wait_for(step)
