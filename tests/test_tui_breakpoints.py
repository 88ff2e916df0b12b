"""The breakpoint manager (B) with many breakpoints, and the breakpoints file as the
debugger reads and saves it: files it cannot read are kept, links are never followed."""

from __future__ import annotations

import json
import os
import threading

import pytest
from test_tui_support import SIZE, demo_app, plan_copy, press, settle, status

from agentdbg.debugger.sidecar import breakpoints_target, open_sidecar_for, sidecar_paths
from agentdbg.documents import open_document
from agentdbg.tui.app import DebuggerApp
from agentdbg.tui.widgets.breakpoint_list import BreakpointList

MANY = 50_000


async def test_the_manager_opens_at_once_with_many_breakpoints_and_edits_them():
    app = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "n", "n")
        for step in range(1, MANY + 1):
            app.breakpoints.add("step", step)
        app.breakpoints.add("tool", "calc")
        await press(pilot, "B")
        listing = app.screen.query_one(BreakpointList)
        # One widget paints the rows on screen: none is mounted per breakpoint.
        assert len(app.screen.query("*")) < 60
        assert listing.row_count == MANY + 1
        assert "(50,001)" in str(app.screen.query_one("#bp-title").render())
        assert listing.cursor == 1 and listing.row_text(1).split()[:3] == ["●", "step", "2"]  # the current step's
        listing.focus()
        await press(pilot, "end")
        assert listing.cursor == MANY and listing.row_text(MANY).split()[:3] == ["●", "tool", "calc"]
        await press(pilot, "space")
        assert not app.breakpoints[MANY].enabled and listing.row_text(MANY).startswith(" ○")
        await press(pilot, "pageup")
        assert 0 < listing.cursor < MANY
        await press(pilot, "home", "d")
        assert listing.row_count == MANY and not app.breakpoints.has_step(1)
        assert listing.row_text(0).split()[:3] == ["●", "step", "2"]
        # Remove all asks first: one press only asks, the second removes.
        await pilot.click("#bp-clear")
        await settle(pilot)
        assert len(app.breakpoints) == MANY and "Press again" in str(app.screen.query_one("#bp-clear").label)
        await pilot.pause(0.3)  # a button ignores a click while it shows the last one
        await pilot.click("#bp-clear")
        await settle(pilot)
        assert len(app.breakpoints) == 0 and listing.row_count == 0 and listing.selected() is None
        await press(pilot, "space", "d")  # nothing selected: nothing happens
        await press(pilot, "escape")
        assert not app.query_one("#timeline").row_text(2).startswith("●")


# --- the breakpoints file ---------------------------------------------------------------

PLAN = "library_hallucinating.toml"
NEWER = b'{"format": "agentdbg-breakpoints", "version": 2, "breakpoints": []}'


def sparse_huge(path):
    with open(path, "wb") as out:
        out.truncate(64 * 1024 * 1024)


UNREADABLE = {
    "newer version": (lambda path: path.write_bytes(NEWER), "unsupported version 2"),
    "another program's": (lambda path: path.write_bytes(b'{"editor.fontSize": 12}'), "not an agentdbg breakpoints file"),
    "bad JSON": (lambda path: path.write_bytes(b'{"format": '), "not valid JSON"),
    "a link": (lambda path: path.symlink_to(path.with_name("victim")), "symbolic link, which is not followed"),
    "a link to a device": (lambda path: path.symlink_to("/dev/zero"), "symbolic link, which is not followed"),
    "a named pipe": (lambda path: os.mkfifo(path), "named pipe (FIFO), not a regular file"),
    "a directory": (lambda path: path.mkdir(), "a directory, not a regular file"),
    "huge": (sparse_huge, "too large (67,108,864 bytes"),
}


def snapshot(path) -> tuple:
    """What is at ``path``, to check it is left exactly as it was."""
    if path.is_symlink():
        return ("link", os.readlink(path))
    if path.is_file():
        return ("file", path.stat().st_size, path.read_bytes()[:1000])
    return ("other", path.is_dir(), path.is_fifo())


def plan_sidecars(plan) -> list:
    """Where a plan's breakpoints may be saved: in the user's data directory."""
    paths = sidecar_paths(breakpoints_target(plan, "plan"))
    paths[0].parent.mkdir(parents=True, exist_ok=True)
    return paths


