"""The ``agentdbg`` command: the debugger by default, headless subcommands by name.

``agentdbg [FILE]`` opens the debugger (on a bundled demo when no file is given);
``agentdbg SUBCOMMAND ...`` runs one of SUBCOMMANDS without a screen. Each subcommand
lives in its own module with ``add_arguments(parser)`` and ``run(args) -> exit code``.
Exit codes: 0 ok, 1 a checked condition occurred (or a recording could not be written to
its end), 2 unusable input or arguments.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import sys

from agentdbg import __version__

SUBCOMMANDS = {
    "record": "run a plan headless and write its trace file",
    "show": "print a run's transcript, step by step",
    "check": "exit 1 when a run hits errors, repeats or budgets (for CI)",
    "diff": "compare two runs step by step: where they part and what differs (exit 1 when they do)",
    "stats": "steps, tools, errors, repeats, tokens and outcome per run",
    "rescore": "where other guards would have stopped recorded runs: steps saved, wrong runs caught, correct runs cut",
    "fork": "change a step's thought, action or observation and run the rest again: the fork, as a trace",
    "convert": "convert a run saved by another agent stack into an agentdbg trace, or runs into OTel spans / OpenAI messages",
    "export": "every step of every run as a table (--table: Parquet, CSV or JSON Lines) for DuckDB or Spark",
    "experiment": "run an experiment headless (grid: three agents on 200 random grids) and print its table",
    "keys": "list every key binding's id and keys, and check your keymap.toml",
    "serve": "serve the debugger to a web browser on this machine (needs agentdbg[web])",
}


def _subcommand_parser(name: str) -> tuple[argparse.ArgumentParser, object]:
    module = importlib.import_module(f"agentdbg.cli.{name}")
    parser = argparse.ArgumentParser(prog=f"agentdbg {name}", description=SUBCOMMANDS[name])
    module.add_arguments(parser)
    return parser, module


def _main_parser() -> argparse.ArgumentParser:
    lines = "\n".join(f"  {name:<9} {text}" for name, text in SUBCOMMANDS.items())
    parser = argparse.ArgumentParser(
        prog="agentdbg",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="A terminal debugger for AI-agent runs. Opens a plan (run live), an "
        "agentdbg trace, or a run saved by another agent stack; with no FILE, a bundled demo.",
        epilog=f"subcommands (agentdbg SUBCOMMAND --help for each):\n{lines}",
    )
    parser.add_argument("file", nargs="?", help="plan (.toml), trace (.jsonl) or saved run")
    parser.add_argument("--format", help="read FILE as this format instead of detecting it")
    parser.add_argument("--allow-code", action="store_true", help="allow a plan that runs Python code")
    parser.add_argument("--allow-network", action="store_true", help="allow a plan that calls a model over the network")
    parser.add_argument("--plan", metavar="PLAN",
                        help="the plan a fork (E) re-runs the runs with (default: the plan each run_start names)")
    parser.add_argument("--approve", choices=("always", "never"),
                        help="decide every call to a plan's dangerous tools in advance instead of asking each time")
    parser.add_argument("--run", type=int, default=1, metavar="N", help="open run N of a file with several (default 1)")
    parser.add_argument("--diff", metavar="OTHER", help="open the split view comparing the run with OTHER (a file; OTHER:N picks its run N)")
    parser.add_argument("--step", type=int, metavar="N", help="open at step N of the run (a plan is run that far)")
    # agentdbg serve's pages: the paths typed into the debugger stay in this folder (and start there).
    parser.add_argument("--confine", metavar="FOLDER", help=argparse.SUPPRESS)
    parser.add_argument("--version", action="version", version=f"agentdbg {__version__}")
    return parser


def _mistyped_subcommand(word: str) -> str | None:
    """The subcommand ``word`` is a typo of, when ``word`` is no file (``stat``: stats)."""
    if word.startswith("-") or os.sep in word or "." in word or os.path.lexists(word):
        return None
    close = difflib.get_close_matches(word.lower(), SUBCOMMANDS, n=1, cutoff=0.6)
    return close[0] if close else None


def main(argv: list[str] | None = None) -> int:
    from agentdbg.cli.terminal import safe_std_streams

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in SUBCOMMANDS:
        # Whatever a subcommand prints (argparse's messages too) passes the output boundary.
        with safe_std_streams():
            parser, module = _subcommand_parser(argv[0])
            args = parser.parse_args(argv[1:])
            from agentdbg.trace import workers

            workers.enable()  # (a big file's work is shared; the debugger's screen keeps it in one process)
            try:
                return module.run(args)
            except KeyboardInterrupt:
                return 130
    with safe_std_streams():
        mistyped = _mistyped_subcommand(argv[0]) if argv else None
        if mistyped:
            print(f"agentdbg: {argv[0]}: no such file; did you mean 'agentdbg {mistyped}'?", file=sys.stderr)
            return 2
        args = _main_parser().parse_args(argv)
    from agentdbg.cli import debug

    return debug.run(args)
