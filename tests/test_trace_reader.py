"""The trace reader: indexed by offset, exact state at any step, and damage never loses the valid part."""

from __future__ import annotations

import json
import os
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentdbg.documents import OpenError, open_document
from agentdbg.engine import events as ev
from agentdbg.plans import load_plan
from agentdbg.runs import EventRun
from agentdbg.state import group_run
from agentdbg.trace import format as fmt
from agentdbg.trace import index as trace_index
from agentdbg.trace import reader
from agentdbg.trace.reader import TraceRun, open_trace, sniff
from agentdbg.trace.synthetic import synthetic_run
from agentdbg.trace.writer import TraceWriter, write_trace


def plan_events(sample_plans: Path, name: str) -> list[ev.Event]:
    return load_plan(sample_plans / f"{name}.toml").run().events


def record(path: Path, *runs: list[ev.Event], checkpoint_every: int = fmt.CHECKPOINT_EVERY) -> Path:
    with TraceWriter(path, checkpoint_every=checkpoint_every) as writer:
        for events in runs:
            writer.write_all(events)
    return path


def line_of(path: Path, needle: bytes) -> int:
    """The 1-based number of the first line containing ``needle``."""
    for number, line in enumerate(path.read_bytes().split(b"\n"), 1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} not in {path}")


def all_events(document) -> list[ev.Event]:
    return [event for run in document.runs for event in run.events()]


def complete_events(data: bytes) -> list[ev.Event]:
    """What a reader must recover from ``data``: every complete event line (the last one
    counts when it is whole, even without its newline)."""
    out = []
    lines = data.split(b"\n")
    try:
        json.loads(lines[-1])
    except ValueError:
        lines.pop()
    for line in lines:
        obj = json.loads(line)
        if obj["type"] not in ("header", "checkpoint"):
            out.append(ev.event_from_dict(obj))
    return out


@pytest.fixture
def hallucinating(tmp_path: Path, sample_plans: Path) -> Path:
    return record(tmp_path / "hallucinating.jsonl", plan_events(sample_plans, "library_hallucinating"))


# -- reading what was written ----------------------------------------------------------


@pytest.mark.parametrize("name", ["library_good", "library_hallucinating", "library_stuck", "kv_tax",
                                  "capital_over_budget", "bad_arguments", "population", "tool_failures"])
def test_records_and_states_match_the_events_in_memory(tmp_path: Path, sample_plans: Path, name: str) -> None:
    events = plan_events(sample_plans, name)
    path = record(tmp_path / f"{name}.jsonl", events, checkpoint_every=2)
    expected = EventRun(events)
    with open_trace(path) as document:
        assert document.wait(10)
        assert document.kind == "trace" and document.problems == []
        (run,) = document.runs
        assert isinstance(run, TraceRun)
        assert run.complete and run.step_count == expected.step_count
        assert run.info == expected.info
        assert run.end == expected.end
        for step in range(1, run.step_count + 1):
            assert run.record(step) == expected.record(step)
        # Backwards, so states come from checkpoints rather than from the previous step.
        for step in range(run.step_count, -1, -1):
            assert run.state_at(step) == expected.state_at(step)
        assert run.events() == events
        with pytest.raises(IndexError):
            run.record(run.step_count + 1)
        with pytest.raises(IndexError):
            run.record(0)


def test_states_from_checkpoints_equal_states_folded_from_the_start(tmp_path: Path) -> None:
    events = list(synthetic_run(3000, seed=7))
    path = record(tmp_path / "long.jsonl", events, checkpoint_every=100)
    expected = group_run(events)
    with open_trace(path) as document:
        document.wait(10)
        (run,) = document.runs
        assert len(run.checkpoint_steps) == 29
        for step in (2999, 1500, 100, 101, 99, 3000, 1, 0, 2500):
            assert run.state_at(step) == expected.state_at(step)
        assert run.state_at(3000).outcome == "answered"


def test_a_file_without_checkpoints_is_still_exact_and_keeps_milestones(tmp_path: Path) -> None:
    events = list(synthetic_run(700, seed=3))
    path = record(tmp_path / "nockpt.jsonl", events, checkpoint_every=10_000)
    expected = group_run(events)
    with open_trace(path) as document:
        document.wait(10)
        (run,) = document.runs
        assert len(run.checkpoint_steps) == 0
        assert run.state_at(650) == expected.state_at(650)
        every = fmt.CHECKPOINT_EVERY
        assert run._milestone_steps == list(range(every, 651, every))
        run._states.clear()
        assert run.state_at(600) == expected.state_at(600)


