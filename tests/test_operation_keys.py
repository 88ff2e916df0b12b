"""Operation keys: a keyed call runs at most once per key in a trace. A retry in the same
run, a re-run appended to the trace, and a run after a crash between the side effect and
its record all leave the side effect done exactly once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentdbg.cli import main
from agentdbg.engine import (
    Decision,
    OperationJournal,
    ReActAgent,
    ScriptedOutputs,
    Tool,
    ToolRegistry,
)
from agentdbg.engine import events as ev
from agentdbg.trace.journal import read_journal
from agentdbg.trace.reader import open_trace

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


def appender(path: Path, key="line", dangerous: bool = False) -> Tool:
    def append_line(line: str) -> str:
        """Append a line to the ledger."""
        with open(path, "a", encoding="utf-8") as file:
            file.write(line + "\n")
        return f"appended {line}"

    return Tool.from_function(append_line, idempotency_key=key, dangerous=dangerous)


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def call(line: str) -> str:
    return f'Action: append_line\nAction Input: {json.dumps({"line": line})}'


DONE = "Final Answer: ok"


def run(tool: Tool, outputs: list[str], journal: OperationJournal | None = None, approver=None):
    agent = ReActAgent(ScriptedOutputs(outputs, "json"), ToolRegistry([tool]), approver=approver)
    return agent.run("write the ledger", journal=journal)


def observations(trace) -> list[ev.Observation]:
    return [event for event in trace.events if isinstance(event, ev.Observation)]


# -- in one run ---------------------------------------------------------------------------


def test_a_retry_with_the_same_key_returns_the_recorded_result_without_running(tmp_path):
    ledger = tmp_path / "ledger.txt"
    trace = run(appender(ledger), [call("A-17 paid"), call("A-18 paid"), call("A-17 paid"), DONE])
    assert lines(ledger) == ["A-17 paid", "A-18 paid"]
    first, second, retry = observations(trace)
    key = 'append_line:{"line":"A-17 paid"}'
    assert (first.key, first.replayed) == (key, None)
    assert (retry.text, retry.error, retry.key, retry.replayed) == ("appended A-17 paid", False, key, {"step": 1})
    operations = [(event.step, event.key) for event in trace.events if isinstance(event, ev.Operation)]
    assert operations == [(1, key), (2, 'append_line:{"line":"A-18 paid"}')]  # none for the replay
    assert trace.steps[2].replayed == {"step": 1}


def test_a_recorded_error_is_replayed_as_an_error_the_call_does_not_run_again(tmp_path):
    calls = []

    def charge(order: str) -> str:
        calls.append(order)
        raise RuntimeError("card declined")

    tool = Tool.from_function(charge, idempotency_key="order")
    outputs = ['Action: charge\nAction Input: {"order": "A"}'] * 2 + [DONE]
    agent = ReActAgent(ScriptedOutputs(outputs, "json"), ToolRegistry([tool]))
    trace = agent.run("t")
    assert calls == ["A"]
    first, again = observations(trace)
    assert first.error and again.error and again.text == first.text == "ERROR: RuntimeError: card declined"
    assert again.replayed == {"step": 1}


def test_a_key_function_makes_the_key_and_one_that_fails_keeps_the_call_from_running(tmp_path):
    ledger = tmp_path / "ledger.txt"
    trace = run(appender(ledger, key=lambda args: args["line"].split()[0]),
                [call("A-17 paid"), call("A-17 paid again"), DONE])
    assert lines(ledger) == ["A-17 paid"]
    assert observations(trace)[1].key == "append_line:A-17"

    def broken(args):
        raise KeyError("order")

    trace = run(appender(ledger, key=broken), [call("B-1"), DONE])
    assert lines(ledger) == ["A-17 paid"]
    assert trace.steps[0].observation == ("ERROR: not run: no operation key for this call of append_line "
                                          "(KeyError: 'order')")
    trace = run(appender(ledger, key=lambda args: ""), [call("B-1"), DONE])
    assert "returned '', not a non-empty text or number" in trace.steps[0].observation
    assert lines(ledger) == ["A-17 paid"]


def test_a_replayed_call_is_not_asked_about_and_an_edit_is_keyed_by_what_runs(tmp_path):
    ledger = tmp_path / "ledger.txt"
    asked = []

    def approver(request):
        asked.append(request.key)
        return Decision.edit({"line": "A-17 paid"}) if request.args["line"] == "A-17 pai" else True

    trace = run(appender(ledger, dangerous=True), [call("A-17 paid"), call("A-17 paid"), call("A-17 pai"), DONE],
                approver=approver)
    assert lines(ledger) == ["A-17 paid"]
    # Asked for the first call and the typo, not for the retry; the typo, edited, is the first call's key.
    assert asked == ['append_line:{"line":"A-17 paid"}', 'append_line:{"line":"A-17 pai"}']
    assert trace.steps[2].replayed == {"step": 1}


def test_an_operation_started_without_a_recorded_result_never_runs_again(tmp_path):
    ledger = tmp_path / "ledger.txt"
    key = 'append_line:{"line":"A-17 paid"}'
    journal = OperationJournal([ev.RunStart(step=0, task="t"), ev.StepStart(step=1),
                                ev.Operation(step=1, key=key, tool="append_line")])  # cut off here
    trace = run(appender(ledger), [call("A-17 paid"), call("A-17 paid"), DONE], journal=journal)
    assert lines(ledger) == []
    refusal = trace.steps[0].observation
    assert refusal.startswith(f"ERROR: not run: the operation {key} started at run 1, step 1 and no result was "
                              "recorded") and "its effect is unknown" in refusal
    # The refusal is no result: the next try is refused the same way, never run.
    assert trace.steps[1].observation == refusal
    assert journal.lookup(key).known is False


def test_the_journal_takes_a_result_only_from_the_call_that_started_the_operation():
    key = "t:k"
    journal = OperationJournal([
        ev.RunStart(step=0, task="t"), ev.Operation(step=2, key=key),
        ev.Observation(step=3, text="not this one", key=key),  # another step's: ignored
        ev.Observation(step=2, text="done", key=key, replayed={"step": 1}),  # a replay: ignored
    ])
    assert journal.lookup(key).known is False
    journal.note(ev.Observation(step=2, text="done", key=key))
    assert (journal.lookup(key).text, journal.lookup(key).run) == ("done", 1)


def test_idempotency_keys_are_checked_against_the_parameters():
    with pytest.raises(ValueError, match=r"idempotency_key names \['order'\], which are not parameters"):
        Tool("pay", "", {"amount": "float"}, lambda amount: amount, idempotency_key="order")
    with pytest.raises(TypeError, match="idempotency_key should be a parameter name, a list of them"):
        Tool("pay", "", {"amount": "float"}, lambda amount: amount, idempotency_key=[1])
    tool = Tool("pay", "", {"order": "str", "amount": "float"}, lambda **kw: kw, idempotency_key=["order", "amount"])
    assert tool.operation_key({"amount": 3.0, "order": "A"}) == 'pay:{"amount":3.0,"order":"A"}'
    assert Tool("p", "", {"a": "str"}, lambda a: a).operation_key({"a": "x"}) is None


# -- across runs of one trace ---------------------------------------------------------------

APPEND_PLAN = """
task = "Record in the ledger that order A-17 was paid."
executes_code = true
[[tools]]
name = "append_line"
kind = "python"
callable = "side_effect_tools:{function}"
dangerous = true
idempotency_key = ["path", "line"]
[policy]
kind = "outputs"
format = "json"
outputs = [
  '''Action: append_line
Action Input: {{"path": "{ledger}", "line": "A-17 paid"}}''',
  '''Action: append_line
Action Input: {{"path": "{ledger}", "line": "A-17 paid"}}''',
  "Final Answer: recorded",
]
"""


def append_plan(tmp_path: Path, function: str = "append_line") -> tuple[Path, Path]:
    ledger = tmp_path / "ledger.txt"
    plan = tmp_path / f"{function}.toml"
    plan.write_text(APPEND_PLAN.format(function=function, ledger=ledger.as_posix()), encoding="utf-8")
    return plan, ledger


def record(*argv) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), str(ROOT)])}
    return subprocess.run([sys.executable, "-m", "agentdbg", "record", *map(str, argv)], capture_output=True,
                          text=True, env=env, timeout=60)


def test_a_retry_and_a_rerun_appended_to_the_trace_append_exactly_one_line(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(TESTS))
    plan, ledger = append_plan(tmp_path)
    trace = tmp_path / "ledger.jsonl"
    for _ in range(2):
        code = main(["record", str(plan), "-o", str(trace), "--append", "--allow-code", "--approve", "always", "-q"])
        assert code == 0
    assert lines(ledger) == ["A-17 paid"]
    document = open_trace(trace)
    document.wait()
    first, second = document.runs
    assert first.record(1).replayed is None and first.record(2).replayed == {"step": 1}
    assert [second.record(n).replayed for n in (1, 2)] == [{"run": 1, "step": 1}, {"run": 1, "step": 1}]
    assert second.record(1).observation == first.record(1).observation == f"appended to {ledger.as_posix()}: A-17 paid"
    assert second.record(1).approval is None  # nothing was going to run: nobody was asked
    assert len(read_journal(trace)) == 1
    document.close()


def test_show_marks_a_replayed_observation(tmp_path, monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(TESTS))
    plan, ledger = append_plan(tmp_path)
    trace = tmp_path / "ledger.jsonl"
    main(["record", str(plan), "-o", str(trace), "--allow-code", "--approve", "always", "-q"])
    capsys.readouterr()
    assert main(["show", str(trace)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Replayed not run again: the result recorded at step 1 for operation append_line:" in out
    assert main(["show", str(trace), "--json"]) == 0
    steps = json.loads(capsys.readouterr().out)["steps"]
    assert [step["replayed"] for step in steps[:2]] == [None, {"step": 1}]
    assert steps[0]["key"] == steps[1]["key"] and steps[0]["approval"]["decision"] == "approved"
    assert main(["stats", str(trace), "--json"]) == 0
    (stats,) = json.loads(capsys.readouterr().out)["runs"]
    assert (stats["approvals"], stats["replayed"]) == ({"approved": 1}, 1)


def test_a_crash_between_the_side_effect_and_its_record_never_lets_it_run_twice(tmp_path):
    plan, ledger = append_plan(tmp_path, "append_then_crash")
    trace = tmp_path / "ledger.jsonl"
    crashed = record(plan, "-o", trace, "--append", "--allow-code", "--approve", "always")
    assert crashed.returncode == 3, crashed.stderr  # the tool killed the process after appending
    assert lines(ledger) == ["A-17 paid"]
    last = [json.loads(line)["type"] for line in trace.read_text(encoding="utf-8").splitlines()][-3:]
    assert last == ["action", "approval", "operation"]  # the intent is on record; the result never was
    again = record(plan, "-o", trace, "--append", "--allow-code", "--approve", "always")
    assert again.returncode == 0, again.stderr  # nothing crashed: the call did not run again
    assert lines(ledger) == ["A-17 paid"]
    document = open_trace(trace)
    document.wait()
    rerun = document.runs[-1]
    assert "its effect is unknown" in rerun.record(1).observation and rerun.record(1).observation_error
    document.close()


def test_the_journal_of_a_trace_file_reads_only_real_lines_and_counts_damaged_ones(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert len(read_journal(empty)) == 0
    key = 'pay:{"order":"A"}'
    lines_written = [
        {"type": "header", "format": "agentdbg-trace", "version": 1},
        {"type": "run_start", "step": 0, "task": "t"},
        {"type": "step", "step": 1},
        # Words that look like journal lines inside another event's data: not lines of their own.
        {"type": "raw", "step": 1, "data": {"type": "run_start", "key": "x"}, "note": '{"type":"operation","key":"y"}'},
        {"type": "action", "step": 1, "tool": "kv_set", "args": {"key": "k", "value": "v"}},
        {"type": "operation", "step": 1, "key": key, "tool": "pay"},
        {"type": "observation", "step": 1, "text": "paid", "key": key},
    ]
    path = tmp_path / "trace.jsonl"
    text = "\n".join(json.dumps(line, separators=(",", ":")) for line in lines_written)
    path.write_text(text + '\n{"type":"operation","step":2,"key":"pay:cut\n{"type":"observation","key":"z",\n',
                    encoding="utf-8")
    journal = read_journal(path)
    assert [(r.key, r.run, r.step, r.text) for r in journal.entries()] == [(key, 1, 1, "paid")]
    # The operation cut inside its key may be any key it begins: none of them runs.
    assert not journal.lookup("pay:cut-17").known and journal.lookup("pay:other") is None
