"""``agentdbg diff A B``: two runs side by side, aligned by action.

Prints how the runs differ as wholes, the first step where they part and what differs
there (thought, action, observation, guard counters, memory), then the aligned steps
(``=`` equal, ``~`` changed, ``-`` only in A, ``+`` only in B), long equal stretches folded.
``A`` and ``B`` are anything agentdbg opens; ``FILE:N`` picks run N of a file with several
(``--run N`` picks it on both sides). Exit status as diff(1): 0 the same, 1 they differ,
2 trouble. ``--tui`` shows them in the debugger's split view instead.
"""

from __future__ import annotations

import argparse
import copy
import sys
from typing import Any

from rich.text import Text

from agentdbg.cli import render
from agentdbg.diff import (
    CHANGED,
    EQUAL,
    ONLY_A,
    ONLY_B,
    Row,
    RunDiff,
    compare,
    differ_phrase,
    differing_fields,
    field_text,
    split_run,
    state_lines,
    step_label,
)
from agentdbg.text import one_line

SIGNS = {EQUAL: "=", CHANGED: "~", ONLY_A: "-", ONLY_B: "+"}
SIGN_STYLES = {EQUAL: "dim", CHANGED: "bold yellow", ONLY_A: "bold red", ONLY_B: "bold green"}
DEFAULT_CONTEXT = 3


def add_arguments(parser: argparse.ArgumentParser) -> None:
    what = "a trace, a plan (run headless) or a run saved by another agent stack; FILE:N picks its run N"
    parser.add_argument("a", metavar="A", help=what)
    parser.add_argument("b", metavar="B", help="the run to compare with A (same forms)")
    parser.add_argument("--run", type=int, metavar="N", help="run N of both files (FILE:N picks one side's)")
    parser.add_argument("--format", metavar="NAME", help="read both files as this format instead of detecting it")
    parser.add_argument("--allow-code", action="store_true", help="allow a plan whose policy runs Python code")
    parser.add_argument("--allow-network", action="store_true", help="allow a plan whose policy calls a model over the network")
    parser.add_argument("--approve", choices=("always", "never"),
                        help="decide every call to a plan's dangerous tools in advance (a plan with dangerous tools needs one)")
    parser.add_argument("--context", type=int, default=DEFAULT_CONTEXT, metavar="N",
                        help=f"equal steps shown around each difference (default {DEFAULT_CONTEXT}); longer equal stretches are folded")
    parser.add_argument("--all", action="store_true", help="list every step, none folded")
    parser.add_argument("--json", action="store_true",
                        help="JSON for machines: one object with the runs, what differs, the first divergence and every aligned row")
    parser.add_argument("--tui", action="store_true", help="show the runs in the debugger's split view (synced cursor)")


# -- choosing the runs ----------------------------------------------------------------------


def open_side(args: argparse.Namespace, spec: str, opened: dict[str, Any]) -> tuple[Any, Any, int]:
    """(document, run, run number) for ``FILE[:N]``; a file named twice is opened once."""
    path, number = split_run(spec)
    number = number if number is not None else args.run if args.run is not None else 1
    if number < 1:
        raise render.InputError(f"{spec}: runs are numbered from 1")
    document = opened.get(path)
    if document is None:
        side = copy.copy(args)
        side.file = path
        document = opened[path] = render.open_input(side)
    render.wait_for_runs(document, number)
    count = len(document.runs)
    if not count:
        raise render.no_runs(document)
    if number > count:
        raise render.InputError(f"{spec}: run {number}: {document.path} has {render.plural(count, 'run')}")
    return document, document.runs[number - 1], number


def run(args: argparse.Namespace) -> int:
    if args.context < 0:
        return render.fail("diff", f"--context {args.context}: give 0 or more steps")
    if args.tui and args.json:
        return render.fail("diff", "--tui shows the runs on screen; --json prints them: choose one")
    opened: dict[str, Any] = {}
    try:
        side_a = open_side(args, args.a, opened)
        side_b = open_side(args, args.b, opened)
    except render.InputError as exc:
        code = render.fail("diff", str(exc))
        for document in opened.values():
            document.close()
            render.print_problems(document.problems, document.path, "diff")  # why a file holds no run
        return code
    if args.tui:
        return _run_tui(side_a, side_b, opened)
    result = None
    try:
        result = compare(side_a[1], side_b[1])
        if args.json:
            _print_json(result, side_a, side_b)
        else:
            _print_human(result, side_a, side_b, args)
    except (render.InputError, ValueError, OSError) as exc:
        return render.fail("diff", str(exc))
    except BrokenPipeError:
        render.quiet_broken_pipe()
        return 0 if result is not None and result.identical else 1
    finally:
        for document in opened.values():
            document.close()
    for document in opened.values():
        render.print_problems(document.problems, document.path, "diff")
    return 0 if result.identical else 1


