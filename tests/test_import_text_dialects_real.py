"""Real public files of the ReAct and Reflexion papers' harnesses (tests/fixtures/import/real/,
see each SOURCE.md): detected, converted with the figures checked by hand against each file,
and opened in the debugger."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
from test_import_support import IMPORT_FIXTURES, convert
from test_tui_support import SIZE, pane_text, press, settle

from agentdbg.documents import open_document
from agentdbg.tui.app import DebuggerApp

REAL = IMPORT_FIXTURES / "real"


def real(fmt: str, name: str) -> Path:
    return REAL / fmt / name


def _retries(record) -> list[str]:
    return [r.data for r in record.raw if r.source == "react-paper retry"]


# --- ReAct paper: the harness's retries ('ohh...') -----------------------------------------

def test_fever_runs_with_retries_match_their_result_dicts():
    path = real("react-paper", "fever_runs_retries.txt")
    text = path.read_text(encoding="utf-8")
    assert text.count("\nohh...") == 3
    said = [ast.literal_eval(line.strip()) for line in text.splitlines() if line.startswith("{'steps'")]
    name, result, runs = convert(path)
    assert name == "react-paper"
    assert result.problems == []  # every episode's steps and answer agree with its result dict
    assert [r.info.name for r in runs] == ["question 2817", "question 3991", "question 5780", "question 6626"]
    assert [(r.step_count, r.end.answer) for r in runs] == [(d["steps"], d["answer"]) for d in said]
    assert [(r.step_count, r.end.answer) for r in runs] == [
        (7, "NOT ENOUGH INFO"), (2, "REFUTES"), (2, "SUPPORTS"), (2, "SUPPORTS")]
    assert result.raw_count == 4 * 2 + 3  # result dicts and tallies, the three retries
    # 2817: after six Lookups the model wrote 'Action 7:' and Finish on lines of their own.
    rio = runs[0]
    assert rio.records[5].observation == "No more results."
    assert _retries(rio.records[6]) == [" I give up.\n\nAction 7:\n\nFinish[NOT ENOUGH INFO]"]
    assert rio.records[6].thought == "I give up." and rio.records[6].answer == "NOT ENOUGH INFO"
    # 3991: 'Action 2' without its colon; the first observation ends where the page ends.
    meteora = runs[1]
    assert meteora.records[0].observation.endswith("etymologically related to meteor.[6].")
    [output] = _retries(meteora.records[1])
    assert output.startswith(" The first sentence says \"The Meteora") and output.endswith("Linkin Park.\nAction 2")
    assert meteora.records[1].thought == output.split("\n")[0].strip()
    assert _retries(runs[2].records[1]) == []
    [output] = _retries(runs[3].records[1])
    assert output.endswith("This supports the claim") and "\n" not in output
    assert all(not r.is_error for run in runs for r in run.records)


async def test_a_retry_shows_in_the_debugger_with_its_step():
    app = DebuggerApp(open_document(real("react-paper", "fever_runs_retries.txt")), save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "end")
        header = app.query_one("#header").text
        assert "step 7/7" in header and "outcome: answered" in header
        assert "react-paper retry" in pane_text(app, "scratchpad")


# --- Reflexion: a HotPotQA trial log ----------------------------------------------------

def test_reflexion_trial_log_one_run_per_agent_and_trial():
    path = real("reflexion", "hotpotqa_ReAct_reflexion_100q_5trials.slice.txt")
    name, result, runs = convert(path)
    assert name == "reflexion"
    sections = ["correct #1", "correct #2", "incorrect #1", "incorrect #2", "halted #1", "halted #2"]
    assert [r.info.name for r in runs] == [f"trial {t} {s}" for t in (1, 2) for s in sections]
    # Counted by hand: the 'Action N:' lines of each agent's block.
    assert [r.step_count for r in runs] == [3, 4, 3, 3, 6, 3, 3, 3, 3, 4, 6, 6]
    assert [r.end.outcome for r in runs] == (["answered"] * 4 + ["halted"] * 2) * 2
    assert [r.end.answer for r in runs] == [
        "Jonny Craig", "2004", "fortnightly lifestyle and women's magazines", "the end of World War II", None, None,
        "Creature Comforts", "To SquarePants or Not to SquarePants", "VIVA", "St. Louis", None, None]
    assert [r.end.verdict["correct"] for r in runs] == ([True] * 2 + [False] * 4) * 2
    assert [r.end.verdict["expected"] for r in runs][:6] == [
        'Jonny" Craig', "2004", "fortnightly women interest magazine", "a failed coup attempt",
        "Gesellschaft mit beschränkter Haftung", "Bath, Maine"]
    # The last observation is the harness's grade, never followed by the next section's header.
    assert runs[0].records[-1].observation == "Answer is CORRECT"
    assert runs[3].records[-1].observation == "Answer is INCORRECT"
    for run in runs:
        for record in run.records:
            assert not any(mark in (record.observation or "") for mark in ("BEGIN", "####", "Correct answer:"))
    assert result.problems == []
    assert result.raw_count == 2 + 6  # two trial summaries, one reflection list per retried agent


def test_reflexion_reflections_are_shown_not_glued_to_the_question():
    _, _, runs = convert(real("reflexion", "hotpotqa_ReAct_reflexion_100q_5trials.slice.txt"))
    retried = runs[6]
    assert retried.info.task == ("The creator of \"Wallace and Gromit\" also created what animation comedy that "
                                 "matched animated zoo animals with a soundtrack of people talking about their homes?")
    [note] = [r for r in retried.records[0].raw if r.source == "reflexion reflections"]
    assert note.data["header"].startswith("You have attempted to answer following question before and failed.")
    assert [text[:40] for text in note.data["reflections"]] == ["I got stuck in a loop where I kept tryin"]
    # The halted agent searching the same three pages at once, again and again.
    rome = runs[10]
    assert [r.guards.repeats[0] for r in rome.records] == [1, 1, 2, 3, 4, 5]


async def test_reflexion_run_opens_in_the_debugger_with_its_reflections():
    app = DebuggerApp(open_document(real("reflexion", "hotpotqa_ReAct_reflexion_100q_5trials.slice.txt")),
                      save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for _ in range(6):
            await press(pilot, "r", "down", "enter")
        header = app.query_one("#header").text
        assert "trial 2 correct #1" in header
        scratchpad = pane_text(app, "scratchpad")
        assert "reflexion reflections" in scratchpad and "I got stuck in a loop" in scratchpad
        await press(pilot, "r", "down", "down", "down", "down", "enter", "end")
        header = app.query_one("#header").text
        assert "trial 2 halted #1" in header and "outcome: halted" in header and "step 6/6" in header


# --- WebShop: the ReAct notebook's printout, its prompt, Reflexion's examples ----------------

def test_webshop_printout_one_run_per_episode_scored():
    path = real("webshop", "WebShop.ipynb.cell7-stdout.first10.txt")
    name, result, runs = convert(path)
    assert name == "webshop"
    assert [r.info.name for r in runs] == [f"episode {n}" for n in range(10)]
    # Counted by hand: the 'Action:' lines of each episode after its reset.
    assert [r.step_count for r in runs] == [6, 4, 6, 14, 6, 7, 7, 6, 7, 8]
    assert [r.end.outcome for r in runs] == ["finished"] * 3 + ["budget exhausted"] + ["finished"] * 6
    assert [r.end.verdict["score"] for r in runs] == [0.0, 1.0, 0.75, 0.0, 0.5, 0.4, 1.0, 1.0, 1.0, 0.6666666666666666]
    assert [r.end.verdict["correct"] for r in runs] == [False, True, False, False, False, False, True, True, True, False]
    assert runs[1].info.task == "i want a noise cancelling cosycost usb microphone, and price lower than 50.00 dollars"
    # Episode 0 bought on a page that shows no score; the notebook's tally says it scored 0.
    assert runs[0].records[-1].call == "click[Buy Now]" and runs[0].records[-1].observation == ""
    # Every verdict agrees with the notebook's running tally (episodes, average score, success rate).
    text = path.read_text(encoding="utf-8")
    tallies = [line.split() for line in text.splitlines() if re.fullmatch(r"\d+ \S+ \S+ \S+", line)]
    assert len(tallies) == 10
    for n, (count, average, success, _) in enumerate(tallies, 1):
        scores = [r.end.verdict["score"] for r in runs[:n]]
        assert int(count) == n and abs(sum(scores) / n - float(average)) < 1e-12
        assert sum(r.end.verdict["correct"] for r in runs[:n]) / n == float(success)
    assert result.raw_count == 10 + 10  # the first pages and the tallies
    assert result.problems == []


def test_webshop_prompt_and_reflexion_examples():
    _, _, [prompt] = convert(real("webshop", "WebShop.ipynb.cell4-prompt1.txt"))
    assert prompt.info.task == ("i would like a 3 ounce bottle of bright citrus deodorant for sensitive skin, "
                                "and price lower than 50.00 dollars")
    assert [r.tool or "think" for r in prompt.records] == ["search", "think", "click", "think", "click", "click", "click"]
    assert prompt.end.outcome == "finished" and prompt.end.verdict is None
    # The cell's Python around the prompt is kept, raw: the page's first lines and the closing quotes.
    assert prompt.records[0].raw[0].data.startswith('# trivial search & item, choose option\nprompt1 = """Webshop')
    assert [r.data for r in prompt.records[-1].raw] == ['"""']
    name, result, runs = convert(real("webshop", "webshop_runs_reflection_few_shot_examples.txt"))
    assert name == "webshop"
    assert [r.step_count for r in runs] == [7, 10]
    assert [r.end.outcome for r in runs] == ["finished", "unfinished"]
    assert [r.end.verdict for r in runs] == [{"correct": False, "score": None, "expected": None, "grader": "STATUS"}] * 2
    assert [r.data[:35] for r in runs[1].records[-1].raw] == ["Next plan: In this attempt, I was u"]
    assert [r.is_error for r in runs[1].records].count(True) == 2  # 'Invalid action!' twice
    assert result.problems == []


