"""A loop written by hand (no engine) recorded with agentdbg.record gives the trace the engine
gives for the same sequence: the same counters step by step, the same guard trip and
outcome, the same `check` verdict and message, the same `stats`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import agentdbg
from agentdbg.cli import main
from agentdbg.engine import (
    ErrorBudget,
    ReActAgent,
    RepetitionGuard,
    ScriptedOutputs,
    ScriptedPlan,
    TokenBudget,
    ToolRegistry,
    calculator,
    scripted,
    table_lookup,
)
from agentdbg.engine import events as ev
from agentdbg.trace.reader import open_trace
from agentdbg.trace.writer import TraceWriter

TASK = "How many copies of Il Gattopardo are available?"


def library_tools() -> ToolRegistry:
    return ToolRegistry([
        table_lookup("catalog", {"Il Gattopardo": 5}, param="title"),
        table_lookup("loans", {"Il Gattopardo": 3}, param="title"),
        calculator("calc"),
    ])


def flaky_tools() -> ToolRegistry:
    return ToolRegistry([
        scripted("fetch", [{"raise": "connection reset"}, {"hang": 2}, {"return": "page"}],
                 params={"url": "str"}, timeout=0.05),
        calculator("calc"),
    ])


def engine_trace(path: Path, policy, tools, max_steps: int, guards) -> list[ev.Event]:
    agent = ReActAgent(policy, tools, max_steps=max_steps, guards=guards, name="parity")
    with TraceWriter(path, mode="create") as writer:
        trace = agent.run(TASK, on_event=writer.write)
    return trace.events


def step_tokens(events: list[ev.Event]) -> list[int]:
    """What each engine step cost: the usage the hand-written loop's model reports."""
    return [e.step_tokens for e in events if isinstance(e, ev.GuardCounters)]


# Each scenario: the engine's policy and guards, and the same turns as a hand-written loop sees
# them from its own model: (thought, tool, args), ("", None, (message, text)) for output that
# could not be read, (thought, "answer", text) for the final answer.
SCENARIOS = {
    # An invented tool, then the strict repetition brake on the repeated lookup (library_stuck).
    "hallucinated tool, then repeat": dict(
        policy=lambda: ScriptedOutputs([
            "Thought: I search online.\nAction: web_search[Il Gattopardo copies]",
            "Thought: I need the total copies.\nAction: catalog[Il Gattopardo]",
            "Thought: I need the total copies.\nAction: catalog[Il Gattopardo]",
        ], format="bracket"),
        tools=library_tools, max_steps=6, guards=lambda: [RepetitionGuard("any")],
        turns=[("I search online.", "web_search", "Il Gattopardo copies"),
               ("I need the total copies.", "catalog", "Il Gattopardo"),
               ("I need the total copies.", "catalog", "Il Gattopardo")],
    ),
    # Every tool failure the engine knows, then the error budget.
    "tool errors, then the error budget": dict(
        policy=lambda: ScriptedPlan([
            ("fetch", {"url": "a"}), ("calc", {"expression": "2 * 3"}), ("fetch", {"url": "b"}),
            ("fetch", {"url": 7}), ("calc", "1 +"), ("nope", {}),
        ]),
        tools=flaky_tools, max_steps=10, guards=lambda: [ErrorBudget(3), RepetitionGuard("consecutive")],
        turns=[("", "fetch", {"url": "a"}), ("", "calc", {"expression": "2 * 3"}), ("", "fetch", {"url": "b"}),
               ("", "fetch", {"url": 7}),
               ("", None, ("a plan step's args must be a dict, got str", "Output: ('calc', '1 +')")),
               ("", "nope", {})],
    ),
    # Answered, with an error and a repeat on the way (only counted: no brake).
    "answered with a repeat counted": dict(
        policy=lambda: ScriptedOutputs([
            "Thought: the catalogue first.\nAction: catalog[Il Gattopardo]",
            "Thought: again, to be sure.\nAction: catalog[Il Gattopardo]",
            "Thought: oops.\nAction: calc[5 -]",
            "Thought: now the loans.\nAction: loans[Il Gattopardo]",
            "Thought: I subtract.\nAction: calc[5 - 3]",
            "Thought: done.\nFinal Answer: 2",
        ], format="bracket"),
        tools=library_tools, max_steps=10, guards=lambda: [],
        turns=[("the catalogue first.", "catalog", "Il Gattopardo"),
               ("again, to be sure.", "catalog", "Il Gattopardo"),
               ("oops.", "calc", "5 -"),
               ("now the loans.", "loans", "Il Gattopardo"),
               ("I subtract.", "calc", "5 - 3"),
               ("done.", "answer", "2")],
    ),
    # The step budget runs out.
    "step budget": dict(
        policy=lambda: ScriptedOutputs(["Thought: look.\nAction: catalog[Il Gattopardo]",
                                        "Thought: look more.\nAction: loans[Il Gattopardo]",
                                        "Thought: and again.\nAction: calc[1 + 1]"], format="bracket"),
        tools=library_tools, max_steps=2, guards=lambda: [],
        turns=[("look.", "catalog", "Il Gattopardo"), ("look more.", "loans", "Il Gattopardo"),
               ("and again.", "calc", "1 + 1")],
    ),
    # The token budget: the step that crosses it is counted, its action is not run.
    "token budget": dict(
        policy=lambda: ScriptedOutputs(["Thought: look.\nAction: catalog[Il Gattopardo]",
                                        "Thought: look more.\nAction: loans[Il Gattopardo]",
                                        "Thought: done.\nFinal Answer: 2"], format="bracket"),
        tools=library_tools, max_steps=10, guards=lambda: [TokenBudget(60)],
        turns=[("look.", "catalog", "Il Gattopardo"), ("look more.", "loans", "Il Gattopardo"),
               ("done.", "answer", "2")],
    ),
}

