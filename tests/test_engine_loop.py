"""The loop: one step at a time, events for everything, guards with live counters."""

from __future__ import annotations

import json

import pytest

from agentdbg.engine import (
    CallablePolicy,
    ErrorBudget,
    ReActAgent,
    RepetitionGuard,
    ScriptedOutputs,
    TokenBudget,
    Tool,
    ToolRegistry,
    event_from_dict,
)
from agentdbg.engine import events as ev
from agentdbg.examples import library
from agentdbg.plans import load_plan


def test_step_advances_exactly_one_turn_and_run_shares_the_same_path():
    run = library.agent(library.hallucinating_policy).start(library.QUESTION)
    assert [type(e) for e in run.events] == [ev.RunStart]
    first = run.step()
    assert first.step == 1 and not first.done
    assert first.action.name == "web_search" and first.error.kind == "unknown_tool"
    assert [e.type for e in first.events] == ["step", "thought", "action", "error", "observation", "guards"]
    while not run.done:
        run.step()
    stepped = [e.to_dict() for e in run.events]
    batch = [e.to_dict() for e in library.agent(library.hallucinating_policy).run(library.QUESTION).events]
    assert stepped == batch


def test_stepping_a_finished_run_is_an_error():
    run = library.agent(library.good_policy).start(library.QUESTION)
    while not run.done:
        run.step()
    with pytest.raises(RuntimeError, match="has ended"):
        run.step()


def test_on_event_sees_every_event_as_it_happens():
    seen: list[ev.Event] = []
    trace = library.agent(library.good_policy).run(library.QUESTION, on_event=seen.append)
    assert seen == trace.events


def test_events_are_json_and_rebuild_exactly(sample_plans):
    for plan_path in sorted(sample_plans.glob("*.toml")):
        trace = load_plan(plan_path, allow_code=True).run()
        for event in trace.events:
            text = json.dumps(event.to_dict())
            assert event_from_dict(json.loads(text)) == event, (plan_path.name, event)


def test_runs_are_deterministic(sample_plans):
    for plan_path in sorted(sample_plans.glob("*.toml")):
        plan = load_plan(plan_path, allow_code=True)
        first = [e.to_dict() for e in plan.run().events]
        second = [e.to_dict() for e in plan.run().events]
        assert first == second, plan_path.name


def test_run_start_carries_task_tools_and_guard_settings():
    trace = library.agent(library.good_policy).run(library.QUESTION)
    start = trace.events[0]
    assert start.task == library.QUESTION
    assert [t["name"] for t in start.tools] == ["calc", "catalog", "loans"]
    assert start.guards == {"max_steps": 6, "repeat": {"mode": "any", "threshold": 2},
                            "max_consecutive_errors": None, "token_budget": None,
                            "token_estimator": "estimate_tokens"}
    end = trace.events[-1]
    assert (end.type, end.outcome, end.answer, end.steps) == ("run_end", "answered", "2", 4)


def test_guard_counters_are_in_every_step():
    trace = library.agent(library.stuck_policy).run(library.QUESTION)
    counters = [e for e in trace.events if isinstance(e, ev.GuardCounters)]
    assert [c.steps for c in counters] == [[1, 6], [2, 6]]
    assert [c.repeats for c in counters] == [[1, 2], [2, 2]]
    tripped = [e for e in trace.events if isinstance(e, ev.GuardTripped)]
    assert [(t.step, t.guard) for t in tripped] == [(2, "repetition")]


def flaky_registry() -> ToolRegistry:
    return ToolRegistry([Tool("get", "", {"key": str}, lambda key: {"a": 1}[key])])


def test_error_budget_stops_after_n_errors_in_a_row():
    outputs = ["Action: get[x]", "Action: get[y]", "Action: get[a]", "Action: get[z]", "Action: get[w]", "Action: get[v]"]
    agent = ReActAgent(ScriptedOutputs(outputs), flaky_registry(), max_steps=10, guards=[ErrorBudget(3)])
    trace = agent.run("errors")
    # Two errors, a success resets the streak, then three more errors trip it.
    assert [s.error is not None for s in trace.steps] == [True, True, False, True, True, True]
    assert trace.outcome.status == "error budget exhausted"
    assert trace.outcome.steps == 6
    counters = [e.errors for e in trace.events if isinstance(e, ev.GuardCounters)]
    assert counters == [[1, 3], [2, 3], [0, 3], [1, 3], [2, 3], [3, 3]]


def test_parse_errors_count_as_errors():
    agent = ReActAgent(ScriptedOutputs(["nonsense"], then="repeat"), flaky_registry(), max_steps=10,
                       guards=[ErrorBudget(2)])
    trace = agent.run("parse")
    assert trace.outcome.status == "error budget exhausted"
    assert all(s.parse_error for s in trace.steps)
    assert [e.type for e in trace.steps[0].events] == ["step", "parse_error", "observation", "guards"]


