"""``agentdbg check FILE --fail-on error,repeat,budget``: a gate for CI.

Exit 0 when none of the named conditions occurs in any run, 1 when one does (each
occurrence is listed with its run and step), 2 when the input or the arguments cannot be
used. Pin the plan, assert the trace: ``agentdbg check plan.toml --fail-on error,repeat``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from rich.text import Text

from agentdbg.cli import following, render
from agentdbg.engine.verdicts import Verdict, outcome_with_verdict
from agentdbg.model.runs import StepBlocks
from agentdbg.model.state import StepRecord
from agentdbg.text import one_line
from agentdbg.trace import scan

DEFAULT_FAIL_ON = "error,repeat,budget"
BUDGET_GUARDS = {"max_steps", "error_budget", "token_budget"}
BUDGET_OUTCOMES = {"budget exhausted", "error budget exhausted", "token budget exhausted"}


@dataclass(frozen=True)
class Condition:
    help: str
    step: Callable[[StepRecord], str | None] | None = None  # a step's occurrence, described
    run: Callable[[Any, Any], str | None] | None = None  # (run, document) -> the run's occurrence


def _error(record: StepRecord) -> str | None:
    return record.error_summary


def _parse(record: StepRecord) -> str | None:
    return None if record.parse_error is None else f"parse error: {record.parse_error}"


def _repeat(record: StepRecord) -> str | None:
    if record.tripped is not None and record.tripped.guard == "repetition":
        return f"repetition guard: {record.tripped.message}"
    if record.is_repeat:
        count = record.guards.repeats[0] if record.guards is not None else "?"
        action = record.call or record.tool or one_line(record.output.strip(), 80) or "the same output"
        return f"{action} proposed again ({count} times)"
    return None


def _budget(record: StepRecord) -> str | None:
    if record.tripped is not None and record.tripped.guard in BUDGET_GUARDS:
        return f"{record.tripped.guard} guard: {record.tripped.message}"
    if record.tripped is None and record.end is not None and record.end.outcome in BUDGET_OUTCOMES:
        return f"run ended: {record.end.outcome}"
    return None


def _budget_before_any_step(run: Any, document: Any) -> str | None:
    """A budget of no steps ends the run before its first step: no step record says so."""
    end = run.end
    if run.step_count == 0 and end is not None and end.outcome in BUDGET_OUTCOMES:
        return f"run ended before its first step: {end.outcome}" + (f" ({end.message})" if end.message else "")
    return None


def _guard(record: StepRecord) -> str | None:
    if record.tripped is not None:
        return f"{record.tripped.guard} guard: {record.tripped.message}"
    return None


def _tokens(record: StepRecord) -> str | None:
    if record.tripped is not None and record.tripped.guard == "token_budget":
        return f"token budget: {record.tripped.message}"
    return None


def _denied(record: StepRecord) -> str | None:
    if record.decision == "denied":
        return f"{record.call or record.tool}: {record.approval_text()}"
    return None


def _edited(record: StepRecord) -> str | None:
    if record.decision == "edited":
        return f"{record.call or record.tool}: {record.approval_text()}"
    return None


def _final_missing(run: Any, document: Any) -> str | None:
    end = run.end
    if end is None:
        return "the run has no end, so no final answer"
    if end.answer is None:
        return f"no final answer (outcome: {end.outcome})"
    return None


def _wrong(run: Any, document: Any) -> str | None:
    verdict = render.run_verdict(run)
    if verdict is None or verdict.correct is not False:
        return None  # no verdict, or a score without a judgement: nothing says it is wrong
    end = run.end
    said = f"answer {one_line(end.answer, 200)!r}" if end.answer is not None else f"no answer ({one_line(end.outcome, 60)})"
    expected = f"expected {one_line(verdict.expected, 200)!r}" if verdict.expected is not None else "no expected answer recorded"
    grader = f", grader: {one_line(verdict.named_grader, 60)}" if verdict.named_grader else ""
    return f"{said}, {expected}{grader}"


def _incomplete(run: Any, document: Any) -> str | None:
    return None if run.end is not None else f"the run has no end after {render.plural(run.step_count, 'step')} (recording cut off?)"


CONDITIONS: dict[str, Condition] = {
    "error": Condition("a step failed: a tool error, a policy error or an unreadable output", step=_error),
    "parse": Condition("the policy's output could not be read as an action or an answer", step=_parse),
    "repeat": Condition("an action repeated an earlier one, or the repetition guard stopped the run", step=_repeat),
    "budget": Condition("a budget ran out: steps, consecutive errors or tokens", step=_budget,
                        run=_budget_before_any_step),
    "guard": Condition("any guard stopped the run (a budget or the repetition brake)", step=_guard),
    "tokens": Condition("the token budget was exhausted", step=_tokens),
    "denied": Condition("a call to a dangerous tool was denied", step=_denied),
    "edited": Condition("a call to a dangerous tool ran with edited arguments", step=_edited),
    "final-missing": Condition("the run ended without a final answer (or did not end)", run=_final_missing),
    "incomplete": Condition("the run has no end (the recording was cut off)", run=_incomplete),
    "wrong": Condition("a grader judged the run wrong (a run without a verdict never fails this)", run=_wrong),
    "damaged": Condition("the file has damaged lines (each is reported by line)"),
}


def _conditions_help() -> str:
    return "; ".join(f"{name}: {c.help}" for name, c in CONDITIONS.items())


def add_arguments(parser: argparse.ArgumentParser) -> None:
    render.add_input_arguments(parser)
    parser.add_argument("--fail-on", default=DEFAULT_FAIL_ON, metavar="LIST",
                        help=f"comma-separated conditions that fail the check (default {DEFAULT_FAIL_ON}). {_conditions_help()}")
    parser.add_argument("--max-report", type=int, default=10, metavar="N",
                        help="list at most N occurrences of each condition per run (all are counted; default 10)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    following.add_follow_argument(parser, "check each step (exit 1 at the first failure)")


def parse_fail_on(text: str) -> list[str]:
    names = [name.strip().lower() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in CONDITIONS]
    if unknown or not names:
        what = f"unknown condition {', '.join(repr(n) for n in unknown)}" if unknown else "no condition given"
        raise render.InputError(f"--fail-on: {what}; valid conditions: {', '.join(CONDITIONS)}")
    return list(dict.fromkeys(names))


def run(args: argparse.Namespace) -> int:
    try:
        names = parse_fail_on(args.fail_on)
    except render.InputError as exc:
        return render.fail("check", str(exc))
    try:
        document = following.open_following(args, "check") if args.follow else render.open_input(args)
    except render.InputError as exc:
        return render.fail("check", str(exc))
    try:
        result = following.check(document, names, CONDITIONS, args) if args.follow else _check(document, names, args)
    except render.InputError as exc:
        code = render.fail("check", str(exc))
        render.print_problems(document.problems, document.path, "check")
        return code
    finally:
        document.close()
    try:
        if args.json:
            print(render.dumps(result), flush=True)
        else:
            _print(result, names)
            render.print_problems(document.problems, document.path, "check")
    except BrokenPipeError:
        render.quiet_broken_pipe()
    return 0 if result["ok"] else 1


def _check(document: Any, names: list[str], args: argparse.Namespace) -> dict[str, Any]:
    step_checks = [(name, CONDITIONS[name].step) for name in names if CONDITIONS[name].step]
    run_checks = [(name, CONDITIONS[name].run) for name in names if CONDITIONS[name].run]
    limit = max(args.max_report, 0)
    if args.run is None and args.max_runs and args.max_runs > 0:
        render.wait_for_index(document)  # a gate reads every run: know how many first
        if len(document.runs) > args.max_runs:
            raise render.InputError(f"{document.path}: {render.plural(len(document.runs), 'run')}, more than "
                                    f"--max-runs {args.max_runs:,}: not checked; --max-runs N checks more "
                                    "(0: all), --run N one run")
    runs = []
    for number, run in render.iter_runs(document, args.run, args.max_runs):
        counts = dict.fromkeys(names, 0)
        listed: list[dict[str, Any]] = []
        for record, exact in _records(run):
            for name, test in step_checks:
                found = test(record)
                if found:
                    counts[name] += 1
                    if counts[name] <= limit:
                        if exact is not None:  # a sketch: the message needs the step decoded
                            record, exact = exact(), None
                            found = test(record)
                        listed.append({"condition": name, "step": record.step, "message": one_line(found, 300)})
        for name, test in run_checks:
            found = test(run, document)
            if found:
                counts[name] += 1
                listed.append({"condition": name, "step": None, "message": one_line(found, 300)})
        runs.append({"run": number, "name": render.run_title(run, number), "steps": run.step_count,
                     "outcome": render.run_outcome(run), "verdict": render.verdict_dict(render.run_verdict(run)),
                     "counts": {k: v for k, v in counts.items() if v}, "failures": listed})
    render.wait_for_index(document)
    if not runs:  # nothing to gate on: a pipeline that recorded nothing must not pass
        raise render.no_runs(document)
    damaged = [str(p) for p in document.problems]
    failed = {name for r in runs for name in r["counts"]}
    if "damaged" in names and damaged:
        failed.add("damaged")
    return {"path": document.path, "kind": document.kind, "fail_on": names, "ok": not failed,
            "failed": [name for name in names if name in failed], "runs": runs, "problems": damaged}


def _records(run: Any) -> Iterator[tuple[StepRecord, Callable[[], StepRecord] | None]]:
    """The steps that may meet a condition: of a trace file, only those its bytes do not
    prove plain (``agentdbg.trace.scan``: the same result as decoding every step)."""
    if isinstance(run, StepBlocks):
        return scan.eventful_records(run)
    return ((record, None) for record in render.iter_records(run))


def _print(result: dict[str, Any], names: list[str]) -> None:
    console = render.make_console()
    runs = result["runs"]
    several = len(runs) > 1
    for entry in runs:
        if not entry["failures"]:
            continue
        title = Text()
        title.append(f"run {entry['run']}" if several else "run", style="bold")
        title.append(" · ")
        title.append(entry["name"], style="bold magenta")
        outcome = outcome_with_verdict(one_line(entry["outcome"], 200), Verdict.read(entry["verdict"]))
        title.append(f"  ({render.plural(entry['steps'], 'step')}, {outcome})", style="dim")
        console.print(title, soft_wrap=True)
        rows = []
        for failure in entry["failures"]:
            where = f"step {failure['step']}" if failure["step"] is not None else "run"
            rows.append((where, failure["condition"], failure["message"]))
        for name, count in entry["counts"].items():
            shown = sum(1 for f in entry["failures"] if f["condition"] == name)
            if count > shown:
                rows.append(("", name, f"... and {count - shown:,} more"))
        console.print(render.rows_text(rows, console.width, number_width=9, label_width=13), end="", soft_wrap=True)
    steps = sum(entry["steps"] for entry in runs)
    scope = f"{render.plural(len(runs), 'run')}, {render.plural(steps, 'step')}"
    if result["ok"]:
        line = Text("ok", style="bold green")
        line.append(f": no {_either(names)} in {scope}")
        ungraded = sum(1 for entry in runs if entry["verdict"] is None)
        if "wrong" in names and ungraded:  # passing because nothing was graded is worth saying
            line.append(f" ({render.plural(ungraded, 'run')} without a verdict)", style="yellow")
    else:
        occurrences = sum(sum(entry["counts"].values()) for entry in runs)
        line = Text("FAIL", style="bold red")
        detail = f"{render.plural(occurrences, 'occurrence')} in {scope}" if occurrences else scope
        if "damaged" in result["failed"]:
            detail += f"; {render.plural(len(result['problems']), 'damaged line')}"
        line.append(f": {', '.join(result['failed'])} ({detail})")
    console.print(line, soft_wrap=True)
    sys.stdout.flush()


def _either(names: list[str]) -> str:
    if len(names) == 1:
        return names[0]
    return ", ".join(names[:-1]) + " or " + names[-1]