def _run_tui(side_a, side_b, opened: dict[str, Any]) -> int:
    from agentdbg.tui.app import DebuggerApp

    document_a, _, number_a = side_a
    document_b, _, number_b = side_b
    app = DebuggerApp(document_a, run_index=number_a - 1,
                      diff_with=(document_b, number_b - 1, document_b is not document_a))
    # The screen is the app's: the streams this command's messages pass through are not.
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = getattr(sys.stdout, "stream", sys.stdout), getattr(sys.stderr, "stream", sys.stderr)
    try:
        app.run()
    finally:
        sys.stdout, sys.stderr = saved
    code = app.return_code or 0
    if code:  # the traceback is printed above by the app as it closes
        print(f"agentdbg diff: the debugger stopped on an internal error (exit status {code})", file=sys.stderr)
    return code


# -- describing a run and a step ----------------------------------------------------------------


def _side_dict(document, number: int, run) -> dict[str, Any]:
    end = run.end
    return {"path": document.path, "format": document.kind, "run": number, "title": render.run_title(run, number),
            "task": run.info.task, "steps": run.step_count, "outcome": render.run_outcome(run),
            "answer": None if end is None else end.answer, "verdict": render.verdict_dict(render.run_verdict(run))}


def _side_line(letter: str, document, number: int, run, width: int) -> Text:
    line = Text()
    line.append(f"{letter}  ", style="bold")
    line.append(f"run {number} · ")
    line.append(render.run_title(run, number), style="bold magenta")
    line.append(f" · {render.plural(run.step_count, 'step')} · ")
    line.append(one_line(render.run_outcome(run), 60))
    end = run.end
    if end is not None and end.answer is not None:
        line.append(": ")
        line.append(one_line(end.answer, 80), style="bold")
    line.append(f"  ({one_line(document.path, 200)}, {one_line(document.kind, 40)})", style="dim")
    return line


def divergence_dict(result: RunDiff, row: Row) -> dict[str, Any]:
    record_a, record_b = result.records(row)
    state_a, state_b = result.state_pair(row)
    return {
        "row": row.index + 1, "kind": row.kind, "a_step": row.a, "b_step": row.b,
        "fields": differing_fields(record_a, record_b),
        "a": None if record_a is None else render.record_dict(record_a),
        "b": None if record_b is None else render.record_dict(record_b),
        "state": {"a": state_a.to_dict(), "b": state_b.to_dict()},
    }


# -- output --------------------------------------------------------------------------------------


def _print_json(result: RunDiff, side_a, side_b) -> None:
    out = sys.stdout
    alignment = result.alignment
    first = alignment.first_difference
    head = {
        "identical": result.identical,
        "a": _side_dict(side_a[0], side_a[2], side_a[1]),
        "b": _side_dict(side_b[0], side_b[2], side_b[1]),
        "differences": result.run_fields, "noted": result.noted_fields,
        "counts": alignment.counts(),
        "first_divergence": None if first is None else divergence_dict(result, alignment.row(first)),
    }
    text = render.dumps(head)
    out.write(text[:-1] + ', "rows": [')
    for row in alignment.rows():  # streamed: a long run's rows never sit in one list
        item: dict[str, Any] = {"row": row.index + 1, "kind": row.kind, "a": row.a, "b": row.b}
        if row.kind == CHANGED:
            item["fields"] = differing_fields(*result.records(row))
        out.write(("" if row.index == 0 else ", ") + render.dumps(item))
    out.write("]}\n")
    out.flush()


def _print_human(result: RunDiff, side_a, side_b, args: argparse.Namespace) -> None:
    console = render.make_console()
    width = console.width
    emit = lambda text: render.emit(console, text)  # noqa: E731
    alignment = result.alignment
    header = Text()
    header.append_text(_side_line("A", side_a[0], side_a[2], side_a[1], width))
    header.append("\n")
    header.append_text(_side_line("B", side_b[0], side_b[2], side_b[1], width))
    header.append("\n")
    emit(header)
    counts = alignment.counts()
    summary = Text()
    if result.identical:
        summary.append("the runs are the same", style="bold green")
        summary.append(f": {render.plural(alignment.row_count, 'step')} equal" if alignment.row_count
                       else ": neither has a step")
    else:
        summary.append("the runs differ", style="bold red")
        parts = [f"{counts[kind]:,} {kind}" for kind in (EQUAL, CHANGED, ONLY_A, ONLY_B) if counts[kind]]
        summary.append(": " + ", ".join(parts) if parts else ": no steps")
        if result.run_fields:
            summary.append(f"; {differ_phrase(result.run_fields)}")
    if result.noted_fields:
        summary.append(f" (also differ, not counted: {', '.join(result.noted_fields)})", style="dim")
    emit(summary.append("\n"))
    first = alignment.first_difference
    if first is not None:
        emit(_divergence_block(result, alignment.row(first), width))
    if not result.alignment.identical:
        emit(_listing(result, args.context, args.all, width))