def test_several_runs_in_one_file(tmp_path: Path, sample_plans: Path) -> None:
    names = ["library_good", "library_hallucinating", "library_stuck"]
    path = record(tmp_path / "batch.jsonl", *(plan_events(sample_plans, n) for n in names))
    with open_trace(path) as document:
        document.wait(10)
        assert [run.title for run in document.runs] == ["library-good", "library-hallucinating", "library-stuck"]
        assert [run.step_count for run in document.runs] == [4, 5, 2]
        assert [run.end.outcome for run in document.runs] == ["answered", "answered", "action repeated"]
        assert document.runs[2].record(2).tripped.guard == "repetition"


def test_concatenated_trace_files_open_as_several_runs(tmp_path: Path, sample_plans: Path) -> None:
    first = record(tmp_path / "a.jsonl", plan_events(sample_plans, "library_good"))
    second = record(tmp_path / "b.jsonl", plan_events(sample_plans, "kv_tax"))
    joined = tmp_path / "joined.jsonl"
    joined.write_bytes(first.read_bytes() + second.read_bytes())
    with open_trace(joined) as document:
        document.wait(10)
        assert document.problems == []
        assert [run.step_count for run in document.runs] == [4, 6]
        assert document.runs[0].end.answer == "2"


def test_a_run_that_ends_before_its_first_step(tmp_path: Path) -> None:
    events = [ev.RunStart(step=0, task="nothing to do"),
              ev.RunEnd(step=0, outcome="script exhausted", message="no outputs")]
    path = record(tmp_path / "empty_script.jsonl", events)
    with open_trace(path) as document:
        document.wait(10)
        (run,) = document.runs
        assert run.step_count == 0 and run.end.outcome == "script exhausted"
        assert run.state_at(5).step == 0
        assert run.events() == events


def test_open_document_detects_a_trace_by_content(tmp_path: Path, hallucinating: Path) -> None:
    renamed = tmp_path / "no_extension"
    renamed.write_bytes(hallucinating.read_bytes())
    document = open_document(renamed)
    try:
        assert document.kind == "trace" and document.runs[0].step_count == 5
    finally:
        document.close()
    assert sniff(hallucinating) and not sniff(tmp_path) and not sniff(tmp_path / "missing")


# -- indexing in the background ---------------------------------------------------------


def test_the_first_steps_are_readable_before_the_index_is_complete(tmp_path: Path, monkeypatch) -> None:
    path = record(tmp_path / "big.jsonl", list(synthetic_run(5000, seed=1)))
    monkeypatch.setattr(reader.TraceIndex, "start_thread", lambda self: None)  # hold the background index
    document = open_trace(path)
    try:
        (run,) = document.runs
        assert not document.complete and not run.complete
        known = run.step_count
        assert 0 < known < 5000
        assert run.record(1).step == 1
        assert run.state_at(known).step == known
        with pytest.raises(IndexError, match="indexed so far"):
            run.record(known + 1)
        assert run.end is None
        assert not run.wait_for(known + 1, timeout=0.01)
        document.index.scan_all()
        assert document.complete and run.step_count == 5000 and run.wait_for(5000, timeout=0)
        assert run.record(5000).answer is not None
    finally:
        document.close()


def test_progress_is_reported_while_steps_appear(tmp_path: Path, monkeypatch) -> None:
    path = record(tmp_path / "big.jsonl", list(synthetic_run(3000, seed=2)))
    monkeypatch.setattr(trace_index, "CHUNK_BYTES", 16 * 1024)
    monkeypatch.setattr(trace_index, "FIRST_CHUNK_BYTES", 4 * 1024)
    monkeypatch.setattr(trace_index, "NOTIFY_INTERVAL", 0)
    monkeypatch.setattr(reader.TraceIndex, "start_thread", lambda self: None)
    document = open_trace(path)
    seen: list[int] = []
    document.subscribe(on_progress=lambda: seen.append(document.runs[0].step_count))
    document.index.scan_all()
    assert seen == sorted(seen) and len(set(seen)) > 10 and seen[-1] == 3000
    document.close()


def test_a_run_can_be_read_from_another_thread_while_indexing(tmp_path: Path, monkeypatch) -> None:
    import threading

    events = list(synthetic_run(4000, seed=4))
    path = record(tmp_path / "big.jsonl", events)
    monkeypatch.setattr(trace_index, "CHUNK_BYTES", 8 * 1024)
    expected = group_run(events)
    document = open_trace(path)
    errors: list[BaseException] = []

    def read_along() -> None:
        try:
            run = document.runs[0]
            for step in range(1, 4001):
                assert run.wait_for(step, timeout=10)
                assert run.record(step) == expected.records[step - 1]
        except BaseException as exc:  # reported to the test thread
            errors.append(exc)

    reader_thread = threading.Thread(target=read_along)
    reader_thread.start()
    reader_thread.join(30)
    assert not errors and document.wait(10)
    assert document.runs[0].state_at(4000) == expected.state_at(4000)
    document.close()


# -- damaged input: every valid part still opens ----------------------------------------


