"""Derived state is a pure function of events: fold, checkpoint, rebuild."""

from __future__ import annotations

import pytest

from agentdbg.documents import plan_document
from agentdbg.engine import events as ev
from agentdbg.plans import load_plan
from agentdbg.runs import EventRun
from agentdbg.state import RunState, StepRecord, group_run, split_runs


@pytest.fixture
def hallucinating(sample_plans):
    return load_plan(sample_plans / "library_hallucinating.toml")


def test_records_gather_each_steps_events(hallucinating):
    run = group_run(hallucinating.run().events)
    assert run.step_count == 5
    first, last = run.records[0], run.records[-1]
    assert (first.tool, first.args, first.error_kind, first.observation_error) == ("web_search", "Il Gattopardo copies", "unknown_tool", True)
    assert first.marker() == "error"
    assert first.transcript() == [
        ("Thought", "I search online."),
        ("Action", "web_search[Il Gattopardo copies]"),
        ("Observation", "ERROR: tool 'web_search' does not exist, available: ['calc', 'catalog', 'loans']"),
    ]
    assert (last.answer, last.marker(), last.end.outcome) == ("2", "final", "answered")


def test_state_at_each_step_counts_tools_errors_and_guards(hallucinating):
    run = group_run(hallucinating.run().events)
    states = list(run.states())
    assert len(states) == 6
    assert states[0].steps == [0, 6] and states[0].repeats == [0, 2]
    assert states[1].tool_calls == {"web_search": [1, 1]}
    assert states[1].errors[0] == 1 and states[1].error_count == 1
    assert states[2].errors[0] == 0 and states[2].error_count == 1
    assert states[5].tool_calls == {"web_search": [1, 1], "catalog": [1, 0], "loans": [1, 0], "calc": [1, 0]}
    assert (states[5].answer, states[5].outcome) == ("2", "answered")
    assert states[4].outcome is None
    assert run.state_at(3) == states[3]


def test_repeats_and_trips_are_derived(sample_plans):
    run = group_run(load_plan(sample_plans / "library_stuck.toml").run().events)
    final = run.final_state()
    assert final.repeat_count == 1
    assert final.trips == ((2, "repetition", "action repeated again: catalog[Il Gattopardo]"),)
    assert run.records[1].marker() == "tripped" and run.records[1].is_repeat


@pytest.mark.parametrize("plan", ["library_hallucinating.toml", "kv_tax.toml", "tool_failures.toml", "bad_arguments.toml"])
def test_state_survives_a_checkpoint_round_trip_at_every_step(sample_plans, plan):
    run = group_run(load_plan(sample_plans / plan).run().events)
    for state in run.states():
        assert RunState.from_dict(state.to_dict()) == state


@pytest.mark.parametrize("data", [{}, {"v": 99}, {"v": 1, "step": "x"}, {"v": 1}, []])
def test_a_damaged_checkpoint_is_a_value_error(data):
    with pytest.raises(ValueError, match="checkpoint state"):
        RunState.from_dict(data)


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda d: d["memory"].update(buffer=[1, {"a": 2}]), "memory 'buffer' should be a list of strings"),
        (lambda d: d["memory"].update(evicted="old turn"), "memory 'evicted' should be a list"),
        (lambda d: d["memory"].update(recalled=[7]), "memory 'recalled' should be a list of"),
        (lambda d: d["memory"].update(summary=["s"]), "memory 'summary' should be a string"),
        (lambda d: d.update(answer={"x": 1}), "'answer' should be a string or null"),
        (lambda d: d.update(trips=[[1, 2, 3]]), "each guard trip should be"),
    ],
)
def test_a_checkpoint_with_damaged_contents_is_refused(sample_plans, damage, message):
    """Refused, so the reader reports it and rebuilds the state from the steps instead."""
    run = group_run(load_plan(sample_plans / "memory_research.toml").run().events)
    data = run.state_at(10).to_dict()
    damage(data)
    with pytest.raises(ValueError, match=f"checkpoint state is malformed: {message}"):
        RunState.from_dict(data)


def test_several_runs_in_one_stream_split_at_run_start(sample_plans):
    a = load_plan(sample_plans / "library_good.toml").run().events
    b = load_plan(sample_plans / "library_stuck.toml").run().events
    runs = split_runs(a + b)
    assert [len(r) for r in runs] == [len(a), len(b)]
    assert [group_run(r).end.outcome for r in runs] == ["answered", "action repeated"]


def test_checkpoints_in_the_stream_are_not_steps(hallucinating):
    events = hallucinating.run().events
    with_checkpoint = events[:8] + [ev.Checkpoint(step=1, state={})] + events[8:]
    assert group_run(with_checkpoint).records == group_run(events).records


def test_memory_state_replays_added_and_evicted_turns():
    start = RunState()
    r1 = StepRecord.from_events(1, [ev.StepStart(step=1), ev.MemoryUpdate(step=1, added=["a"], stored=["fact a"])])
    r2 = StepRecord.from_events(2, [ev.StepStart(step=2), ev.MemoryUpdate(step=2, added=["b"], evicted=["a"], summary="A.")])
    s1 = start.advance(r1)
    s2 = s1.advance(r2)
    assert (s1.memory.buffer, s1.memory.semantic_size, s1.memory.summary) == (("a",), 1, "")
    assert (s2.memory.buffer, s2.memory.summary, s2.memory.summary_changed) == (("b",), "A.", True)
    assert s2.memory.evicted == ("a",)


