"""Hostile values by JSON type, and a JSON writer that can emit what ``json.dumps`` cannot.

Each table maps a short name (it goes into case ids) to the value that replaces a field of
that type. ``Raw`` values are written verbatim into the JSON text: numbers Python refuses to
print (5,000 digits), ``NaN``, and nesting too deep to build as Python objects.
"""

from __future__ import annotations

import json
import re
from typing import Any


class Raw(str):
    """JSON text written as is, in place of a value."""


def deep_list(depth: int) -> Raw:
    return Raw("[" * depth + "]" * depth)


def deep_dict(depth: int) -> Raw:
    return Raw('{"a":' * depth + "1" + "}" * depth)


OSC = "\x1b]52;c;cm0gLXJmIH4K\x07\x1b]2;pwned title\x07\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\"

# Text a trace or a saved run may carry, each aimed at the terminal or the renderer.
STRINGS: dict[str, Any] = {
    "osc": OSC,  # clipboard write, window title, hyperlink
    "csi": "\x1b[2J\x1b[H\x1b[31mRED\x1b[0m\x1b[?1049h\x1b[6n\x1b[10;5H",
    "dcs": "\x1bP+q544e\x1b\\ \x1b_apc\x1b\\ \x1b^pm\x1b\\ \x1bXsos\x1b\\ lone\x1b",
    "c1": "\x9b31mC1\x9d2;title\x9c \x90q\x9c \x85next",
    "c0": "bell\x07 back\x08space \rOVERWRITE \x0bvt\x0cff del\x7f",
    "nul": "before\x00\x00after",
    "bidi": "invoice\u202etxt.exe\u202c \u2067rtl\u2069 \u200fmark\u061c",
    "zero-width": "pay\u200bpal\u200c\u200d\u2060\ufeff",
    "surrogate": "lone \ud800 high, lone \udfff low",  # written as JSON \u escapes
    "surrogate-byte": "\udc9b31m raw byte",  # a stream with errors="surrogateescape" writes byte 0x9b
    "markup": "[red]MARKUP[/red] [link=https://evil.example]link[/link] [bold blink]x[/] [/] :smile:",
    "huge": "x" * 1_000_000,
    "many-lines": "line\n" * 100_000,
    "empty": "",
    "combining": "Z" + "\u0301\u0316" * 2_000 + " 界界 🙂",
}

# Every kind of hostile text at once (NUL, the raw byte and size apart: they change what a
# reader does with the rest).
STRINGS["hostile"] = "".join(STRINGS[name] for name in ("osc", "csi", "dcs", "c1", "c0", "bidi", "zero-width",
                                                         "surrogate", "markup", "combining"))

# For the importers' fields (thousands of them): the hostile text at once, and the values
# that change what a reader does; every string of a trace event is tried with all of STRINGS.
IMPORT_STRINGS = ("hostile", "nul", "surrogate-byte", "huge", "empty")

# A field of one type given a value of another.
NOT_STRINGS: dict[str, Any] = {"int": -1, "null": None, "bool": True, "list": ["x"], "dict": {"k": "v"}}

NUMBERS: dict[str, Any] = {
    "negative": -1,
    "zero": 0,
    "huge": 2**64,
    "digits-5000": Raw("9" * 5_000),  # Python's int() refuses more than 4,300 digits
    "float": 1.5,
    "float-huge": 1e308,
    "nan": Raw("NaN"),
    "infinity": Raw("Infinity"),
    "nan-string": "nan",
    "numeric-string": "12",
    "bool": True,
    "null": None,
    "list": [1],
    "dict": {"n": 1},
    "osc-string": OSC,
}

BOOLS: dict[str, Any] = {"zero": 0, "one": 1, "string": "true", "null": None, "list": [], "dict": {},
                         "osc-string": OSC}

NULLS: dict[str, Any] = {"osc-string": OSC, "int": 1, "bool": True, "list": ["x"], "dict": {"k": "v"},
                         "huge-string": "x" * 1_000_000}

