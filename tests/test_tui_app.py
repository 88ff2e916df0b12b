"""The debugger driven by keys and mouse with the pilot, asserting what the panes show."""

from __future__ import annotations

import json

from test_tui_support import (
    SIZE,
    deferred_index,
    demo_app,
    event_document,
    live_app,
    pane_text,
    press,
    recorded_document,
    screen_text,
    settle,
    status,
    type_text,
)

from agentdbg.debugger.breakpoints import sidecar_path
from agentdbg.debugger.sidecar import breakpoints_target
from agentdbg.model.runs import Advancing
from agentdbg.tui.app import DebuggerApp
from agentdbg.tui.widgets.timeline import Timeline


def stops_heard(messages: list) -> list:
    """The stops a continue reported (``DebuggerApp.Stopped`` messages), in order."""
    return [message.stop for message in messages if isinstance(message, DebuggerApp.Stopped)]


async def test_demo_continue_stops_at_the_unknown_tool_then_runs_to_the_answer():
    app = demo_app()
    messages: list = []
    async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
        await settle(pilot)
        assert app.session.cursor == 0
        assert "Question: How many copies of Il Gattopardo" in pane_text(app, "scratchpad")
        await press(pilot, "c")
        await pilot.pause()
        assert app.session.cursor == 1
        (stop,) = stops_heard(messages)
        assert stop.step == 1 and stop.at_breakpoint
        assert any(reason.startswith("tool error") and "web_search" in reason for reason in stop.reasons)
        assert "Stopped at step 1" in status(app)  # and the status line says so
        tools = pane_text(app, "tools")
        assert "web_search (unknown tool)" in tools
        assert "no such tool exists" in tools
        timeline = app.query_one(Timeline)
        assert "✗" in timeline.row_text(1) and "web_search" in timeline.row_text(1)
        await press(pilot, "c")
        await pilot.pause()
        assert app.session.cursor == 5
        assert [stop.step for stop in stops_heard(messages)] == [1, 5]
        assert any(reason.startswith("final answer: 2") for reason in stops_heard(messages)[-1].reasons)
        assert "Final Answer: 2" in pane_text(app, "scratchpad")
        assert "answered" in app.query_one("#header").text
        # Stepping back shows exactly the state of the earlier step.
        await press(pilot, "p")
        assert app.session.cursor == 4
        expected = app.session.run.state_at(4)
        guards = app.query_one("#guards")
        assert guards.state == expected
        text = pane_text(app, "guards")
        assert "█" in text and "4/6" in text and f"tokens {expected.tokens[0]} no limit" in text
        assert "▶ Step 4" in pane_text(app, "scratchpad")
        assert "Final Answer" not in pane_text(app, "scratchpad")
        assert app.query_one("#memory").state == expected


async def test_step_forward_and_back_keys(tmp_path):
    app = live_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "n", "n", "n")
        assert app.session.cursor == 3
        assert app.session.run.step_count == 3  # a live run runs only as far as the cursor
        assert "loans" in pane_text(app, "tools").split("▶")[1]
        await press(pilot, "p")
        assert app.session.cursor == 2
        await press(pilot, "N")
        assert app.session.cursor == 1
        await press(pilot, "p")
        assert app.session.cursor == 1
        assert status(app) == "at the first step"
        await press(pilot, "down")  # the timeline's own keys step too
        assert app.session.cursor == 2
        await press(pilot, "up")
        assert app.session.cursor == 1


async def test_home_end_and_go_to(tmp_path):
    app = DebuggerApp(recorded_document(), save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.session.cursor == 1
        await press(pilot, "end")
        assert app.session.cursor == 5
        await press(pilot, "home")
        assert app.session.cursor == 1
        await press(pilot, "g")
        assert app.screen.id == "goto"
        await type_text(pilot, "3")
        await press(pilot, "enter")
        assert app.session.cursor == 3
        assert "▶ Step 3" in pane_text(app, "scratchpad")
        await press(pilot, "g")
        await type_text(pilot, "x")
        await press(pilot, "enter")
        assert app.screen.id == "goto"  # not a number: the dialog stays and says why
        assert "step number" in str(app.screen.query_one("#prompt-hint").render())
        await press(pilot, "escape")
        assert app.session.cursor == 3


async def test_go_to_on_a_live_run_runs_the_engine_that_far(tmp_path):
    app = live_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "g")
        await type_text(pilot, "4")
        await press(pilot, "enter")
        assert app.session.cursor == 4
        assert app.session.run.step_count == 4
        assert "calc[5 - 3]" in pane_text(app, "scratchpad")