def test_event_run_serves_records_and_cached_states(hallucinating):
    view = EventRun(hallucinating.run().events)
    assert view.step_count == 5 and view.complete
    assert view.record(1).tool == "web_search"
    with pytest.raises(IndexError):
        view.record(6)
    assert view.state_at(99) == view.state_at(5)
    assert view.state_at(2) == group_run(view.events()).state_at(2)


def test_a_live_run_advances_the_engine_only_as_far_as_asked(hallucinating):
    document = plan_document(hallucinating)
    live = document.runs[0]
    assert (live.step_count, live.complete) == (0, False)
    live.advance_to(2)
    assert live.step_count == 2 and not live.complete
    assert live.record(2).tool == "catalog"
    before = live.state_at(2)
    live.advance_to(10)
    assert live.complete and live.step_count == 5
    assert live.state_at(2) == before  # stepping on did not change the past
    assert [e.to_dict() for e in live.events()] == [e.to_dict() for e in hallucinating.run().events]


def test_a_live_run_replays_past_events_to_late_subscribers(hallucinating):
    live = plan_document(hallucinating).runs[0]
    live.advance_to(1)
    seen: list[ev.Event] = []
    live.subscribe(seen.append)
    live.advance_to(2)
    assert [e.to_dict() for e in seen] == [e.to_dict() for e in live.events()]


@pytest.mark.parametrize("plan", ["library_hallucinating.toml", "kv_tax.toml", "library_stuck.toml",
                                  "memory_research.toml", "tool_failures.toml"])
def test_a_live_run_groups_steps_exactly_as_a_finished_run(sample_plans, plan):
    loaded = load_plan(sample_plans / plan)
    live = plan_document(loaded).runs[0]
    live.advance_to(10_000)
    finished = EventRun(loaded.run().events)
    assert live.step_count == finished.step_count
    assert live.end == finished.end
    for step in range(finished.step_count + 1):
        if step:
            assert live.record(step) == finished.record(step)
        assert live.state_at(step) == finished.state_at(step)


def test_extending_a_run_with_a_late_event_rebuilds_only_the_last_step(hallucinating):
    events = hallucinating.run().events
    view = EventRun(events[:-1])
    before = view.state_at(view.step_count)
    assert before.outcome is None
    view.extend(events[-1:])  # the run_end of the last step
    assert view.end is not None and view.state_at(view.step_count).outcome == "answered"


# Any event the schema accepts must fold into state without raising: views never crash.
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from agentdbg.engine.events import event_from_dict  # noqa: E402

_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 10**6) | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.sampled_from(["text", "score", "name", "params", "x"]), kids, max_size=3),
    max_leaves=8,
)
_field_names = ["text", "tool", "args", "call", "id", "message", "kind", "error", "answer", "steps", "repeats",
                "errors", "tokens", "step_tokens", "guard", "query", "results", "added", "evicted", "summary",
                "stored", "outcome", "source", "data", "note", "task", "tools", "guards", "memory", "state"]
_event = st.fixed_dictionaries(
    {"type": st.sampled_from(sorted(ev.EVENT_TYPES) + ["other"]), "step": st.integers(0, 4)},
    optional={name: st.one_of(_values, st.lists(st.integers(0, 9) | st.none(), min_size=2, max_size=2))
              for name in _field_names},
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_event, max_size=12))
def test_whatever_the_schema_accepts_folds_into_the_same_state_however_it_arrives(dicts):
    """Events are the truth: the state at any point, rebuilt from the events so far, is the
    state reached by stepping a run that grew one event at a time; a checkpoint of it reads
    back equal; and no record makes a view raise."""
    events = []
    for data in dicts:
        try:
            events.append(event_from_dict(data))
        except ValueError:
            pass
    growing = EventRun([])
    for count in range(1, len(events) + 1):
        growing.extend(events[count - 1:count])
        rebuilt = group_run(events[:count])
        assert [growing.record(n).events for n in range(1, growing.step_count + 1)] == [r.events for r in rebuilt.records]
        assert growing.step_count == rebuilt.step_count
        assert growing.state_at(growing.step_count) == rebuilt.final_state()
        assert growing.end == rebuilt.end and growing.preamble == rebuilt.preamble
    run = group_run(events)
    states = list(run.states())
    assert len(states) == run.step_count + 1
    for step, state in enumerate(states):
        assert state == run.state_at(step)
        assert RunState.from_dict(state.to_dict()) == state
    for record in run.records:
        record.marker()
        record.transcript()


def test_records_before_the_first_step_are_kept_as_the_preamble(tmp_path):
    from agentdbg.trace.reader import open_trace
    from agentdbg.trace.writer import write_trace

    events = [ev.RunStart(step=0, task="empty"), ev.RawRecord(step=0, source="chat", note="system prompt"),
              ev.RunEnd(step=0, outcome="empty")]
    run = group_run(events)
    assert run.step_count == 0 and [e.note for e in run.preamble] == ["system prompt"]
    assert EventRun(events).preamble == run.preamble
    grown = EventRun(events[:1])
    grown.extend(events[1:])
    assert grown.preamble == run.preamble and grown.end == events[-1]
    path = tmp_path / "empty.jsonl"
    write_trace(path, [events])
    with open_trace(path) as document:
        document.wait(10)
        assert document.runs[0].preamble == run.preamble
