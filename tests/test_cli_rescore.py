"""`agentdbg rescore FILE...`: the per-run table (changed runs, or --all), the trade-off,
--json, --sweep, several files, bad arguments (exit 2), hostile text, the FEVER runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import SAMPLE_PLANS
from hostile_inputs import BIDI_OVERRIDE, EXACT, FORMATS, HOSTILE, write_input
from test_hostile_output import assert_safe_for_a_terminal
from test_hostile_output import run as run_on_a_stream

from agentdbg.cli import main
from agentdbg.importers.builder import RunBuilder
from agentdbg.trace.writer import write_trace

CORRECT = {"correct": True, "score": 1, "expected": "2", "grader": "em"}
WRONG = {"correct": False, "score": 0, "expected": "2", "grader": "em"}
RUN_KEYS = {"file", "run", "name", "steps", "tokens", "outcome", "answer", "verdict", "judged", "effect", "stop",
            "steps_saved", "tokens_saved"}
TOTAL_KEYS = {"runs", "stopped", "good_stops", "false_stops", "ungraded_stops", "same_stops", "runs_on",
              "let_through", "correct", "wrong", "failed", "ungraded", "stopped_by", "steps", "steps_saved", "tokens",
              "tokens_saved", "runs_with_tokens"}


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exit:  # argparse refused the arguments
        code = exit.code
    out, err = capsys.readouterr()
    return code, out, err


def flat(text: str) -> str:
    return " ".join(text.split())


def run_events(name: str, calls: list[str], answer: str | None, verdict: dict | None, tokens: int = 10) -> list:
    builder = RunBuilder(f"task {name}", name=name)
    for call in calls:
        builder.step(thought="t", tool="search", args=call, call=f"search[{call}]", observation="o", tokens=tokens)
    if answer is not None:
        builder.step(thought="done", answer=answer, tokens=tokens)
    return builder.build(verdict=verdict, outcome=None if answer is not None else "unfinished")


@pytest.fixture
def graded(tmp_path) -> Path:
    """Four runs: a wrong one that loops, a correct one that repeats once, a correct one
    that never repeats, and an unanswered loop with no verdict."""
    path = tmp_path / "graded.jsonl"
    write_trace(path, [
        run_events("loops", ["a", "b", "a", "b", "a"], "3", WRONG),
        run_events("checks twice", ["a", "a"], "2", CORRECT),
        run_events("straight", ["a", "b"], "2", CORRECT),
        run_events("gives up", ["x", "x", "x"], None, None),
    ])
    return path


# -- the table and the trade-off ------------------------------------------------------------

def test_the_table_lists_the_runs_the_guards_change_and_the_trade_off(capsys, graded):
    code, out, err = run_cli(capsys, "rescore", graded, "--repeat", "2")
    assert code == 0, err
    assert out.startswith("rescore: repeat brake any ×2 (over the recorded steps: nothing is run again)")
    rows = [flat(line) for line in out.splitlines() if line[:5].strip().isdigit()]
    assert rows == [  # run 3 never repeats: not listed
        "1 good stop step 3 of 6 repetition 3 steps, 30 tok answered, wrong loops",
        "2 FALSE STOP step 2 of 3 repetition 1 step, 10 tok answered, correct checks twice",
        "4 good stop step 2 of 3 repetition 1 step, 10 tok unfinished gives up",
    ]
    assert "action repeated again: search[a]" in out
    table = out[out.index("trade-off over 4 runs"):]
    assert flat(table).startswith("trade-off over 4 runs (1 wrong, 1 failed, 2 correct; 15 steps) guards stopped "
                                  "wrong/failed stopped correct cut ungraded stopped steps saved tokens saved "
                                  "repeat brake any ×2 3 2 of 2 (100%) 1 of 2 (50%) 0 5 (33.3%) 50 (33.3%)")


def test_all_lists_every_run_with_what_the_guards_do_to_it(capsys, graded):
    code, out, _ = run_cli(capsys, "rescore", graded, "--max-steps", "5", "--all")
    assert code == 0
    rows = [flat(line) for line in out.splitlines() if line[:5].strip().isdigit()]
    assert [row.split(" step")[0].split(" —")[0] for row in rows] == [
        "1 good stop", "2 let through", "3 let through", "4 let through"]


def test_a_run_stopped_by_its_own_guard_runs_on_or_stops_where_it_did(capsys):
    plan = SAMPLE_PLANS / "library_stuck.toml"  # the strict brake stops it at step 2
    code, out, _ = run_cli(capsys, "rescore", plan, "--max-steps", "9", "--all")
    assert code == 0
    assert "runs on" in out and "these guards would let it go on" in flat(out)
    assert "1 run stopped by its own guards would run on past its recording (unknown)" in flat(out)
    code, out, _ = run_cli(capsys, "rescore", plan, "--repeat", "2")
    assert "no run is changed by these guards" in out
    assert "1 run stopped where it ended anyway" in out


def test_a_plan_is_run_headless_and_rescored(capsys):
    code, out, _ = run_cli(capsys, "rescore", SAMPLE_PLANS / "library_runaway.toml", "--repeat", "2")
    assert code == 0
    assert "good stop" in out and "step 2 of 6" in out and "4 steps" in out
    assert "action repeated again: catalog[Il Gattopardo]" in out


# -- JSON -----------------------------------------------------------------------------------

def test_json_has_stable_keys_and_only_the_changed_runs(capsys, graded):
    code, out, _ = run_cli(capsys, "rescore", graded, "--repeat", "2", "--consecutive", "--json")
    assert code == 0
    data = json.loads(out)
    assert set(data) == {"guards", "runs", "totals", "files"}
    assert data["guards"] == {"max_steps": None, "repeat": {"mode": "consecutive", "threshold": 2},
                              "max_consecutive_errors": None, "token_budget": None}
    assert [r["run"] for r in data["runs"]] == [2, 4]  # run 1 never repeats in a row
    assert all(set(r) == RUN_KEYS for r in data["runs"])
    second = data["runs"][0]
    assert (second["effect"], second["judged"], second["steps_saved"], second["tokens_saved"]) == (
        "false_stop", "correct", 1, 10)
    assert second["stop"] == {"step": 2, "guard": "repetition", "outcome": "action repeated",
                              "message": "action repeated 2 times in a row: search[a]", "before_action": True}
    assert set(data["totals"]) == TOTAL_KEYS
    assert data["files"] == [{"path": str(graded), "kind": "trace", "runs": 4, "problems": [], "error": None}]
    code, out, _ = run_cli(capsys, "rescore", graded, "--repeat", "2", "--consecutive", "--json", "--all")
    assert [r["effect"] for r in json.loads(out)["runs"]] == ["let_through", "false_stop", "let_through", "good_stop"]


def test_a_sweep_scores_every_value_in_one_read(capsys, graded):
    code, out, _ = run_cli(capsys, "rescore", graded, "--sweep", "repeat=2..4", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["sweep"] == {"name": "repeat", "values": [2, 3, 4]}
    assert [(row["value"], row["guards"]["repeat"]["threshold"], row["totals"]["stopped"],
             row["totals"]["false_stops"]) for row in data["rows"]] == [(2, 2, 3, 1), (3, 3, 1, 0), (4, 4, 0, 0)]
    first = data["runs"][0]
    assert [(r["value"], r["effect"], r["stop"] and r["stop"]["step"]) for r in first["results"]] == [
        (2, "good_stop", 3), (3, "good_stop", 5), (4, "let_through", None)]
    code, out, _ = run_cli(capsys, "rescore", graded, "--sweep", "max-steps=1,3", "--repeat", "3")
    assert code == 0
    assert out.startswith("rescore: max-steps = 1, 3, with repeat brake any ×3")
    assert "    1  answered, wrong  loops · 6 steps: good stop under max-steps=1 (step 1), 3 (step 3)" in out
    table = out[out.index("trade-off"):].splitlines()
    assert [flat(line).split()[:2] for line in table[2:4]] == [["1", "4"], ["3", "1"]]


# -- several files, and what cannot be used ----------------------------------------------------

def test_several_files_are_rescored_together_and_a_bad_one_is_reported(capsys, graded, tmp_path):
    other = tmp_path / "other.jsonl"
    write_trace(other, [run_events("again", ["q", "q"], "5", WRONG)])
    code, out, err = run_cli(capsys, "rescore", graded, tmp_path / "missing.jsonl", other, "--repeat", "2")
    assert code == 2
    assert "missing.jsonl" in err and "agentdbg rescore: error:" in err
    assert f"\n{graded}\n" in out and f"\n{other}\n" in out
    assert "trade-off over 5 runs in 2 files" in out  # the missing one read no run
    code, out, _ = run_cli(capsys, "rescore", graded, other, "--repeat", "2", "--json")
    data = json.loads(out)
    assert code == 0 and data["totals"]["runs"] == 5
    assert [(r["file"], r["run"]) for r in data["runs"]] == [(str(graded), 1), (str(graded), 2), (str(graded), 4),
                                                            (str(other), 1)]


@pytest.mark.parametrize(("argv", "said"), [
    (["--repeat", "1"], "--repeat 1: repeat threshold must be at least 2, got 1"),
    (["--max-steps", "0"], "--max-steps 0: max_steps must be at least 1, got 0"),
    (["--max-errors", "-1"], "--max-errors -1: error budget must be at least 1"),
    (["--token-budget", "0"], "--token-budget 0: token budget must be at least 1"),
    (["--repeat", "x"], "invalid int value: 'x'"),
    ([], "no guard to re-score with"),
    (["--sweep", "speed=1..3"], "--sweep speed=1..3: give NAME=VALUES"),
    (["--sweep", "repeat"], "--sweep repeat: give NAME=VALUES"),
    (["--sweep", "repeat=5..2"], "the range 5..2 runs backwards"),
    (["--sweep", "repeat=2..x"], "'2..x' is not a whole number or a range A..B"),
    (["--sweep", "repeat=1..3"], "--sweep repeat=1: repeat threshold must be at least 2"),
    (["--sweep", "max-steps=1..1000"], "more than 50 values"),
    (["--sweep", "repeat=2..5", "--repeat", "3"], "--sweep repeat and --repeat both given"),
    (["--repeat", "2", "--max-runs", "-1"], "--max-runs -1"),
    (["--repeat", "2", "--run", "0"], "--run 0: runs are numbered from 1"),
    (["--repeat", "2", "--run", "9"], "--run 9:"),
])
def test_bad_arguments_exit_2_saying_which(capsys, graded, argv, said):
    code, out, err = run_cli(capsys, "rescore", graded, *argv)
    assert code == 2
    assert said in err
    assert "Traceback" not in err


def test_a_file_with_no_run_or_no_file_exits_2(capsys, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("", encoding="utf-8")
    for path in (empty, tmp_path / "nowhere.jsonl", tmp_path):
        code, _, err = run_cli(capsys, "rescore", path, "--repeat", "2")
        assert code == 2 and "agentdbg rescore: error:" in err
    code, _, _ = run_cli(capsys, "rescore", "--repeat", "2")
    assert code == 2  # no FILE at all


# -- hostile text ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("hostile")
    return {kind: write_input(kind, folder) for kind in FORMATS}


@pytest.mark.parametrize("tty", [False, True], ids=["piped", "terminal"])
@pytest.mark.parametrize("kind", FORMATS)
def test_hostile_text_is_shown_harmlessly(kind, tty, hostile, monkeypatch):
    for argv in (["--max-steps", "1", "--all"], ["--sweep", "max-steps=1..2", "--all"]):
        code, out, err = run_on_a_stream(["rescore", hostile[kind], *argv], monkeypatch, tty)
        where = f"rescore {' '.join(argv)} on {kind}"
        assert code == 0, f"{where}: exit {code}: {err.decode('utf-8', 'replace')}"
        shown = assert_safe_for_a_terminal(out, tty, where)
        assert_safe_for_a_terminal(err, tty, where + " (stderr)")
        assert "trade-off" in shown


def test_a_hostile_action_is_shown_literally_and_json_gives_it_back_exactly(capsys, tmp_path, monkeypatch):
    path = tmp_path / "hostile-action.jsonl"
    write_trace(path, [run_events(HOSTILE, [HOSTILE, HOSTILE], "2", WRONG)])
    code, out, _ = run_on_a_stream(["rescore", path, "--repeat", "2"], monkeypatch, tty=True)
    shown = assert_safe_for_a_terminal(out, True, "rescore")
    assert code == 0 and "<U+202E>" in shown and "[red]m[/red]" in shown
    code, out, _ = run_on_a_stream(["rescore", path, "--repeat", "2", "--json"], monkeypatch, tty=False)
    text = out.decode("utf-8")
    assert "\x1b" not in text and BIDI_OVERRIDE not in text
    run = json.loads(text)["runs"][0]
    assert run["name"] == HOSTILE
    assert run["stop"]["message"] == "action repeated again: " + " ".join(f"search[{HOSTILE}]".split())
    assert "trace" in EXACT


# -- the ReAct paper's FEVER runs ------------------------------------------------------------------

def test_the_fever_runs_repeat_sweep(capsys, shared_fixtures):
    fever = shared_fixtures / "react-paper" / "fever_runs_first100.txt"
    code, out, _ = run_cli(capsys, "rescore", fever, "--sweep", "repeat=2..5", "--json")
    assert code == 0
    rows = {row["value"]: row["totals"] for row in json.loads(out)["rows"]}
    assert {k: (t["stopped"], t["good_stops"], t["false_stops"], t["steps_saved"]) for k, t in rows.items()} == {
        2: (2, 2, 0, 5), 3: (2, 2, 0, 3), 4: (1, 1, 0, 1), 5: (0, 0, 0, 0)}
    assert rows[2]["wrong"] == 48 and rows[2]["correct"] == 52 and rows[2]["steps"] == 245
    code, out, _ = run_cli(capsys, "rescore", fever, "--sweep", "repeat=2..5")
    assert "    4  budget exhausted, wrong  question 3522 · 7 steps: good stop under repeat=2 (step 4)" in out
