"""The debugger served to a web browser (``--confine FOLDER``): the paths typed into its
dialogs (open, write, diff, Tab completion) stay in the folder served."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_tui_support import SIZE, press, recorded_document, settle, status

from agentdbg import documents
from agentdbg.cli import _main_parser, debug, main
from agentdbg.trace.writer import write_trace
from agentdbg.tui.app import DebuggerApp
from agentdbg.tui.confine import Confinement
from agentdbg.tui.screens.prompt import complete_path


@pytest.fixture
def folders(tmp_path) -> tuple[Path, Path]:
    """The folder served (a trace in it) and a folder beside it (a trace and a secret)."""
    run = recorded_document().runs[0]
    served, outside = tmp_path / "served", tmp_path / "served-not"  # a name the served one prefixes
    for folder in (served, outside):
        folder.mkdir()
        write_trace(folder / "run.jsonl", [run.events()])
    (outside / "secret.txt").write_text("private\n")
    return served, outside


def test_a_path_in_the_folder_passes_and_every_way_out_is_refused(folders):
    served, outside = folders
    os.symlink(outside / "run.jsonl", served / "link.jsonl")
    os.symlink(outside, served / "elsewhere")
    os.symlink(outside / "none.jsonl", served / "dangling.jsonl")
    confine = Confinement.to(served)
    for fine in (served / "run.jsonl", served, served / "new.jsonl", served / "sub" / ".." / "run.jsonl"):
        assert confine.refusal(fine) is None, fine
    for out in (outside / "run.jsonl", served / ".." / "served-not" / "run.jsonl", served / "link.jsonl",
                served / "elsewhere" / "run.jsonl", served / "elsewhere" / "new.jsonl", served / "dangling.jsonl",
                "/etc/passwd", "~/x.jsonl"):
        refusal = confine.refusal(out)
        assert refusal is not None and "outside the folder served" in refusal, out
        assert "--allow-any-path" in refusal
    assert "embedded null byte" in confine.refusal("run\x00.jsonl")


def test_tab_lists_no_folder_outside(folders):
    served, outside = folders
    confine = Confinement.to(served)
    assert complete_path(f"{outside}/", confine=confine) == (f"{outside}/", [])
    assert complete_path(f"{served}/../served-not/s", confine=confine) == (f"{served}/../served-not/s", [])
    assert complete_path(f"{served}/r", confine=confine) == (f"{served}/run.jsonl", ["run.jsonl"])
    assert complete_path(f"{outside}/s") == (f"{outside}/secret.txt", ["secret.txt"])  # unconfined: listed


def confined_app(served: Path) -> DebuggerApp:
    document = documents.open_document(served / "run.jsonl")
    return DebuggerApp(document, save_breakpoints=False, confine=Confinement.to(served))


async def answer(pilot, key: str, screen: str, value: str) -> None:
    await press(pilot, key)
    assert pilot.app.screen.id == screen
    pilot.app.screen.query_one("#prompt-input").value = value
    await press(pilot, "enter")


async def test_open_refuses_a_file_outside_or_a_link_leading_out(folders):
    served, outside = folders
    os.symlink(outside / "run.jsonl", served / "link.jsonl")
    app = confined_app(served)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        shown = app.document
        for typed in (str(outside / "run.jsonl"), "../served-not/run.jsonl", str(served / "link.jsonl")):
            await answer(pilot, "o", "open", typed)
            assert app.document is shown, typed
            assert status(app).startswith("refused: ") and "outside the folder served" in status(app), typed
        await answer(pilot, "o", "open", str(served / "run.jsonl"))
        assert app.document is not shown and status(app).startswith("step")


async def test_write_refuses_a_path_outside_and_writes_nothing_there(folders):
    served, outside = folders
    os.symlink(outside, served / "elsewhere")
    app = confined_app(served)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "n")
        for typed in (str(outside / "new.jsonl"), str(served / "elsewhere" / "new.jsonl"), str(outside / "run.jsonl")):
            await answer(pilot, "w", "write", typed)
            assert app.screen.id != "confirm-write", typed  # not even asked whether to replace
            assert "refused: " in status(app), typed
        assert sorted(path.name for path in outside.iterdir()) == ["run.jsonl", "secret.txt"]
        await answer(pilot, "w", "write", str(served / "new.jsonl"))
        assert (served / "new.jsonl").is_file() and "wrote" in status(app)


async def test_diff_refuses_a_file_outside(folders):
    served, outside = folders
    app = confined_app(served)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await answer(pilot, "D", "diff-prompt", f"{outside / 'run.jsonl'}:1")
        assert "refused: " in status(app) and app.screen.id != "diff"


async def test_the_dialog_says_a_path_outside_is_refused_before_enter(folders):
    served, outside = folders
    app = confined_app(served)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "w")
        app.screen.query_one("#prompt-input").value = str(outside / "run.jsonl")
        await settle(pilot)
        hint = str(app.screen.query_one("#prompt-hint").render())
        assert hint.startswith("refused: ") and "exists" not in hint  # what is outside is not told


def test_confine_is_hidden_and_must_name_a_folder(folders, capsys, monkeypatch):
    served, _ = folders
    assert "--confine" not in _main_parser().format_help()
    assert main([str(served / "run.jsonl"), "--confine", str(served / "run.jsonl")]) == 2
    assert "--confine" in (err := capsys.readouterr().err) and "not a folder" in err
    ran: list = []
    monkeypatch.chdir(served.parent)
    monkeypatch.setattr(DebuggerApp, "run", lambda app: ran.append((app.confine, app._initial[0].path, os.getcwd())))
    assert main(["served/run.jsonl", "--confine", "served"]) == 0
    [(confine, path, cwd)] = ran
    assert confine == Confinement.to(served) and cwd == str(confine.root)
    assert Path(path) == served / "run.jsonl"
    assert debug.build_app(_main_parser().parse_args([])).confine is None
