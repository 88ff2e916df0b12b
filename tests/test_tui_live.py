"""The debugger on a run still being written: following the newest step, waiting for the
next break in new steps, and pausing a real agent process at a break until c / n, its
pause_timeout, or a detach (a)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from live_support import SlowWriter, marks, start_agent, until
from test_tui_support import SIZE, pane_text, press, status

from agentdbg.documents import open_document
from agentdbg.tui.app import DebuggerApp
from agentdbg.tui.widgets.timeline import Timeline


def header(app) -> str:
    return app.query_one("#header").text


def following(path: Path) -> DebuggerApp:
    return DebuggerApp(open_document(path), save_breakpoints=False)


def pauses(path: Path) -> list[tuple[int, str]]:
    events = [json.loads(line) for line in path.read_text().splitlines()]
    return [(event["step"], event.get("ended", "resumed")) for event in events if event["type"] == "pause"]


async def test_c_at_the_newest_step_breaks_on_the_error_step_as_another_process_writes_it(tmp_path):
    path = tmp_path / "run.jsonl"
    with SlowWriter(path) as writer:
        app = following(path)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: "● live" in header(app), what="the header says live")
            assert app.session is not None and app.session.run.step_count == 0
            await press(pilot, "c")
            assert "waiting for the next break in new steps" in status(app)
            assert "waiting" in header(app)
            writer.step()  # step 1: the unknown tool, a tool error
            await until(pilot, lambda: app.session.cursor == 1, what="the cursor at the error step")
            assert "Stopped at step 1" in status(app) and "tool error" in status(app) and "(a new step)" in status(app)
            assert "web_search" in pane_text(app, "scratchpad")
            assert "✗" in app.query_one(Timeline).row_text(1)
            assert "waiting" not in header(app)
            writer.step()  # no break in step 2: c goes to the newest step and waits there for a break
            await until(pilot, lambda: app.session.run.step_count == 2, what="step 2")
            await press(pilot, "c")
            assert app.session.cursor == 2 and "waiting for the next break" in status(app)
            writer.step(2)
            await until(pilot, lambda: app.session.run.step_count == 4, what="steps 3 and 4")
            assert app.session.cursor == 2 and "waiting" in header(app)
            writer.send("")  # the rest: step 5, the final answer, and the run's end
            writer.finish()
            await until(pilot, lambda: app.session.cursor == 5, what="the final answer")
            await until(pilot, lambda: "finished" in header(app), what="the header says finished")
            assert "● live" not in header(app) and "answered" in header(app)


async def test_end_follows_the_newest_step_until_a_break_or_a_move(tmp_path):
    path = tmp_path / "run.jsonl"
    with SlowWriter(path) as writer:
        writer.step()
        app = following(path)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.session is not None and app.session.run.step_count == 1, what="step 1")
            await press(pilot, "end")
            assert "following the newest step" in status(app) and "following" in header(app)
            writer.step(2)
            await until(pilot, lambda: app.session.cursor == 3, what="the cursor on step 3")
            await press(pilot, "p")  # any move stops following
            assert "following" not in header(app)
            writer.step()
            await until(pilot, lambda: app.session.run.step_count == 4, what="step 4")
            assert app.session.cursor == 2
            await press(pilot, "end")
            assert app.session.cursor == 4
            writer.send("")
            writer.finish()
            await until(pilot, lambda: app.session.cursor == 5, what="the final answer")
            assert "final answer" in status(app) and "End follows" not in status(app)


async def test_n_at_the_newest_step_waits_for_the_next_step_and_esc_stops_waiting(tmp_path):
    path = tmp_path / "run.jsonl"
    with SlowWriter(path) as writer:
        writer.step()
        app = following(path)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.session is not None and app.session.cursor == 1, what="step 1")
            await press(pilot, "n")
            assert "waiting for step 2" in status(app)
            writer.step()
            await until(pilot, lambda: app.session.cursor == 2, what="step 2")
            await press(pilot, "c")
            assert "waiting" in header(app)
            await press(pilot, "escape")
            assert "stopped waiting" in status(app) and "waiting" not in header(app)
            writer.step()  # step 3 has no break, and nobody waits: the cursor stays
            await until(pilot, lambda: app.session.run.step_count == 3, what="step 3")
            assert app.session.cursor == 2
            writer.finish()


async def test_a_file_being_written_then_left_unfinished_is_shown_finished(tmp_path):
    path = tmp_path / "run.jsonl"
    with SlowWriter(path) as writer:
        writer.step(2)
        app = following(path)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: "● live" in header(app), what="live")
            writer.finish()  # the writer goes away without a run_end
            await until(pilot, lambda: "finished" in header(app), what="finished")
            assert "no end recorded" in header(app)
            await press(pilot, "a")
            assert "no agent to attach to" in status(app)


async def test_a_running_agent_pauses_at_its_error_step_until_c_resumes_it(tmp_path):
    path, marker = tmp_path / "run.jsonl", tmp_path / "marks"
    agent = start_agent(path, marker, attach="wait", pause_timeout=60)
    try:
        app = following(path)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.live.agent is not None, what="attached")
            await until(pilot, lambda: "agent paused at step 2" in header(app), what="the agent paused")
            assert app.session.cursor == 2  # it was at the newest step: the pause is shown
            assert "tool error" in status(app) and "KeyError" in status(app)
            time.sleep(0.5)
            assert marks(marker) == ["after 1"]  # the agent really waits
            await press(pilot, "c")
            await until(pilot, lambda: "done" in marks(marker), what="the agent went on")
            assert marks(marker) == ["after 1", "after 2", "after 3", "done"]
            await until(pilot, lambda: "finished" in header(app), what="finished")
            assert app.session.cursor == 4  # c waited for the next break: the final answer
        assert agent.wait(10) == 0
    finally:
        if agent.poll() is None:
            agent.kill()
        agent.wait()
        agent.stdout.close()
        agent.stderr.close()
    assert pauses(path) == [(2, "resumed")]


async def test_n_lets_a_paused_agent_run_one_step_and_pause_again(tmp_path):
    path, marker = tmp_path / "run.jsonl", tmp_path / "marks"
    agent = start_agent(path, marker, attach="wait", pause_timeout=60)
    try:
        app = following(path)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: "agent paused at step 2" in header(app), what="the agent paused")
            await press(pilot, "n")
            await until(pilot, lambda: "agent paused at step 3" in header(app), what="paused after one step")
            assert app.session.cursor == 3 and "one step (n)" in status(app)
            assert marks(marker) == ["after 1", "after 2"]
            await press(pilot, "n")
            await until(pilot, lambda: "done" in marks(marker), what="the agent went on")
        assert agent.wait(10) == 0
    finally:
        if agent.poll() is None:
            agent.kill()
        agent.wait()
        agent.stdout.close()
        agent.stderr.close()
    assert pauses(path) == [(2, "resumed"), (3, "resumed")]


async def test_a_paused_agent_goes_on_after_its_pause_timeout(tmp_path):
    path, marker = tmp_path / "run.jsonl", tmp_path / "marks"
    agent = start_agent(path, marker, attach="wait", pause_timeout=1.0)
    try:
        app = following(path)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: "agent paused at step 2" in header(app), what="the agent paused")
            await until(pilot, lambda: "done" in marks(marker), what="the agent went on by itself")
            await until(pilot, lambda: "went on by itself" in status(app) or "finished" in header(app),
                        what="told")
            await press(pilot, "g", "2", "enter")
            assert "then it went on by itself" in pane_text(app, "scratchpad")
        assert agent.wait(10) == 0
    finally:
        if agent.poll() is None:
            agent.kill()
        agent.wait()
        agent.stdout.close()
        agent.stderr.close()
    assert pauses(path) == [(2, "timeout")]


async def test_a_detaches_and_the_paused_agent_goes_on(tmp_path):
    path, marker = tmp_path / "run.jsonl", tmp_path / "marks"
    agent = start_agent(path, marker, attach="wait", pause_timeout=60)
    try:
        app = following(path)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: "agent paused at step 2" in header(app), what="the agent paused")
            await pilot.press("a")
            assert app.live.agent is None and "agent paused" not in header(app)
            await until(pilot, lambda: "done" in marks(marker), what="the agent went on")
            assert app.live.agent is None  # it is not attached again by itself
        assert agent.wait(10) == 0
    finally:
        if agent.poll() is None:
            agent.kill()
        agent.wait()
        agent.stdout.close()
        agent.stderr.close()
    assert pauses(path) == [(2, "detached")]


async def test_quitting_the_debugger_lets_a_paused_agent_go_on(tmp_path):
    path, marker = tmp_path / "run.jsonl", tmp_path / "marks"
    agent = start_agent(path, marker, attach="wait", pause_timeout=60)
    try:
        app = following(path)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: "agent paused at step 2" in header(app), what="the agent paused")
            await pilot.press("q")
        assert agent.wait(10) == 0
    finally:
        if agent.poll() is None:
            agent.kill()
        agent.wait()
        agent.stdout.close()
        agent.stderr.close()
    assert pauses(path) == [(2, "detached")]