def test_a_truncated_last_line_opens_with_every_complete_event(hallucinating: Path) -> None:
    data = hallucinating.read_bytes()
    cut = data[: len(data) - 20]
    hallucinating.write_bytes(cut)
    with open_trace(hallucinating) as document:
        document.wait(10)
        assert all_events(document) == complete_events(cut)
        (problem,) = document.problems
        assert problem.path == str(hallucinating)
        assert problem.line == cut.count(b"\n") + 1
        assert "incomplete" in problem.message
        assert document.runs[0].step_count == 5 and document.runs[0].end is None


def test_a_cut_at_any_byte_opens_with_every_complete_event(tmp_path: Path, sample_plans: Path) -> None:
    original = record(tmp_path / "full.jsonl", plan_events(sample_plans, "library_stuck"), checkpoint_every=1)
    data = original.read_bytes()
    path = tmp_path / "cut.jsonl"
    for size in range(len(data) + 1):
        path.write_bytes(data[:size])
        try:
            document = open_trace(path, background=False)
        except OpenError as exc:
            assert str(path) in str(exc)
            assert size < len(fmt.HEADER_PREFIX)  # only a file cut inside the header's first bytes
            continue
        with document:
            assert all_events(document) == complete_events(data[:size]), size
            for run in document.runs:
                run.state_at(run.step_count)
            tail = data[:size].rsplit(b"\n", 1)[-1]
            if tail and not tail.endswith(b"}"):  # a cut-off line is reported where it is
                assert any(p.line == data[:size].count(b"\n") + 1 for p in document.problems), size


def test_a_corrupt_line_in_the_middle_is_reported_and_skipped(hallucinating: Path) -> None:
    data = hallucinating.read_bytes()
    damaged = data.replace(b'{"type":"action","step":2,', b'{"type":"action","step":2,,,')
    hallucinating.write_bytes(damaged)
    line = line_of(hallucinating, b'"type":"action","step":2,')
    with open_trace(hallucinating) as document:
        document.wait(10)
        run = document.runs[0]
        assert run.step_count == 5
        step2 = run.record(2)
        assert step2.tool is None and step2.observation == "5" and step2.thought == "I need the total copies."
        (problem,) = document.problems
        assert (problem.path, problem.line) == (str(hallucinating), line)
        assert "not valid JSON" in problem.message and "skipped" in problem.message
        assert str(problem).startswith(f"{hallucinating}:{line}: ")
        assert run.record(5).answer == "2" and run.end.answer == "2"


def test_an_invalid_event_is_kept_as_a_raw_record(hallucinating: Path) -> None:
    data = hallucinating.read_bytes()
    hallucinating.write_bytes(data.replace(b'"tool":"loans","args":"Il Gattopardo"', b'"tool":7,"args":"Il Gattopardo"'))
    line = line_of(hallucinating, b'"tool":7')
    with open_trace(hallucinating) as document:
        document.wait(10)
        step3 = document.runs[0].record(3)
        assert step3.tool is None and step3.raw and step3.raw[0].source == "invalid event"
        (problem,) = document.problems
        assert problem.line == line and "'tool' should be str" in problem.message


def test_invalid_utf8_is_reported_and_the_rest_of_the_line_kept(hallucinating: Path) -> None:
    data = hallucinating.read_bytes()
    hallucinating.write_bytes(data.replace(b'"text":"now the copies on loan."', b'"text":"now the \xff\xfe copies on loan."'))
    line = line_of(hallucinating, b"\xff\xfe")
    with open_trace(hallucinating) as document:
        document.wait(10)
        assert document.runs[0].record(3).thought == "now the \ufffd\ufffd copies on loan."
        (problem,) = document.problems
        assert problem.line == line and "UTF-8" in problem.message


def test_a_line_of_50_megabytes_is_reported_without_loading_it(tmp_path: Path, sample_plans: Path) -> None:
    events = plan_events(sample_plans, "library_hallucinating")
    path = record(tmp_path / "huge.jsonl", events)
    data = path.read_bytes()
    huge = b'{"type":"observation","step":2,"text":"' + b"x" * (50 * 1024 * 1024) + b'"}\n'
    marker = b'{"type":"observation","step":2,"text":"5"}\n'
    path.write_bytes(data.replace(marker, huge))
    del data, huge
    line = line_of(path, b'{"type":"observation","step":2,')
    tracemalloc.start()
    try:
        with open_trace(path) as document:
            document.wait(30)
            run = document.runs[0]
            records = [run.record(step) for step in range(1, run.step_count + 1)]
            run.state_at(run.step_count)
            peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 * reader.MAX_LINE_BYTES  # never the whole 50 MB line
    assert len(records) == 5 and records[1].tool == "catalog" and records[1].observation is None
    assert records[1].raw[0].source == "line too long" and "observation event of 50.0 MiB" in records[1].raw[0].note
    assert records[4].answer == "2"
    (problem,) = document.problems
    assert problem.line == line and "line too long" in problem.message