GUARD_ARGS = {
    "hallucinated tool, then repeat": dict(repeat="any", max_steps=6),
    "tool errors, then the error budget": dict(max_consecutive_errors=3, repeat="consecutive", max_steps=10),
    "answered with a repeat counted": dict(max_steps=10),
    "step budget": dict(max_steps=2),
    "token budget": dict(token_budget=60, max_steps=10),
}


def hand_written_loop(path: Path, turns, usage, tools, **guards):
    """What a user writes around their own model: no engine, only the recorder."""
    model = iter(zip(turns, usage, strict=False))
    with agentdbg.record(path, task=TASK, tools=tools, name="parity", mode="create", **guards) as rec:
        while not rec.should_stop:
            (thought, tool, args), tokens = next(model)
            if tool == "answer":
                rec.answer(args, thought=thought, tokens=tokens)
            elif tool is None:
                message, text = args
                rec.parse_error(message, text=text, thought=thought, tokens=tokens)
            else:
                step = rec.call(tool, args, thought=thought, tokens=tokens)
                assert step.observation is not None  # what the loop would send back to its model
    return rec


def cli(capsys, *argv) -> tuple[int, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out + err


def per_step(path: Path) -> list[dict]:
    document = open_trace(path)
    try:
        document.wait()
        (run,) = document.runs
        steps = []
        for n in range(1, run.step_count + 1):
            record = run.record(n)
            steps.append({
                "counters": record.guards.to_dict(), "tool": record.tool, "args": record.args, "call": record.call,
                "parse_error": record.parse_error, "error": (record.error_kind, record.error),
                "observation": (record.observation, record.observation_error), "answer": record.answer,
                "tripped": record.tripped.to_dict() if record.tripped else None,
                "end": record.end.to_dict() if record.end else None,
            })
        return steps
    finally:
        document.close()


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_a_recorded_loop_matches_the_engine_step_by_step(tmp_path, capsys, name):
    scenario = SCENARIOS[name]
    engine_path, loop_path = tmp_path / "engine.jsonl", tmp_path / "loop.jsonl"
    events = engine_trace(engine_path, scenario["policy"](), scenario["tools"](), scenario["max_steps"],
                          scenario["guards"]())
    rec = hand_written_loop(loop_path, scenario["turns"], step_tokens(events), scenario["tools"](),
                            **GUARD_ARGS[name])

    engine_end = events[-1]
    assert rec.outcome.status == engine_end.outcome and rec.outcome.guard == engine_end.guard
    assert rec.outcome.message == engine_end.message and rec.step_count == engine_end.steps
    assert per_step(loop_path) == per_step(engine_path)

    for command in (["check", "--fail-on", "error,repeat,budget"], ["check", "--fail-on", "guard,tokens"],
                    ["stats"]):
        engine_code, engine_out = cli(capsys, *command, engine_path)
        loop_code, loop_out = cli(capsys, *command, loop_path)
        assert loop_code == engine_code
        assert loop_out == engine_out.replace("engine.jsonl", "loop.jsonl")


def test_check_fails_the_recorded_loop_where_it_fails_the_engine(tmp_path, capsys):
    scenario = SCENARIOS["hallucinated tool, then repeat"]
    events = engine_trace(tmp_path / "engine.jsonl", scenario["policy"](), scenario["tools"](), 6, scenario["guards"]())
    hand_written_loop(tmp_path / "loop.jsonl", scenario["turns"], step_tokens(events), scenario["tools"](),
                      **GUARD_ARGS["hallucinated tool, then repeat"])
    code, out = cli(capsys, "check", tmp_path / "loop.jsonl", "--fail-on", "error,repeat,budget", "--json")
    assert code == 1
    result = json.loads(out)
    assert result["failed"] == ["error", "repeat"]
    failures = [(f["condition"], f["step"], f["message"]) for f in result["runs"][0]["failures"]]
    assert failures == [
        ("error", 1, "unknown_tool: tool 'web_search' does not exist, available: ['calc', 'catalog', 'loans']"),
        ("repeat", 3, "repetition guard: action repeated again: catalog[Il Gattopardo]"),
    ]
    code, out = cli(capsys, "stats", "--json", tmp_path / "loop.jsonl")
    (run,) = json.loads(out)["runs"]
    assert run["steps"] == 3 and run["outcome"] == "action repeated" and run["errors"] == 1
