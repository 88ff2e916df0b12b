"""Big files are read a run at a time: the streamed path gives exactly what the whole-file
path gives (events, counts, problems, refusals), for every fixture and every format that
streams, and for damaged and hostile files; the commands use it for big files."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from hostile_inputs import write_input
from hypothesis import given, settings
from hypothesis import strategies as st

from agentdbg import importers
from agentdbg.cli import main
from agentdbg.importers import base, jsondata, streaming
from agentdbg.importers.base import NotImportable, Source, decode

FIXTURES = Path(__file__).parent / "fixtures" / "import"
STREAMING = [name for name, module in importers.BY_NAME.items() if hasattr(module, "convert_stream")]


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def whole(path: Path, name: str | None) -> tuple:
    try:
        found, result = importers.convert_file(path, name)
    except NotImportable as exc:
        return ("refused", str(exc))
    return (found, result.runs, result.raw_count, result.step_count, sorted(map(str, result.problems)))


def streamed(path: Path, name: str | None) -> tuple | None:
    try:
        stream = importers.stream_file(path, name)
        if stream is None:
            return None
        runs = list(stream.runs())
    except NotImportable as exc:
        return ("refused", str(exc))
    return (stream.name, runs, stream.raw_count, stream.step_count, sorted(map(str, stream.problems)))


def _streams(path: Path, name: str) -> bool:
    """Whether ``name`` reads ``path`` a run at a time (or refuses it: refusals must agree too)."""
    try:
        stream = importers.stream_file(path, name)
    except NotImportable:
        return True
    if stream is None:
        return False
    stream.close()
    return True


def _fixture_cases() -> list:
    files = sorted(p for p in FIXTURES.rglob("*") if p.is_file())
    return [pytest.param(path, name, id=f"{path.relative_to(FIXTURES)}-{name}")
            for path in files for name in STREAMING if _streams(path, name)]


def test_these_formats_stream() -> None:
    assert STREAMING == ["openhands", "tau-bench", "openai-chat"]


@pytest.mark.parametrize("block", [1 << 20, 7], ids=["1MiB-reads", "7-byte-reads"])
@pytest.mark.parametrize(("path", "name"), _fixture_cases())
def test_every_fixture_streams_to_exactly_what_the_whole_file_gives(path: Path, name: str, block: int,
                                                                    monkeypatch) -> None:
    monkeypatch.setattr(streaming, "BLOCK_BYTES", block)  # 7: every value cut across reads
    assert streamed(path, name) == whole(path, name)


def test_the_fixtures_of_the_streaming_formats_do_stream() -> None:
    """The equivalence above is not vacuous: each format's own fixtures take the streamed path."""
    for name, folder, count in (("openhands", "openhands", 1), ("tau-bench", "tau-bench", 4),
                                ("openai-chat", "openai-chat", 1)):
        streams = [p.name for p in sorted((FIXTURES / folder).iterdir()) if importers.stream_file(p, name)]
        assert len(streams) >= count, (name, streams)


def _instance(n: int) -> dict:
    return {"instance_id": f"repo__{n}", "instruction": f"fix {n}", "history": [
        {"id": 1, "source": "agent", "action": "run", "args": {"command": f"ls {n}"}, "message": "run"},
        {"id": 2, "source": "environment", "observation": "run", "content": "ok", "cause": 1, "extras": {"exit_code": 0}},
        {"id": 3, "source": "agent", "action": "finish", "args": {"final_thought": "done"}, "message": "done"}]}


def test_a_damaged_json_lines_file_keeps_its_valid_lines_and_names_the_damaged_one(tmp_path: Path, capsys) -> None:
    path = tmp_path / "output.jsonl"
    lines = [json.dumps(_instance(n)) for n in range(4)]
    lines[2] = lines[2][:50]  # cut short
    path.write_text("\n".join(lines) + "\n")
    assert streamed(path, None) == whole(path, None)
    code, out, err = run_cli(capsys, "convert", path, "-o", tmp_path / "out.jsonl")
    assert code == 0 and "(openhands)" in out and "3 runs" in out and "1 warning" in out
    assert f"{path}:3: not valid JSON (Expecting property name enclosed in double quotes at line 1, column 51); line skipped" in err