def test_the_line_limit_can_be_raised(tmp_path: Path, sample_plans: Path) -> None:
    events = [ev.RunStart(step=0, task="t"), ev.StepStart(step=1), ev.Observation(step=1, text="y" * 5000)]
    path = record(tmp_path / "long.jsonl", events)
    with open_trace(path, max_line_bytes=1000) as document:
        document.wait(10)
        assert document.runs[0].record(1).observation is None and document.problems
    with open_trace(path) as document:
        document.wait(10)
        assert document.runs[0].record(1).observation == "y" * 5000 and not document.problems


def test_a_newer_format_version_opens_what_it_can(hallucinating: Path) -> None:
    data = hallucinating.read_bytes()
    newer = data.replace(b'"version":1', b'"version":7', 1)
    newer = newer.replace(b'{"type":"step","step":2}\n', b'{"type":"step","step":2}\n{"type":"tool_progress","step":2,"pct":50}\n')
    hallucinating.write_bytes(newer)
    with open_trace(hallucinating) as document:
        document.wait(10)
        run = document.runs[0]
        assert run.step_count == 5 and run.end.answer == "2"
        assert run.record(2).raw[0].note == "type 'tool_progress'"
        (problem,) = document.problems
        assert problem.line == 1 and "newer agentdbg (format version 7" in problem.message


@pytest.mark.parametrize("version", [b'"one"', b"0", b"null", b"true"])
def test_a_wrong_format_version_is_reported(hallucinating: Path, version: bytes) -> None:
    hallucinating.write_bytes(hallucinating.read_bytes().replace(b'"version":1', b'"version":' + version, 1))
    with open_trace(hallucinating) as document:
        document.wait(10)
        assert document.runs[0].step_count == 5
        (problem,) = document.problems
        assert problem.line == 1 and "no valid format version" in problem.message


def test_a_damaged_header_line_still_opens_the_events(hallucinating: Path) -> None:
    data = hallucinating.read_bytes()
    first_newline = data.index(b"\n")
    hallucinating.write_bytes(data[:first_newline - 5] + b"\x00\x00" + data[first_newline:])
    with open_trace(hallucinating) as document:
        document.wait(10)
        assert document.runs[0].step_count == 5
        assert [p.line for p in document.problems] == [1]


@pytest.mark.parametrize("header, message", [
    (b'{"type":"header","format":5,"version":1}', "header names format 5, not 'agentdbg-trace'"),
    (b'{"type":"header","format":"agentdbg-trace\\u0000x","version":1}',
     "header names format 'agentdbg-trace\\x00x', not 'agentdbg-trace'"),
    (b'{"type":"header","format":null,"version":1}', "header names format None"),
    (b'{"type":"header","version":1}', "header names format None"),
    (b'{"type":"header","format":"other-tool","version":1}', "header names format 'other-tool'"),
    (b'{"type":"header","format":"agentdbg-trace","version":1', "the header line is not valid JSON"),
    (b"# recorded on Tuesday", "the header line is not valid JSON"),
    (b"[1, 2, 3]", "line 1 is not the header line"),
])
def test_a_damaged_header_format_opens_the_steps_with_a_problem_on_line_1(hallucinating: Path, header: bytes,
                                                                          message: str) -> None:
    data = hallucinating.read_bytes()
    hallucinating.write_bytes(header + data[data.index(b"\n"):])
    assert sniff(hallucinating)
    with open_trace(hallucinating) as document:
        document.wait(10)
        assert document.runs[0].step_count == 5 and document.runs[0].end.answer == "2"
        assert [(p.line, message in p.message) for p in document.problems] == [(1, True)], document.problems


def test_a_damaged_header_alone_is_still_a_trace_and_another_tools_header_is_not(tmp_path: Path) -> None:
    path = tmp_path / "header.jsonl"
    path.write_bytes(b'{"type":"header","format":7,"version":1}\n')
    assert sniff(path)
    path.write_bytes(b'{"type":"header","format":"other-tool","version":1}\n{"rows": 3}\n')
    assert not sniff(path)


