"""OpenTelemetry spans as the Python SDK writes them (not OTLP), and any-agent traces.

The SDK's ``ReadableSpan.to_json()``: one object per span, ``context.trace_id`` /
``span_id`` as ``0x`` hex, ``parent_id``, ``kind: "SpanKind.…"``, ISO start times,
``status.status_code``, attributes as plain JSON values, ``events``. ConsoleSpanExporter
prints them one after another (pretty-printed, not an array, in end order); Monocle's file
exporter writes them as a JSON array; JSON Lines works too.

any-agent's ``AgentTrace`` (``{"spans": [...], "final_output": ...}``): the same span
shape with ids as decimal integers, times as integer nanoseconds, ``parent`` as a context
object; ``final_output`` is the run's answer.

What the spans mean is read by ``agentdbg.importers.spans``, as for OTLP.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentdbg.importers.base import ImportResult, NotImportable, Source, as_source, text_of
from agentdbg.importers.jsondata import load_concatenated, load_json
from agentdbg.importers.sniffing import outline
from agentdbg.importers.spans import Span, convert_spans

NAME = "otel-sdk"
DESCRIPTION = ("OpenTelemetry spans as the Python SDK writes them (ConsoleSpanExporter, "
               "Monocle) and any-agent traces")

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def sniff(head: str, path: str = "") -> tuple[bool, str]:
    shape = outline(head)
    if not shape.root:
        return False, "not JSON"
    kinds = shape.strings("kind") | shape.strings("*", "kind")
    if any(kind.startswith("SpanKind.") for kind in kinds) and (
            shape.has("context", "span_id") or shape.has("*", "context", "span_id")):
        return True, "OpenTelemetry SDK span JSON ('kind': 'SpanKind.…', context.span_id)"
    if shape.has("spans") and shape.has("spans", "*", "context", "span_id"):
        return True, "an any-agent trace (spans with context.span_id)"
    return False, "no SDK spans ('kind': 'SpanKind.…') and no any-agent 'spans'"


def convert(source: str | bytes | Path, path: str | None = None) -> ImportResult:
    src = as_source(source, path)
    if src.text.lstrip()[:1] == "[":
        values = [(load_json(src), None)]
    else:
        try:
            values = [(json.loads(src.text), None)]
        except ValueError:
            values = [(record.value, record.line) for record in load_concatenated(src)]
    spans: list[Span] = []
    traces: list[dict] = []  # any-agent's
    for value, line in values:
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, dict) and isinstance(item.get("spans"), list):
                traces.append(item)
                spans.extend(_span(src, span, spans, line) for span in item["spans"])
            else:
                spans.append(_span(src, item, spans, line))
    if not spans:
        raise NotImportable(f"{src.path}: no spans in the file")
    if traces:
        return convert_spans(src, spans, "any-agent trace", answer=traces[-1].get("final_output"))
    return convert_spans(src, spans, "OpenTelemetry spans")


def _span(src: Source, item: Any, before: list[Span], line: int | None) -> Span:
    if not isinstance(item, dict) or not isinstance(item.get("context"), dict):
        src.problem("a value that is not a span (no 'context'); kept as a raw record", line)
        last = before[-1] if before else None
        return Span(item, last.trace if last else "", f"#{len(before)}", "", "", last.start if last else 0, {},
                    note="a value that is not a span")
    context = item["context"]
    parent = item.get("parent")
    parent_id = parent.get("span_id") if isinstance(parent, dict) else item.get("parent_id")
    status = item.get("status") if isinstance(item.get("status"), dict) else {}
    attrs = item.get("attributes") if isinstance(item.get("attributes"), dict) else {}
    return Span(item, _hex(context.get("trace_id"), 32), _hex(context.get("span_id"), 16),
                _hex(parent_id, 16), text_of(item.get("name")), _nanos(item.get("start_time")), attrs,
                text_of(status.get("status_code")).upper().removeprefix("STATUSCODE.") == "ERROR",
                text_of(status.get("description")), _events(item.get("events")))


def _hex(value: Any, width: int) -> str:
    """An id as lowercase hex: ``"0x5b8e…"`` (the SDK) or a decimal integer (any-agent)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return format(value, f"0{width}x") if value >= 0 else str(value)
    if isinstance(value, str):
        return value.lower().removeprefix("0x")
    return ""


def _nanos(value: Any) -> int:
    """A start time as nanoseconds: an integer, or an ISO 8601 string (UTC when it says
    no zone)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            return 0
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        delta = moment - _EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000
    return 0


def _events(items: Any) -> list[dict]:
    out = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict):
            attrs = item.get("attributes")
            out.append({"name": text_of(item.get("name")), "attributes": attrs if isinstance(attrs, dict) else {}})
    return out
