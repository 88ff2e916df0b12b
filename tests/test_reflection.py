"""Reflection (Reflexion-style): after a failed step the policy critiques it, then retries."""

from __future__ import annotations

import json

import pytest
from recording_policy import Recording

from agentdbg.cli import main
from agentdbg.debugger.filters import parse_filter
from agentdbg.engine import ErrorBudget, ReActAgent, RepetitionGuard, TokenBudget, ToolRegistry
from agentdbg.engine import events as ev
from agentdbg.engine.agent import REFLECT_CUE
from agentdbg.engine.mock_tools import calculator
from agentdbg.engine.parsers import parse_reflection
from agentdbg.model.prompt import prompt_at
from agentdbg.model.runs import EventRun
from agentdbg.model.state import group_run
from agentdbg.plans import PlanError, load_plan, parse_plan
from agentdbg.trace.writer import write_trace

BAD_THEN_GOOD = [
    "Thought: the answer is in a search\nAction: web_search[5 - 3]",
    "Reflection: there is no web_search; calc does arithmetic.",
    "Thought: use calc\nAction: calc[5 - 3]",
    "Final Answer: 2",
]


def agent(outputs, reflect=True, **kwargs) -> tuple[ReActAgent, Recording]:
    policy = Recording(outputs)
    return ReActAgent(policy, ToolRegistry([calculator("calc")]), reflect=reflect, **kwargs), policy


def test_a_failed_step_is_followed_by_a_reflection_step_that_the_retry_reads():
    built, policy = agent(BAD_THEN_GOOD)
    trace = built.run("What is 5 - 3?")
    assert trace.answer == "2" and len(trace.steps) == 4
    reflection = trace.steps[1]
    assert reflection.reflection == "there is no web_search; calc does arithmetic."
    assert [e.type for e in reflection.events] == ["step", "reflection", "guards"]
    (event,) = [e for e in trace.events if isinstance(e, ev.Reflection)]
    assert event.on_step == 1 and event.step == 2
    # It was asked for: the cue ends the prompt of step 2, and the retry sees the critique.
    assert policy.prompts[1].endswith(REFLECT_CUE.format(step=1))
    assert policy.prompts[2].endswith("Reflection: there is no web_search; calc does arithmetic.")
    run = EventRun(trace.events)
    assert [prompt_at(run, n) for n in range(1, 5)] == policy.prompts  # the prompt view is exact
    assert trace.policy_calls == 4


def test_without_reflect_there_is_no_reflection_step():
    built, _ = agent(BAD_THEN_GOOD, reflect=False)
    trace = built.run("What is 5 - 3?")
    assert not any(isinstance(e, ev.Reflection) for e in trace.events)
    assert trace.steps[1].parse_error is not None  # the critique, read as an action, is unreadable


def test_a_reflection_leaves_the_streak_and_the_repeats_alone_and_counts_as_a_step():
    outputs = ["Action: web_search[x]", "Reflection: wrong tool", "Action: web_search[y]",
               "Reflection: still wrong", "Action: calc[1]", "Final Answer: 1"]
    built, _ = agent(outputs, max_steps=10, guards=[ErrorBudget(2)])
    trace = built.run("q")
    assert trace.outcome.status == "error budget exhausted" and len(trace.steps) == 3  # fail, reflect, fail
    counters = [e for e in trace.events if isinstance(e, ev.GuardCounters)]
    assert [c.errors[0] for c in counters] == [1, 1, 2]
    built, _ = agent(["Action: web_search[x]", "Reflection: oops", "Action: web_search[x]"],
                     guards=[RepetitionGuard("consecutive", 2)])
    trace = built.run("q")  # the same failing call around a reflection is still consecutive
    assert trace.outcome.status == "action repeated" and len(trace.steps) == 3
    built, _ = agent(["Action: web_search[x]", "Reflection: oops"], max_steps=2)
    assert built.run("q").outcome.status == "budget exhausted"


def test_the_token_budget_can_stop_a_reflection():
    built, _ = agent(["Action: web_search[x]", "Reflection: " + "long " * 400], guards=[TokenBudget(200)])
    trace = built.run("q")
    assert trace.outcome.status == "token budget exhausted" and trace.steps[-1].reflection is not None


def test_an_empty_reflection_is_a_parse_error_and_is_not_reflected_on():
    built, _ = agent(["Action: web_search[x]", "Reflection:   ", "Action: calc[2]", "Final Answer: 2"])
    trace = built.run("q")
    assert trace.steps[1].parse_error == "the reflection is empty"
    assert trace.steps[2].action.name == "calc" and trace.answer == "2"
    assert sum(isinstance(e, ev.Reflection) for e in trace.events) == 0


@pytest.mark.parametrize(("output", "text"), [
    ("Reflection: a\nb", "a\nb"),
    ("Thinking it over: no reflection label", "Thinking it over: no reflection label"),
    ({"reflection": "from a script"}, "from a script"),
])
def test_a_reflection_is_read_from_any_format(output, text):
    assert parse_reflection(output) == text


def test_the_sample_plan_shows_the_reflection_in_show_stats_check_and_filters(sample_plans, tmp_path, capsys):
    trace = tmp_path / "run.jsonl"
    write_trace(trace, [load_plan(sample_plans / "library_reflexion.toml").run().events])
    run = group_run(load_plan(sample_plans / "library_reflexion.toml").run().events)
    assert [r.step for r in run.records if parse_filter("~reflection").matches(r)] == [2]
    assert run.records[1].marker() == "reflection"
    assert main(["show", str(trace)]) == 0
    shown = capsys.readouterr().out
    assert "Reflection" in shown and "I called web_search, which this agent does not have" in shown
    assert main(["stats", "--json", str(trace)]) == 0
    assert json.loads(capsys.readouterr().out)["runs"][0]["reflections"] == 1
    assert main(["check", str(trace), "--fail-on", "repeat,budget"]) == 0
    capsys.readouterr()
    assert main(["show", "--json", str(trace)]) == 0
    steps = json.loads(capsys.readouterr().out.splitlines()[0])["steps"]
    reflected = [s for s in steps if s.get("reflection")]
    assert reflected and reflected[0]["reflection"]["on_step"] == 1


def test_reflect_must_be_a_bool_in_a_plan():
    plan = 'task = "t"\nreflect = "yes"\n[policy]\nkind = "outputs"\noutputs = ["Final Answer: 1"]\n'
    with pytest.raises(PlanError, match=r"<plan>:2: plan: 'reflect' should be bool, got str"):
        parse_plan(plan)
