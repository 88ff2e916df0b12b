"""``agentdbg record PLAN -o run.jsonl``: run a plan headless and write its trace.

Each event is appended and flushed as it happens, so a recording stopped at any moment
(Ctrl-C, a kill, a crash) leaves a trace that opens with every complete event.
``--fsync`` also forces each step to disk, for power loss.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.text import Text

from agentdbg.cli import render
from agentdbg.text import one_line
from agentdbg.trace.format import CHECKPOINT_EVERY


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("plan", help="the plan to run (TOML with a [policy] table)")
    parser.add_argument("-o", "--output", required=True, metavar="TRACE", help="the trace file to write (JSON Lines)")
    parser.add_argument("--allow-code", action="store_true", help="allow a plan whose policy runs Python code")
    parser.add_argument("--force", action="store_true", help="replace TRACE if it exists")
    parser.add_argument("--append", action="store_true", help="add the run to an existing trace (a file may hold several runs)")
    parser.add_argument("--fsync", action="store_true", help="force each step to disk as it ends (slower; survives power loss)")
    parser.add_argument("--checkpoint-every", type=int, default=None, metavar="N",
                        help=f"write the derived state every N steps (default {CHECKPOINT_EVERY}), so readers can start there")
    parser.add_argument("-q", "--quiet", action="store_true", help="print nothing when all goes well")


def run(args: argparse.Namespace) -> int:
    from agentdbg.plans import load_plan, looks_like_plan
    from agentdbg.trace.writer import TraceWriter

    plan_path, output = Path(args.plan), Path(args.output)
    if args.force and args.append:
        return render.fail("record", "--force and --append: choose one")
    if not plan_path.exists():
        return render.fail("record", f"{plan_path}: no such file")
    if plan_path.is_dir():
        return render.fail("record", f"{plan_path}: is a directory, not a plan")
    if not looks_like_plan(plan_path):
        return render.fail("record", f"{plan_path}: not a plan (a TOML file with a [policy] table)")
    if output.is_dir():
        return render.fail("record", f"{output}: is a directory")
    if output.exists() and output.resolve() == plan_path.resolve():
        return render.fail("record", f"{output}: the trace would overwrite the plan")
    if output.exists() and not (args.force or args.append):
        return render.fail("record", f"{output}: exists; use --force to replace it or --append to add this run")
    try:
        plan = load_plan(plan_path, allow_code=args.allow_code)
    except ValueError as exc:  # PlanError: says file, line and what
        return render.fail("record", str(exc))
    try:
        if args.force and output.exists():
            output.unlink()
        every = {"checkpoint_every": args.checkpoint_every} if args.checkpoint_every is not None else {}
        writer = TraceWriter(output, fsync=args.fsync, header={"source": str(plan_path)}, **every)
    except (OSError, ValueError) as exc:
        return render.fail("record", f"cannot write {output}: {getattr(exc, 'strerror', None) or exc}")
    with writer:
        trace = plan.run(on_event=writer.write)
    if not args.quiet:
        outcome = trace.outcome
        line = Text()
        line.append(one_line(plan.name, 80), style="bold")
        line.append(f": {render.plural(len(trace.steps), 'step')}, ")
        line.append(outcome.status, style="bold green" if outcome.status == "answered" else "bold yellow")
        if outcome.answer is not None:
            line.append(": ")
            line.append(one_line(outcome.answer, 200), style="bold")
        line.append(f" -> {one_line(str(output), 300)} ({render.plural(writer.events_written, 'event')})")
        render.make_console().print(line, soft_wrap=True)
    sys.stdout.flush()
    return 0
