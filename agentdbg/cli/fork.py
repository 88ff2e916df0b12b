"""``agentdbg fork FILE --step N --observation TEXT -o out.jsonl``: change one part of a
step and run the rest again, with the run's own policy and tools.

FILE is a plan (run to its end first: that is the parent) or a trace recorded from a plan.
The output is a trace holding the parent run, then the fork, whose ``run_start`` says
``fork``: {"parent": 1, "step": N, "edited": ..., "text": ...} (docs/trace-format.md);
``--append`` adds the fork to FILE itself instead (``parent`` is then its run number there),
holding FILE from reading its journal to writing the fork. Either way no operation key
used by any run of FILE runs again. A run whose policy cannot be re-run here (imported
from another stack, recorded from your own loop, a model without --allow-network, a plan
that runs code and is neither the one recorded nor named with --plan) exits 2 saying so,
as does a fork whose replayed steps do not come out as recorded (the plan changed since).
Nothing is written then. Exit 0 when the fork is written.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from rich.text import Text

from agentdbg.cli import render
from agentdbg.text import one_line

EDIT_OPTIONS = ("observation", "thought", "action")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="a plan, or a trace recorded from a plan")
    parser.add_argument("--step", type=int, required=True, metavar="N", help="the step to change (1-based)")
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--observation", metavar="TEXT",
                      help="what the policy reads after step N's call (the call is not run; "
                           "text starting with ERROR: is an error observation)")
    what.add_argument("--thought", metavar="TEXT", help="step N's thought (its action is kept and run again)")
    what.add_argument("--action", metavar="TEXT",
                      help="step N's action, written as the run's policy writes it (catalog[Il Gattopardo], "
                           "Final Answer: 2; a scripted plan: tool {\"arg\": 1}, or finish ANSWER; "
                           "a plan, or several calls at once: one call a line; a reflection: its text)")
    parser.add_argument("--call", type=int, default=0, metavar="K",
                        help="with --observation, at a step of several calls: the call whose observation "
                             "TEXT is (1-based; default the first); the others run")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("-o", "--output", metavar="TRACE", help="the trace to write: the parent run, then the fork")
    where.add_argument("--append", action="store_true",
                       help="add the fork to FILE itself (a trace), as its next run")
    parser.add_argument("--run", type=int, default=1, metavar="R", help="fork run R of a file with several (default 1)")
    parser.add_argument("--plan", metavar="PLAN",
                        help="the plan that re-runs the run (default: the plan its run_start names; one that runs "
                             "Python code only if the trace recorded its hash and the file still has it)")
    parser.add_argument("--allow-code", action="store_true", help="allow a plan that runs Python code")
    parser.add_argument("--allow-network", action="store_true", help="allow a plan whose policy calls a model")
    parser.add_argument("--approve", choices=("always", "never"),
                        help="decide every call to a dangerous tool in advance (a plan with dangerous tools needs one)")
    parser.add_argument("--force", action="store_true", help="replace TRACE if it exists")
    parser.add_argument("-q", "--quiet", action="store_true", help="print nothing when all goes well")


def run(args: argparse.Namespace) -> int:
    from agentdbg.documents import OpenError, check_approval, open_document
    from agentdbg.forking import ForkError, plan_for_run
    from agentdbg.plans import PlanError
    from agentdbg.trace.writer import TraceBusyError, TraceWriteError, write_trace

    source = Path(args.file)
    output = source if args.append else Path(args.output)
    part = next(name for name in EDIT_OPTIONS if getattr(args, name) is not None)
    text = getattr(args, part)
    if args.step < 1:
        return render.fail("fork", f"--step must be 1 or more, got {args.step}")
    if args.call < 0 or (args.call and part != "observation"):
        return render.fail("fork", "--call K (1 or more) goes with --observation")
    if args.run < 1:
        return render.fail("fork", f"--run must be 1 or more, got {args.run}")
    if not args.append:
        if _same_file(output, source) or (args.plan and _same_file(output, Path(args.plan))):
            return render.fail("fork", f"{output}: the fork would overwrite its input (--append adds it to a trace)")
        if output.exists() and not args.force:
            return render.fail("fork", f"{output}: exists; use --force to replace it, or --append to add the fork "
                                       f"to {source}")
    try:
        document = open_document(source, allow_code=args.allow_code, allow_network=args.allow_network,
                                 live=False, follow=False, approve=args.approve)
    except (OpenError, PlanError, ValueError, OSError) as exc:
        return render.fail("fork", str(exc) or type(exc).__name__)
    try:
        render.wait_for_runs(document, args.run)
        if args.run > len(document.runs):
            count = len(document.runs)
            return render.fail("fork", f"--run {args.run}: {source} holds {render.plural(count, 'run')}")
        if args.append and document.kind != "trace":
            return render.fail("fork", f"--append: {source} is a plan, not a trace; write the fork with -o")
        index = args.run - 1
        parent_events = document.runs[index].events()
        total = len(document.runs)
        try:
            plan = plan_for_run(document, index, allow_code=args.allow_code, allow_network=args.allow_network,
                                plan=args.plan)
            check_approval(plan, args.approve, plan.path or "")
        except (ForkError, OpenError, PlanError) as exc:
            return render.fail("fork", str(exc))
        try:
            if args.append:
                with _held(output) as writer:  # no other run appends while the fork reads and adds to the file
                    fork_events = _fork(args, document, plan, part, text, parent=args.run)
                    writer.write_all(fork_events)
                    written, number = writer.events_written, total + 1
            else:
                fork_events = _fork(args, document, plan, part, text, parent=1)
        except (ForkError, OpenError, PlanError) as exc:
            return render.fail("fork", str(exc))
        except TraceBusyError as exc:
            return render.fail("fork", f"{exc}; not written")
        except TraceWriteError as exc:
            render.fail("fork", str(exc))
            return 1
        except _Unwritable as exc:
            return render.fail("fork", str(exc))
        except ValueError as exc:  # the edited action does not parse
            return render.fail("fork", f"--action: {exc}")
    finally:
        document.close()
    if not args.append:
        try:
            written, number = write_trace(output, [parent_events, fork_events], header={"source": str(source)}).events, 2
        except TraceBusyError as exc:
            return render.fail("fork", f"{exc}; not written")
        except TraceWriteError as exc:
            render.fail("fork", str(exc))
            return 1
        except (OSError, ValueError) as exc:
            return render.fail("fork", f"cannot write {output}: {getattr(exc, 'strerror', None) or exc}")
    if not args.quiet:
        _say(fork_events, output, number, written)
    return 0


class _Unwritable(Exception):
    """The trace to append to cannot be opened for writing."""


def _fork(args: argparse.Namespace, document, plan, part: str, text: str, parent: int) -> list:
    """The fork's events: replayed, edited and run to its end, from the journal of every run
    of the file (read now: under the lock when appending)."""
    from agentdbg.documents import command_line_approver
    from agentdbg.fork import make_edit
    from agentdbg.forking import fork_journal, start_fork

    index = args.run - 1
    edit, _ = make_edit(_record(document.runs[index], args.step), plan.build_agent().policy.format, part, text,
                        args.call)
    fork = start_fork(plan, document.runs[index].events(), args.step, edit, parent=parent,
                      approver=command_line_approver(args.approve), journal=fork_journal(plan, document))
    return fork.run_to_end()


@contextlib.contextmanager
def _held(path: Path) -> Iterator:
    """The trace at ``path``, open to append to and held until the block ends."""
    from agentdbg.trace.writer import TraceBusyError, TraceWriteError, TraceWriter

    try:
        writer = TraceWriter(path, mode="append")
    except (TraceBusyError, TraceWriteError):
        raise
    except (OSError, ValueError) as exc:
        raise _Unwritable(f"cannot write {path}: {getattr(exc, 'strerror', None) or exc}") from None
    with writer:
        yield writer


def _record(run, step: int):
    try:
        return run.record(step)
    except (IndexError, ValueError, OSError):
        return None  # the fork says what is wrong with the step


def _say(events, output: Path, number: int, written: int) -> None:
    from agentdbg.model.state import group_run

    grouped = group_run(events)
    end = grouped.end
    line = Text()
    line.append(one_line(grouped.info.fork_text(), 120), style="bold")
    line.append(f": {render.plural(len(grouped.records), 'step')}, ")
    outcome = end.outcome if end is not None else "not ended"
    line.append(one_line(outcome, 80), style="bold green" if outcome == "answered" else "bold yellow")
    if end is not None and end.answer is not None:
        line.append(": ")
        line.append(one_line(end.answer, 200), style="bold")
    line.append(f" -> {one_line(str(output), 300)} (run {number}; {render.plural(written, 'event')} written)")
    render.make_console().print(line, soft_wrap=True)
    sys.stdout.flush()


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
