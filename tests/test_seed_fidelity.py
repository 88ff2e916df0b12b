"""The walkthroughs the engine grew from, in their own words: the scripted plan's audit log,
the ToyLLM loop's texts, the agent_loop() controller's retry prompts (plans choose them
with ``texts = "..."``), and ``stats`` counting only the calls that ran."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_reference_runs import TAX_HISTORY

from agentdbg.cli import main
from agentdbg.engine import (
    KeyValueStore,
    ReActAgent,
    ScriptedOutputs,
    ScriptedPlan,
    Tool,
    ToolError,
    ToolRegistry,
    ToyScript,
)
from agentdbg.engine import events as ev
from agentdbg.engine.parsers import PARSERS, FinalAnswer, get_parser
from agentdbg.engine.policies import _Script
from agentdbg.engine.texts import AGENT_LOOP, TOYLLM
from agentdbg.examples import toyllm
from agentdbg.plans import PlanError, load_plan, parse_plan
from agentdbg.trace import reader

SEEDS = Path(__file__).resolve().parents[1] / "sample_plans" / "seeds"


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# --- the scripted plan: run_agent(plan, tools, max_steps) ------------------------------------


def capitals() -> ToolRegistry:
    return ToolRegistry([
        Tool("lookup", "Capital of a country.", {"country": str}, lambda country: {"France": "Paris"}[country]),
        Tool("calc", "Multiply.", {"a": int, "b": int}, lambda a, b: a * b),
        Tool("facts", "Facts as a dict.", {}, lambda: {"capital": "Paris", "population": 68_000_000}),
    ])


def test_the_audit_log_keeps_each_observation_as_the_tool_returned_it():
    plan = ScriptedPlan([("lookup", {"country": "France"}), ("calc", {"a": 6, "b": 7}), ("facts",), ("finish",)])
    trace = ReActAgent(plan, capitals()).run("capital, then arithmetic")
    assert trace.tool_calls == [("lookup", {"country": "France"}, "Paris"), ("calc", {"a": 6, "b": 7}, 42),
                                ("facts", {}, {"capital": "Paris", "population": 68_000_000})]
    assert isinstance(trace.tool_calls[1][2], int)
    # The trace (events, transcript) stores text.
    observations = [e.text for e in trace.events if isinstance(e, ev.Observation)]
    assert observations == ["Paris", "42", "{'capital': 'Paris', 'population': 68000000}"]


def test_a_failed_call_is_in_the_audit_log_as_its_tool_error():
    trace = ReActAgent(ScriptedPlan([("lookup", {"country": "Atlantis"})]), capitals()).run("x")
    [(_, _, error)] = trace.tool_calls
    assert isinstance(error, ToolError) and error.kind == "exception"
    assert trace.steps[0].observation == "ERROR: KeyError: 'Atlantis'" == str(error)


def test_max_steps_0_returns_an_empty_trace():
    trace = ReActAgent(ScriptedPlan([("lookup", {"country": "France"})]), capitals(), max_steps=0).run("x")
    assert trace.tool_calls == [] and trace.steps == []
    assert [type(e) for e in trace.events] == [ev.RunStart, ev.RunEnd]
    assert (trace.outcome.status, trace.outcome.steps, trace.outcome.guard) == ("budget exhausted", 0, "max_steps")


def test_the_sample_plan_and_its_budget_of_no_steps(capsys, tmp_path):
    plan = load_plan(SEEDS / "run_agent_plan.toml")
    assert plan.run().tool_calls == [("lookup", {"country": "France"}, "Paris"), ("calc", {"expression": "6 * 7"}, 42)]
    text = (SEEDS / "run_agent_plan.toml").read_text(encoding="utf-8").replace("max_steps = 10", "max_steps = 0")
    (tmp_path / "none.toml").write_text(text, encoding="utf-8")
    assert parse_plan(text).run().tool_calls == []
    code, _, err = run_cli(capsys, "record", tmp_path / "none.toml", "-o", tmp_path / "none.jsonl", "-q")
    assert code == 0, err
    code, out, err = run_cli(capsys, "stats", "--json", tmp_path / "none.jsonl")
    [run] = json.loads(out)["runs"]
    assert code == 0 and (run["steps"], run["outcome"], run["tools"]) == (0, "budget exhausted", {})
    for source in (tmp_path / "none.toml", tmp_path / "none.jsonl"):  # a budget ran out, before any step
        code, out, _ = run_cli(capsys, "check", source, "--fail-on", "budget")
        assert code == 1 and "run ended before its first step: budget exhausted" in " ".join(out.split())


# --- the ToyLLM agent loop -------------------------------------------------------------------

TOYLLM_OUTPUT = TAX_HISTORY + """

