"""The ReAct paper's real files: 100 recorded FEVER runs and the few-shot prompt files.

Every episode is checked against the harness's own result dict, read here independently
of the importer; the runs that repeat an action are found from the raw text and must be
exactly the ones the importer's repeat counter flags.
"""

from __future__ import annotations

import ast
import json
import re

import pytest
from test_import_support import convert

from agentdbg.engine import events as ev


@pytest.fixture
def fever_runs(shared_fixtures):
    path = shared_fixtures / "react-paper" / "fever_runs_first100.txt"
    if not path.exists():
        pytest.skip(f"{path} not found")
    return path


def _result_dicts(text: str) -> list[dict]:
    return [ast.literal_eval(line.strip()) for line in text.splitlines() if line.startswith("{'steps'")]


def _episode_actions(text: str) -> list[list[str]]:
    """Each episode's actions as written (what follows 'Action N:' up to its observation)."""
    episodes = []
    for chunk in text.split("\n-----------\n"):
        if "Claim:" not in chunk:
            continue
        actions = re.findall(r"^Action \d+:(.*?)^Observation \d+:", chunk, re.M | re.S)
        episodes.append([a.strip() for a in actions])
    return episodes


def test_all_100_fever_runs_match_their_result_dicts(fever_runs):
    text = fever_runs.read_text(encoding="utf-8")
    expected = _result_dicts(text)
    name, result, runs = convert(fever_runs)
    assert name == "react-paper"
    assert len(expected) == len(runs) == 100
    assert result.problems == []
    budget = 0
    for run, said in zip(runs, expected, strict=True):
        assert run.info.name == f"question {said['question_idx']}"
        assert run.info.guards["max_steps"] == 7
        if said["steps"] == 8 and said["answer"] == "":
            budget += 1
            # The harness's unprinted 8th step: shown as stopped by the step budget.
            assert run.step_count == 7
            assert run.end.outcome == "budget exhausted" and run.end.guard == "max_steps"
            assert run.end.answer is None
            assert run.records[-1].tripped is not None
        else:
            assert run.step_count == said["steps"], run.info.name
            assert run.end.outcome == "answered", run.info.name
            assert run.end.answer == said["answer"], run.info.name
            assert run.records[-1].answer == said["answer"]
        assert run.end.steps == run.step_count
    assert budget == 1
    assert result.step_count == sum(min(d["steps"], 7) for d in expected)


def test_the_harness_verdicts_48_of_100_fever_runs_are_wrong(fever_runs, capsys):
    text = fever_runs.read_text(encoding="utf-8")
    expected = _result_dicts(text)
    _, _, runs = convert(fever_runs)
    wrong = [run.info.name for run in runs if run.end.verdict["correct"] is False]
    assert len(wrong) == sum(1 for d in expected if d["em"] == 0) == 48
    for run, said in zip(runs, expected, strict=True):
        assert run.end.verdict == {"correct": said["em"] == 1, "score": said["reward"],
                                   "expected": said["gt_answer"], "grader": "em"}
    # The 47 that answered wrong and the one that ran out of steps.
    assert sum(1 for run in runs if run.end.outcome == "answered" and run.end.verdict["correct"] is False) == 47

    from agentdbg.cli import main

    assert main(["check", str(fever_runs), "--fail-on", "wrong"]) == 1
    report = capsys.readouterr().out
    assert "question 5388" in report and "answer 'SUPPORTS', expected 'REFUTES', grader: em" in report
    assert "question 3687" not in report  # judged correct
    assert "FAIL: wrong (48 occurrences in 100 runs" in report
    assert main(["stats", str(fever_runs)]) == 0
    assert "52 correct, 48 wrong" in capsys.readouterr().out


def test_the_runs_flagged_as_repeating_are_exactly_the_looping_ones(fever_runs):
    text = fever_runs.read_text(encoding="utf-8")
    looping = {i for i, actions in enumerate(_episode_actions(text)) if len(actions) != len(set(actions))}
    _, _, runs = convert(fever_runs)
    flagged = {i for i, run in enumerate(runs) if any(r.is_repeat for r in run.records)}
    assert flagged == looping
    by_name = {runs[i].info.name: runs[i] for i in flagged}
    # The run that loops on "Invalid action" is among them, its repeats counted.
    invalid = [name for name, run in by_name.items()
               if any((r.observation or "").startswith("Invalid action") for r in run.records)]
    assert invalid == ["question 3522"]
    stuck = by_name["question 3522"]
    assert [r.guards.repeats[0] for r in stuck.records] == [1, 1, 1, 2, 3, 4, 5]
    assert sum(r.parse_error is not None for r in stuck.records) == 5
    assert sorted(by_name) == ["question 1781", "question 3522"]  # 1781 repeats a Lookup


def test_check_fail_on_repeat_flags_the_looping_runs(fever_runs, capsys):
    from agentdbg.cli import main

    code = main(["check", str(fever_runs), "--fail-on", "repeat"])
    out = capsys.readouterr()
    assert code == 1
    report = out.out + out.err
    assert "3522" in report and "1781" in report
    assert "3687" not in report  # a run that answered in two clean steps


def _few_shot_expectations(prompt: str) -> list[tuple[int, str]]:
    """(steps, answer) of each example, read with plain regular expressions."""
    found = []
    for example in re.split(r"\n(?=(?:Question|Claim):)", prompt):
        if not re.search(r"^(?:Question|Claim):", example, re.M):
            continue
        actions = re.findall(r"^Action \d+: ?(.*)$", example, re.M)
        if actions:
            finish = re.match(r"Finish\[(.*)\]$", actions[-1])
            found.append((len(actions), finish.group(1) if finish else ""))
        else:
            answer = re.search(r"^Answer: ?(.*)$", example, re.M)
            found.append((1, answer.group(1).strip()))
    return found


@pytest.mark.parametrize("filename, runs_expected", [("fever.json", 12), ("prompts_naive.json", 51)])
def test_few_shot_prompt_files(shared_fixtures, filename, runs_expected):
    path = shared_fixtures / "react-paper" / filename
    if not path.exists():
        pytest.skip(f"{path} not found")
    prompts = json.loads(path.read_text(encoding="utf-8"))
    expected = [pair for prompt in prompts.values() for pair in _few_shot_expectations(prompt)]
    name, result, runs = convert(path)
    assert name == "react-paper"
    assert len(runs) == len(expected) == runs_expected
    assert [(r.step_count, r.end.answer) for r in runs] == expected
    assert all(r.end.outcome == "answered" for r in runs)
    assert result.problems == []
    assert all(not any(isinstance(e, ev.ParseFailed) for e in events) for events in result.runs)
