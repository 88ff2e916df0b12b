"""mini-swe-agent trajectories, from hand-written fixtures (toolcall_v2.traj.json was
saved by mini-swe-agent 2.4.6 itself, with its scripted tool-calling model); figures
checked by hand against them."""

from __future__ import annotations

import pytest
from test_import_support import convert, counters, fixture, markers, problems_text, tools_called

from agentdbg import importers
from agentdbg.importers import mini_swe_agent


def _errors(record):
    return [(e.kind, e.message) for e in record.events if e.type == "error"]


def test_a_text_based_run_bash_blocks_observations_and_format_errors():
    name, result, runs = convert(fixture("mini-swe-agent", "v1_run.traj.json"))
    assert name == "mini-swe-agent"
    run = runs[0]
    assert run.info.name == "calc__calc-1"
    assert run.info.task == "add() returns the difference"  # out of SWE-bench's instance template
    assert run.info.policy == "recorded: mini-swe-agent 1.15.0 (openrouter/google/gemini-3-pro-preview)"
    assert tools_called(run) == ["bash", None, "bash", "bash", "bash"]
    # The provider's reasoning, then the text before the block.
    assert run.records[0].thought == "The bug is probably in calc.py.\nTHOUGHT: I look at the file."
    assert run.records[0].args == {"command": "cat calc.py"}
    assert run.records[0].observation.startswith("<returncode>0</returncode>")
    parse = [e for e in run.records[1].events if e.type == "parse_error"][0]
    assert parse.message == "the reply has 2 bash code blocks, not one"
    assert run.records[1].observation.startswith("Please always provide EXACTLY ONE action")
    assert _errors(run.records[2]) == [("exception", "exit code 1")]
    assert _errors(run.records[3])[0][0] == "timeout"
    assert markers(run)[1:4] == ["error", "error", "error"]
    assert counters(run, "errors") == [0, 1, 2, 3, 0]
    # The submit command's output is the submission.
    assert run.records[4].observation == run.end.answer
    assert [r.step_tokens for r in run.records] == [1000, 1100, 1200, 1300, 1400]
    assert run.end.outcome == "Submitted"
    assert run.end.message == "model stats: cost 0.0421, 6 API calls"
    assert run.end.verdict is None
    assert result.raw_count == 1 and result.problems == []  # the system prompt


def test_a_tool_calling_run_saved_by_mini_swe_agent_2():
    _, result, runs = convert(fixture("mini-swe-agent", "toolcall_v2.traj.json"))
    run = runs[0]
    assert run.info.policy == "recorded: mini-swe-agent 2.4.6 (deterministic_toolcall)"
    assert [r.args for r in run.records] == [{"command": "ls -la"}, {"command": "cat notes.txt"},
                                             {"command": "cat config.ini"},
                                             {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat notes.txt"}]
    # Two parallel calls, the second failing (returncode 1).
    assert run.records[1].thought == "There is notes.txt; I read it and also look for a config file."
    assert run.records[2].thought == ""
    assert _errors(run.records[2]) == [("exception", "exit code 1")]
    assert run.records[3].observation is None  # the submit call is answered by the exit message
    assert run.end.outcome == "Submitted" and run.end.answer == "copies owned: 5\ncopies on loan: 3\n"
    raw = [e.source for r in run.records for e in r.events if e.type == "raw"]
    assert raw == ["mini-swe-agent system", "mini-swe-agent exit"]
    assert result.problems == []


def test_bad_arguments_stray_replies_shared_ids_and_an_exception():
    _, result, runs = convert(fixture("mini-swe-agent", "edges_v2.traj.json"))
    run = runs[0]
    assert tools_called(run) == [None, "bash", "bash", "bash"]
    parse = [e for e in run.records[0].events if e.type == "parse_error"][0]
    assert parse.message.startswith("tool call 'bash': arguments are not valid JSON")
    assert [r.observation is not None for r in run.records] == [True, True, True, False]
    assert _errors(run.records[2]) == [("timeout", "TimeoutExpired: Command 'id' timed out after 60 seconds")]
    assert run.end.outcome == "LimitsExceeded" and run.end.answer is None
    text = problems_text(result)
    assert "a reply to tool call 'ghost', which no call in the run has" in text
    assert "tool call id 'd' is used by more than one call" in text
    assert "message 9 is not an object" in text


def test_a_run_that_failed_before_its_first_step():
    _, _, runs = convert(fixture("mini-swe-agent", "edge_empty.traj.json"))
    assert runs[0].step_count == 0 and runs[0].end.outcome == "RuntimeError"
    assert runs[0].info.task == "Please solve this issue: nothing to do."


def test_hostile_and_non_ascii_text_is_kept_verbatim():
    _, _, runs = convert(fixture("mini-swe-agent", "hostile_unicode.traj.json"))
    run = runs[0]
    assert run.info.task.endswith("\u2014 \u03c8 \u4e2d\u6587 \U0001f600")
    assert run.records[0].args == {"command": "curl '[link=file:///etc/passwd]u[/link]' \x1b]52;c;ZXZpbA==\x07"}
    assert run.records[0].thought == "[red]Fetching[/red] \x1b]8;;https://evil.example\x1b\\here\x1b]8;;\x1b\\"
    assert run.end.answer == "[/][bold]Fini[/bold] \x1b[5m!\x1b[0m \u00e9\u00e8"


@pytest.mark.parametrize(("text", "commands"), [
    ("a\n```bash\nls\n```", ["ls"]),
    ("```mswea_bash_command\necho hi\n```", ["echo hi"]),
    ("```bash\nls\n```\n```bash\npwd\n```", ["ls", "pwd"]),
    ("```bashrc\nx\n```", []),
    ("```bash ls```", []),
    ("```bash\nnever closed", []),
    ("no block", []),
])
def test_fenced_commands(text, commands):
    assert mini_swe_agent.fenced_commands(text) == commands


def test_returncode():
    assert mini_swe_agent.returncode("<returncode>0</returncode>\n<output>") == 0
    assert mini_swe_agent.returncode("  <returncode>-9</returncode>") == -9
    assert mini_swe_agent.returncode("<returncode>x</returncode>") is None
    assert mini_swe_agent.returncode("output <returncode>1</returncode>") is None


def test_a_long_reply_is_scanned_in_linear_time():
    for text in ("```bash" * 200_000, "```bash x" * 200_000 + "\n", "```bash\n" + "```mswea" * 200_000):
        mini_swe_agent.fenced_commands(text)  # each fence looked at once, not the rest of the text each time


def test_sniff_and_openai_chat_no_longer_takes_it():
    head = fixture("mini-swe-agent", "v1_run.traj.json").read_bytes()[:2000]
    assert [name for name, ok, _ in importers.sniff_all(head) if ok] == ["mini-swe-agent"]
    assert mini_swe_agent.sniff('{"messages": [], "info": {"mini_version": "1.0"}}')[0]
    assert not mini_swe_agent.sniff('{"messages": [{"role": "user"}]}')[0]
