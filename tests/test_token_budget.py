"""The token budget guard and the default token estimator."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentdbg.engine import events as ev
from agentdbg.engine.agent import ReActAgent
from agentdbg.engine.guards import TokenBudget
from agentdbg.engine.memory import TieredMemory
from agentdbg.engine.mock_tools import calculator
from agentdbg.engine.policies import ScriptedOutputs
from agentdbg.engine.tokens import estimate_tokens, from_tokenizer
from agentdbg.engine.tools import Tool, ToolRegistry
from agentdbg.plans import load_plan, parse_plan
from agentdbg.state import group_run

SAMPLE_PLANS = Path(__file__).resolve().parents[1] / "sample_plans"

# --- the estimator --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("", 0),
        ("a", 1),
        ("abcd", 1),
        ("abcde", 2),
        ("x" * 400, 100),
        ("Question: How many copies of Il Gattopardo are available?", 15),  # 57 characters
        ("perché", 2),  # 7 UTF-8 bytes
        ("日本語の文章です", 6),  # 8 characters, 24 bytes
        ("日" * 4, 3),  # four characters per token would say 1
        ("😀", 1),
        ("\ud800", 1),  # a lone surrogate (from a damaged JSON string) is counted, not an error
    ],
)
def test_estimate_is_one_token_per_started_four_utf8_bytes(text, tokens):
    assert estimate_tokens(text) == tokens


@given(st.text())
def test_estimate_matches_its_definition(text):
    size = len(text.encode("utf-8", "surrogatepass"))
    assert estimate_tokens(text) == -(-size // 4)
    assert estimate_tokens(text) >= len(text) / 4  # never below the four-characters rule


@given(st.text(alphabet=st.characters(max_codepoint=127)))
def test_for_ascii_text_it_is_four_characters_per_token(text):
    assert estimate_tokens(text) == -(-len(text) // 4)


@given(st.text(), st.text())
def test_estimate_of_parts_is_never_below_the_whole(a, b):
    assert estimate_tokens(a) + estimate_tokens(b) >= estimate_tokens(a + b)
    assert estimate_tokens(a + b) >= max(estimate_tokens(a), estimate_tokens(b))


def test_a_real_tokenizer_plugs_in():
    count = from_tokenizer(str.split)
    assert count("one two  three") == 3
    assert "split" in count.__qualname__


# --- the guard ------------------------------------------------------------------------------


def test_budget_trips_only_when_the_total_exceeds_the_limit():
    budget = TokenBudget(100)
    assert budget.spend(60) is None
    assert budget.spend(40) is None  # exactly at the limit: still allowed
    assert budget.counter == [100, 100]
    trip = budget.spend(1)
    assert trip is not None and trip.guard == "token_budget" and trip.outcome == "token budget exhausted"
    assert trip.message == "token budget exhausted: 101 > 100 tokens"
    budget.reset()
    assert budget.counter == [0, 100]


def test_budget_without_limit_only_counts():
    budget = TokenBudget(None)
    assert budget.spend(10**9) is None
    assert budget.counter == [10**9, None]


@pytest.mark.parametrize("limit", [0, -5])
def test_budget_limit_must_be_positive(limit):
    with pytest.raises(ValueError, match="token budget"):
        TokenBudget(limit)


# --- the guard in the loop ------------------------------------------------------------------


def counters(events):
    return [e for e in events if isinstance(e, ev.GuardCounters)]


def expected_costs(trace, task_line: str) -> list[int]:
    """What each step should cost, recomputed from the transcript: the prompt (everything
    before the step) plus the step's output, each estimated on its own."""
    transcript = task_line
    costs = []
    for step in trace.steps:
        output = step.output
        costs.append(estimate_tokens(transcript) + estimate_tokens(output))
        transcript += "\n" + output
        if step.observation is not None:
            transcript += "\nObservation: " + step.observation
    return costs


def test_small_budget_trips_exactly_at_the_documented_step():
    plan = load_plan(SAMPLE_PLANS / "token_budget_small.toml")
    trace = plan.run()
    costs = expected_costs(trace, f"Question: {plan.task}")
    totals = [sum(costs[: i + 1]) for i in range(len(costs))]
    assert totals == [43, 110, 205, 320]  # as the plan's header comment says
    assert [c.tokens for c in counters(trace.events)] == [[t, 300] for t in totals]
    assert [c.step_tokens for c in counters(trace.events)] == costs
    assert trace.outcome.status == "token budget exhausted"
    assert trace.outcome.steps == 4 and trace.outcome.guard == "token_budget"
    assert trace.outcome.message == "token budget exhausted: 320 > 300 tokens"
    step4 = [e.type for e in trace.steps[3].events]
    assert step4 == ["step", "thought", "action", "guards", "guard_tripped", "run_end"]  # the action did not run
    assert trace.steps[3].observation is None


