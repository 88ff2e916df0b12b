"""Reflexion's trial logs, from hand-written fixtures: one run per agent and trial, the
section as the verdict, the reflections kept and shown."""

from __future__ import annotations

import json

from test_import_support import convert, counters, fixture, markers, problems_text

from agentdbg import importers
from agentdbg.importers import reflexion

HEADER = ("You have attempted to answer following question before and failed. The following reflection(s) give a "
          "plan to avoid failing to answer the question in the same way you did previously. Use them to improve "
          "your strategy of correctly answering the given question.")


def _verdicts(runs) -> list[tuple]:
    return [(r.end.verdict or {}).get("correct") for r in runs]


def test_each_agent_of_each_trial_is_a_run_named_after_them():
    name, result, runs = convert(fixture("reflexion", "trial_log.txt"))
    assert name == "reflexion"
    assert [r.info.name for r in runs] == ["trial 1 correct #1", "trial 1 incorrect #1", "trial 1 halted #1",
                                           "trial 2 correct #1", "trial 2 correct #2", "trial 2 halted #1"]
    assert [r.step_count for r in runs] == [3, 2, 2, 3, 2, 3]
    assert [r.end.outcome for r in runs] == ["answered", "answered", "halted", "answered", "answered", "halted"]
    assert [r.end.answer for r in runs] == ["Stromboli", "1944", None, "Stromboli", "79", None]
    assert {t["name"] for t in runs[0].info.tools} == {"Search", "Lookup"}
    assert runs[0].info.policy == "recorded: Reflexion trial log"
    assert result.problems == []


def test_the_section_is_the_verdict_and_the_key_its_expected_answer():
    _, _, runs = convert(fixture("reflexion", "trial_log.txt"))
    assert _verdicts(runs) == [True, False, False, True, True, False]
    assert [r.end.verdict["expected"] for r in runs] == ["Stromboli", "79", "3,357 metres"] * 2
    assert {(r.end.verdict["grader"], r.end.verdict["score"]) for r in runs} == {("exact match", None)}
    halted = runs[2]
    assert "halted the agent before it answered" in halted.end.message
    assert counters(halted, "repeats") == [1, 2]  # it searched the missing page twice
    assert markers(halted) == ["", "repeat"]


def test_reflections_are_kept_with_the_first_step_and_out_of_the_task():
    _, result, runs = convert(fixture("reflexion", "trial_log.txt"))
    retried = runs[4]
    assert retried.info.task == "In which year did the eruption that buried Pompeii happen?"
    [note] = [r for r in retried.records[0].raw if r.source == "reflexion reflections"]
    assert note.data == {"header": HEADER, "reflections": [
        "I answered from memory instead of reading the page. I should have searched Mount Vesuvius and looked "
        "up the year of the eruption that buried Pompeii."]}
    assert note.note.startswith("line 62: the reflections on its earlier trials the agent was given: (1) I answered")
    # A reflection over two lines stays one; the step after the list is read as usual.
    etna = runs[5]
    [note] = [r for r in etna.records[0].raw if r.source == "reflexion reflections"]
    assert note.data["reflections"][1] == "I should look up 'metres' on the Etna page\n  once I have found it."
    assert etna.records[0].thought == "I need to search Etna."
    assert etna.records[0].observation == ("Mount Etna is an active stratovolcano on the east coast of Sicily.\n"
                                           "It is the highest Italian peak south of the Alps.")
    # The trial summaries, with each trial's first run; nothing else is raw.
    summaries = [r.data for run in runs for r in run.records[0].raw if r.source == "reflexion text"]
    assert summaries == ["Trial summary: Correct: 1, Incorrect: 1, Halted: 1",
                         "Trial summary: Correct: 2, Incorrect: 0, Halted: 1"]
    assert result.raw_count == 4


