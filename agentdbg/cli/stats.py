"""``agentdbg stats FILE``: steps, tools, errors, repeats, guard trips, tokens, answer and
outcome, per run.

The figures are the run's derived state after its last step. On a trace that state starts
from the last checkpoint, so even a million-step run answers at once; ``--full`` replays
every step instead (and reports every damaged line on the way).

``--json`` prints ``{"runs": [{"steps", "answer", "outcome", "verdict", "tools", "errors",
"repeats", "tokens", "raw_records", ...}, ...], "totals": {...}}``; those keys stay stable,
more may be added.

``raw_records`` counts every ``raw`` event of the run (records its source had that could not
be mapped, or events of a type this version does not know), those kept before its first
step included: the same count ``convert`` reports, summed over the runs.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rich.text import Text

from agentdbg.cli import many, render
from agentdbg.engine import events as ev
from agentdbg.engine.verdicts import Verdict
from agentdbg.model.runs import last_tally
from agentdbg.model.state import RunState, Tally
from agentdbg.text import one_line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    render.add_input_arguments(parser, several=True, folders=True)
    many.add_jobs_argument(parser)
    parser.add_argument("--full", action="store_true", help="replay every step instead of starting from the last checkpoint")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")


def run(args: argparse.Namespace) -> int:
    if many.is_many(args):
        return many.run_stats(args, run_stats, totals, _totals)
    args.file = args.files[0]
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
    result = {"path": document.path, "kind": document.kind, "runs": runs, "totals": totals(runs),
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
        return last_tally(run)
    tally = Tally.from_state(RunState.initial(run.info))
    for record in render.iter_records(run):
        tally.add(record)
    return tally


def raw_record_count(run: Any, state: RunState | Tally) -> int:
    """The run's raw events: those in its steps (the state's count) and those before its
    first step (a run with no steps keeps all of its raw records there)."""
    return state.raw_count + sum(isinstance(event, ev.RawRecord) for event in getattr(run, "preamble", ()))


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
        "verdict": render.verdict_dict(Verdict.read(end.verdict if end is not None else tally.verdict)),
        "tools": {name: calls[0] for name, calls in tally.tool_calls.items()},
        "tool_errors": {name: calls[1] for name, calls in tally.tool_calls.items() if len(calls) > 1 and calls[1]},
        "errors": tally.error_count,
        "parse_errors": tally.parse_errors,
        "repeats": tally.repeat_count,
        "guard_trips": [{"step": step, "guard": guard, "message": message} for step, guard, message in tally.trips],
        "tokens": {"total": tokens[0], "budget": tokens[1]},
        "raw_records": raw_record_count(run, tally),
        "approvals": dict(tally.approvals),
        "replayed": tally.replayed,
        "policy_calls": tally.policy_calls,
        "plans": tally.plans,
        "reflections": tally.reflections,
        "complete": end is not None,
    }


def totals(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Sums over the runs; ``correct``/``wrong`` count the runs a grader judged so,
    ``graded`` every run with a verdict (a score without a judgement included)."""
    outcomes: dict[str, int] = {}
    for entry in runs:
        outcomes[entry["outcome"]] = outcomes.get(entry["outcome"], 0) + 1
    verdicts = [entry["verdict"] for entry in runs if entry["verdict"] is not None]
    return {
        "runs": len(runs),
        "steps": sum(entry["steps"] for entry in runs),
        "outcomes": outcomes,
        "graded": len(verdicts),
        "correct": sum(1 for v in verdicts if v["correct"] is True),
        "wrong": sum(1 for v in verdicts if v["correct"] is False),
        "errors": sum(entry["errors"] for entry in runs),
        "repeats": sum(entry["repeats"] for entry in runs),
        "tokens": sum(entry["tokens"]["total"] for entry in runs if isinstance(entry["tokens"]["total"], int)),
        "raw_records": sum(entry["raw_records"] for entry in runs),
        "policy_calls": sum(entry["policy_calls"] for entry in runs),
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
        render.emit(console, _totals(result["totals"]).append("\n"))
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
    verdict = Verdict.read(entry["verdict"])
    if verdict is not None:
        outcome.append(", ")
        outcome.append(verdict.word, style=render.verdict_style(verdict))
        if verdict.details(grader=False):
            outcome.append(f" ({one_line(verdict.details(grader=False), 300)})")
    rows: list[tuple[str, str, str | Text]] = [
        ("", "steps", f"{entry['steps']:,}"),
        ("", "policy calls", _policy_calls(entry)),
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
    if entry["approvals"]:
        decisions = ", ".join(f"{count:,} {one_line(decision, 20)}" for decision, count in sorted(entry["approvals"].items()))
        rows.append(("", "approvals", decisions))
    if entry["replayed"]:
        rows.append(("", "replayed", f"{entry['replayed']:,} (operations not run again)"))
    if entry["reflections"]:
        rows.append(("", "reflections", f"{entry['reflections']:,}"))
    return rows


def _policy_calls(entry: dict[str, Any]) -> str:
    """``2 (1 plan; 5 steps ran plan items)``: the policy is not asked for a plan's items."""
    calls = f"{entry['policy_calls']:,}"
    if entry["plans"]:
        planned = entry["steps"] - entry["policy_calls"]
        replans = f" with {render.plural(entry['plans'] - 1, 'replan')}" if entry["plans"] > 1 else ""
        calls += f" ({render.plural(entry['plans'], 'plan')}{replans}; "
        calls += f"{render.plural(planned, 'step')} ran plan items)"
    return calls


def _totals(total: dict[str, Any]) -> Text:
    line = Text("total", style="bold")
    spread = ", ".join(f"{count} {one_line(outcome, 60)}"
                       for outcome, count in sorted(total["outcomes"].items(), key=lambda i: -i[1]))
    line.append(f"  {render.plural(total['runs'], 'run')} ({spread}); ")
    if total["graded"]:
        line.append(f"{total['correct']:,} correct", style="green")
        line.append(", ")
        line.append(f"{total['wrong']:,} wrong", style="red" if total["wrong"] else "")
        other = total["graded"] - total["correct"] - total["wrong"]
        line.append(f"{f', {other:,} scored' if other else ''}" + (
            f", {total['runs'] - total['graded']:,} ungraded" if total["graded"] < total["runs"] else "") + "; ")
    line.append(f"{render.plural(total['steps'], 'step')}, {render.plural(total['errors'], 'error')}, "
                f"{render.plural(total['repeats'], 'repeat')}, {total['tokens']:,} tokens")
    if total["raw_records"]:
        line.append(f", {render.plural(total['raw_records'], 'raw record')}")
    return line
