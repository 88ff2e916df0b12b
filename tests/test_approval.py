"""Dangerous tools in the engine: each call waits for a decision (approve, deny, edit the
arguments) before it runs; the decision is an event; a denial is an error observation."""

from __future__ import annotations

import pytest

from agentdbg.engine import (
    ApprovalRequest,
    CallablePolicy,
    Decision,
    ErrorBudget,
    ReActAgent,
    ScriptedOutputs,
    Tool,
    ToolRegistry,
    ToyScript,
    dangerous,
)
from agentdbg.engine import events as ev
from agentdbg.engine.approval import approver_from, never
from agentdbg.prompt import prompt_at
from agentdbg.runs import EventRun


def deleter(log: list) -> Tool:
    def delete_file(path: str, recursive: bool = False) -> str:
        """Delete a file for good."""
        log.append((path, recursive))
        return f"deleted {path}"

    return Tool.from_function(delete_file, dangerous=True)


def agent(outputs: list[str], log: list, approver=None, **kwargs) -> ReActAgent:
    registry = ToolRegistry([deleter(log), Tool("echo", "Echo.", {"text": str}, lambda text: text)])
    return ReActAgent(ScriptedOutputs(outputs, "json"), registry, approver=approver, **kwargs)


DELETE = 'Thought: clean up.\nAction: delete_file\nAction Input: {"path": "/tmp/old.log"}'
DONE = "Thought: done.\nFinal Answer: ok"


def events_of(trace, kind):
    return [event for event in trace.events if isinstance(event, kind)]


def test_an_approved_call_runs_after_its_decision_is_recorded():
    log, asked = [], []

    def approver(request: ApprovalRequest) -> Decision:
        asked.append(request)
        assert log == []  # asked before the tool runs
        return Decision.approve("looks fine", by="ops")

    trace = agent([DELETE, DONE], log, approver).run("clean up")
    assert log == [("/tmp/old.log", False)]
    (request,) = asked
    assert (request.tool, request.args, request.step, request.thought) == ("delete_file", {"path": "/tmp/old.log"}, 1,
                                                                           "clean up.")
    assert request.description == "Delete a file for good."
    assert request.params == {"path": "str", "recursive": "bool"} and request.optional == {"recursive"}
    kinds = [event.type for event in trace.events if event.step == 1]
    assert kinds == ["step", "thought", "action", "approval", "observation", "guards"]
    (approval,) = events_of(trace, ev.Approval)
    assert (approval.tool, approval.decision, approval.by, approval.reason, approval.args) == (
        "delete_file", "approved", "ops", "looks fine", None)
    assert trace.steps[0].observation == "deleted /tmp/old.log" and trace.steps[0].decision.decision == "approved"


def test_a_denied_call_does_not_run_and_the_denial_is_the_error_observation():
    log = []
    trace = agent([DELETE, DONE], log, lambda request: Decision.deny("not before the backup", by="user")).run("t")
    assert log == []
    step = trace.steps[0]
    assert step.observation == "ERROR: denied by the user: not before the backup"
    (observation,) = events_of(trace, ev.Observation)[:1]
    assert observation.error is True
    assert not events_of(trace, ev.StepError)  # nothing went wrong with the tool: it never ran
    assert "Observation: ERROR: denied by the user: not before the backup" in trace.transcript
    assert trace.outcome.status == "answered"


def test_edited_arguments_are_what_runs_and_the_policy_is_told():
    log = []
    edit = lambda request: Decision.edit({"path": "/tmp/old.log.1"}, reason="the rotated one", by="user")  # noqa: E731
    trace = agent([DELETE, DONE], log, edit).run("t")
    assert log == [("/tmp/old.log.1", False)]
    (action,) = events_of(trace, ev.ActionTaken)
    assert action.args == {"path": "/tmp/old.log"}  # the proposal stays on record
    (approval,) = events_of(trace, ev.Approval)
    assert (approval.decision, approval.args, approval.reason) == ("edited", {"path": "/tmp/old.log.1"}, "the rotated one")
    assert trace.steps[0].observation == ('deleted /tmp/old.log.1\n(the call ran with arguments edited by the user: '
                                          '{"path": "/tmp/old.log.1"})')


def test_edited_arguments_the_tool_does_not_take_are_a_bad_arguments_error_and_nothing_runs():
    log = []
    trace = agent([DELETE, DONE], log, lambda request: Decision.edit({"path": 7})).run("t")
    assert log == []
    (error,) = events_of(trace, ev.StepError)
    assert error.kind == "bad_args" and "argument 'path' should be str, got int" in error.message
    assert trace.steps[0].observation.startswith("ERROR: bad arguments for delete_file")


def test_edited_arguments_equal_to_the_proposal_are_an_approval():
    trace = agent([DELETE, DONE], [], lambda request: Decision.edit(dict(request.args), by="user")).run("t")
    (approval,) = events_of(trace, ev.Approval)
    assert (approval.decision, approval.args) == ("approved", None)


@pytest.mark.parametrize(("approver", "by", "reason"), [
    (None, "agentdbg", "nobody was asked to approve it (no approver)"),
    (lambda request: 1 / 0, "approver <lambda>", "the approver raised ZeroDivisionError: division by zero"),
    (lambda request: "yes", "approver <lambda>", "the approver answered 'yes', not a Decision"),
    (never(), "--approve never", "no call to a dangerous tool may run"),
])
def test_without_a_usable_decision_the_call_is_denied_never_run(approver, by, reason):
    log = []
    trace = agent([DELETE, DONE], log, approver).run("t")
    assert log == []
    (approval,) = events_of(trace, ev.Approval)
    assert (approval.decision, approval.by, approval.reason) == ("denied", by, reason)


