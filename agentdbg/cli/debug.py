"""``agentdbg [FILE]``: open the debugger on a plan, a trace or a saved run (or the demo).

A file that cannot be opened does not end the program: the debugger starts, shows why,
and lets the user open another (o). Unusable arguments exit 2 with a message.
"""

from __future__ import annotations

import argparse
import sys

from agentdbg.text import one_line


def build_app(args: argparse.Namespace):
    """The app to run, or an exit code (with a message on stderr) for unusable arguments."""
    from agentdbg.tui.app import DebuggerApp
    from agentdbg.tui.opening import open_demo, open_for_app

    run_number = getattr(args, "run", None)
    run_number = 1 if run_number is None else run_number
    if run_number < 1:
        print(f"agentdbg: --run must be 1 or more, got {run_number}", file=sys.stderr)
        return 2
    if not args.file:
        if args.format:
            print("agentdbg: --format needs a FILE", file=sys.stderr)
            return 2
        return DebuggerApp(open_demo(), run_index=run_number - 1, save_breakpoints=False)
    if args.format and args.format not in ("plan", "trace"):
        from agentdbg import importers

        if args.format not in importers.BY_NAME:
            names = ", ".join(["plan", "trace", *importers.BY_NAME])
            print(f"agentdbg: unknown --format {args.format!r}; formats: {names}", file=sys.stderr)
            return 2
    document, _, error = open_for_app(args.file, format=args.format, allow_code=args.allow_code,
                                      allow_network=getattr(args, "allow_network", False))
    if document is not None:
        from agentdbg.cli.render import wait_for_runs

        wait_for_runs(document, run_number)  # run N of a large file may lie beyond what is indexed yet
    if document is not None and document.runs and run_number > len(document.runs):
        count = len(document.runs)
        print(f"agentdbg: --run {run_number}: {one_line(args.file)} holds {count} run{'s' if count != 1 else ''}",
              file=sys.stderr)
        document.close()
        return 2
    return DebuggerApp(document, run_index=run_number - 1, error=error or None)


def run(args: argparse.Namespace) -> int:
    from agentdbg.cli.terminal import safe_std_streams

    with safe_std_streams():  # the messages of unusable arguments; the app has its own screen
        app = build_app(args)
    if isinstance(app, int):
        return app
    app.run()
    return 0
