"""OpenTelemetry GenAI spans in OTLP/JSON (``resourceSpans[].scopeSpans[].spans[]``).

This module reads the encoding: attributes as ``{key, value: {stringValue | intValue |
...}}``, ids as hex (or base64, as protobuf's JSON printer writes them), times as
nanoseconds. What the spans mean is read by ``agentdbg.importers.spans``, shared with
the other span encodings. A JSON Lines file of OTLP exports (as the collector's file
exporter writes) is read as one export.
"""

from __future__ import annotations

import base64
import binascii
from pathlib import Path
from typing import Any

from agentdbg.importers.base import ImportResult, Source, as_source, text_of
from agentdbg.importers.jsondata import is_json_lines, load_json, load_json_lines
from agentdbg.importers.sniffing import outline
from agentdbg.importers.spans import Span, convert_spans

NAME = "otel-genai"
DESCRIPTION = "OpenTelemetry GenAI spans in OTLP/JSON (resourceSpans / scopeSpans / spans)"

_ERROR_STATUS = {2, "2", "STATUS_CODE_ERROR", "ERROR"}


def sniff(head: str, path: str = "") -> tuple[bool, str]:
    shape = outline(head)
    if not shape.root:
        return False, "not JSON"
    if shape.has("resourceSpans"):
        return True, "OTLP/JSON resourceSpans"
    return False, "no top-level 'resourceSpans'"


def any_value(value: Any) -> Any:
    """An OTLP/JSON AnyValue as a plain value (``intValue`` may be a string of digits)."""
    if not isinstance(value, dict):
        return value
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        try:
            return int(value["intValue"])
        except (TypeError, ValueError, OverflowError):
            return value["intValue"]
    if "doubleValue" in value:
        return value["doubleValue"]
    if "boolValue" in value:
        return value["boolValue"]
    if "arrayValue" in value:
        items = value["arrayValue"].get("values", []) if isinstance(value["arrayValue"], dict) else []
        return [any_value(item) for item in items]
    if "kvlistValue" in value:
        items = value["kvlistValue"].get("values", []) if isinstance(value["kvlistValue"], dict) else []
        return attributes(items)
    if "bytesValue" in value:
        return value["bytesValue"]
    return None


def attributes(items: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and isinstance(item.get("key"), str):
            out[item["key"]] = any_value(item.get("value"))
    return out


def _failed(code: Any) -> bool:
    return isinstance(code, (int, str)) and not isinstance(code, bool) and code in _ERROR_STATUS


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _nanos(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return 0


def _spans(src: Source) -> list[Span]:
    if is_json_lines(src.text):
        return spans_from_exports([record.value for record in load_json_lines(src)])
    return spans_from_exports([load_json(src)])


def spans_from_exports(exports: list) -> list[Span]:
    """The spans of OTLP exports in their JSON form (``{"resourceSpans": [...]}`` each)."""
    spans: list[Span] = []
    for export in exports:
        for resource in _list(export.get("resourceSpans")) if isinstance(export, dict) else []:
            if not isinstance(resource, dict):
                continue
            for scope in _list(resource.get("scopeSpans") or resource.get("instrumentationLibrarySpans")):
                for span in _list(scope.get("spans")) if isinstance(scope, dict) else []:
                    if not isinstance(span, dict):
                        continue
                    status = span.get("status") if isinstance(span.get("status"), dict) else {}
                    spans.append(Span(
                        span, _id(span.get("traceId"), 16), _id(span.get("spanId"), 8),
                        _id(span.get("parentSpanId"), 8), text_of(span.get("name")),
                        _nanos(span.get("startTimeUnixNano")), attributes(span.get("attributes")),
                        _failed(status.get("code")), text_of(status.get("message")), _events(span.get("events"))))
    return spans


def _id(value: Any, size: int) -> str:
    """A trace or span id as lowercase hex. OTLP/JSON writes hex; protobuf's JSON printer
    writes the bytes in base64, which is shorter than hex, so the length tells them apart."""
    text = text_of(value)
    if len(text) == 4 * ((size + 2) // 3):
        try:
            raw = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raw = b""
        if len(raw) == size:
            return raw.hex()
    return text.lower()


def _events(items: Any) -> list[dict]:
    return [{"name": text_of(item.get("name")), "attributes": attributes(item.get("attributes"))}
            for item in _list(items) if isinstance(item, dict)]


def convert(source: str | bytes | Path, path: str | None = None) -> ImportResult:
    src = as_source(source, path)
    return convert_spans(src, _spans(src))
