"""Binary OTLP protobuf: each fixture holds the same spans as its OTLP/JSON twin and reads
into the same runs; real files; damage keeps the spans before it; odd bytes never crash."""

from __future__ import annotations

import base64
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_import_support import IMPORT_FIXTURES, convert, fixture, tools_called

from agentdbg import importers
from agentdbg.engine import events as ev
from agentdbg.importers import otel_genai, otlp_proto

PROTOBUF = sorted((IMPORT_FIXTURES / "otlp-protobuf").glob("*.pb"))
REAL = IMPORT_FIXTURES / "real" / "otlp-protobuf" / "otlp2parquet"


def _twin(path):
    [twin] = (IMPORT_FIXTURES / "otel-genai").glob(path.stem + ".*")
    return twin


def _span_facts(record: dict) -> dict:
    """What a span says, whichever JSON printer wrote it (ids in hex or base64, kinds by
    number or by name)."""
    def hex_id(value):
        return base64.b64decode(value).hex() if value and len(value) in (12, 24) else value

    kinds = {"SPAN_KIND_UNSPECIFIED": 0, "SPAN_KIND_INTERNAL": 1, "SPAN_KIND_SERVER": 2,
             "SPAN_KIND_CLIENT": 3, "SPAN_KIND_PRODUCER": 4, "SPAN_KIND_CONSUMER": 5}
    return {"name": record.get("name"), "traceId": hex_id(record.get("traceId")),
            "spanId": hex_id(record.get("spanId")), "parentSpanId": hex_id(record.get("parentSpanId") or ""),
            "kind": kinds.get(record.get("kind"), record.get("kind")),
            "start": int(record.get("startTimeUnixNano", 0)), "end": int(record.get("endTimeUnixNano", 0)),
            "attributes": otel_genai.attributes(record.get("attributes")),
            "events": [(e.get("name"), otel_genai.attributes(e.get("attributes"))) for e in record.get("events", [])]}


def _without_raw_data(runs):
    return [[e if not isinstance(e, ev.RawRecord) else (e.step, e.source, e.note) for e in run
             if not isinstance(e, ev.RunStart)] for run in runs]


@pytest.mark.parametrize("path", PROTOBUF, ids=lambda p: p.name)
def test_each_binary_fixture_reads_as_its_json_twin(path):
    name, binary, binary_runs = convert(path)
    assert name == "otlp-protobuf"
    twin_name, twin, twin_runs = convert(_twin(path))
    assert twin_name == "otel-genai"
    assert _without_raw_data(binary.runs) == _without_raw_data(twin.runs)
    assert [r.info.task for r in binary_runs] == [r.info.task for r in twin_runs]
    assert binary.raw_count == twin.raw_count
    assert [p.message for p in binary.problems] == [p.message for p in twin.problems]


def test_the_binary_fixtures_hold_what_their_twins_say():
    _, result, runs = convert(fixture("otlp-protobuf", "agent_trace.pb"))
    run = runs[0]
    assert run.info.name == "librarian"
    assert tools_called(run) == ["catalog", "loans", None]
    assert [r.step_tokens for r in run.records] == [352, 0, 530]
    raw = run.records[0].raw[0]
    assert raw.note == "span 'GET /catalog'"
    # A raw span is shown as OTLP/JSON writes it: hex ids, attributes as key/value pairs.
    assert raw.data["parentSpanId"] == "e100000000000001" and len(raw.data["spanId"]) == 16
    assert {"key": "http.request.method", "value": {"stringValue": "GET"}} in raw.data["attributes"]


def test_the_collector_file_exporter_stream_is_read_message_by_message():
    data = fixture("otlp-protobuf", "exports.pb").read_bytes()
    first = int.from_bytes(data[:4], "big")
    assert data[4] == 0x0A and data[4 + first + 4] == 0x0A  # two messages, each after its size
    _, _, runs = convert(fixture("otlp-protobuf", "exports.pb"))
    assert [r.end.answer for r in runs] == ["It is noon.", "Second answer"]


