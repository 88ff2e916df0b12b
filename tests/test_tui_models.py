"""The debugger on a plan whose policy calls a model (a server on the loopback interface):
the opt-in, stepping with n while the call runs in a worker, quitting during a slow call."""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

from model_server import ModelServer, Reply, openai_error, openai_text
from test_tui_support import PLANS, SIZE, pane_text, press, settle, status

from agentdbg.cli import debug
from agentdbg.engine import events as ev

STEPS = ["Thought: the total first.\nAction: catalog[Il Gattopardo]",
         "Thought: now the loans.\nAction: loans[Il Gattopardo]",
         "Thought: subtract.\nAction: calc[5 - 3]",
         "Thought: done.\nFinal Answer: 2"]


def model_plan(tmp_path: Path, url: str) -> Path:
    text = (PLANS / "models" / "library_ollama.toml").read_text(encoding="utf-8")
    path = tmp_path / "ollama.toml"
    path.write_text(text.replace("http://localhost:11434/v1", url + "/v1"), encoding="utf-8")
    return path


def args(file: Path, allow_network: bool = False) -> argparse.Namespace:
    return argparse.Namespace(file=str(file), format=None, run=1, allow_code=False, allow_network=allow_network)


def test_without_allow_network_the_debugger_says_why_and_sends_nothing(tmp_path, capsys):
    with ModelServer(openai_text(STEPS[0])) as server:
        assert debug.build_app(args(model_plan(tmp_path, server.url))) == 2  # before any screen
        err = capsys.readouterr().err
        assert f"sends its prompts to {server.url}/v1" in err and "--allow-network" in err
        assert len(err.splitlines()) == 1
        assert server.requests == []


async def test_n_steps_a_model_plan_in_a_worker_while_the_screen_stays_live(tmp_path):
    replies = [Reply(openai_text(STEPS[0]).body, delay=1.5), openai_text(STEPS[1])]
    with ModelServer(*replies) as server:
        app = debug.build_app(args(model_plan(tmp_path, server.url), allow_network=True))
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            assert app.session.run.step_count == 0
            await pilot.press("n")
            await pilot.pause(0.3)
            # The model has not answered: the step is running in a worker...
            assert app.busy == "step" and status(app).startswith("step…")
            assert app.session.run.step_count == 0 and len(server.requests) == 1
            # ...and keys are handled meanwhile.
            await pilot.press("1")
            await pilot.pause()
            assert not app.query_one("#timeline").display
            assert app.busy == "step"
            await settle(pilot)  # the reply arrives
            assert app.busy is None
            assert (app.session.cursor, app.session.run.step_count) == (1, 1)
            scratchpad = pane_text(app, "scratchpad")
            assert "catalog[Il Gattopardo]" in scratchpad and "system prompt sent with every call" in scratchpad
            await press(pilot, "1", "n")
            assert (app.session.cursor, app.session.run.step_count) == (2, 2)
            assert "loans" in pane_text(app, "tools").split("▶")[1]
            assert "Bearer" not in str(server.requests[0].headers)  # this plan names no key


async def test_a_failed_call_is_shown_as_the_steps_error(tmp_path):
    with ModelServer(openai_error(401, "Invalid token", kind="invalid_request_error")) as server:
        app = debug.build_app(args(model_plan(tmp_path, server.url), allow_network=True))
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await press(pilot, "n")
            assert app.session.run.complete
            assert "HTTP 401 Unauthorized" in pane_text(app, "scratchpad")
            assert "Invalid token" in pane_text(app, "scratchpad")


async def test_quitting_during_a_slow_call_does_not_wait_for_the_reply(tmp_path):
    with ModelServer(Reply(openai_text(STEPS[0]).body, delay=30)) as server:
        app = debug.build_app(args(model_plan(tmp_path, server.url), allow_network=True))
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await pilot.press("n")
            await pilot.pause(0.3)
            assert app.busy == "step"
            run = app.session.run
            started = time.monotonic()
            await pilot.press("q")
        while not run.complete and time.monotonic() - started < 10:  # the worker's thread ends the step
            await asyncio.sleep(0.02)
        assert run.complete and time.monotonic() - started < 10  # the reply is due 30 s after the request
        errors = [event for event in run.events() if isinstance(event, ev.StepError)]
        assert [(error.kind, error.message) for error in errors] == [("policy", "ModelCallError: cancelled")]