@pytest.mark.parametrize("tools, names, message", [
    (None, set(), "'tools' should be a list of tool specs, got null; read as no tools declared"),
    (True, set(), "got true; read as no tools declared"),
    (5, set(), "got a number (5); read as no tools declared"),
    ("calc", set(), "got a string; read as no tools declared"),
    ({"name": "calc"}, set(), "got an object; read as no tools declared"),
    ([1, "a", None], set(), "3 of its 3 entries are not tool specs"),
    ([{"name": 5}, {"name": "calc", "params": {"expression": "str"}}], {"calc"}, "1 of its 2 entries are not tool specs"),
    ([{"name": "calc", "params": "expression"}], {"calc"}, "a tool's 'params' is not an object"),
])
def test_malformed_run_start_tools_read_as_no_tools_with_a_problem(hallucinating: Path, tools, names: set,
                                                                    message: str) -> None:
    lines = hallucinating.read_bytes().split(b"\n")
    run_start = json.loads(lines[1])
    lines[1] = json.dumps({**run_start, "tools": tools}, separators=(",", ":")).encode()
    hallucinating.write_bytes(b"\n".join(lines))
    with open_trace(hallucinating) as document:
        document.wait(10)
        run = document.runs[0]
        assert run.info.task == run_start["task"] and run.info.guards == run_start["guards"]  # the rest is kept
        assert run.info.tool_names() == names
        assert run.state_at(run.step_count).tool_calls  # the steps read on
        assert [(p.line, message in p.message) for p in document.problems] == [(2, True)], document.problems
        assert all(isinstance(spec.get("params", {}), dict) for spec in run.info.tools)


def test_a_header_only_file_has_no_runs_and_no_problems(tmp_path: Path) -> None:
    path = tmp_path / "header.jsonl"
    path.write_text(fmt.header_line())
    with open_trace(path) as document:
        assert document.wait(10) and document.runs == [] and document.problems == []


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "empty file"),
        (bytes(range(256)) * 40, "is a binary file"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "is a binary file"),
        (b"hello, world\n", "line 1 should be the header"),
        (b'{"type":"header","format":"other-tool","version":1}\n', "line 1 should be the header"),
        (b"[1, 2, 3]\n", "line 1 should be the header"),
    ],
)
def test_what_cannot_be_a_trace_raises_a_clear_error(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "input.jsonl"
    path.write_bytes(content)
    with pytest.raises(OpenError, match=message) as raised:
        open_trace(path)
    assert str(raised.value).startswith(str(path))


def test_a_directory_or_a_missing_file_raises_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(OpenError, match="is a directory"):
        open_trace(tmp_path)
    with pytest.raises(OpenError, match="no such file"):
        open_trace(tmp_path / "missing.jsonl")


def test_events_without_a_header_line_open_with_a_note(hallucinating: Path) -> None:
    data = hallucinating.read_bytes()
    hallucinating.write_bytes(data[data.index(b"\n") + 1:])
    assert sniff(hallucinating)
    with open_trace(hallucinating) as document:
        document.wait(10)
        assert document.runs[0].step_count == 5 and document.runs[0].info.name == "library-hallucinating"
        (problem,) = document.problems
        assert problem.line == 1 and "no header line" in problem.message


def test_a_damaged_step_line_is_named_and_its_events_kept(hallucinating: Path) -> None:
    data = hallucinating.read_bytes()
    hallucinating.write_bytes(data.replace(b'{"type":"step","step":3}', b'{"type":"stpe","step":3}'))
    with open_trace(hallucinating) as document:
        document.wait(10)
        run = document.runs[0]
        assert run.step_count == 4  # step 3's events now sit inside step 2
        assert run.record(4).answer == "2"
        # merged: a step of two calls, each with its observation; nothing is dropped
        assert [call.tool for call in run.record(2).calls] == ["catalog", "loans"]
        assert [e.type for e in run.record(2).events].count("action") == 2
        messages = [p.message for p in document.problems]
        assert any("event of step 3 inside step 2" in m for m in messages)
        assert all(p.line is not None for p in document.problems)


def test_garbage_between_the_header_and_the_first_run_is_reported(hallucinating: Path) -> None:
    data = hallucinating.read_bytes()
    first_newline = data.index(b"\n") + 1
    hallucinating.write_bytes(data[:first_newline] + b"garbage line\n" + data[first_newline:])
    with open_trace(hallucinating) as document:
        document.wait(10)
        assert document.runs[0].step_count == 5
        assert [(p.line, "not valid JSON" in p.message) for p in document.problems] == [(2, True)]


def test_steps_before_any_run_start_form_a_run_without_a_header(hallucinating: Path) -> None:
    lines = hallucinating.read_bytes().split(b"\n")
    hallucinating.write_bytes(b"\n".join(line for line in lines if not line.startswith(fmt.RUN_START_PREFIX)))
    with open_trace(hallucinating) as document:
        document.wait(10)
        (run,) = document.runs
        assert run.step_count == 5 and run.info.task == "" and run.title == "run 1"
        assert any("before any run_start" in p.message and p.line == 2 for p in document.problems)


def test_a_damaged_checkpoint_is_reported_and_the_state_rebuilt(tmp_path: Path) -> None:
    events = list(synthetic_run(300, seed=5))
    path = record(tmp_path / "ckpt.jsonl", events, checkpoint_every=100)
    data = path.read_bytes()
    path.write_bytes(data.replace(b'{"type":"checkpoint","step":200,"state":{"v":1,',
                                  b'{"type":"checkpoint","step":200,"state":{"v":9,'))
    line = line_of(path, b'{"type":"checkpoint","step":200,')
    expected = group_run(events)
    with open_trace(path) as document:
        document.wait(10)
        assert document.runs[0].state_at(250) == expected.state_at(250)
        (problem,) = document.problems
        assert problem.line == line and "checkpoint" in problem.message


def test_a_checkpoint_in_the_wrong_place_is_not_trusted(tmp_path: Path) -> None:
    events = list(synthetic_run(300, seed=6))
    path = record(tmp_path / "ckpt.jsonl", events, checkpoint_every=100)
    data = path.read_bytes()
    start = data.index(b'{"type":"checkpoint","step":100,')
    end = data.index(b"\n", start) + 1
    moved = data[start:end]
    rest = data[:start] + data[end:]
    at = rest.index(b'{"type":"step","step":151}')
    path.write_bytes(rest[:at] + moved + rest[at:])
    expected = group_run(events)
    with open_trace(path) as document:
        document.wait(10)
        assert document.runs[0].state_at(160) == expected.state_at(160)
        assert any("checkpoint says step 100, but it follows step 150" in p.message for p in document.problems)


def test_windows_line_endings_read_the_same(hallucinating: Path) -> None:
    data = hallucinating.read_bytes()
    hallucinating.write_bytes(data.replace(b"\n", b"\r\n"))
    with open_trace(hallucinating) as document:
        document.wait(10)
        assert document.problems == []
        assert document.runs[0].step_count == 5 and document.runs[0].record(1).tool == "web_search"


def test_opening_a_trace_never_runs_code(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    payload = f"__import__('pathlib').Path({str(marker)!r}).touch()"
    events = [ev.RunStart(step=0, task=payload), ev.StepStart(step=1),
              ev.RawRecord(step=1, source="python", data={"__reduce__": payload, "eval": payload})]
    path = record(tmp_path / "payload.jsonl", events)
    path.write_bytes(path.read_bytes() + b'{"type":"thought","step":1,"text":' + json.dumps(payload).encode() + b"}\n")
    with open_trace(path) as document:
        document.wait(10)
        run = document.runs[0]
        assert run.record(1).thought and run.state_at(1).step == 1 and run.events()
    assert not marker.exists()


def test_closing_releases_the_file(hallucinating: Path) -> None:
    document = open_trace(hallucinating)
    run = document.runs[0]
    document.wait(10)
    fd = document.source.fd
    document.close()
    with pytest.raises(OSError):
        os.fstat(fd)
    with pytest.raises(ValueError, match="closed"):
        run.record(3)


def test_write_trace_output_reads_back(tmp_path: Path, sample_plans: Path) -> None:
    runs = [plan_events(sample_plans, n) for n in ("library_good", "capital_over_budget")]
    path = tmp_path / "converted.jsonl"
    write_trace(path, runs)
    with open_trace(path) as document:
        document.wait(10)
        assert [run.events() for run in document.runs] == runs


# -- any bytes at all -------------------------------------------------------------------


def _read_everything(document) -> None:
    document.wait(10)
    for run in document.runs:
        assert isinstance(run.title, str) and run.info is not None
        assert run.end is None or isinstance(run.end, ev.RunEnd)
        for step in range(1, run.step_count + 1):
            run.record(step)
        run.state_at(run.step_count)
        run.events()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=2000))