final answer: the total including 15% tax is 138.0
turns used:   5
tools used:   ['calculator', 'kv_get', 'kv_set']
"""


def test_the_toyllm_program_prints_the_walkthroughs_output_exactly(capsys):
    toyllm.main()
    assert capsys.readouterr().out == TOYLLM_OUTPUT


def test_the_toyllm_sample_plan_is_the_same_run():
    trace = load_plan(SEEDS / "toyllm_tax.toml").run()
    assert "\n".join(trace.history_lines()) == TOYLLM_OUTPUT.split("\n\n")[0]
    assert trace.turns_used == 5 and trace.answer == "the total including 15% tax is 138.0"


def test_tools_register_from_plain_functions_and_bound_methods_as_the_walkthrough_registers_them():
    [calculator, kv_get, kv_set] = list(toyllm.registry())
    assert (calculator.name, calculator.param_types) == ("calculator", {"expr": "str"})
    assert (kv_get.name, kv_get.param_types) == ("kv_get", {"key": "str"})
    assert (kv_set.name, kv_set.param_types) == ("kv_set", {"key": "str", "value": "str"})
    assert kv_set.description == "Store a value under a key."
    registry = ToolRegistry()
    registry.register(Tool("ping", "", {}, lambda: "pong"))
    with pytest.raises(TypeError, match="needs the function too"):
        registry.register("calculator")
    with pytest.raises(ValueError, match="registered twice"):
        registry.register("ping", lambda: "again")


def test_toyllm_failures_read_error_and_missing_and_a_script_that_runs_out_answers():
    trace = load_plan(SEEDS / "toyllm_failures.toml").run()
    assert [step.observation for step in trace.steps[:4]] == [
        "error: bad args for kv_set: missing argument 'value'",
        "error: unknown tool 'tax_rates'",
        "error: ZeroDivisionError: division by zero",
        "missing:tax",
    ]
    assert (trace.outcome.status, trace.answer, trace.outcome.steps) == ("answered", "no more actions", 5)
    assert trace.history_lines()[-1] == "[09   final] no more actions"


def test_toyllm_out_of_turns_answers_budget_exhausted():
    registry = ToolRegistry([Tool("noop", "", {}, lambda: "ok")])
    script = ToyScript([{"kind": "action", "thought": "loop", "action": "noop", "args": {}}] * 20)
    trace = ReActAgent(script, registry, max_steps=3, texts=TOYLLM).run("loop forever")
    assert trace.outcome.describe() == "budget exhausted" == trace.outcome.message
    assert trace.history_lines()[-1] == "[07   final] budget exhausted"
    assert trace.turns_used == 3


def test_a_script_asked_past_its_end_finishes_in_every_format_and_never_raises():
    toy = ToyScript([{"kind": "finish", "content": "first"}])
    toy.respond("")
    assert toy.respond("") == {"kind": "finish", "content": "no more actions"}
    for fmt in PARSERS:
        script = _Script([], fmt)
        step = get_parser(fmt)(script.respond(""))
        assert step == FinalAnswer(step.thought, "no more actions"), fmt


def test_without_the_toyllm_texts_a_script_that_runs_out_stops_as_before():
    registry = ToolRegistry([Tool("noop", "", {}, lambda: "ok")])
    trace = ReActAgent(ToyScript([{"action": "noop"}]), registry).run("x")
    assert (trace.outcome.status, trace.outcome.describe()) == (
        "script exhausted", "STOPPED: the script ran out without a final answer")


def test_a_missing_key_text_is_filled_in_never_formatted():
    tool = KeyValueStore().get_tool(missing="missing:{key}")
    assert tool.fn(key="{key}{0}") == "missing:{key}{0}"
    with pytest.raises(KeyError):
        KeyValueStore().get_tool().fn(key="tax")


# --- the agent_loop() controller -------------------------------------------------------------


def test_the_controller_asks_for_a_retry_and_an_answer_line_ends_the_run():
    trace = load_plan(SEEDS / "agent_loop_population.toml").run()
    assert [step.observation for step in trace.steps[:4]] == [
        "could not parse Action — please retry",
        "unknown tool 'population' — please retry",
        "1428627663",
        "714313831.5",
    ]
    assert "\nObservation: could not parse Action — please retry\n" in trace.transcript
    assert (trace.outcome.status, trace.answer) == ("answered", "714313831.5")


def test_the_controller_out_of_turns_did_not_converge():
    trace = load_plan(SEEDS / "agent_loop_no_answer.toml").run()
    message = "Agent did not converge to an answer within max_turns"
    assert trace.outcome.describe() == message
    end = trace.events[-1]
    assert isinstance(end, ev.RunEnd) and end.message == message and end.outcome == "budget exhausted"


def test_an_answer_line_wins_over_an_action_and_keeps_what_follows_it():
    registry = ToolRegistry([Tool("math", "", {"expression": str}, lambda expression: 1)])
    output = "Thought: done.\nAction: math: 1 + 1\nAnswer: 2\nbecause 1 + 1 = 2"
    trace = ReActAgent(ScriptedOutputs([output], "colon"), registry, texts=AGENT_LOOP).run("1 + 1?")
    assert trace.answer == output.split("Answer:", 1)[1].strip() == "2\nbecause 1 + 1 = 2"
    assert trace.tool_calls == []


def test_the_library_example_keeps_its_error_lines_by_default():
    trace = load_plan(SEEDS.parent / "library_hallucinating.toml").run()
    assert trace.steps[0].observation.startswith("ERROR: tool 'web_search' does not exist")


@pytest.mark.parametrize("line, message", [
    ('texts = "seed001"', "plan.toml:2: texts must be one of agentdbg, toyllm, agent_loop, got 'seed001'"),
    ("texts = 1", "plan.toml:2: plan: 'texts' should be str, got int"),
])
def test_unknown_texts_are_a_plan_error_with_the_line(line, message):
    with pytest.raises(PlanError) as caught:
        parse_plan(f'task = "t"\n{line}\n[policy]\nkind = "outputs"\noutputs = []\n', "plan.toml")
    assert str(caught.value).startswith(message)


# --- stats counts the calls that ran ---------------------------------------------------------


@pytest.mark.parametrize("fast", [False, True])
def test_stats_does_not_count_a_call_the_repetition_brake_blocked(capsys, tmp_path, monkeypatch, fast):
    if fast:  # the fold that reads steps straight from the bytes, however short the run
        monkeypatch.setattr(reader, "FAST_FOLD_AFTER", 0)
    plan = SEEDS.parent / "library_stuck.toml"
    trace = tmp_path / "stuck.jsonl"
    assert run_cli(capsys, "record", plan, "-o", trace, "-q")[0] == 0
    for source in (plan, trace):
        for extra in ([], ["--full"]):
            code, out, err = run_cli(capsys, "stats", "--json", source, *extra)
            [run] = json.loads(out)["runs"]
            assert code == 0 and run["tools"] == {"catalog": 1}, (source, extra, err)
            assert run["repeats"] == 1 and run["guard_trips"][0]["guard"] == "repetition"


def test_stats_does_not_count_a_call_the_token_budget_stopped(capsys):
    code, out, _ = run_cli(capsys, "stats", "--json", SEEDS.parent / "token_budget_small.toml")
    [run] = json.loads(out)["runs"]
    assert run["outcome"] == "token budget exhausted" and run["tools"] == {"catalog": 2, "loans": 1}


def test_with_the_toyllm_texts_a_rules_policy_that_is_spent_still_stops_as_before():
    from agentdbg.engine import Rule, RulePolicy

    registry = ToolRegistry([Tool("noop", "", {}, lambda: "ok")])
    policy = RulePolicy([Rule.build("Action: noop[]", once=True)])
    trace = ReActAgent(policy, registry, texts=TOYLLM).run("x")
    assert trace.outcome.status == "script exhausted" and trace.tool_calls == [("noop", "", "ok")]
