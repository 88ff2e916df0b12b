"""SWE-agent trajectories, from hand-written fixtures."""

from __future__ import annotations

from test_import_support import convert, counters, fixture, markers, problems_text, tools_called

from agentdbg.importers import swe_agent


def test_trajectory_steps_tools_outcome_and_usage():
    name, result, runs = convert(fixture("swe-agent", "fix_typo.traj"))
    assert name == "swe-agent"
    run = runs[0]
    assert run.info.task == "The greeting says Helo"  # the issue, out of the instance template
    assert run.info.name == "greet-typo-1"
    assert "gpt-4o-mini" in run.info.policy
    assert [t["name"] for t in run.info.tools] == ["bash", "find_file", "edit", "submit"]
    assert run.info.tools[1]["params"] == {"file_name": "str", "dir": "str"}
    assert run.step_count == 4
    # The history holds the same calls in function-calling form: its tools, arguments, ids.
    assert tools_called(run) == ["find_file", "edit", "bash", "submit"]
    assert run.records[2].args == {"command": "python3 -c 'from src.greet import greet; greet()'"}
    assert run.records[2].call == "python3 -c 'from src.greet import greet; greet()'"
    assert run.records[3].args == ""  # no function call recorded: the command line's words
    assert run.records[0].events[2].id == "call_find_1"
    assert run.end.outcome == "submitted"
    assert run.end.answer.startswith("diff --git a/src/greet.py")
    # A run total only: on the last step's running count, nothing invented per step.
    assert counters(run, "tokens") == [0, 0, 0, 4380]
    assert all(r.step_tokens == 0 for r in run.records)
    assert "4200 tokens sent" in run.end.message and "4 API calls" in run.end.message
    assert result.raw_count == 1 and result.problems == []  # the history's system prompt, whole


def test_history_only_is_read_as_function_calls():
    _, result, runs = convert(fixture("swe-agent", "history_only.traj"))
    run = runs[0]
    assert run.info.task == "add() returns the difference"
    assert tools_called(run) == ["open", "edit", "submit"]
    assert run.records[1].args == {"search": "a - b", "replace": "a + b"}
    assert run.end.outcome == "submitted"
    assert run.end.answer.startswith("diff --git a/calc.py")
    assert result.raw_count == 1  # the system prompt


def test_an_empty_trajectory_keeps_its_exit_status():
    _, _, runs = convert(fixture("swe-agent", "edge_empty.traj"))
    assert runs[0].step_count == 0
    assert runs[0].end.outcome == "exit_cost"


def test_missing_action_missing_observation_and_a_repeated_command():
    _, _, runs = convert(fixture("swe-agent", "edge_unfinished.traj"))
    run = runs[0]
    assert tools_called(run) == ["ls", None, "ls", "cat"]
    assert run.records[1].parse_error == "the step has no action"
    assert run.records[1].output == "I think I will just wait here."
    assert counters(run, "repeats") == [1, 1, 2, 1]  # an unreadable output counts too
    assert markers(run) == ["", "error", "repeat", ""]
    assert run.records[3].observation is None
    assert run.end.outcome == "unfinished"


def test_history_with_invalid_arguments_duplicate_ids_and_a_stray_reply():
    _, result, runs = convert(fixture("swe-agent", "history_edges.traj"))
    run = runs[0]
    assert run.step_count == 3
    assert run.records[0].parse_error is not None and "not valid JSON" in run.records[0].parse_error
    assert run.records[0].observation == "bash: syntax error: unexpected end of file"
    assert run.records[1].observation == "1 failed, 3 passed"  # the second call with that id
    assert run.records[2].observation is None
    assert run.end.outcome == "unfinished"
    assert result.raw_count == 1
    assert "call_dup" in problems_text(result) and "call_ghost" in problems_text(result)


def test_hostile_and_non_ascii_text_is_kept():
    _, _, runs = convert(fixture("swe-agent", "hostile_unicode.traj"))
    run = runs[0]
    assert run.records[0].call == "echo '[bold]hi[/bold]'"
    assert "\x1b]52;c;cGF5bG9hZA==\x07" in run.records[0].observation
    assert run.records[1].thought == "提交 🚀"
    assert run.end.answer == "diff — ✓ [red]x[/red]"


def test_command_docs_become_tool_specs():
    docs = "goto:\n  docstring: moves the window\n  signature: goto <line>\n  arguments:\n" \
           "    - line (integer) [required]: the line\n\nsubmit:\n  docstring: submits\n"
    assert swe_agent.tools_from_docs(docs) == [
        {"name": "goto", "description": "moves the window", "params": {"line": "int"}, "dangerous": False},
        {"name": "submit", "description": "submits", "params": {}, "dangerous": False},
    ]


def test_sniff():
    assert swe_agent.sniff('{"environment": "x", "trajectory": [')[0]
    assert swe_agent.sniff('{"history": [{"role": "system"')[0]
    ok, why = swe_agent.sniff('[{"role": "user"}]')
    assert not ok and "object" in why


def test_history_with_an_exit_status_keeps_it():
    text = ('{"history": [{"role": "user", "content": "ISSUE:\\nx\\n\\nINSTRUCTIONS:\\ny"},'
            ' {"role": "assistant", "content": "t", "tool_calls": [{"id": "a", "function": {"name": "submit", "arguments": "{}"}}]},'
            ' {"role": "tool", "content": "diff", "tool_call_ids": ["a"]}],'
            ' "info": {"exit_status": "exit_format", "submission": "patch"}}')
    events = swe_agent.convert(text, "pasted.traj").runs[0]
    assert (events[-1].outcome, events[-1].answer) == ("exit_format", "patch")
    assert events[0].task == "x"


def test_the_demonstration_is_not_the_task_and_its_calls_are_not_steps():
    _, result, runs = convert(fixture("swe-agent", "history_demo.traj"))
    run = runs[0]
    # The demonstration comes first in the history; the issue is the first message that is not one.
    assert run.info.task == "mul() returns the sum"
    assert tools_called(run) == ["open", "submit"]
    assert run.records[0].observation == "1:def mul(a, b):\n2:    return a + b"
    raw = [e for e in run.records[0].events if e.type == "raw"]
    assert [e.source for e in raw] == ["swe-agent system message"] + ["swe-agent demonstration"] * 3
    assert raw[1].data["content"].startswith("Here is a demonstration")
    assert raw[2].note == "demonstration assistant message: Let me reproduce the demo bug."
    assert result.raw_count == 4 and result.problems == []
    assert run.end.outcome == "submitted" and run.end.answer.endswith("+    return a * b\n")