def test_any_bytes_open_or_raise_open_error(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "any.bin"
    path.write_bytes(data)
    try:
        document = open_trace(path, background=False)
    except OpenError:
        return
    with document:
        _read_everything(document)


_LINES = st.sampled_from([
    b'{"type":"run_start","step":0,"task":"t"}', b'{"type":"step","step":1}', b'{"type":"step","step":"x"}',
    b'{"type":"checkpoint","step":1,"state":{"v":1}}', b'{"type":"checkpoint","step":0,"state":[]}',
    b'{"type":"thought","step":1,"text":"hi"}', b'{"type":"run_end","step":1,"outcome":"answered"}',
    b'{"type":"header","format":"agentdbg-trace","version":2}', b'{"type":"guards","step":1,"steps":[1]}',
    b'{"type":"memory_update","step":1,"evicted":["a"],"added":["b"]}', b"[[[[[[", b"\xff\xfe", b"", b"null",
    b'{"type":"action","step":1,"tool":"t","args":{}}', b'{"type":"observation","step":1,"text":"\\u001b[2J"}',
])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.one_of(_LINES, st.binary(max_size=40)), max_size=30), cut=st.integers(0, 50))
def test_any_sequence_of_lines_after_a_header_opens(tmp_path: Path, lines: list[bytes], cut: int) -> None:
    data = fmt.header_line().encode() + b"\n".join(lines)
    path = tmp_path / "lines.jsonl"
    path.write_bytes(data[: len(data) - cut] if cut < len(data) else data)
    try:
        document = open_trace(path, background=False, max_line_bytes=64)
    except OpenError:
        return
    with document:
        _read_everything(document)
        for problem in document.problems:
            assert problem.path == str(path)


