"""The cursor: stepping both ways, go-to, continue and reverse-continue, cancellation,
search, live plans that run only as far as the cursor, and files still being indexed."""

from __future__ import annotations

import threading

import pytest

from agentdbg.debugger.breakpoints import BreakpointSet
from agentdbg.debugger.session import END_OF_INDEXED, END_OF_RUN, START_OF_RUN, DebugSession, Stop
from agentdbg.documents import plan_document
from agentdbg.engine import events as ev
from agentdbg.plans import load_plan
from agentdbg.runs import EventRun
from agentdbg.trace import format as fmt

UNKNOWN_TOOL = "tool error: tool 'web_search' does not exist, available: ['calc', 'catalog', 'loans']"


@pytest.fixture
def hallucinating(sample_plans):
    return load_plan(sample_plans / "library_hallucinating.toml")


def quiet() -> BreakpointSet:
    """Breakpoints with every automatic break off."""
    breakpoints = BreakpointSet()
    for code in list(breakpoints.auto):
        breakpoints.auto[code] = False
    return breakpoints


def synthetic_events(steps: int, error_every: int = 0) -> list[ev.Event]:
    events: list[ev.Event] = [ev.RunStart(step=0, task="count", tools=[{"name": "calc"}], guards={"max_steps": None})]
    for n in range(1, steps + 1):
        events.append(ev.StepStart(step=n))
        events.append(ev.Thought(step=n, text=f"thinking {n}"))
        events.append(ev.ActionTaken(step=n, tool="calc", args=f"{n} + 1", call=f"calc[{n} + 1]"))
        if error_every and n % error_every == 0:
            events.append(ev.StepError(step=n, kind="exception", message=f"boom {n}", tool="calc"))
            events.append(ev.Observation(step=n, text=f"ERROR: boom {n}", error=True))
        else:
            events.append(ev.Observation(step=n, text=str(n + 1)))
        events.append(ev.GuardCounters(step=n, steps=[n, None], repeats=[1, None], tokens=[n * 10, None],
                                       step_tokens=10))
    return events


# --- stepping -----------------------------------------------------------------------------

def test_stepping_both_ways_clamps_at_the_edges(hallucinating):
    session = DebugSession(EventRun(hallucinating.run().events))
    assert session.cursor == 1 and session.record().step == 1
    assert session.step_back() is False and session.cursor == 1
    for expected in (2, 3, 4, 5):
        assert session.step_forward() is True and session.cursor == expected
    assert session.step_forward() is False and session.cursor == 5
    assert session.record().answer == "2" and session.state().answer == "2"
    assert session.step_back() is True and session.cursor == 4
    assert session.state().answer is None


def test_goto_home_and_end_clamp(hallucinating):
    session = DebugSession(EventRun(hallucinating.run().events))
    assert session.goto(3) == 3
    assert session.goto(99) == 5
    assert session.goto(-4) == 1
    assert session.goto(0) == 1
    assert session.end() == 5 and session.at_end
    assert session.home() == 1 and session.at_start


def test_an_empty_run_has_cursor_zero():
    session = DebugSession(EventRun([ev.RunStart(step=0, task="nothing")]))
    assert session.cursor == 0 and session.record() is None
    assert session.state().step == 0
    assert session.step_forward() is False and session.step_back() is False
    assert session.goto(3) == 0
    assert session.continue_forward() == Stop(0, [END_OF_RUN])
    assert session.continue_back() == Stop(0, [START_OF_RUN])
    assert session.search("x") is None


def test_stepping_back_then_forward_gives_identical_state(hallucinating):
    run = EventRun(hallucinating.run().events)
    session = DebugSession(run)
    session.end()
    forward = {}
    session.home()
    while True:
        forward[session.cursor] = session.state()
        if not session.step_forward():
            break
    while session.step_back():
        assert session.state() == forward[session.cursor]
        assert session.state() is forward[session.cursor]  # cached: stepping is cheap
    for step in range(1, 6):
        assert forward[step] == run.state_at(step)


# --- continue -----------------------------------------------------------------------------

def test_continue_walks_the_automatic_breaks(hallucinating):
    session = DebugSession(EventRun(hallucinating.run().events))
    session.goto(1)
    stop = session.continue_forward()
    assert stop == Stop(5, ["final answer: 2"]) and session.cursor == 5
    assert stop.message == "Stopped at step 5: final answer: 2" and stop.at_breakpoint
    stop = session.continue_forward()  # nothing left: stays at the last step and says so
    assert stop == Stop(5, [END_OF_RUN]) and not stop.at_breakpoint
    stop = session.continue_back()
    assert stop == Stop(1, [UNKNOWN_TOOL]) and session.cursor == 1
    assert stop.message == f"Stopped at step 1: {UNKNOWN_TOOL}"
    assert session.continue_back() == Stop(1, [START_OF_RUN])


