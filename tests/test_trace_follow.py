"""Following a trace while it is written: steps appear as they are whole, a line still
being written is waited for, a file cut or replaced is reported, never crashed on."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from live_support import SlowWriter

from agentdbg.engine import events as ev
from agentdbg.plans import load_plan
from agentdbg.trace import follow
from agentdbg.trace import format as fmt
from agentdbg.trace.reader import open_trace
from agentdbg.trace.writer import TraceWriter

WAIT = 10.0


def wait_until(condition, timeout: float = WAIT, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or condition}")
        time.sleep(0.005)


def plan_events(sample_plans: Path, name: str = "library_hallucinating") -> list[ev.Event]:
    return load_plan(sample_plans / f"{name}.toml").run().events


def steps_of(events: list[ev.Event]) -> list[list[ev.Event]]:
    chunks: list[list[ev.Event]] = [[]]
    for event in events:
        if isinstance(event, ev.StepStart):
            chunks.append([])
        chunks[-1].append(event)
    return chunks


def test_steps_appear_as_they_are_written_and_the_run_ends_with_its_writer(tmp_path: Path, sample_plans: Path) -> None:
    path = tmp_path / "run.jsonl"
    header, *steps = steps_of(plan_events(sample_plans))
    writer = TraceWriter(path)
    writer.write_all(header)
    with open_trace(path, follow=True) as document:
        assert document.live and document.following
        run = document.runs[0]
        assert run.step_count == 0 and not run.complete and run.live
        for number, step in enumerate(steps[:-1], 1):
            writer.write_all(step)
            run.wait_for(number, WAIT)
            assert run.step_count == number  # counted once whole, before the next step began
            assert run.record(number).guards is not None
            assert not run.complete
        writer.write_all(steps[-1])
        writer.close()
        wait_until(lambda: run.complete and not document.live, what="the run to end")
        assert run.step_count == len(steps)
        assert run.end is not None and run.end.outcome == "answered"
        assert document.problems == []


def test_a_step_being_written_is_pending_not_counted(tmp_path: Path, sample_plans: Path) -> None:
    path = tmp_path / "run.jsonl"
    header, first, *_ = steps_of(plan_events(sample_plans))
    with TraceWriter(path) as writer:
        writer.write_all(header)
        with open_trace(path, follow=True) as document:
            run = document.runs[0]
            action = next(i for i, e in enumerate(first) if isinstance(e, ev.ActionTaken))
            writer.write_all(first[:action + 1])  # the call is written; its tool has not answered
            wait_until(lambda: run.pending_record() is not None, what="the pending step")
            pending = run.pending_record()
            assert pending.step == 1 and pending.tool == "web_search" and pending.observation is None
            time.sleep(follow.SETTLE * 4)
            assert run.step_count == 0  # an action is not a line a step ends with
            writer.write_all(first[action + 1:])
            run.wait_for(1, WAIT)
            assert run.step_count == 1 and run.pending_record() is None
            assert run.record(1).observation.startswith("ERROR: tool 'web_search'")


def test_a_line_still_being_written_is_waited_for_not_damage(tmp_path: Path, sample_plans: Path) -> None:
    path = tmp_path / "run.jsonl"
    header, first, second, *_ = steps_of(plan_events(sample_plans))
    with TraceWriter(path) as writer:
        writer.write_all(header + first)
        line = fmt.event_line(second[0]).encode()
        writer._file.write(line[:5])  # half a line, as a slow disk or a big line may leave it
        for follow_it in (True, False):  # followed or read as it is: no damage either way
            with open_trace(path, follow=follow_it) as document:
                document.runs[0].wait_for(1, WAIT)
                assert document.runs[0].record(1).tool == "web_search"
                assert document.problems == []
        with open_trace(path, follow=True) as document:
            run = document.runs[0]
            writer._file.write(line[5:])
            for event in second[1:]:
                writer.write(event)
            run.wait_for(2, WAIT)
            assert run.record(2).tool == "catalog"
            assert document.problems == []


def test_a_line_cut_off_when_the_writer_dies_is_damage(tmp_path: Path, sample_plans: Path) -> None:
    path = tmp_path / "run.jsonl"
    with SlowWriter(path) as writer, open_trace(path, follow=True) as document:
        run = document.runs[0]
        writer.step()
        run.wait_for(1, WAIT)
        assert writer.send("cut") == "cut"
        time.sleep(follow.SETTLE * 4)
        assert document.problems == [] and document.live
        writer.process.kill()  # the writer dies mid-line: its lock goes with it
        writer.process.wait(30)
        wait_until(lambda: not document.live, what="the writer to be seen gone")
        assert run.complete and run.step_count == 1
        assert [p.message for p in document.problems] == [
            "the last line is incomplete (12 bytes, no end of line): the recording was probably cut off; it is left out"]


def test_a_file_truncated_while_followed_is_reported_and_what_was_read_stays(tmp_path: Path, sample_plans: Path) -> None:
    path = tmp_path / "run.jsonl"
    with SlowWriter(path) as writer, open_trace(path, follow=True) as document:
        run = document.runs[0]
        writer.step(2)
        run.wait_for(2, WAIT)
        before = run.record(2)
        os.truncate(path, 100)
        wait_until(lambda: document.follow_stopped is not None, what="the truncation to be seen")
        assert "truncated while it was followed" in document.follow_stopped
        assert not document.following and not document.live and run.complete
        assert any("truncated" in p.message for p in document.problems)
        assert run.record(2) is before  # what was read is still shown
        assert run.step_count == 2


def test_a_file_replaced_while_followed_is_reported(tmp_path: Path, sample_plans: Path) -> None:
    path = tmp_path / "run.jsonl"
    with SlowWriter(path) as writer, open_trace(path, follow=True) as document:
        run = document.runs[0]
        writer.step()
        run.wait_for(1, WAIT)
        other = tmp_path / "other.jsonl"
        other.write_bytes(path.read_bytes())
        os.replace(other, path)
        wait_until(lambda: document.follow_stopped is not None, what="the replacement to be seen")
        assert "replaced by another" in document.follow_stopped
        assert run.record(1).tool == "web_search"


def test_a_removed_file_is_still_followed_through_its_descriptor(tmp_path: Path, sample_plans: Path) -> None:
    path = tmp_path / "run.jsonl"
    with SlowWriter(path) as writer, open_trace(path, follow=True) as document:
        run = document.runs[0]
        path.unlink()
        writer.step(2)
        run.wait_for(2, WAIT)
        assert run.step_count == 2 and document.following and document.follow_stopped is None


def test_a_finished_file_appended_to_opens_again(tmp_path: Path, sample_plans: Path) -> None:
    path = tmp_path / "run.jsonl"
    events = plan_events(sample_plans)
    with TraceWriter(path) as writer:
        writer.write_all(events)
    with open_trace(path, follow=True) as document:
        wait_until(lambda: document.complete)
        assert not document.live and len(document.runs) == 1
        first = document.runs[0]
        assert first.complete and first.step_count == 5
        with TraceWriter(path) as writer:  # agentdbg record --append, later
            header, step, *_ = steps_of(plan_events(sample_plans, "library_good"))
            writer.write_all(header + step)
            wait_until(lambda: len(document.runs) == 2 and document.runs[1].step_count == 1, what="the new run")
            assert document.live and document.runs[1].live
            assert first.complete and first.step_count == 5  # the first run is as it was
        wait_until(lambda: not document.live, what="the second writer to be seen gone")
        assert document.runs[1].complete and document.runs[1].step_count == 1


def test_a_writer_without_a_lock_is_live_while_it_grows(tmp_path: Path, sample_plans: Path, monkeypatch) -> None:
    monkeypatch.setattr(follow, "RECENT", 0.5)
    path = tmp_path / "run.jsonl"
    header, first, second, *_ = steps_of(plan_events(sample_plans))
    lines = [fmt.header_line()] + [fmt.event_line(e) for e in header + first]
    path.write_text("".join(lines))
    with open_trace(path, follow=True) as document:
        assert document.live  # written a moment ago, its run has no end
        run = document.runs[0]
        with path.open("a") as handle:  # `cat >>`: no lock
            handle.write("".join(fmt.event_line(e) for e in second))
        run.wait_for(2, WAIT)
        wait_until(lambda: not document.live, what="the quiet file to be seen finished")
        assert run.complete and run.step_count == 2 and run.end is None


def test_a_step_that_grows_after_it_was_read_is_read_again(tmp_path: Path, sample_plans: Path) -> None:
    path = tmp_path / "run.jsonl"
    header, first, second, *_ = steps_of(plan_events(sample_plans))
    with TraceWriter(path) as writer:
        writer.write_all(header + first)
        with open_trace(path, follow=True) as document:
            run = document.runs[0]
            run.wait_for(1, WAIT)
            seen = run.record(1)
            state = run.state_at(1)
            writer.write(ev.Paused(step=1, waited=2.5, ended="resumed", reason="tool error"))
            wait_until(lambda: run.record(1) is not seen, what="the step to be read again")
            assert any(isinstance(e, ev.Paused) for e in run.record(1).events)
            assert ("Paused", "the agent waited 2.5 s here for the debugger (tool error); "
                              "then the debugger resumed it") in run.record(1).transcript()
            assert run.state_at(1) == state
            writer.write_all(second)
            run.wait_for(2, WAIT)
            assert run.record(2).tool == "catalog"


def test_closing_a_followed_file_wakes_every_waiter(tmp_path: Path, sample_plans: Path) -> None:
    path = tmp_path / "run.jsonl"
    header, *_ = steps_of(plan_events(sample_plans))
    with TraceWriter(path) as writer:
        writer.write_all(header)
        document = open_trace(path, follow=True)
        run = document.runs[0]
        started = time.monotonic()
        import threading

        woke = threading.Event()
        threading.Thread(target=lambda: (run.wait_for(3), woke.set()), daemon=True).start()
        time.sleep(0.1)
        document.close()
        assert woke.wait(WAIT) and time.monotonic() - started < WAIT


def test_refresh_settled_counts_the_newest_step_at_once(tmp_path: Path, sample_plans: Path, monkeypatch) -> None:
    monkeypatch.setattr(follow, "SETTLE", 60.0)  # only the writer's word can settle it
    path = tmp_path / "run.jsonl"
    header, first, *_ = steps_of(plan_events(sample_plans))
    with TraceWriter(path) as writer:
        writer.write_all(header)
        with open_trace(path, follow=True) as document:
            run = document.runs[0]
            writer.write_all(first)
            wait_until(lambda: run.pending_record() is not None)
            assert run.step_count == 0
            document.refresh(settled=True)  # what an attached agent's "step 1 is flushed" does
            assert run.step_count == 1 and run.record(1).guards is not None


@pytest.mark.parametrize("follow_it", [False, True])
def test_a_finished_file_reads_the_same_followed_or_not(tmp_path: Path, sample_plans: Path, follow_it: bool) -> None:
    path = tmp_path / "run.jsonl"
    events = plan_events(sample_plans)
    with TraceWriter(path) as writer:
        writer.write_all(events)
    with open_trace(path, follow=follow_it) as document:
        document.wait(WAIT)
        run = document.runs[0]
        assert run.complete and run.step_count == 5 and not document.live
        assert [e.type for e in run.events()] == [e.type for e in events]
