"""``agentdbg [FILE]``: open the debugger on a plan, a trace or a saved run (or the demo).

A file that cannot be opened does not end the program: the debugger starts, shows why,
and lets the user open another (o). Unusable arguments exit 2 with a message.
"""

from __future__ import annotations

import argparse
import sys


def run(args: argparse.Namespace) -> int:
    from agentdbg.tui.app import DebuggerApp
    from agentdbg.tui.opening import open_demo, open_for_app

    if args.run is not None and args.run < 1:
        print(f"agentdbg: --run must be 1 or more, got {args.run}", file=sys.stderr)
        return 2
    error = ""
    document = None
    if args.file:
        document, _, error = open_for_app(args.file, format=args.format, allow_code=args.allow_code)
    else:
        if args.format:
            print("agentdbg: --format needs a FILE", file=sys.stderr)
            return 2
        document = open_demo()
    run_index = (args.run or 1) - 1
    if document is not None and document.runs and document.runs[-1:] and run_index >= len(document.runs) \
            and all(getattr(run, "complete", True) for run in document.runs):
        count = len(document.runs)
        print(f"agentdbg: --run {args.run}: {args.file} holds {count} run{'s' if count != 1 else ''}",
              file=sys.stderr)
        document.close()
        return 2
    app = DebuggerApp(document, run_index=run_index, error=error or None)
    app.run()
    return 0