def test_true_and_false_are_approve_and_deny():
    def yes(request):
        return True

    log = []
    trace = agent([DELETE, DONE], log, yes).run("t")
    assert log and events_of(trace, ev.Approval)[0].by == "approver yes"
    trace = agent([DELETE, DONE], log, lambda request: False).run("t")
    assert trace.steps[0].observation == "ERROR: denied by approver <lambda>"


def test_calls_that_would_not_run_anyway_and_other_tools_are_not_asked_about():
    asked = []
    outputs = ['Action: delete_file\nAction Input: {"path": 3}',  # bad arguments
               'Action: echo\nAction Input: {"text": "hi"}',  # not dangerous
               'Action: nope\nAction Input: {}', DONE]
    trace = agent(outputs, [], lambda request: asked.append(request) or True).run("t")
    assert asked == [] and not events_of(trace, ev.Approval)
    assert [step.observation[:30] for step in trace.steps[:3]] == [
        "ERROR: bad arguments for delet", "hi", "ERROR: tool 'nope' does not ex"]


def test_a_positional_argument_is_asked_about_bound_to_its_parameter():
    asked = []
    registry = ToolRegistry([deleter([])])
    policy = ScriptedOutputs(["Action: delete_file[/tmp/a]", DONE], "bracket")
    ReActAgent(policy, registry, approver=lambda request: asked.append(request) or True).run("t")
    assert asked[0].args == {"path": "/tmp/a"}


def test_denials_count_in_the_error_budget():
    trace = agent([DELETE] * 5, [], never(), max_steps=5,
                  guards=[ErrorBudget(2)]).run("t")
    assert trace.outcome.status == "error budget exhausted" and len(trace.steps) == 2


def test_the_prompt_rebuilt_from_events_is_the_one_the_policy_saw_after_decisions():
    prompts: list[str] = []
    outputs = iter([DELETE, DELETE.replace("old.log", "new.log"), DELETE.replace("old.log", "x"), DONE])

    def policy(prompt: str) -> str:
        prompts.append(prompt)
        return next(outputs)

    decisions = iter([Decision.approve(), Decision.deny("no"), Decision.edit({"path": "/tmp/y"})])
    registry = ToolRegistry([deleter([])])
    trace = ReActAgent(CallablePolicy(policy, "json"), registry, approver=lambda request: next(decisions)).run("t")
    run = EventRun(trace.events)
    assert [prompt_at(run, step) for step in range(1, 5)] == prompts


def test_a_decision_is_checked_when_made():
    with pytest.raises(ValueError, match="a decision is one of approved, denied, edited"):
        Decision("maybe")
    with pytest.raises(ValueError, match="edited arguments go with the decision 'edited'"):
        Decision("edited")
    with pytest.raises(TypeError, match="edited arguments should be a mapping"):
        Decision.edit(["x"])
    with pytest.raises(ValueError, match='approve should be "always", "never", a function'):
        approver_from("sometimes")


def test_a_request_checks_edited_arguments_as_the_tool_would():
    request = ApprovalRequest.of(deleter([]), {"path": "/tmp/a"})
    assert request.problems({"path": "/tmp/b"}) == []
    assert request.problems({"path": "/tmp/b", "recursive": None}) == []
    assert request.problems([1]) == ["the arguments should be a JSON object, got an array"]
    assert request.problems({"recursive": 1, "mode": "x"}) == [
        "missing argument 'path'", "argument 'recursive' should be bool, got int", "unknown argument 'mode'"]


def test_the_decorator_marks_a_function_and_leaves_it_callable():
    @dangerous
    def wipe(disk: str) -> str:
        """Wipe a disk."""
        return f"wiped {disk}"

    @dangerous(idempotency_key="order")
    def pay(order: str, amount: float) -> str:
        return "paid"

    assert wipe("sda") == "wiped sda"
    assert Tool.from_function(wipe).dangerous is True
    assert Tool.from_function(wipe, dangerous=False).dangerous is False  # said explicitly: it wins
    tool = Tool.from_function(pay)
    assert tool.dangerous and tool.idempotency_key == ("order",)
    assert tool.spec()["idempotency_key"] == "order"
    with pytest.raises(TypeError, match="dangerous marks a function"):
        dangerous(3)


def test_a_decision_names_the_call_it_was_made_for():
    """Its operation key and, in a turn of several calls, the call's id: a fork gives a
    recorded decision again only to that very call."""
    def delete_file(path: str) -> str:
        """Delete a file for good."""
        return f"deleted {path}"

    registry = ToolRegistry([Tool.from_function(delete_file, dangerous=True, idempotency_key="path")])
    script = ToyScript([{"actions": [{"action": "delete_file", "args": {"path": "/a"}},
                                     {"action": "delete_file", "args": {"path": "/b"}}]},
                        {"action": "delete_file", "args": {"path": "/c"}}, {"kind": "finish", "content": "ok"}])
    asked = []
    trace = ReActAgent(script, registry, approver=lambda request: asked.append(request) or True).run("t")
    assert [(r.key, r.id) for r in asked] == [('delete_file:{"path":"/a"}', "call_1_1"),
                                              ('delete_file:{"path":"/b"}', "call_1_2"),
                                              ('delete_file:{"path":"/c"}', "")]
    assert [(a.step, a.key, a.id) for a in events_of(trace, ev.Approval)] == [(1, r.key, r.id) for r in asked[:2]] + [
        (2, asked[2].key, "")]