async def test_webshop_printout_opens_in_the_debugger_one_episode_per_run():
    app = DebuggerApp(open_document(real("webshop", "WebShop.ipynb.cell7-stdout.first10.txt")), save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "r", "down", "down", "down", "enter", "end")
        header = app.query_one("#header").text
        assert "episode 3" in header and "(run 4/10)" in header
        assert "step 14/14" in header and "outcome: budget exhausted" in header


# --- ALFWorld: the ReAct paper's prompts, Reflexion's examples -------------------------------

def test_alfworld_prompts_one_run_per_prompt():
    path = real("alfworld", "alfworld.json")
    prompts = json.loads(path.read_text(encoding="utf-8"))
    name, result, runs = convert(path)
    assert name == "alfworld"
    assert [r.info.name for r in runs] == list(prompts)
    # Each '>' line of a prompt is a step (react_cool_0 writes '>go to' three times, no space);
    # react_* prompts think, act_* prompts do not.
    assert [r.step_count for r in runs] == [prompt.count("\n>") for prompt in prompts.values()]
    assert runs[6].records[1].call == "go to stoveburner 1"
    assert [r.step_count for r in runs][:12] == [8, 14, 13, 19, 12, 11, 11, 23, 19, 14, 20, 16]
    assert [sum(1 for s in r.records if s.thought) for r in runs][:12] == [2, 2, 5, 5, 3, 3, 3, 3, 7, 5, 5, 4]
    assert all(not any(s.thought for s in r.records) for r in runs[12:])
    put = runs[0]
    assert put.info.task == "put some spraybottle on toilet."
    assert [s.call or "think" for s in put.records] == [
        "think", "go to cabinet 1", "go to cabinet 2", "open cabinet 2", "take spraybottle 2 from cabinet 2",
        "think", "go to toilet 1", "put spraybottle 2 in/on toilet 1"]
    assert put.records[-1].observation == "You put the spraybottle 2 in/on the toilet 1."
    assert all(not s.is_error for r in runs for s in r.records)
    assert result.raw_count == 24 and result.problems == []  # each prompt's room


