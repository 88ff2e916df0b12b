"""OpenTelemetry traces in binary OTLP protobuf (``.pb``, OTLP/HTTP bodies).

An ``ExportTraceServiceRequest`` or ``TracesData`` (the same bytes: field 1 is every
``ResourceSpans``), or the collector's file exporter's ``proto`` format (messages one
after another, each after its size as 4 big-endian bytes). The wire format is read here,
with no protobuf library: the trace schema is small and stable (TracesData → ResourceSpans
→ ScopeSpans → Span, attributes as KeyValue / AnyValue), and a damaged file keeps every
span before the damage. Each message becomes its OTLP/JSON form (hex ids, the standard
JSON mapping: a raw record shows the span as OTLP/JSON does), then is read exactly as
``otel-genai`` reads OTLP/JSON.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agentdbg.importers.base import ImportResult, NotImportable, Source
from agentdbg.importers.otel_genai import spans_from_exports
from agentdbg.importers.spans import convert_spans

NAME = "otlp-protobuf"
DESCRIPTION = "OpenTelemetry traces in binary OTLP protobuf (ExportTraceServiceRequest / TracesData)"
BINARY = True  # sniff and convert are given the file's bytes, not its text

_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5
_MAX_DEPTH = 32  # AnyValue arrays and maps nest; deeper is damage, not data


class WireError(ValueError):
    """The bytes are not a valid OTLP message from ``offset`` on; ``cut`` when they
    simply end too soon."""

    def __init__(self, offset: int, message: str, cut: bool = False):
        super().__init__(message)
        self.offset = offset
        self.cut = cut


def _varint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= end:
            raise WireError(pos, "cut short inside a number", cut=True)
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise WireError(pos, "a number longer than 10 bytes")


def _fields(data: bytes, pos: int, end: int) -> Iterator[tuple[int, int, Any, int]]:
    """(field number, wire type, value, offset) of each field in data[pos:end]; a
    length-delimited value is its (start, end)."""
    while pos < end:
        at = pos
        key = data[pos]
        if key < 0x80:  # one-byte keys and sizes are the common case: no call for them
            pos += 1
        else:
            key, pos = _varint(data, pos, end)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise WireError(at, "field number 0")
        if wire == _VARINT:
            value, pos = _varint(data, pos, end)
        elif wire == _I64 or wire == _I32:
            size = 8 if wire == _I64 else 4
            if pos + size > end:
                raise WireError(at, "cut short inside a fixed-size number", cut=True)
            value, pos = data[pos:pos + size], pos + size
        elif wire == _LEN:
            if pos < end and data[pos] < 0x80:
                size, pos = data[pos], pos + 1
            else:
                size, pos = _varint(data, pos, end)
            if pos + size > end:  # what is there is read first: the spans it holds are kept
                yield number, wire, (pos, end), at
                raise WireError(at, f"a field of {size} bytes where {end - pos} are left", cut=True)
            value, pos = (pos, pos + size), pos + size
        else:
            raise WireError(at, f"wire type {wire}, which OTLP does not use")
        yield number, wire, value, at


class _Decoder:
    """OTLP messages as their OTLP/JSON form. ``strict`` (for a sniff) refuses fields
    the schema does not have; otherwise they are skipped, as protobuf readers do."""

    def __init__(self, data: bytes, strict: bool = False):
        self.data = data
        self.strict = strict
        self.spans = 0
        self.bad_text_at: int | None = None

    def _expect(self, number: int, wire: int, wanted: dict[int, int], at: int, where: str) -> bool:
        """Whether the field is one the schema has, with the right wire type."""
        if number not in wanted:
            if self.strict:
                raise WireError(at, f"field {number} is not part of {where}")
            return False
        if wire != wanted[number]:
            raise WireError(at, f"field {number} of {where} has wire type {wire}, not {wanted[number]}")
        return True

    def _text(self, bounds: tuple[int, int]) -> str:
        raw = self.data[bounds[0]:bounds[1]]
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            if self.bad_text_at is None:
                self.bad_text_at = bounds[0]
            return raw.decode("utf-8", errors="replace")

    def _hex(self, bounds: tuple[int, int]) -> str:
        return self.data[bounds[0]:bounds[1]].hex()

    def request(self, start: int, end: int, into: list) -> None:
        """TracesData / ExportTraceServiceRequest: 1 = ResourceSpans."""
        for number, wire, value, at in _fields(self.data, start, end):
            if self._expect(number, wire, {1: _LEN}, at, "a trace export"):
                resource: dict = {"resource": {}, "scopeSpans": []}
                into.append(resource)  # kept as it fills: damage further on keeps the spans before it
                self.resource_spans(*value, resource)

    def resource_spans(self, start: int, end: int, out: dict) -> None:
        fields = {1: _LEN, 2: _LEN, 3: _LEN, 1000: _LEN}  # 1000: the older instrumentation_library_spans
        for number, wire, value, at in _fields(self.data, start, end):
            if not self._expect(number, wire, fields, at, "ResourceSpans"):
                continue
            if number == 1:
                out["resource"] = self.resource(*value)
            elif number == 3:
                out["schemaUrl"] = self._text(value)
            else:
                scope: dict = {"scope": {}, "spans": []}
                out["scopeSpans"].append(scope)
                self.scope_spans(*value, scope)

    def resource(self, start: int, end: int) -> dict:
        out: dict = {"attributes": []}
        for number, wire, value, at in _fields(self.data, start, end):
            if self._expect(number, wire, {1: _LEN, 2: _VARINT}, at, "Resource"):
                if number == 1:
                    out["attributes"].append(self.key_value(*value, 0))
                else:
                    out["droppedAttributesCount"] = value
        return out

    def scope_spans(self, start: int, end: int, out: dict) -> None:
        for number, wire, value, at in _fields(self.data, start, end):
            if not self._expect(number, wire, {1: _LEN, 2: _LEN, 3: _LEN}, at, "ScopeSpans"):
                continue
            if number == 1:
                out["scope"] = self.scope(*value)
            elif number == 3:
                out["schemaUrl"] = self._text(value)
            else:
                out["spans"].append(self.span(*value))
                self.spans += 1

    def scope(self, start: int, end: int) -> dict:
        out: dict = {}
        fields = {1: _LEN, 2: _LEN, 3: _LEN, 4: _VARINT}
        for number, wire, value, at in _fields(self.data, start, end):
            if self._expect(number, wire, fields, at, "InstrumentationScope"):
                if number in (1, 2):
                    out["name" if number == 1 else "version"] = self._text(value)
                elif number == 3:
                    out.setdefault("attributes", []).append(self.key_value(*value, 0))
                else:
                    out["droppedAttributesCount"] = value
        return out

    _SPAN_FIELDS = {1: _LEN, 2: _LEN, 3: _LEN, 4: _LEN, 5: _LEN, 6: _VARINT, 7: _I64, 8: _I64, 9: _LEN,
                    10: _VARINT, 11: _LEN, 12: _VARINT, 13: _LEN, 14: _VARINT, 15: _LEN, 16: _I32}

    def span(self, start: int, end: int) -> dict:
        out: dict = {"traceId": "", "spanId": "", "parentSpanId": "", "name": "", "kind": 0,
                     "startTimeUnixNano": "0", "endTimeUnixNano": "0", "attributes": [], "events": [],
                     "links": [], "status": {}}
        for number, wire, value, at in _fields(self.data, start, end):
            if not self._expect(number, wire, self._SPAN_FIELDS, at, "Span"):
                continue
            if number in (1, 2, 4):
                size = value[1] - value[0]
                if self.strict and size not in ((16,) if number == 1 else (8, 0) if number == 4 else (8,)):
                    raise WireError(at, f"an id of {size} bytes")
                out[{1: "traceId", 2: "spanId", 4: "parentSpanId"}[number]] = self._hex(value)
            elif number in (3, 5):
                out["traceState" if number == 3 else "name"] = self._text(value)
            elif number == 6:
                out["kind"] = value
            elif number in (7, 8):
                out["startTimeUnixNano" if number == 7 else "endTimeUnixNano"] = str(int.from_bytes(value, "little"))
            elif number == 9:
                out["attributes"].append(self.key_value(*value, 0))
            elif number == 11:
                out["events"].append(self.event(*value))
            elif number == 13:
                out["links"].append(self.link(*value))
            elif number == 15:
                out["status"] = self.status(*value)
            elif number == 16:
                out["flags"] = int.from_bytes(value, "little")
            else:
                out[{10: "droppedAttributesCount", 12: "droppedEventsCount", 14: "droppedLinksCount"}[number]] = value
        return out

    def event(self, start: int, end: int) -> dict:
        out: dict = {"timeUnixNano": "0", "name": "", "attributes": []}
        for number, wire, value, at in _fields(self.data, start, end):
            if self._expect(number, wire, {1: _I64, 2: _LEN, 3: _LEN, 4: _VARINT}, at, "Span.Event"):
                if number == 1:
                    out["timeUnixNano"] = str(int.from_bytes(value, "little"))
                elif number == 2:
                    out["name"] = self._text(value)
                elif number == 3:
                    out["attributes"].append(self.key_value(*value, 0))
                else:
                    out["droppedAttributesCount"] = value
        return out

    def link(self, start: int, end: int) -> dict:
        out: dict = {"traceId": "", "spanId": "", "attributes": []}
        fields = {1: _LEN, 2: _LEN, 3: _LEN, 4: _LEN, 5: _VARINT, 6: _I32}
        for number, wire, value, at in _fields(self.data, start, end):
            if self._expect(number, wire, fields, at, "Span.Link"):
                if number in (1, 2):
                    out["traceId" if number == 1 else "spanId"] = self._hex(value)
                elif number == 3:
                    out["traceState"] = self._text(value)
                elif number == 4:
                    out["attributes"].append(self.key_value(*value, 0))
                elif number == 5:
                    out["droppedAttributesCount"] = value
                else:
                    out["flags"] = int.from_bytes(value, "little")
        return out

    def status(self, start: int, end: int) -> dict:
        out: dict = {}
        for number, wire, value, at in _fields(self.data, start, end):
            if self._expect(number, wire, {1: _VARINT, 2: _LEN, 3: _VARINT}, at, "Status"):
                if number == 2:
                    out["message"] = self._text(value)
                elif number == 3:
                    out["code"] = value
        return out

    def key_value(self, start: int, end: int, depth: int) -> dict:
        out: dict = {"key": "", "value": {}}
        for number, wire, value, at in _fields(self.data, start, end):
            if self._expect(number, wire, {1: _LEN, 2: _LEN}, at, "KeyValue"):
                if number == 1:
                    out["key"] = self._text(value)
                else:
                    out["value"] = self.any_value(*value, depth)
        return out

    _VALUE_FIELDS = {1: _LEN, 2: _VARINT, 3: _VARINT, 4: _I64, 5: _LEN, 6: _LEN, 7: _LEN}

    def any_value(self, start: int, end: int, depth: int) -> dict:
        if depth > _MAX_DEPTH:
            raise WireError(start, f"values nested more than {_MAX_DEPTH} deep")
        out: dict = {}
        for number, wire, value, at in _fields(self.data, start, end):
            if not self._expect(number, wire, self._VALUE_FIELDS, at, "AnyValue"):
                continue
            if number == 1:
                out = {"stringValue": self._text(value)}
            elif number == 2:
                out = {"boolValue": bool(value)}
            elif number == 3:
                out = {"intValue": str(value - (1 << 64) if value >= 1 << 63 else value)}
            elif number == 4:
                out = {"doubleValue": struct.unpack("<d", value)[0]}
            elif number == 7:
                out = {"bytesValue": base64.b64encode(self.data[value[0]:value[1]]).decode("ascii")}
            else:
                items = []
                for inner, inner_wire, bounds, inner_at in _fields(self.data, *value):
                    if self._expect(inner, inner_wire, {1: _LEN}, inner_at, "ArrayValue / KeyValueList"):
                        items.append(self.any_value(*bounds, depth + 1) if number == 5
                                     else self.key_value(*bounds, depth + 1))
                out = {"arrayValue" if number == 5 else "kvlistValue": {"values": items}}
        return out


def _messages(data: bytes) -> list[tuple[int, int]]:
    """Where each message is: the whole file, or each frame of the file exporter's stream."""
    if data[:1] != b"\x00" or len(data) < 5:
        return [(0, len(data))]
    frames, pos = [], 0
    while pos + 4 <= len(data):
        size = int.from_bytes(data[pos:pos + 4], "big")
        frames.append((pos + 4, min(pos + 4 + size, len(data))))
        pos += 4 + size
    if pos < len(data):
        frames.append((pos, len(data)))  # a few bytes that cannot even hold a size: damage
    return frames


