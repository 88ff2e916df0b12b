"""``agentdbg keys``: every key binding's id, its keys now and what it does, and the
problems of the user's keymap file (``keymap.toml``), so a remapping can be checked
without opening the debugger. Exit 0, or 1 when the keymap has an entry left out."""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--keymap", metavar="FILE",
                        help="read this keymap instead of $XDG_CONFIG_HOME/agentdbg/keymap.toml")


def run(args: argparse.Namespace) -> int:
    from agentdbg.cli import render

    try:
        return _list(args)
    except BrokenPipeError:  # `agentdbg keys | head`
        render.quiet_broken_pipe()
        return 0


def _list(args: argparse.Namespace) -> int:
    from pathlib import Path

    from agentdbg.text import one_line
    from agentdbg.tui.commands import key_name
    from agentdbg.tui.settings import KEYMAP_NAME, binding_catalogue, config_dir, read_keymap

    path = Path(args.keymap).expanduser() if args.keymap else config_dir() / KEYMAP_NAME
    keymap, problems = read_keymap(path)
    state = "remaps " + (f"{len(keymap)} binding{'s' if len(keymap) != 1 else ''}" if keymap else "nothing")
    print(f"keymap: {path} ({state if path.exists() else 'none: every key is the default'})")
    print()
    scope = None
    for info in binding_catalogue():
        if info.scope != scope:
            scope = info.scope
            print(f"{scope}:")
        keys = keymap.get(info.id, info.keys)
        mark = "*" if info.id in keymap else " "
        shown = " / ".join(key_name(key) for key in keys.split(","))
        print(f" {mark}{info.id:<26} {shown:<14} {one_line(info.help, 90)}")
    for problem in problems:
        print(f"agentdbg: {one_line(problem, 400)}", file=sys.stderr)
    return 1 if problems else 0
