"""``agentdbg [FILE]``: open the debugger on a plan, a trace or a saved run (or the demo).

A FILE that cannot be opened (or holds no run) and unusable arguments exit 2 with one
line on stderr, before the screen starts; inside the debugger, ``o`` shows why a file
cannot be opened in place. A debugger that stops on an internal error exits 1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from agentdbg.text import one_line, shorten


def refuse(message: str) -> int:
    print(f"agentdbg: {shorten(message, 2000)}", file=sys.stderr)
    return 2


def build_app(args: argparse.Namespace):
    """The app to run, or an exit code (with a message on stderr) for unusable arguments."""
    from agentdbg.tui.app import DebuggerApp
    from agentdbg.tui.opening import open_demo, open_for_app

    confine = _confinement(getattr(args, "confine", None))
    if isinstance(confine, int):
        return confine
    run_number = getattr(args, "run", None)
    run_number = 1 if run_number is None else run_number
    if run_number < 1:
        print(f"agentdbg: --run must be 1 or more, got {run_number}", file=sys.stderr)
        return 2
    step = getattr(args, "step", None)
    if step is not None and step < 1:
        print(f"agentdbg: --step must be 1 or more, got {step}", file=sys.stderr)
        return 2
    if not args.file:
        if args.format:
            print("agentdbg: --format needs a FILE", file=sys.stderr)
            return 2
        return DebuggerApp(open_demo(), run_index=run_number - 1, save_breakpoints=False, step=step,
                           allow_code=args.allow_code, allow_network=getattr(args, "allow_network", False),
                           confine=confine)
    if args.format and args.format not in ("plan", "trace"):
        from agentdbg import importers

        if args.format not in importers.BY_NAME:
            names = ", ".join(["plan", "trace", *importers.BY_NAME])
            print(f"agentdbg: unknown --format {args.format!r}; formats: {names}", file=sys.stderr)
            return 2
    document, _, error = open_for_app(args.file, format=args.format, allow_code=args.allow_code,
                                      allow_network=getattr(args, "allow_network", False),
                                      approve=getattr(args, "approve", None))
    if document is None:
        return refuse(error)
    from agentdbg.cli.render import plural, wait_for_runs

    wait_for_runs(document, run_number)  # run N of a large file may lie beyond what is indexed yet
    count = len(document.runs)
    if not count or run_number > count:
        document.close()
        if count:
            return refuse(f"--run {run_number}: {args.file} holds {plural(count, 'run')}")
        found = len(document.problems)
        why = ""
        if found:
            first = one_line(str(document.problems[0]), 400)
            more = f"; {plural(found - 1, 'more problem')}: agentdbg show lists them" if found > 1 else ""
            why = f" ({first}{more})"
        return refuse(f"{args.file}: no runs in it{why}")
    if step is not None:
        from agentdbg.cli.render import wait_for_step
        from agentdbg.model.runs import Advancing

        run = document.runs[run_number - 1]
        wait_for_step(run, step)  # a step far into a large file may not be indexed yet
        if run.complete and not isinstance(run, Advancing) and step > run.step_count:
            document.close()
            which = f"run {run_number}" if count > 1 else "the run"
            return refuse(f"--step {step}: {which} of {args.file} has {plural(run.step_count, 'step')}")
    plan = getattr(args, "plan", None)
    if plan and not Path(plan).expanduser().is_file():
        document.close()
        return refuse(f"--plan {plan}: no such file")
    allow = {"allow_code": args.allow_code, "allow_network": getattr(args, "allow_network", False),
             "fork_plan": str(Path(plan).expanduser()) if plan else None, "confine": confine}
    other = getattr(args, "diff", None)
    if other:
        from agentdbg.diff import split_run

        # Refused here when it cannot be a file: inside, the split view says why it failed.
        if not Path(split_run(other)[0]).expanduser().exists():
            document.close()
            return refuse(f"--diff {other}: no such file")
        return DebuggerApp(document, run_index=run_number - 1, step=step, diff_with=(other, 0, True), **allow)
    return DebuggerApp(document, run_index=run_number - 1, step=step, **allow)


def _confinement(folder: str | None):
    """``--confine FOLDER`` (given by ``agentdbg serve``): None, the confinement, or exit 2."""
    if folder is None:
        return None
    from agentdbg.tui.confine import Confinement

    if not Path(folder).expanduser().is_dir():
        return refuse(f"--confine {folder}: not a folder")
    return Confinement.to(folder)


def run(args: argparse.Namespace) -> int:
    import os

    from agentdbg.cli.terminal import safe_std_streams

    if getattr(args, "confine", None) and args.file:  # (named before the debugger starts in the folder)
        args.file = os.path.abspath(os.path.expanduser(args.file))
    with safe_std_streams():  # the messages of unusable arguments; the app has its own screen
        app = build_app(args)
    if isinstance(app, int):
        return app
    if app.confine is not None:
        os.chdir(app.confine.root)  # a relative path typed into a dialog is in the folder served
    from agentdbg.tui.settings import Settings

    app.settings = Settings.load()  # the user's keymap and theme: problems are listed inside
    app.run()
    code = app.return_code or 0
    if code:  # the traceback is printed above by the app as it closes
        print(f"agentdbg: the debugger stopped on an internal error (exit status {code})", file=sys.stderr)
    return code