@pytest.mark.parametrize("guards", [b'"steps":[1],"repeats":[1,2]', b'"steps":[2,6],"repeats":["x",null]',
                                    b'"steps":[2,6],"repeats":[1,2,3]', b'"steps":[true,6],"repeats":[1,2]'])
def test_malformed_guard_counters_are_kept_as_raw_records(hallucinating: Path, guards: bytes) -> None:
    data = hallucinating.read_bytes()
    hallucinating.write_bytes(data.replace(b'{"type":"guards","step":2,"steps":[2,6],"repeats":[1,2]',
                                           b'{"type":"guards","step":2,' + guards + b',"x":[2,6]', 1))
    with open_trace(hallucinating) as document:
        document.wait(10)
        run = document.runs[0]
        assert run.record(2).guards is None and run.record(2).raw
        assert run.state_at(5).answer == "2"
        (problem,) = document.problems
        assert problem.line == line_of(hallucinating, b'"x":[2,6]') and "should be [count, limit or null]" in problem.message


def test_step_bytes_are_the_steps_lines_as_written(hallucinating: Path) -> None:
    data = hallucinating.read_bytes()
    with open_trace(hallucinating) as document:
        document.wait(10)
        run = document.runs[0]
        pieces = [run.step_bytes(step) for step in range(1, 6)]
        assert pieces[0].startswith(b'{"type":"step","step":1}\n') and pieces[0].endswith(b"\n")
        assert b"".join(pieces) == data[data.index(b'{"type":"step","step":1}'):]
        with pytest.raises(IndexError):
            run.step_bytes(6)
    with open_trace(hallucinating, max_line_bytes=100) as document:
        document.wait(10)
        assert document.runs[0].step_bytes(1) is None  # too big for a byte test: decode it


@pytest.mark.parametrize("bad", [b'"tool_calls":{"calc":["x",0]}', b'"tool_calls":{"calc":[1]}', b'"trips":[[1]]'])
def test_a_checkpoint_with_malformed_counts_is_not_trusted(tmp_path: Path, bad: bytes) -> None:
    events = list(synthetic_run(300, seed=8))
    path = record(tmp_path / "ckpt.jsonl", events, checkpoint_every=100)
    data = path.read_bytes()
    start = data.index(b'{"type":"checkpoint","step":200,')
    end = data.index(b"\n", start)
    line = json.loads(data[start:end])
    key = bad.split(b'"')[1].decode()
    line["state"][key] = json.loads(b"{" + bad + b"}")[key]
    path.write_bytes(data[:start] + json.dumps(line, separators=(",", ":")).encode() + data[end:])
    with open_trace(path) as document:
        document.wait(10)
        assert document.runs[0].state_at(250) == group_run(events).state_at(250)
        assert any("checkpoint" in p.message for p in document.problems)


def test_closing_while_indexing_wakes_every_waiter(tmp_path: Path, monkeypatch) -> None:
    path = record(tmp_path / "big.jsonl", list(synthetic_run(3000, seed=2)))
    monkeypatch.setattr(reader.TraceIndex, "start_thread", lambda self: None)
    document = open_trace(path)
    run = document.runs[0]
    document.close()
    assert document.wait(1) and run.wait(1) and run.wait_for(10_000, 1)


def test_an_index_that_fails_says_where_and_keeps_what_it_found(tmp_path: Path, monkeypatch) -> None:
    path = record(tmp_path / "big.jsonl", list(synthetic_run(3000, seed=2)))
    monkeypatch.setattr(trace_index, "CHUNK_BYTES", 64 * 1024)
    calls = {"n": 0}
    real_scan = reader.TraceIndex._scan_chunk

    def failing_scan(self, size):
        calls["n"] += 1
        if calls["n"] == 4:
            raise OSError(5, "Input/output error")
        return real_scan(self, size)

    monkeypatch.setattr(reader.TraceIndex, "_scan_chunk", failing_scan)
    with open_trace(path) as document:
        assert document.wait(10)
        run = document.runs[0]
        assert 0 < run.step_count < 3000 and run.record(1).step == 1
        assert any("indexing stopped at byte" in p.message and "Input/output error" in p.message for p in document.problems)


def test_opening_and_indexing_parse_no_event_line(tmp_path: Path, monkeypatch) -> None:
    path = record(tmp_path / "big.jsonl", list(synthetic_run(3000, seed=3)))
    parsed: list[object] = []
    real_loads = json.loads
    monkeypatch.setattr(json, "loads", lambda text, *a, **k: parsed.append(text) or real_loads(text, *a, **k))
    with open_trace(path) as document:
        document.wait(10)
        assert document.runs[0].step_count == 3000
        assert len(parsed) == 1  # the header line only
        document.runs[0].record(1500)
        assert len(parsed) > 1


