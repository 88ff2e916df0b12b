"""The documented runs the engine grew from, reproduced exactly: through the Python API and
through the sample plans (the same runs as data)."""

from __future__ import annotations

import re

import pytest

from agentdbg.engine import (
    CallablePolicy,
    KeyValueStore,
    ReActAgent,
    RepetitionGuard,
    ScriptedPlan,
    Tool,
    ToolRegistry,
    ToyScript,
    calculator,
)
from agentdbg.examples import library
from agentdbg.plans import load_plan

HALLUCINATING_TRANSCRIPT = """\
Question: How many copies of Il Gattopardo are available?
Thought: I search online.
Action: web_search[Il Gattopardo copies]
Observation: ERROR: tool 'web_search' does not exist, available: ['calc', 'catalog', 'loans']
Thought: I need the total copies.
Action: catalog[Il Gattopardo]
Observation: 5
Thought: now the copies on loan.
Action: loans[Il Gattopardo]
Observation: 3
Thought: I subtract.
Action: calc[5 - 3]
Observation: 2
Thought: I have the number.
Final Answer: 2"""

STUCK_TRANSCRIPT = """\
Question: How many copies of Il Gattopardo are available?
Thought: I need the total copies.
Action: catalog[Il Gattopardo]
Observation: 5
Thought: I need the total copies.
Action: catalog[Il Gattopardo]"""

TAX_HISTORY = """\
[00   user] What is 120 plus 15% tax, stored in kv?
[01  thought] store the base price
[02   action] kv_set({'key': 'base', 'value': '120'}) -> stored base
[03  thought] compute 15% tax
[04   action] calculator({'expr': '120 * 0.15'}) -> 18.0
[05  thought] store the tax
[06   action] kv_set({'key': 'tax', 'value': '18.0'}) -> stored tax
[07  thought] compute total
[08   action] calculator({'expr': '120 + 18.0'}) -> 138.0
[09  thought] confirm stored values
[10   action] kv_get({'key': 'base'}) -> 120
[11   final] the total including 15% tax is 138.0"""


# --- the library question: good, hallucinating, stuck ------------------------------------


def test_library_good_policy_takes_four_steps_and_answers_two():
    trace = library.agent(library.good_policy).run(library.QUESTION)
    assert (trace.outcome.steps, trace.outcome.describe()) == (4, "2")
    assert trace.answer == str(library.CATALOG["Il Gattopardo"] - library.LOANS["Il Gattopardo"])


def test_library_hallucinating_policy_recovers_in_five_steps():
    trace = library.agent(library.hallucinating_policy).run(library.QUESTION)
    assert (trace.outcome.steps, trace.outcome.describe()) == (5, "2")
    assert trace.transcript == HALLUCINATING_TRANSCRIPT
    first = trace.steps[0]
    assert first.error.kind == "unknown_tool"
    assert "'web_search'" in first.observation
    assert first.observation.endswith("available: ['calc', 'catalog', 'loans']")


def test_library_stuck_policy_is_interrupted_at_step_two_by_the_repetition_brake():
    trace = library.agent(library.stuck_policy).run(library.QUESTION)
    assert trace.outcome.steps == 2
    assert trace.outcome.status == "action repeated"
    assert trace.outcome.guard == "repetition"
    assert trace.outcome.describe() == "INTERRUPTED: action repeated"
    assert trace.transcript == STUCK_TRANSCRIPT
    assert trace.steps[1].observation is None  # the repeated call is not run


def test_without_the_brakes_the_stuck_policy_burns_the_step_budget():
    agent = ReActAgent(library.stuck_policy, library.registry(), max_steps=6)
    trace = agent.run(library.QUESTION)
    assert (trace.outcome.steps, trace.outcome.describe()) == (6, "INTERRUPTED: step budget exhausted")
    assert len(trace.tool_calls) == 6


@pytest.mark.parametrize(
    ("argument", "observation"),
    [
        ('calc[__import__("os").getcwd()]', "ERROR: ValueError: expression not allowed: Call"),
        ("calc[1/0]", "ERROR: ZeroDivisionError: division by zero"),
        ("catalog[Missing Book]", "ERROR: KeyError: 'Missing Book'"),
    ],
)
def test_hostile_and_wrong_arguments_are_error_observations(argument, observation):
    agent = ReActAgent(CallablePolicy(lambda _: f"Thought: try\nAction: {argument}"), library.registry(), max_steps=1)
    trace = agent.run(library.QUESTION)
    assert trace.steps[0].observation == observation
    assert trace.steps[0].error.kind == "exception"