def _divergence_block(result: RunDiff, row: Row, width: int) -> Text:
    record_a, record_b = result.records(row)
    out = Text("\nfirst divergence: ", style="bold")
    where = {CHANGED: f"step {row.a} of A and step {row.b} of B differ",
             ONLY_A: f"step {row.a} of A has no counterpart in B (B is at step {row.b_at})",
             ONLY_B: f"step {row.b} of B has no counterpart in A (A is at step {row.a_at})"}[row.kind]
    out.append(where + "\n", style="bold")
    rows: list[tuple[str, str, str | Text]] = []
    if row.kind == CHANGED:
        for name in differing_fields(record_a, record_b):
            rows.append(("", name, _sided("A", render._text(field_text(record_a, name)), "bold red")))
            rows.append(("", "", _sided("B", render._text(field_text(record_b, name)), "bold green")))
        if not rows:
            rows.append(("", "", "(they differ in a way not shown here; --json has both steps)"))
        out.append_text(render.rows_text(rows, width, number_width=0, label_width=12))
    else:
        record = record_a if record_a is not None else record_b
        out.append_text(render.step_block(record, width))
    state_a, state_b = result.state_pair(row)
    lines_a, lines_b = state_lines(state_a), state_lines(state_b)
    rows = []
    for name in lines_a:
        if lines_a[name] == lines_b[name]:
            rows.append(("", name, Text(render._clean(lines_a[name]), style="dim")))
        else:
            rows.append(("", name, _sided("A", render._clean(lines_a[name]), "bold red")))
            rows.append(("", "", _sided("B", render._clean(lines_b[name]), "bold green")))
    out.append(f"state here (A after step {row.a_at}, B after step {row.b_at})\n", style="bold")
    out.append_text(render.rows_text(rows, width, number_width=0, label_width=12))
    return out


def _sided(letter: str, text: str, style: str) -> Text:
    value = Text(f"{letter}: ", style=style)
    value.append(text)
    return value


def _listing(result: RunDiff, context: int, everything: bool, width: int) -> Text:
    alignment = result.alignment
    digits = max(len(str(alignment.steps_a)), len(str(alignment.steps_b)), 2)
    out = Text("\nsteps (= equal, ~ changed, - only in A, + only in B)\n", style="bold")
    out.append(f"     {'A'.rjust(digits)} {'B'.rjust(digits)}\n", style="dim")
    label_width = max(width - 6 - 2 * digits, 20)
    shown = _shown_rows(alignment, context, everything)
    previous = -1
    for start, stop in shown:
        if start > previous + 1:
            out.append(f"  … {render.plural(start - previous - 1, 'equal step')} …\n", style="dim")
        for row in alignment.rows(start, stop):
            out.append_text(_row_line(result, row, digits, label_width))
        previous = stop - 1
    if previous < alignment.row_count - 1:
        out.append(f"  … {render.plural(alignment.row_count - 1 - previous, 'equal step')} …\n", style="dim")
    return out


def _shown_rows(alignment, context: int, everything: bool) -> list[tuple[int, int]]:
    """Stretches of rows to list: every differing row with ``context`` rows around it."""
    if everything:
        return [(0, alignment.row_count)]
    spans: list[tuple[int, int]] = []
    for start, stop in _difference_spans(alignment):
        start, stop = max(start - context, 0), min(stop + context, alignment.row_count)
        if start == 1:
            start = 0
        if alignment.row_count - stop == 1:
            stop = alignment.row_count
        if spans and start <= spans[-1][1] + 1:  # a fold of one step would hide nothing
            spans[-1] = (spans[-1][0], max(stop, spans[-1][1]))
        else:
            spans.append((start, stop))
    return spans


def _difference_spans(alignment):
    start = last = None
    for index in alignment.different_rows():
        if last is not None and index == last + 1:
            last = index
            continue
        if start is not None:
            yield start, last + 1
        start = last = index
    if start is not None:
        yield start, last + 1


def _row_line(result: RunDiff, row: Row, digits: int, width: int) -> Text:
    line = Text()
    line.append(f"  {SIGNS[row.kind]} ", style=SIGN_STYLES[row.kind])
    line.append(f"{'' if row.a is None else row.a:>{digits}} {'' if row.b is None else row.b:>{digits}}  ",
                style="dim")
    record_a, record_b = result.records(row)
    label_a, label_b = step_label(record_a), step_label(record_b)
    if row.kind == CHANGED:
        fields = differing_fields(record_a, record_b)
        note = f"  ({', '.join(fields)})" if fields else ""
        room = max(width - len(note), 10)
        if "action" in fields:  # both calls: what one does not need, the other may use
            half = max((room - 3) // 2, 5)
            room_a = max(half, room - 3 - len(label_b))
            text = f"{one_line(label_a, room_a)} → {one_line(label_b, max(room - 3 - min(len(label_a), room_a), 5))}"
        else:
            text = one_line(label_a, room)
        line.append(text)
        line.append(note, style="yellow")
    else:
        line.append(one_line(label_a or label_b, width),
                    style="" if row.kind == EQUAL else SIGN_STYLES[row.kind].replace("bold ", ""))
    line.append("\n")
    return line
