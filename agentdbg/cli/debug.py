"""``agentdbg [FILE]``: open the debugger."""

from __future__ import annotations

import argparse
import sys


def run(args: argparse.Namespace) -> int:
    print("agentdbg: the debugger screen is not built yet", file=sys.stderr)
    return 2
