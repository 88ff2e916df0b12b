"""Plan-and-execute: the policy writes a whole plan, the steps after it carry it out."""

from __future__ import annotations

import json

import pytest
from recording_policy import Recording

from agentdbg.cli import main
from agentdbg.engine import ReActAgent, RepetitionGuard, ToolRegistry
from agentdbg.engine import events as ev
from agentdbg.engine.mock_tools import KeyValueStore, calculator
from agentdbg.engine.parsers import ActionPlan, parse_bracket_action, parse_script_step
from agentdbg.engine.policies import ToyScript
from agentdbg.model.prompt import prompt_at
from agentdbg.model.runs import EventRun
from agentdbg.model.state import group_run, plan_progress
from agentdbg.plans import load_plan
from agentdbg.trace.reader import open_trace
from agentdbg.trace.writer import write_trace


def test_the_same_task_takes_fewer_policy_calls_planned_than_step_by_step(sample_plans):
    react = load_plan(sample_plans / "kv_tax.toml").run()
    planned = load_plan(sample_plans / "kv_tax_planned.toml").run()
    assert planned.tool_calls == react.tool_calls  # the same calls, the same observations, in order
    assert planned.answer == react.answer == "the total including 15% tax is 138.0"
    assert react.policy_calls == 6  # five actions and the answer, each a policy call
    assert planned.policy_calls == 2  # the plan, then the answer
    assert [s.item for s in planned.steps] == [0, 1, 2, 3, 4, 5, 0]


def test_stats_counts_policy_calls_from_a_recorded_trace(sample_plans, tmp_path, capsys):
    for name, calls in (("kv_tax", 6), ("kv_tax_planned", 2)):
        trace = tmp_path / f"{name}.jsonl"
        write_trace(trace, [load_plan(sample_plans / f"{name}.toml").run().events])
        assert main(["stats", "--json", str(trace)]) == 0
        entry = json.loads(capsys.readouterr().out)["runs"][0]
        assert entry["policy_calls"] == calls
    assert entry["plans"] == 1 and entry["steps"] == 7
    assert main(["stats", str(trace)]) == 0
    assert "policy calls 2 (1 plan; 5 steps ran plan items)" in " ".join(capsys.readouterr().out.split())


def test_the_plan_is_an_event_of_its_own_and_each_item_names_its_number(sample_plans):
    events = load_plan(sample_plans / "kv_tax_planned.toml").run().events
    (plan,) = [e for e in events if isinstance(e, ev.PlanMade)]
    assert plan.step == 1 and plan.revision == 1
    assert plan.items[1] == "calculator({'expr': '120 * 0.15'})"
    items = [(e.step, e.item, e.tool) for e in events if isinstance(e, ev.ActionTaken)]
    assert items == [(2, 1, "kv_set"), (3, 2, "calculator"), (4, 3, "kv_set"), (5, 4, "calculator"), (6, 5, "kv_get")]
    step_one = [e.type for e in events if e.step == 1]
    assert step_one == ["step", "thought", "plan", "guards"]  # no call, no observation: nothing ran yet
    # A plan item costs no tokens: the policy was not asked.
    assert [e.step_tokens for e in events if isinstance(e, ev.GuardCounters)][1:6] == [0] * 5


def test_a_failed_item_ends_the_plan_and_the_policy_plans_again(sample_plans):
    trace = load_plan(sample_plans / "kv_tax_replan.toml").run()
    run = group_run(trace.events)
    failed = run.records[2]
    assert failed.item == 2 and failed.is_error and failed.marker() == "error"
    # Items 3 to 5 of the first plan never ran: the next step is the reflection, then the replan.
    assert run.records[3].reflection is not None and run.records[3].reflection.on_step == 3
    replan = run.records[4].plan
    assert replan is not None and replan.revision == 2 and len(replan.items) == 3
    assert [call[0] for call in trace.tool_calls] == ["kv_set", "calculator", "calculator", "kv_set", "calculator"]
    assert trace.answer == "the total including 15% tax is 138.0"
    assert run.final_state().plans == 2 and run.final_state().policy_calls == 4


def test_plan_progress_marks_each_item_at_each_step(sample_plans):
    run = EventRun(load_plan(sample_plans / "kv_tax_replan.toml").run().events)
    at = lambda step: plan_progress(run.record, step)  # noqa: E731
    assert at(1).statuses == ("next", "pending", "pending", "pending", "pending")
    assert at(2).statuses == ("current", "next", "pending", "pending", "pending")
    assert at(3).statuses == ("done", "failed", "dropped", "dropped", "dropped") and at(3).step == 1
    assert at(4) is None  # the reflection belongs to no plan
    assert at(6).step == 5 and at(6).statuses == ("current", "next", "pending")
    assert at(8).statuses == ("done", "done", "current")
    assert at(9) is None