def test_chain_of_thought_logs_with_context_instruction_and_previous_trial():
    _, result, runs = convert(fixture("reflexion", "cot_log.txt"))
    assert [r.info.name for r in runs] == ["trial 1 correct #1", "trial 1 incorrect #1", "trial 2 correct #1"]
    assert [(r.step_count, r.end.answer) for r in runs] == [(1, "Stromboli"), (1, "1944"), (1, "79")]
    assert _verdicts(runs) == [True, False, True]
    context, cot, retried = runs
    assert context.info.task == ""  # these logs give the question inside the context
    [prompt] = [r for r in context.records[0].raw if r.source == "reflexion prompt"]
    assert prompt.data.startswith("Context: Stromboli") and "(the context)" in prompt.note
    assert cot.info.task == "In which year did the eruption that buried Pompeii happen?"
    [empty] = [r for r in cot.records[0].raw if r.source == "reflexion reflections"]
    assert empty.data == {"header": "", "reflections": []} and empty.note.endswith("none listed")
    # The previous trial shown to the agent is its prompt, not a run of its own.
    assert retried.info.task == "In which year did the eruption that buried Pompeii happen?"
    [prompt] = [r for r in retried.records[0].raw if r.source == "reflexion prompt"]
    assert "(END PREVIOUS TRIAL)" in prompt.data and "(the previous trial)" in prompt.note
    [note] = [r for r in retried.records[0].raw if r.source == "reflexion reflections"]
    assert note.data["reflections"] == ["I gave the year of the last eruption, not of the one that buried Pompeii."]
    assert retried.records[0].thought == "Let's think step by step. The eruption that buried Pompeii was in AD 79."
    assert result.problems == []


def test_odd_agents_keep_what_the_log_says_and_disagreements_are_reported():
    _, result, runs = convert(fixture("reflexion", "edge_cases.txt"))
    # No trial header (a single run's log); an agent without its key line.
    assert [r.info.name for r in runs] == ["correct #1", "correct #2", "correct #3", "halted #1", "halted #2"]
    assert [r.step_count for r in runs] == [2, 0, 1, 2, 0]
    assert [r.end.outcome for r in runs] == ["answered", "empty", "unfinished", "answered", "halted"]
    assert runs[0].end.verdict["expected"] is None and runs[0].end.verdict["correct"] is True
    assert runs[1].info.task == "Which volcano buried Herculaneum?"  # logged with no steps
    invalid = runs[3].records[0]
    assert invalid.parse_error is not None and invalid.observation_error  # Reflexion's 'Invalid Action.'
    assert [r.data for r in invalid.raw] == ["a note someone left between the sections"]
    # A trial with no agent after the last: its summary goes with the last run.
    assert [r.data for r in runs[4].preamble] == ["Trial summary: Correct: 0, Incorrect: 0, Halted: 0"]
    assert [p.line for p in result.problems] == [18, 31]
    assert "filed under CORRECT AGENTS but gives no Finish[...] answer" in problems_text(result)
    assert "filed under HALTED AGENTS but gives a Finish[...] answer" in problems_text(result)


def test_hostile_text_is_kept_verbatim():
    _, _, [run] = convert(fixture("reflexion", "hostile_unicode.txt"))
    assert run.info.task.startswith("[bold red]Markup[/bold red] is data: what is \x1b[31mNapoli\x1b[0m")
    [note] = [r for r in run.records[0].raw if r.source == "reflexion reflections"]
    assert "\x1b]52;c;ZWNobyBwd25lZA==\x07" in note.data["reflections"][0]
    assert run.end.answer == "[blink]נאפולי[/blink]"
    assert run.end.verdict["expected"] == "נאפולי \x1b[5m✓\x1b[0m"


def test_sniff_takes_trial_sections_and_refuses_env_results_saying_why():
    assert reflexion.sniff("\n####\nBEGIN TRIAL 3\nTrial summary: Correct: 1\n")[0]
    assert reflexion.sniff("------------- BEGIN HALTED AGENTS --------------\n\nQuestion: q\n")[0]
    assert not reflexion.sniff("Question: q\nThought 1: t\nAction 1: Search[x]\n")[0]
    results = json.dumps([{"name": "env_0", "memory": [], "is_success": True},
                          {"name": "env_1", "memory": [" I should have opened the fridge."], "is_success": False}])
    ok, why = reflexion.sniff(results)
    assert not ok and why.startswith("a Reflexion env_results file") and "no steps" in why


def test_an_env_results_file_is_refused_with_what_it_is(tmp_path):
    path = tmp_path / "env_results_trial_1.json"
    path.write_text(json.dumps([{"name": f"env_{n}", "memory": [], "is_success": n % 2 == 0} for n in range(3)],
                               indent=4), encoding="utf-8")
    try:
        importers.detect(path)
    except importers.NotImportable as refused:
        assert "reflexion: a Reflexion env_results file" in str(refused)
    else:
        raise AssertionError("an env_results file is not a run")
