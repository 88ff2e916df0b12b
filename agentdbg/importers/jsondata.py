"""Reading JSON and JSON Lines inputs so that a damaged file still gives its valid part."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from agentdbg.importers.base import NotImportable, Source

_DECODER = json.JSONDecoder()


@dataclass
class Record:
    """One top-level JSON value and the line it starts on (1-based)."""

    value: Any
    line: int


def json_lines(text: str) -> list[str]:
    """The lines of JSON Lines text: ended by a newline (CRLF too) only, as JSON Lines
    are; a U+2028 or a form feed inside a record (JavaScript writes them raw) ends nothing."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def is_json_lines(text: str) -> bool:
    """More than one top-level value, one per line."""
    lines = [line for line in json_lines(text) if line.strip()]
    if len(lines) < 2:
        return False
    try:
        json.loads(lines[0])
    except ValueError:
        return False
    return lines[1].lstrip()[:1] in ("{", "[")


def load_json_lines(src: Source) -> list[Record]:
    """Every line that parses; each one that does not is reported with its line number."""
    records: list[Record] = []
    for number, line in enumerate(json_lines(src.text), 1):
        if not line.strip():
            continue
        try:
            records.append(Record(json.loads(line), number))
        except ValueError as exc:
            src.problem(f"not valid JSON ({reason(exc)}); line skipped", number)
    return records


def load_json(src: Source) -> Any:
    """The document; a top-level array cut short or damaged keeps the items before the
    damage (reported). Anything else that does not parse is NotImportable."""
    try:
        return json.loads(src.text)
    except ValueError as exc:
        error = exc
    start = len(src.text) - len(src.text.lstrip())
    if src.text[start:start + 1] == "[":
        items, stop = _array_prefix(src.text, start + 1)
        line = src.text.count("\n", 0, stop) + 1
        src.problem(f"not valid JSON from here ({reason(error)}); kept the {len(items)} "
                    "items before it", line)
        return items
    raise NotImportable(f"{src.path}:{getattr(error, 'lineno', '?')}: not valid JSON: {reason(error)}")


def _array_prefix(text: str, pos: int) -> tuple[list, int]:
    items: list = []
    while True:
        pos = _skip(text, pos)
        try:
            value, end = _DECODER.raw_decode(text, pos)
        except ValueError:
            return items, pos
        items.append(value)
        pos = _skip(text, end)
        if text[pos:pos + 1] == ",":
            pos += 1
        else:
            return items, pos


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def reason(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at line {exc.lineno}, column {exc.colno}"
    return str(exc)


def parse_arguments(raw: Any) -> tuple[dict | str | None, str | None]:
    """Tool-call arguments as recorded (a JSON string, or already an object) ->
    (args, None), or (None, why they cannot be read)."""
    if isinstance(raw, dict):
        return raw, None
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}, None
    if not isinstance(raw, str):
        return None, f"arguments should be a JSON object, got {type(raw).__name__}"
    try:
        value = json.loads(raw)
    except ValueError as exc:
        return None, f"arguments are not valid JSON: {reason(exc)}"
    if not isinstance(value, dict):
        return None, f"arguments should be a JSON object, got {type(value).__name__}"
    return value, None


def load_concatenated(src: Source) -> list[Record]:
    """JSON values one after another (pretty-printed objects, as OpenTelemetry's
    ConsoleSpanExporter prints them, or JSON Lines). A value that does not parse is
    reported with its line and skipped up to the next line that opens an object."""
    text = src.text
    records: list[Record] = []
    line, counted = 1, 0  # line numbers counted as we go: one pass over the text

    def line_at(pos: int) -> int:
        nonlocal line, counted
        line += text.count("\n", counted, pos)
        counted = pos
        return line

    pos = _skip(text, 0)
    while pos < len(text):
        try:
            value, end = _DECODER.raw_decode(text, pos)
        except (ValueError, RecursionError) as exc:  # nested past what can be read: damage too
            resume = text.find("\n{", pos + 1)
            src.problem(f"not valid JSON ({reason(exc)}); skipped "
                        + ("to the next object" if resume >= 0 else "the rest of the file"), line_at(pos))
            if resume < 0:
                break
            pos = resume + 1
            continue
        records.append(Record(value, line_at(pos)))
        pos = _skip(text, end)
    return records
