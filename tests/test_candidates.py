"""The shared block iterator (agentdbg.debugger.candidates): blocks tested on threads give
the same steps in the same order as blocks tested in turn; stopping early drops the work
still waiting; a cancel, an error and the proofs made ahead behave."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentdbg.debugger import candidates, quick
from agentdbg.debugger.find import Query, find_step, matching_steps
from agentdbg.debugger.proofs import StepProofs
from agentdbg.engine import events as ev
from agentdbg.trace import scan
from agentdbg.trace.reader import open_trace
from agentdbg.trace.writer import write_trace

HANG = 30


def _write(path: Path, texts: list[str]) -> Path:
    events: list[ev.Event] = [ev.RunStart(step=0, task="t", name="r")]
    for number, text in enumerate(texts, 1):
        events += [ev.StepStart(step=number), ev.Thought(step=number, text=text),
                   ev.ActionTaken(step=number, tool="calc", args=text[:3], call=f"calc[{text[:3]}]"),
                   ev.Observation(step=number, text=f"{number}")]
    write_trace(path, [events])
    return path


@pytest.fixture
def opened(tmp_path: Path):
    texts = [("x-y " if n % 37 == 0 else "") + f"thought {n}" + (" \u00e9" if n % 53 == 0 else "")
             for n in range(1, 601)]
    with open_trace(_write(tmp_path / "run.jsonl", texts)) as document:
        document.wait(HANG)
        yield document.runs[0]


def _steps(run, test, **kwargs) -> list[int | None]:
    return list(candidates.candidate_steps(run, test, 1, run.step_count, **kwargs))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(block_bytes=st.sampled_from([300, 1500, 9000, 1 << 22]), threads=st.sampled_from(["2", "3", "8"]),
       reverse=st.booleans(), pattern=st.sampled_from(["x.y", "thought 4", "thought 59", "[0-9]{3}"]))
def test_threads_give_the_same_steps_in_the_same_order(opened, monkeypatch, block_bytes: int, threads: str,
                                                       reverse: bool, pattern: str) -> None:
    run = opened
    monkeypatch.setattr(scan, "BLOCK_BYTES", block_bytes)
    test = quick.regex_block_test(pattern, True)
    assert test is not None
    monkeypatch.setenv(candidates.THREADS_VARIABLE, "0")
    alone = _steps(run, test, reverse=reverse)
    monkeypatch.setenv(candidates.THREADS_VARIABLE, threads)
    shared = _steps(run, test, reverse=reverse, proofs=StepProofs())
    assert shared == alone and None not in alone
    assert alone == sorted(alone, reverse=reverse)


def test_only_a_few_blocks_are_tested_ahead_of_the_caller(opened, monkeypatch) -> None:
    run = opened
    monkeypatch.setattr(scan, "BLOCK_BYTES", 300)  # (a few steps a block: many blocks)
    monkeypatch.setenv(candidates.THREADS_VARIABLE, "2")
    tested: list[int] = []
    release = threading.Event()

    def slow(block) -> set[int]:
        tested.append(block.first)
        release.wait(HANG)
        return {block.first}

    steps = candidates.candidate_steps(run, slow, 1, run.step_count)
    release.set()
    assert next(steps) == 1
    steps.close()
    time.sleep(0.2)
    blocks = len(list(run.step_blocks(1, run.step_count)))
    assert len(tested) <= candidates.thread_count() + 2 < blocks


def test_a_cancel_ends_the_steps_with_none(opened, monkeypatch) -> None:
    run = opened
    monkeypatch.setattr(scan, "BLOCK_BYTES", 300)
    cancel = threading.Event()
    found = []
    for step in candidates.candidate_steps(run, lambda block: set(range(block.first, block.last + 1)), 1,
                                           run.step_count, cancel=cancel):
        found.append(step)
        if len(found) == 5:
            cancel.set()
    assert found[-1] is None and len(found) < run.step_count


def test_an_error_in_a_block_test_reaches_the_caller(opened, monkeypatch) -> None:
    run = opened
    monkeypatch.setattr(scan, "BLOCK_BYTES", 300)

    def failing(block) -> set[int]:
        if block.first > 50:
            raise OSError("the disk went away")
        return set()

    with pytest.raises(OSError, match="went away"):
        _steps(run, failing)


def test_searches_counts_and_filters_agree_with_and_without_threads(opened, monkeypatch) -> None:
    run = opened
    monkeypatch.setattr(scan, "BLOCK_BYTES", 700)
    answers = []
    for threads in ("0", "2"):
        monkeypatch.setenv(candidates.THREADS_VARIABLE, threads)
        answers.append((
            matching_steps(run, Query.parse("x.y")), matching_steps(run, Query.parse("~obs ^5")),
            find_step(run, Query.parse("thought 59"), 300), find_step(run, Query.parse("x.y"), 300, forward=False),
            find_step(run, Query.parse("~text \u00e9"), 600)))
    assert answers[0] == answers[1]
    assert answers[0][0] == list(range(37, 601, 37)) and answers[0][2] == 590 and answers[0][4] == 53


def test_proofs_made_ahead_are_what_a_search_would_prove(opened, monkeypatch) -> None:
    run = opened
    monkeypatch.setattr(scan, "BLOCK_BYTES", 700)
    proofs = StepProofs()
    assert candidates.prove_ahead(run, proofs)
    proved: list[int] = []
    real = scan.Block._not_shown_verbatim
    monkeypatch.setattr(scan.Block, "_not_shown_verbatim", lambda block, end: proved.append(block.first) or real(block, end))
    assert find_step(run, Query.parse("x.y"), 0, proofs=proofs) == 37
    assert matching_steps(run, Query.parse("x.y"), proofs=proofs) == list(range(37, 601, 37))
    assert proved == []  # every block was proven ahead
    cancel = threading.Event()
    cancel.set()
    assert candidates.prove_ahead(run, StepProofs(), cancel) is False


def test_how_many_threads(monkeypatch) -> None:
    monkeypatch.setenv(candidates.THREADS_VARIABLE, "0")
    assert candidates.thread_count() == 0 and candidates._pool() is None
    monkeypatch.setenv(candidates.THREADS_VARIABLE, "lots")
    assert 1 <= candidates.thread_count() <= candidates.MAX_THREADS
    monkeypatch.setenv(candidates.THREADS_VARIABLE, "3")
    assert candidates.thread_count() == 3