async def test_breakpoint_toggle_saves_beside_the_file_and_reloads(tmp_path):
    app = live_app(tmp_path)
    messages: list = []
    async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
        await settle(pilot)
        await press(pilot, "g")
        await type_text(pilot, "3")
        await press(pilot, "enter", "b")
        assert "breakpoint set on step 3" in status(app)
        assert app.query_one(Timeline).row_text(3).startswith("●")
        await press(pilot, "home", "C")  # nothing before step 1
        await press(pilot, "c")
        await pilot.pause()
        assert app.session.cursor == 3 and stops_heard(messages)[-1].reasons == ["breakpoint: step 3"]
    sidecar = sidecar_path(breakpoints_target(tmp_path / "library_hallucinating.toml", "plan"))
    saved = json.loads(sidecar.read_text())
    assert saved["breakpoints"] == [{"kind": "step", "spec": "3", "enabled": True}]
    again = live_app(tmp_path)  # the same copy: its breakpoint file is read back
    async with again.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert again.breakpoints.has_step(3)
        await press(pilot, "n", "n", "n", "b")
        assert not again.breakpoints.has_step(3)
        assert not again.query_one(Timeline).row_text(3).startswith("●")


async def test_reverse_continue_goes_back_to_the_previous_break():
    app = DebuggerApp(recorded_document(), save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "end")
        await press(pilot, "C")
        assert app.session.cursor == 1
        assert "tool error" in status(app)
        await press(pilot, "C")
        assert app.session.cursor == 1 and "start of run" in status(app)


async def test_stuck_run_stops_at_the_repeat(tmp_path):
    app = live_app(tmp_path, "library_stuck.toml")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "c")
        assert app.session.cursor == 2
        assert "repeated action" in status(app)
        assert "↻" in app.query_one(Timeline).row_text(2) or "⊘" in app.query_one(Timeline).row_text(2)
        assert "repeat ███████████████████████████ 1/1" in pane_text(app, "guards")  # one repeat of one allowed
        assert app.query_one("#guards").levels()["repeat"] == "at"


async def test_breakpoint_manager_adds_filters_toggles_and_reports_bad_ones(tmp_path):
    app = live_app(tmp_path)
    messages: list = []
    async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
        await settle(pilot)
        await press(pilot, "B")
        assert app.screen.id == "breakpoints"
        await type_text(pilot, "(~error")
        await press(pilot, "enter")
        error = str(app.screen.query_one("#bp-error").render())
        assert error.startswith("✗ ") and ")" in error and len(app.breakpoints) == 0
        spec = app.screen.query_one("#bp-spec")
        spec.value = "~tool calc"
        await press(pilot, "enter")
        assert [bp.spec for bp in app.breakpoints] == ["~tool calc"]
        assert str(app.screen.query_one("#bp-error").render()) == ""
        # Turn off the tool-error break: continue goes straight to the calc step.
        app.screen.query_one("#auto-tool_error").value = False
        await settle(pilot)
        assert app.breakpoints.auto["tool_error"] is False
        await press(pilot, "escape", "c")
        await pilot.pause()
        assert app.session.cursor == 4
        assert stops_heard(messages)[-1].reasons == ["breakpoint: ~tool calc"]
        assert next(iter(app.breakpoints)).hits == 1
        await press(pilot, "B")
        table = app.screen.query_one("#bp-list")
        assert table.row_count == 1
        assert table.row_text(0).split()[-2:] == ["1", "0"]  # the hit and ignore counts
        table.focus()
        await press(pilot, "space")
        assert next(iter(app.breakpoints)).enabled is False
        await press(pilot, "d")
        assert len(app.breakpoints) == 0
        await press(pilot, "escape")
    saved = json.loads(sidecar_path(breakpoints_target(tmp_path / "library_hallucinating.toml", "plan")).read_text())
    assert saved["auto"]["tool_error"] is False and saved["breakpoints"] == []


async def test_search_finds_steps_and_next_previous_wrap():
    app = DebuggerApp(recorded_document(), save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "slash")
        assert app.screen.id == "search"
        await type_text(pilot, "Gattopardo")
        await press(pilot, "enter")
        assert app.session.cursor == 2
        assert "match for 'Gattopardo' at step 2" in status(app)
        await press(pilot, "full_stop")
        assert app.session.cursor == 3
        await press(pilot, "comma")
        assert app.session.cursor == 2
        await press(pilot, "slash")
        await pilot.press("ctrl+a")
        await type_text(pilot, "zzz-nothing")
        await press(pilot, "enter")
        assert app.session.cursor == 2 and "no match" in status(app)