def test_the_same_unreadable_output_again_is_a_repeat():
    outputs = ["Action: get a", "Action: get a", "Action: get[a]", "Action:  get a  "]
    agent = ReActAgent(ScriptedOutputs(outputs), flaky_registry(), max_steps=10)
    trace = agent.run("loop")
    counters = [e.repeats for e in trace.events if isinstance(e, ev.GuardCounters)]
    assert counters == [[1, None], [2, None], [1, None], [1, None]]
    strict = ReActAgent(ScriptedOutputs(outputs), flaky_registry(), guards=[RepetitionGuard("any")]).run("loop")
    assert (strict.outcome.status, strict.outcome.steps) == ("action repeated", 2)
    assert strict.outcome.message == "action repeated again: Action: get a"


def test_consecutive_repetition_brake_allows_repeats_below_the_threshold():
    outputs = ["Action: get[a]", "Action: get[a]", "Action: get[x]", "Action: get[a]", "Action: get[a]", "Action: get[a]"]
    agent = ReActAgent(ScriptedOutputs(outputs), flaky_registry(), max_steps=10,
                       guards=[RepetitionGuard("consecutive", threshold=3)])
    trace = agent.run("counter")
    assert trace.outcome.status == "action repeated"
    assert trace.outcome.steps == 6
    counters = [e.repeats for e in trace.events if isinstance(e, ev.GuardCounters)]
    assert counters == [[1, 3], [2, 3], [1, 3], [1, 3], [2, 3], [3, 3]]


def test_strict_brake_stops_a_repeat_that_is_not_consecutive():
    outputs = ["Action: get[a]", "Action: get[x]", "Action: get[a]"]
    trace = ReActAgent(ScriptedOutputs(outputs), flaky_registry(), guards=[RepetitionGuard("any")]).run("any")
    assert (trace.outcome.status, trace.outcome.steps) == ("action repeated", 3)


def test_repeats_are_counted_even_with_the_brake_off():
    trace = ReActAgent(ScriptedOutputs(["Action: get[a]"] * 3), flaky_registry(), max_steps=3).run("x")
    counters = [e.repeats for e in trace.events if isinstance(e, ev.GuardCounters)]
    assert counters == [[1, None], [2, None], [3, None]]


def test_token_budget_counts_prompt_and_output_and_stops_the_step_that_crosses_it():
    registry = flaky_registry()
    policy = ScriptedOutputs(["Action: get[a]"] * 2 + ["Final Answer: 1"])
    unlimited = ReActAgent(policy, registry, max_steps=5).run("tokens")
    spent = [e.step_tokens for e in unlimited.events if isinstance(e, ev.GuardCounters)]
    assert all(n > 0 for n in spent)
    limit = spent[0] + spent[1] - 1  # step 2 crosses it
    trace = ReActAgent(policy, registry, max_steps=5, guards=[TokenBudget(limit)]).run("tokens")
    assert (trace.outcome.status, trace.outcome.steps, trace.outcome.guard) == ("token budget exhausted", 2, "token_budget")
    assert trace.steps[1].observation is None  # the crossing step's action is not run
    assert [e.tokens for e in trace.events if isinstance(e, ev.GuardCounters)] == [[spent[0], limit], [spent[0] + spent[1], limit]]


def test_a_policy_that_raises_ends_the_run_with_the_error_shown():
    def broken(_prompt: str) -> str:
        raise RuntimeError("model endpoint down")

    trace = ReActAgent(CallablePolicy(broken), flaky_registry()).run("x")
    assert trace.outcome.status == "policy error"
    assert trace.outcome.message == "RuntimeError: model endpoint down"
    assert [e.type for e in trace.events] == ["run_start", "step", "error", "guards", "run_end"]


def test_a_script_that_runs_out_ends_after_its_last_step():
    trace = ReActAgent(ScriptedOutputs(["Action: get[a]"]), flaky_registry()).run("x")
    assert (trace.outcome.status, trace.outcome.steps) == ("script exhausted", 1)
    assert trace.events[-1].type == "run_end" and trace.events[-1].step == 1


def test_an_empty_script_ends_before_any_step():
    trace = ReActAgent(ScriptedOutputs([]), flaky_registry()).run("x")
    assert (trace.outcome.status, trace.outcome.steps) == ("script exhausted", 0)
    assert [e.type for e in trace.events] == ["run_start", "run_end"]


