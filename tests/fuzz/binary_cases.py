"""The binary importer formats: binary OTLP (protobuf) and Inspect AI's zipped ``.eval``
logs. Their text is mutated as in the JSON formats (hostile strings in every field,
fields dropped), then written in the binary form; and their framing is damaged: protobuf
wire errors, nesting, huge sizes; zip archives cut, bombs, too many members, odd methods,
encrypted, nested.

The protobuf cases start from the OTLP/JSON twins of the binary fixtures
(tests/fixtures/import/otel-genai, see tests/fixtures/otlp_protobuf_twins.py), encoded
here with the few OTLP messages the importer reads.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import struct
import warnings
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

from fuzz import values
from fuzz.cases import Case, copy_json, drop_at, set_at, shape_text, walk, write_bytes
from fuzz.import_cases import EXECUTED, FIXTURES, element_label, executed, fixtures, shape_key

OTLP = "otlp-protobuf"
INSPECT = "inspect-ai"
TWINS = FIXTURES / "otel-genai"

# -- a small OTLP protobuf writer ------------------------------------------------------------

_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5
# message name -> JSON key -> (field number, kind); kind is a message name or a scalar kind.
SCHEMA: dict[str, dict[str, tuple[int, str]]] = {
    "request": {"resourceSpans": (1, "resource_spans")},
    "resource_spans": {"resource": (1, "resource"), "scopeSpans": (2, "scope_spans"), "schemaUrl": (3, "string")},
    "resource": {"attributes": (1, "key_value"), "droppedAttributesCount": (2, "uint")},
    "scope_spans": {"scope": (1, "scope"), "spans": (2, "span"), "schemaUrl": (3, "string")},
    "scope": {"name": (1, "string"), "version": (2, "string"), "attributes": (3, "key_value")},
    "span": {"traceId": (1, "id16"), "spanId": (2, "id8"), "traceState": (3, "string"), "parentSpanId": (4, "id8"),
             "name": (5, "string"), "kind": (6, "uint"), "startTimeUnixNano": (7, "fixed64"),
             "endTimeUnixNano": (8, "fixed64"), "attributes": (9, "key_value"), "events": (11, "event"),
             "links": (13, "link"), "status": (15, "status")},
    "event": {"timeUnixNano": (1, "fixed64"), "name": (2, "string"), "attributes": (3, "key_value")},
    "link": {"traceId": (1, "id16"), "spanId": (2, "id8"), "traceState": (3, "string"), "attributes": (4, "key_value")},
    "status": {"message": (2, "string"), "code": (3, "uint")},
    "key_value": {"key": (1, "string"), "value": (2, "any_value")},
    "any_value": {"stringValue": (1, "string"), "boolValue": (2, "bool"), "intValue": (3, "int"),
                  "doubleValue": (4, "double"), "arrayValue": (5, "array"), "kvlistValue": (6, "kvlist"),
                  "bytesValue": (7, "bytes")},
    "array": {"values": (1, "any_value")},
    "kvlist": {"values": (1, "key_value")},
}


def varint(number: int) -> bytes:
    number &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte, number = number & 0x7F, number >> 7
        if number:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field(number: int, wire: int, payload: bytes | int) -> bytes:
    key = varint(number << 3 | wire)
    if wire == _VARINT:
        return key + varint(int(payload))
    if wire == _LEN:
        return key + varint(len(payload)) + payload
    return key + payload


def _id(text: str, size: int) -> bytes:
    try:
        raw = bytes.fromhex(text)
        if len(raw) == size:
            return raw
    except ValueError:
        pass
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:size]


def _number(value, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return default


def encode(value, message: str = "request") -> bytes:
    """``value`` (OTLP/JSON) as protobuf; keys the schema lacks, and values of the wrong
    type for their field, are left out (a string field takes any string, hostile or not:
    lone surrogates are written as the bytes Python's surrogatepass gives, not UTF-8)."""
    if not isinstance(value, dict):
        return b""
    out = bytearray()
    for key, item in value.items():
        if key not in SCHEMA[message]:
            continue
        number, kind = SCHEMA[message][key]
        for element in (item if isinstance(item, list) and kind in SCHEMA else [item]):
            out += _encode_field(number, kind, element)
    return bytes(out)


def _encode_field(number: int, kind: str, item) -> bytes:
    if kind in SCHEMA:
        return field(number, _LEN, encode(item, kind)) if isinstance(item, dict) else b""
    if kind == "string":
        return field(number, _LEN, item.encode("utf-8", "surrogatepass")) if isinstance(item, str) else b""
    if kind in ("id16", "id8"):
        return field(number, _LEN, _id(item, 16 if kind == "id16" else 8)) if isinstance(item, str) and item else b""
    if kind == "bytes":
        return field(number, _LEN, base64.b64decode(item + "==")) if isinstance(item, str) else b""
    if kind in ("uint", "int", "bool"):
        return field(number, _VARINT, _number(item)) if not isinstance(item, (list, dict)) else b""
    if kind == "fixed64":
        return field(number, _I64, struct.pack("<Q", _number(item) & ((1 << 64) - 1)))
    if kind == "double":
        try:
            return field(number, _I64, struct.pack("<d", float(item)))
        except (TypeError, ValueError, OverflowError):
            return b""
    raise ValueError(kind)


def _twins() -> list[tuple[str, list]]:
    """(binary fixture name, its twin's export documents) for each binary fixture with a twin."""
    out = []
    for path in fixtures(OTLP):
        for suffix in (".json", ".jsonl"):
            twin = TWINS / (path.stem + suffix)
            if path.suffix == ".pb" and twin.is_file():
                text = twin.read_text(encoding="utf-8")
                docs = [json.loads(line) for line in text.splitlines() if line.strip()] if suffix == ".jsonl" \
                    else [json.loads(text)]
                out.append((path.name, docs))
    return out


def _stream(messages: list[bytes], framed: bool) -> bytes:
    """One export, or the collector's file exporter stream (each export after its size)."""
    if not framed:
        return messages[0]
    return b"".join(len(m).to_bytes(4, "big") + m for m in messages)


def _protobuf_with(name: str, docs: list, index: int, where: tuple, new) -> Callable[[Path], None]:
    def make(directory: Path) -> None:
        mutated = copy_json(docs)
        if new is values.DROP:
            drop_at(mutated[index], where)
        else:
            set_at(mutated[index], where, new)
        (directory / name).write_bytes(_stream([encode(doc) for doc in mutated], len(docs) > 1))
    return make


def protobuf_field_cases() -> list[Case]:
    """Each string field of the OTLP twins given each hostile string, and each field dropped."""
    cases: list[Case] = []
    seen: set = set()
    for name, docs in _twins():
        for index, doc in enumerate(docs):
            for where, shape, value in walk(doc, element_label=element_label):
                key = shape_key(shape), values.json_type(value)
                if key in seen:
                    continue
                seen.add(key)
                label = f"import-field/{OTLP}/{shape_text(key[0])}({key[1]})"
                mutations = {name_: values.STRINGS[name_] for name_ in values.IMPORT_STRINGS} \
                    if isinstance(value, str) else {}
                mutations["dropped"] = values.DROP
                for mutation, new in mutations.items():
                    kind = "dropped" if new is values.DROP else f"string={mutation}"
                    cases.append(Case(f"{label}={mutation}", "import-field", kind, name,
                                      _protobuf_with(name, docs, index, where, new), args=("--format", OTLP),
                                      slow=mutation in values.BIG))
    return cases


def _span_with(attribute: bytes = b"", name: bytes = b"chat", extra: bytes = b"") -> bytes:
    span = (field(1, _LEN, b"\x01" * 16) + field(2, _LEN, b"\x02" * 8) + field(5, _LEN, name)
            + field(7, _I64, struct.pack("<Q", 1)) + field(8, _I64, struct.pack("<Q", 2)) + attribute + extra)
    return field(1, _LEN, field(2, _LEN, field(2, _LEN, span)))


def _attribute(key: bytes, value: bytes) -> bytes:
    return field(9, _LEN, field(1, _LEN, key) + field(2, _LEN, value))


def _deep_any_value(depth: int) -> bytes:
    value = field(1, _LEN, b"leaf")
    for _ in range(depth):
        value = field(5, _LEN, field(1, _LEN, value))  # an array holding the value
    return value


def protobuf_damage_cases() -> list[Case]:
    """Wire damage in a valid export: what a cut, a bit flip or a hostile writer leaves."""
    base = (fixtures(OTLP)[0]).read_bytes() if fixtures(OTLP) else b""
    operation = _attribute(b"gen_ai.operation.name", field(1, _LEN, b"chat"))
    variants: dict[str, bytes | Callable[[], bytes]] = {
        "varint-11-bytes": base + b"\x08" + b"\xff" * 10 + b"\x01",
        "key-varint-endless": base + b"\xff" * 64,
        "length-past-end": base + field(1, _LEN, b"")[:1] + varint(1 << 40),
        "length-2^64": base + b"\x0a" + b"\xff" * 9 + b"\x01",
        "field-number-0": b"\x02\x00" + base,
        "wire-type-group": base + b"\x0b\x0c",
        "wire-type-6": base + b"\x0e",
        "wrong-wire-type": b"\x08\x01" + base,
        "invalid-utf8-name": _span_with(operation, name=b"ch\xff\xfe\x9bat"),
        "surrogate-bytes": _span_with(operation, name="\ud800x".encode("utf-8", "surrogatepass")),
        "nested-33": _span_with(_attribute(b"deep", _deep_any_value(33))),
        "nested-3000": lambda: _span_with(_attribute(b"deep", _deep_any_value(3000))),
        "unknown-fields": _span_with(operation, extra=field(99, _LEN, b"x" * 1000) + field(98, _VARINT, 7)),
        "string-50mb": lambda: _span_with(_attribute(b"gen_ai.completion", field(1, _LEN, b"x" * (50 << 20)))),
        "spans-100000": lambda: field(1, _LEN, field(2, _LEN, b"".join(
            field(2, _LEN, field(1, _LEN, b"\x01" * 16) + field(2, _LEN, i.to_bytes(8, "big")) + field(5, _LEN, b"s"))
            for i in range(100_000)))),
        "attributes-100000": lambda: _span_with(b"".join(_attribute(b"k%d" % i, field(1, _LEN, b"v"))
                                                         for i in range(100_000))),
        "stream-size-huge": b"\xff\xff\xff\xff" + base,
        "stream-size-zero": b"\x00\x00\x00\x00" + (len(base).to_bytes(4, "big") + base),
        "stream-cut": len(base).to_bytes(4, "big") + base + (len(base) + 10).to_bytes(4, "big") + base,
        "zeros-1mb": b"\x00" * 1_000_000,
        "one-byte": b"\x0a",
    }
    cases = []
    for how, data in variants.items():
        slow = callable(data)
        make = (lambda directory, data=data: (directory / "trace.pb").write_bytes(data())) if callable(data) \
            else write_bytes("trace.pb", data)
        for forced in (True, False):
            suffix = "" if forced else "/detected"
            cases.append(Case(f"damaged/otlp-protobuf/{how}{suffix}", "damaged", f"protobuf-{how}", "trace.pb", make,
                              args=("--format", OTLP) if forced else (), slow=slow))
    return cases


# -- Inspect AI's zipped logs -----------------------------------------------------------------


def _zip(members: list[tuple[str | zipfile.ZipInfo, bytes]], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # duplicate names, on purpose
        for name, data in members:
            archive.writestr(name, data)
    return buffer.getvalue()


def _members(path: Path) -> list[tuple[str, bytes]]:
    with zipfile.ZipFile(path) as archive:
        return [(info.filename, archive.read(info)) for info in archive.infolist()]


def _eval_with(path: Path, members: list, member: str, where: tuple, new) -> Callable[[Path], None]:
    def make(directory: Path) -> None:
        out = []
        for name, data in members:
            if name == member:
                document = json.loads(data)
                if new is values.DROP:
                    drop_at(document, where)
                elif where:
                    set_at(document, where, new)
                else:
                    document = new
                data = values.dumps(document).encode("utf-8", "surrogatepass")
            out.append((name, data))
        (directory / path.name).write_bytes(_zip(out))
    return make


def _log_shapes() -> set:
    """The shapes the ``.json`` logs' field cases already mutate, as keys of zip_field_cases."""
    seen: set = set()
    for path in fixtures(INSPECT):
        if path.suffix == ".json":
            for _, shape, value in walk(json.loads(path.read_bytes()), element_label=element_label):
                seen.add((shape_key(shape), values.json_type(value)))
    return seen


def _as_log_shape(member: str, shape: tuple) -> tuple:
    """A member's field as the same field of a ``.json`` log: a sample member is one item
    of the log's ``samples``; the header (or the journal's start) is the log itself."""
    if member.startswith("samples/"):
        return ("samples", "[]") + shape
    if member in ("header.json", "_journal/start.json"):
        return shape
    return (member,) + shape


def zip_field_cases() -> list[Case]:
    """Every field of every JSON member of the zipped logs, by type (those a ``.json`` log
    does not hold too: its own cases mutate them), and each member's whole document replaced."""
    cases: list[Case] = []
    seen: set = _log_shapes()
    for path in fixtures(INSPECT):
        if path.suffix != ".eval":
            continue
        members = _members(path)
        for member, data in members:
            try:
                document = json.loads(data)
            except ValueError:
                continue
            group = member.split("/")[0] if "/" in member else member
            for where, shape, value in walk(document, element_label=element_label):
                key = shape_key(_as_log_shape(member, shape)), values.json_type(value)
                if key in seen:
                    continue
                seen.add(key)
                label = f"import-field/{INSPECT}/{group}:{shape_text(shape_key(shape))}({key[1]})"
                mutations = {**values.import_replacements(value), "dropped": values.DROP}
                for mutation, new in mutations.items():
                    kind = "dropped" if new is values.DROP else f"{key[1]}={mutation}"
                    cases.append(Case(f"{label}={mutation}", "import-field", kind, path.name,
                                      _eval_with(path, members, member, where, new), args=("--format", INSPECT),
                                      slow=mutation in values.BIG))
            if ("root", group) not in seen:
                seen.add(("root", group))
                for how, root in (("nested-100000", values.deep_list(100_000)), ("empty-object", {}),
                                  ("string", "text")):
                    cases.append(Case(f"import-field/{INSPECT}/{group}(root)={how}", "import-field", f"root={how}",
                                      path.name, _eval_with(path, members, member, (), root),
                                      args=("--format", INSPECT)))
    return cases


def _local_header_method(data: bytes, method: int, flags: int = 0) -> bytes:
    """The archive with every member's compression method (and flags) changed in both headers."""
    out = bytearray(data)
    for signature, method_at, flags_at in ((b"PK\x03\x04", 8, 6), (b"PK\x01\x02", 10, 8)):
        start = 0
        while (start := out.find(signature, start)) != -1:
            struct.pack_into("<H", out, start + method_at, method)
            struct.pack_into("<H", out, start + flags_at, struct.unpack_from("<H", out, start + flags_at)[0] | flags)
            start += 4
    return bytes(out)


def _declared_sizes(data: bytes, size: int) -> bytes:
    """Every member's uncompressed size, in both headers, claimed to be ``size``."""
    out = bytearray(data)
    for signature, at in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        start = 0
        while (start := out.find(signature, start)) != -1:
            struct.pack_into("<I", out, start + at, size)
            start += 4
    return bytes(out)


def _bomb(members: list) -> bytes:
    """The log with a sample that inflates to 2 GiB of spaces (a few MB in the archive)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    chunk = b" " * (1 << 20)
    body = b"".join(compressor.compress(chunk) for _ in range(2048)) + compressor.flush()
    crc = 0
    for _ in range(2048):
        crc = zlib.crc32(chunk, crc)
    name = b"samples/9_epoch_1.json"
    local = struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, 8, 0, 0, crc, len(body), 0x7FFFFFFF, len(name), 0)
    head = _zip(members)
    cut = head.index(b"PK\x01\x02")  # the first central header: the bomb goes before the directory
    directory = head[cut: head.index(b"PK\x05\x06")]
    offset = cut
    central = struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, 8, 0, 0, crc, len(body), 0x7FFFFFFF,
                          len(name), 0, 0, 0, 0, 0, offset) + name
    entries = directory + central
    count = len(members) + 1
    end = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, count, count, len(entries), cut + len(local) + len(name)
                      + len(body), 0)
    return head[:cut] + local + name + body + entries + end


def zip_damage_cases() -> list[Case]:
    evals = [path for path in fixtures(INSPECT) if path.suffix == ".eval"]
    if not evals:
        return []
    path = evals[0]
    raw = path.read_bytes()
    members = _members(path)
    sample = next((data for name, data in members if name.startswith("samples/")), b"{}")
    start = next((data for name, data in members if name.startswith("_journal/start")), b"{}")
    variants: dict[str, bytes | Callable[[], bytes]] = {
        "cut-25%": raw[: len(raw) // 4],
        "cut-50%": raw[: len(raw) // 2],
        "cut-before-directory": raw[: raw.index(b"PK\x01\x02")],
        "cut-last-byte": raw[:-1],
        "no-members": _zip([]),
        "only-samples": _zip([(name, data) for name, data in members if name.startswith("samples/")]),
        "stored": _zip(members, zipfile.ZIP_STORED),
        "method-bzip2": _local_header_method(raw, 12),
        "method-lzma": _local_header_method(raw, 14),
        "method-unknown": _local_header_method(raw, 77),
        "encrypted": _local_header_method(raw, 8, flags=1),
        "sizes-claim-4gib": _declared_sizes(raw, 0xFFFFFFFF),
        "bad-crc": raw.replace(struct.pack("<I", zipfile.ZipFile(path).infolist()[0].CRC),
                               b"\x00\x00\x00\x00"),
        "bomb-2gib": lambda: _bomb(members),
        "members-100001": lambda: _zip([("_journal/start.json", start)]
                                       + [(f"x/{i}", b"") for i in range(100_000)], zipfile.ZIP_STORED),
        "samples-2000": lambda: _zip(members + [(f"samples/{i}_epoch_1.json", sample) for i in range(100, 2100)]),
        "nested-zip": _zip(members + [("samples/inner_epoch_1.json", _zip(members))]),
        "hostile-member-names": _zip(members + [(f"samples/{values.OSC}\u202e\x00_epoch_1.json", sample),
                                                ("../../escape.json", sample), ("/etc/passwd.json", sample)]),
        "sample-nested-100000": _zip(members + [("samples/7_epoch_1.json",
                                                 values.deep_list(100_000).encode())]),
        "sample-invalid-utf8": _zip(members + [("samples/7_epoch_1.json", sample.replace(b'"', b'"\xff\x9b', 2))]),
        "sample-code": _zip(members + [("samples/7_epoch_1.json",
                                        b"__import__('os').system('touch " + EXECUTED.encode() + b"')")]),
        "duplicate-members": _zip(members + members),
        "random-after-magic": b"PK\x03\x04" + hashlib.sha256(b"x").digest() * 64,
    }
    cases = []
    for how, data in variants.items():
        slow = callable(data)
        make = (lambda directory, data=data: (directory / path.name).write_bytes(data())) if callable(data) \
            else write_bytes(path.name, data)
        for forced in (True, False):
            suffix = "" if forced else "/detected"
            cases.append(Case(f"damaged/inspect-ai-zip/{how}{suffix}", "damaged", f"zip-{how}", path.name, make,
                              args=("--format", INSPECT) if forced else (), slow=slow,
                              after=executed if how == "sample-code" else None))
    return cases


def field_cases() -> list[Case]:
    return protobuf_field_cases() + zip_field_cases()


def damage_cases() -> list[Case]:
    return protobuf_damage_cases() + zip_damage_cases()
