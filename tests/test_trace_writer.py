"""The trace writer: header, one compact line per event, checkpoints, append, crash-safe lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentdbg.engine import events as ev
from agentdbg.plans import load_plan
from agentdbg.state import group_run
from agentdbg.trace import format as fmt
from agentdbg.trace.writer import TraceWriter, write_trace


def plan_events(sample_plans: Path, name: str) -> list[ev.Event]:
    return load_plan(sample_plans / f"{name}.toml").run().events


def lines(path: Path) -> list[dict]:
    # Split on "\n" only: str.splitlines would also split inside text at U+2028.
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line]


def test_a_new_file_starts_with_the_header_then_one_line_per_event(tmp_path: Path, sample_plans: Path) -> None:
    events = plan_events(sample_plans, "library_hallucinating")
    path = tmp_path / "run.jsonl"
    with TraceWriter(path) as writer:
        for event in events:
            writer.write(event)
    raw = path.read_bytes()
    assert raw.startswith(fmt.HEADER_PREFIX)
    header, *rest = lines(path)
    assert header["format"] == "agentdbg-trace" and header["version"] == fmt.FORMAT_VERSION
    assert [ev.event_from_dict(d) for d in rest] == events
    # Every step line starts with the exact bytes the reader's index looks for.
    step_lines = [line for line in raw.split(b"\n") if b'"type":"step"' in line]
    assert len(step_lines) == 5 and all(line.startswith(fmt.STEP_PREFIX) for line in step_lines)
    assert raw.endswith(b"\n")


def test_each_event_is_on_disk_as_soon_as_it_is_written(tmp_path: Path, sample_plans: Path) -> None:
    events = plan_events(sample_plans, "library_good")
    path = tmp_path / "run.jsonl"
    writer = TraceWriter(path)
    for count, event in enumerate(events, 1):
        writer.write(event)
        # Read through another handle, without closing the writer: nothing is buffered.
        assert len(path.read_bytes().splitlines()) == count + 1
    writer.close()


def test_checkpoints_hold_the_state_folded_from_the_steps_before_them(tmp_path: Path, sample_plans: Path) -> None:
    events = plan_events(sample_plans, "library_hallucinating")
    path = tmp_path / "run.jsonl"
    with TraceWriter(path, checkpoint_every=2) as writer:
        writer.write_all(events)
    written = lines(path)[1:]
    checkpoints = [d for d in written if d["type"] == "checkpoint"]
    assert [c["step"] for c in checkpoints] == [2, 4]
    run = group_run(events)
    for checkpoint in checkpoints:
        assert checkpoint["state"] == json.loads(json.dumps(run.state_at(checkpoint["step"]).to_dict()))
        # Between steps: the next line opens the next step.
        following = written[written.index(checkpoint) + 1]
        assert following == {"type": "step", "step": checkpoint["step"] + 1}
    # Without the checkpoints, the events are exactly the run's.
    assert [ev.event_from_dict(d) for d in written if d["type"] != "checkpoint"] == events


def test_no_checkpoint_after_the_last_step(tmp_path: Path, sample_plans: Path) -> None:
    path = tmp_path / "run.jsonl"
    with TraceWriter(path, checkpoint_every=4) as writer:
        writer.write_all(plan_events(sample_plans, "library_good"))  # 4 steps exactly
    assert not [d for d in lines(path) if d["type"] == "checkpoint"]


def test_checkpoints_in_the_input_are_replaced_by_the_writers_own(tmp_path: Path, sample_plans: Path) -> None:
    events = plan_events(sample_plans, "library_good")
    bogus = ev.Checkpoint(step=1, state={"v": 999})
    path = tmp_path / "run.jsonl"
    with TraceWriter(path, checkpoint_every=1000) as writer:
        writer.write_all([events[0], bogus, *events[1:]])
    assert not [d for d in lines(path) if d["type"] == "checkpoint"]


def test_appending_adds_runs_without_a_second_header(tmp_path: Path, sample_plans: Path) -> None:
    path = tmp_path / "batch.jsonl"
    for name in ("library_good", "library_stuck"):
        with TraceWriter(path) as writer:
            writer.write_all(plan_events(sample_plans, name))
    written = lines(path)
    assert [d["type"] for d in written].count("header") == 1
    assert [d.get("name") for d in written if d["type"] == "run_start"] == ["library-good", "library-stuck"]


def test_appending_after_a_cut_line_keeps_the_new_events_intact(tmp_path: Path, sample_plans: Path) -> None:
    path = tmp_path / "cut.jsonl"
    with TraceWriter(path) as writer:
        writer.write_all(plan_events(sample_plans, "library_good"))
    with open(path, "ab") as handle:
        handle.write(b'{"type":"thought","step":5,"te')  # a recording killed mid-line
    with TraceWriter(path) as writer:
        writer.write_all(plan_events(sample_plans, "library_stuck"))
    raw_lines = path.read_bytes().split(b"\n")
    assert b'{"type":"thought","step":5,"te' in raw_lines  # still its own (damaged) line
    assert raw_lines[raw_lines.index(b'{"type":"thought","step":5,"te') + 1].startswith(fmt.RUN_START_PREFIX)


def test_refuses_to_append_to_a_file_that_is_not_a_trace(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("my notes\n")
    with pytest.raises(ValueError, match="not an agentdbg trace"):
        TraceWriter(path)
    assert path.read_text() == "my notes\n"


def test_fsync_mode_writes_the_same_bytes(tmp_path: Path, sample_plans: Path) -> None:
    events = plan_events(sample_plans, "kv_tax")
    plain, synced = tmp_path / "plain.jsonl", tmp_path / "synced.jsonl"
    with TraceWriter(plain) as writer:
        writer.write_all(events)
    with TraceWriter(synced, fsync=True) as writer:
        writer.write_all(events)
    assert plain.read_bytes() == synced.read_bytes()


def test_the_writer_is_an_on_event_callback(tmp_path: Path, sample_plans: Path) -> None:
    path = tmp_path / "live.jsonl"
    with TraceWriter(path) as writer:
        trace = load_plan(sample_plans / "kv_tax.toml").run(on_event=writer)
    assert [ev.event_from_dict(d) for d in lines(path)[1:]] == trace.events


def test_write_trace_writes_several_runs_and_summarises(tmp_path: Path, sample_plans: Path) -> None:
    runs = [plan_events(sample_plans, name) for name in ("library_good", "library_hallucinating", "library_stuck")]
    path = tmp_path / "converted.jsonl"
    summary = write_trace(path, runs, checkpoint_every=2)
    assert (summary.runs, summary.steps, summary.events) == (3, 4 + 5 + 2, sum(map(len, runs)))
    assert summary.checkpoints == 1 + 2 + 0
    written = lines(path)
    assert written[0]["type"] == "header"
    assert [ev.event_from_dict(d) for d in written[1:] if d["type"] != "checkpoint"] == [e for run in runs for e in run]
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left behind


def test_write_trace_replaces_an_existing_file_and_leaves_it_alone_on_failure(tmp_path: Path, sample_plans: Path) -> None:
    path = tmp_path / "out.jsonl"
    path.write_text("old content\n")

    def failing_run():
        yield from plan_events(sample_plans, "library_good")[:3]
        raise RuntimeError("source broke")

    with pytest.raises(RuntimeError):
        write_trace(path, [failing_run()])
    assert path.read_text() == "old content\n"
    assert list(tmp_path.iterdir()) == [path]
    write_trace(path, [plan_events(sample_plans, "library_good")])
    assert lines(path)[0]["type"] == "header"


def test_untrusted_text_is_written_verbatim_and_stays_on_one_line(tmp_path: Path) -> None:
    hostile = 'line\nbreak "quotes" \x1b]52;c;ZXZpbA==\x07 \u2028 \x00 é'
    events = [
        ev.RunStart(step=0, task=hostile),
        ev.StepStart(step=1),
        ev.Observation(step=1, text=hostile),
    ]
    path = tmp_path / "hostile.jsonl"
    with TraceWriter(path) as writer:
        writer.write_all(events)
    raw = path.read_bytes()
    assert raw.count(b"\n") == 4
    assert [ev.event_from_dict(d) for d in lines(path)[1:]] == events


def test_the_example_in_the_format_guide_is_what_a_recording_writes(tmp_path: Path, sample_plans: Path) -> None:
    guide = (Path(__file__).resolve().parents[1] / "docs" / "trace-format.md").read_text(encoding="utf-8")
    block = guide[guide.index('\n{"type":"header"') + 1:]
    example = [json.loads(line) for line in block[: block.index("\n```")].split("\n")]
    path = tmp_path / "run.jsonl"
    with TraceWriter(path, checkpoint_every=2, header={"source": "sample_plans/library_hallucinating.toml"}) as writer:
        writer.write_all(plan_events(sample_plans, "library_hallucinating"))
    written = lines(path)
    for data in (written[1], example[1]):
        data.pop("source", None)  # the plan's path as it was given
    assert [e for e in written if e["type"] != "header"] == [e for e in example if e["type"] != "header"]
