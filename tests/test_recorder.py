"""agentdbg.record: what a loop records, how a run ends, what the file holds at every moment."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import agentdbg
from agentdbg.engine import events as ev
from agentdbg.recorder import RunEnded, usage_tokens
from agentdbg.trace.format import event_line
from agentdbg.trace.reader import open_trace
from agentdbg.trace.writer import TraceBusyError, TraceExistsError

ROOT = Path(__file__).resolve().parents[1]


def search(query: str, limit: int = 3) -> str:
    """Search the catalogue.

    Returns matching titles."""
    if query == "boom":
        raise RuntimeError("index offline")
    return f"{limit} results for {query}"


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()[1:]]


def types(path: Path) -> list[str]:
    return [line["type"] for line in lines(path)]


def run_of(path: Path, number: int = 1):
    document = open_trace(path)
    document.wait()
    return document, document.runs[number - 1]


def test_import_agentdbg_stays_cheap_and_the_recorder_loads_no_ui():
    code = ("import sys, agentdbg\n"
            "before = sorted(m for m in sys.modules if m.startswith('agentdbg'))\n"
            "agentdbg.record\n"
            "ui = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))\n"
            "print(before, ui)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['agentdbg'] []"


def test_run_start_lists_the_functions_as_tools_from_their_hints(tmp_path):
    with agentdbg.record(tmp_path / "run.jsonl", task="find it", tools=[search], max_steps=5, repeat="any",
                         name="mine") as rec:
        rec.answer("nothing to do")
    start = lines(tmp_path / "run.jsonl")[0]
    assert start["type"] == "run_start" and start["task"] == "find it" and start["name"] == "mine"
    assert start["tools"] == [{"name": "search", "description": "Search the catalogue.",
                               "params": {"query": "str", "limit": "int"}, "dangerous": False,
                               "optional": ["limit"]}]
    assert start["guards"]["max_steps"] == 5 and start["guards"]["repeat"] == {"mode": "any", "threshold": 2}


def test_a_tool_run_by_the_loop_itself_is_recorded_with_its_result_or_failure(tmp_path):
    path = tmp_path / "run.jsonl"
    with agentdbg.record(path, task="t", tools=[search]) as rec:
        step = rec.action("search", {"query": "gattopardo"}, thought="look it up", tokens=(100, 20), id="c1")
        assert step.waiting and step.number == 1
        # the action is on disk before the tool runs: a tool that kills the process leaves it
        assert types(path)[-1] == "action"
        step.observe(search("gattopardo"))
        assert not step.waiting and step.counters.tokens == [120, None]
        failing = rec.action("search", {"query": "boom"}, tokens=7)
        try:
            search("boom")
        except RuntimeError as exc:
            failing.fail(exc)
        timed_out = rec.action("search", {"query": "slow"})
        timed_out.fail("search took longer than 5s", kind="timeout")
        rec.answer("3 results", thought="done", tokens=5)
    records = lines(path)
    assert [r["type"] for r in records] == [
        "run_start", "step", "thought", "action", "observation", "guards",
        "step", "action", "error", "observation", "guards",
        "step", "action", "error", "observation", "guards",
        "step", "thought", "final_answer", "guards", "run_end"]
    assert records[3] == {"type": "action", "step": 1, "tool": "search", "args": {"query": "gattopardo"},
                          "call": "search({'query': 'gattopardo'})", "id": "c1"}
    assert records[4]["text"] == "3 results for gattopardo"
    assert records[8] == {"type": "error", "step": 2, "kind": "exception", "message": "RuntimeError: index offline",
                          "tool": "search"}
    assert records[9] == {"type": "observation", "step": 2, "text": "ERROR: RuntimeError: index offline", "error": True}
    assert records[13]["kind"] == "timeout"
    assert records[15]["errors"] == [2, None] and records[19]["errors"] == [2, None]
    assert records[19]["tokens"] == [132, None] and records[19]["step_tokens"] == 5
    assert records[-1] == {"type": "run_end", "step": 4, "outcome": "answered", "answer": "3 results", "steps": 4}


def test_call_runs_the_tool_through_the_registry(tmp_path):
    with agentdbg.record(tmp_path / "run.jsonl", task="t", tools=[search]) as rec:
        ok = rec.call(search, {"query": "x"})  # the function itself, or its name
        assert (ok.observation, ok.value, ok.error) == ("3 results for x", "3 results for x", None)
        raised = rec.call("search", {"query": "boom"})
        assert raised.error.kind == "exception" and raised.observation == "ERROR: RuntimeError: index offline"
        bad = rec.call("search", {"query": "x", "limit": True})
        assert bad.error.kind == "bad_args" and "argument 'limit' should be int, got bool" in bad.observation
        invented = rec.call("web_search", {"q": "x"})
        assert invented.error.kind == "unknown_tool" and "available: ['search']" in invented.observation
        positional = rec.call("search", "gattopardo")  # one string: the one required parameter
        assert positional.observation == "3 results for gattopardo" and positional.call == "search[gattopardo]"
        json_text = rec.call("search", '{"query": "y", "limit": 1}')  # as a model API writes arguments
        assert json_text.observation == "1 results for y"
        unreadable = rec.call("search", '{"query": ')
        assert unreadable.parse_error.startswith("tool call 'search': arguments are not valid JSON")
        assert unreadable.observation == f"ERROR: {unreadable.parse_error}"
        with pytest.raises(ValueError, match="not one of this run's tools"):
            rec.call(len, {})
        assert rec.step_count == 7


def test_a_guard_trip_ends_the_run_before_the_action_runs_and_the_block_absorbs_it(tmp_path):
    ran = []

    def lookup(title: str) -> str:
        ran.append(title)
        return "5"

    path = tmp_path / "run.jsonl"
    after = []
    with agentdbg.record(path, task="t", tools=[lookup], repeat="any") as rec:
        while True:  # a loop that never looks at should_stop
            rec.call("lookup", {"title": "x"})
            after.append(rec.step_count)
    assert ran == ["x"]  # the repeated call was not run
    assert after == [1]
    assert rec.should_stop and rec.outcome.status == "action repeated"
    assert rec.stop_reason == "action repeated again: lookup({'title': 'x'})"
    assert types(path)[-3:] == ["guards", "guard_tripped", "run_end"]
    with pytest.raises(RunEnded) as raised:
        rec.answer("late")
    assert raised.value.outcome is rec.outcome and "action repeated" in str(raised.value)


def test_run_ended_is_not_swallowed_by_except_exception(tmp_path):
    with agentdbg.record(tmp_path / "run.jsonl", task="t", max_steps=1) as rec:
        for _ in range(3):
            try:
                rec.action("lookup", {"title": "x"}).observe("5")
            except Exception:  # a loop's broad handler around its tools
                pass
    assert rec.outcome.status == "budget exhausted" and rec.step_count == 1


def test_token_budget_refuses_the_answer_that_crosses_it(tmp_path):
    path = tmp_path / "run.jsonl"
    with agentdbg.record(path, task="t", token_budget=100) as rec:
        rec.action("lookup", "x", tokens=60).observe("5")
        rec.answer("5", tokens={"prompt_tokens": 40, "completion_tokens": 10})
        pytest.fail("the answer over the budget is not accepted")
    assert rec.outcome.status == "token budget exhausted" and rec.outcome.answer is None
    assert "final_answer" not in types(path)
    assert lines(path)[-3]["tokens"] == [110, 100]


def test_an_exception_escaping_the_block_ends_the_run_saying_so_and_is_raised(tmp_path):
    path = tmp_path / "run.jsonl"
    with pytest.raises(KeyError, match="choices"):
        with agentdbg.record(path, task="t") as rec:
            rec.action("lookup", "x").observe("5")
            raise KeyError("choices")  # e.g. the model's reply was not what the loop expected
    records = lines(path)
    assert [r["type"] for r in records[-4:]] == ["step", "error", "guards", "run_end"]
    assert records[-3] == {"type": "error", "step": 2, "kind": "exception", "message": "KeyError: 'choices'"}
    assert records[-1] == {"type": "run_end", "step": 2, "outcome": "exception", "steps": 2,
                           "message": "KeyError: 'choices'"}
    assert rec.outcome.status == "exception"


def test_an_exception_while_a_tool_runs_goes_on_that_step(tmp_path):
    path = tmp_path / "run.jsonl"
    with pytest.raises(ZeroDivisionError):
        with agentdbg.record(path, task="t") as rec:
            step = rec.action("divide", {"a": 1, "b": 0})
            step.observe(1 / 0)
    records = lines(path)
    assert records[-3] == {"type": "error", "step": 1, "kind": "exception",
                           "message": "ZeroDivisionError: division by zero", "tool": "divide"}
    assert records[-1]["outcome"] == "exception" and records[-1]["steps"] == 1


def test_ctrl_c_ends_the_run_as_interrupted(tmp_path):
    path = tmp_path / "run.jsonl"
    with pytest.raises(KeyboardInterrupt):
        with agentdbg.record(path, task="t") as rec:
            rec.action("lookup", "x")
            raise KeyboardInterrupt
    records = lines(path)
    assert records[-2]["type"] == "guards" and "observation" not in types(path)
    assert records[-1] == {"type": "run_end", "step": 1, "outcome": "interrupted", "steps": 1,
                           "message": "KeyboardInterrupt"}


def test_a_loop_that_stops_without_an_answer_is_unfinished(tmp_path):
    with agentdbg.record(tmp_path / "run.jsonl", task="t") as rec:
        rec.action("lookup", "x").observe("5")
    assert rec.outcome.status == "unfinished"
    assert lines(tmp_path / "run.jsonl")[-1]["message"] == "the loop stopped without a final answer"
    with agentdbg.record(tmp_path / "run.jsonl", task="t") as rec:
        rec.end("gave up", message="no source answers this")
    assert lines(tmp_path / "run.jsonl")[-1] == {"type": "run_end", "step": 0, "outcome": "gave up",
                                                 "message": "no source answers this"}


def test_several_tool_calls_in_one_turn_are_steps_in_order_whatever_order_results_come(tmp_path):
    path = tmp_path / "run.jsonl"
    with agentdbg.record(path, task="t", tools=[search]) as rec:
        first, second, third = rec.actions([("search", {"query": "a"}, "c1"), ("search", {"query": "b"}, "c2"),
                                            ("search", {"query": "c"}, "c3")],
                                           thought="three at once", tokens=90)
        assert (first.number, second.number, third.number) == (1, None, None)
        rec.observe("result c", id="c3")
        rec.observe("result b", id="c2")
        assert types(path)[-1] == "action"  # step 1 still waits: nothing after it is written
        rec.call(id="c1")  # run through the registry, for the step already recorded
        assert (second.number, third.number) == (2, 3)
        rec.answer("done")
    records = lines(path)
    steps = [[r for r in records if r["step"] == n] for n in (1, 2, 3)]
    assert [s[1]["type"] for s in steps] == ["thought", "action", "action"]
    assert [next(r["text"] for r in s if r["type"] == "observation") for s in steps] == [
        "3 results for a", "result b", "result c"]
    assert [s[-1].get("step_tokens", 0) for s in steps] == [90, 0, 0]


def test_a_new_model_turn_writes_calls_left_without_results(tmp_path):
    path = tmp_path / "run.jsonl"
    with agentdbg.record(path, task="t") as rec:
        forgotten = rec.action("lookup", "x")
        rec.action("lookup", "y").observe("5")
        with pytest.raises(ValueError, match="written without an observation"):
            forgotten.observe("late")
        with pytest.raises(ValueError, match="no step is waiting"):
            rec.observe("nobody asked")
    assert [r["type"] for r in lines(path) if r["step"] == 1] == ["step", "action", "guards"]


def test_a_reply_is_the_answer_when_the_run_ends_next_and_a_thought_when_it_goes_on(tmp_path):
    path = tmp_path / "run.jsonl"
    with agentdbg.record(path, task="t") as rec:
        rec.reply("Let me think about which tool to use.", tokens=10)
        rec.action("lookup", "x", tokens=5).observe("5")
        rec.reply("There are 5.", tokens=7)
    records = lines(path)
    assert [(r["type"], r.get("text") or r.get("answer")) for r in records if r["type"] in ("thought", "final_answer")] == [
        ("thought", "Let me think about which tool to use."), ("final_answer", "There are 5.")]
    assert rec.outcome.status == "answered" and rec.outcome.answer == "There are 5."
    assert records[-2]["tokens"] == [22, None]


def test_on_step_written_sees_each_step_complete_on_disk(tmp_path):
    path = tmp_path / "run.jsonl"
    seen = []

    def on_step_written(step):
        on_disk = lines(path)
        seen.append((step.number, on_disk[-1]["type"], on_disk[-1]["step"]))

    with agentdbg.record(path, task="t", on_step_written=on_step_written, max_consecutive_errors=2) as rec:
        rec.action("lookup", "x").observe("5")
        rec.answer("5")
    with agentdbg.record(path, task="t", on_step_written=on_step_written, max_consecutive_errors=2) as rec:
        rec.action("lookup", "x").fail("no", kind="bad_args")
        rec.action("lookup", "y").fail("no", kind="bad_args")
    assert seen == [(1, "guards", 1), (2, "run_end", 2), (1, "guards", 1), (2, "run_end", 2)]


def test_several_runs_go_to_one_file_and_a_second_writer_is_refused(tmp_path):
    path = tmp_path / "runs.jsonl"
    for task in ("first", "second"):
        with agentdbg.record(path, task=task) as rec:
            rec.answer(task.upper())
            with pytest.raises(TraceBusyError):
                agentdbg.record(path, task="meanwhile")
    document, _ = run_of(path)
    assert [run.info.task for run in document.runs] == ["first", "second"]
    assert [run.end.answer for run in document.runs] == ["FIRST", "SECOND"]
    document.close()
    with pytest.raises(TraceExistsError):
        agentdbg.record(path, task="t", mode="create")
    (tmp_path / "notes.txt").write_text("my notes\n")
    with pytest.raises(ValueError, match="not an agentdbg trace"):
        agentdbg.record(tmp_path / "notes.txt", task="t")
    assert (tmp_path / "notes.txt").read_text() == "my notes\n"


def test_checkpoints_are_written_as_by_agentdbg_record(tmp_path):
    path = tmp_path / "long.jsonl"
    with agentdbg.record(path, task="t", checkpoint_every=10) as rec:
        for n in range(35):
            rec.action("lookup", str(n % 7), tokens=3).observe(str(n))
    checkpoints = [r for r in lines(path) if r["type"] == "checkpoint"]
    assert [c["step"] for c in checkpoints] == [10, 20, 30]
    document, run = run_of(path)
    assert checkpoints[-1]["state"]["repeats"] == [run.record(30).guards.repeats[0], None]
    assert run.state_at(33).tokens == [99, None] and not document.problems
    document.close()


def test_a_killed_loop_leaves_a_trace_with_every_step_written(tmp_path):
    path = tmp_path / "killed.jsonl"
    script = textwrap.dedent(f"""
        import os, signal, agentdbg
        def kill(step):
            if step.number == 3:
                os.kill(os.getpid(), signal.SIGKILL)
        with agentdbg.record({str(path)!r}, task="t", on_step_written=kill) as rec:
            for n in range(10):
                rec.action("lookup", str(n), tokens=2).observe("ok")
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True)
    assert done.returncode == -signal.SIGKILL
    document, run = run_of(path)
    assert run.step_count == 3 and run.end is None and not document.problems
    assert run.state_at(3).tokens == [6, None]
    document.close()


