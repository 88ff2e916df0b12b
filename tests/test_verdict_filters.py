"""``~wrong`` and ``~correct``: they match the step where a graded run ended; as a breakpoint
a continue stops there once; in the run list they pick whole runs (a run is listed when one
of its steps matches), over runs in memory and over a trace file read by offset."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from test_import_support import fixture

from agentdbg import importers
from agentdbg.debugger.breakpoints import BreakpointSet
from agentdbg.debugger.filters import parse_filter
from agentdbg.debugger.run_filter import matching_runs, run_matches
from agentdbg.debugger.session import DebugSession
from agentdbg.documents import open_document
from agentdbg.engine import events as ev
from agentdbg.model.runs import RawSteps
from agentdbg.plans import load_plan
from agentdbg.runs import EventRun
from agentdbg.state import StepRecord
from agentdbg.trace.writer import write_trace

RUNS_LOG = fixture("react-paper", "runs.log")  # questions 12 (correct), 40 (wrong, out of steps), 77 (correct)


def ending(verdict) -> StepRecord:
    return StepRecord(step=3, answer="SUPPORTS", end=ev.RunEnd(step=3, outcome="answered", answer="SUPPORTS",
                                                                steps=3, verdict=verdict))


WRONG = ending({"correct": False, "score": 0, "expected": "REFUTES", "grader": "em"})
RIGHT = ending({"correct": True, "score": 1, "expected": "SUPPORTS", "grader": "em"})
SCORED = ending({"correct": None, "score": 0.5, "expected": "x", "grader": "f1"})
UNGRADED = ending(None)
MIDDLE = StepRecord(step=2, tool="Search", call="Search[x]", observation="y")


@pytest.mark.parametrize("expression, matches", [
    ("~wrong", {"wrong"}),
    ("~correct", {"right"}),
    ("!~wrong & ~end", {"right", "scored", "ungraded"}),
    ("~final & ~wrong", {"wrong"}),
    ("~wrong | ~correct", {"wrong", "right"}),
])
def test_they_match_the_step_where_a_graded_run_ended(expression, matches):
    records = {"wrong": WRONG, "right": RIGHT, "scored": SCORED, "ungraded": UNGRADED, "middle": MIDDLE}
    flt = parse_filter(expression)
    assert {name for name, record in records.items() if flt.matches(record)} == matches


@pytest.mark.parametrize("verdict", [{"correct": "no"}, {"correct": 0}, "wrong", [False], {}])
def test_an_odd_verdict_matches_neither(verdict):
    record = StepRecord(step=1, end=ev.RunEnd(step=1, outcome="answered"))
    object.__setattr__(record.end, "verdict", verdict)  # as a damaged source could leave it
    assert not parse_filter("~wrong").matches(record) and not parse_filter("~correct").matches(record)


def test_a_wrong_breakpoint_stops_a_continue_once_at_the_end_of_a_wrong_run(sample_plans: Path):
    run = EventRun(load_plan(sample_plans / "library_runaway.toml").run().events)  # wrong: out of budget
    breakpoints = BreakpointSet()
    for code in breakpoints.auto:
        breakpoints.auto[code] = False
    breakpoints.add("filter", "~wrong")
    session = DebugSession(run, breakpoints)
    stop = session.continue_forward()
    assert stop.step == run.step_count == 6 and stop.at_breakpoint
    assert stop.message == "Stopped at step 6: breakpoint: ~wrong"
    good = DebugSession(EventRun(load_plan(sample_plans / "library_good.toml").run().events), breakpoints)
    assert not good.continue_forward().at_breakpoint  # a correct run: on to its end, no stop


def test_the_run_list_picks_whole_runs():
    runs = importers.open_import(RUNS_LOG).runs
    assert matching_runs(runs, parse_filter("~wrong")) == [1]
    assert matching_runs(runs, parse_filter("~correct")) == [0, 2]
    assert matching_runs(runs, parse_filter("~repeat")) == [1, 2]  # any step of the run
    assert matching_runs(runs, parse_filter("~wrong & ~tool Search")) == []  # both on one step
    assert matching_runs(runs, parse_filter("~tool Lookup")) == [1, 2]


def test_the_run_list_filter_over_a_trace_file(tmp_path: Path):
    """File-backed runs: steps the byte test rules out are passed undecoded; the result is
    the same as over the runs in memory."""
    _, result = importers.convert_file(RUNS_LOG)
    path = tmp_path / "runs.jsonl"
    write_trace(path, result.runs * 20, checkpoint_every=2)
    document = open_document(path)
    try:
        document.wait()
        assert len(document.runs) == 60 and isinstance(document.runs[0], RawSteps)
        for expression in ("~wrong", "~correct", "~tool Lookup", "!~wrong & ~end", "~obs 1947"):
            in_memory = matching_runs([EventRun(events) for events in result.runs * 20], parse_filter(expression))
            assert matching_runs(document.runs, parse_filter(expression)) == in_memory, expression
        assert matching_runs(document.runs, parse_filter("~wrong")) == list(range(1, 60, 3))
    finally:
        document.close()


def test_a_cancelled_scan_says_so():
    runs = importers.open_import(RUNS_LOG).runs
    cancel = threading.Event()
    cancel.set()
    assert matching_runs(runs, parse_filter("~wrong"), cancel) is None
    long_run = EventRun([ev.RunStart(step=0, task="t"),
                         *[e for n in range(1, 600) for e in (ev.StepStart(step=n), ev.Thought(step=n, text="x"))]])
    assert run_matches(long_run, parse_filter("~wrong"), cancel) is None


def test_a_step_that_cannot_be_read_does_not_match():
    class Damaged:
        step_count = 3

        def record(self, step):
            if step == 2:
                raise ValueError("line 9: not valid JSON")
            return WRONG if step == 3 else MIDDLE

    assert run_matches(Damaged(), parse_filter("~wrong")) is True
    assert run_matches(Damaged(), parse_filter("~obs y")) is True
