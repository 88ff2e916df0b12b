"""OpenHands trajectories and evaluation output, from hand-written fixtures; figures
checked by hand against the fixtures."""

from __future__ import annotations

from test_import_support import convert, counters, fixture, markers, problems_text, tools_called

from agentdbg.importers import openhands


def _errors(record):
    return [(e.kind, e.message) for e in record.events if e.type == "error"]


def test_a_trajectory_of_actions_and_observations():
    name, result, runs = convert(fixture("openhands", "trajectory.json"))
    assert name == "openhands"
    run = runs[0]
    assert run.info.task == "Fix add() in /w/a.py"
    assert tools_called(run) == ["execute_bash", "execute_ipython_cell", "execute_bash", "str_replace_editor",
                                 None, "think", None]
    # The arguments as the model wrote them, from the response that made the call.
    assert run.records[0].args == {"command": "ls data"}
    assert run.records[0].thought == "I look at the data first."
    assert run.records[0].events[2].id == "t1"
    # One response, two calls: its text and its usage go with the first call only.
    assert (run.records[1].thought, run.records[2].thought) == ("Two things at once.", "")
    assert [r.step_tokens for r in run.records] == [1050, 1280, 0, 1460, 1530, 1620, 1725]
    assert counters(run, "tokens")[-1] == 8665
    # Observations answer their action by cause, whatever the order they arrive in.
    assert [r.observation for r in run.records[1:3]] == ["2", "cat: data/missing.txt: No such file or directory"]
    assert _errors(run.records[2]) == [("exception", "exit code 1")]
    assert run.records[3].args == {"command": "str_replace", "path": "/w/a.py", "old_str": "a - b", "new_str": "a + b"}
    # An error the agent got instead of running its call: a parse error with the call as written.
    parse = [e for e in run.records[4].events if e.type == "parse_error"][0]
    assert parse.message.startswith("Parameter 'command' is expected to be one of")
    assert parse.text == 'str_replace_editor {"command": "replace_all", "path": "/w/a.py"}'
    assert markers(run)[2] == markers(run)[4] == "error"
    assert counters(run, "errors") == [0, 0, 1, 0, 1, 0, 0]
    assert run.records[5].observation == "Your thought has been logged."
    assert run.end.outcome == "answered" and run.end.answer == "Fixed add() in a.py."
    assert run.end.verdict is None
    raw = [e.note for r in run.records for e in r.events if e.type == "raw"]
    assert raw == ["agent state: running", "task completed: true", "agent state: finished"]
    assert result.raw_count == 3 and result.problems == []


def test_evaluation_output_one_instance_a_line():
    _, result, runs = convert(fixture("openhands", "output.jsonl"))
    one, two = runs
    assert one.info.name == "repo__one-1" and one.info.task == "Solve repo__one-1"
    assert one.info.policy == "recorded: OpenHands CodeActAgent (openai/test-model)"
    assert [t["name"] for t in one.info.tools] == ["execute_bash", "finish"]  # the system action's
    assert tools_called(one) == ["execute_bash", None]  # a run action saved without its call
    # Usage from llm_metrics' running total: each step its difference.
    assert [r.step_tokens for r in one.records] == [540, 630]
    assert one.end.answer == "All tests pass." and one.end.message == "cost 0.0200"
    assert one.end.verdict == {"correct": True, "score": 1.0, "expected": None, "grader": "resolved"}
    assert one.records[0].guards.steps == [1, 3]  # max_iterations
    raw = [e.source for r in one.records for e in r.events if e.type == "raw"]
    assert raw == ["openhands system prompt", "openhands recall", "openhands recall", "openhands test_result"]
    # Stopped at the iteration limit, each command timing out.
    assert tools_called(two) == ["run", "run", "run"]
    assert [_errors(r)[0][0] for r in two.records] == ["timeout"] * 3
    assert counters(two, "repeats") == [1, 2, 3]
    assert two.end.outcome == "budget exhausted" and two.end.guard == "max_steps"
    assert two.end.message.startswith("RuntimeError: Agent reached maximum iteration")
    assert two.end.message.endswith("; cost 0.5000")
    assert counters(two, "tokens") == [0, 0, 3120]  # the run total only
    assert two.end.verdict["correct"] is False
    assert result.raw_count == 5 and result.problems == []


def test_a_lost_reply_a_stray_reply_bad_arguments_and_a_shared_call_id():
    _, result, runs = convert(fixture("openhands", "edges.json"))
    run = runs[0]
    assert tools_called(run) == [None, "execute_bash", "execute_bash", "run"]
    parse = [e for e in run.records[0].events if e.type == "parse_error"][0]
    assert parse.message.startswith("tool call 'execute_bash': arguments are not valid JSON")
    assert run.records[0].observation == "a.py" and markers(run)[0] == "error"
    assert [r.observation for r in run.records[1:]] == ["/w", None, None]
    assert [r.step_tokens for r in run.records] == [15, 25, 0, 0]
    assert run.end.outcome == "unfinished"
    text = problems_text(result)
    assert "answers action 99, which the run does not have" in text
    assert "event 8 is not an object" in text
    assert result.raw_count == 2


def test_a_trajectory_with_no_agent_turn_keeps_its_task():
    _, _, runs = convert(fixture("openhands", "edge_empty.json"))
    assert runs[0].step_count == 0 and runs[0].info.task == "Anything?" and runs[0].end.outcome == "empty"


def test_hostile_and_non_ascii_text_is_kept_verbatim():
    _, _, runs = convert(fixture("openhands", "hostile_unicode.json"))
    run = runs[0]
    assert run.info.task.endswith("\x1b[31mlis-le\x1b[0m \u2014 \u03c8 \u4e2d\u6587 \U0001f600")
    assert run.records[0].tool == "fetch[/]" and run.records[0].events[2].id == "x\x1b[1m"
    assert run.records[0].args["command"] == "[link=file:///etc/passwd]u[/link] \x1b]52;c;ZXZpbA==\x07"
    assert run.end.answer == "[/][bold]Fini[/bold] \x1b[5m!\x1b[0m \u00e9\u00e8"


def test_sniff():
    assert openhands.sniff(fixture("openhands", "trajectory.json").read_text()[:2000])[0]
    assert openhands.sniff(fixture("openhands", "output.jsonl").read_text()[:3000])[0]
    ok, reason = openhands.sniff('[{"id": 1, "source": "browser", "action": "run"}]')
    assert not ok and "source" in reason
