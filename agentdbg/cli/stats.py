"""``agentdbg stats FILE``: steps, tools, errors, repeats, guard trips, tokens, answer and
outcome, per run.

The figures are the run's derived state after its last step. On a trace that state starts
from the last checkpoint, so even a million-step run answers at once; ``--full`` replays
every step instead (and reports every damaged line on the way).

``--json`` prints ``{"runs": [{"steps", "answer", "outcome", "tools", "errors", "repeats",
"tokens", ...}, ...]}``; those keys stay stable, more may be added.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rich.text import Text

from agentdbg.cli import render
from agentdbg.state import RunState, Tally
from agentdbg.text import one_line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    render.add_input_arguments(parser)
    parser.add_argument("--full", action="store_true", help="replay every step instead of starting from the last checkpoint")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")


def run(args: argparse.Namespace) -> int:
    try:
        document = render.open_input(args)
    except render.InputError as exc:
        return render.fail("stats", str(exc))
    try:
        runs = [run_stats(number, run, full=args.full) for number, run in render.iter_runs(document, args.run, args.max_runs)]
        render.wait_for_index(document)
        if not runs:
            raise render.no_runs(document)
    except render.InputError as exc:
        code = render.fail("stats", str(exc))
        render.print_problems(document.problems, document.path, "stats")
        return code
    finally:
        document.close()
    result = {"path": document.path, "kind": document.kind, "runs": runs,
              "problems": [str(p) for p in document.problems]}
    try:
        if args.json:
            print(render.dumps(result), flush=True)
        else:
            _print(result)
            render.print_problems(document.problems, document.path, "stats")
    except BrokenPipeError:
        render.quiet_broken_pipe()
    return 0


def final_tally(run: Any, full: bool = False) -> Tally:
    """The counters after the run's last step. A trace's run reads them from its last
    checkpoint, or folds them fast from the bytes of the steps after it; ``full`` decodes
    and folds every step instead (the same figures, every damaged line reported)."""
    if not full:
        fast = getattr(run, "tally", None)
        return fast() if callable(fast) else Tally.from_state(run.state_at(run.step_count))
    tally = Tally.from_state(RunState.initial(run.info))
    for record in render.iter_records(run):
        tally.add(record)
    return tally


def run_stats(number: int, run: Any, full: bool = False) -> dict[str, Any]:
    getattr(run, "wait", lambda: None)()
    tally = final_tally(run, full)
    steps = run.step_count
    end = run.end
    info = run.info
    tokens = tally.tokens if isinstance(tally.tokens, list) and len(tally.tokens) == 2 else [None, None]
    if end is not None:
        outcome = end.outcome
    else:
        outcome = tally.outcome or ("incomplete" if run.complete else "running")
    return {
        "run": number,
        "name": info.name,
        "task": info.task,
        "steps": steps,
        "answer": end.answer if end is not None else tally.answer,
        "outcome": outcome,
        "tools": {name: calls[0] for name, calls in tally.tool_calls.items()},
        "tool_errors": {name: calls[1] for name, calls in tally.tool_calls.items() if len(calls) > 1 and calls[1]},
        "errors": tally.error_count,
        "parse_errors": tally.parse_errors,
        "repeats": tally.repeat_count,
        "guard_trips": [{"step": step, "guard": guard, "message": message} for step, guard, message in tally.trips],
        "tokens": {"total": tokens[0], "budget": tokens[1]},
        "raw_records": tally.raw_count,
        "complete": end is not None,
    }


def _print(result: dict[str, Any]) -> None:
    console = render.make_console()
    width = console.width  # asked once: rich measures the terminal each time
    runs = result["runs"]
    for entry in runs:
        title = Text()
        title.append(f"run {entry['run']}", style="bold")
        title.append(" · ")
        title.append(one_line(entry["name"] or entry["task"], 60) or f"run {entry['run']}", style="bold magenta")
        title.append("\n")
        render.emit(console, title)  # plainly in a pipe: many runs print fast
        render.emit(console, render.rows_text(_rows(entry), width, number_width=0, label_width=12))
    if len(runs) > 1:
        render.emit(console, _totals(runs).append("\n"))
    sys.stdout.flush()


def _rows(entry: dict[str, Any]) -> list[tuple[str, str, str | Text]]:
    tools = ", ".join(
        f"{name} {calls:,}" + (f" ({entry['tool_errors'][name]:,} failed)" if name in entry["tool_errors"] else "")
        for name, calls in sorted(entry["tools"].items(), key=lambda item: (-item[1], item[0])))
    trips = "; ".join(f"step {t['step']}: {t['guard']}" for t in entry["guard_trips"])
    tokens = entry["tokens"]
    budget = f" of {tokens['budget']:,}" if isinstance(tokens["budget"], int) else ""
    total = f"{tokens['total']:,}" if isinstance(tokens["total"], int) else one_line(str(tokens["total"]), 60)
    outcome = Text(one_line(entry["outcome"], 200), style="bold green" if entry["outcome"] == "answered" else "bold yellow")
    rows: list[tuple[str, str, str | Text]] = [
        ("", "steps", f"{entry['steps']:,}"),
        ("", "outcome", outcome),
        ("", "answer", Text(one_line(entry["answer"], 500), style="bold") if entry["answer"] is not None else "(none)"),
        ("", "tools", one_line(tools) or "none"),
        ("", "errors", f"{entry['errors']:,} ({render.plural(entry['parse_errors'], 'parse error')})"),
        ("", "repeats", f"{entry['repeats']:,}"),
        ("", "guard trips", one_line(trips) or "none"),
        ("", "tokens", total + budget),
    ]
    if entry["raw_records"]:
        rows.append(("", "raw records", f"{entry['raw_records']:,}"))
    return rows


def _totals(runs: list[dict[str, Any]]) -> Text:
    outcomes: dict[str, int] = {}
    for entry in runs:
        outcomes[entry["outcome"]] = outcomes.get(entry["outcome"], 0) + 1
    steps = sum(entry["steps"] for entry in runs)
    errors = sum(entry["errors"] for entry in runs)
    repeats = sum(entry["repeats"] for entry in runs)
    tokens = sum(entry["tokens"]["total"] or 0 for entry in runs if isinstance(entry["tokens"]["total"], int))
    line = Text("total", style="bold")
    spread = ", ".join(f"{count} {one_line(outcome, 60)}" for outcome, count in sorted(outcomes.items(), key=lambda i: -i[1]))
    line.append(f"  {render.plural(len(runs), 'run')} ({spread}); {render.plural(steps, 'step')}, "
                f"{render.plural(errors, 'error')}, {render.plural(repeats, 'repeat')}, {tokens:,} tokens")
    return line
