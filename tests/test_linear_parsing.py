"""The program's own patterns over untrusted text take time linear in it.

Each input here made an earlier version do quadratic work (a run of spaces split every
way between two ``[ \\t]*``, ``^\\s*`` run over every blank line below each line start, a
lazy ``.*?`` retried at each position, a text grown one line at a time): minutes at these
sizes. Linear, each test takes a fraction of a second. The tests assert the result."""

from __future__ import annotations

import pytest

from agentdbg.engine import events as ev
from agentdbg.engine.memory_summary import turn_gist
from agentdbg.engine.parsers import Action, parse_numbered_action
from agentdbg.importers import alfworld, react_paper, reflexion, swe_agent, transcript, webshop
from agentdbg.plans import looks_like_plan

SPACES = " " * 300_000
LINES = 300_000


def test_numbered_actions_with_long_runs_of_spaces():
    with pytest.raises(ValueError, match="no 'Action N:' line"):
        parse_numbered_action("Action" + SPACES + "1 Search[x]")
    with pytest.raises(ValueError, match=r"^invalid action 'x {10}"):
        parse_numbered_action("Action 1: x" + SPACES + "y")
    step = parse_numbered_action("Thought" + SPACES + "y\nAction 1:" + SPACES + "\n\n  Search[x]  \nmore")
    assert step == Action("", "Search", "x", call="Search[x]")
    assert parse_numbered_action("Thought 2: look\nAction 2:Search[a]\t").thought == "look"


def test_turn_gist_with_long_runs_of_spaces():
    assert turn_gist("Action" + SPACES + "x") == "Action x"
    assert turn_gist("Thought 1:" + SPACES + "why\nAction 1: calc[1]\nObservation 1: 1") == "calc[1] -> 1"


def test_swe_agent_docs_and_issue_over_blank_lines():
    assert swe_agent.tools_from_docs("edit:\n" + "\n" * LINES + "  - path (string) [required]\n") == [
        {"name": "edit", "description": "", "params": {"path": "str"}, "dangerous": False}]
    docs = "edit:\n  docstring: edits\n  arguments:\n    - path (string) [required]\n    - line (integer)\n"
    assert swe_agent.tools_from_docs(docs)[0]["params"] == {"path": "str", "line": "int"}
    history = [{"role": "user", "content": "ISSUE:\n" + "\n" * LINES}]
    assert swe_agent._task({"history": history}, {}) == "ISSUE:\n" + "\n" * LINES
    history = [{"role": "user", "content": "ISSUE:\n" * LINES + "bug\n\n\nINSTRUCTIONS: fix"}]
    assert swe_agent._task({"history": history}, {}) == "ISSUE:\n" * (LINES - 1) + "bug"
    history = [{"role": "user", "content": "intro ISSUE:\nthe bug\nINSTRUCTIONS: x"}]
    assert swe_agent._task({"history": history}, {}) == "the bug"


def observations(result) -> list[str]:
    return [e.text for run in result.runs for e in run if isinstance(e, ev.Observation)]


def test_react_paper_transcripts_with_long_lines_and_many_continuation_lines():
    text = ("Question: q\nThought 1: x\nAction" + SPACES + "1: Search[x]\nObservation 1: start\n"
            + "more\n" * LINES + "{" + "'steps'" * 50_000 + "\nThought 2: y\nAction 2: Finish[a]\n")
    result = react_paper.convert(text)
    [first] = observations(result)
    assert first.startswith("start\nmore\nmore") and first.count("more") == LINES
    assert first.endswith("more\n{" + "'steps'" * 50_000)
    assert result.runs[0][-1].answer == "a"


def test_react_paper_retries_many_and_long():
    # Each retry note looks ahead for its step: never past the next one, nor again after it.
    text = ("Question: q\nThought 1: t\nAction 1: Search[x]\nObservation 1: o\n" + "ohh... x\n" * 20_000
            + "ohh... y\n" + "more\n" * LINES + "Thought 2: y\nAction 2: Finish[a]\n")
    result = react_paper.convert(text)
    retries = [e for e in result.runs[0] if isinstance(e, ev.RawRecord) and e.source == "react-paper retry"]
    assert len(retries) == 20_001
    assert retries[-1].data == "y" + "\nmore" * LINES
    assert result.runs[0][-1].answer == "a"


def test_harness_framing_lines_with_long_runs_of_spaces_and_digits():
    # A run of spaces between two optional parts, a run of digits read two ways: each once.
    section = "--- BEGIN HALTED AGENTS" + SPACES + "x"
    result = reflexion.convert("BEGIN TRIAL 1\n" + section + "\nQuestion: q\nThought 1: t\nAction 1: Finish[a]\n")
    assert [e.task for run in result.runs for e in run if isinstance(e, ev.RunStart)] == ["q"]
    result = react_paper.convert("Question: q\nThought 1: t\nAction 1: Search[x]\nObservation 1: o\n" + section)
    [first] = observations(result)
    assert first == "o\n" + section
    digits = "9" * 300_000
    result = webshop.convert("Action: search[x]\nObservation: o\n\n1 " + digits + " 0.5 x\n" + digits + " 1 y\n"
                             "Action: click[Buy Now]\nObservation: Your score (min 0.0, max 1.0): " + digits + "x\n")
    assert observations(result)[0] == "o\n\n1 " + digits + " 0.5 x\n" + digits + " 1 y"
    result = alfworld.convert("Your task is to: t\n> go to" + SPACES + "x\n" + "Nothing happens.\n" * LINES)
    assert observations(result) == ["Nothing happens." + "\nNothing happens." * (LINES - 1)]


def test_plain_transcripts_with_many_continuation_lines():
    text = "Question: q\n" + "and more\n" * 1000 + "Thought: x\nAction: search[x]\nObservation: start\n" + "more\n" * LINES
    result = transcript.convert(text)
    [first] = observations(result)
    assert first.startswith("start\nmore") and first.count("more") == LINES
    assert result.runs[0][0].task == "q" + "\nand more" * 1000


def test_a_toml_file_of_blank_lines_is_not_taken_for_a_plan(tmp_path):
    path = tmp_path / "blank.toml"
    path.write_text("\n" * 200_000 + "x = 1\n", encoding="utf-8")
    assert not looks_like_plan(path)
    path.write_text("\n" * 1000 + "  [policy]\n", encoding="utf-8")
    assert looks_like_plan(path)
