"""What a fuzz case is, and the helpers the case builders share."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# What the debugger is asked to do on a case: step, continue (breakpoints and filters run),
# jump to both ends, the problems list, quit.
TUI_KEYS = ("n", "c", "end", "home", "e", "escape", "q")
# Beside a breakpoints file: continue (its filters run), the breakpoint manager (its specs
# are shown), toggle a breakpoint (the file is saved), quit.
SIDECAR_KEYS = ("c", "n", "B", "escape", "b", "q")


@dataclass(frozen=True)
class Case:
    """One input, built on demand in an empty directory, and how to open it."""

    id: str  # unique, stable: category/what/how
    category: str  # trace-field, trace-event, import-field, import-text, damaged, special, sidecar, fixture, export, fork
    kind: str  # the input kind, for reports: "string=osc", "fifo", "truncated"...
    name: str  # the file every command is given (relative to the case directory)
    make: Callable[[Path], None]  # writes the input (and anything beside it) into the directory
    args: tuple[str, ...] = ()  # extra arguments for every command (--format NAME)
    blocking: bool = False  # opening may block (a FIFO): its commands run side by side
    unprivileged: bool = False  # needs a user without root's permissions to mean anything
    tui: bool = False  # always opened in the debugger too, not only when sampled
    slow: bool = False  # a big input: a longer time limit
    tui_keys: tuple[str, ...] = TUI_KEYS
    # More commands run on it after the headless ones (agentdbg arguments, "{file}" its file).
    commands: tuple[tuple[str, ...], ...] = ()
    # After every command and the debugger ran: "" or what went wrong (a file that must
    # not change, did; an output that holds what it must not).
    after: Callable[[Path], str] | None = field(default=None, compare=False)


def write_bytes(name: str, data: bytes) -> Callable[[Path], None]:
    def make(directory: Path) -> None:
        (directory / name).write_bytes(data)
    return make


def write_lines(name: str, lines: list[bytes]) -> Callable[[Path], None]:
    """``lines`` joined by newlines, the last one ended too (lines hold no newline)."""
    def make(directory: Path) -> None:
        with open(directory / name, "wb") as handle:
            for line in lines:
                handle.write(line)
                handle.write(b"\n")
    return make


def get_at(value: Any, path: tuple) -> Any:
    for key in path:
        value = value[key]
    return value


def set_at(value: Any, path: tuple, new: Any) -> None:
    get_at(value, path[:-1])[path[-1]] = new


def drop_at(value: Any, path: tuple) -> None:
    del get_at(value, path[:-1])[path[-1]]


def copy_json(value: Any) -> Any:
    return json.loads(json.dumps(value))


def walk(value: Any, path: tuple = (), shape: tuple = (), element_label=None):
    """Every field below ``value``: (concrete path, shape, value), depth first, in order.

    The shape names a field the way a reader of the format thinks of it: list items are
    ``[]`` (or ``[role=tool]``, via ``element_label``), and only each distinct shape's
    first occurrence matters to the caller."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _visit(item, path + (key,), shape + (str(key),), element_label)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            label = element_label(item) if element_label else "[]"
            yield from _visit(item, path + (index,), shape + (label,), element_label)


def _visit(item: Any, path: tuple, shape: tuple, element_label):
    yield path, shape, item
    yield from walk(item, path, shape, element_label)


def shape_text(shape: tuple) -> str:
    out = ""
    for part in shape:
        out += part if part.startswith("[") else f".{part}"
    return out.lstrip(".")
