"""Whether a run got it right, in the headless commands: `show`, `stats` (text and JSON,
totals), `check --fail-on wrong`; and one raw-record count shared by `stats` and `convert`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from test_import_support import all_fixtures, fixture

from agentdbg import importers
from agentdbg.cli import main
from agentdbg.engine import events as ev
from agentdbg.importers.builder import RunBuilder
from agentdbg.trace.writer import write_trace

RUNS_LOG = fixture("react-paper", "runs.log")  # questions 12 (correct), 40 (out of steps), 77 (correct)


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def flat(text: str) -> str:
    """Output with its wrapping undone (lines are wrapped at the terminal's width)."""
    return " ".join(text.split())


def graded_trace(path: Path, *verdicts: dict | None) -> Path:
    """One answered run per verdict (None: no verdict)."""
    runs = []
    for number, verdict in enumerate(verdicts, 1):
        builder = RunBuilder(f"task {number}", name=f"run {number}")
        builder.step(thought="t", answer=f"answer {number}")
        runs.append(builder.build(verdict=verdict))
    write_trace(path, runs)
    return path


# -- show ---------------------------------------------------------------------------------

def test_show_ends_with_the_outcome_and_the_expected_answer(capsys):
    code, out, _ = run_cli(capsys, "show", RUNS_LOG, "--run", "2")
    assert code == 0
    last = flat(out[out.rindex("outcome  "):])
    assert last.startswith("outcome budget exhausted, wrong after 7 steps: step budget exhausted")
    assert last.endswith("expected: REFUTES; grader: em")
    code, out, _ = run_cli(capsys, "show", RUNS_LOG, "--run", "1")
    assert out.splitlines()[-2:] == ["outcome  answered, correct after 3 steps: SUPPORTS", "         grader: em"]


def test_show_json_and_one_step_carry_the_verdict(capsys):
    code, out, _ = run_cli(capsys, "show", RUNS_LOG, "--json")
    runs = [json.loads(line) for line in out.splitlines()]
    assert [r["verdict"]["correct"] for r in runs] == [True, False, True]
    assert runs[1]["verdict"] == {"correct": False, "score": 0, "expected": "REFUTES", "grader": "em"}
    code, out, _ = run_cli(capsys, "show", RUNS_LOG, "--run", "2", "--step", "7", "--json")
    assert json.loads(out)["state"]["verdict"]["expected"] == "REFUTES"
    code, out, _ = run_cli(capsys, "show", RUNS_LOG, "--run", "2", "--step", "6", "--json")
    assert "verdict" not in json.loads(out)["state"]  # the run has not ended at step 6
    code, out, _ = run_cli(capsys, "show", RUNS_LOG, "--run", "2", "--step", "7")
    assert "outcome          budget exhausted, wrong (expected: REFUTES; grader: em)" in out


def test_show_says_nothing_of_a_verdict_a_run_does_not_have(capsys, sample_plans):
    code, out, _ = run_cli(capsys, "show", sample_plans / "library_stuck.toml")
    assert flat(out[out.rindex("outcome  "):]).startswith("outcome action repeated after 2 steps")
    assert "correct" not in out and "wrong" not in out and "expected" not in out


# -- stats ---------------------------------------------------------------------------------

def test_stats_gives_each_run_its_verdict_and_counts_them(capsys):
    code, out, _ = run_cli(capsys, "stats", RUNS_LOG, "--json")
    result = json.loads(out)
    assert [r["verdict"]["correct"] for r in result["runs"]] == [True, False, True]
    assert [r["outcome"] for r in result["runs"]] == ["answered", "budget exhausted", "answered"]
    totals = result["totals"]
    assert (totals["runs"], totals["graded"], totals["correct"], totals["wrong"]) == (3, 3, 2, 1)
    assert totals["outcomes"] == {"answered": 2, "budget exhausted": 1} and totals["steps"] == 14
    code, out, _ = run_cli(capsys, "stats", RUNS_LOG)
    assert "outcome      budget exhausted, wrong (expected: REFUTES)" in out
    assert "outcome      answered, correct\n" in out
    assert "total  3 runs (2 answered, 1 budget exhausted); 2 correct, 1 wrong; 14 steps" in out


def test_stats_counts_scores_and_ungraded_runs_apart(tmp_path, capsys):
    path = graded_trace(tmp_path / "mixed.jsonl",
                        {"correct": None, "score": 0.5, "expected": "x", "grader": "model_graded_qa"},
                        {"correct": False, "score": 0.0, "expected": "y", "grader": "reward"}, None)
    code, out, _ = run_cli(capsys, "stats", path)
    assert "outcome      answered, score 0.5 (expected: x)" in out
    assert "total  3 runs (3 answered); 0 correct, 1 wrong, 1 scored, 1 ungraded; 3 steps" in out
    totals = json.loads(run_cli(capsys, "stats", path, "--json")[1])["totals"]
    assert (totals["graded"], totals["correct"], totals["wrong"]) == (2, 0, 1)


# -- check --fail-on wrong -------------------------------------------------------------------

def test_check_fails_on_a_wrong_run_naming_it_and_its_expected_answer(capsys):
    code, out, _ = run_cli(capsys, "check", RUNS_LOG, "--fail-on", "wrong")
    assert code == 1
    assert "run 2 · question 40  (7 steps, budget exhausted, wrong)" in out
    assert "no answer (budget exhausted), expected 'REFUTES', grader: em" in flat(out)
    assert "question 12" not in out and "question 77" not in out
    assert out.splitlines()[-1] == "FAIL: wrong (1 occurrence in 3 runs, 14 steps)"
    code, out, _ = run_cli(capsys, "check", RUNS_LOG, "--fail-on", "wrong", "--json")
    result = json.loads(out)
    assert result["failed"] == ["wrong"]
    assert result["runs"][1]["failures"] == [{"condition": "wrong", "step": None,
                                              "message": "no answer (budget exhausted), expected 'REFUTES', grader: em"}]
    assert result["runs"][0]["verdict"]["correct"] is True


def test_a_run_without_a_verdict_never_fails_wrong(tmp_path, capsys, sample_plans):
    code, out, _ = run_cli(capsys, "check", sample_plans / "library_stuck.toml", "--fail-on", "wrong")
    assert code == 0
    assert out.strip() == "ok: no wrong in 1 run, 2 steps (1 run without a verdict)"
    partial = graded_trace(tmp_path / "partial.jsonl", {"correct": None, "score": 0.2, "expected": "x", "grader": "f1"})
    code, out, _ = run_cli(capsys, "check", partial, "--fail-on", "wrong")
    assert code == 0 and out.strip() == "ok: no wrong in 1 run, 1 step"  # a score is not a judgement


def test_a_plans_expected_answer_gates_ci(capsys, sample_plans):
    assert run_cli(capsys, "check", sample_plans / "library_good.toml", "--fail-on", "wrong")[0] == 0
    code, out, _ = run_cli(capsys, "check", sample_plans / "library_runaway.toml", "--fail-on", "wrong,budget")
    assert code == 1
    assert "no answer (budget exhausted), expected '2'" in flat(out) and "grader" not in out


def test_the_conditions_help_lists_wrong(capsys):
    with pytest.raises(SystemExit):
        main(["check", "--help"])
    assert "wrong: a grader judged the run wrong" in flat(capsys.readouterr().out)


# -- one raw-record count ---------------------------------------------------------------------

def _converted(path: Path, out: Path, capsys) -> int:
    code, printed, err = run_cli(capsys, "convert", path, "-o", out, "--force")
    assert code == 0, err
    return int(re.search(r"; ([\d,]+) records? kept as raw events", printed)[1].replace(",", ""))


CONVERTIBLE = [p for p in all_fixtures() if p.name != "edge_empty.txt"]


@pytest.mark.parametrize("path", CONVERTIBLE, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_stats_and_convert_count_the_same_raw_records(path, tmp_path, capsys):
    _, result = importers.convert_file(path)
    in_events = sum(isinstance(e, ev.RawRecord) for events in result.runs for e in events)
    kept = _converted(path, tmp_path / "out.jsonl", capsys)
    from_source = json.loads(run_cli(capsys, "stats", path, "--json")[1])
    from_trace = json.loads(run_cli(capsys, "stats", tmp_path / "out.jsonl", "--json")[1])
    assert kept == in_events == result.raw_count
    assert from_source["totals"]["raw_records"] == from_trace["totals"]["raw_records"] == kept
    assert [r["raw_records"] for r in from_source["runs"]] == [r["raw_records"] for r in from_trace["runs"]]


def test_a_run_with_no_step_counts_its_raw_records(tmp_path, capsys):
    """Raw records of a run without steps sit before its first step: counted all the same."""
    path = fixture("tau-bench", "edge_empty.json")
    kept = _converted(path, tmp_path / "out.jsonl", capsys)
    (run,) = json.loads(run_cli(capsys, "stats", tmp_path / "out.jsonl", "--json")[1])["runs"]
    assert run["steps"] == 0 and run["raw_records"] == kept == 2
    code, out, _ = run_cli(capsys, "stats", path)
    assert "raw records  2" in out
