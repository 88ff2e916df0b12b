"""Inspect AI eval logs (.json and zipped .eval), from hand-written fixtures and archives
made here; figures checked by hand against the fixtures."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from test_import_support import convert, counters, fixture, markers, problems_text, tools_called

from agentdbg import importers
from agentdbg.importers import inspect_ai, ziparchive


def test_a_json_log_gives_a_run_per_sample_in_dataset_order():
    name, result, runs = convert(fixture("inspect-ai", "eval_log.json"))
    assert name == "inspect-ai"
    assert [r.info.name for r in runs] == ["library_copies #2 epoch 1", "library_copies #1 epoch 1"]
    run = runs[1]
    # The input is stored once as an attachment: put back in place.
    assert run.info.task == "How many copies of Il Gattopardo can be borrowed?"
    assert run.info.policy == "recorded: Inspect AI (openai/gpt-4o-mini)"
    assert [(t["name"], t["description"], t["params"]) for t in run.info.tools] == [
        ("catalog", "Look a title up in the library catalog.", {"title": "str"}),
        ("calc", "Evaluate arithmetic.", {"expression": "str"})]
    assert tools_called(run) == ["catalog", "loans", "calc", None]
    assert run.records[0].thought == "I need the catalog.\nChecking the catalog."
    assert run.records[0].args == {"title": "Il Gattopardo"}
    assert run.records[0].observation == "5"
    # A call to a tool that does not exist: Inspect's parsing error, read as unknown_tool.
    error = [e for e in run.records[1].events if e.type == "error"][0]
    assert (error.kind, error.message) == ("unknown_tool", "parsing: Tool loans not found")
    assert run.records[1].observation == "Tool loans not found"
    assert counters(run, "errors") == [0, 1, 0, 0]
    # Each turn's usage from its model event, matched by message id (the third has no total).
    assert [r.step_tokens for r in run.records] == [120, 140, 160, 190]
    assert counters(run, "tokens") == [120, 260, 420, 610]
    assert run.end.outcome == "answered" and run.end.answer == "There are 2 copies available."
    assert run.end.verdict == {"correct": True, "score": 1.0, "expected": "2", "grader": "match"}
    scores = [e for e in run.records[3].events if e.type == "raw" and e.source == "inspect scores"]
    assert scores[0].data["match"]["explanation"] == "There are 2 copies available."
    assert result.raw_count == 3 and result.problems == []


def test_a_sample_stopped_by_a_limit_with_a_timed_out_tool_and_two_scorers():
    _, _, runs = convert(fixture("inspect-ai", "eval_log.json"))
    run = runs[0]
    assert run.info.task == "What is 6 * 7?"  # the input as a list of messages
    assert tools_called(run) == ["calc"]
    error = [e for e in run.records[0].events if e.type == "error"][0]
    assert error.kind == "timeout"
    assert run.records[0].observation == "Command timed out before completing."
    # No model events: the sample's model_usage is a run total, nothing invented per step.
    assert counters(run, "tokens") == [30] and run.records[0].step_tokens == 0
    assert run.end.outcome == "budget exhausted" and run.end.guard == "max_steps"
    assert run.end.message == "message limit 3 reached"
    # The first scorer is the verdict; a target list is every accepted answer.
    assert run.end.verdict == {"correct": False, "score": 0.0, "expected": "42 | forty-two", "grader": "match"}
    raw = [e for e in run.records[0].events if e.type == "raw"]
    assert raw[0].note == "scores: match=I, length=0.25"


def test_duplicated_ids_a_parse_error_a_stray_reply_a_lost_call_and_a_sample_error():
    _, result, runs = convert(fixture("inspect-ai", "edges.json"))
    run = runs[0]
    assert markers(run) == ["", "", "error", ""]
    assert tools_called(run) == ["calc", "calc", None, "calc"]
    assert [r.observation for r in run.records[:2]] == ["2", "4"]  # replies go to the calls in order
    parse = [e for e in run.records[2].events if e.type == "parse_error"][0]
    assert parse.message == "tool call 'calc': Expecting value: line 1 column 12 (char 11)"
    assert run.records[2].observation == "Expecting value: line 1 column 12 (char 11)"
    assert run.records[3].observation is None  # the last call never had a reply
    assert run.end.outcome == "error"
    assert run.end.message == "sample error: RuntimeError: the sandbox died; log status: error"
    assert run.end.verdict is None  # no scores
    text = problems_text(result)
    assert "the evaluation ended with an error: RuntimeError: the sandbox died" in text
    assert "tool call id 'dup' is used by more than one call" in text
    assert "a reply to tool call 'ghost', which no call in the run has" in text
    assert result.raw_count == 2


def test_a_sample_with_no_turn_keeps_its_task():
    _, result, runs = convert(fixture("inspect-ai", "edge_empty.json"))
    assert runs[0].step_count == 0 and runs[0].info.task == "Say nothing."
    assert runs[0].end.outcome == "empty" and runs[0].end.message == "log status: cancelled"


def test_hostile_and_non_ascii_text_is_kept_verbatim():
    _, _, runs = convert(fixture("inspect-ai", "hostile_unicode.json"))
    run = runs[0]
    assert run.info.task.endswith("\x1b[31mlis-le\x1b[0m \u2014 \u03c8 \u4e2d\u6587 \U0001f600")
    assert run.records[0].tool == "fetch[/]"
    assert run.records[0].args["esc"] == "\x1b]52;c;ZXZpbA==\x07"
    assert run.records[0].observation.startswith("\x1b]52;c;ZXZpbA==\x07 [blink]")
    assert run.end.answer == "[/][bold]Fini[/bold] \x1b[5m!\x1b[0m \u00e9\u00e8"
    assert run.end.verdict["grader"] == "match\x1b[1m"


def test_an_eval_archive_without_its_header_reads_the_journal():
    name, result, runs = convert(fixture("inspect-ai", "crashed.eval"))
    assert name == "inspect-ai"
    run = runs[0]
    assert run.info.name == "kv_tax #1 epoch 1"
    assert run.records[0].thought == "[redacted reasoning]\nI compute it."
    assert run.records[0].args == {"code": "print(120 * 0.05)"}
    assert counters(run, "tokens") == [0, 240]
    assert run.end.verdict == {"correct": True, "score": 1.0, "expected": "6", "grader": "includes"}
    assert run.end.message == "log status: started"
    assert "no header.json: the evaluation did not finish" in problems_text(result)


@pytest.mark.parametrize(("value", "score"), [
    ("C", 1.0), ("I", 0.0), ("P", 0.5), ("N", 0.0), ("yes", 1.0), ("False", 0.0), ("0.75", 0.75),
    (True, 1.0), (3, 3.0), ("maybe", None), ({"a": 1}, None), ([1], None), (float("nan"), None)])
def test_score_values_are_read_as_inspect_reads_them(value, score):
    assert inspect_ai.score_value(value) == score


# --- .eval archives made here: size limits, damage, what is refused ------------------------

SAMPLE = {"id": 1, "epoch": 1, "input": "q", "target": "a",
          "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
          "scores": {"exact": {"value": "C"}}}
START = {"version": 2, "eval": {"task": "t", "run_id": "r", "model": "m/m"}, "plan": {"steps": []}}


def _eval(members: dict[str, bytes | str | dict], compression=zipfile.ZIP_DEFLATED) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression) as archive:
        for name, data in members.items():
            if isinstance(data, dict):
                data = json.dumps(data)
            archive.writestr(name, data)
    return out.getvalue()


def _patch(data: bytes, offset_local: int, offset_central: int, value: int) -> bytes:
    """Set a 2-byte field in every local and central header (method, flags)."""
    patched = bytearray(data)
    for magic, offset in ((b"PK\x03\x04", offset_local), (b"PK\x01\x02", offset_central)):
        at = patched.find(magic)
        while at != -1:
            patched[at + offset:at + offset + 2] = value.to_bytes(2, "little")
            at = patched.find(magic, at + 4)
    return bytes(patched)


def _write(tmp_path, data: bytes, name="log.eval"):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_a_whole_archive_with_header(tmp_path):
    header = dict(START, status="success")
    path = _write(tmp_path, _eval({"_journal/start.json": START, "samples/1_epoch_1.json": SAMPLE,
                                   "header.json": header}))
    assert importers.detect(path) == "inspect-ai"
    document = importers.open_import(path)
    assert document.problems == []
    assert document.runs[0].end.verdict == {"correct": True, "score": 1.0, "expected": "a", "grader": "exact"}


def test_an_archive_cut_short_gives_the_members_that_arrived_whole(tmp_path):
    data = _eval({"_journal/start.json": START, "samples/1_epoch_1.json": SAMPLE,
                  "samples/2_epoch_1.json": dict(SAMPLE, id=2), "header.json": START})
    cut = data[: data.index(b"PK\x03\x04", data.index(b"samples/2_epoch_1.json") - 40) + 50]
    name, result, runs = convert(_write(tmp_path, cut))
    assert name == "inspect-ai" and len(runs) == 1 and runs[0].end.answer == "a"
    text = problems_text(result)
    assert "damaged or cut short" in text and "read the 2 members that arrived whole" in text
    assert "no header.json" in text


def test_a_zip_bomb_is_refused_before_it_is_inflated(tmp_path, monkeypatch):
    monkeypatch.setattr(ziparchive, "MAX_MEMBER_BYTES", 1_000_000)
    bomb = _eval({"_journal/start.json": START, "samples/1_epoch_1.json": b"0" * 2_000_000})
    assert len(bomb) < 10_000
    with pytest.raises(importers.NotImportable, match="no samples"):
        importers.convert_file(_write(tmp_path, bomb))
    archive = ziparchive.Archive(bomb)
    with pytest.raises(ziparchive.ArchiveError, match="2,000,000 bytes uncompressed, more than"):
        archive.read("samples/1_epoch_1.json")


def test_the_total_read_from_an_archive_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(ziparchive, "MAX_TOTAL_BYTES", 2_000)
    members = {"_journal/start.json": START}
    members.update({f"samples/{n}_epoch_1.json": dict(SAMPLE, id=n, pad="x" * 400) for n in range(1, 6)})
    name, result, runs = convert(_write(tmp_path, _eval(members)))
    assert 1 <= len(runs) < 5
    assert "would take the archive's uncompressed total past 2,000 bytes" in problems_text(result)


def test_a_member_that_inflates_past_its_declared_size_is_cut_and_refused():
    data = bytearray(_eval({"_journal/start.json": START, "samples/1_epoch_1.json": SAMPLE}))
    archive = ziparchive.Archive(bytes(data))
    member = archive.members["samples/1_epoch_1.json"]
    member.size = 10  # the header lies: the data inflates to more
    with pytest.raises(ziparchive.ArchiveError, match="size or checksum does not match"):
        archive.read("samples/1_epoch_1.json")


def test_nested_encrypted_and_unreadable_members_are_refused_by_name(tmp_path):
    nested = _eval({"_journal/start.json": START, "samples/1_epoch_1.json": _eval({"x": "y"})})
    with pytest.raises(importers.NotImportable) as caught:
        importers.convert_file(_write(tmp_path, nested, "nested.eval"))
    assert "no samples" in str(caught.value)
    archive = ziparchive.Archive(nested)
    with pytest.raises(ziparchive.ArchiveError, match="is itself a zip archive"):
        archive.read("samples/1_epoch_1.json")
    encrypted = _patch(_eval({"_journal/start.json": START}), 6, 8, 1)
    with pytest.raises(importers.NotImportable,
                       match="cannot read the Inspect log's header: _journal/start.json is encrypted"):
        importers.convert_file(_write(tmp_path, encrypted, "encrypted.eval"))
    with pytest.raises(ziparchive.ArchiveError, match="_journal/start.json is encrypted"):
        ziparchive.Archive(encrypted).read("_journal/start.json")
    implode = _patch(_eval({"_journal/start.json": START}, zipfile.ZIP_STORED), 8, 10, 6)
    with pytest.raises(ziparchive.ArchiveError, match="compressed with Implode"):
        ziparchive.Archive(implode).read("_journal/start.json")


def test_a_zstandard_member_says_what_would_read_it():
    zstd = _patch(_eval({"_journal/start.json": START}, zipfile.ZIP_STORED), 8, 10, 93)
    try:
        import zstandard  # noqa: F401
    except ImportError:
        with pytest.raises(ziparchive.ArchiveError, match="install the 'zstandard' package"):
            ziparchive.Archive(zstd).read("_journal/start.json")
    else:
        with pytest.raises(ziparchive.ArchiveError, match="damaged"):
            ziparchive.Archive(zstd).read("_journal/start.json")


def _zstd_eval(members: dict[str, dict]) -> bytes:
    """An .eval whose members are Zstandard-compressed, as the newest Inspect writes them."""
    import zlib

    import zstandard

    raw = {name: json.dumps(data).encode() for name, data in members.items()}
    packed = {name: zstandard.ZstdCompressor().compress(data) for name, data in raw.items()}
    data = bytearray(_eval(packed, zipfile.ZIP_STORED))
    for name, content in raw.items():  # method 93, the sizes and checksum of the inflated member
        for magic, method_at, crc_at in ((b"PK\x03\x04", 8, 14), (b"PK\x01\x02", 10, 16)):
            at = data.find(magic)
            while at != -1:
                name_at = at + (30 if magic == b"PK\x03\x04" else 46)
                if data[name_at:name_at + len(name)] == name.encode():
                    data[at + method_at:at + method_at + 2] = (93).to_bytes(2, "little")
                    data[at + crc_at:at + crc_at + 4] = zlib.crc32(content).to_bytes(4, "little")
                    data[at + crc_at + 8:at + crc_at + 12] = len(content).to_bytes(4, "little")
                at = data.find(magic, at + 4)
    return bytes(data)


def test_a_zstandard_archive_opens_when_zstandard_is_installed(tmp_path):
    pytest.importorskip("zstandard")
    path = _write(tmp_path, _zstd_eval({"_journal/start.json": START, "samples/1_epoch_1.json": SAMPLE,
                                        "header.json": dict(START, status="success")}))
    name, result, runs = convert(path)
    assert name == "inspect-ai" and result.problems == []
    assert runs[0].end.answer == "a" and runs[0].end.verdict["correct"] is True


def test_an_archive_with_too_many_members_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(ziparchive, "MAX_MEMBERS", 3)
    members = {"_journal/start.json": START, **{f"samples/{n}_epoch_1.json": SAMPLE for n in range(4)}}
    with pytest.raises(importers.NotImportable, match="lists 5 members, more than the 3"):
        importers.convert_file(_write(tmp_path, _eval(members)))


def test_a_member_count_too_large_is_refused_before_the_directory_is_read(monkeypatch):
    monkeypatch.setattr(ziparchive, "MAX_MEMBERS", 50_000)
    data = bytearray(_eval({"_journal/start.json": START}))
    end = data.rfind(b"PK\x05\x06")
    data[end + 8:end + 12] = (60_000).to_bytes(2, "little") * 2  # on this disk, in total
    with pytest.raises(ziparchive.ArchiveError, match="lists 60,000 members"):
        ziparchive.Archive(bytes(data))


def test_other_zip_archives_are_not_taken_for_logs(tmp_path):
    other = _write(tmp_path, _eval({"word/document.xml": "<w/>", "header.json": "{}"}), "report.docx")
    ok, reason = inspect_ai.sniff(other.read_bytes())
    assert not ok and reason == "a zip archive, but its first member is not an Inspect log's"
    with pytest.raises(importers.NotImportable):
        importers.detect(other)
    empty_member = b"PK\x03\x04" + b"\x00" * 26 + b"_journal/start.json" + b"\xff" * 40
    with pytest.raises(importers.NotImportable, match="without header.json or _journal/start.json"):
        importers.convert_file(_write(tmp_path, empty_member), format="inspect-ai")
    garbage = b"PK\x03\x04" + b"\xff" * 60
    with pytest.raises(importers.NotImportable, match="not a readable zip archive"):
        importers.convert_file(_write(tmp_path, garbage, "garbage.eval"), format="inspect-ai")


def test_sniff_reads_bytes_and_text_heads():
    data = fixture("inspect-ai", "crashed.eval").read_bytes()
    assert inspect_ai.sniff(data)[0]
    assert inspect_ai.sniff(data.decode("utf-8", errors="replace"))[0]
    assert inspect_ai.sniff(fixture("inspect-ai", "eval_log.json").read_bytes()[:300])[0]
    assert not inspect_ai.sniff('{"eval": {"task": "t"}}')[0]  # no version, plan or samples
    with pytest.raises(importers.NotImportable, match="must be read as bytes"):
        inspect_ai.convert(data.decode("latin-1"), "text.eval")


def test_a_log_without_samples_says_so(tmp_path):
    path = tmp_path / "header_only.json"
    path.write_text(json.dumps(dict(START, status="success", samples=[])), encoding="utf-8")
    with pytest.raises(importers.NotImportable, match="holds no samples"):
        importers.convert_file(path)


def test_an_attachment_repeated_hundreds_of_times_is_put_back_within_the_logs_budget(tmp_path, monkeypatch):
    """A small log can name one big attachment in every message: each attachment is put
    back once as it is, its repeats within a budget per log, each cut; the rest stay
    references, and the run and a warning say so. (The bound is checked by count.)"""
    monkeypatch.setattr(inspect_ai, "MAX_REPEATED_CHARS", 10_000)
    monkeypatch.setattr(inspect_ai, "MAX_REFERENCE_CHARS", 3_000)
    big, small = "B" * 5_000, "s" * 1_000
    messages = [{"role": "user", "source": "input", "content": "attachment://small"}]  # a repeat: 1,000 of 10,000
    for n in range(200):
        messages.append({"role": "assistant", "source": "generate", "content": "attachment://big",
                         "tool_calls": [{"id": f"c{n}", "function": "calc", "arguments": {"expression": "1"}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "function": "calc", "content": "attachment://big"})
    log = {"version": 2, "status": "success", "eval": {"task": "t", "model": "m"},
           "samples": [{"id": 1, "epoch": 1, "input": "attachment://small", "messages": messages,
                        "attachments": {"big": big, "small": small}}]}
    path = tmp_path / "log.json"
    path.write_text(json.dumps(log), encoding="utf-8")
    _, result, [run] = convert(path)
    assert run.info.task == small  # the input is put back first
    texts = [text for record in run.records for text in (record.thought, record.observation)]
    cut = big[:3_000] + "… [2,000 more characters of attachment://big]"
    assert texts.count(big) == 1 and texts.count(cut) == 3  # 1,000 + 3 x 3,000 of the 10,000
    assert texts.count("attachment://big") == 400 - 4 and len(texts) == 400
    assert "repeated attachment references: 396 left as attachment://<hash>, 3 cut to 3,000 characters" \
        in run.end.message
    assert "not put back in place in 1 run: 396 left as attachment://<hash>, 3 cut" in problems_text(result)


def test_an_attachment_named_once_is_put_back_whole_whatever_its_size(tmp_path, monkeypatch):
    monkeypatch.setattr(inspect_ai, "MAX_REPEATED_CHARS", 10)
    monkeypatch.setattr(inspect_ai, "MAX_REFERENCE_CHARS", 10)
    log = {"version": 2, "status": "success", "eval": {"task": "t", "model": "m"},
           "samples": [{"id": 1, "epoch": 1, "input": "attachment://a", "attachments": {"a": "x" * 100, "b": "y" * 100},
                        "messages": [{"role": "assistant", "content": "attachment://b"}]}]}
    path = tmp_path / "log.json"
    path.write_text(json.dumps(log), encoding="utf-8")
    _, result, [run] = convert(path)
    assert run.info.task == "x" * 100 and run.end.answer == "y" * 100
    assert "attachment" not in run.end.message and result.problems == []
