"""A recording killed at any moment leaves a trace that opens with every complete event.

Recording subprocesses are killed with SIGKILL at random points (seeded, so a failure can
be replayed); each file is reopened and must hold exactly a prefix of the events the run
would have written, in order, every complete one of them, with the derived state intact.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentdbg.documents import OpenError
from agentdbg.engine import events as ev
from agentdbg.plans import load_plan
from agentdbg.state import group_run
from agentdbg.trace.reader import open_trace
from agentdbg.trace.synthetic import synthetic_run

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")

SYNTHETIC_WRITER = """
import sys, time
from agentdbg.trace.synthetic import synthetic_run
from agentdbg.trace.writer import TraceWriter
path, steps, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with TraceWriter(path, checkpoint_every=25) as writer:
    print("ready", flush=True)
    for number, event in enumerate(synthetic_run(steps, seed=seed)):
        writer.write(event)
        if number % 40 == 0:
            time.sleep(0.001)
"""


def written_events(path: Path) -> list[ev.Event]:
    """The complete event lines in the file, decoded independently of the reader."""
    data = path.read_bytes()
    lines = data.split(b"\n")
    tail = lines.pop()  # after the last newline: empty, or the line being written when killed
    try:  # cut just before its newline, the last event is whole: the reader keeps it
        json.loads(tail)
        lines.append(tail)
    except ValueError:
        pass
    out = []
    for line in lines:
        obj = json.loads(line)
        if obj["type"] not in ("header", "checkpoint"):
            out.append(ev.event_from_dict(obj))
    return out


def assert_reopens_with_every_complete_event(path: Path, expected: list[ev.Event]) -> int:
    complete = written_events(path)
    assert complete == expected[: len(complete)], "the file must hold a prefix of the run, in order"
    with open_trace(path) as document:
        assert document.wait(30)
        assert [problem for problem in document.problems if "incomplete" not in problem.message] == []
        assert len(document.problems) <= 1
        if not complete:
            assert document.runs == [] or document.runs[0].step_count == 0
            return 0
        (run,) = document.runs
        assert run.events() == complete
        reference = group_run(complete)
        assert run.step_count == reference.step_count
        for step in {1, run.step_count // 2, run.step_count}:
            if step:
                assert run.record(step) == reference.records[step - 1]
                assert run.state_at(step) == reference.state_at(step)
    return len(complete)


def kill_after(process: subprocess.Popen, delay: float) -> None:
    time.sleep(delay)
    process.send_signal(signal.SIGKILL)
    process.wait(10)


def test_killed_synthetic_recordings_reopen_with_every_complete_event(tmp_path: Path) -> None:
    rng = random.Random(20240611)
    steps, seed = 20_000, 11
    expected = list(synthetic_run(steps, seed=seed))
    counts = []
    for attempt in range(5):
        path = tmp_path / f"killed-{attempt}.jsonl"
        process = subprocess.Popen([sys.executable, "-c", SYNTHETIC_WRITER, str(path), str(steps), str(seed)],
                                   stdout=subprocess.PIPE, text=True)
        assert process.stdout.readline().strip() == "ready"
        kill_after(process, rng.uniform(0.02, 0.8))
        assert process.returncode == -signal.SIGKILL
        counts.append(assert_reopens_with_every_complete_event(path, expected))
    print("synthetic kills kept", counts, "of", len(expected))
    assert any(0 < count < len(expected) for count in counts), counts  # the kills landed mid-run


def test_a_killed_record_command_leaves_a_trace_that_opens(tmp_path: Path, sample_plans: Path) -> None:
    rng = random.Random(7)
    plan_path = tmp_path / "runaway.toml"
    text = (sample_plans / "library_runaway.toml").read_text(encoding="utf-8")
    plan_path.write_text(text.replace("max_steps = 6", "max_steps = 4000"), encoding="utf-8")
    expected = load_plan(plan_path).run().events
    counts = []
    for attempt in range(3):
        path = tmp_path / f"record-{attempt}.jsonl"
        process = subprocess.Popen([sys.executable, "-m", "agentdbg", "record", str(plan_path), "-o", str(path), "-q"])
        deadline = time.monotonic() + 30
        while (not path.exists() or path.stat().st_size == 0) and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        kill_after(process, rng.uniform(0.0, 0.3))
        counts.append(assert_reopens_with_every_complete_event(path, expected))
    print("record kills kept", counts, "of", len(expected))
    assert any(count > 0 for count in counts), counts


def test_a_line_torn_by_the_kill_is_the_only_loss(tmp_path: Path) -> None:
    """A kill can land inside a write: cut the file at random bytes of its last lines."""
    rng = random.Random(3)
    expected = list(synthetic_run(200, seed=2))
    path = tmp_path / "full.jsonl"
    process = subprocess.run([sys.executable, "-c", SYNTHETIC_WRITER, str(path), "200", "2"],
                             capture_output=True, text=True, check=True)
    assert process.stdout.strip() == "ready"
    data = path.read_bytes()
    torn = tmp_path / "torn.jsonl"
    for _ in range(25):
        size = rng.randrange(len(data) // 2, len(data))
        torn.write_bytes(data[:size])
        kept = assert_reopens_with_every_complete_event(torn, expected)
        assert kept == len(written_events(torn))


def test_a_recording_killed_before_its_first_event_is_reported_clearly(tmp_path: Path) -> None:
    path = tmp_path / "nothing.jsonl"
    path.write_bytes(b"")
    with pytest.raises(OpenError, match="empty file"):
        open_trace(path)
    path.write_bytes(b'{"type":"header","format":"agentdbg-trace","ver')
    with open_trace(path) as document:
        document.wait(10)
        assert document.runs == []
        assert [p.line for p in document.problems] == [1]
    assert os.path.exists(path)
