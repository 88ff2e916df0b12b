"""The event schema: typed, JSON, versioned, and strict about what it reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentdbg.engine import events as ev
from agentdbg.plans import load_plan

ROOT = Path(__file__).resolve().parents[1]

EXAMPLES = [
    ev.RunStart(step=0, task="t", tools=[{"name": "calc"}], guards={"max_steps": 3}, memory={"max_turns": 2},
                policy="p", name="n", source="s"),
    ev.StepStart(step=1),
    ev.Thought(step=1, text="think"),
    ev.ActionTaken(step=1, tool="calc", args={"expression": "1+1"}, call="calc(...)", id="call_1"),
    ev.ActionTaken(step=1, tool="calc", args="1+1"),
    ev.ActionTaken(step=2, tool="calc", args="1+1", call="calc[1+1]", item=2),
    ev.PlanMade(step=1, items=["calc[1+1]", "lookup[x]"], revision=2),
    ev.Reflection(step=3, text="the tool name was wrong", on_step=2),
    ev.ParseFailed(step=1, message="bad", text="raw"),
    ev.StepError(step=1, kind="timeout", message="slow", tool="calc"),
    ev.StepError(step=1, kind="exception", message="boom", tool="calc", id="call_1_2"),
    ev.Observation(step=1, text="2", error=True, id="call_1"),
    ev.Approval(step=1, tool="delete_file", decision="edited", by="user", reason="not /", args={"path": "/tmp/x"}),
    ev.Operation(step=1, key='append_line:{"line":"x"}', tool="append_line"),
    ev.Observation(step=2, text="appended", key='append_line:{"line":"x"}', replayed={"run": 1, "step": 1}),
    ev.Answered(step=1, answer="2"),
    ev.GuardCounters(step=1, steps=[1, 6], repeats=[1, 2], errors=[0, None], tokens=[10, 100], step_tokens=10),
    ev.GuardTripped(step=1, guard="token_budget", message="over"),
    ev.MemoryRecall(step=1, query="q", results=[{"text": "a", "score": 0.5}]),
    ev.MemoryUpdate(step=1, added=["turn"], evicted=["old"], summary="s", stored=["fact"]),
    ev.RunEnd(step=1, outcome="answered", answer="2", steps=1, guard=None, message=""),
    ev.Checkpoint(step=256, state={"v": 1}),
    ev.RawRecord(step=2, source="openai", data={"role": "x"}, note="unmapped"),
    ev.Paused(step=2, waited=1.5, ended="timeout", reason="tool error: boom"),
]


@pytest.mark.parametrize("event", EXAMPLES, ids=lambda e: e.type)
def test_every_event_round_trips_through_json(event):
    data = json.loads(json.dumps(event.to_dict()))
    assert next(iter(data)) == "type"  # readers rely on "type" coming first
    assert ev.event_from_dict(data) == event


def test_every_event_type_is_covered_here():
    assert {e.type for e in EXAMPLES} == set(ev.EVENT_TYPES)


def test_fields_at_their_default_are_not_written():
    assert ev.Observation(step=3, text="ok").to_dict() == {"type": "observation", "step": 3, "text": "ok"}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "an event must be a JSON object, got list"),
        ({"step": 1}, "event has no 'type' string"),
        ({"type": "thought", "step": -1, "text": "x"}, "'step' should be a non-negative integer"),
        ({"type": "thought", "step": True, "text": "x"}, "'step' should be a non-negative integer"),
        ({"type": "thought", "step": 1}, "thought event: missing field 'text'"),
        ({"type": "thought", "step": 1, "text": 5}, "thought event: field 'text' should be str, got int"),
        ({"type": "observation", "step": 1, "text": "x", "error": "yes"}, "field 'error' should be bool"),
        ({"type": "action", "step": 1, "tool": "t", "args": 3}, "field 'args' should be dict or str"),
        ({"type": "run_end", "step": 1, "outcome": "x", "steps": 1.5}, "field 'steps' should be int"),
        ({"type": "guards", "step": 1, "steps": [1]}, r"field 'steps' should be \[count, limit or null\]"),
        ({"type": "guards", "step": 1, "repeats": ["1", 2]}, "field 'repeats' should be"),
        ({"type": "guards", "step": 1, "errors": [True, None]}, "field 'errors' should be"),
        ({"type": "guards", "step": 1, "tokens": [5, -1]}, "field 'tokens' should be"),
        ({"type": "memory_update", "step": 1, "added": [1]}, "field 'added' should be a list of strings"),
        ({"type": "memory_recall", "step": 1, "query": "q", "results": [{"text": "a"}]}, "field 'results' should be a list of"),
        ({"type": "run_start", "step": 0, "task": "t", "tools": ["calc"]}, "field 'tools' should be a list of tool specs"),
        ({"type": "run_start", "step": 0, "task": "t", "tools": [{"name": "c", "params": []}]}, "params as an object"),
        ({"type": "pause", "step": 2, "ended": "later"}, "field 'ended' should be one of resumed, timeout, detached"),
        ({"type": "pause", "step": 2, "waited": -1}, "field 'waited' should be a number of seconds"),
        ({"type": "run_start", "step": 0, "task": "t", "tools": None}, "field 'tools' should be list, got NoneType"),
        ({"type": "run_start", "step": 0, "task": "t", "tools": True}, "field 'tools' should be list, got bool"),
        ({"type": "run_start", "step": 0, "task": "t", "tools": 5}, "field 'tools' should be list, got int"),
        ({"type": "approval", "step": 1, "tool": "t", "decision": "maybe"}, "field 'decision' should be one of approved"),
        ({"type": "approval", "step": 1, "tool": "t"}, "approval event: missing field 'decision'"),
        ({"type": "approval", "step": 1, "tool": "t", "decision": "edited", "args": "x"}, "field 'args' should be dict"),
        ({"type": "operation", "step": 1}, "operation event: missing field 'key'"),
        ({"type": "observation", "step": 1, "text": "x", "replayed": {"run": 1}}, "field 'replayed' should say the"),
        ({"type": "observation", "step": 1, "text": "x", "replayed": {"step": -1}}, '"step" should be a whole number'),
        ({"type": "observation", "step": 1, "text": "x", "replayed": 3}, "field 'replayed' should be dict"),
    ],
)
def test_malformed_events_say_what_is_wrong(data, message):
    with pytest.raises(ValueError, match=message):
        ev.event_from_dict(data)


def test_a_null_verdict_is_no_verdict():
    event = ev.event_from_dict({"type": "run_end", "step": 2, "outcome": "answered", "verdict": None})
    assert event.verdict is None


def test_an_unknown_type_is_kept_as_a_raw_record():
    event = ev.event_from_dict({"type": "critique_v9", "step": 4, "text": "hmm"})
    assert isinstance(event, ev.RawRecord)
    assert event.step == 4 and event.data["text"] == "hmm"


def test_values_that_are_not_json_are_written_as_text():
    event = ev.ActionTaken(step=1, tool="t", args={"pair": (1, 2), "obj": object.__new__(object)})
    data = json.loads(json.dumps(event.to_dict()))
    assert data["args"]["pair"] == [1, 2]
    assert data["args"]["obj"].startswith("<object object")


def test_the_documented_example_is_what_the_engine_writes():
    doc = (ROOT / "docs" / "events.md").read_text(encoding="utf-8")
    block = doc.split("```json\n")[-1].split("```")[0]
    documented = [json.loads(line) for line in block.strip().splitlines()]
    trace = load_plan(ROOT / "sample_plans" / "library_hallucinating.toml").run()
    produced = [e.to_dict() for e in trace.events[: len(documented)]]
    for d, p in zip(documented, produced, strict=True):
        for name in ("source", "source_sha256"):  # the plan's path and its hash, which follows any edit of it
            assert (name in d) == (name in p), name
            d.pop(name, None)
            p.pop(name, None)
        assert d == p


def test_run_end_carries_a_graders_verdict_through_json():
    end = ev.RunEnd(step=3, outcome="answered", answer="SUPPORTS", steps=3,
                    verdict={"correct": False, "score": 0.0, "expected": "REFUTES", "grader": "em"})
    again = ev.event_from_dict(json.loads(json.dumps(end.to_dict())))
    assert again == end
    assert "verdict" not in ev.RunEnd(step=1, outcome="answered").to_dict()


@pytest.mark.parametrize("verdict", [{"correct": 1}, {"score": "0.5"}, {"score": True}, {"expected": 3},
                                     {"grader": None}])
def test_run_end_refuses_a_verdict_of_the_wrong_shape(verdict):
    with pytest.raises(ValueError, match="verdict"):
        ev.event_from_dict({"type": "run_end", "step": 1, "outcome": "answered", "verdict": verdict})


def test_data_nested_deeper_than_the_stack_allows_is_kept_whole():
    deep: dict = {"leaf": (1, "x")}
    for _ in range(5_000):
        deep = {"a": [deep], 1: "one", "1": "string one"}
    event = ev.RawRecord(step=1, source="saved run", data=deep)
    out = event.to_dict()["data"]
    depth = 0
    while "a" in out:
        assert out["1"] == "string one"  # the later of two keys that read the same wins, as shallow
        out = out["a"][0]
        depth += 1
    assert depth == 5_000 and out == {"leaf": [1, "x"]}
    assert ev.jsonable({1: "one", "1": "string one"}) == {"1": "string one"}


def test_a_null_verdict_is_a_run_end_without_one():
    end = ev.event_from_dict({"type": "run_end", "step": 2, "outcome": "answered", "verdict": None})
    assert end == ev.RunEnd(step=2, outcome="answered")
