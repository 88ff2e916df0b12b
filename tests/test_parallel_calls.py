"""Several tool calls in one turn: dispatched together, observed in order, counted per call."""

from __future__ import annotations

import json
import threading
import time

import pytest

from agentdbg.cli import main
from agentdbg.debugger.filters import parse_filter
from agentdbg.engine import ErrorBudget, ReActAgent, RepetitionGuard, Tool, ToolRegistry
from agentdbg.engine import events as ev
from agentdbg.engine.approval import Decision
from agentdbg.engine.parsers import ParallelCalls, parse_plan_step, parse_script_step
from agentdbg.engine.policies import ScriptedPlan, ToyScript
from agentdbg.model.runs import EventRun
from agentdbg.model.state import group_run
from agentdbg.plans import load_plan
from agentdbg.trace.writer import write_trace


def turn(*calls, thought="all at once") -> dict:
    return {"thought": thought, "actions": [{"action": name, "args": args} for name, args in calls]}


def tool(name, fn, **kwargs) -> Tool:
    return Tool(name, "", {"x": "str"}, fn, **kwargs)


def test_the_calls_of_a_turn_run_at_the_same_time():
    meeting = threading.Barrier(3, timeout=5)  # passes only when all three calls are running together

    def meet(x: str) -> str:
        meeting.wait()
        return f"met {x}"

    registry = ToolRegistry([tool("meet", meet)])
    policy = ToyScript([turn(("meet", {"x": "a"}), ("meet", {"x": "b"}), ("meet", {"x": "c"}))])
    trace = ReActAgent(policy, registry).run("q")
    assert trace.steps[0].observations == ["met a", "met b", "met c"]


def test_observations_come_in_call_order_whatever_order_the_calls_finish_in():
    def slow(x: str) -> str:
        time.sleep(float(x))
        return f"slept {x}"

    registry = ToolRegistry([tool("sleep", slow)])
    policy = ToyScript([turn(("sleep", {"x": "0.3"}), ("sleep", {"x": "0"}))])
    events = ReActAgent(policy, registry).run("q").events
    observations = [(e.id, e.text) for e in events if isinstance(e, ev.Observation)]
    assert observations == [("call_1_1", "slept 0.3"), ("call_1_2", "slept 0")]
    actions = [(e.id, e.tool) for e in events if isinstance(e, ev.ActionTaken)]
    assert actions == [("call_1_1", "sleep"), ("call_1_2", "sleep")]


def test_each_call_keeps_its_time_limit_and_its_errors_as_data():
    def hang(x: str) -> str:
        time.sleep(5)
        return "late"

    def boom(x: str) -> str:
        raise RuntimeError("boom")

    registry = ToolRegistry([tool("hang", hang, timeout=0.2), tool("boom", boom), tool("echo", lambda x: x)])
    policy = ToyScript([turn(("hang", {"x": "1"}), ("boom", {"x": "2"}), ("nope", {"x": "3"}), ("echo", {"x": "4"}))])
    trace = ReActAgent(policy, registry).run("q")
    step = trace.steps[0]
    assert step.observations == ["ERROR: TimeoutError: hang took longer than 0.2s", "ERROR: RuntimeError: boom",
                                 "ERROR: tool 'nope' does not exist, available: ['boom', 'echo', 'hang']", "4"]
    errors = [(e.id, e.kind) for e in step.events if isinstance(e, ev.StepError)]
    assert errors == [("call_1_1", "timeout"), ("call_1_2", "exception"), ("call_1_3", "unknown_tool")]
    record = group_run(trace.events).records[0]
    assert [(c.tool, c.failed) for c in record.calls] == [("hang", True), ("boom", True), ("nope", True),
                                                          ("echo", False)]
    assert record.error_kind == "timeout" and record.is_error and record.marker() == "error"


def test_guards_count_turns_for_the_budget_each_call_for_repeats_and_failed_calls_for_errors():
    registry = ToolRegistry([tool("echo", lambda x: x), tool("boom", lambda x: 1 / 0)])
    # The step budget counts turns: three calls are one step.
    trace = ReActAgent(ToyScript([turn(("echo", {"x": "1"}), ("echo", {"x": "2"}), ("echo", {"x": "3"}))]),
                       registry, max_steps=1).run("q")
    counters = [e for e in trace.events if isinstance(e, ev.GuardCounters)]
    assert counters[-1].steps == [1, 1] and len(trace.tool_calls) == 3
    # Repeats look at each call, the turn's own included: a trip stops the whole turn before it runs.
    trace = ReActAgent(ToyScript([turn(("echo", {"x": "1"}), ("echo", {"x": "1"}))]), registry,
                       guards=[RepetitionGuard("any")]).run("q")
    assert trace.outcome.status == "action repeated" and trace.tool_calls == []
    assert "echo({'x': '1'})" in trace.outcome.message
    # The error budget counts failed calls, in call order; a successful call ends the streak.
    trace = ReActAgent(ToyScript([turn(("boom", {"x": "1"}), ("boom", {"x": "2"}))]), registry,
                       guards=[ErrorBudget(2)]).run("q")
    assert trace.outcome.status == "error budget exhausted" and len(trace.steps) == 1
    trace = ReActAgent(ToyScript([turn(("boom", {"x": "1"}), ("echo", {"x": "2"})), turn(("boom", {"x": "3"}))]),
                       registry, guards=[ErrorBudget(2)]).run("q")
    assert trace.outcome.status == "script exhausted"
    assert [e.errors[0] for e in trace.events if isinstance(e, ev.GuardCounters)] == [0, 1]