def _result(n: int) -> dict:
    return {"task_id": n, "reward": 1.0, "info": {"task": {"outputs": [str(n)]}}, "trial": 0,
            "traj": [{"role": "user", "content": f"task {n}"},
                     {"role": "assistant", "content": None, "tool_calls": [
                         {"id": f"c{n}", "type": "function", "function": {"name": "look", "arguments": "{}"}}]},
                     {"role": "tool", "tool_call_id": f"c{n}", "name": "look", "content": "seen"},
                     {"role": "assistant", "content": f"answer {n}"}]}


def test_a_damaged_array_keeps_the_records_before_the_damage_and_says_where(tmp_path: Path, capsys) -> None:
    path = tmp_path / "results.json"
    text = json.dumps([_result(n) for n in range(5)], indent=2)
    path.write_text(text[: text.index('"task_id": 3')] + '"task_id": 3, "reward": }')
    assert streamed(path, None) == whole(path, None)
    code, out, err = run_cli(capsys, "convert", path, "-o", tmp_path / "out.jsonl")
    assert code == 0 and "(tau-bench)" in out and "3 runs" in out
    line = path.read_text().count("\n", 0, path.read_text().rindex("{")) + 1  # where record 4 begins
    assert (f"{path}:{line}: not valid JSON from here (Expecting value at line {line + 1}, column 29); "
            "kept the 3 items before it") in err


def test_undecodable_bytes_are_reported_with_their_line_as_the_whole_file_path_does(tmp_path: Path) -> None:
    path = tmp_path / "output.jsonl"
    lines = [json.dumps(_instance(n)).encode() for n in range(3)]
    lines[1] = lines[1].replace(b"fix 1", b"fix \xff\xfe 1")
    path.write_bytes(b"\n".join(lines))
    got = streamed(path, None)
    assert got == whole(path, None)
    assert any(":2: not valid UTF-8 at byte" in p for p in got[4])


def test_hostile_text_streams_exactly(tmp_path: Path) -> None:
    path = write_input("openai-chat", tmp_path)
    lines = tmp_path / "hostile.jsonl"  # the same conversation twice, one per line: the streamed shape
    conversation = json.loads(path.read_text())
    lines.write_text("\n".join(json.dumps(conversation if isinstance(conversation, dict) else {"messages": conversation})
                               for _ in range(2)))
    for each in (path, lines):
        got = streamed(each, "openai-chat")
        assert got is None or got == whole(each, "openai-chat")
    assert streamed(lines, "openai-chat") is not None


def test_a_json_lines_file_of_messages_is_one_conversation_however_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    messages = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
    path.write_text("\n".join(json.dumps(m) for m in messages))
    assert streamed(path, "openai-chat") == whole(path, "openai-chat")
    assert len(streamed(path, "openai-chat")[1]) == 1
    path.write_text("\n".join(json.dumps(m) for m in messages) + "\n" + json.dumps({"messages": messages}))
    got = streamed(path, "openai-chat")
    assert got == whole(path, "openai-chat") and len(got[1]) == 3  # each line then stands alone


def test_an_array_that_is_one_conversation_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps([{"messages": [{"role": "user", "content": "q"}]}, {"role": "user", "content": "x"}]))
    assert importers.stream_file(path, "openai-chat") is None  # not every element is a conversation
    path.write_text(json.dumps([{"messages": [{"role": "user", "content": "q"}]}, [{"role": "user", "content": "x"}]]))
    assert streamed(path, "openai-chat") == whole(path, "openai-chat")


def test_a_named_pipe_is_refused_before_anything_reads_it(tmp_path: Path) -> None:
    if not hasattr(os, "mkfifo"):
        pytest.skip("named pipes need a POSIX system")
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(NotImportable, match="named pipe"):
        importers.stream_file(fifo, "openhands")


def test_a_file_past_the_whole_file_limit_converts_when_its_format_streams(tmp_path: Path, capsys,
                                                                         monkeypatch) -> None:
    monkeypatch.setattr(base, "MAX_IMPORT_BYTES", 4096)
    path = tmp_path / "output.jsonl"
    path.write_text("\n".join(json.dumps(_instance(n)) for n in range(20)))
    code, out, err = run_cli(capsys, "convert", path, "-o", tmp_path / "out.jsonl")
    assert code == 0 and "20 runs, 40 steps" in out, err
    trajectory = tmp_path / "trajectory.json"  # one run: read whole, so the limit holds
    trajectory.write_text(json.dumps(_instance(0)["history"] * 30, indent=1))
    code, _, err = run_cli(capsys, "convert", trajectory, "-o", tmp_path / "t.jsonl")
    assert code == 2 and "are read whole, at most 4.0 KiB; openhands streams only evaluation output in JSON Lines" in err


