"""Forking a run at a step: the engine replays the steps before it, applies the edit, and
runs on with the run's own policy and tools."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from agentdbg.engine import events as ev
from agentdbg.engine.step_edit import StepEdit, action_edit
from agentdbg.fork import ForkError, ForkRun, make_edit
from agentdbg.forking import NotRerunnable, plan_for_run, start_fork
from agentdbg.plans import load_plan, parse_plan
from agentdbg.runs import Document, EventRun
from agentdbg.state import group_run

PLANS = Path(__file__).resolve().parents[1] / "sample_plans"

RULES = """\
name = "rules-fork"
task = "How many copies?"

[[tools]]
name = "catalog"
kind = "table"
rows = { "Il Gattopardo" = 5 }

[policy]
kind = "rules"

[[policy.rules]]
when = "Thought: hurry"
say = "Final Answer: hurried"

[[policy.rules]]
when = "Observation: 7"
say = "Final Answer: seven"

[[policy.rules]]
when = "Observation: 5"
say = "Final Answer: five"

[[policy.rules]]
say = "Thought: look it up\\nAction: catalog[Il Gattopardo]"
once = true
"""


def fork(plan, events, step, edit, **kwargs):
    return start_fork(plan, events, step, edit, **kwargs).run_to_end()


def records(events):
    return group_run(events).records


def test_an_edited_observation_is_what_the_rules_policy_reads_next():
    plan = parse_plan(RULES)
    parent = plan.run().events
    assert group_run(parent).end.answer == "five"
    forked = fork(plan, parent, 1, StepEdit("observation", "7"))
    steps = records(forked)
    assert steps[0].observation == "7" and steps[0].tool == "catalog"
    assert group_run(forked).end.answer == "seven"  # the policy reacted to the edit


def test_a_scripted_plan_keeps_its_later_steps_whatever_the_observation_says():
    plan = load_plan(PLANS / "library_hallucinating.toml")
    parent = plan.run().events
    forked = fork(plan, parent, 2, StepEdit("observation", "7"))
    steps = records(forked)
    assert steps[1].observation == "7"
    assert [s.call for s in steps[2:4]] == ["loans[Il Gattopardo]", "calc[5 - 3]"]  # fixed, as written
    assert group_run(forked).end.answer == "2"


def test_an_edited_observation_does_not_run_the_tool_at_that_step():
    plan = load_plan(PLANS / "kv_tax.toml")
    parent = plan.run().events
    forked = fork(plan, parent, 1, StepEdit("observation", "stored base"))
    steps = records(forked)
    # kv_set did not run at step 1, so the base price is not in the store at step 5
    assert steps[4].tool == "kv_get" and steps[4].observation_error
    assert "base" in steps[4].observation
    assert records(parent)[4].observation == "120"


def test_an_observation_starting_with_error_is_an_error_observation():
    plan = load_plan(PLANS / "library_hallucinating.toml")
    forked = fork(plan, plan.run().events, 2, StepEdit("observation", "ERROR: catalog is down"))
    step = records(forked)[1]
    assert step.observation_error and step.error_kind is None


def test_an_edited_action_runs_instead_and_keeps_the_thought():
    plan = load_plan(PLANS / "kv_tax.toml")
    parent = plan.run().events
    edit, parsed = action_edit("script", 'calculator {"expr": "120 * 0.2"}', "compute 15% tax")
    assert parsed.name == "calculator" and parsed.args == {"expr": "120 * 0.2"}
    steps = records(fork(plan, parent, 2, edit))
    assert steps[1].call.startswith("calculator(") and steps[1].observation == "24.0"
    assert steps[1].thought == "compute 15% tax"


@pytest.mark.parametrize(("format", "text", "expected"), [
    ("bracket", "catalog[Il Gattopardo]", ("catalog", "Il Gattopardo")),
    ("bracket", "Final Answer: 2", (None, "2")),
    ("colon", "catalog: Il Gattopardo", ("catalog", "Il Gattopardo")),
    ("json", 'catalog {"title": "x"}', ("catalog", {"title": "x"})),
    ("json", 'Action: catalog\nAction Input: {"title": "x"}', ("catalog", {"title": "x"})),
    ("numbered", "Search[Paris]", ("Search", "Paris")),
    ("numbered", "Finish[yes]", (None, "yes")),
    ("plan", 'lookup {"city": "Rome"}', ("lookup", {"city": "Rome"})),
    ("plan", "finish 42", (None, "42")),
    ("script", "finish done", (None, "done")),
])
def test_an_action_is_written_as_the_run_s_format_writes_it(format, text, expected):
    _, parsed = action_edit(format, text, "why")
    tool, value = expected
    if tool is None:
        assert parsed.answer == value
    else:
        assert (parsed.name, parsed.args) == (tool, value)


@pytest.mark.parametrize(("format", "text", "message"), [
    ("bracket", "catalog[[", r"use Action: name\[argument\]"),
    ("json", "catalog {not json", "not valid JSON"),
    ("plan", "lookup [1, 2]", "should be a JSON object"),
    ("bracket", "   ", "the action is empty"),
])
def test_an_action_that_does_not_parse_says_why(format, text, message):
    with pytest.raises(ValueError, match=message):
        action_edit(format, text)


def test_an_edited_thought_keeps_the_action_and_later_steps_see_it():
    plan = parse_plan(RULES)
    parent = plan.run().events
    forked = fork(plan, parent, 1, StepEdit("thought", "hurry"))
    steps = records(forked)
    assert steps[0].thought == "hurry" and steps[0].tool == "catalog" and steps[0].observation == "5"
    assert group_run(forked).end.answer == "hurried"  # step 2's prompt held the edited thought


def test_the_steps_before_the_fork_are_the_parent_s_as_recorded_and_run_start_says_what_changed():
    plan = load_plan(PLANS / "library_hallucinating.toml")
    parent = plan.run().events
    forked = fork(plan, parent, 3, StepEdit("observation", "0"), parent=4)
    start = forked[0]
    assert isinstance(start, ev.RunStart)
    assert start.fork == {"parent": 4, "step": 3, "edited": "observation", "text": "0"}
    assert start.task == parent[0].task and start.tools == parent[0].tools
    before = [e.to_dict() for e in parent[1:] if e.step < 3 and not isinstance(e, ev.RunEnd)]
    assert [e.to_dict() for e in forked[1:len(before) + 1]] == before
    assert group_run(forked).info.fork_text() == "fork of run 4 at step 3: observation edited"


def test_a_plan_changed_since_the_recording_stops_the_fork_naming_the_step(tmp_path):
    path = tmp_path / "p.toml"
    text = (PLANS / "library_hallucinating.toml").read_text(encoding="utf-8")
    path.write_text(text, encoding="utf-8")
    parent = load_plan(path).run().events
    path.write_text(text.replace("loans[Il Gattopardo]", "loans[Il Nome della Rosa]"), encoding="utf-8")
    with pytest.raises(ForkError, match=r'step 3 does not replay as recorded \(arguments: recorded "Il Gattopardo", '
                                        r'replayed "Il Nome della Rosa"\); has the plan'):
        fork(load_plan(path), parent, 5, StepEdit("thought", "x"))


@pytest.mark.parametrize(("step", "part", "message"), [
    (5, "observation", "step 5 has no observation to edit: it is the final answer"),
    (9, "thought", "no step 9 to fork at: the run has 5 steps"),
])
def test_a_step_without_that_part_cannot_be_forked(step, part, message):
    plan = load_plan(PLANS / "library_hallucinating.toml")
    with pytest.raises(ForkError, match=message):
        fork(plan, plan.run().events, step, StepEdit(part, "x"))


def test_a_step_whose_output_did_not_parse_has_no_thought_to_edit():
    plan = load_plan(PLANS / "population.toml")
    parent = plan.run().events
    bad = next(r for r in records(parent) if r.parse_error is not None)
    with pytest.raises(ForkError, match="no thought to edit"):
        fork(plan, parent, bad.step, StepEdit("thought", "x"))


def test_a_fork_of_a_fork_replays_both_edits():
    plan = load_plan(PLANS / "library_hallucinating.toml")
    parent = plan.run().events
    first = fork(plan, parent, 2, StepEdit("observation", "9"))
    second = fork(plan, first, 4, StepEdit("observation", "6"), parent=2)
    steps = records(second)
    assert (steps[1].observation, steps[3].observation) == ("9", "6")
    assert second[0].fork["replays"] == [{"step": 2, "edited": "observation", "text": "9"}]
    # and the second fork replays in turn
    third = fork(plan, second, 5, StepEdit("thought", "sure"), parent=3)
    assert records(third)[1].observation == "9" and records(third)[3].observation == "6"


def test_a_fork_s_run_start_is_valid_json_and_a_damaged_fork_field_is_refused():
    plan = load_plan(PLANS / "library_hallucinating.toml")
    forked = fork(plan, plan.run().events, 2, StepEdit("observation", "9"))
    data = forked[0].to_dict()
    assert ev.event_from_dict(data) == forked[0]
    with pytest.raises(ValueError, match="'fork'"):
        ev.event_from_dict({**data, "fork": {"parent": 0, "step": 2, "edited": "observation"}})
    with pytest.raises(ValueError, match="'fork'"):
        ev.event_from_dict({**data, "fork": {"parent": 1, "step": 2, "edited": "memory"}})


def test_an_older_reader_ignores_the_fork_field():
    """Readers take the fields they know from an event's object and leave the rest."""
    plan = load_plan(PLANS / "library_hallucinating.toml")
    data = fork(plan, plan.run().events, 2, StepEdit("observation", "9"))[0].to_dict()
    data["a_field_from_a_newer_writer"] = {"anything": 1}
    assert ev.event_from_dict(data).task == plan.task


