"""Read trace files: indexed in the background, steps read by offset, never loaded whole."""

from __future__ import annotations

import json
from pathlib import Path

from agentdbg.trace import format as fmt

SNIFF_BYTES = 64 * 1024
_BOM = b"\xef\xbb\xbf"


def sniff(path: str | Path) -> bool:
    """True when ``path`` looks like an agentdbg trace (its first line is the header, or
    an agentdbg ``run_start`` event). Reads at most the first 64 KiB."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(SNIFF_BYTES)
    except OSError:
        return False
    return _head_kind(head) is not None


def _head_kind(head: bytes) -> str | None:
    """``"header"``, ``"headerless"`` (events without a header line) or None."""
    if head.startswith(_BOM):
        head = head[len(_BOM):]
    if head.startswith(fmt.HEADER_PREFIX):
        return "header"
    if head.startswith(fmt.RUN_START_PREFIX):
        return "headerless"
    first = head.split(b"\n", 1)[0].strip()
    if not first.startswith(b"{"):
        return None
    try:
        data = json.loads(first)
    except ValueError:
        return None
    if isinstance(data, dict) and data.get("format") == fmt.FORMAT_NAME:
        return "header"
    return None