def test_show_stats_and_check_read_a_big_file_a_run_at_a_time(tmp_path: Path, capsys, monkeypatch) -> None:
    path = tmp_path / "results.json"
    path.write_text(json.dumps([_result(n) for n in range(6)], indent=1))
    expected = {}
    for command in (["show", path], ["stats", "--json", path], ["check", path, "--fail-on", "error"]):
        expected[command[0]] = run_cli(capsys, *command)
    monkeypatch.setattr(importers, "STREAM_ABOVE_BYTES", 1000)
    spool_dir = tmp_path / "tmp"
    spool_dir.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spool_dir))
    spooled = []
    real_spool = importers.spool
    monkeypatch.setattr(importers, "spool", lambda s: spooled.append(s.name) or real_spool(s))
    for command in (["show", path], ["stats", "--json", path], ["check", path, "--fail-on", "error"]):
        assert run_cli(capsys, *command) == expected[command[0]], command
    assert spooled == ["tau-bench"] * 3
    assert list(spool_dir.iterdir()) == []  # the temporary trace is gone once open


@pytest.mark.parametrize("text", ["[1, 2]", "[]", "[{}]", "[{\"traj\": 3}", "{}"])
def test_convert_says_what_the_whole_file_path_says_and_replaces_nothing_on_failure(text: str, tmp_path: Path, capsys,
                                                                                    monkeypatch) -> None:
    path = tmp_path / "results.json"
    path.write_text(text)
    output = tmp_path / "out.jsonl"
    said = []
    for stream in (True, False):
        output.write_text("kept\n")
        if not stream:
            monkeypatch.setattr(importers, "stream_file", lambda *args: None)
        code, out, err = run_cli(capsys, "convert", path, "-o", output, "--format", "tau-bench", "--force")
        said.append((code, out.split(" (")[0], err))
        if code:
            assert output.read_text() == "kept\n"
    assert said[0] == said[1]


# -- the readers themselves, against jsondata, on any text ---------------------------------

_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                       lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
                       max_leaves=8)


@settings(max_examples=150, deadline=None)
@given(items=st.lists(_VALUES, max_size=5), indent=st.sampled_from([None, 1]), cut=st.integers(0, 10_000),
       insert=st.sampled_from(["", "x", ",", "]", "\xff", "\n"]), block=st.sampled_from([3, 64]))
def test_array_elements_are_what_load_json_gives(tmp_path_factory, items, indent, cut, insert, block) -> None:
    data = json.dumps(items, indent=indent, ensure_ascii=False).encode()
    cut %= len(data) + 1
    data = data[:cut] + insert.encode("latin-1") + data[cut:]
    if not data.lstrip().startswith(b"["):
        return
    path = tmp_path_factory.mktemp("a") / "a.json"
    path.write_bytes(data)
    text, problems = decode(data, str(path))
    src = Source(text, str(path))
    value = jsondata.load_json(src)
    streaming.BLOCK_BYTES, saved = block, streaming.BLOCK_BYTES
    try:
        with streaming.StreamReader(path) as reader:
            assert reader.opens_array()
            assert (list(reader.array_items()), reader.problems) == (value, problems + src.problems)
    finally:
        streaming.BLOCK_BYTES = saved


@settings(max_examples=150, deadline=None)
@given(lines=st.lists(st.sampled_from(['{"a": 1}', "[1]", "", " ", '{"a": "x\u2028y"}', "{bad", "3", "\r", "\x0c",
                                      '{"é": "\\ud800"}', "\xff"]), max_size=6),
       ending=st.sampled_from(["\n", "\r\n"]))
def test_json_lines_are_what_load_json_lines_gives(tmp_path_factory, lines, ending) -> None:
    data = ending.join(lines).encode("utf-8").replace("\xff".encode(), b"\xff")
    path = tmp_path_factory.mktemp("l") / "l.jsonl"
    path.write_bytes(data)
    text, problems = decode(data, str(path))
    src = Source(text, str(path))
    with streaming.StreamReader(path) as reader:
        assert reader.is_json_lines() == jsondata.is_json_lines(text)
        records = [(r.value, r.line) for r in reader.json_lines()]
        assert records == [(r.value, r.line) for r in jsondata.load_json_lines(src)]
        assert reader.problems == problems + src.problems
