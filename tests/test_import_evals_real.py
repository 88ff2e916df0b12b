"""Real public files of the evaluation harnesses (tests/fixtures/import/real/, see each
SOURCE.md): detected, converted with the figures checked by hand against each file, and
opened in the debugger."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_import_support import IMPORT_FIXTURES, convert, counters, tools_called
from test_tui_support import SIZE, press, settle

from agentdbg import importers
from agentdbg.documents import open_document
from agentdbg.tui.app import DebuggerApp

REAL = IMPORT_FIXTURES / "real"


def real(fmt: str, name: str) -> Path:
    return REAL / fmt / name


def _errors(run) -> list[int]:
    return [r.step for r in run.records if r.is_error]


# --- OpenHands ----------------------------------------------------------------------------

def test_openhands_ui_trajectories():
    _, _, [basic] = convert(real("openhands", "basic.json"))
    assert basic.info.task.startswith("Please create a simple 2048 game.")
    assert tools_called(basic) == ["str_replace_editor", None]
    assert basic.records[0].args["command"] == "create" and basic.records[0].args["path"] == "/workspace/game_2048.py"
    # model_response.usage.total_tokens of the two responses: 4621 + 4823.
    assert counters(basic, "tokens") == [4621, 9444]
    assert basic.end.outcome == "answered" and basic.end.answer.startswith("I've created a simple implementation")
    _, result, [chat] = convert(real("openhands", "basic_interactions.json"))
    assert chat.info.task == "what's 1+1?"
    assert [r.tool for r in chat.records] == [None, None, None]
    assert chat.records[0].thought == "1 + 1 equals 2."
    assert chat.end.answer == "All done! What's next on the agenda?"
    assert result.raw_count == 2  # the user's two later messages
    _, _, [rename] = convert(real("openhands", "wrong_initial_state.json"))
    assert tools_called(rename) == ["str_replace_editor", "execute_bash", "str_replace_editor", None]
    # As the model wrote them (its is_input is a string there).
    assert rename.records[1].args == {"command": "mv /workspace/game_2048.py /workspace/2048.py", "is_input": "false"}
    assert rename.records[1].observation == ""


def test_openhands_evaluation_output():
    name, result, [run] = convert(real("openhands", "multi_swe_bench_output.ponyc-4593.first29events.jsonl"))
    assert name == "openhands"
    assert run.info.name == "ponylang__ponyc-4593"
    assert run.info.policy == "recorded: OpenHands CodeActAgent (openai/openrouter-llama-4-maverick)"
    assert [t["name"] for t in run.info.tools] == ["execute_bash", "think", "finish", "str_replace_editor"]
    assert run.info.task.startswith("<uploaded_files>\n/workspace/ponylang__ponyc__0.1\n</uploaded_files>")
    # 11 commands, a file read, then an error observation with no action: 13 steps.
    assert tools_called(run) == ["execute_bash"] * 11 + ["str_replace_editor", None]
    assert run.records[0].args == {"command": "ls /workspace/ponylang__ponyc__0.1"}
    assert run.records[0].guards.steps == [1, 50]
    # Exit codes 2 and 1 (events 8 and 20), and the refused call (event 29).
    assert _errors(run) == [2, 8, 13]
    # The 12 model responses' total_tokens, each counted once (5637 + ... + 7199).
    assert counters(run, "tokens")[-1] == 76982
    assert run.end.outcome == "unfinished"  # the file is cut before the run's finish
    assert result.problems == []


# --- Inspect AI -------------------------------------------------------------------------------

def test_inspect_json_log_cancelled_with_match_scores():
    name, _, runs = convert(real("inspect-ai", "2025-05-12T20-28-13-04-00_popularity.json"))
    assert name == "inspect-ai"
    assert [r.end.answer for r in runs] == ["Yes", "No", "No"]
    assert [r.end.verdict for r in runs] == [
        {"correct": True, "score": 1.0, "expected": " Yes", "grader": "match"},
        {"correct": True, "score": 1.0, "expected": " No", "grader": "match"},
        {"correct": False, "score": 0.0, "expected": " Yes", "grader": "match"}]
    assert [counters(r, "tokens") for r in runs] == [[66], [60], [72]]
    assert {r.end.message for r in runs} == {"log status: cancelled"}


def test_inspect_eval_newest_layout():
    _, result, [run] = convert(real("inspect-ai", "log_message_deduplication.eval"))
    assert run.info.name == "guess_number #0 epoch 1" and run.info.task == "Guess the number"
    assert tools_called(run) == ["bash"] * 5 + [None]
    assert [r.args for r in run.records[:5]] == [{"cmd": "ls"}] * 5
    assert [r.events[2].id for r in run.records[:5]] == [f"hardcoded_{n}" for n in range(5)]
    assert counters(run, "repeats") == [1, 2, 3, 4, 5, 0]
    assert run.end.answer == "done"
    assert run.end.verdict == {"correct": False, "score": 0.0, "expected": "42.7", "grader": "closeness_log"}
    assert result.problems == []


def test_inspect_eval_ten_samples_not_yet_scored():
    _, _, runs = convert(real("inspect-ai", "2025-02-11T15-17-00-05-00_popularity_dPiJifoWeEQBrfWsAopzWr.eval"))
    assert [r.info.name for r in runs] == [f"popularity #{n} epoch 1" for n in range(1, 11)]
    assert all(r.end.verdict is None for r in runs)
    # Per sample usage, summed: the header's 640 tokens.
    assert sum(counters(r, "tokens")[-1] for r in runs) == 640


# --- tau-bench --------------------------------------------------------------------------------

def test_tau_bench_results():
    name, result, runs = convert(real("tau-bench", "gpt-4o-airline.records-1-2-7.json"))
    assert name == "tau-bench"
    assert [r.info.name for r in runs] == ["task 0 trial 0", "task 1 trial 0", "task 6 trial 0"]
    assert [r.end.verdict["correct"] for r in runs] == [False, False, True]
    first = runs[0]
    assert first.info.task == "Hi! I'm looking to book a flight from New York to Seattle on May 20th."
    assert [r.tool for r in first.records if r.tool] == [
        "get_user_details", "search_direct_flight", "search_onestop_flight", "calculate",
        "book_reservation", "think", "calculate", "book_reservation"]
    assert first.step_count == 15
    # The one tool reply starting "Error": the first booking (step 10).
    assert _errors(first) == [10]
    assert first.records[9].observation.startswith("Error: payment amount does not add up")
    assert first.end.message == "the user ended the conversation with ###STOP###"
    assert [r.step_count for r in runs] == [15, 5, 11]
    # Ids reused across calls in one conversation: said once per id, replies still paired.
    assert all(r.observation is not None for run in runs for r in run.records if r.tool)


# --- mini-swe-agent ---------------------------------------------------------------------------

def test_mini_swe_agent_swebench_trajectory():
    name, result, [run] = convert(real("mini-swe-agent", "django__django-16255.traj.json"))
    assert name == "mini-swe-agent"
    assert run.info.name == "django__django-16255"
    assert run.info.policy == "recorded: mini-swe-agent 1.15.0 (google/gemini-3-pro-preview)"
    assert run.info.task.startswith("Sitemaps without items raise ValueError on callable lastmod.")
    assert run.step_count == 17 and set(tools_called(run)) == {"bash"}  # info.model_stats.api_calls
    assert run.records[0].args == {"command": "ls -R django/contrib/sitemaps"}
    # The provider's reasoning (extra.response), then the reply's text before its block.
    assert run.records[0].thought.startswith("**Diagnosing the Sitemap Issue**")
    assert "\nTHOUGHT: I need to locate the file mentioned in the traceback" in run.records[0].thought
    assert run.records[-1].args["command"] == ("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A "
                                               "&& git diff --cached")
    assert _errors(run) == []
    assert counters(run, "tokens")[-1] == 63385  # the 17 responses' usage.total_tokens
    assert run.end.outcome == "Submitted"
    assert run.end.answer.startswith("diff --git a/django/contrib/sitemaps/__init__.py")
    assert run.end.message == "model stats: cost 0.0893, 17 API calls"
    # SWE-bench's verdict lives in report.json beside the trajectory, not in it.
    assert run.end.verdict is None
    assert result.problems == []


# --- every real file: detected by content alone, opens in the debugger --------------------------

REAL_FILES = sorted(p for p in REAL.glob("*/*") if p.is_file() and p.parent.name in
                    {"inspect-ai", "openhands", "tau-bench", "mini-swe-agent"}
                    and p.name not in ("SOURCE.md", "LICENSE", "LICENSE.md") and not p.name.endswith(".report.json"))


@pytest.mark.parametrize("path", REAL_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_real_file_is_detected_by_its_format_only(path):
    assert importers.detect(path) == path.parent.name
    accepted = [name for name, ok, _ in importers.sniff_all(path.read_bytes()[: importers.HEAD_BYTES]) if ok]
    assert accepted == [path.parent.name]


@pytest.mark.parametrize("path", REAL_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
async def test_real_file_opens_in_the_debugger(path):
    _, _, runs = convert(path)
    app = DebuggerApp(open_document(path), save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "end")
        header = app.query_one("#header").text
        count = runs[0].step_count
        assert app.session.cursor == count and f"step {count}/{count}" in header
        assert f"outcome: {runs[0].end.outcome}" in header


def test_the_swebench_report_beside_a_trajectory_is_not_a_run():
    with pytest.raises(importers.NotImportable):
        importers.detect(real("mini-swe-agent", "django__django-16255.report.json"))


# --- hostile text of every evaluation format, through the headless commands --------------------

HOSTILE = [IMPORT_FIXTURES / fmt / name for fmt, name in (
    ("inspect-ai", "hostile_unicode.json"), ("openhands", "hostile_unicode.json"),
    ("tau-bench", "hostile_unicode.json"), ("mini-swe-agent", "hostile_unicode.traj.json"))]


@pytest.mark.parametrize("path", HOSTILE, ids=lambda p: p.parent.name)
@pytest.mark.parametrize("command", [["show"], ["stats"], ["show", "--json"], ["check", "--fail-on", "error"]])
def test_hostile_text_never_reaches_the_terminal(path, command, capsys):
    from agentdbg.cli import main

    main([*command, str(path)])
    out, err = capsys.readouterr()
    for stream in (out, err):
        assert "\x1b" not in stream and "\x07" not in stream
    if command == ["show"]:
        assert "[/][bold]Fini[/bold]" in out  # markup is shown as the text it is