def test_real_binary_trace_and_its_json_twin_hold_the_same_spans():
    assert importers.detect(REAL / "trace.pb") == "otlp-protobuf"
    assert importers.detect(REAL / "trace.json") == "otel-genai"
    binary = otlp_proto.convert((REAL / "trace.pb").read_bytes(), "trace.pb")
    twin = otel_genai.convert((REAL / "trace.json").read_text(encoding="utf-8"), "trace.json")
    assert _without_raw_data(binary.runs) == _without_raw_data(twin.runs)
    spans = [e.data for run in binary.runs for e in run if isinstance(e, ev.RawRecord)]
    twin_spans = [e.data for run in twin.runs for e in run if isinstance(e, ev.RawRecord)]
    assert len(spans) == 2  # HTTP spans, no GenAI: kept raw, nothing lost
    assert [_span_facts(s) for s in spans] == [_span_facts(s) for s in twin_spans]
    assert _span_facts(spans[0])["attributes"]["http.method"] == "GET"
    assert "has no chat or execute_tool spans" in binary.problems[0].message
    # HTTP spans alone are no agent run: opening the file says so, in either encoding
    for path, found in (("trace.pb", "1345 bytes of binary data"), ("trace.json", "keys: resourceSpans")):
        with pytest.raises(importers.NotImportable) as refused:
            importers.convert_file(REAL / path)
        assert "but none of its 2 spans is an agent, a model call or a tool call" in str(refused.value)
        assert f"found {found}" in str(refused.value)


def test_real_binary_traces_with_many_resources():
    result = otlp_proto.convert((REAL / "traces.pb").read_bytes(), "traces.pb")
    assert len(result.runs) == 19 and result.raw_count == 19  # one span per resource, one trace each
    assert result.step_count == 0
    names = {e.data["name"] for events in result.runs for e in events if isinstance(e, ev.RawRecord)}
    assert "product-catalog.execute" in names


def test_detection_reads_the_bytes_of_a_binary_file(tmp_path):
    disguised = tmp_path / "spans.json"  # the name says JSON: the content decides
    disguised.write_bytes(fixture("otlp-protobuf", "agent_trace.pb").read_bytes())
    assert importers.detect(disguised) == "otlp-protobuf"
    verdicts = dict((name, ok) for name, ok, _ in importers.sniff_all(disguised.read_bytes()))
    assert [name for name, ok in verdicts.items() if ok] == ["otlp-protobuf"]


@pytest.mark.parametrize("head, why", [
    (b'{"resourceSpans": []}', "not binary OTLP"),
    (b"\n\nThought: I search.\nAction: Search[x]\n", "not OTLP protobuf"),
    (b'\n{"resourceSpans": [{"scopeSpans": []}]}', "not OTLP protobuf"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "not binary OTLP"),
    (b"\x00\x00\x00\x05hello", "not OTLP protobuf"),
    (b"\x0a\x05\x0a\x03\x0a\x01", "no resource or span"),
])
def test_sniff_refuses_what_is_not_otlp(head, why):
    ok, reason = otlp_proto.sniff(head)
    assert not ok and why in reason


def test_a_file_cut_anywhere_keeps_the_spans_before_the_cut(tmp_path):
    data = fixture("otlp-protobuf", "agent_trace.pb").read_bytes()
    full = convert(fixture("otlp-protobuf", "agent_trace.pb"))[1]
    path = tmp_path / "cut.pb"
    seen = set()
    for size in range(1, len(data)):
        path.write_bytes(data[:size])
        try:
            result = otlp_proto.convert(data[:size], str(path))
        except importers.NotImportable:
            continue
        assert result.step_count <= full.step_count
        assert "cut short at byte" in result.problems[0].message
        seen.add(result.step_count)
    # a cut keeps every span before it: from nothing, through part of the run, to all its steps
    assert {0, full.step_count} <= seen and len(seen) >= 3


def test_damage_inside_a_message_is_reported_and_what_came_before_is_kept():
    data = bytearray(fixture("otlp-protobuf", "agent_trace.pb").read_bytes())
    at = data.index(b"GET /catalog") - 2  # the name field of a span: make its wire type 7
    data[at] = (5 << 3) | 7
    result = otlp_proto.convert(bytes(data), "damaged.pb")
    message = result.problems[0].message
    assert message.startswith(f"not valid OTLP protobuf at byte {at} (wire type 7, which OTLP does not use)")
    assert "kept the 4 spans before it" in message


