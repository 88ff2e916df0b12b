"""Tools with real side effects for the operation-key tests (no tests here): they append
to a file, and one of them kills the process right after, as a crash would."""

from __future__ import annotations

import os


def append_line(path: str, line: str) -> str:
    """Append one line to a text file."""
    with open(path, "a", encoding="utf-8") as file:
        file.write(line + "\n")
    return f"appended to {path}: {line}"


def append_then_crash(path: str, line: str) -> str:
    """Append one line, then die before anything can record that it happened."""
    append_line(path, line)
    os._exit(3)