def test_alfworld_reflexion_examples():
    _, result, runs = convert(real("alfworld", "alfworld_runs_reflexion_few_shot_examples.txt"))
    assert [r.info.task for r in runs] == ["heat some mug and put it in coffeemachine.",
                                           "look at bowl under the desklamp."]
    assert [r.step_count for r in runs] == [13, 20]
    assert [r.end.verdict["correct"] for r in runs] == [False, False]
    heat, lamp = runs
    # The loop the reflection is about: 'examine stoveburner 1' four times.
    assert [s.guards.repeats[0] for s in heat.records][-4:] == [1, 2, 3, 4]
    assert [r.data[:40] for r in heat.records[-1].raw] == ["New plan: I was stuck in a loop in which"]
    # Empty commands and 'go to drawer 3' got 'Nothing happens.': errors.
    assert [s.step for s in lamp.records if s.is_error] == [6, 15, 19, 20]
    assert [s.parse_error for s in lamp.records if s.parse_error] == ["an empty command"] * 3
    assert result.raw_count == 4 and result.problems == []


async def test_alfworld_prompt_opens_in_the_debugger():
    app = DebuggerApp(open_document(real("alfworld", "alfworld.json")), save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "end")
        header = app.query_one("#header").text
        assert "react_put_0" in header and "step 8/8" in header
        assert "go to" in pane_text(app, "tools")


# --- hostile text of the dialects, through the headless commands ---------------------------

HOSTILE = [IMPORT_FIXTURES / fmt / "hostile_unicode.txt" for fmt in ("reflexion", "webshop", "alfworld")]


@pytest.mark.parametrize("path", HOSTILE, ids=lambda p: p.parent.name)
@pytest.mark.parametrize("command", [["show"], ["stats"], ["show", "--json"], ["check", "--fail-on", "error"]])
def test_hostile_text_never_reaches_the_terminal(path, command, capsys):
    from agentdbg.cli import main

    main([*command, str(path)])
    out, err = capsys.readouterr()
    for stream in (out, err):
        assert "\x1b" not in stream and "\x07" not in stream
    if command == ["show"]:
        assert "[blink]" in out  # markup is shown as the text it is