def test_hostile_arguments_run_nothing(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr("builtins.__import__", lambda *a, **k: calls.append(a) or None, raising=True)
    try:
        value = library.registry().dispatch("calc", '__import__("os").getcwd()')
    finally:
        monkeypatch.undo()
    assert value.kind == "exception"
    assert calls == []


# --- the ToyLLM tax run ------------------------------------------------------------------


def tax_agent() -> ReActAgent:
    store = KeyValueStore()
    registry = ToolRegistry([calculator("calculator", param="expr"), store.set_tool(), store.get_tool()])
    script = ToyScript(
        [
            {"thought": "store the base price", "action": "kv_set", "args": {"key": "base", "value": "120"}},
            {"thought": "compute 15% tax", "action": "calculator", "args": {"expr": "120 * 0.15"}},
            {"thought": "store the tax", "action": "kv_set", "args": {"key": "tax", "value": "18.0"}},
            {"thought": "compute total", "action": "calculator", "args": {"expr": "120 + 18.0"}},
            {"thought": "confirm stored values", "action": "kv_get", "args": {"key": "base"}},
            {"kind": "finish", "content": "the total including 15% tax is 138.0"},
        ]
    )
    return ReActAgent(script, registry, max_steps=8)


def test_tax_run_prints_the_documented_trace():
    trace = tax_agent().run("What is 120 plus 15% tax, stored in kv?")
    assert "\n".join(trace.history_lines()) == TAX_HISTORY
    assert len(trace.tool_calls) == 5
    assert trace.answer == "the total including 15% tax is 138.0"


# --- the scripted plan's audit log -------------------------------------------------------


def lookup_registry() -> ToolRegistry:
    capitals = {"France": "Paris"}
    return ToolRegistry(
        [
            Tool("lookup", "Capital of a country.", {"country": str}, lambda country: capitals[country]),
            calculator("calc"),
            Tool("ping", "No arguments.", {}, lambda: "pong"),
        ]
    )


def test_plan_records_tool_args_observation_and_finish_is_not_recorded():
    plan = ScriptedPlan([("lookup", {"country": "France"}), ("calc", {"expression": "6 * 7"}), ("finish",), ("ping",)])
    trace = ReActAgent(plan, lookup_registry(), max_steps=10).run("capital then arithmetic")
    assert trace.tool_calls == [("lookup", {"country": "France"}, "Paris"), ("calc", {"expression": "6 * 7"}, 42)]
    assert trace.outcome.status == "finished"


def test_plan_step_without_args_gets_an_empty_dict():
    trace = ReActAgent(ScriptedPlan([("ping",)]), lookup_registry()).run("ping")
    assert trace.tool_calls == [("ping", {}, "pong")]


def test_plan_longer_than_max_steps_stops_with_a_partial_trace():
    plan = ScriptedPlan([("ping",)] * 5 + [("finish",)])
    trace = ReActAgent(plan, lookup_registry(), max_steps=3).run("too long")
    assert len(trace.tool_calls) == 3
    assert trace.outcome.status == "budget exhausted"
    assert trace.outcome.guard == "max_steps"


# --- the Thought / Action / Action Input loop ---------------------------------------------


def test_multistep_task_feeds_each_observation_into_the_next_step():
    registry = ToolRegistry([
        Tool("add", "Add.", {"a": int, "b": int}, lambda a, b: a + b),
        Tool("mul", "Multiply.", {"a": int, "b": int}, lambda a, b: a * b),
    ])

    def policy(scratchpad: str) -> str:
        seen = re.findall(r"^Observation: (.*)$", scratchpad, re.M)
        if not seen:
            return 'Thought: first add.\nAction: add\nAction Input: {"a": 2, "b": 3}'
        if len(seen) == 1:
            return f'Thought: then multiply.\nAction: mul\nAction Input: {{"a": {seen[0]}, "b": 4}}'
        return f"Thought: done.\nFinal Answer: {seen[1]}"

    trace = ReActAgent(CallablePolicy(policy, "json"), registry, max_steps=5).run("(2 + 3) * 4")
    assert trace.answer == "20"
    assert [call[2] for call in trace.tool_calls] == [5, 20]


def test_a_policy_that_never_answers_stops_at_max_steps():
    registry = ToolRegistry([Tool("noop", "", {}, lambda: "ok")])
    forever = CallablePolicy(lambda _: "Action: noop\nAction Input: {}", "json")
    trace = ReActAgent(forever, registry, max_steps=4).run("loop")
    assert trace.outcome.steps == 4
    assert trace.outcome.status == "budget exhausted"
    assert len(trace.tool_calls) == 4


# --- the Action: tool: argument loop ------------------------------------------------------


def test_parse_failure_is_an_observation_the_policy_recovers_from():
    outputs = iter(["Action: lookup_population India", "Action: lookup_population: India", "Answer: 1.4 billion"])
    registry = ToolRegistry([Tool("lookup_population", "", {"country": str}, lambda country: 1_428_627_663)])
    trace = ReActAgent(CallablePolicy(lambda _: next(outputs), "colon"), registry).run("India?")
    assert trace.steps[0].parse_error is not None
    assert trace.steps[0].observation.startswith("ERROR: could not parse Action")
    assert trace.steps[1].observation == "1428627663"
    assert trace.answer == "1.4 billion"


# --- the same runs, from the sample plans ---------------------------------------------------

PLAN_OUTCOMES = {
    "library_good.toml": ("answered", 4, "2", None),
    "library_good_python.toml": ("answered", 4, "2", None),
    "library_hallucinating.toml": ("answered", 5, "2", None),
    "library_stuck.toml": ("action repeated", 2, None, "repetition"),
    "library_runaway.toml": ("budget exhausted", 6, None, "max_steps"),
    "library_hostile.toml": ("answered", 7, "2", None),
    "kv_tax.toml": ("answered", 6, "the total including 15% tax is 138.0", None),
    "capital_arithmetic.toml": ("finished", 3, None, None),
    "capital_over_budget.toml": ("budget exhausted", 3, None, "max_steps"),
    "population.toml": ("answered", 4, "India's population divided by 2 is 714313831.5", None),
    "tool_failures.toml": ("answered", 4, "1 EUR = 1.0843 USD", None),
    "bad_arguments.toml": ("error budget exhausted", 3, None, "error_budget"),
}


@pytest.mark.parametrize("name", sorted(PLAN_OUTCOMES))
def test_sample_plan_outcomes(sample_plans, name):
    trace = load_plan(sample_plans / name, allow_code=True).run()
    o = trace.outcome
    assert (o.status, o.steps, o.answer, o.guard) == PLAN_OUTCOMES[name]


def test_sample_plans_reproduce_the_python_runs_exactly(sample_plans):
    for name, policy in [("library_good.toml", library.good_policy),
                         ("library_hallucinating.toml", library.hallucinating_policy),
                         ("library_stuck.toml", library.stuck_policy)]:
        from_data = load_plan(sample_plans / name).run()
        from_code = library.agent(policy).run(library.QUESTION)
        assert from_data.transcript == from_code.transcript
        assert from_data.outcome == from_code.outcome


def test_tax_plan_prints_the_documented_trace(sample_plans):
    trace = load_plan(sample_plans / "kv_tax.toml").run()
    assert "\n".join(trace.history_lines()) == TAX_HISTORY
    assert len(trace.tool_calls) == 5


def test_hostile_plan_gives_three_error_observations_and_runs_nothing(sample_plans):
    trace = load_plan(sample_plans / "library_hostile.toml").run()
    assert [s.observation for s in trace.steps[:3]] == [
        "ERROR: ValueError: expression not allowed: Call",
        "ERROR: ZeroDivisionError: division by zero",
        "ERROR: KeyError: 'Missing Book'",
    ]


def test_every_sample_plan_is_covered(sample_plans):
    covered = set(PLAN_OUTCOMES)
    present = {p.name for p in sample_plans.glob("*.toml")}
    # Plans added with their own tests (memory, token budgets) are listed there.
    assert covered <= present


def test_the_bundled_demo_is_the_hallucinating_sample_plan(sample_plans):
    from importlib.resources import files

    demo = files("agentdbg") / "demo" / "library_hallucinating.toml"
    assert demo.read_text(encoding="utf-8") == (sample_plans / "library_hallucinating.toml").read_text(encoding="utf-8")


def test_repetition_guard_counts_in_the_strict_mode_by_default():
    assert RepetitionGuard().threshold == 2
    assert RepetitionGuard("consecutive").threshold == 3
