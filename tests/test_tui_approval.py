"""The approval dialog on a live plan: a call to a dangerous tool waits (in the engine's
worker) for approve, deny with a reason, or edited arguments checked before they run;
continue stops there; quitting while it waits denies the call and leaves no thread behind."""

from __future__ import annotations

import argparse
import asyncio
import time

from test_tui_support import (
    SIZE,
    live_app,
    pane_text,
    plan_copy,
    press,
    screen_text,
    settle,
    status,
    type_text,
)

from agentdbg.cli import debug
from agentdbg.engine import events as ev
from agentdbg.tui.screens.approval import ApprovalScreen

PLAN = "dangerous_delete.toml"


async def until(pilot, condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        await pilot.pause(0.02)


async def asked(pilot) -> ApprovalScreen:
    """Wait for the dialog (the worker waits meanwhile: settle would wait for ever)."""
    await until(pilot, lambda: isinstance(pilot.app.screen, ApprovalScreen))
    await pilot.pause()
    return pilot.app.screen


def pretend_calls(app) -> list:
    """What the plan's pretend delete_file was called with (it records, changes nothing)."""
    return app.session.run._agent_run.agent.registry.get("delete_file").calls


def approvals(app) -> list[ev.Approval]:
    return [event for event in app.session.run.events() if isinstance(event, ev.Approval)]


async def step_to_the_first_deletion(pilot) -> ApprovalScreen:
    await settle(pilot)
    await press(pilot, "n")  # step 1: list_files, not dangerous: no question
    assert not isinstance(pilot.app.screen, ApprovalScreen)
    await pilot.press("n")
    return await asked(pilot)


async def test_a_dangerous_call_waits_in_the_worker_while_the_dialog_asks_then_approve_runs_it(tmp_path):
    app = live_app(tmp_path, PLAN)
    async with app.run_test(size=SIZE) as pilot:
        dialog = await step_to_the_first_deletion(pilot)
        assert dialog.request.tool == "delete_file" and dialog.request.step == 2
        assert dialog.request.args == {"path": "/var/log/app/old-2023.log"}
        assert app.busy == "step" and app.session.run.step_count == 1  # the step waits, unfinished
        assert pretend_calls(app) == []
        shown = screen_text(app)
        assert "wants to run delete_file" in shown and '"path": "/var/log/app/old-2023.log"' in shown
        assert "Operation key: delete_file:" in shown
        await pilot.press("a")
        await settle(pilot)
        assert app.busy is None and app.session.cursor == 2
        assert pretend_calls(app) == [{"path": "/var/log/app/old-2023.log"}]
        record = app.session.record()
        assert record.observation == "deleted /var/log/app/old-2023.log" and not record.observation_error
        assert [(a.decision, a.by) for a in approvals(app)] == [("approved", "user")]
        assert "Approval: approved by the user" in pane_text(app, "scratchpad")


async def test_deny_with_a_reason_is_the_observation_and_nothing_runs(tmp_path):
    app = live_app(tmp_path, PLAN)
    async with app.run_test(size=SIZE) as pilot:
        await step_to_the_first_deletion(pilot)
        await pilot.press("d")
        await pilot.pause()
        await type_text(pilot, "keep it for the audit")
        await pilot.press("enter")
        await settle(pilot)
        record = app.session.record()
        assert record.observation == "ERROR: denied by the user: keep it for the audit"
        assert record.observation_error and record.decision == "denied"
        assert pretend_calls(app) == []
        assert "Approval: denied by the user: keep it for the audit" in pane_text(app, "scratchpad")
        assert record.marker() == "error"


async def test_edit_with_invalid_json_says_why_in_place_and_valid_arguments_run_instead(tmp_path):
    app = live_app(tmp_path, PLAN)
    async with app.run_test(size=SIZE) as pilot:
        dialog = await step_to_the_first_deletion(pilot)
        await pilot.press("e")
        await pilot.pause()
        editor = dialog.query_one("#edit-args")
        assert app.focused is editor
        editor.text = '{"path": "/tmp/x",'  # cut off
        await pilot.press("ctrl+s")
        await pilot.pause()
        error = str(dialog.query_one("#approval-error").render())
        assert "not JSON" in error and "line 1" in error
        assert app.screen is dialog and pretend_calls(app) == []
        editor.text = '{"path": 3}'  # JSON, but not what the tool takes
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert "argument 'path' should be str, got int" in str(dialog.query_one("#approval-error").render())
        editor.text = '{"path": "/var/log/app/old-2023.log", "force": true}'
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert "unknown argument 'force'" in str(dialog.query_one("#approval-error").render())
        assert app.screen is dialog and app.busy == "step"
        editor.text = '{"path": "/var/log/app/old-2023.log.gz"}'
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert pretend_calls(app) == [{"path": "/var/log/app/old-2023.log.gz"}]
        record = app.session.record()
        assert record.args == {"path": "/var/log/app/old-2023.log"}  # the proposal, kept
        assert record.ran_args == {"path": "/var/log/app/old-2023.log.gz"}
        assert record.observation.startswith("deleted /var/log/app/old-2023.log.gz\n")
        assert "edited by the user" in record.observation
        scratchpad = pane_text(app, "scratchpad")
        assert '"path": "/var/log/app/old-2023.log"' in scratchpad  # the original, visible
        assert 'Approval: edited by the user: ran delete_file({"path": "/var/log/app/old-2023.log.gz"}) instead' in scratchpad


async def test_esc_leaves_a_form_then_denies_at_the_choices(tmp_path):
    app = live_app(tmp_path, PLAN)
    async with app.run_test(size=SIZE) as pilot:
        dialog = await step_to_the_first_deletion(pilot)
        await pilot.press("e")
        await pilot.press("escape")  # back to the choices: still waiting
        await pilot.pause()
        assert app.screen is dialog and dialog.form is None and app.busy == "step"
        await pilot.press("escape")
        await settle(pilot)
        assert app.session.record().observation == "ERROR: denied by the user: dismissed with Esc"
        assert pretend_calls(app) == []


async def test_continue_stops_at_the_step_that_asked(tmp_path):
    app = live_app(tmp_path, PLAN)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("c")
        await asked(pilot)
        assert app.busy == "continue"
        await pilot.press("a")
        await settle(pilot)
        # Approved, and it ran; the continue did not run on past the decision.
        assert app.session.cursor == 2 and app.session.run.step_count == 2
        assert "approval: delete_file approved by the user" in status(app)
        await pilot.press("c")
        await asked(pilot)
        await pilot.press("d")
        await type_text(pilot, "all of /var/log? no")
        await pilot.press("enter")
        await settle(pilot)
        assert app.session.cursor == 3
        assert "approval: delete_file denied by the user: all of /var/log? no" in status(app)
        assert pretend_calls(app) == [{"path": "/var/log/app/old-2023.log"}]


async def test_quitting_while_a_call_waits_denies_it_and_ends_the_step(tmp_path):
    app = live_app(tmp_path, PLAN)
    async with app.run_test(size=SIZE) as pilot:
        await step_to_the_first_deletion(pilot)
        run = app.session.run
        agent_run = run._agent_run
        started = time.monotonic()
        await pilot.press("q")
    def step_two_ended() -> bool:
        return any(isinstance(e, ev.GuardCounters) and e.step == 2 for e in list(agent_run.events))

    while not step_two_ended():  # the worker's thread ends its step
        assert time.monotonic() - started < 10, "the worker still waits"
        await asyncio.sleep(0.02)
    decisions = [e for e in agent_run.events if isinstance(e, ev.Approval)]
    assert [(d.decision, d.by, d.reason) for d in decisions] == [
        ("denied", "agentdbg", "the debugger was closed before a decision")]
    assert agent_run.agent.registry.get("delete_file").calls == []


async def test_the_dialog_shows_hostile_arguments_as_plain_text(tmp_path):
    plan = plan_copy(tmp_path, PLAN)
    # TOML reads \\u001b as the six characters \u001b, which the action's JSON decodes to ESC.
    text = plan.read_text(encoding="utf-8").replace(
        'Action Input: {"path": "/var/log/app/old-2023.log"}',
        'Action Input: {"path": "/tmp/\\\\u001b[2J\\\\u202egol.[red]x[/red]"}')
    plan.write_text(text, encoding="utf-8")
    app = debug.build_app(argparse.Namespace(file=str(plan), format=None, run=1, allow_code=False,
                                             allow_network=False, approve=None))
    async with app.run_test(size=SIZE) as pilot:
        dialog = await step_to_the_first_deletion(pilot)
        assert dialog.request.args == {"path": "/tmp/\x1b[2J\u202egol.[red]x[/red]"}
        shown = screen_text(app)
        assert "\x1b" not in shown and "\u202e" not in shown
        assert '"/tmp/\\u001b[2J\\u202egol.[red]x[/red]"' in shown  # escaped, markup literal
        editor = dialog.query_one("#edit-args")
        assert "\u202e" not in editor.text and "\\u202e" in editor.text
        await pilot.press("d", "enter")
        await settle(pilot)


async def test_with_approve_given_on_the_command_line_the_debugger_does_not_ask(tmp_path):
    plan = plan_copy(tmp_path, PLAN)
    app = debug.build_app(argparse.Namespace(file=str(plan), format=None, run=1, allow_code=False,
                                             allow_network=False, approve="never"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "n", "n")
        assert not isinstance(app.screen, ApprovalScreen)
        assert app.session.record().observation.startswith("ERROR: denied by --approve never")


async def test_a_retried_operation_is_replayed_without_asking_and_the_scratchpad_says_so(tmp_path):
    plan = plan_copy(tmp_path, PLAN)
    text = plan.read_text(encoding="utf-8").replace('{"path": "/var/log"}', '{"path": "/var/log/app/old-2023.log"}')
    plan.write_text(text, encoding="utf-8")
    app = debug.build_app(argparse.Namespace(file=str(plan), format=None, run=1, allow_code=False,
                                             allow_network=False, approve=None))
    async with app.run_test(size=SIZE) as pilot:
        await step_to_the_first_deletion(pilot)
        await pilot.press("a")
        await settle(pilot)
        await press(pilot, "n")  # the same path again: answered from step 2, nobody asked
        assert not isinstance(app.screen, ApprovalScreen)
        record = app.session.record()
        assert record.replayed == {"step": 2} and record.observation == "deleted /var/log/app/old-2023.log"
        assert pretend_calls(app) == [{"path": "/var/log/app/old-2023.log"}]
        shown = pane_text(app, "scratchpad")
        assert "Replayed: not run again: the result recorded at step 2 for operation delete_file:" in shown