def test_structured_outputs_appear_in_the_transcript_as_text():
    from agentdbg.engine import ScriptedPlan

    trace = ReActAgent(ScriptedPlan([("get", {"key": "a"}), ("finish", {"answer": 1})]), flaky_registry()).run("x")
    assert trace.transcript == "Question: x\nAction: get({'key': 'a'})\nObservation: 1\nFinal Answer: 1"


def test_guards_refuse_nonsense_settings():
    with pytest.raises(ValueError):
        RepetitionGuard("sometimes")
    with pytest.raises(ValueError):
        RepetitionGuard("consecutive", threshold=1)
    with pytest.raises(ValueError):
        ErrorBudget(0)
    with pytest.raises(ValueError):
        TokenBudget(0)
    with pytest.raises(ValueError):
        ReActAgent(ScriptedOutputs([]), flaky_registry(), max_steps=-1)  # 0 runs no step, -1 is nonsense
    with pytest.raises(TypeError):
        ReActAgent(ScriptedOutputs([]), flaky_registry(), guards=["fast"])


def test_an_agent_can_run_twice_from_a_clean_start():
    agent = ReActAgent(ScriptedOutputs(["Action: get[a]"] * 2), flaky_registry(), guards=[RepetitionGuard()])
    first, second = agent.run("x"), agent.run("x")
    assert first.outcome == second.outcome
    assert [e.to_dict() for e in first.events] == [e.to_dict() for e in second.events]


class _BrokenMemory:
    def __init__(self, fail_in: str):
        self.fail_in = fail_in

    def settings(self) -> dict:
        return {"kind": "broken"}

    def reset(self) -> None:
        pass

    def build_context(self, task_line: str, step: int):
        if self.fail_in == "context":
            raise ConnectionError("embedding service unreachable")
        return task_line, []

    def record_turn(self, turn: str, step: int):
        if self.fail_in == "record":
            raise TimeoutError()
        return []


@pytest.mark.parametrize(("fail_in", "message"), [("context", "ConnectionError: embedding service unreachable"),
                                                  ("record", "TimeoutError")])
def test_a_memory_that_raises_ends_the_run_with_the_error_recorded(fail_in, message):
    agent = ReActAgent(ScriptedOutputs(["Action: get[a]"] * 3), flaky_registry(), memory=_BrokenMemory(fail_in))
    trace = agent.run("x")
    assert (trace.outcome.status, trace.outcome.steps, trace.outcome.message) == ("memory error", 1, message)
    errors = [e for e in trace.events if isinstance(e, ev.StepError)]
    assert [(e.kind, e.message) for e in errors] == [("memory", message)]


def test_a_tokenizer_that_raises_ends_the_run_with_the_error_recorded():
    def tokenizer(text: str) -> int:
        raise ValueError("vocabulary missing")

    trace = ReActAgent(ScriptedOutputs(["Action: get[a]"]), flaky_registry(), tokens=tokenizer).run("x")
    assert trace.outcome.status == "tokens error"
    assert trace.outcome.message == "ValueError: vocabulary missing"
    assert trace.events[0].guards["token_estimator"] == "test_a_tokenizer_that_raises_ends_the_run_with_the_error_recorded.<locals>.tokenizer"


def test_a_step_without_an_action_repeats_nothing():
    outputs = ["Action: get[a]", "Action: get[a]", "Final Answer: 1"]
    trace = ReActAgent(ScriptedOutputs(outputs), flaky_registry(), guards=[RepetitionGuard("consecutive")]).run("x")
    counters = [e.repeats for e in trace.events if isinstance(e, ev.GuardCounters)]
    assert counters == [[1, 3], [2, 3], [0, 3]]


def test_the_repeat_counter_moves_even_on_the_step_the_token_budget_stops():
    outputs = ["Action: get[a]", "Action: get[a]"]
    first = ReActAgent(ScriptedOutputs(outputs), flaky_registry()).run("x")
    spent = [e.step_tokens for e in first.events if isinstance(e, ev.GuardCounters)]
    trace = ReActAgent(ScriptedOutputs(outputs), flaky_registry(), guards=[TokenBudget(spent[0] + 1)]).run("x")
    assert trace.outcome.status == "token budget exhausted"
    assert [e.repeats for e in trace.events if isinstance(e, ev.GuardCounters)] == [[1, None], [2, None]]


def test_a_result_that_cannot_be_shown_as_text_is_an_error_observation():
    class Opaque:
        def __str__(self) -> str:
            raise RuntimeError("no text form")

    registry = ToolRegistry([Tool("blob", "", {}, lambda: Opaque())])
    trace = ReActAgent(ScriptedOutputs(["Action: blob\nAction Input: {}"], "json"), registry).run("x")
    step = trace.steps[0]
    assert step.error.kind == "exception"
    assert step.observation == "ERROR: RuntimeError while turning blob's result into text: no text form"
