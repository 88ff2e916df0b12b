"""A tool with a real side effect, for the operation-key sample (``append_once.toml``):
it appends a line to a text file, which must not happen twice for the same entry.

Only a plan that says it runs Python code (``executes_code = true``), run with
``--allow-code``, can name it."""

from __future__ import annotations


def append_line(path: str, line: str) -> str:
    """Append one line to a text file."""
    with open(path, "a", encoding="utf-8") as file:
        file.write(line + "\n")
    return f"appended to {path}: {line}"