async def test_write_then_open_the_trace(tmp_path):
    app = live_app(tmp_path)
    target = tmp_path / "written.jsonl"
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "n", "n")
        await press(pilot, "w")
        assert app.screen.id == "write"
        app.screen.query_one("#prompt-input").value = str(target)
        await press(pilot, "enter")
        assert target.is_file()
        assert "wrote" in status(app)
        lines = target.read_text().splitlines()
        assert sum('"type":"step"' in line for line in lines) == 2  # what the live run has done
        await press(pilot, "o")
        assert app.screen.id == "open"
        app.screen.query_one("#prompt-input").value = str(tmp_path / "missing.jsonl")
        await press(pilot, "enter")
        assert "could not open" in status(app) and app.session.cursor == 2
        await press(pilot, "o")
        app.screen.query_one("#prompt-input").value = str(target)
        await press(pilot, "enter")
        if app.document.kind == "trace":
            assert app.document.path.endswith("written.jsonl")
            assert not isinstance(app.session.run, Advancing)


async def test_run_switcher_on_a_file_with_several_runs():
    app = DebuggerApp(event_document("library_good.toml", "library_stuck.toml"), save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "(run 1/2)" in app.query_one("#header").text
        await press(pilot, "end")
        assert app.session.cursor == 4
        await press(pilot, "r")
        assert app.screen.id == "runs"
        await press(pilot, "down", "enter")
        assert app.run_index == 1
        assert "(run 2/2)" in app.query_one("#header").text
        assert "library-stuck" in app.query_one("#header").text
        assert app.session.cursor == 1
        await press(pilot, "r", "up", "enter")  # back to run 1: its cursor was kept
        assert app.run_index == 0 and app.session.cursor == 4


async def test_help_screen_lists_every_binding():
    from agentdbg.tui.commands import COMMANDS

    app = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "question_mark")
        text = screen_text(app)
        for command in [c for c in COMMANDS if c.group == "Stepping"]:
            assert command.help[:30] in text
        await press(pilot, "escape")
        assert app.screen is app.screen_stack[0]


async def test_every_command_is_a_binding_with_an_id_and_in_the_palette():
    from agentdbg.tui.commands import COMMANDS

    app = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        ids = {binding.id for binding in DebuggerApp.BINDINGS}
        assert {command.id for command in COMMANDS} <= ids
        titles = [command.title for command in app.get_system_commands(app.screen)]
        for command in COMMANDS:
            assert any(title.startswith(command.title) for title in titles)
        await pilot.press("ctrl+p")
        await settle(pilot)
        await type_text(pilot, "Continue (c)")
        await settle(pilot)
        await press(pilot, "enter")
        await settle(pilot)
        assert app.session.cursor == 1 and "Stopped at step 1" in status(app)


