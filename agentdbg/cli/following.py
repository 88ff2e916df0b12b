"""``show --follow`` and ``check --follow``: a trace read as it is written.

The file is followed (``agentdbg.trace.follow``): each step is printed, or checked, as
soon as it is whole. Both end when the last run ends (its ``run_end`` is written) or
when the writer goes away; ``check --follow`` ends at the first failing condition, with
exit 1, as soon as it is written. A file that does not exist yet is waited for a little
(an agent started just before may not have created it). Ctrl-C stops either at once.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

from agentdbg.cli import render
from agentdbg.text import one_line

APPEAR_SECONDS = 10.0  # how long a missing file is waited for
LOOK_EVERY = 0.05


def add_follow_argument(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--follow", "-f", action="store_true",
                        help=f"{what} as the trace is written, until its last run ends or its writer goes "
                             "away (a file not created yet is waited for up to "
                             f"{APPEAR_SECONDS:.0f} s)")


def open_following(args: argparse.Namespace, command: str) -> Any:
    """The input, followed when it is a trace; raises ``render.InputError``."""
    _wait_to_appear(args.file, command)
    return render.open_input(args)


def _wait_to_appear(path: str, command: str) -> None:
    deadline = time.monotonic() + APPEAR_SECONDS
    told = False
    while not _has_content(path) and time.monotonic() < deadline:
        if not told:
            print(f"agentdbg {command}: waiting for {one_line(path, 300)} to be written…",
                  file=render.terminal_stream(sys.stderr), flush=True)
            told = True
        time.sleep(LOOK_EVERY)


def _has_content(path: str) -> bool:
    try:
        return os.stat(path).st_size > 0
    except OSError:
        return False


def follow_runs(document: Any, only: int | None = None) -> Iterator[tuple[int, Any]]:
    """(number, run) for each run as it appears; the caller reads each to its end. Stops
    after the last run has ended, or, when nothing is being written, after the last run."""
    if only is not None:
        if only < 1:
            raise render.InputError(f"--run {only}: runs are numbered from 1")
        while len(document.runs) < only and _may_grow(document):
            _wait(document)
        if len(document.runs) < only:
            raise render.InputError(f"--run {only}: {document.path} has {render.plural(len(document.runs), 'run')}")
        yield only, document.runs[only - 1]
        return
    number = 0
    while True:
        if number < len(document.runs):
            number += 1
            yield number, document.runs[number - 1]
        elif number or not _may_grow(document):
            return  # the run read last has ended (and no other began meanwhile), or nothing came
        else:
            _wait(document)


def _may_grow(document: Any) -> bool:
    return bool(getattr(document, "live", False)) or not getattr(document, "complete", True)


def _wait(document: Any) -> None:
    waiter = getattr(document, "wait", None)
    if callable(waiter) and not getattr(document, "complete", True):
        waiter(LOOK_EVERY)
    else:
        time.sleep(LOOK_EVERY)


def stopped(document: Any) -> str | None:
    """Why following stopped before the file was finished (truncated, replaced)."""
    return getattr(document, "follow_stopped", None)


# -- show --follow ----------------------------------------------------------------------------


def show(document: Any, args: argparse.Namespace) -> int:
    console = render.make_console()
    width = console.width
    out = sys.stdout
    shown = 0
    for number, run in follow_runs(document, args.run):
        shown += 1
        if args.json:
            head = render.dumps({"run": number, **render.info_dict(run.info),
                                 "preamble": [e.to_dict() for e in getattr(run, "preamble", ())]})
            out.write(head[:-1] + ', "steps": [')
        else:
            render.emit(console, render.run_header(run, number, None, document.path, width))
        out.flush()
        first = True
        for record in render.iter_records(run, max(args.first, 1), args.last):
            if args.json:
                out.write(("" if first else ", ") + render.dumps(render.record_dict(record)))
                first = False
            else:
                render.emit(console, render.step_block(record, width))
            out.flush()
        if args.json:
            end = run.end
            tail = render.dumps({"step_count": run.step_count, "outcome": render.run_outcome(run),
                                 "answer": None if end is None else end.answer,
                                 "verdict": render.verdict_dict(render.run_verdict(run))})
            out.write("], " + tail[1:] + "\n")
        else:
            render.emit(console, render.outcome_text(run, width))
        out.flush()
    if stopped(document):
        raise render.InputError(stopped(document))
    if not shown:
        raise render.InputError(f"{document.path}: no runs")
    return 0


# -- check --follow ---------------------------------------------------------------------------


def check(document: Any, names: list[str], conditions: dict, args: argparse.Namespace) -> dict[str, Any]:
    """The result of ``check`` (the same shape), ending at the first failure."""
    step_checks = [(name, conditions[name].step) for name in names if conditions[name].step]
    run_checks = [(name, conditions[name].run) for name in names if conditions[name].run]
    runs: list[dict[str, Any]] = []
    failed: list[str] = []

    def entry(number: int, run: Any, counts: dict, listed: list) -> dict[str, Any]:
        return {"run": number, "name": render.run_title(run, number), "steps": run.step_count,
                "outcome": render.run_outcome(run), "verdict": render.verdict_dict(render.run_verdict(run)),
                "counts": counts, "failures": listed}

    for number, run in follow_runs(document, args.run):
        for record in render.iter_records(run):
            for name, test in step_checks:
                found = test(record)
                if found:
                    failure = {"condition": name, "step": record.step, "message": one_line(found, 300)}
                    runs.append(entry(number, run, {name: 1}, [failure]))
                    failed.append(name)
                    break
            if failed or ("damaged" in names and document.problems):
                break
        if not failed and not ("damaged" in names and document.problems):
            for name, test in run_checks:
                found = test(run, document)
                if found:
                    failure = {"condition": name, "step": None, "message": one_line(found, 300)}
                    runs.append(entry(number, run, {name: 1}, [failure]))
                    failed.append(name)
                    break
        if not failed:
            runs.append(entry(number, run, {}, []))
        if failed or ("damaged" in names and document.problems):
            break
    if stopped(document):
        raise render.InputError(stopped(document))
    if not runs:
        raise render.InputError(f"{document.path}: no runs to check")
    damaged = [str(p) for p in document.problems]
    if "damaged" in names and damaged:
        failed.append("damaged")
    return {"path": document.path, "kind": document.kind, "fail_on": names, "ok": not failed,
            "failed": [name for name in names if name in failed], "runs": runs, "problems": damaged}