def test_arguments_and_usage_are_checked_where_they_are_given(tmp_path):
    with agentdbg.record(tmp_path / "run.jsonl", task="t") as rec:
        with pytest.raises(TypeError, match="args should be an object or text"):
            rec.action("lookup", object())
        with pytest.raises(TypeError, match="tokens should be a count"):
            rec.action("lookup", "x", tokens="many")
        with pytest.raises(ValueError, match="0 or more"):
            rec.answer("x", tokens=-1)
        with pytest.raises(ValueError, match="kind should be one of"):
            rec.action("lookup", "x").fail("x", kind="oops")
    with pytest.raises(ValueError, match="repeat should be one of"):
        agentdbg.record(tmp_path / "other.jsonl", repeat="sometimes")
    with pytest.raises(TypeError, match="max_steps should be a whole number"):
        agentdbg.record(tmp_path / "other.jsonl", max_steps="5")
    assert not (tmp_path / "other.jsonl").exists()  # refused before the file is made


def test_usage_tokens_reads_the_shapes_loops_have():
    class OpenAIUsage:
        prompt_tokens, completion_tokens, total_tokens = 100, 20, 120

    class AnthropicUsage:
        input_tokens, output_tokens, cache_read_input_tokens, cache_creation_input_tokens = 10, 5, 80, None

    assert usage_tokens(None) == 0 and usage_tokens(7) == 7 and usage_tokens((3, 4)) == 7
    assert usage_tokens(OpenAIUsage()) == 120 and usage_tokens(AnthropicUsage()) == 95
    assert usage_tokens({"prompt_tokens": 5, "completion_tokens": 6}) == 11
    with pytest.raises(TypeError):
        usage_tokens(True)
    with pytest.raises(TypeError):
        usage_tokens({"words": 3})


def test_a_recorded_trace_is_valid_event_by_event(tmp_path):
    path = tmp_path / "run.jsonl"
    with agentdbg.record(path, task="t", tools=[search]) as rec:
        rec.call("search", {"query": "x"}, thought="Thought with \x1b[31m escapes")
        rec.answer("done")
    for record in lines(path):
        event = ev.event_from_dict(record)
        assert json.loads(event_line(event)) == record
