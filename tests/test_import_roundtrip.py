"""Every fixture converts (agentdbg convert), and the trace reads back with the same runs,
steps and events; through ``agentdbg show`` too once that command exists."""

from __future__ import annotations

import json

import pytest
from test_import_support import all_fixtures, convert, fixture

from agentdbg import importers
from agentdbg.cli import main
from agentdbg.trace.reader import open_trace

UNDETECTABLE = {"transcript/edge_empty.txt": "transcript"}


def _forced(path):
    return UNDETECTABLE.get(f"{path.parent.name}/{path.name}")


def _convert_cli(path, out, capsys, *extra):
    args = ["convert", str(path), "-o", str(out), *extra]
    if _forced(path):
        args += ["--format", _forced(path)]
    code = main(args)
    return code, capsys.readouterr()


@pytest.mark.parametrize("path", all_fixtures(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_convert_then_read_the_trace_back(path, tmp_path, capsys):
    _, result, runs = convert(path, _forced(path))
    out = tmp_path / "run.jsonl"
    code, printed = _convert_cli(path, out, capsys)
    assert code == 0, printed.err
    assert f"{len(runs)} run" in printed.out
    assert f"{result.raw_count} record" in printed.out
    document = open_trace(out, background=False)
    try:
        assert document.problems == []
        assert len(document.runs) == len(runs)
        for original, events, read in zip(runs, result.runs, document.runs, strict=True):
            assert read.step_count == original.step_count
            assert read.events() == events  # every event, field for field
            assert read.end == original.end
            for step in range(1, original.step_count + 1):
                assert read.record(step).events == original.records[step - 1].events
            assert read.state_at(original.step_count) == original.final_state()
    finally:
        document.close()


def test_hostile_text_survives_conversion_unchanged(tmp_path, capsys):
    path = fixture("otel-genai", "hostile_unicode.json")
    out = tmp_path / "hostile.jsonl"
    assert _convert_cli(path, out, capsys)[0] == 0
    written = out.read_text(encoding="utf-8")
    assert "\x1b" not in written  # JSON escapes control characters: the file itself is inert
    assert "\\u001b]52;c;ZXZpbA==\\u0007" in written
    document = open_trace(out, background=False)
    try:
        run = document.runs[0]
        assert run.info.name.startswith("[link=https://evil.example]agent[/link] 代理 \x1b]52;")
        assert run.record(1).observation == "\x1b[31m[blink]red[/blink]\x1b[0m \x1b[1A\x1b[2K ✓"
    finally:
        document.close()


def test_convert_reports_counts_and_warnings(tmp_path, capsys):
    out = tmp_path / "out.jsonl"
    code, printed = _convert_cli(fixture("openai-chat", "edge_reply_without_call.json"), out, capsys)
    assert code == 0
    assert "1 run, 2 steps; 2 records kept as raw events; 2 warnings" in printed.out
    assert printed.err.count("warning:") == 2 and "call_never_made" in printed.err
    header = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    assert header["format"] == "agentdbg-trace" and header["source_format"] == "openai-chat"


def test_convert_refuses_to_overwrite_without_force(tmp_path, capsys):
    out = tmp_path / "out.jsonl"
    out.write_text("keep me", encoding="utf-8")
    path = fixture("transcript", "two_runs.txt")
    code, printed = _convert_cli(path, out, capsys)
    assert code == 2 and "--force" in printed.err
    assert out.read_text(encoding="utf-8") == "keep me"
    code, printed = _convert_cli(path, out, capsys, "--force")
    assert code == 0 and "2 runs, 4 steps" in printed.out


@pytest.mark.parametrize("setup, message", [
    ("missing", "no such file"),
    ("unrecognised", "Formats tried"),
    ("unknown-format", "unknown format 'yaml'"),
    ("already-a-trace", "already an agentdbg trace"),
    ("same-file", "would overwrite the input"),
])
def test_convert_exits_2_on_unusable_input(setup, message, tmp_path, capsys):
    source = tmp_path / "in.json"
    out = tmp_path / "out.jsonl"
    extra: list[str] = []
    if setup == "unrecognised":
        source.write_text('{"hello": "world"}', encoding="utf-8")
    elif setup == "unknown-format":
        source.write_text("[]", encoding="utf-8")
        extra = ["--format", "yaml"]
    elif setup == "already-a-trace":
        assert main(["convert", str(fixture("transcript", "two_runs.txt")), "-o", str(source)]) == 0
    elif setup == "same-file":
        source.write_text("[]", encoding="utf-8")
        out = source
    capsys.readouterr()
    code = main(["convert", str(source), "-o", str(out), *extra])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err


def test_a_file_with_no_runs_is_unusable(tmp_path, capsys):
    source = tmp_path / "no_spans.json"
    source.write_text('{"resourceSpans": []}', encoding="utf-8")
    code = main(["convert", str(source), "-o", str(tmp_path / "out.jsonl")])
    assert code == 2 and "no runs" in capsys.readouterr().err
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize("path", all_fixtures(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_show_gives_the_same_steps_for_the_file_and_its_converted_trace(path, tmp_path, capsys):
    out = tmp_path / "run.jsonl"
    assert _convert_cli(path, out, capsys)[0] == 0
    forced = ["--format", _forced(path)] if _forced(path) else []
    assert main(["show", str(path), "--json", *forced]) == 0
    direct = _steps(capsys.readouterr().out)
    assert main(["show", str(out), "--json"]) == 0
    through_trace = _steps(capsys.readouterr().out)
    assert direct == through_trace
    assert len(direct) == len(importers.convert_file(path, _forced(path))[1].runs)


def _steps(output: str) -> list:
    """Each run's steps from ``show --json`` output (one JSON document, or one per line),
    without what names the file it was read from."""
    text = output.strip()
    try:
        documents = [json.loads(text)]
    except ValueError:
        documents = [json.loads(line) for line in text.splitlines() if line.strip()]
    runs = []
    for doc in documents:
        items = doc.get("runs", [doc]) if isinstance(doc, dict) else doc
        for item in items:
            runs.append(_without_origin(item.get("steps", item) if isinstance(item, dict) else item))
    return runs


def _without_origin(value):
    if isinstance(value, dict):
        return {k: _without_origin(v) for k, v in value.items()
                if k not in ("path", "file", "kind", "source", "format", "document")}
    if isinstance(value, list):
        return [_without_origin(v) for v in value]
    return value
