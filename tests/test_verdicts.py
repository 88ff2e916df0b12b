"""A grader's verdict: read safely, judged for a plan's expected answer, folded into the
derived state at the step where the run ends, carried by checkpoints, absent from old ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentdbg.documents import open_document
from agentdbg.engine import events as ev
from agentdbg.engine.agent import ReActAgent
from agentdbg.engine.mock_tools import calculator
from agentdbg.engine.policies import ScriptedOutputs
from agentdbg.engine.tools import ToolRegistry
from agentdbg.engine.verdicts import Verdict, judge_answer, normalise_answer, outcome_with_verdict
from agentdbg.plans import PlanError, load_plan, parse_plan
from agentdbg.runs import EventRun
from agentdbg.state import RunState, group_run
from agentdbg.trace.writer import write_trace

WRONG = {"correct": False, "score": 0, "expected": "REFUTES", "grader": "em"}


# -- reading and describing ---------------------------------------------------------------

def test_a_verdict_reads_from_a_dict_or_a_run_end():
    assert Verdict.read(WRONG) == Verdict(False, 0, "REFUTES", "em")
    assert Verdict.read(ev.RunEnd(step=2, outcome="answered", verdict=WRONG)) == Verdict(False, 0, "REFUTES", "em")
    assert Verdict.read(None) is None and Verdict.read(ev.RunEnd(step=1, outcome="answered")) is None


@pytest.mark.parametrize("odd", [[], "wrong", 3, {"correct": "no", "score": True, "expected": 5, "grader": 7},
                                 {"score": float("nan")}, {"score": float("inf")}])
def test_an_odd_verdict_never_breaks_a_view(odd):
    verdict = Verdict.read(odd)
    if verdict is not None:  # a dict: whatever is not of its shape reads as missing
        assert verdict.correct is None and verdict.score is None and verdict.expected is None
        assert verdict.word == "not judged" and isinstance(verdict.details(), str)


@pytest.mark.parametrize("data, word, details", [
    (WRONG, "wrong", "expected: REFUTES; grader: em"),
    ({"correct": True, "score": 1, "expected": "SUPPORTS", "grader": "em"}, "correct", "grader: em"),
    ({"correct": True, "score": 0.75, "expected": None, "grader": "f1"}, "correct", "score 0.75; grader: f1"),
    ({"correct": None, "score": 0.5, "expected": "x", "grader": "model_graded_qa"}, "score 0.5",
     "expected: x; grader: model_graded_qa"),
    ({"correct": None, "score": None, "expected": None, "grader": "human"}, "not judged", "grader: human"),
    ({"correct": False, "score": None, "expected": "2", "grader": "expected"}, "wrong", "expected: 2"),
])
def test_the_word_and_the_details(data, word, details):
    verdict = Verdict.read(data)
    assert verdict.word == word
    assert verdict.details() == details
    assert outcome_with_verdict("answered", verdict) == f"answered, {word}"
    assert outcome_with_verdict("answered", None) == "answered"


# -- a plan's expected answer ---------------------------------------------------------------

@pytest.mark.parametrize("answer, expected, correct", [
    ("2", "2", True), (" 2\n", "2", True), ("Not  Enough\tInfo", "NOT ENOUGH INFO", True),
    ("2.0", "2", False), ("two", "2", False), (None, "2", False), ("", "", True),
])
def test_an_exact_match_after_whitespace_and_case(answer, expected, correct):
    assert judge_answer(answer, expected) == {"correct": correct, "score": None, "expected": expected,
                                              "grader": "expected"}
    assert normalise_answer("  A\u00a0b\n C ") == "a b c"


def _agent(outputs: list[str], expected: str | None, max_steps: int = 4) -> ReActAgent:
    return ReActAgent(ScriptedOutputs(outputs, format="bracket"), ToolRegistry([calculator("calc")]),
                      max_steps=max_steps, expected=expected)


def test_the_engine_judges_the_answer_against_the_expected_one():
    right = _agent(["Thought: sum.\nAction: calc[1 + 1]", "Thought: done.\nFinal Answer: 2"], "2").run("1+1?")
    assert right.events[-1].verdict == {"correct": True, "score": None, "expected": "2", "grader": "expected"}
    wrong = _agent(["Thought: guess.\nFinal Answer: 3"], "2").run("1+1?")
    assert wrong.events[-1].verdict["correct"] is False
    # Out of steps without an answer: wrong too (nothing to match).
    stuck = _agent(["Thought: again.\nAction: calc[1 + 1]"] * 3, "2", max_steps=2).run("1+1?")
    assert stuck.outcome.status == "budget exhausted" and stuck.events[-1].verdict["correct"] is False
    # Without an expected answer, no verdict at all.
    assert _agent(["Thought: x.\nFinal Answer: 2"], None).run("1+1?").events[-1].verdict is None


def test_the_sample_plans_declare_their_expected_answer(sample_plans: Path):
    good = load_plan(sample_plans / "library_good.toml").run()
    assert good.events[-1].verdict == {"correct": True, "score": None, "expected": "2", "grader": "expected"}
    runaway = load_plan(sample_plans / "library_runaway.toml").run()
    assert runaway.outcome.status == "budget exhausted" and runaway.events[-1].verdict["correct"] is False
    assert load_plan(sample_plans / "library_stuck.toml").run().events[-1].verdict is None


PLAN = '''task = "1 + 1?"
{expected}
[[tools]]
name = "calc"
kind = "calculator"

[policy]
kind = "outputs"
format = "bracket"
outputs = ["Thought: done.\\nFinal Answer: 2"]
'''


def test_a_plan_may_give_its_expected_answer_as_text_or_a_whole_number():
    for line in ('expected = "2"', "expected = 2"):
        events = parse_plan(PLAN.format(expected=line)).run().events
        assert events[-1].verdict["correct"] is True and events[-1].verdict["expected"] == "2"
    with pytest.raises(PlanError, match=r"<plan>:2: plan: 'expected' should be str or int, got bool"):
        parse_plan(PLAN.format(expected="expected = true"))


# -- derived state and checkpoints ------------------------------------------------------------

def test_the_state_has_the_verdict_once_the_run_has_ended(sample_plans: Path):
    run = group_run(load_plan(sample_plans / "library_good.toml").run().events)
    states = list(run.states())
    assert all(state.verdict is None for state in states[:-1])
    assert states[-1].verdict["correct"] is True
    assert RunState.from_dict(states[-1].to_dict()) == states[-1]


def test_a_checkpoint_written_before_verdicts_reads_as_no_verdict(sample_plans: Path):
    state = list(group_run(load_plan(sample_plans / "library_good.toml").run().events).states())[2]
    data = state.to_dict()
    assert "verdict" not in data  # a run not yet ended: its checkpoints are as they always were
    assert RunState.from_dict(data).verdict is None


@pytest.mark.parametrize("bad", [[1], "yes", {"correct": "yes"}, {"score": "high"}, {"grader": 3}])
def test_a_checkpoint_with_a_malformed_verdict_is_refused(bad, sample_plans: Path):
    state = group_run(load_plan(sample_plans / "library_good.toml").run().events).final_state()
    data = {**state.to_dict(), "verdict": bad}
    with pytest.raises(ValueError, match="'verdict' should be a grader's verdict or null"):
        RunState.from_dict(data)


def test_a_trace_read_from_its_checkpoints_has_the_verdict(tmp_path: Path, sample_plans: Path):
    events = load_plan(sample_plans / "library_good.toml").run().events
    path = tmp_path / "good.jsonl"
    write_trace(path, [events], checkpoint_every=1)  # every state but the first from a checkpoint
    document = open_document(path)
    try:
        run = document.runs[0]
        run.wait()
        assert run.state_at(run.step_count).verdict == EventRun(events).state_at(4).verdict
        assert run.state_at(run.step_count).verdict["correct"] is True
        assert Verdict.read(run.end).word == "correct"
    finally:
        document.close()


def test_an_old_trace_without_verdicts_reads_as_ungraded(tmp_path: Path, sample_plans: Path):
    events = load_plan(sample_plans / "library_stuck.toml").run().events
    path = tmp_path / "stuck.jsonl"
    write_trace(path, [events])
    assert b'"verdict"' not in path.read_bytes()
    document = open_document(path)
    try:
        run = document.runs[0]
        run.wait()
        assert run.end.verdict is None and run.state_at(run.step_count).verdict is None
    finally:
        document.close()


# -- a loop of your own ---------------------------------------------------------------------

def test_the_recorder_judges_against_the_expected_answer(tmp_path: Path):
    import agentdbg

    path = tmp_path / "own.jsonl"
    with agentdbg.record(path, "1 + 1?", expected="2") as rec:
        rec.answer(" 2 ")
    with agentdbg.record(path, "1 + 1?", expected="2") as rec:
        rec.answer("3")
    with agentdbg.record(path, "1 + 1?", expected="2"):
        pass  # no answer: unfinished, and wrong
    with agentdbg.record(path, "1 + 1?") as rec:
        rec.answer("2")
    document = open_document(path)
    try:
        document.wait()
        assert [Verdict.read(run.end) and Verdict.read(run.end).word for run in document.runs] == [
            "correct", "wrong", "wrong", None]
        assert document.runs[2].end.outcome == "unfinished"
    finally:
        document.close()