def test_plan_items_count_against_the_step_budget_and_the_repetition_brake():
    store = KeyValueStore()
    registry = ToolRegistry([calculator("calc"), store.set_tool("kv_set"), store.get_tool("kv_get")])
    plan = {"plan": [{"action": "calc", "args": {"expression": f"{n} + 1"}} for n in range(5)]}
    trace = ReActAgent(ToyScript([plan]), registry, max_steps=3).run("count")
    assert trace.outcome.status == "budget exhausted" and len(trace.steps) == 3  # the plan and two items
    same = {"action": "kv_set", "args": {"key": "a", "value": "1"}}
    twice = {"plan": [same, same]}
    trace = ReActAgent(ToyScript([twice]), registry, max_steps=5, guards=[RepetitionGuard("any")]).run("loop")
    assert trace.outcome.status == "action repeated" and trace.steps[-1].item == 2
    assert len(trace.tool_calls) == 1  # the repeated item did not run


PLANNED_TEXT = [
    "Thought: look both up, then subtract\nPlan:\n1. calc[5 - 3]\n2. calc[2 * 10]",
    "Thought: done\nFinal Answer: 20",
]


def test_a_plan_written_as_text_runs_and_the_prompt_view_rebuilds_what_the_policy_saw():
    policy = Recording(PLANNED_TEXT)
    trace = ReActAgent(policy, ToolRegistry([calculator("calc")]), max_steps=6).run("What is (5 - 3) * 10?")
    assert [s.observation for s in trace.steps[1:3]] == ["2", "20"] and trace.answer == "20"
    assert len(policy.prompts) == 2
    run = EventRun(trace.events)
    assert prompt_at(run, 1) == policy.prompts[0]
    assert prompt_at(run, 4) == policy.prompts[1]
    assert "Plan:\n1. calc[5 - 3]\n2. calc[2 * 10]\nAction: calc[5 - 3]\nObservation: 2" in policy.prompts[1]


@pytest.mark.parametrize(("text", "message"), [
    ("Plan:\n", "a Plan: needs numbered items"),
    ("Plan:\n1. calc[1]\n2. just words\n", "plan item 2 'just words' is not a call"),
    ("Plan:\n" + "".join(f"{n}. calc[{n}]\n" for n in range(1, 70)), "a plan of 69 items; at most 64"),
])
def test_a_malformed_text_plan_is_a_parse_error_that_says_why(text, message):
    with pytest.raises(ValueError, match=message):
        parse_bracket_action(text)


def test_text_plans_stop_at_the_first_line_that_is_not_an_item():
    parsed = parse_bracket_action("Thought: t\nPlan:\n1. a[x]\n2) b[y]\n\nThat is all.")
    assert isinstance(parsed, ActionPlan) and [a.call for a in parsed.actions] == ["a[x]", "b[y]"]
    assert parsed.thought == "t"
    # An Action line wins over a plan: the output is one call.
    assert parse_bracket_action("Plan:\n1. a[x]\nAction: b[y]").name == "b"
    with pytest.raises(ValueError, match="'plan' must be a non-empty list"):
        parse_script_step({"plan": []})
    with pytest.raises(ValueError, match="plan #2 needs an 'action'"):
        parse_script_step({"plan": [{"action": "a"}, {"args": {}}]})


def test_a_reader_that_does_not_know_plans_still_opens_the_trace(sample_plans, tmp_path, monkeypatch):
    trace = tmp_path / "planned.jsonl"
    write_trace(trace, [load_plan(sample_plans / "kv_tax_planned.toml").run().events])
    # An older reader: the types it does not know become raw records, the rest reads as before.
    for kind in ("plan", "reflection"):
        monkeypatch.delitem(ev.EVENT_TYPES, kind)
    from agentdbg.documents import open_document

    document = open_document(trace)
    document.wait(10)
    run = document.runs[0]
    assert run.step_count == 7 and run.end.answer == "the total including 15% tax is 138.0"
    first = run.record(1)
    assert first.plan is None and [r.note for r in first.raw] == ["type 'plan'"]
    assert run.record(3).tool == "calculator" and run.record(3).observation == "18.0"


@pytest.mark.parametrize("name", ["kv_tax_replan", "kv_parallel", "library_reflexion"])
def test_checkpoints_carry_the_new_counts_and_every_state_equals_the_fold(sample_plans, tmp_path, name):
    events = load_plan(sample_plans / f"{name}.toml").run().events
    trace = tmp_path / "run.jsonl"
    write_trace(trace, [events], checkpoint_every=2)
    assert trace.read_text().count('"type":"checkpoint"') >= 1
    folded = group_run(events)
    with open_trace(trace) as document:
        document.wait(10)
        run = document.runs[0]
        for step in range(run.step_count + 1):
            assert run.state_at(step) == folded.state_at(step)
    assert folded.final_state().policy_calls == {"kv_tax_replan": 4, "kv_parallel": 4, "library_reflexion": 6}[name]
