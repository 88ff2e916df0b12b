"""JSON as exports write it. An export goes to an ``agentdbg.outputs.AtomicOutput`` (a
temporary file beside the output, renamed over it at the end, so the output never holds
half an export and an export that fails leaves the old file as it was).

Text goes out as it is made (the file is buffered, never the document), and every JSON
value passes ``escape_json``: what a terminal would obey (C1 controls, bidi overrides,
lone surrogates) is written as ``\\uXXXX`` escapes, so ``cat`` on an export is inert and
the JSON still decodes to exactly the same strings.
"""

from __future__ import annotations

import json
import math
from typing import Any

from agentdbg.text import escape_json


def to_json(value: Any) -> str:
    """Compact JSON, terminal-safe. A NaN or infinity (which a source's JSON may hold, and
    which JSON cannot) is written as text."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError:
        text = json.dumps(_finite(value), ensure_ascii=False, separators=(",", ":"))
    return escape_json(text)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value