def test_large_budget_lets_the_same_plan_answer():
    trace = load_plan(SAMPLE_PLANS / "token_budget_large.toml").run()
    assert trace.outcome.status == "answered" and trace.outcome.answer == "2"
    assert [c.tokens[0] for c in counters(trace.events)] == [43, 110, 205, 320, 464, 623]
    assert counters(trace.events)[-1].tokens == [623, 800]


@pytest.mark.parametrize(("budget", "outcome", "steps"), [(623, "answered", 6), (622, "token budget exhausted", 6),
                                                          (320, "token budget exhausted", 5), (319, "token budget exhausted", 4),
                                                          (42, "token budget exhausted", 1)])
def test_the_step_that_crosses_the_budget_is_the_last(budget, outcome, steps):
    text = (SAMPLE_PLANS / "token_budget_large.toml").read_text()
    trace = parse_plan(text.replace("token_budget = 800", f"token_budget = {budget}")).run()
    assert (trace.outcome.status, trace.outcome.steps) == (outcome, steps)
    assert counters(trace.events)[-1].tokens[1] == budget


def test_an_answer_that_crosses_the_budget_is_not_accepted():
    text = (SAMPLE_PLANS / "token_budget_large.toml").read_text()
    trace = parse_plan(text.replace("token_budget = 800", "token_budget = 622")).run()
    assert trace.outcome.answer is None
    assert not any(isinstance(e, ev.Answered) for e in trace.events)
    assert group_run(trace.events).final_state().answer is None


def test_an_action_that_crosses_the_budget_never_runs():
    calls = []
    tool = Tool("note", "Write a note.", {"text": str}, lambda text: calls.append(text) or "noted")
    outputs = [f"Thought: note {i}\nAction: note[{i}]" for i in range(5)]
    agent = ReActAgent(ScriptedOutputs(outputs), ToolRegistry([tool]), max_steps=10, guards=[TokenBudget(60)])
    trace = agent.run("take notes")
    assert [c.tokens[0] for c in counters(trace.events)] == [13, 39, 78]  # 5 + 8, then 18 + 8, then 31 + 8
    assert calls == ["0", "1"]  # step 3 crossed 60 tokens: its note was not written
    assert trace.outcome.status == "token budget exhausted"


def test_tokens_are_in_every_steps_guard_counters_beside_the_others():
    trace = load_plan(SAMPLE_PLANS / "token_budget_large.toml").run()
    run = group_run(trace.events)
    states = list(run.states())
    for number, (record, state) in enumerate(zip(run.records, states[1:], strict=True), 1):
        guards = record.guards
        assert guards is not None
        assert guards.steps == [number, 8]
        assert guards.repeats[1] == 2 and guards.errors == [0, None]
        assert guards.tokens[1] == 800
        assert state.tokens == guards.tokens  # the debugger's guard pane reads it from events
        assert state.step_tokens == guards.step_tokens
    assert states[0].tokens == [0, 800]


def test_without_a_budget_tokens_are_still_counted():
    trace = load_plan(SAMPLE_PLANS / "library_good.toml").run()
    assert [c.tokens for c in counters(trace.events)] == [[31, None], [82, None], [146, None], [225, None]]


def test_a_plugged_in_estimator_is_used_for_prompt_and_output():
    seen = []

    def words(text):
        seen.append(text)
        return len(text.split())

    outputs = ["Thought: a b\nAction: calc[1 + 1]", "Final Answer: 2"]
    agent = ReActAgent(ScriptedOutputs(outputs), ToolRegistry([calculator()]), guards=[TokenBudget(10)], tokens=words)
    trace = agent.run("q")
    # step 1: "Question: q" (2) + output (7); step 2: 2 + 7 + "Observation: 2" (2) + answer (3)
    assert [c.tokens for c in counters(trace.events)] == [[9, 10], [23, 10]]
    assert trace.outcome.status == "token budget exhausted"
    assert seen[0] == "Question: q"


def test_a_parse_error_step_is_charged_too():
    agent = ReActAgent(ScriptedOutputs(["gibberish without an action", "Final Answer: x"]), ToolRegistry([]),
                       guards=[TokenBudget(1000)])
    trace = agent.run("q")
    first = counters(trace.events)[0]
    assert first.step_tokens == estimate_tokens("Question: q") + estimate_tokens("gibberish without an action")


def test_with_memory_the_budget_charges_the_memory_context():
    outputs = [f"Thought: step {i}\nAction: calc[{i} + 1]" for i in range(1, 9)] + ["Final Answer: done"]
    prompts = []
    memory = TieredMemory(max_turns=2, recall_k=1)
    original = memory.build_context

    def spy(task_line, step):
        prompt, found = original(task_line, step)
        prompts.append(prompt)
        return prompt, found

    memory.build_context = spy
    agent = ReActAgent(ScriptedOutputs(outputs), ToolRegistry([calculator()]), max_steps=20, memory=memory,
                       guards=[TokenBudget(10_000)])
    trace = agent.run("count")
    costs = [c.step_tokens for c in counters(trace.events)]
    assert costs == [estimate_tokens(p) + estimate_tokens(o) for p, o in zip(prompts, outputs, strict=True)]
