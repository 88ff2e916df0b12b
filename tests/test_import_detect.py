"""Formats are detected by content, never by extension; --format overrides; a file no
format reads gets a message that lists every format tried and why it refused."""

from __future__ import annotations

import shutil

import pytest
from test_import_support import all_fixtures, fixture

from agentdbg import importers
from agentdbg.documents import OpenError, open_document

EXPECTED_FORMAT = {
    "react-paper": "react-paper",
    "reflexion": "reflexion",
    "webshop": "webshop",
    "alfworld": "alfworld",
    "transcript": "transcript",
    "swe-agent": "swe-agent",
    "openai-chat": "openai-chat",
    "anthropic-messages": "anthropic-messages",
    "otel-genai": "otel-genai",
    "codex-rollout": "codex-rollout",
    "claude-code": "claude-code",
    "gemini-cli": "gemini-cli",
    "vercel-ai-sdk": "vercel-ai-sdk",
    "inspect-ai": "inspect-ai",
    "openhands": "openhands",
    "tau-bench": "tau-bench",
    "mini-swe-agent": "mini-swe-agent",
    "otel-sdk": "otel-sdk",
    "otlp-protobuf": "otlp-protobuf",
    "openai-responses": "openai-responses",
    "langchain": "langchain",
}
# Too little in them to tell which format they are: they open with --format.
UNDETECTABLE = {"transcript/edge_empty.txt"}


@pytest.mark.parametrize("path", all_fixtures(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_fixture_is_detected_as_its_format(path):
    key = f"{path.parent.name}/{path.name}"
    if key in UNDETECTABLE:
        with pytest.raises(importers.NotImportable):
            importers.detect(path)
        return
    assert importers.detect(path) == EXPECTED_FORMAT[path.parent.name]
    # Only its own format accepts it: detection does not depend on the order of FORMATS.
    accepted = [name for name, ok, _ in importers.sniff_all(path.read_bytes()[: importers.HEAD_BYTES])
                if ok]
    assert accepted == [EXPECTED_FORMAT[path.parent.name]]


DETECTABLE = [p for p in all_fixtures() if f"{p.parent.name}/{p.name}" not in UNDETECTABLE]


@pytest.mark.parametrize("path", DETECTABLE, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_detection_ignores_the_extension(path, tmp_path):
    disguised = tmp_path / "saved-run.toml"  # any name: even a plan's extension
    shutil.copy(path, disguised)
    assert importers.detect(disguised) == EXPECTED_FORMAT[path.parent.name]


def test_format_overrides_detection():
    path = fixture("transcript", "edge_empty.txt")
    document = importers.open_import(path, format="transcript")
    assert document.kind == "transcript" and len(document.runs) == 1
    # Forcing a format that cannot read the file says so.
    with pytest.raises(importers.NotImportable, match="as swe-agent"):
        importers.open_import(path, format="swe-agent")


def test_an_unknown_format_name_lists_the_valid_ones():
    with pytest.raises(importers.UnknownFormat) as caught:
        importers.open_import(fixture("transcript", "two_runs.txt"), format="langsmith")
    message = str(caught.value)
    assert "'langsmith'" in message
    for name in importers.BY_NAME:
        assert name in message


def test_an_unrecognised_file_lists_every_format_and_its_reason(tmp_path):
    path = tmp_path / "notes.json"
    path.write_text('{"title": "shopping", "items": ["milk", "bread"]}', encoding="utf-8")
    with pytest.raises(importers.NotImportable) as caught:
        importers.detect(path)
    message = str(caught.value)
    assert str(path) in message
    lines = message.splitlines()[1:]
    assert [line.split(":")[0].strip() for line in lines] == list(importers.BY_NAME)
    assert "  otel-genai: no top-level 'resourceSpans'" in lines
    assert "  openai-chat: no list of messages with a 'role'" in lines


def test_unrecognised_and_empty_files_through_the_document_opener(tmp_path):
    text = tmp_path / "readme.txt"
    text.write_text("Nothing here is a run.\n", encoding="utf-8")
    with pytest.raises(OpenError, match="Formats tried"):
        open_document(text)
    empty = tmp_path / "empty.json"
    empty.write_bytes(b"")
    with pytest.raises(OpenError, match="empty"):
        importers.detect(empty)


def test_open_document_reaches_the_importers():
    document = open_document(fixture("openai-chat", "weather_request.json"))
    assert document.kind == "openai-chat"
    assert document.runs[0].step_count == 4
    assert document.runs[0].end.outcome == "answered"


def test_a_file_that_is_not_utf8_still_opens_and_says_where(tmp_path):
    path = tmp_path / "latin1.log"
    data = fixture("transcript", "two_runs.txt").read_bytes().replace(b"What is 5 - 3?", b"Quanto fa 5 - 3? \xe0")
    path.write_bytes(data)
    document = importers.open_import(path)
    assert document.runs[0].info.task == "Quanto fa 5 - 3? \ufffd"
    assert document.problems[0].line == 1 and "UTF-8" in document.problems[0].message


def test_a_damaged_json_array_keeps_the_messages_before_the_damage(tmp_path):
    text = fixture("openai-chat", "plain_list.json").read_text(encoding="utf-8")
    cut = text[: text.index('{"role": "assistant", "content": [{"type": "text"')] + '{"role": "assis'
    path = tmp_path / "cut.json"
    path.write_text(cut, encoding="utf-8")
    document = importers.open_import(path)
    run = document.runs[0]
    assert run.step_count == 1 and run.record(1).observation == "391"
    assert "kept the 3 items" in document.problems[0].message


def test_sniffs_are_cheap_they_read_only_the_head(tmp_path, monkeypatch):
    seen = []
    original = importers.read_head

    def spy(path, size):
        seen.append(size)
        return original(path, size)

    monkeypatch.setattr(importers, "read_head", spy)
    importers.detect(fixture("react-paper", "runs.log"))
    assert seen == [importers.HEAD_BYTES]


def test_sniff_all_takes_bytes_and_gives_every_verdict():
    head = fixture("anthropic-messages", "request.json").read_bytes()[:4096]
    verdicts = importers.sniff_all(head, "request.json")
    assert [name for name, _, _ in verdicts] == list(importers.BY_NAME)
    accepted = [name for name, ok, _ in verdicts if ok]
    assert accepted == ["anthropic-messages"]