def _as_bytes(source: str | bytes | Path) -> bytes:
    if isinstance(source, Path):
        return source.read_bytes()
    if isinstance(source, str):
        return source.encode("utf-8", errors="surrogatepass")
    return source


def sniff(head: str | bytes, path: str = "") -> tuple[bool, str]:
    data = _as_bytes(head)
    if not data:
        return False, "empty"
    if data[:1] not in (b"\x0a", b"\x00"):
        return False, "not binary OTLP (an export starts with field 1, byte 0x0a)"
    decoder = _Decoder(data, strict=True)
    found: list = []
    try:
        for start, end in _messages(data):
            decoder.request(start, end, found)
    except WireError as exc:
        if not exc.cut:
            return False, f"not OTLP protobuf: {exc} at byte {exc.offset}"
    if decoder.spans or any(r["resource"] or r["scopeSpans"] for r in found):
        return True, "binary OTLP trace export (protobuf)"
    return False, "not OTLP protobuf: no resource or span in the first bytes"


def convert(source: str | bytes | Path, path: str | None = None) -> ImportResult:
    name = path or (str(source) if isinstance(source, Path) else "<bytes>")
    data = _as_bytes(source)
    src = Source("", name)
    decoder = _Decoder(data)
    exports: list[dict] = []
    for start, end in _messages(data):
        found: list = []
        exports.append({"resourceSpans": found})
        try:
            decoder.request(start, end, found)
        except WireError as exc:
            what = "cut short" if exc.cut else "not valid OTLP protobuf"
            src.problem(f"{what} at byte {exc.offset} ({exc}); kept the {decoder.spans} spans before it")
            if not exc.cut and not decoder.spans:
                raise NotImportable(f"{name}: not OTLP protobuf: {exc} at byte {exc.offset}") from None
            break
    if decoder.bad_text_at is not None:
        src.problem(f"text that is not valid UTF-8 at byte {decoder.bad_text_at} (and maybe after): "
                    "shown as U+FFFD")
    return convert_spans(src, spans_from_exports(exports))