def _field(number: int, wire: int, payload: bytes | int) -> bytes:
    def varint(n):
        out = b""
        while True:
            out += bytes([n & 0x7F | (0x80 if n > 0x7F else 0)])
            n >>= 7
            if not n:
                return out
    head = varint(number << 3 | wire)
    return head + (varint(payload) if wire == 0 else varint(len(payload)) + payload)


def _message(*attributes: bytes, name: bytes = b"chat") -> bytes:
    span = _field(1, 2, bytes(16)) + _field(2, 2, b"\x01" * 8) + _field(5, 2, name) + b"".join(
        _field(9, 2, a) for a in attributes)
    return _field(1, 2, _field(2, 2, _field(2, 2, span)))


def test_text_that_is_not_utf8_is_shown_replaced_and_reported():
    operation = _field(1, 2, b"gen_ai.operation.name") + _field(2, 2, _field(1, 2, b"invoke_agent"))
    name = _field(1, 2, b"gen_ai.agent.name") + _field(2, 2, _field(1, 2, b"caf\xe9"))
    result = otlp_proto.convert(_message(operation, name, name=b"invoke_agent"), "latin1.pb")
    assert result.runs[0][0].name == "caf\ufffd"
    assert any("not valid UTF-8" in p.message and "U+FFFD" in p.message for p in result.problems)


def test_values_nested_too_deep_are_damage_not_a_crash():
    value = _field(1, 2, b"leaf")
    for _ in range(200):
        value = _field(5, 2, _field(1, 2, value))
    attribute = _field(1, 2, b"deep") + _field(2, 2, value)
    with pytest.raises(importers.NotImportable, match="nested more than 32 deep"):
        otlp_proto.convert(_message(attribute), "deep.pb")


def test_negative_integers_and_doubles_decode_as_the_json_mapping_says():
    negative = _field(1, 2, b"n") + _field(2, 2, _field(3, 0, (1 << 64) - 5))
    double = _field(1, 2, b"d") + _field(2, 2, bytes([4 << 3 | 1]) + struct.pack("<d", 1.5))
    decoder = otlp_proto._Decoder(_message(negative, double))
    found: list = []
    decoder.request(0, len(decoder.data), found)
    attributes = found[0]["scopeSpans"][0]["spans"][0]["attributes"]
    assert otel_genai.attributes(attributes) == {"n": -5, "d": 1.5}


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))


@SETTINGS
@given(st.binary(max_size=300))
def test_any_bytes(data):
    _reads_or_refuses(data)


@SETTINGS
@given(st.sampled_from(PROTOBUF), st.lists(st.tuples(st.integers(0, 4000), st.integers(0, 255)), max_size=6),
       st.integers(0, 4000))
def test_fixtures_with_bytes_changed_and_cut(path, changes, cut):
    data = bytearray(path.read_bytes())
    for at, byte in changes:
        data[at % len(data)] = byte
    _reads_or_refuses(bytes(data[: max(1, cut % (len(data) + 1))]))


def _reads_or_refuses(data: bytes) -> None:
    otlp_proto.sniff(data)
    try:
        result = otlp_proto.convert(data, "generated.pb")
    except importers.NotImportable:
        return
    for events in result.runs:
        assert isinstance(events[0], ev.RunStart) and isinstance(events[-1], ev.RunEnd)


def test_real_genai_spans_in_binary_read_as_their_json_twin():
    binary = IMPORT_FIXTURES / "real" / "otlp-protobuf" / "agx" / "agx_sample_genai.pb"
    twin = IMPORT_FIXTURES / "real" / "otel-genai" / "agx" / "sample_otel_json_traces.json"
    name, result, [run] = convert(binary)
    assert name == "otlp-protobuf"
    assert _without_raw_data(result.runs) == _without_raw_data(convert(twin)[1].runs)
    assert tools_called(run) == ["list_dir", None]
    assert run.end.answer == "The directory contains README.md, Cargo.toml, and a src/ folder."
