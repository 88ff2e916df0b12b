"""The ReAct paper harness's grade becomes the run's verdict: ``em`` says correct or wrong,
``reward`` is the score, ``gt_answer`` the expected answer."""

from __future__ import annotations

import pytest
from test_import_support import convert, fixture

from agentdbg.importers import react_paper


def test_each_run_log_episode_carries_the_harness_verdict():
    _, _, runs = convert(fixture("react-paper", "runs.log"))
    assert [r.end.verdict for r in runs] == [
        {"correct": True, "score": 1, "expected": "SUPPORTS", "grader": "em"},
        # Never finished: the harness scored it 0, so it is wrong as well as out of budget.
        {"correct": False, "score": 0, "expected": "REFUTES", "grader": "em"},
        {"correct": True, "score": 1, "expected": "SUPPORTS", "grader": "em"},
    ]
    assert runs[1].end.outcome == "budget exhausted"


def test_exact_match_decides_and_the_reward_is_the_score():
    # em 0 but reward 1 (a lenient reward): wrong by exact match, the score says 1.
    _, _, runs = convert(fixture("react-paper", "edge_empty_episode.txt"))
    assert runs[1].end.verdict == {"correct": False, "score": 1, "expected": "Tyrrhenian Sea", "grader": "em"}
    assert runs[0].end.verdict["correct"] is False and runs[0].end.outcome == "empty"


def test_prompt_examples_have_no_verdict():
    _, _, runs = convert(fixture("react-paper", "prompts.json"))
    assert all(r.end.verdict is None for r in runs)


@pytest.mark.parametrize("result, verdict", [
    ({"em": True, "reward": True, "gt_answer": "Po"}, {"correct": True, "score": 1, "expected": "Po", "grader": "em"}),
    ({"em": False, "f1": 0.4, "gt_answer": "Po"}, {"correct": False, "score": 0, "expected": "Po", "grader": "em"}),
    ({"reward": 0.5, "gt_answer": 42}, {"correct": None, "score": 0.5, "expected": "42", "grader": "reward"}),
    ({"reward": 1.0}, {"correct": True, "score": 1.0, "expected": None, "grader": "reward"}),
    ({"em": "yes", "reward": None, "gt_answer": "x"}, None),  # no grade it can read
    ({"em": float("nan"), "reward": float("inf")}, None),
    ({"steps": 2, "answer": "x"}, None),
])
def test_the_grade_as_the_harness_wrote_it(result, verdict):
    assert react_paper._verdict(result) == verdict


def test_a_verdict_in_an_episode_written_by_hand_is_read_from_its_result_line():
    text = ("1 Claim: c\nThought 1: t\nAction 1: Finish[SUPPORTS]\nObservation 1: done\n"
            "{'steps': 1, 'answer': 'SUPPORTS', 'gt_answer': 'REFUTES', 'em': 0, 'reward': 0}\n")
    result = react_paper.convert(text, "inline.txt")
    assert result.runs[0][-1].verdict == {"correct": False, "score": 0, "expected": "REFUTES", "grader": "em"}