LISTS: dict[str, Any] = {
    "empty": [],
    "string": "x",
    "int": 0,
    "null": None,
    "dict": {},
    "nested-500": deep_list(500),
    "nested-100000": deep_list(100_000),
    "items-100000": list(range(100_000)),
    "mixed": [OSC, None, -1, {}, [], True],
}

DICTS: dict[str, Any] = {
    "empty": {},
    "list": [],
    "string": "x",
    "int": 0,
    "null": None,
    "nested-500": deep_dict(500),
    "nested-100000": deep_dict(100_000),
    "hostile-key": {"\x1b]52;c;eA==\x07[red]k\u202e\ud800": "v"},
    "keys-100000": {f"k{i}": i for i in range(100_000)},
}


# The same for the importers' fields, fewer: what a reader of each field may trip on.
IMPORT_NOT_STRINGS = ("int", "null", "dict")
IMPORT_NUMBERS = ("negative", "huge", "digits-5000", "nan", "float", "numeric-string", "null", "osc-string")
IMPORT_BOOLS = ("zero", "string", "null", "osc-string")
IMPORT_NULLS = ("osc-string", "int", "list", "dict")
# (Nesting too deep for the JSON parser fails the same wherever it is: each fixture's whole
# document is replaced by one instead.)
IMPORT_LISTS = ("empty", "string", "null", "nested-500", "items-100000", "mixed")
IMPORT_DICTS = ("empty", "list", "null", "nested-500", "hostile-key", "keys-100000")

# Replacements big enough to need a longer time limit.
BIG = frozenset({"huge", "many-lines", "huge-string", "items-100000", "keys-100000", "nested-100000"})

DROP = object()  # not a value: the field is removed


def replacements(value: Any) -> dict[str, Any]:
    """The hostile replacements for a field that holds ``value``, by its JSON type."""
    if isinstance(value, bool):
        return BOOLS
    if isinstance(value, (int, float)):
        return NUMBERS
    if isinstance(value, str):
        return {name: text for name, text in STRINGS.items() if name != "hostile"} | NOT_STRINGS
    if isinstance(value, list):
        return LISTS
    if isinstance(value, dict):
        return DICTS
    return NULLS


def import_replacements(value: Any) -> dict[str, Any]:
    """The fewer replacements for a field of an importer format (IMPORT_*), by its JSON type."""
    def pick(table: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
        return {name: table[name] for name in names}

    if isinstance(value, bool):
        return pick(BOOLS, IMPORT_BOOLS)
    if isinstance(value, (int, float)):
        return pick(NUMBERS, IMPORT_NUMBERS)
    if isinstance(value, str):
        return pick(STRINGS, IMPORT_STRINGS) | pick(NOT_STRINGS, IMPORT_NOT_STRINGS)
    if isinstance(value, list):
        return pick(LISTS, IMPORT_LISTS)
    if isinstance(value, dict):
        return pick(DICTS, IMPORT_DICTS)
    return pick(NULLS, IMPORT_NULLS)


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "list" if isinstance(value, list) else "dict" if isinstance(value, dict) else type(value).__name__


_SURROGATE = re.compile("[\ud800-\udfff]")


def dumps(value: Any, *, compact: bool = True) -> str:
    """``value`` as JSON text: non-ASCII kept as is, lone surrogates as ``\\u`` escapes (the
    only way JSON can carry them), ``Raw`` parts written verbatim."""
    raws: list[str] = []

    def swap(item: Any) -> Any:
        if isinstance(item, Raw):
            raws.append(str(item))
            return f"\x00RAW{len(raws) - 1}\x00"
        if isinstance(item, dict):
            return {key: swap(v) for key, v in item.items()}
        if isinstance(item, list):
            return [swap(v) for v in item]
        return item

    separators = (",", ":") if compact else (", ", ": ")
    text = json.dumps(swap(value), ensure_ascii=False, separators=separators)
    text = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    for number, raw in enumerate(raws):
        text = text.replace(f'"\\u0000RAW{number}\\u0000"', raw, 1)
    return text
