"""The prompt shown to the policy at every step is rebuilt exactly from events."""

from __future__ import annotations

import pytest

from agentdbg.engine.agent import AgentRun
from agentdbg.plans import load_plan
from agentdbg.prompt import prompt_at
from agentdbg.runs import EventRun


def prompts_seen(plan) -> tuple[list[str], AgentRun]:
    """Run a plan step by step, recording the prompt the policy was given each time."""
    agent = plan.build_agent()
    seen: list[str] = []
    respond = agent.policy.respond
    agent.policy.respond = lambda prompt: seen.append(prompt) or respond(prompt)
    run = agent.start(plan.task)
    while not run.done:
        run.step()
    return seen, run


@pytest.mark.parametrize("name", ["memory_research.toml", "library_hallucinating.toml", "kv_tax.toml",
                                  "population.toml", "token_budget_small.toml", "tool_failures.toml",
                                  "bad_arguments.toml", "capital_arithmetic.toml", "library_hostile.toml"])
def test_every_prompt_is_rebuilt_from_events(sample_plans, name):
    seen, run = prompts_seen(load_plan(sample_plans / name))
    view = EventRun(run.events)
    assert len(seen) == view.step_count
    for step, prompt in enumerate(seen, 1):
        assert prompt_at(view, step) == prompt, step


def test_recall_shows_in_the_prompt_where_it_was_used(sample_plans):
    seen, run = prompts_seen(load_plan(sample_plans / "memory_research.toml"))
    prompt = prompt_at(EventRun(run.events), 14)
    assert "Recalled from memory:" in prompt
    assert "founded in 1764" in prompt
    assert "Brera Observatory in Milan was founded in 1764" not in prompt.split("Recent steps:")[1]


def test_a_long_transcript_prompt_can_be_cut_to_its_latest_steps(sample_plans):
    _, run = prompts_seen(load_plan(sample_plans / "library_hallucinating.toml"))
    short = prompt_at(EventRun(run.events), 5, max_steps_shown=2)
    assert short.splitlines()[:2] == ["Question: How many copies of Il Gattopardo are available?",
                                      "(… 2 earlier steps)"]
    assert "Action: calc[5 - 3]" in short and "web_search" not in short
