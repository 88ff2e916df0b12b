"""The ReAct paper's run logs and prompt files, from hand-written fixtures."""

from __future__ import annotations

from test_import_support import convert, counters, fixture, markers, problems_text, tools_called

from agentdbg.engine import events as ev
from agentdbg.importers import react_paper


def test_run_log_episodes_are_runs_with_the_paper_budget():
    name, result, runs = convert(fixture("react-paper", "runs.log"))
    assert name == "react-paper"
    assert [r.info.name for r in runs] == ["question 12", "question 40", "question 77"]
    assert [r.step_count for r in runs] == [3, 7, 4]
    assert all(r.info.guards["max_steps"] == 7 for r in runs)
    assert runs[0].info.task == "The Leopard is a novel by Giuseppe Tomasi di Lampedusa."
    assert {t["name"] for t in runs[0].info.tools} == {"Search", "Lookup"}
    assert tools_called(runs[0]) == ["Search", "Search", None]
    assert runs[0].records[0].call == "Search[The Leopard]"
    assert runs[0].records[0].args == "The Leopard"
    assert (runs[0].end.outcome, runs[0].end.answer, runs[0].end.steps) == ("answered", "SUPPORTS", 3)
    # The finishing step keeps the environment's last word.
    assert runs[0].records[2].observation == "Episode finished, reward = 1"
    assert result.problems == []


def test_an_episode_that_never_finished_stops_on_the_step_budget():
    _, _, runs = convert(fixture("react-paper", "runs.log"))
    stuck = runs[1]
    assert stuck.end.outcome == "budget exhausted"
    assert stuck.end.guard == "max_steps" and stuck.end.answer is None
    assert "8 steps" in stuck.end.message  # the harness's own count, explained
    last = stuck.records[-1]
    assert last.tripped is not None and last.tripped.guard == "max_steps"
    assert last.guards.steps == [7, 7]
    assert markers(stuck) == ["", "error", "error", "error", "", "error", "tripped"]


def test_invalid_actions_are_parse_errors_and_their_repeats_are_counted():
    _, _, runs = convert(fixture("react-paper", "runs.log"))
    stuck = runs[1]
    invalid = stuck.records[1]
    assert invalid.tool is None and invalid.parse_error is not None
    assert invalid.output == "\n\nFinish[REFUTES]"  # the action exactly as the model wrote it
    assert invalid.observation == "Invalid action: Finish[REFUTES]" and invalid.observation_error
    # The same invalid action again and again: the repeat counter counts it even across a
    # valid action in between; the error streak resets there.
    assert counters(stuck, "repeats") == [1, 1, 2, 3, 1, 4, 5]
    assert counters(stuck, "errors") == [0, 1, 2, 3, 0, 1, 2]
    assert [r.is_repeat for r in stuck.records].count(True) == 4


def test_a_repeated_valid_action_is_a_repeat_too():
    _, _, runs = convert(fixture("react-paper", "runs.log"))
    assert counters(runs[2], "repeats") == [1, 1, 2, 0]
    assert markers(runs[2]) == ["", "", "repeat", "final"]


def test_the_result_dict_and_the_tally_are_kept_as_raw_records():
    _, result, runs = convert(fixture("react-paper", "runs.log"))
    assert result.raw_count == 6
    raw = runs[0].records[-1].raw
    assert [r.source for r in raw] == ["react-paper result", "react-paper text"]
    assert raw[0].data["gt_answer"] == "SUPPORTS" and "gt_answer" in raw[0].note
    assert raw[1].data == "1 1 1.0 3.512" and "tally" in raw[1].note


