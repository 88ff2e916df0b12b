"""E in the debugger: the fork dialog, the fork as a new run, its marks in the timeline and
the header, switching between parent and fork, and runs that cannot be forked."""

from __future__ import annotations

from pathlib import Path

from test_tui_support import PLANS, SIZE, press, screen_text, settle, status
from textual.widgets import TextArea

from agentdbg.cli import main
from agentdbg.documents import open_document
from agentdbg.runs import Document, EventRun
from agentdbg.tui.app import DebuggerApp
from agentdbg.tui.screens.fork import ForkScreen
from agentdbg.tui.screens.lists import RunSwitcher


def live(name: str = "library_hallucinating.toml") -> DebuggerApp:
    return DebuggerApp(open_document(PLANS / name), save_breakpoints=False)


async def open_dialog(pilot, *moves: str) -> ForkScreen:
    await press(pilot, *moves, "E")
    screen = pilot.app.screen
    assert isinstance(screen, ForkScreen), status(pilot.app)
    return screen


async def write(pilot, screen: ForkScreen, text: str) -> None:
    screen.query_one(TextArea).load_text(text)
    await settle(pilot)


def check_text(screen: ForkScreen) -> str:
    return str(screen.query_one("#fork-check").render())


async def test_e_edits_an_observation_and_the_fork_is_a_new_run_shown_at_the_edited_step():
    app = live()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_dialog(pilot, "n", "n")
        assert screen.part == "observation" and screen.query_one(TextArea).text == "5"
        assert "The call is not run" in check_text(screen)
        await write(pilot, screen, "7")
        await press(pilot, "ctrl+s")
        assert not isinstance(app.screen, ForkScreen)
        assert len(app.runs) == 2 and app.run_index == 1 and app.session.cursor == 2
        assert "run 2: fork of run 1 at step 2: observation edited" in status(app)
        assert app.session.record().observation == "7"
        assert app.query_one("Timeline").row_text(2).startswith(" ✎")
        assert "fork of run 1 at step 2: observation edited" in app.query_one("#header").text
        assert "Step 2 · ✎ observation edited in this fork" in " ".join(app.query_one("#scratchpad").line_texts)
        await press(pilot, "c")  # the rest runs on demand, like any live plan
        assert app.session.run.complete and app.session.run.end.answer == "2"


async def test_r_switches_between_parent_and_fork_and_the_parent_marks_where_it_branches():
    app = live()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_dialog(pilot, "n", "n", "n")
        await write(pilot, screen, "0")
        await press(pilot, "ctrl+s")
        await press(pilot, "r")
        switcher = app.screen
        assert isinstance(switcher, RunSwitcher)
        listed = screen_text(app)
        assert "fork of run 1 at step 3: observation edited" in listed
        await press(pilot, "home", "enter")  # the parent
        assert app.run_index == 0 and app.session.cursor == 3  # where it was
        assert app.query_one("Timeline").row_text(3).startswith(" ⑂")
        assert "fork of" not in app.query_one("#header").text
        await press(pilot, "r", "end", "enter")
        assert app.run_index == 1 and app.session.record().observation == "0"


async def test_an_action_that_does_not_parse_is_shown_in_place_and_the_dialog_stays():
    app = live()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_dialog(pilot, "n", "n")
        await pilot.click("#fork-action")
        await settle(pilot)
        assert screen.part == "action" and screen.query_one(TextArea).text == "catalog[Il Gattopardo]"
        assert "reads as catalog[Il Gattopardo]" in check_text(screen)
        await write(pilot, screen, "catalog[[")
        assert "the action does not parse (bracket format)" in check_text(screen)
        await press(pilot, "ctrl+s")
        assert app.screen is screen and len(app.runs) == 1
        await write(pilot, screen, "loans[Il Gattopardo]")
        await press(pilot, "ctrl+s")
        assert app.run_index == 1 and app.session.record().call == "loans[Il Gattopardo]"
        assert app.session.record().thought == "I need the total copies."


