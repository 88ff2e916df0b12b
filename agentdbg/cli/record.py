"""``agentdbg record PLAN -o run.jsonl``: run a plan headless and write its trace.

Each event is appended and flushed as it happens, so a recording stopped at any moment
(Ctrl-C, a kill, a crash) leaves a trace that opens with every complete event.
``--fsync`` also forces each step to disk, for power loss.

The trace is held exclusively while it is written: a second ``record`` to the same file
is refused (exit 2) and changes nothing. A run appended to a trace starts from the
operation journal of the runs before it: a call whose operation key they already used
is answered with their result, never run again.

A plan with dangerous tools is run only with ``--approve always|never``, which decides
each of their calls in advance (nobody is there to ask). Exit 1 when writing fails part-way (disk full,
an I/O error): the run stops there and the trace keeps every event written before.
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
from agentdbg.trace.format import CHECKPOINT_EVERY


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("plan", help="the plan to run (TOML with a [policy] table)")
    parser.add_argument("-o", "--output", required=True, metavar="TRACE", help="the trace file to write (JSON Lines)")
    parser.add_argument("--allow-code", action="store_true", help="allow a plan whose policy runs Python code")
    parser.add_argument("--allow-network", action="store_true", help="allow a plan whose policy calls a model over the network (the plan names the server)")
    parser.add_argument("--approve", choices=("always", "never"),
                        help="decide every call to a dangerous tool in advance: run it (always) or deny it (never); "
                             "a plan with dangerous tools needs one")
    parser.add_argument("--force", action="store_true", help="replace TRACE if it exists")
    parser.add_argument("--append", action="store_true", help="add the run to an existing trace (a file may hold several runs)")
    parser.add_argument("--fsync", action="store_true", help="force each step to disk as it ends (slower; survives power loss)")
    parser.add_argument("--checkpoint-every", type=int, default=None, metavar="N",
                        help=f"write the derived state every N steps (default {CHECKPOINT_EVERY}), so readers can start there")
    parser.add_argument("-q", "--quiet", action="store_true", help="print nothing when all goes well")
    parser.add_argument("--attach", nargs="?", const="on", choices=("on", "wait"), metavar="wait",
                        help="let a debugger open on TRACE pause the run at its breakpoints (a socket beside it, "
                             "TRACE.agentdbg.sock); --attach wait: the first step waits for one to attach")
    parser.add_argument("--pause-timeout", type=float, default=None, metavar="SECONDS",
                        help="with --attach: how long a paused run waits for the debugger before going on "
                             "(default 600)")


def run(args: argparse.Namespace) -> int:
    from agentdbg.attach.agent import run_plan_attached
    from agentdbg.attach.protocol import ChannelError
    from agentdbg.documents import check_approval, command_line_approver
    from agentdbg.files import OpenError, check_regular
    from agentdbg.plans import load_plan, looks_like_plan
    from agentdbg.trace.journal import read_journal
    from agentdbg.trace.writer import TraceBusyError, TraceExistsError, TraceWriteError, TraceWriter

    plan_path, output = Path(args.plan), Path(args.output)
    if args.force and args.append:
        return render.fail("record", "--force and --append: choose one")
    if args.pause_timeout is not None:
        from agentdbg.attach.agent import checked_timeout

        if not args.attach:
            return render.fail("record", "--pause-timeout is for --attach: a paused run waits that long")
        try:
            checked_timeout(args.pause_timeout, "--pause-timeout")
        except ValueError as exc:
            return render.fail("record", str(exc))
    try:  # a named pipe or a device is named as such, not called "not a plan"
        check_regular(plan_path, what="a plan")
    except OpenError as exc:
        return render.fail("record", str(exc))
    if not looks_like_plan(plan_path):
        return render.fail("record", f"{plan_path}: not a plan (a TOML file with a [policy] table)")
    if _same_file(output, plan_path):
        return render.fail("record", f"{output}: the trace would overwrite the plan")
    try:
        plan = load_plan(plan_path, allow_code=args.allow_code, allow_network=args.allow_network)
        check_approval(plan, args.approve, plan_path)
    except ValueError as exc:  # PlanError: says file, line and what; OpenError: no --approve
        return render.fail("record", str(exc))
    # Opened once and locked before anything in it is checked, emptied or appended to.
    mode = "replace" if args.force else "append" if args.append else "create"
    every = {"checkpoint_every": args.checkpoint_every} if args.checkpoint_every is not None else {}
    try:
        writer = TraceWriter(output, mode=mode, fsync=args.fsync, header={"source": str(plan_path)}, **every)
    except TraceExistsError:
        return render.fail("record", f"{output}: exists; use --force to replace it or --append to add this run")
    except TraceWriteError as exc:
        render.fail("record", str(exc))
        return 1
    except TraceBusyError as exc:
        return render.fail("record", f"{exc}; not recorded")
    except ValueError as exc:  # not a regular file, a symlink refused, not a trace to append to
        return render.fail("record", str(exc))
    except OSError as exc:
        return render.fail("record", f"cannot write {output}: {exc.strerror or exc}")
    try:
        with writer, _channel(args, output, writer) as channel:
            # Read under the lock, before this run adds to it: what earlier runs did.
            journal = read_journal(writer.target) if plan.keyed_tools else None
            approver = command_line_approver(args.approve)
            if channel is None:
                trace = plan.run(on_event=writer.write, approver=approver, journal=journal)
            else:
                trace = run_plan_attached(plan, writer, channel, approver=approver, journal=journal)
    except ChannelError as exc:
        return render.fail("record", f"--attach: {exc}")
    except TraceWriteError as exc:  # the run stops at the first event it could not write
        render.fail("record", str(exc))
        return 1
    if not args.quiet:
        outcome = trace.outcome
        line = Text()
        line.append(one_line(plan.name, 80), style="bold")
        line.append(f": {render.plural(len(trace.steps), 'step')}, ")
        line.append(one_line(outcome.status, 80), style="bold green" if outcome.status == "answered" else "bold yellow")
        if outcome.answer is not None:
            line.append(": ")
            line.append(one_line(outcome.answer, 200), style="bold")
        line.append(f" -> {one_line(str(output), 300)}")
        if writer.target != output:
            line.append(f" (a symlink to {one_line(str(writer.target), 300)})")
        line.append(f" ({render.plural(writer.events_written, 'event')})")
        render.make_console().print(line, soft_wrap=True)
    sys.stdout.flush()
    return 0


@contextlib.contextmanager
def _channel(args: argparse.Namespace, output: Path, writer: object) -> Iterator[object]:
    """The debugger's channel beside the trace with --attach (closed at the end), else None."""
    if not args.attach:
        yield None
        return
    from agentdbg.attach.agent import AgentChannel
    from agentdbg.attach.protocol import PAUSE_TIMEOUT

    timeout = PAUSE_TIMEOUT if args.pause_timeout is None else args.pause_timeout
    channel = AgentChannel(output, pause_timeout=timeout, wait=args.attach == "wait")
    try:
        if not args.quiet:
            print(f"agentdbg record: a debugger can attach: agentdbg {one_line(str(output), 300)}",
                  file=render.terminal_stream(sys.stderr), flush=True)
        yield channel
    finally:
        channel.close()


def _same_file(output: Path, plan: Path) -> bool:
    try:
        return os.path.samefile(output, plan)  # symlinks and hard links included
    except OSError:
        return False  # no output yet