def test_continue_with_user_breakpoints_and_no_automatic_ones(hallucinating):
    breakpoints = quiet()
    breakpoints.add("tool", "loans")
    breakpoints.add("filter", "~obs ^2$")
    session = DebugSession(EventRun(hallucinating.run().events), breakpoints)
    assert session.continue_forward() == Stop(3, ["breakpoint: tool loans"])
    assert session.continue_forward() == Stop(4, ["breakpoint: ~obs ^2$"])
    assert session.continue_forward() == Stop(5, [END_OF_RUN])
    assert session.continue_back() == Stop(4, ["breakpoint: ~obs ^2$"])
    assert session.continue_back() == Stop(3, ["breakpoint: tool loans"])
    assert session.continue_back() == Stop(1, [START_OF_RUN])
    hits = {bp.label: bp.hits for bp in breakpoints}
    assert hits == {"tool loans": 2, "~obs ^2$": 2}


def test_continue_without_any_breakpoint_goes_to_the_edges(hallucinating):
    session = DebugSession(EventRun(hallucinating.run().events), quiet())
    assert session.continue_forward() == Stop(5, [END_OF_RUN]) and session.cursor == 5
    assert session.continue_back() == Stop(1, [START_OF_RUN]) and session.cursor == 1


def test_ignore_counts_let_a_continue_run_past(hallucinating):
    breakpoints = quiet()
    bp = breakpoints.add("filter", "~step >1")
    bp.ignore = 2
    session = DebugSession(EventRun(hallucinating.run().events), breakpoints)
    assert session.continue_forward() == Stop(4, ["breakpoint: ~step >1"])
    assert (bp.hits, bp.ignore) == (3, 0)


def test_continue_reports_progress_on_a_long_run():
    run = EventRun(synthetic_events(20_000, error_every=15_000))
    seen: list[int] = []
    session = DebugSession(run)
    stop = session.continue_forward(progress=seen.append)
    assert stop.step == 15_000 and stop.reasons == ["tool error: boom 15000"]
    assert seen and all(n % 4096 == 0 for n in seen) and seen == sorted(seen) and max(seen) < 15_000
    seen.clear()
    assert session.continue_forward(progress=seen.append) == Stop(20_000, [END_OF_RUN])
    assert session.continue_back() == Stop(15_000, ["tool error: boom 15000"])


def test_a_cancelled_continue_leaves_the_cursor_where_it_was():
    run = EventRun(synthetic_events(20_000))
    session = DebugSession(run)
    session.goto(10)
    cancel = threading.Event()
    cancel.set()
    assert session.continue_forward(cancel=cancel) is None and session.cursor == 10
    session.goto(19_000)
    assert session.continue_back(cancel=cancel) is None and session.cursor == 19_000

    # Cancelled part-way through, from the progress callback as a UI thread would.
    cancel = threading.Event()
    calls = []

    def progress(step: int) -> None:
        calls.append(step)
        cancel.set()

    session.goto(1)
    assert session.continue_forward(cancel=cancel, progress=progress) is None
    assert session.cursor == 1 and calls == [4096]


# --- search -------------------------------------------------------------------------------

def test_search_forward_backward_and_wrapping(hallucinating):
    session = DebugSession(EventRun(hallucinating.run().events))
    assert session.search("gattopardo") == 2  # after the cursor (step 1 matches too)
    assert session.search("gattopardo", from_step=3) == 1  # wraps round
    assert session.search("gattopardo", from_step=3, wrap=False) is None
    assert session.search("subtract") == 4
    assert session.search("I search", forward=False) == 1  # back from step 1 wraps to 1 itself
    assert session.search("I search", forward=False, wrap=False) is None
    assert session.search("Gattopardo", forward=False, from_step=5) == 3
    assert session.cursor == 1  # search does not move the cursor


def test_search_is_smart_case_and_falls_back_to_literal_text(hallucinating):
    session = DebugSession(EventRun(hallucinating.run().events))
    assert session.search("WEB_SEARCH", from_step=0) is None  # uppercase: exact case
    assert session.search("web_SEARCH", from_step=0) is None
    assert session.search("web_search", from_step=0) == 1
    assert session.search("calc[5", from_step=0) == 4  # not a valid regex: literal
    assert session.search(r"calc\[\d", from_step=0) == 4
    assert session.search("", from_step=0) is None
    assert session.search("final", from_step=0) is None  # labels are not text
    assert session.search("^2$", from_step=0) == 4  # the observation "2" (answer "2" is step 5)


# --- live runs ----------------------------------------------------------------------------