async def test_click_a_timeline_row():
    app = DebuggerApp(recorded_document(), save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        timeline = app.query_one(Timeline)
        region = timeline.content_region
        await pilot.click(offset=(region.x + 5, region.y + 3))
        await settle(pilot)
        assert app.session.cursor == 4


async def test_panes_hide_show_and_resize():
    app = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for key, pane in (("1", "timeline"), ("2", "tools"), ("3", "memory"), ("4", "guards")):
            await press(pilot, key)
            assert app.query_one(f"#{pane}").display is False
        assert app.query_one("#sidebar").display is False
        await press(pilot, "2")
        assert app.query_one("#sidebar").display is True
        before = app.query_one("#sidebar").size.width
        await press(pilot, "greater_than_sign")
        assert app.query_one("#sidebar").size.width == before + 4
        await press(pilot, "less_than_sign", "less_than_sign")
        assert app.query_one("#sidebar").size.width == before - 4


async def test_fold_long_observations(tmp_path):
    from agentdbg.engine import events as ev
    from agentdbg.runs import Document, EventRun

    long = "\n".join(f"line {i}" for i in range(50))
    events = [ev.RunStart(step=0, task="read a long file")]
    for step in (1, 2):
        events += [ev.StepStart(step=step), ev.ActionTaken(step=step, tool="cat", args="f", call="cat[f]"),
                   ev.Observation(step=step, text=long)]
    app = DebuggerApp(Document("long", "trace", [EventRun(events)]), save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "n")
        text = pane_text(app, "scratchpad")
        assert "46 more lines; z unfolds" in text and text.count("line 49") == 1
        await press(pilot, "z")
        assert pane_text(app, "scratchpad").count("line 49") == 2


async def test_escape_cancels_a_long_continue():
    import time

    from agentdbg.engine import events as ev
    from agentdbg.runs import Document, EventRun

    events = [ev.RunStart(step=0, task="slow")]
    for step in range(1, 3001):
        events += [ev.StepStart(step=step), ev.ActionTaken(step=step, tool="calc", args=str(step))]

    class SlowRun(EventRun):
        def record(self, step):
            time.sleep(0.002)
            return super().record(step)

    app = DebuggerApp(Document("slow", "trace", [SlowRun(events), EventRun(events)]), save_breakpoints=False)
    app.breakpoints.auto["final"] = False
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.sessions[0].breakpoints.auto["final"] = False
        await pilot.press("c")
        await pilot.pause(0.05)
        assert app.busy == "continue"
        await pilot.press("n")  # ignored while busy
        assert "in progress" in status(app)
        app.say("")
        await pilot.press("r")  # so is switching runs
        assert "continue in progress" in status(app) and app.screen is app.screen_stack[0]
        await pilot.press("escape")
        await settle(pilot)
        assert app.busy is None
        assert app.session.cursor == 1
        assert "cancelled" in status(app)


async def test_nothing_open_says_why_and_offers_open(tmp_path):
    app = DebuggerApp(None, error=f"{tmp_path}/nope.jsonl: no such file")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        text = pane_text(app, "scratchpad")
        assert "Could not open the file" in text and "nope.jsonl: no such file" in text
        await press(pilot, "n", "c", "b", "g", "w", "r")
        assert app.screen is app.screen_stack[0]
        await press(pilot, "e")
        assert app.screen.id == "log"
        assert "nope.jsonl" in screen_text(app)
        await press(pilot, "escape", "o")
        assert app.screen.id == "open"


def test_a_first_time_action_leaves_the_repeat_bar_empty():
    from agentdbg.tui.widgets.guards import level, progress

    assert progress("repeat", 1, 2) == 0.0 and level(1, 2, "repeat") == "ok"
    assert progress("repeat", 2, 2) == 1.0 and level(2, 2, "repeat") == "at"
    assert progress("repeat", 2, 3) == 0.5
    assert progress("steps", 3, 6) == 0.5 and level(6, 6, "steps") == "at"


def test_outcome_colours_tell_success_failure_and_foreign_statuses_apart():
    from agentdbg.tui.widgets.header import outcome_style

    assert outcome_style("answered", True) == "bold green"
    assert outcome_style("action repeated", False) == "bold red"
    assert outcome_style("submitted", True) == "bold green"
    assert outcome_style("unfinished", False) == "bold yellow"


async def test_the_prompt_view_shows_what_the_policy_saw_with_memory(tmp_path):
    from test_tui_support import live_app, pane_text, press, settle, type_text

    app = live_app(tmp_path, "memory_research.toml")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "g")
        await type_text(pilot, "14")
        await press(pilot, "enter")
        assert app.session.cursor == 14
        transcript = pane_text(app, "scratchpad")
        assert "Recalled from memory:" not in transcript
        await press(pilot, "v")
        prompt = pane_text(app, "scratchpad")
        assert "Prompt at step 14 as the policy saw it" in prompt
        assert "Summary of earlier steps:" in prompt and "Recalled from memory:" in prompt
        assert "Brera Observatory in Milan was founded in 1764" in prompt  # brought back by recall
        assert "Step 14 current" in prompt and "Action: calc[1872 - 1764]" in prompt  # what it answered
        await press(pilot, "p")
        assert "Prompt at step 13" in pane_text(app, "scratchpad")
        await press(pilot, "v")
        assert "Prompt at step" not in pane_text(app, "scratchpad")


async def test_the_prompt_view_of_a_run_without_memory_is_the_transcript_so_far():
    from test_tui_support import demo_app, pane_text, press, settle

    app = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "n", "n", "v")
        prompt = pane_text(app, "scratchpad")
        assert "the prompt is the transcript so far" in prompt
        assert "Question: How many copies of Il Gattopardo are available?" in prompt
        assert "Observation: ERROR: tool 'web_search' does not exist" in prompt  # step 1, seen at step 2


async def test_a_growth_message_after_quitting_is_quiet():
    from test_tui_support import demo_app, settle

    app = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
    app.poll()  # a Grew message already on its way when the screen went: no error


async def test_a_poll_tick_while_the_panes_are_taken_down_is_quiet():
    from test_tui_support import demo_app, settle

    app = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await app.query_one("#header").remove()  # quitting removes the panes one by one
        app.poll()
        await app.query_one("#scratchpad").remove()
        app.session.cursor = 0
        app.query_one(Timeline).step_count = -1  # as if the run had grown meanwhile
        app.poll()


async def test_the_header_counts_runs_the_index_finds_after_opening(tmp_path, monkeypatch):
    from agentdbg.trace.reader import open_trace
    from agentdbg.trace.synthetic import synthetic_run
    from agentdbg.trace.writer import write_trace

    deferred_index(monkeypatch)  # the first 4 KiB: all of run 1, the start of run 2
    path = tmp_path / "batch.jsonl"
    write_trace(path, [synthetic_run(5, seed=1)] + [synthetic_run(60, seed=i) for i in (2, 3)])
    app = DebuggerApp(open_trace(path), save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "(run 1/2)" in app.query_one("#header").text
        app.document.wait()
        for _ in range(50):  # the index's messages arrive; nothing polls
            await pilot.pause(0.02)
            if "(run 1/3)" in app.query_one("#header").text:
                break
        assert app.session.run.step_count == 5
        assert "(run 1/3)" in app.query_one("#header").text
