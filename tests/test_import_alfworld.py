"""ALFWorld episodes in the '> command' form, from hand-written fixtures: prompt files,
Reflexion's examples and trial logs."""

from __future__ import annotations

import json

from test_import_support import convert, counters, fixture, markers, problems_text, tools_called

from agentdbg import importers
from agentdbg.importers import alfworld


def test_a_prompt_file_is_one_run_per_prompt():
    name, result, runs = convert(fixture("alfworld", "prompts.json"))
    assert name == "alfworld"
    assert [r.info.name for r in runs] == ["react_clean_0", "act_heat_0"]
    assert [r.step_count for r in runs] == [8, 7]
    clean = runs[0]
    assert clean.info.task == "put a clean lemon in fridge."
    assert clean.info.policy == "ALFWorld example" and clean.info.guards["max_steps"] is None
    assert tools_called(clean) == [None, "go to", "take", "go to", "clean", "go to", "open", "put"]
    assert clean.records[0].thought.startswith("To solve the task, I need to find a lemon")
    assert clean.records[0].observation == "OK."
    assert clean.records[1].args == "countertop 1" and clean.records[1].call == "go to countertop 1"
    assert clean.records[2].args == "lemon 1 from countertop 1"
    assert clean.records[-1].observation == "You put the lemon 1 in/on the fridge 1."
    assert clean.end.outcome == "unfinished" and clean.end.verdict is None  # no status in a prompt
    [room] = clean.records[0].raw
    assert room.source == "alfworld observation" and room.data.startswith("You are in the middle of a room.")
    assert room.note.startswith("prompt line 1: the room, as the environment first described it")
    assert {t["name"] for t in clean.info.tools} >= {"go to", "take", "put", "clean", "heat", "cool", "look"}
    assert "prompt 'notes' is not a string; skipped" in problems_text(result)


def test_a_reflexion_trial_log_is_one_run_per_environment():
    name, result, runs = convert(fixture("alfworld", "trial_log.txt"))
    assert name == "alfworld"
    assert [r.info.name for r in runs] == ["environment 1", "environment 2"]
    assert [r.step_count for r in runs] == [7, 4]
    solved, stuck = runs
    assert solved.info.policy == "recorded: Reflexion ALFWorld run" and solved.info.guards["max_steps"] == 49
    assert solved.end.outcome == "finished"
    assert solved.end.verdict == {"correct": True, "score": None, "expected": None, "grader": "STATUS"}
    # What came before 'Here is the task:' is the prompt and the memory, not episodes.
    sources = [r.source for r in solved.records[0].raw]
    assert sources == ["alfworld text", "alfworld prompt", "reflexion memory", "alfworld observation"]
    earlier, prompt, memory, room = solved.records[0].raw
    assert earlier.data == "Environment #0: Success" and "solved in an earlier trial" in earlier.note
    assert prompt.data.startswith("Interact with a household to solve a task. Here are two examples.")
    assert prompt.note.startswith("lines 11-45: the prompt's instruction and examples")
    assert memory.data == ["I took the knife instead of the lemon. I should take lemon 1 from countertop 1 first.",
                           "I forgot to clean the lemon before putting it in the fridge."]
    assert "(trial 0) I took the knife" in memory.note and "(trial 1) I forgot" in memory.note
    assert room.data.startswith("You are in the middle of a room.")
    assert stuck.end.outcome == "action repeated" and "'take tomato 1 from fridge 1'" in stuck.end.message
    assert stuck.end.verdict["correct"] is False
    assert markers(stuck) == ["raw", "", "error", "error"]  # 'Nothing happens.': the command was refused
    assert counters(stuck, "errors") == [0, 0, 1, 2]
    assert counters(stuck, "repeats") == [0, 1, 1, 2]
    [summary] = stuck.records[-1].raw
    assert summary.data.startswith("-----\nSUCCESS: 2\n") and "the trial's summary" in summary.note
    assert result.raw_count == 7 and result.problems == []


def test_reflexion_examples_and_episodes_run_together():
    _, result, runs = convert(fixture("alfworld", "examples.txt"))
    assert [r.step_count for r in runs] == [4, 8, 7]
    failed = runs[0]
    assert failed.end.verdict["correct"] is False and failed.end.outcome == "unfinished"
    assert counters(failed, "repeats") == [0, 1, 2, 1]
    [plan] = [r for r in failed.records[-1].raw if r.source == "reflexion reflection"]
    assert plan.data == ("New plan: I kept going to countertop 1 although the tomato was not there. I should have\n"
                         "opened the fridge 1 first.")
    # A prompt puts two episodes one after the other: the second room is not the first's observation.
    assert runs[1].records[-1].observation == "You put the lemon 1 in/on the fridge 1."
    assert runs[2].info.task == "heat some tomato and put it in cabinet."
    assert runs[2].records[0].raw[0].data.startswith("You are in the middle of a room.")
    assert result.problems == []


def test_odd_commands_and_observations():
    _, _, [run] = convert(fixture("alfworld", "edge_cases.txt"))
    assert run.step_count == 5
    empty = run.records[0]
    assert empty.parse_error == "an empty command" and empty.observation_error
    assert run.records[1].observation == "Nothing happens." and run.records[1].observation_error
    assert run.records[2].observation == "You turn on the desklamp 1.\nIt is bright now."
    assert (run.records[3].tool, run.records[3].args, run.records[3].call) == ("go to", "", "go to")
    assert run.records[4].tool == "inventory" and run.records[4].observation is None
    assert run.end.outcome == "unfinished"
    assert run.records[0].raw[0].data.startswith("a line before the first room\nYou are in the middle")


def test_hostile_text_is_kept_verbatim():
    _, _, [run] = convert(fixture("alfworld", "hostile_unicode.txt"))
    assert run.info.task == "put a [link=https://evil.example/]lemon[/link] in città ✓."
    assert run.records[0].thought == "\x1b]52;c;ZWNobyBwd25lZA==\x07 [blink]now[/blink]"
    assert run.records[1].args == "[red]cabinet 1[/red]"
    assert "\x1b]8;;https://evil.example\x1b\\a link" in run.records[1].observation


def test_sniff_takes_commands_with_a_task_and_prompt_files():
    assert alfworld.sniff("Your task is to: put x.\n> go to a 1\nOn a 1.\n> look\nNothing.\n")[0]
    assert not alfworld.sniff("> quoted mail\n> more quoted mail\n")[0]
    assert alfworld.sniff('{"react_put_0": "Your task is to: put x.\\n> go to a 1\\nOn a 1."}')[0]
    assert not alfworld.sniff('[{"name": "env_0", "memory": [], "is_success": true}]')[0]
    # A chat log that quotes an ALFWorld prompt in a message is the chat's, not a prompt file.
    chat = {"messages": [{"role": "user", "content": "Your task is to: put x.\n> go to a 1\nOn a 1."},
                         {"role": "assistant", "content": "go to a 1"}]}
    assert not alfworld.sniff(json.dumps(chat))[0]
    assert [name for name, ok, _ in importers.sniff_all(json.dumps(chat)) if ok] == ["openai-chat"]
