"""The trace writer: header, one compact line per event, checkpoints, append, crash-safe lines."""

from __future__ import annotations

import errno
import io
import json
import os
from pathlib import Path

import pytest

from agentdbg.engine import events as ev
from agentdbg.plans import load_plan
from agentdbg.state import group_run
from agentdbg.trace import format as fmt
from agentdbg.trace import writer as writer_module
from agentdbg.trace.reader import open_trace
from agentdbg.trace.writer import TraceWriteError, TraceWriter, write_trace


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


def test_a_lone_surrogate_is_written_escaped_and_reads_back(tmp_path: Path) -> None:
    events = [ev.RunStart(step=0, task="é \ud800"), ev.StepStart(step=1), ev.Thought(step=1, text="x \udfff y")]
    path = tmp_path / "surrogate.jsonl"
    write_trace(path, [events], header={"source": "file\udcff.traj"})  # an undecodable file name
    assert b"\\ud800" in path.read_bytes() and b"\\udcff" in path.read_bytes()
    header, *rest = lines(path)
    assert header["source"] == "file\udcff.traj"
    assert [ev.event_from_dict(d) for d in rest] == events


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
        assert len(data.pop("source_sha256")) == 64  # and its hash, which follows any edit of the sample
    assert [e for e in written if e["type"] != "header"] == [e for e in example if e["type"] != "header"]


# -- a write that fails: disk full, I/O error, file too large ---------------------------------


class FillingFile(io.FileIO):
    """A file on a disk with ``room`` bytes left: writes are cut short there, then fail."""

    room = 0
    error = errno.ENOSPC

    def write(self, data) -> int:
        if FillingFile.room <= 0:
            raise OSError(FillingFile.error, os.strerror(FillingFile.error))
        written = super().write(bytes(data[: FillingFile.room]))
        FillingFile.room -= written
        return written


def filling_open(fd: int, mode: str, buffering: int, closefd: bool):
    raw = FillingFile(fd, mode, closefd)
    return io.BufferedWriter(raw, buffering) if buffering else raw


@pytest.fixture
def disk_with_room(monkeypatch):
    def limit(room: int, error: int = errno.ENOSPC) -> None:
        monkeypatch.setattr(FillingFile, "room", room)
        monkeypatch.setattr(FillingFile, "error", error)
        monkeypatch.setattr(writer_module, "open", filling_open, raising=False)

    return limit


def complete_event_lines(path: Path) -> list[bytes]:
    data = path.read_bytes()
    assert data.endswith(b"\n"), "no half-written line is left at the end"
    return [line for line in data.split(b"\n")[1:] if line and not line.startswith(fmt.CHECKPOINT_PREFIX)]


@pytest.mark.parametrize("error, reason", [(errno.ENOSPC, "No space left on device"),
                                           (errno.EIO, "Input/output error"),
                                           (errno.EFBIG, "File too large")])
def test_a_failed_write_cuts_the_half_line_and_says_how_much_the_trace_holds(
        tmp_path: Path, sample_plans: Path, disk_with_room, error, reason) -> None:
    events = plan_events(sample_plans, "library_hallucinating")
    path = tmp_path / "run.jsonl"
    disk_with_room(2000, error)
    writer = TraceWriter(path)
    with pytest.raises(TraceWriteError) as failed:
        writer.write_all(events)
    kept = complete_event_lines(path)
    assert 0 < len(kept) < len(events) and failed.value.events_kept == len(kept) == writer.events_written
    assert str(failed.value) == f"cannot write {path}: {reason} (the trace holds the first {len(kept)} events)"
    assert failed.value.errno == error and isinstance(failed.value, OSError)
    assert [ev.event_from_dict(json.loads(line)) for line in kept] == events[: len(kept)]
    with pytest.raises(TraceWriteError):  # the writer stays failed: the run stops
        writer.write(events[-1])
    writer.close()  # already reported: closing is quiet
    assert complete_event_lines(path) == kept
    with open_trace(path) as document:
        assert document.wait(10)
        assert document.runs[0].events() == events[: len(kept)]
        assert [p for p in document.problems if "incomplete" in p.message] == []


def test_a_header_that_cannot_be_written_leaves_an_empty_file_and_no_events(tmp_path: Path, disk_with_room) -> None:
    path = tmp_path / "run.jsonl"
    disk_with_room(10)
    with pytest.raises(TraceWriteError, match=r"No space left on device \(the trace holds no events\)$"):
        TraceWriter(path)
    assert path.read_bytes() == b""
    disk_with_room(10_000)  # space again
    TraceWriter(path, mode="create").close()  # an empty file is no obstacle to the next recording


def test_appending_when_the_disk_fills_keeps_the_earlier_runs(tmp_path: Path, sample_plans: Path, disk_with_room) -> None:
    path = tmp_path / "batch.jsonl"
    with TraceWriter(path) as writer:
        writer.write_all(plan_events(sample_plans, "library_good"))
    before = path.read_bytes()
    stuck = plan_events(sample_plans, "library_stuck")
    disk_with_room(len(fmt.event_line(stuck[0]).encode()) + 5)  # room for the run_start line only
    with pytest.raises(TraceWriteError) as failed, TraceWriter(path) as writer:
        writer.write_all(stuck)
    assert str(failed.value).endswith("(the trace holds its earlier runs and the first 1 event of this one)")
    assert path.read_bytes().startswith(before) and path.read_bytes().endswith(b"\n")


def test_a_real_full_device_under_the_writer(tmp_path: Path, sample_plans: Path) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    events = plan_events(sample_plans, "library_good")
    path = tmp_path / "run.jsonl"
    writer = TraceWriter(path)
    writer.write_all(events[:3])
    full = os.open("/dev/full", os.O_WRONLY)
    os.dup2(full, writer._file.fileno())  # from here on, every write meets a full disk
    os.close(full)
    with pytest.raises(TraceWriteError, match=r"No space left on device \(the trace holds the first 3 events\)"):
        writer.write_all(events[3:])
    writer.close()
    assert len(complete_event_lines(path)) == 3


def test_a_failing_fsync_is_a_write_error(tmp_path: Path, sample_plans: Path, monkeypatch) -> None:
    def broken_fsync(fd: int) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    path = tmp_path / "run.jsonl"
    writer = TraceWriter(path, fsync=True)
    monkeypatch.setattr(writer_module.os, "fsync", broken_fsync)
    with pytest.raises(TraceWriteError, match="Input/output error"):
        writer.write_all(plan_events(sample_plans, "library_good"))
    writer.close()


def test_a_buffered_writer_reports_a_failure_when_it_closes(tmp_path: Path, sample_plans: Path, disk_with_room) -> None:
    path = tmp_path / "run.jsonl"
    disk_with_room(500)
    writer = TraceWriter(path, flush=False)
    writer.write_all(plan_events(sample_plans, "library_good"))  # held in the buffer
    with pytest.raises(TraceWriteError) as failed:
        writer.close()
    assert failed.value.events_kept is None and str(failed.value) == f"cannot write {path}: No space left on device"
    writer.close()


def test_write_trace_on_a_full_disk_leaves_the_old_file_and_no_temporary_one(
        tmp_path: Path, sample_plans: Path, disk_with_room) -> None:
    path = tmp_path / "out.jsonl"
    path.write_text("old content\n")
    disk_with_room(1000)
    with pytest.raises(OSError) as failed:
        write_trace(path, [plan_events(sample_plans, "library_good")])
    assert failed.value.errno == errno.ENOSPC and ".partial" not in str(failed.value)
    assert path.read_text() == "old content\n" and list(tmp_path.iterdir()) == [path]