def test_dangerous_calls_of_a_turn_are_asked_one_at_a_time_in_order():
    asked: list[str] = []

    def approver(request) -> Decision:
        asked.append(request.args["x"])
        return Decision.approve() if request.args["x"] != "b" else Decision.deny("not b")

    registry = ToolRegistry([tool("rm", lambda x: f"removed {x}", dangerous=True), tool("echo", lambda x: x)])
    policy = ToyScript([turn(("rm", {"x": "a"}), ("echo", {"x": "e"}), ("rm", {"x": "b"}))])
    trace = ReActAgent(policy, registry, approver=approver).run("q")
    assert asked == ["a", "b"]
    assert trace.steps[0].observations[:2] == ["removed a", "e"]
    assert trace.steps[0].observations[2].startswith("ERROR: ") and "not b" in trace.steps[0].observations[2]
    decisions = [e.decision for e in trace.events if isinstance(e, ev.Approval)]
    assert decisions == ["approved", "denied"]


def test_a_turn_of_several_calls_is_written_in_every_structured_format():
    parsed = parse_script_step({"thought": "t", "actions": [{"action": "a"}, {"action": {"name": "b"}}]})
    assert isinstance(parsed, ParallelCalls) and [a.name for a in parsed.actions] == ["a", "b"]
    assert parse_script_step({"thought": "t", "actions": [{"action": "a"}]}).name == "a"  # one call is one action
    parsed = parse_plan_step([("a", {"x": 1}), ("b", {})])
    assert isinstance(parsed, ParallelCalls) and parsed.actions[0].args == {"x": 1}
    with pytest.raises(ValueError, match="cannot include finish"):
        parse_plan_step([("a", {}), ("finish",)])
    with pytest.raises(ValueError, match="65 calls in one turn; at most 64"):
        parse_script_step({"actions": [{"action": "a"}] * 65})
    registry = ToolRegistry([tool("echo", lambda x: x)])
    trace = ReActAgent(ScriptedPlan([[("echo", {"x": "1"}), ("echo", {"x": "2"})]]), registry).run("q")
    assert trace.steps[0].observations == ["1", "2"]
    assert trace.history_lines()[1:] == ["[01   action] echo({'x': '1'}) -> 1", "[02   action] echo({'x': '2'}) -> 2"]


def test_the_step_record_stats_and_filters_see_every_call(sample_plans, tmp_path, capsys):
    events = load_plan(sample_plans / "kv_parallel.toml").run().events
    run = group_run(events)
    third = run.records[2]
    assert [c.tool for c in third.calls] == ["kv_get"] * 3 and third.observation == "120\n18.0\nERROR: KeyError: 'total'"
    assert [c.observation_error for c in third.calls] == [False, False, True]
    state = run.final_state()
    assert state.tool_calls == {"kv_set": [2, 0], "calculator": [2, 0], "kv_get": [3, 1]}
    matches = lambda text: [r.step for r in run.records if parse_filter(text).matches(r)]  # noqa: E731
    assert matches("~tool calculator") == [1, 2]  # the second call of the turn matches too
    assert matches("~parallel") == [1, 2, 3]
    assert matches("~args total") == [3] and matches("~action '120 \\+ 18'") == [2]
    # Recorded, the fast counting path gives the same counts as the events do.
    trace = tmp_path / "run.jsonl"
    write_trace(trace, [events])
    assert main(["stats", "--json", str(trace)]) == 0
    entry = json.loads(capsys.readouterr().out)["runs"][0]
    assert entry["tools"] == {"kv_set": 2, "calculator": 2, "kv_get": 3} and entry["tool_errors"] == {"kv_get": 1}
    assert entry["steps"] == 4 and entry["policy_calls"] == 4
    reread = EventRun(events)
    assert reread.state_at(reread.step_count).tool_calls == state.tool_calls


def test_exports_write_a_turn_of_several_calls_as_one_turn(sample_plans, tmp_path):
    trace = tmp_path / "run.jsonl"
    write_trace(trace, [load_plan(sample_plans / "kv_parallel.toml").run().events])
    out = tmp_path / "chat.jsonl"
    assert main(["convert", str(trace), "--to", "openai-chat", "-o", str(out)]) == 0
    messages = json.loads(out.read_text().splitlines()[0])["messages"]
    third = [m for m in messages if m["role"] == "assistant"][2]
    assert [c["id"] for c in third["tool_calls"]] == ["call_3_1", "call_3_2", "call_3_3"]
    replies = [m for m in messages if m.get("tool_call_id", "").startswith("call_3_")]
    assert [m["content"] for m in replies] == ["120", "18.0", "ERROR: KeyError: 'total'"]
    spans_file = tmp_path / "spans.json"
    assert main(["convert", str(trace), "--to", "otel-genai", "-o", str(spans_file)]) == 0
    spans = [s for r in json.loads(spans_file.read_text())["resourceSpans"] for ss in r["scopeSpans"] for s in ss["spans"]]
    tools = [s["name"] for s in spans if s["name"].startswith("execute_tool")]
    assert tools.count("execute_tool kv_get") == 3 and len(tools) == 7