def test_a_dangerous_call_replayed_gets_its_recorded_decision_and_later_ones_ask():
    plan = load_plan(PLANS / "dangerous_delete.toml")
    asked = []

    def deny(request):
        from agentdbg.engine.approval import Decision

        asked.append(request.step)
        return Decision.deny("no", by="test")

    def approve(request):
        from agentdbg.engine.approval import Decision

        return Decision.approve(by="test")

    parent = plan.run(approver=approve).events
    decided = [r.step for r in records(parent) if r.approval is not None]
    assert len(decided) >= 2
    last = decided[-1]
    forked = fork(plan, parent, last, StepEdit("thought", "again"), approver=deny)
    assert asked == [s for s in decided if s > last]  # replayed and re-run calls got the recorded decisions
    assert all(r.decision == "approved" for r in records(forked)[:last] if r.approval is not None)


def test_a_keyed_call_before_the_fork_is_not_run_again(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    from agentdbg.engine.approval import always

    plan = load_plan(PLANS / "append_once.toml", allow_code=True)
    parent = plan.run(approver=always()).events
    assert (tmp_path / "ledger.txt").read_text().count("A-17") == 1
    forked = fork(plan, parent, 3, StepEdit("thought", "done"), approver=always())
    assert (tmp_path / "ledger.txt").read_text().count("A-17") == 1
    assert group_run(forked).end.answer == "order A-17 is recorded as paid"


def test_forkrun_needs_the_run_s_header():
    plan = load_plan(PLANS / "library_hallucinating.toml")
    events = [e for e in plan.run().events if not isinstance(e, ev.RunStart)]
    with pytest.raises(ForkError, match="no run_start"):
        ForkRun(plan.build_agent(), plan.task, events, 2, StepEdit("observation", "x"))


# --- which runs can be re-run --------------------------------------------------------------


def test_an_imported_run_says_its_policy_cannot_be_re_run():
    plan = load_plan(PLANS / "library_hallucinating.toml")
    document = Document("run.traj", "swe-agent", [EventRun(plan.run().events)])
    with pytest.raises(NotRerunnable, match=r"recorded from a swe-agent file \(run.traj\), another agent stack; "
                                            "its policy cannot be re-run here"):
        plan_for_run(document, 0)


def test_a_recorder_trace_says_it_came_from_your_own_loop():
    events = [ev.RunStart(step=0, task="t", policy="your loop (agentdbg.record)"), ev.StepStart(step=1)]
    document = Document("run.jsonl", "trace", [EventRun(events)])
    with pytest.raises(NotRerunnable, match=r"your own agent loop \(agentdbg.record\); its policy cannot be re-run"):
        plan_for_run(document, 0)


def test_a_trace_whose_plan_is_gone_says_so(tmp_path):
    plan = load_plan(PLANS / "library_hallucinating.toml")
    events = [ev.RunStart(step=0, task=plan.task, source=str(tmp_path / "gone.toml"))]
    document = Document(str(tmp_path / "run.jsonl"), "trace", [EventRun(events)])
    with pytest.raises(NotRerunnable, match="which is not found here; its policy cannot be re-run here"):
        plan_for_run(document, 0)


def test_a_model_plan_without_the_network_opt_in_cannot_be_re_run(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text(textwrap.dedent("""\
        task = "t"
        calls_model = true
        [policy]
        kind = "openai"
        model = "m"
        base_url = "http://127.0.0.1:9/v1"
        """), encoding="utf-8")
    document = Document(str(tmp_path / "run.jsonl"), "trace", [EventRun([ev.RunStart(step=0, task="t", source=str(path))])])
    with pytest.raises(NotRerunnable, match="whose policy calls a model; its policy cannot be re-run here "
                                            "without --allow-network"):
        plan_for_run(document, 0)


def test_a_trace_finds_its_plan_beside_it(tmp_path):
    target = tmp_path / "plans" / "p.toml"
    target.parent.mkdir()
    target.write_text((PLANS / "library_good.toml").read_text(encoding="utf-8"), encoding="utf-8")
    events = [ev.RunStart(step=0, task="t", source="plans/p.toml")]
    document = Document(str(tmp_path / "run.jsonl"), "trace", [EventRun(events)])
    assert plan_for_run(document, 0).path == target


def test_a_model_is_asked_only_for_the_steps_after_the_edit(tmp_path):
    from model_server import ModelServer, openai_text

    steps = ["Thought: the total.\nAction: catalog[Il Gattopardo]", "Thought: on loan.\nAction: loans[Il Gattopardo]",
             "Thought: subtract.\nAction: calc[5 - 3]", "Thought: done.\nFinal Answer: 2"]
    with ModelServer(*(openai_text(step) for step in steps)) as server:
        text = (PLANS / "models" / "library_ollama.toml").read_text(encoding="utf-8")
        path = tmp_path / "ollama.toml"
        path.write_text(text.replace("http://localhost:11434/v1", server.url + "/v1"), encoding="utf-8")
        plan = load_plan(path, allow_network=True)
        parent = plan.run().events
        assert len(server.requests) == 4
        server.add(openai_text("Thought: the catalogue says 9.\nFinal Answer: 6"))
        forked = fork(plan, parent, 2, StepEdit("observation", "3 copies on loan, 6 on the shelf"))
        assert len(server.requests) == 5  # one call: step 3; steps 1 and 2 were not asked again
        asked = server.requests[-1].body["messages"][-1]["content"]
        assert "Observation: 3 copies on loan, 6 on the shelf" in asked
        assert "Action: catalog[Il Gattopardo]\nObservation: 5" in asked
    steps_forked = records(forked)
    assert steps_forked[0].step_tokens == records(parent)[0].step_tokens  # the recorded usage counts
    assert group_run(forked).end.answer == "6"


@pytest.mark.parametrize("format", ["json", "plan", "script"])
def test_arguments_nested_too_deeply_are_refused_not_crashed_on(format):
    with pytest.raises(ValueError, match="nested too deeply"):
        action_edit(format, "lookup " + "[" * 100_000)


def test_a_grid_agent_moves_from_what_the_edited_observation_says():
    plan = load_plan(PLANS / "grid" / "reactive.toml")
    parent = plan.run().events
    seen = records(parent)[0].observation
    assert "free: down, left" in seen and records(parent)[1].call == "move[down from (0, 1)]"
    forked = fork(plan, parent, 1, StepEdit("observation", seen.replace("free: down, left", "free: left")))
    assert records(forked)[1].call == "move[left from (0, 1)]"


# Plans, their items, reflections and turns of several calls.

def planned(name):
    plan = load_plan(PLANS / f"{name}.toml")
    return plan, plan.run().events


def test_an_edited_plan_item_observation_does_not_run_the_call_and_the_plan_goes_on():
    plan, parent = planned("kv_tax_planned")
    forked = fork(plan, parent, 3, StepEdit("observation", "99"))  # item 2: calculator 120 * 0.15
    steps = records(forked)
    assert steps[2].item == 2 and steps[2].observation == "99" and not steps[2].observation_error
    assert [s.item for s in steps] == [0, 1, 2, 3, 4, 5, 0]  # the plan went on from item 3
    assert not any(isinstance(e, ev.StepError) for e in steps[2].events)
    assert group_run(forked).end.answer == "the total including 15% tax is 138.0"


def test_an_edited_plan_item_observation_that_is_an_error_ends_the_plan_and_the_policy_is_asked():
    plan, parent = planned("kv_tax_planned")
    forked = fork(plan, parent, 2, StepEdit("observation", "ERROR: the store is full"))
    steps = records(forked)
    assert steps[1].observation_error and steps[1].item == 1
    assert len(steps) == 3 and steps[2].item == 0  # items 2..5 dropped: the policy was asked again
    assert group_run(forked).end.answer == "the total including 15% tax is 138.0"


def test_an_edited_plan_item_error_with_reflection_on_reflects_then_replans():
    plan, parent = planned("kv_tax_replan")
    forked = fork(plan, parent, 2, StepEdit("observation", "ERROR: the store is full"))
    steps = records(forked)
    assert steps[2].reflection is not None and steps[2].reflection.on_step == 2
    assert steps[3].plan is not None and steps[4].item == 1  # the new plan is carried out


def test_an_edited_plan_item_action_replaces_the_item_s_call():
    plan, parent = planned("kv_tax_planned")
    edit, parsed = make_edit(records(parent)[1], "script", "action", 'kv_set {"key": "base", "value": "100"}')
    forked = fork(plan, parent, 2, edit)
    steps = records(forked)
    assert steps[1].args == {"key": "base", "value": "100"} and steps[1].item == 1
    assert steps[2].item == 2 and steps[2].call == "calculator({'expr': '120 * 0.15'})"
    with pytest.raises(ValueError, match="its action is one call"):
        make_edit(records(parent)[1], "script", "action", "finish 3")


def test_an_edited_plan_item_thought_is_written_before_its_call():
    plan, parent = planned("kv_tax_planned")
    steps = records(fork(plan, parent, 4, StepEdit("thought", "store the tax")))
    assert steps[3].thought == "store the tax" and steps[3].observation == "stored tax"


def test_an_edited_plan_is_carried_out_instead():
    plan, parent = planned("kv_tax_planned")
    edit, parsed = make_edit(records(parent)[0], "script", "action",
                             'kv_set {"key": "base", "value": "120"}\ncalculator {"expr": "120 * 1.15"}')
    assert len(parsed.actions) == 2
    forked = fork(plan, parent, 1, edit)
    steps = records(forked)
    assert steps[0].plan.items == ["kv_set({'key': 'base', 'value': '120'})", "calculator({'expr': '120 * 1.15'})"]
    assert [s.item for s in steps] == [0, 1, 2, 0] and steps[2].observation == "138.0"
    with pytest.raises(ValueError, match="not valid JSON"):
        make_edit(records(parent)[0], "script", "action", "kv_set {oops")


def test_a_plan_step_has_no_observation_to_edit():
    plan, parent = planned("kv_tax_planned")
    with pytest.raises(ForkError, match="wrote a plan: it has no observation"):
        fork(plan, parent, 1, StepEdit("observation", "x"))


def test_an_edited_reflection_is_what_the_retry_reads():
    plan, parent = planned("library_reflexion")
    for part in ("thought", "action"):
        edit, _ = make_edit(records(parent)[1], "bracket", part, "use the catalog, not the web")
        forked = fork(plan, parent, 2, edit)
        steps = records(forked)
        assert steps[1].reflection.text == "use the catalog, not the web" and steps[1].reflection.on_step == 1
        assert group_run(forked).end.answer == "2"
    with pytest.raises(ForkError, match="is a reflection: it made no call"):
        fork(plan, parent, 2, StepEdit("observation", "x"))


def test_a_fork_after_a_reflection_and_a_replan_restores_the_plan_s_position():
    plan, parent = planned("kv_tax_replan")
    forked = fork(plan, parent, 7, StepEdit("observation", "stored tax twice"))  # item 2 of the second plan
    steps = records(forked)
    assert steps[6].item == 2 and steps[6].observation == "stored tax twice"
    assert [s.item for s in steps[6:]] == [2, 3, 0]


def test_an_edited_observation_of_one_of_several_calls_runs_the_others():
    plan, parent = planned("kv_parallel")
    forked = fork(plan, parent, 1, StepEdit("observation", "17", call=2))
    first = records(forked)[0]
    assert [c.observation for c in first.calls] == ["stored base", "17"]
    assert [c.id for c in first.calls] == ["call_1_1", "call_1_2"]
    assert group_run(forked).info.fork["call"] == 2
    with pytest.raises(ForkError, match="there is no call 3"):
        fork(plan, parent, 1, StepEdit("observation", "x", call=3))
    with pytest.raises(ForkError, match="made one call: a call is chosen only at a step of several"):
        fork(*planned("kv_tax_planned"), 2, StepEdit("observation", "x", call=1))


def test_edited_calls_of_a_parallel_turn_run_instead():
    plan, parent = planned("kv_parallel")
    edit, parsed = make_edit(records(parent)[0], "script", "action",
                             'kv_set {"key": "base", "value": "120"}\ncalculator {"expr": "2 + 2"}\nkv_get {"key": "base"}')
    first = records(fork(plan, parent, 1, edit))[0]
    assert [c.observation for c in first.calls] == ["stored base", "4", "120"]


def test_a_fork_of_a_fork_at_a_plan_item_replays_its_edit():
    plan, parent = planned("kv_tax_planned")
    first = fork(plan, parent, 3, StepEdit("observation", "99"))
    second = fork(plan, first, 5, StepEdit("observation", "200"))
    steps = records(second)
    assert steps[2].observation == "99" and steps[4].observation == "200"
    assert group_run(second).info.fork["replays"] == [{"step": 3, "edited": "observation", "text": "99"}]


def test_a_fork_of_a_fork_replays_the_call_its_observation_edit_chose():
    plan, parent = planned("kv_parallel")
    first = fork(plan, parent, 1, StepEdit("observation", "17", call=2))
    second = fork(plan, first, 2, StepEdit("thought", "again"))
    assert [c.observation for c in records(second)[0].calls] == ["stored base", "17"]
    assert group_run(second).info.fork["replays"] == [{"step": 1, "edited": "observation", "text": "17", "call": 2}]


def test_a_model_s_plan_is_replayed_from_its_recording_and_its_items_never_ask_it(tmp_path):
    from model_server import ModelServer, openai_text

    steps = ["Thought: look both up.\nPlan:\n1. catalog[Il Gattopardo]\n2. loans[Il Gattopardo]",
             "Thought: done.\nFinal Answer: 2"]
    with ModelServer(*(openai_text(step) for step in steps)) as server:
        text = (PLANS / "models" / "library_ollama.toml").read_text(encoding="utf-8")
        path = tmp_path / "ollama.toml"
        path.write_text(text.replace("http://localhost:11434/v1", server.url + "/v1"), encoding="utf-8")
        plan = load_plan(path, allow_network=True)
        parent = plan.run().events
        assert [s.item for s in records(parent)] == [0, 1, 2, 0] and len(server.requests) == 2
        server.add(openai_text("Thought: none lent.\nFinal Answer: 5"))
        forked = fork(plan, parent, 3, StepEdit("observation", "0"))  # item 2
        assert len(server.requests) == 3  # only step 4: the plan came from the recording
        assert "Action: loans[Il Gattopardo]\nObservation: 0" in server.requests[-1].body["messages"][-1]["content"]
    assert group_run(forked).end.answer == "5"
