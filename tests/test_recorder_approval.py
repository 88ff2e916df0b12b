"""agentdbg.record with dangerous tools and operation keys: rec.call asks the approver
(a callable, "always", "never"; refused without one), records the decision, runs edited
arguments; a keyed tool runs once per key in the trace, across runs appended to it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import agentdbg
from agentdbg import ApprovalRequest, ApprovalRequired, Decision
from agentdbg.trace.reader import open_trace


def events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[1:]]


def make_tools(ledger: Path):
    @agentdbg.dangerous
    def delete_file(path: str) -> str:
        """Delete a file for good."""
        with ledger.open("a", encoding="utf-8") as file:
            file.write(f"deleted {path}\n")
        return f"deleted {path}"

    @agentdbg.dangerous(idempotency_key="order")
    def pay(order: str, amount: float) -> str:
        """Pay an order."""
        with ledger.open("a", encoding="utf-8") as file:
            file.write(f"paid {order} {amount}\n")
        return f"paid {order}"

    return delete_file, pay


def ledger_lines(ledger: Path) -> list[str]:
    return ledger.read_text(encoding="utf-8").splitlines() if ledger.exists() else []


def test_a_dangerous_call_without_an_approver_is_refused_before_it_is_recorded(tmp_path):
    ledger = tmp_path / "ledger.txt"
    delete_file, _ = make_tools(ledger)
    trace = tmp_path / "run.jsonl"
    with agentdbg.record(trace, task="t", tools=[delete_file]) as rec:
        with pytest.raises(ApprovalRequired, match="delete_file is a dangerous tool: rec.call runs it only with an approver"):
            rec.call("delete_file", {"path": "/tmp/a"})
        assert rec.step_count == 0
        rec.answer("gave up")
    assert ledger_lines(ledger) == []
    assert [e["type"] for e in events(trace)] == ["run_start", "step", "final_answer", "guards", "run_end"]
    (spec,) = events(trace)[0]["tools"]
    assert spec["dangerous"] is True


def test_approve_always_runs_and_records_who_approved(tmp_path):
    ledger = tmp_path / "ledger.txt"
    delete_file, _ = make_tools(ledger)
    trace = tmp_path / "run.jsonl"
    with agentdbg.record(trace, task="t", tools=[delete_file], approve="always") as rec:
        step = rec.call(delete_file, {"path": "/tmp/a"}, thought="clean")
        assert step.observation == "deleted /tmp/a" and step.decision.decision == "approved"
    assert ledger_lines(ledger) == ["deleted /tmp/a"]
    approval = next(e for e in events(trace) if e["type"] == "approval")
    assert approval == {"type": "approval", "step": 1, "tool": "delete_file", "decision": "approved",
                        "by": 'approve="always"'}


def test_an_approver_function_sees_the_request_and_can_deny_or_edit(tmp_path):
    ledger = tmp_path / "ledger.txt"
    delete_file, _ = make_tools(ledger)
    seen: list[ApprovalRequest] = []

    def reviewer(request: ApprovalRequest) -> Decision:
        seen.append(request)
        if request.args["path"] == "/":
            return Decision.deny("never the root")
        return Decision.edit({"path": request.args["path"] + ".bak"}, reason="keep the original")

    trace = tmp_path / "run.jsonl"
    with agentdbg.record(trace, task="t", tools=[delete_file], approve=reviewer) as rec:
        denied = rec.call("delete_file", {"path": "/"}, thought="everything")
        edited = rec.call("delete_file", '{"path": "/tmp/a"}')
        rec.answer("done")
    assert ledger_lines(ledger) == ["deleted /tmp/a.bak"]
    assert [(r.step, r.tool, r.args, r.thought) for r in seen] == [(1, "delete_file", {"path": "/"}, "everything"),
                                                                  (2, "delete_file", {"path": "/tmp/a"}, "")]
    assert denied.observation == "ERROR: denied by approver reviewer: never the root" and denied.is_error
    assert denied.value is None and denied.error is None
    assert edited.observation == ('deleted /tmp/a.bak\n(the call ran with arguments edited by approver reviewer: '
                                  '{"path": "/tmp/a.bak"})')
    document = open_trace(trace)
    document.wait()
    (run,) = document.runs
    assert (run.record(1).decision, run.record(1).observation_error) == ("denied", True)
    assert (run.record(2).args, run.record(2).ran_args) == ({"path": "/tmp/a"}, {"path": "/tmp/a.bak"})
    assert run.state_at(3).approvals == {"denied": 1, "edited": 1}
    document.close()


def test_the_approver_can_be_swapped_while_the_run_goes_on(tmp_path):
    ledger = tmp_path / "ledger.txt"
    delete_file, _ = make_tools(ledger)
    with agentdbg.record(tmp_path / "run.jsonl", task="t", tools=[delete_file], approve="never") as rec:
        assert rec.call("delete_file", {"path": "/a"}).observation.startswith('ERROR: denied by approve="never"')
        rec.approver = lambda request: True
        assert rec.call("delete_file", {"path": "/b"}).observation == "deleted /b"
    assert ledger_lines(ledger) == ["deleted /b"]


def test_a_decision_made_for_a_later_call_of_the_turn_is_written_in_its_own_step(tmp_path):
    ledger = tmp_path / "ledger.txt"
    delete_file, _ = make_tools(ledger)
    trace = tmp_path / "run.jsonl"
    with agentdbg.record(trace, task="t", tools=[delete_file], approve="always") as rec:
        rec.actions([("delete_file", {"path": "/a"}, "c1"), ("delete_file", {"path": "/b"}, "c2")])
        rec.call(id="c2")  # the second call runs first: its step is not open yet
        rec.call(id="c1")
    shown = [(e["type"], e["step"]) for e in events(trace) if e["type"] in ("action", "approval", "observation")]
    assert shown == [("action", 1), ("approval", 1), ("observation", 1),
                     ("action", 2), ("approval", 2), ("observation", 2)]
    assert ledger_lines(ledger) == ["deleted /b", "deleted /a"]


def test_a_keyed_tool_runs_once_per_key_in_the_trace_across_appended_runs(tmp_path):
    ledger = tmp_path / "ledger.txt"
    _, pay = make_tools(ledger)
    trace = tmp_path / "run.jsonl"
    with agentdbg.record(trace, task="pay A-17", tools=[pay], approve="always") as rec:
        assert rec.call(pay, {"order": "A-17", "amount": 30.0}).replayed is None
        retry = rec.call(pay, {"order": "A-17", "amount": 30.0})
        assert (retry.observation, retry.replayed, retry.key) == ("paid A-17", {"step": 1}, "pay:{\"order\":\"A-17\"}")
        rec.answer("paid")
    asked = []
    with agentdbg.record(trace, task="pay A-17 again", tools=[pay], approve=lambda r: asked.append(r) or True) as rec:
        again = rec.call(pay, {"order": "A-17", "amount": 99.0})  # the key is the order: the same operation
        other = rec.call(pay, {"order": "B-2", "amount": 5.0})
    assert again.observation == "paid A-17" and again.replayed == {"run": 1, "step": 1}
    assert other.replayed is None and [r.args["order"] for r in asked] == ["B-2"]
    assert ledger_lines(ledger) == ["paid A-17 30.0", "paid B-2 5.0"]
    document = open_trace(trace)
    document.wait()
    assert [document.runs[1].record(n).replayed for n in (1, 2)] == [{"run": 1, "step": 1}, None]
    document.close()


def test_a_trace_replaced_starts_a_new_journal(tmp_path):
    ledger = tmp_path / "ledger.txt"
    _, pay = make_tools(ledger)
    trace = tmp_path / "run.jsonl"
    for mode in ("append", "replace"):
        with agentdbg.record(trace, task="t", tools=[pay], approve="always", mode=mode) as rec:
            rec.call(pay, {"order": "A-17", "amount": 30.0})
    assert ledger_lines(ledger) == ["paid A-17 30.0", "paid A-17 30.0"]  # the old record was thrown away


def test_approve_must_be_a_function_always_or_never(tmp_path):
    with pytest.raises(ValueError, match='approve should be "always", "never", a function'):
        agentdbg.record(tmp_path / "run.jsonl", approve="yes")
    assert not (tmp_path / "run.jsonl").exists()
