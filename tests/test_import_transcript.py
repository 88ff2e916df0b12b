"""Plain-text transcripts in the engine's action formats, from hand-written fixtures."""

from __future__ import annotations

import pytest
from test_import_support import convert, counters, fixture, markers, tools_called

from agentdbg.engine import events as ev
from agentdbg.importers import transcript


def test_bracket_format_the_library_example():
    name, result, runs = convert(fixture("transcript", "library_hallucinating.txt"))
    assert name == "transcript"
    run = runs[0]
    assert run.info.task == "How many copies of Il Gattopardo are available?"
    assert run.step_count == 5  # four tool calls and the answer, as the engine counts them
    assert tools_called(run) == ["web_search", "catalog", "loans", "calc", None]
    assert run.records[3].args == "5 - 3" and run.records[3].call == "calc[5 - 3]"
    assert markers(run) == ["error", "", "", "", "final"]
    assert counters(run, "errors") == [1, 0, 0, 0, 0]
    assert (run.end.outcome, run.end.answer) == ("answered", "2")
    assert result.raw_count == 0 and result.problems == []


def test_the_stuck_policy_repeats_and_stops_without_an_answer():
    _, result, runs = convert(fixture("transcript", "stuck.txt"))
    run = runs[0]
    assert run.step_count == 2
    assert counters(run, "repeats") == [1, 2]
    assert markers(run) == ["", "repeat"]
    assert run.records[1].observation is None
    assert run.end.outcome == "unfinished"
    # The summary line before the question is kept, raw, with the first step.
    assert result.raw_count == 1
    assert run.records[0].raw[0].data.startswith("--- stuck policy")


def test_colon_format_with_answer():
    _, _, runs = convert(fixture("transcript", "population.log"))
    run = runs[0]
    assert tools_called(run) == ["lookup_population", "math", None]
    assert run.records[0].args == "India"
    assert run.end.answer == "India's population divided by 2 is 714,313,831.5"


def test_json_format_with_a_broken_action_input():
    _, _, runs = convert(fixture("transcript", "tax.md"))
    run = runs[0]
    assert run.step_count == 4
    assert run.records[0].args == {"expr": "120 * 0.15"}
    broken = run.records[1]
    assert broken.tool is None and "not valid JSON" in broken.parse_error
    assert broken.observation_error
    assert run.records[2].args == {"key": "total", "value": "138.0"}  # JSON over two lines
    assert markers(run) == ["", "error", "", "final"]


def test_each_question_starts_a_run():
    _, _, runs = convert(fixture("transcript", "two_runs.txt"))
    assert [r.info.task for r in runs] == ["What is 5 - 3?", "What is 2 * 21?"]
    assert [r.end.answer for r in runs] == ["2", "42"]
    assert [r.info.name for r in runs] == ["run 1", "run 2"]


def test_a_question_alone_is_an_empty_run():
    _, _, runs = convert(fixture("transcript", "edge_empty.txt"), "transcript")
    assert runs[0].step_count == 0 and runs[0].end.outcome == "empty"


def test_an_observation_without_an_action_and_an_action_without_a_reply():
    _, _, runs = convert(fixture("transcript", "edge_unpaired.txt"))
    run = runs[0]
    assert tools_called(run) == [None, "loans", "catalog"]
    assert run.records[0].observation == "3"
    assert run.records[2].observation is None
    assert run.end.outcome == "unfinished"


def test_non_ascii_and_hostile_text_is_kept_verbatim():
    _, _, runs = convert(fixture("transcript", "unicode.txt"))
    assert runs[0].records[0].args == "Se questo è un uomo"
    assert runs[0].end.answer == "nessuna (0) — ничего"
    _, _, runs = convert(fixture("transcript", "hostile.txt"))
    run = runs[0]
    assert run.records[0].args == "[red]Il Gattopardo[/red]"
    assert "\x1b]52;c;cm0gLXJmIH4=\x07" in run.records[0].observation
    assert run.end.answer == "[blink]5[/blink] \x1b[5m!\x1b[0m"


@pytest.mark.parametrize("text, reason", [
    ('{"a": 1}', "JSON"),
    ("Question: q\nThought 1: t\nAction 1: Search[x]\n", "numbered"),
    ("just some notes\n", "no Thought"),
])
def test_sniff_refuses_with_a_reason(text, reason):
    ok, why = transcript.sniff(text)
    assert not ok and reason in why


def test_convert_accepts_pasted_text():
    result = transcript.convert("Question: q\nThought: t\nAction: calc[1 + 1]\nObservation: 2\nFinal Answer: 2\n")
    types = [e.type for e in result.runs[0]]
    assert types[:4] == ["run_start", "step", "thought", "action"]
    assert isinstance(result.runs[0][-1], ev.RunEnd) and result.runs[0][-1].answer == "2"