async def test_a_part_the_step_lacks_says_why_in_the_dialog():
    app = live()
    async with app.run_test(size=SIZE) as pilot:
        await press(pilot, "c", "c")  # the final answer, step 5
        screen = await open_dialog(pilot)
        assert screen.part == "action"
        await pilot.click("#fork-observation")
        await settle(pilot)
        assert "step 5 has no observation to edit: it is the final answer" in check_text(screen)
        await press(pilot, "ctrl+s")
        assert app.screen is screen
        await press(pilot, "escape")
        assert len(app.runs) == 1


async def test_an_imported_run_says_it_cannot_be_re_run_instead_of_opening_the_dialog():
    from agentdbg.plans import load_plan

    events = load_plan(PLANS / "library_good.toml").run().events
    app = DebuggerApp(Document("episode.traj", "swe-agent", [EventRun(events)]), save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await press(pilot, "E")
        assert not isinstance(app.screen, ForkScreen)
        assert "this run was recorded from a swe-agent file (episode.traj), another agent stack; " \
               "its policy cannot be re-run here" in status(app)


async def test_a_trace_written_by_agentdbg_fork_shows_its_branch(tmp_path: Path):
    out = tmp_path / "fork.jsonl"
    assert main(["fork", str(PLANS / "library_hallucinating.toml"), "--step", "2", "--observation", "7",
                 "-o", str(out), "-q"]) == 0
    app = DebuggerApp(open_document(out), save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.query_one("Timeline").row_text(2).startswith(" ⑂")
        await press(pilot, "r", "end", "enter")
        assert app.query_one("Timeline").row_text(2).startswith(" ✎")
        # and the fork of a file's run forks again (its plan is found beside the trace, by the name it recorded)
        await press(pilot, "g")
        await pilot.press("4", "enter")
        await settle(pilot)
        screen = await open_dialog(pilot)
        await write(pilot, screen, "9")
        await press(pilot, "ctrl+s")
        assert len(app.runs) == 3 and app.session.run.info.fork["parent"] == 2
        assert app.session.run.record(2).observation == "7" and app.session.record().observation == "9"


def test_the_fork_dialog_at_80x24(snap_compare):
    async def run_before(pilot) -> None:
        await settle(pilot)
        await press(pilot, "n", "n", "E")
        pilot.app.screen.query_one(TextArea).cursor_blink = False
        await settle(pilot)

    assert snap_compare(live(), terminal_size=(80, 24), run_before=run_before)


def test_the_fork_dialog_at_a_turn_of_several_calls_at_80x24(snap_compare):
    async def run_before(pilot) -> None:
        await settle(pilot)
        await press(pilot, "n", "n", "n", "E")
        pilot.app.screen.query_one(TextArea).cursor_blink = False
        await settle(pilot)

    assert snap_compare(live("kv_parallel.toml"), terminal_size=(80, 24), run_before=run_before)


async def test_hostile_text_opens_in_the_dialog_as_plain_text(tmp_path: Path):
    out = tmp_path / "fork.jsonl"
    hostile = "\x1b[2J[bold red]boom[/] \u202eevil\x07"
    assert main(["fork", str(PLANS / "library_hallucinating.toml"), "--step", "2", "--observation", hostile,
                 "-o", str(out), "-q"]) == 0
    app = DebuggerApp(open_document(out), save_breakpoints=False, allow_code=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await press(pilot, "r", "end", "enter", "n")
        screen = await open_dialog(pilot)
        text = screen.query_one(TextArea).text
        assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
        assert "[bold red]boom[/]" in text and "<U+202E>evil" in text
        assert "\x1b" not in screen_text(app)


async def test_a_model_run_opened_without_allow_network_says_it_cannot_be_re_run(tmp_path: Path):
    from test_cli_fork import model_trace

    app = DebuggerApp(open_document(model_trace(tmp_path)), save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await press(pilot, "E")
        assert not isinstance(app.screen, ForkScreen)
        assert "its policy cannot be re-run here without --allow-network" in status(app)


async def test_w_on_a_fork_writes_its_parent_then_the_fork(tmp_path: Path):
    from agentdbg.trace.reader import open_trace

    app = live()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_dialog(pilot, "n", "n")
        await write(pilot, screen, "7")
        await press(pilot, "ctrl+s", "c", "w")
        target = tmp_path / "both.jsonl"
        field = app.screen.query_one("#prompt-input")
        field.value = str(target)
        await press(pilot, "enter")
    with open_trace(target, background=False) as trace:
        assert len(trace.runs) == 2
        assert trace.runs[1].info.fork == {"parent": 1, "step": 2, "edited": "observation", "text": "7"}
        assert trace.runs[1].record(2).observation == "7" and trace.runs[0].record(2).observation == "5"


def test_the_run_list_is_the_file_s_runs_then_the_session_s_forks():
    from agentdbg.tui.forks import RunsWithForks, fork_marks

    class Run:
        def __init__(self, fork=None):
            self.info = type("Info", (), {"fork": fork})()

    file_runs = [Run(), Run({"parent": 1, "step": 4, "edited": "thought"})]
    forks = [Run({"parent": 2, "step": 2, "edited": "action"})]
    runs = RunsWithForks(file_runs, forks)
    assert len(runs) == 3 and runs[2] is forks[0] and runs[-1] is forks[0] and runs[0] is file_runs[0]
    assert list(runs) == [*file_runs, *forks]
    assert fork_marks(runs, 0) == {4: "branch"}
    assert fork_marks(runs, 1) == {4: "edited", 2: "branch"}
    assert fork_marks(runs, 2) == {2: "edited"}
    try:
        runs[3]
    except IndexError as exc:
        assert "no run 4" in str(exc)
    else:
        raise AssertionError("no IndexError")


SLOW = """\
name = "slow"
task = "Wait for the slow tool."

[guards]
max_steps = 12

[[tools]]
name = "slow"
kind = "scripted"
params = { what = "str" }
timeout = 0.25
responses = [{ hang = 1.0 }]

[policy]
kind = "outputs"
format = "bracket"
then = "repeat"
outputs = ["Thought: again.\\nAction: slow[x]"]
"""


async def test_esc_cancels_a_fork_still_replaying_and_nothing_is_added(tmp_path: Path):
    plan = tmp_path / "slow.toml"
    plan.write_text(SLOW, encoding="utf-8")
    trace = tmp_path / "slow.jsonl"
    assert main(["record", str(plan), "-o", str(trace), "-q"]) == 0
    app = DebuggerApp(open_document(trace), save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await open_dialog(pilot, "end")
        await pilot.click("#fork-thought")
        await pilot.pause()
        await pilot.press("ctrl+s")  # 11 replayed steps of a quarter of a second each
        await pilot.pause(0.4)
        assert app.busy == "fork"
        await pilot.press("escape")
        await settle(pilot)
        assert app.busy is None and len(app.runs) == 1 and app.run_index == 0
        assert "not forked: fork cancelled" in status(app)


async def test_e_on_a_plan_item_edits_its_observation_and_the_plan_goes_on():
    app = live("kv_tax_planned.toml")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_dialog(pilot, "n", "n", "n")
        assert app.session.record().item == 2
        assert screen.part == "observation" and screen.query_one(TextArea).text == "18.0"
        assert "the plan goes on with its next item" in check_text(screen)
        await write(pilot, screen, "99")
        await press(pilot, "ctrl+s")
        assert not isinstance(app.screen, ForkScreen)
        assert len(app.runs) == 2 and app.session.record().observation == "99"
        await press(pilot, "c")
        run = app.session.run
        assert run.complete and [run.record(n).item for n in range(1, run.step_count + 1)] == [0, 1, 2, 3, 4, 5, 0]


async def test_e_on_a_plan_shows_its_calls_one_a_line_and_reads_an_edited_plan():
    app = live("kv_tax_planned.toml")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_dialog(pilot, "n")
        assert screen.part == "action"
        assert screen.query_one(TextArea).text.splitlines()[0] == 'kv_set {"key": "base", "value": "120"}'
        assert "a plan of 5" in check_text(screen)
        await write(pilot, screen, 'kv_get {"key": "base"}')
        assert "a plan of 1" in check_text(screen)
        await write(pilot, screen, "kv_get {oops")
        assert "does not parse" in check_text(screen) and screen.edit is None


async def test_e_on_a_turn_of_several_calls_picks_the_call_whose_observation_is_edited():
    app = live("kv_parallel.toml")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_dialog(pilot, "n")
        assert screen.part == "observation" and screen.query_one(TextArea).text == "stored base"
        screen.query_one("#fork-call-2").value = True
        await settle(pilot)
        assert screen.call == 2 and screen.query_one(TextArea).text == "18.0"
        await write(pilot, screen, "17")
        await press(pilot, "ctrl+s")
        assert [c.observation for c in app.session.record().calls] == ["stored base", "17"]


# -- no side effect twice, no code the trace chose ------------------------------------------


def recorded(tmp_path: Path, monkeypatch, **options) -> tuple[Path, Path]:
    """A keyed plan recorded once: its trace and the ledger its one call appended to."""
    from test_fork_containment import TESTS, keyed_plan

    monkeypatch.syspath_prepend(str(TESTS))
    plan, ledger = keyed_plan(tmp_path, **options)
    trace = tmp_path / "run.jsonl"
    assert main(["record", str(plan), "-o", str(trace), "--allow-code", "--approve", "always", "-q"]) == 0
    return trace, ledger


async def test_a_fork_gives_a_replayed_call_only_the_decision_made_for_it(tmp_path: Path, monkeypatch):
    from test_fork_containment import TESTS, lines, mixed_decisions

    monkeypatch.syspath_prepend(str(TESTS))
    trace, ledger = mixed_decisions(tmp_path)
    app = DebuggerApp(open_document(trace), save_breakpoints=False, allow_code=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_dialog(pilot, "n", "n")
        await pilot.click("#fork-thought")
        await write(pilot, screen, "and now?")
        await press(pilot, "ctrl+s")
        assert len(app.runs) == 2, status(app)
        assert app.session.run.record(1).calls[0].observation == "ERROR: denied by ops: not now"
    assert lines(ledger) == ["B paid"]  # the note's denial stands: it never ran


async def test_a_fork_never_runs_the_code_of_a_plan_the_trace_names_in_its_place(tmp_path: Path, monkeypatch):
    from test_fork_containment import evil_plan, with_run_start

    trace, ledger = recorded(tmp_path, monkeypatch)
    evil, marker = evil_plan(tmp_path)
    with_run_start(trace, source=str(evil))
    app = DebuggerApp(open_document(trace), save_breakpoints=False, allow_code=True)
    async with app.run_test(size=SIZE) as pilot:
        await press(pilot, "n", "n", "E")
        assert not isinstance(app.screen, ForkScreen)
        assert "is not the one the run was recorded with" in status(app) and "--plan PLAN" in status(app)
    assert not marker.exists()
    named = DebuggerApp(open_document(trace), save_breakpoints=False, allow_code=True,
                        fork_plan=str(tmp_path / "plan.toml"))
    async with named.run_test(size=SIZE) as pilot:
        await open_dialog(pilot, "n", "n")  # --plan names the plan: the fork may be made
    assert not marker.exists()


async def test_a_fork_never_runs_a_call_whose_operation_line_is_damaged(tmp_path: Path, monkeypatch):
    from test_fork_containment import call, damage, lines

    trace, ledger = recorded(tmp_path, monkeypatch, dangerous=False)
    damage(trace, "operation", lambda line: line[:-1])
    app = DebuggerApp(open_document(trace), save_breakpoints=False, allow_code=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_dialog(pilot)  # at step 1, the keyed call
        await pilot.click("#fork-action")
        await write(pilot, screen, call(ledger))
        await press(pilot, "ctrl+s")
        assert len(app.runs) == 2, status(app)
        assert app.session.record().observation.startswith("ERROR: not run: line 5 of the trace is damaged")
    assert lines(ledger) == ["A-17 paid"]