def test_prompt_file_examples_numbered_unnumbered_and_without_a_space():
    name, result, runs = convert(fixture("react-paper", "prompts.json"))
    assert name == "react-paper"
    assert [r.info.name for r in runs] == ["webthink_example2 #1", "webthink_example2 #2",
                                           "cot_example2 #1", "cot_example2 #2"]
    assert [r.step_count for r in runs] == [2, 2, 1, 1]
    assert [r.end.answer for r in runs] == ["SUPPORTS", "NOT ENOUGH INFO", "Po", "Palermo"]
    assert all(r.info.guards["max_steps"] is None for r in runs)  # examples, not harness runs
    first = runs[0].records[0]
    assert first.call == "Search[Turin]"  # "Action 1:Search[Turin]", no space after the colon
    assert first.observation.endswith("It is the capital city of Piedmont.")  # continuation line
    assert runs[2].records[0].thought == "Turin lies on the Po."
    # The instruction before the first example is kept, raw, with the first example.
    assert result.raw_count == 1
    assert "Decide whether" in runs[0].records[0].raw[0].data


def test_an_episode_without_steps_is_empty():
    _, result, runs = convert(fixture("react-paper", "edge_empty_episode.txt"))
    assert [r.step_count for r in runs] == [0, 2]
    assert runs[0].end.outcome == "empty"
    assert runs[1].end.answer == "the Tyrrhenian Sea"
    assert result.problems == []


def test_an_observation_without_an_action_and_an_action_without_an_observation():
    _, _, runs = convert(fixture("react-paper", "edge_unpaired.txt"))
    lonely = runs[0].records[1]
    assert lonely.tool is None and lonely.observation == "Fiat is headquartered in Turin."
    assert runs[0].end.answer == "Giovanni Agnelli"
    cut = runs[1]
    assert cut.records[0].parse_error is not None  # "search Lingotto": no brackets
    assert cut.records[-1].tool == "Search" and cut.records[-1].observation is None
    assert cut.end.outcome == "unfinished"


def test_a_result_that_disagrees_with_the_transcript_is_reported_with_its_line():
    _, result, runs = convert(fixture("react-paper", "edge_result_mismatch.txt"))
    assert runs[0].step_count == 2 and runs[0].end.answer == "REFUTES"  # what was printed
    assert len(result.problems) == 1
    assert result.problems[0].line == 9
    assert "3 steps" in problems_text(result) and "2 steps" in problems_text(result)


def test_non_ascii_text_is_kept():
    _, _, runs = convert(fixture("react-paper", "unicode.txt"))
    assert "那不勒斯" in runs[0].info.task and "נאפולי" in runs[0].info.task
    assert runs[0].records[0].args == "Napoli (città)"
    assert runs[0].end.answer == "SUPPORTS ✓"


def test_hostile_markup_is_kept_verbatim():
    _, _, runs = convert(fixture("react-paper", "hostile.txt"))
    run = runs[0]
    assert run.info.task == "[bold red]Markup[/bold red] is data, not style."
    assert run.records[0].args == "[red]alert[/red]"
    assert "\x1b]52;c;ZWNobyBwd25lZA==\x07" in run.records[0].observation
    assert run.end.answer == "[blink]SUPPORTS[/blink]"


def test_sniff_accepts_numbered_steps_and_prompt_files_only():
    assert react_paper.sniff("Question: x\nThought 1: y\nAction 1: Search[z]\n")[0]
    assert react_paper.sniff('{"p": "Claim: x\\nThought 1: y\\nAction 1: Search[z]"}')[0]
    ok, why = react_paper.sniff("Question: x\nThought: y\nAction: calc[1]\n")
    assert not ok and "numbered" in why
    assert not react_paper.sniff('{"messages": []}')[0]
    # A chat log that quotes a ReAct prompt in a message is the chat's, not a prompt file.
    quoting = ('{"messages": [{"role": "user", "content": "Question: x\\nThought 1: y\\nAction 1: Search[z]"},'
               ' {"role": "assistant", "content": "Thought 1: y"}]}')
    assert not react_paper.sniff(quoting)[0]


