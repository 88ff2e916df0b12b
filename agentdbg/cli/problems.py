"""How a headless command tells of trouble: problems found reading a file (as warnings on
stderr), a failure, a closed pipe."""

from __future__ import annotations

import os
import sys
from typing import TextIO

from agentdbg.cli.terminal import make_console as make_console
from agentdbg.cli.terminal import terminal_stream
from agentdbg.model.outcome import VERDICT_STYLES as VERDICT_STYLES
from agentdbg.text import one_line, shorten

MAX_PROBLEMS_SHOWN = 20


def print_problems(problems: list, path: str, command: str, file: TextIO | None = None) -> None:
    """Problems found reading ``path`` (a damaged line, an odd record), as warnings on stderr."""
    out = terminal_stream(file or sys.stderr)
    problems = list(problems)
    for problem in problems[:MAX_PROBLEMS_SHOWN]:
        print(f"agentdbg {command}: warning: {one_line(str(problem), 500)}", file=out)
    if len(problems) > MAX_PROBLEMS_SHOWN:
        print(f"agentdbg {command}: warning: {len(problems) - MAX_PROBLEMS_SHOWN} more problems in {one_line(path, 500)}",
              file=out)


def quiet_broken_pipe() -> None:
    """The reader went away (``agentdbg show big.jsonl | head``): stop writing, quietly."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def fail(command: str, message: str) -> int:
    # Lines stay lines (a list of the formats tried reads better so); control sequences go.
    print(f"agentdbg {command}: error: {shorten(message, 2000)}", file=terminal_stream(sys.stderr))
    return 2