def test_a_live_plan_runs_only_as_far_as_the_cursor(hallucinating):
    full = EventRun(hallucinating.run().events)
    live = plan_document(hallucinating).runs[0]
    session = DebugSession(live)
    assert session.cursor == 0 and live.step_count == 0 and not live.complete

    def events_through(step: int) -> list[ev.Event]:
        return [e for e in full.events() if e.step <= step and not (isinstance(e, ev.RunEnd) and e.step > step)]

    for step in range(1, 6):
        assert session.step_forward() is True
        assert session.cursor == step and live.step_count == step  # the engine has not run ahead
        assert live.events() == events_through(step)
        assert session.state() == full.state_at(step)
    assert live.complete and session.step_forward() is False


def test_the_hallucinating_plan_in_the_debugger(hallucinating):
    full = EventRun(hallucinating.run().events)
    live = plan_document(hallucinating).runs[0]
    session = DebugSession(live)
    stop = session.continue_forward()
    assert stop.message == f"Stopped at step 1: {UNKNOWN_TOOL}"
    assert live.step_count == 1
    stop = session.continue_forward()
    assert stop == Stop(5, ["final answer: 2"])
    assert session.step_back() and session.cursor == 4
    state = session.state()
    assert state == full.state_at(4)
    assert state.steps == [4, 6] and state.errors[0] == 0 and state.answer is None
    assert state.memory == full.state_at(4).memory


def test_goto_runs_a_live_plan_up_to_the_step_and_end_does_not_run_ahead(hallucinating):
    live = plan_document(hallucinating).runs[0]
    session = DebugSession(live)
    assert session.end() == 0 and live.step_count == 0
    assert session.goto(3) == 3 and live.step_count == 3
    assert session.goto(1) == 1 and live.step_count == 3
    assert session.end() == 3
    assert session.goto(50) == 5 and live.complete


def test_continue_on_a_live_plan_without_breakpoints_runs_it_to_the_end(sample_plans):
    plan = load_plan(sample_plans / "library_stuck.toml")
    live = plan_document(plan).runs[0]
    session = DebugSession(live, quiet())
    assert session.continue_forward() == Stop(2, [END_OF_RUN])
    assert live.complete
    assert session.search("catalog", from_step=0) == 1


def test_a_live_plan_that_ends_before_its_first_step(tmp_path):
    plan_path = tmp_path / "empty.toml"
    plan_path.write_text('task = "nothing"\n[policy]\nkind = "outputs"\noutputs = []\n', encoding="utf-8")
    live = plan_document(load_plan(plan_path)).runs[0]
    session = DebugSession(live)
    assert session.step_forward() is False and session.cursor == 0
    assert session.continue_forward() == Stop(0, [END_OF_RUN])


# --- files still being indexed ------------------------------------------------------------

class GrowingRun:
    """A file-backed run whose index is still being built: steps appear as it goes."""

    def __init__(self, events: list[ev.Event], indexed: int):
        self._full = EventRun(events)
        self.info = self._full.info
        self.indexed = indexed
        self.end = None

    @property
    def step_count(self) -> int:
        return min(self.indexed, self._full.step_count)

    @property
    def complete(self) -> bool:
        return self.indexed >= self._full.step_count

    def record(self, step: int):
        if not 1 <= step <= self.step_count:
            raise IndexError(step)
        return self._full.record(step)

    def state_at(self, step: int):
        return self._full.state_at(min(step, self.step_count))

    def events(self):
        return self._full.events()


def test_continue_on_a_file_still_being_indexed_stops_at_the_indexed_end():
    run = GrowingRun(synthetic_events(100, error_every=80), indexed=50)
    session = DebugSession(run)
    assert session.continue_forward() == Stop(50, [END_OF_INDEXED])
    assert not session.at_end and session.describe() == "step 50 of 50 so far"
    assert session.step_forward() is False
    run.indexed = 100
    assert session.step_forward() is True and session.cursor == 51
    assert session.continue_forward() == Stop(80, ["tool error: boom 80"])
    assert session.continue_forward() == Stop(100, [END_OF_RUN]) and session.at_end


def test_a_cancelled_continue_on_a_live_plan_runs_the_engine_no_further(hallucinating):
    live = plan_document(hallucinating).runs[0]
    session = DebugSession(live, quiet())
    session.step_forward()
    cancel = threading.Event()
    cancel.set()
    assert session.continue_forward(cancel=cancel) is None
    assert session.cursor == 1 and live.step_count == 1


def test_steps_indexed_during_a_continue_are_not_skipped():
    class FinishesJustThen(GrowingRun):
        """The index completes between the continue's last look and its end."""

        @property
        def complete(self) -> bool:
            self.indexed = 100
            return True

    run = FinishesJustThen(synthetic_events(100, error_every=80), indexed=50)
    session = DebugSession(run)
    assert session.continue_forward() == Stop(50, [END_OF_INDEXED])
    assert session.continue_forward() == Stop(80, ["tool error: boom 80"])