def test_any_steps_state_decodes_at_most_one_checkpoint_interval(tmp_path: Path, monkeypatch) -> None:
    events = list(synthetic_run(3000, seed=4))
    path = record(tmp_path / "big.jsonl", events, checkpoint_every=100)
    decoded: list[int] = []
    real = reader._Source.decode_span
    monkeypatch.setattr(reader._Source, "decode_span",
                        lambda self, start, end, step: decoded.append(step) or real(self, start, end, step))
    with open_trace(path) as document:
        document.wait(10)
        run = document.runs[0]
        assert run.state_at(2999) == group_run(events).state_at(2999)
        assert sorted(decoded) == list(range(2901, 3000))  # from the checkpoint after step 2900
        decoded.clear()
        run.state_at(1234)
        assert len(decoded) <= 100


def test_checkpoints_of_several_runs_stay_with_their_run(tmp_path: Path, sample_plans: Path, monkeypatch) -> None:
    names = ["library_hallucinating", "kv_tax", "library_stuck", "capital_over_budget"]
    runs = [plan_events(sample_plans, n) for n in names]
    path = record(tmp_path / "batch.jsonl", *runs, checkpoint_every=1)
    # A checkpoint of the wrong run, right after a run_start: must not be taken by either run.
    data = path.read_bytes()
    start = data.index(b'{"type":"checkpoint","step":1,')
    stray = data[start:data.index(b"\n", start) + 1]
    at = data.index(b"\n", data.index(b'"name":"kv-tax"')) + 1
    path.write_bytes(data[:at] + stray + data[at:])
    monkeypatch.setattr(trace_index, "FIRST_CHUNK_BYTES", 700)
    monkeypatch.setattr(trace_index, "CHUNK_BYTES", 900)
    with open_trace(path) as document:
        document.wait(10)
        assert [run.step_count for run in document.runs] == [5, 6, 2, 3]
        assert [list(run.checkpoint_steps) for run in document.runs] == [[1, 2, 3, 4], [0, 1, 2, 3, 4, 5], [1], [1, 2]]
        for run, events in zip(document.runs, runs, strict=True):
            expected = EventRun(events)
            for step in range(run.step_count, -1, -1):
                assert run.state_at(step) == expected.state_at(step)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_named_pipe_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    assert not sniff(fifo)
    with pytest.raises(OpenError, match=r"is a named pipe \(FIFO\), not a regular file"):
        open_trace(fifo)


def test_problems_are_announced_as_they_are_found(hallucinating: Path, monkeypatch) -> None:
    data = hallucinating.read_bytes()
    damaged = data.replace(b'{"type":"thought","step":3,', b'{"type":"thought","step":3,,')
    hallucinating.write_bytes(damaged[:-10])  # and a cut-off last line
    monkeypatch.setattr(trace_index, "FIRST_CHUNK_BYTES", 100)  # what open_trace finds is in .problems already
    monkeypatch.setattr(reader.TraceIndex, "start_thread", lambda self: None)
    document = open_trace(hallucinating)
    heard = []
    document.subscribe(on_problem=heard.append)
    document.index.scan_all()
    assert [p.message.split(" (")[0] for p in heard] == ["the last line is incomplete"]
    document.runs[0].record(3)
    assert len(heard) == 2 and heard[1].line == line_of(hallucinating, b'"step":3,,')
    assert heard == document.problems
    document.close()


@pytest.mark.parametrize("layout", ["spaces", "type_last"])
def test_a_trace_not_in_the_compact_layout_says_why_no_run_is_found(sample_plans, tmp_path, layout):
    events = plan_events(sample_plans, "library_good")
    path = record(tmp_path / "trace.jsonl", events)
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    if layout == "spaces":  # json.dumps' default separators, as a hand-written writer might use
        text = "".join(json.dumps(line) + "\n" for line in lines)
    else:  # keys sorted: "type" is not first
        text = lines and json.dumps(lines[0]) + "\n" + "".join(
            json.dumps({k: v for k, v in sorted(line.items()) if k != "type"} | {"type": line["type"]}) + "\n"
            for line in lines[1:])
    path.write_text(text, encoding="utf-8")
    document = open_document(path)
    document.wait(30)
    assert len(document.runs) == 0
    problems = [str(p) for p in document.problems]
    assert problems[0].startswith(f"{path}:2: a run_start line not in the trace layout")
    assert '{"type":"run_start",' in problems[0] and "compact" in problems[0]
    assert "outside any run" not in " ".join(problems)  # not blamed on a missing run_start
    assert any("more run_start, step or checkpoint lines not in the trace layout" in p for p in problems)
    document.close()
