"""tau-bench results, from hand-written fixtures; figures checked by hand against them."""

from __future__ import annotations

from test_import_support import convert, counters, fixture, markers, problems_text, tools_called

from agentdbg.importers import tau_bench


def test_each_record_is_a_run_with_its_reward_as_the_verdict():
    name, result, runs = convert(fixture("tau-bench", "results.json"))
    assert name == "tau-bench"
    won, lost = runs
    assert [won.info.name, lost.info.name] == ["task 0 trial 0", "task 0 trial 1"]
    assert won.info.task == "Hi! I want to book a flight from JFK to Seattle."
    # A question to the user is a text step; two calls in one turn are two steps.
    assert tools_called(won) == [None, "get_user_details", "search_direct_flight", "think",
                                 "book_reservation", "book_reservation", None]
    assert won.records[0].thought == "Sure. What is your user id?"
    assert won.records[2].args == {"origin": "JFK", "destination": "SEA", "date": "2024-05-20"}
    assert won.records[2].observation == "[]"
    # A tool's "Error: ..." reply is an error observation.
    assert won.records[4].observation == "Error: payment method not found"
    assert markers(won)[4] == "error" and counters(won, "errors") == [0, 0, 0, 0, 1, 0, 0]
    assert won.end.outcome == "answered" and won.end.answer == "Your flight is booked: reservation HATHAT."
    assert won.end.message == "the user ended the conversation with ###STOP###"
    assert won.end.verdict == {"correct": True, "score": 1.0, "expected": None, "grader": "reward"}
    # The simulated user's later turns and the grading details are kept raw.
    raw = [e for r in won.records for e in r.events if e.type == "raw"]
    assert [e.source for e in raw] == ["tau-bench system", "tau-bench user", "tau-bench user", "tau-bench info"]
    assert raw[-1].data["task"]["instruction"] == "You are mia_li_3668. You want to fly from JFK to SEA."
    assert counters(won, "tokens") == [0] * 7  # tau-bench records no usage
    # An id used by two calls in turn: each reply goes to the call waiting for it.
    assert [r.observation for r in lost.records[:2]] == ['{"name": "Mia Li"}', "23553.0"]
    assert lost.end.outcome == "unfinished"
    assert lost.end.message == "the user ended the conversation with ###TRANSFER###"
    assert lost.end.verdict == {"correct": False, "score": 0.0, "expected": "23553; HATHAT", "grader": "reward"}
    assert "tool call id 'call_same' is used by more than one call" in problems_text(result)
    assert result.raw_count == 7


def test_invalid_arguments_stray_and_missing_replies_and_damaged_records():
    _, result, runs = convert(fixture("tau-bench", "edges.json"))
    run, broken = runs
    assert tools_called(run) == [None, "calculate", "calculate", "get_user_details"]
    parse = [e for e in run.records[0].events if e.type == "parse_error"][0]
    assert parse.message.startswith("tool call 'calculate': arguments are not valid JSON")
    assert run.records[0].observation == "Error: invalid arguments"
    assert [r.observation for r in run.records[1:]] == ["2", "4", None]
    assert run.end.outcome == "unfinished"
    assert run.end.verdict is None  # a reward that is not a number
    assert broken.step_count == 0 and broken.info.name == "task 8"
    assert broken.end.verdict == {"correct": False, "score": 0.5, "expected": None, "grader": "reward"}
    text = problems_text(result)
    assert "a reply to tool call 'ghost', which no call in the run has" in text
    assert "task 7 trial 0: message 8 is not an object" in text
    assert "task 8: 'traj' is not a list of messages" in text


def test_a_conversation_with_no_agent_turn():
    _, _, runs = convert(fixture("tau-bench", "edge_empty.json"))
    assert runs[0].step_count == 0 and runs[0].info.task == "Hello?"
    assert runs[0].end.outcome == "empty" and runs[0].end.verdict["correct"] is False


def test_hostile_and_non_ascii_text_is_kept_verbatim():
    _, _, runs = convert(fixture("tau-bench", "hostile_unicode.json"))
    run = runs[0]
    assert run.info.name == "task h\x1b[2J trial 0"
    assert run.info.task.endswith("\u2014 \u03c8 \u4e2d\u6587 \U0001f600")
    assert run.records[0].args["esc"] == "\x1b]52;c;ZXZpbA==\x07"
    assert run.end.verdict["expected"] == "[red]ok[/red] \x1b[31m"


def test_sniff():
    assert tau_bench.sniff(fixture("tau-bench", "results.json").read_text()[:500])[0]
    assert not tau_bench.sniff('[{"task_id": 1, "reward": 1}]')[0]  # no traj or info.task
    assert not tau_bench.sniff('{"task_id": 1, "reward": 1, "traj": []}')[0]