def recorded_notices(app) -> list[tuple[str, str]]:
    notices: list[tuple[str, str]] = []
    app.notify = lambda message, **options: notices.append((options.get("title", ""), message))
    return notices


def opens_without_blocking(plan) -> None:
    """Reading the breakpoints of ``plan`` returns (run before the app: a blocked read
    would hang the test instead of failing it)."""
    reader = threading.Thread(target=open_sidecar_for, args=(plan, "plan"), daemon=True)
    reader.start()
    reader.join(10)
    assert not reader.is_alive(), "reading the breakpoints file blocked"


@pytest.mark.parametrize("what", list(UNREADABLE))
async def test_a_breakpoints_file_it_cannot_read_is_kept_and_breakpoints_go_beside_it(tmp_path, what):
    make, reason = UNREADABLE[what]
    if what == "a named pipe" and not hasattr(os, "mkfifo"):
        pytest.skip("named pipes need a POSIX system")
    if what == "a link":
        (tmp_path / "victim").write_text("precious")
    plan = plan_copy(tmp_path, PLAN)
    usual, second, _ = plan_sidecars(plan)
    make(usual)
    before = snapshot(usual)
    opens_without_blocking(plan)
    app = DebuggerApp(open_document(plan))
    notices = recorded_notices(app)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.session is not None and app.screen.id != "problems"  # the run opened as usual
        [problem] = [p for p in app.problems if p.startswith("breakpoints not loaded")]
        assert reason in problem and str(usual) in problem
        assert problem.endswith(f"kept as it is; breakpoints you set are saved to {second}")
        assert any(title == "Problems reading the file" and "breakpoints not loaded" in message
                   for title, message in notices)
        await press(pilot, "n", "b", "n", "b")
        assert status(app) == "breakpoint set on step 2"
        told = [message for title, message in notices if title == "Breakpoints saved under another name"]
        assert told == [f"{usual.name} cannot be read and is kept as it is; breakpoints you set are "
                        f"saved to {second.name} (e lists why)"]  # once, not at every b
    assert snapshot(usual) == before
    if what == "a link":
        assert (tmp_path / "victim").read_text() == "precious"
    saved = json.loads(second.read_text())["breakpoints"]
    assert [entry["spec"] for entry in saved] == ["1", "2"]
    again = DebuggerApp(open_document(plan))  # the next opening reads them back
    async with again.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert again.breakpoints.has_step(1) and again.breakpoints.has_step(2)
        assert any(str(second) in p and "read from and saved to" in p for p in again.problems)


async def test_when_no_name_is_free_breakpoints_work_but_it_says_they_are_not_saved(tmp_path):
    plan = plan_copy(tmp_path, PLAN)
    for path in plan_sidecars(plan):
        path.write_bytes(NEWER)
    app = DebuggerApp(open_document(plan))
    notices = recorded_notices(app)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert len([p for p in app.problems if p.startswith("breakpoints not loaded")]) == 3
        await press(pilot, "n", "n", "n", "b")
        assert status(app) == "breakpoint set on step 3 (not saved to a file: e says why)"
        await press(pilot, "home", "c")
        assert app.session.cursor == 3 and "breakpoint: step 3" in status(app)  # it works all the same
        await press(pilot, "n", "b")
        told = [message for title, message in notices if title == "Breakpoints not saved"]
        assert len(told) == 1 and "breakpoints you set are not saved" in told[0]
        assert app.problems[-1].startswith("breakpoints you set are not saved")
        await press(pilot, "e")
        assert app.screen.id == "log"
    assert all(path.read_bytes() == NEWER for path in plan_sidecars(plan))


async def test_a_link_put_in_place_after_opening_is_not_replaced(tmp_path):
    plan = plan_copy(tmp_path, PLAN)
    usual = plan_sidecars(plan)[0]
    victim = tmp_path / "victim"
    victim.write_text("precious")
    app = DebuggerApp(open_document(plan))
    notices = recorded_notices(app)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        usual.symlink_to(victim)
        await press(pilot, "n", "b")
        assert status(app).endswith("(not saved to a file: e says why)")
        assert [title for title, _ in notices] == ["Breakpoints not saved"]
        assert "it is a symbolic link" in notices[0][1]
    assert victim.read_text() == "precious" and usual.is_symlink()
