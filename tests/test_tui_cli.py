"""``agentdbg [FILE]``: what starts, and what exits 2."""

from __future__ import annotations

import argparse

from test_tui_support import PLANS, SIZE, deferred_index, pane_text, press, settle, status

from agentdbg.cli import debug
from agentdbg.tui.app import DebuggerApp


def args(file=None, format=None, run=1, allow_code=False) -> argparse.Namespace:
    return argparse.Namespace(file=file, format=format, run=run, allow_code=allow_code)


def test_unusable_arguments_exit_2(capsys, tmp_path):
    assert debug.run(args(run=0)) == 2
    assert "--run must be 1 or more" in capsys.readouterr().err
    assert debug.run(args(format="trace")) == 2
    assert "--format needs a FILE" in capsys.readouterr().err
    assert debug.run(args(file=str(PLANS / "library_good.toml"), format="nonsense")) == 2
    assert "unknown --format 'nonsense'" in capsys.readouterr().err


def test_run_number_beyond_the_file_exits_2(capsys):
    assert debug.build_app(args(file=str(PLANS / "library_good.toml"), run=2)) == 2
    assert "holds 1 run" in capsys.readouterr().err


async def test_no_file_opens_the_bundled_demo():
    app = debug.build_app(args())
    assert isinstance(app, DebuggerApp)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "library-hallucinating" in app.query_one("#header").text
        await press(pilot, "c")
        assert app.session.cursor == 1 and "web_search" in status(app)


async def test_a_file_that_cannot_be_opened_starts_the_app_with_the_reason(tmp_path):
    broken = tmp_path / "broken.toml"
    broken.write_text("name = 'x'\n[policy]\nkind = 'nonsense'\n")
    for path, reason in ((tmp_path / "missing.jsonl", "no such file"), (tmp_path, "is a directory"),
                         (broken, "missing 'task'")):
        app = debug.build_app(args(file=str(path)))
        assert isinstance(app, DebuggerApp)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            assert app.session is None
            assert reason in pane_text(app, "scratchpad")
            assert reason in " ".join(app.problems)


def three_runs(tmp_path):
    from agentdbg.trace.synthetic import synthetic_run
    from agentdbg.trace.writer import write_trace

    path = tmp_path / "batch.jsonl"
    write_trace(path, (synthetic_run(60, seed=i, name=f"episode-{i + 1}") for i in range(3)))
    return path


async def test_run_n_of_a_file_still_being_indexed_opens_that_run(tmp_path, monkeypatch):
    deferred_index(monkeypatch)
    app = debug.build_app(args(file=str(three_runs(tmp_path)), run=3))
    assert isinstance(app, DebuggerApp)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.run_index == 2
        assert "episode-3 (run 3/3)" in app.query_one("#header").text


def test_run_n_beyond_a_file_still_being_indexed_exits_2(tmp_path, monkeypatch, capsys):
    deferred_index(monkeypatch)
    assert debug.build_app(args(file=str(three_runs(tmp_path)), run=4)) == 2
    assert "holds 3 runs" in capsys.readouterr().err
