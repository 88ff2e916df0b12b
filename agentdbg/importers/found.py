"""What a file holds, in one line: for the error given when a format read nothing from it.

``nothing_read`` words the refusal of a file that is not empty but gave no step ("x.json:
read as openai-chat but no message had a role; found keys: sessionId, projectHash,
messages (12 items with id, type, content)"), so the user sees at once what the file is
and which format it is not.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from agentdbg.text import one_line

_MAX_KEYS = 12
_MAX_ITEM_KEYS = 4
_MAX_LINES = 10_000  # a JSON Lines file is described from its first lines


def nothing_read(path: str, name: str, unread: str, text: str | bytes, runs: int = 0) -> str:
    why = unread or ("nothing in it became a step" if runs else "no runs in it")
    return f"{path}: read as {name} but {why}; found {describe(text)}"


def describe(text: str | bytes) -> str:
    """The shape of ``text``: a JSON value's keys (lists with their length and the keys
    their items share), JSON Lines' record kinds, or a text's first line (a binary
    format's input: its size)."""
    if isinstance(text, bytes):
        return f"{_count(len(text), 'byte')} of binary data"
    stripped = text.strip()
    if not stripped:
        return "nothing (the file is blank)"
    try:
        return _value(json.loads(stripped))
    except (ValueError, RecursionError):
        pass
    lines = [line for line in stripped.splitlines()[:_MAX_LINES] if line.strip()]
    records = []
    for line in lines:
        try:
            records.append(json.loads(line))
        except (ValueError, RecursionError):
            break
    if len(records) == len(lines) and len(records) > 1:
        return _lines(records)
    first = one_line(lines[0], 80) if lines else ""
    return f"{_count(len(stripped.splitlines()), 'line')} of text, the first: {first!r}"


def _value(value: Any) -> str:
    if isinstance(value, dict):
        return "keys: " + _keys(value) if value else "an empty JSON object"
    if isinstance(value, list):
        if not value:
            return "an empty JSON array"
        return f"a JSON array of {_items(value)}"
    return f"a JSON {type(value).__name__}"


def _keys(obj: dict) -> str:
    parts = []
    for key, item in list(obj.items())[:_MAX_KEYS]:
        label = one_line(str(key), 40)
        if isinstance(item, list):
            label += f" ({_items(item)})" if item else " (empty)"
        parts.append(label)
    if len(obj) > _MAX_KEYS:
        parts.append(f"… {len(obj) - _MAX_KEYS} more")
    return ", ".join(parts)


def _items(items: list) -> str:
    """'12 items with id, type, content': the keys every object item has."""
    count = _count(len(items), "item")
    objects = [item for item in items if isinstance(item, dict)]
    if not objects:
        kinds = sorted({type(item).__name__ for item in items})
        return f"{count}: {', '.join(kinds)}"
    shared = [k for k in objects[0] if all(k in o for o in objects)][:_MAX_ITEM_KEYS]
    if not shared:
        return f"{count}, objects with no key in common"
    return f"{count} with {', '.join(one_line(str(k), 40) for k in shared)}"


def _lines(records: list) -> str:
    kinds: Counter = Counter()
    for record in records:
        if isinstance(record, dict):
            kind = record.get("type")
            kinds[one_line(str(kind), 30) if isinstance(kind, str) else "{" + ", ".join(
                one_line(str(k), 20) for k in list(record)[:3]) + "}"] += 1
        else:
            kinds[f"a JSON {type(record).__name__}"] += 1
    listed = ", ".join(f"{kind} ×{n}" for kind, n in kinds.most_common(6))
    more = f", … {len(kinds) - 6} more kinds" if len(kinds) > 6 else ""
    return f"JSON Lines, {_count(len(records), 'record')}: {listed}{more}"


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")