class FileLikeRun(EventRun):
    """A run that, like a trace file, hands out each step's lines; counts the decodes."""

    def __init__(self, events):
        super().__init__(events)
        self.lines: dict[int, bytes] = {}
        for event in events:
            if event.step > 0:
                self.lines[event.step] = self.lines.get(event.step, b"") + fmt.event_line(event).encode("utf-8")
        self.decoded: list[int] = []

    def step_bytes(self, step: int) -> bytes:
        return self.lines[step]

    def record(self, step: int):
        self.decoded.append(step)
        return super().record(step)


def test_a_scan_over_a_file_decodes_only_steps_that_may_stop():
    run = FileLikeRun(synthetic_events(2_000, error_every=700))
    session = DebugSession(run)
    assert session.continue_forward() == Stop(700, ["tool error: boom 700"])
    assert run.decoded == [700]
    assert session.continue_forward() == Stop(1400, ["tool error: boom 1400"])
    run.decoded.clear()
    assert session.continue_back() == Stop(700, ["tool error: boom 700"])
    assert run.decoded == [700]
    session.breakpoints.add("tool", "calc")  # every step calls calc: all decoded
    run.decoded.clear()
    assert session.continue_forward() == Stop(701, ["breakpoint: tool calc"])
    assert run.decoded == [701]


def test_a_filter_breakpoint_without_a_byte_test_makes_the_scan_decode_every_step():
    run = FileLikeRun(synthetic_events(300, error_every=250))
    breakpoints = BreakpointSet()
    breakpoints.add("filter", "~obs ^[^x]{3}$")  # nothing to look for in the bytes
    session = DebugSession(run, breakpoints)
    assert session.continue_forward() == Stop(99, ["breakpoint: ~obs ^[^x]{3}$"])
    assert run.decoded == list(range(2, 100))


def test_a_filter_breakpoint_decodes_only_the_steps_whose_bytes_may_match():
    run = FileLikeRun(synthetic_events(300, error_every=250))
    breakpoints = BreakpointSet()
    breakpoints.add("filter", "~obs ^200$")
    session = DebugSession(run, breakpoints)
    assert session.continue_forward() == Stop(199, ["breakpoint: ~obs ^200$"])
    assert run.decoded == [20, 120, 199]  # (token totals 200 and 1200)


@pytest.mark.parametrize("plan", ["library_hallucinating.toml", "library_stuck.toml", "bad_arguments.toml",
                                  "tool_failures.toml", "library_runaway.toml", "population.toml"])
def test_skipping_undecoded_steps_stops_at_the_same_places(sample_plans, plan):
    events = load_plan(sample_plans / plan).run().events

    def all_stops(run) -> list[Stop]:
        session = DebugSession(run)
        found = []
        while (stop := session.continue_forward()).at_breakpoint:
            found.append(stop)
        while (stop := session.continue_back()).at_breakpoint:
            found.append(stop)
        return found

    assert all_stops(FileLikeRun(events)) == all_stops(EventRun(events))


def test_a_trace_file_steps_and_stops_like_the_run_it_recorded(sample_plans, tmp_path):
    from agentdbg.trace import reader, writer
    events = load_plan(sample_plans / "library_hallucinating.toml").run().events
    path = tmp_path / "hallucinating.trace"
    writer.write_trace(path, [events])
    document = reader.open_trace(path, background=False)
    try:
        file_run, memory_run = document.runs[0], EventRun(events)
        on_file, in_memory = DebugSession(file_run), DebugSession(memory_run)
        for _ in range(3):
            assert on_file.continue_forward() == in_memory.continue_forward()
            assert on_file.state() == in_memory.state()
        assert on_file.continue_back() == in_memory.continue_back() == Stop(1, [UNKNOWN_TOOL])
        assert on_file.search("subtract") == 4
    finally:
        document.close()


def test_filters_and_searches_that_can_read_raw_lines_decode_little():
    run = FileLikeRun(synthetic_events(1_000, error_every=900))
    breakpoints = BreakpointSet()
    breakpoints.add("filter", "~step 400..402 & ~obs 402")
    session = DebugSession(run, breakpoints)
    assert session.continue_forward() == Stop(401, ["breakpoint: ~step 400..402 & ~obs 402"])  # "402" is 401's result
    assert run.decoded == [401]
    run.decoded.clear()
    assert session.search("thinking 77") == 770  # every step holds "thinking": the whole text rules them out
    assert run.decoded == [770]
    run.decoded.clear()
    assert session.search("boom") == 900
    assert run.decoded == [900]
    run.decoded.clear()
    assert session.search("Boom", forward=False) is None  # smart case: nothing spelled that way
    assert run.decoded == []