def test_convert_takes_text_and_a_path_for_problems():
    text = "Question: q\nThought 1: t\nAction 1: Finish[a]\n{'steps': 2, 'answer': 'b'}\n"
    result = react_paper.convert(text, "pasted")
    assert result.problems[0].path == "pasted" and result.problems[0].line == 4
    events = result.runs[0]
    assert isinstance(events[0], ev.RunStart) and isinstance(events[-1], ev.RunEnd)


def test_the_harness_retry_is_a_note_on_the_step_it_retried_not_a_step():
    name, result, runs = convert(fixture("react-paper", "retries.log"))
    assert name == "react-paper"
    assert [r.info.name for r in runs] == ["question 12", "question 40", "question 77", "question 81"]
    # Each printed step once, as the result dicts count them: the retries are not steps.
    assert [r.step_count for r in runs] == [2, 2, 2, 2]
    assert result.problems == []
    first = runs[0]
    # The observation before a retry ends where the retry begins.
    assert first.records[0].observation.endswith("four active volcanoes in Italy.")
    retried = first.records[1]
    assert retried.thought == "The observation says it is one of the active volcanoes, so the claim is supported."
    assert retried.answer == "SUPPORTS"
    [note] = [r for r in retried.raw if r.source == "react-paper retry"]
    assert note.data == "  The observation says it is one of the active volcanoes, so the claim is supported.\nAction 2"[1:]
    assert note.note.startswith("line 6: the harness found no 'Action N: ' line")
    # An 'Action 2:' line inside the model's output is part of the retry, not a step.
    gave_up = runs[1].records[1]
    assert gave_up.thought == "I give up." and gave_up.answer == "REFUTES"
    assert [r.data for r in gave_up.raw if r.source == "react-paper retry"] == [" I give up.\n\nAction 2:\n\nFinish[REFUTES]"]
    # An output that starts on the next line.
    later = runs[2].records[1]
    assert [r.data for r in later.raw if r.source == "react-paper retry"] == ["\n It erupted in AD 79, so the claim is supported."]
    assert result.raw_count == 3 * 2 + 3 + 2  # results and tallies, the retries


def test_a_retry_whose_step_does_not_repeat_its_first_line_ends_at_the_next_thought():
    _, _, runs = convert(fixture("react-paper", "retries.log"))
    last = runs[3]
    assert last.records[0].observation == "Could not find [Stromboli eruptions]. Similar: ['Stromboli']."
    step = last.records[1]
    assert step.thought == "I should search Stromboli instead." and step.call == "Search[Stromboli]"
    retries = [r for r in step.raw if r.source == "react-paper retry"]
    assert [r.data for r in retries] == [" Let me look at Stromboli.\nSearch[Stromboli]",
                                         " It has been erupting for 2,000 years"]
    # The second one, cut off by the end of the log, is kept on the last step.
    assert retries[1].note.startswith("line 66:")
    assert step.observation == "Stromboli has been in almost continuous eruption for the past 2,000 years."


def test_framing_lines_of_other_logs_end_an_episode_and_are_kept():
    text = ("Question: q\nThought 1: t\nAction 1: Search[x]\nObservation 1: seen\n"
            "------------- BEGIN INCORRECT AGENTS -----------\n#####\n"
            "Question: r\nThought 1: u\nAction 1: Finish[y]\nObservation 1: done\n")
    result = react_paper.convert(text, "framed")
    first, second = result.runs
    assert [e.text for e in first if isinstance(e, ev.Observation)] == ["seen"]
    raw = [e for e in second if isinstance(e, ev.RawRecord)]
    assert [r.data for r in raw] == ["------------- BEGIN INCORRECT AGENTS -----------", "#####"]
    assert raw[0].note.startswith("line 5, between episodes:")
    assert react_paper.sniff("BEGIN TRIAL 1\n" + text) == (
        False, "Reflexion's trial sections (BEGIN TRIAL n, BEGIN CORRECT AGENTS): the reflexion format")

