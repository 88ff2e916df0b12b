"""``agentdbg [FILE]``: what starts, and what exits 2."""

from __future__ import annotations

import argparse
import os

import pytest
from test_cli_support import run_guarded
from test_tui_support import PLANS, SIZE, deferred_index, press, settle, status
from textual.app import App

from agentdbg.cli import debug, main
from agentdbg.trace import format as fmt
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


def test_a_plan_for_forks_that_is_no_file_exits_2(capsys, tmp_path):
    namespace = args(file=str(PLANS / "library_good.toml"))
    namespace.plan = str(tmp_path / "gone.toml")
    assert debug.build_app(namespace) == 2
    assert capsys.readouterr().err == f"agentdbg: --plan {tmp_path / 'gone.toml'}: no such file\n"


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


def test_a_file_that_cannot_be_opened_exits_2_with_one_line_before_the_screen(tmp_path, capsys, no_screen):
    broken = tmp_path / "broken.toml"
    broken.write_text("name = 'x'\n[policy]\nkind = 'nonsense'\n")
    binary = tmp_path / "blob.jsonl"
    binary.write_bytes(bytes(range(256)) * 64)
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    header_only = tmp_path / "header.jsonl"
    header_only.write_text(fmt.header_line())
    for path, reason in ((tmp_path / "missing.jsonl", "no such file"), (tmp_path, "is a directory"),
                         (binary, "is a binary file (not text)"), (empty, "is empty"),
                         (broken, "missing 'task'"), (header_only, "no runs in it")):
        assert debug.build_app(args(file=str(path))) == 2, path
        err = capsys.readouterr().err
        assert err.startswith(f"agentdbg: {path}") and reason in err and len(err.splitlines()) == 1, err


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.exists("/dev/zero"),
                    reason="needs named pipes and /dev/zero")
def test_a_named_pipe_or_a_device_on_the_command_line_exits_2_without_blocking(tmp_path):
    fifo = tmp_path / "run.jsonl"
    os.mkfifo(fifo)
    zero = tmp_path / "plan.toml"
    zero.symlink_to("/dev/zero")
    results = run_guarded([fifo], [zero], [fifo, "--format", "plan"], [zero, "--format", "trace"])
    for (code, out, err), (path, kind) in zip(results, [(fifo, "is a named pipe (FIFO)"), (zero, "is a character device")] * 2,
                                              strict=True):
        assert code == 2 and err == f"agentdbg: {path}: {kind}, not a regular file\n" and out == ""


@pytest.fixture
def no_screen(monkeypatch):
    """These tests must end before the screen starts: if one starts, fail instead of hanging."""
    monkeypatch.setattr(DebuggerApp, "run", lambda self, *a, **k: pytest.fail("the screen started"))


@pytest.mark.parametrize("typed, meant", [("stat", "stats"), ("shw", "show"), ("chekc", "check"), ("Record", "record")])
def test_a_mistyped_subcommand_suggests_the_closest_one(typed, meant, capsys, tmp_path, monkeypatch, no_screen):
    monkeypatch.chdir(tmp_path)
    assert main([typed]) == 2
    assert capsys.readouterr().err == f"agentdbg: {typed}: no such file; did you mean 'agentdbg {meant}'?\n"
    assert main([typed, "run.jsonl"]) == 2  # with the subcommand's own arguments too
    assert f"did you mean 'agentdbg {meant}'?" in capsys.readouterr().err


def test_a_file_named_like_a_subcommand_is_not_a_typo(tmp_path, monkeypatch, capsys, no_screen):
    monkeypatch.chdir(tmp_path)
    assert main(["unrelated"]) == 2
    assert capsys.readouterr().err == "agentdbg: unrelated: no such file\n"
    assert main(["stats.jsonl"]) == 2  # a missing file name, not a subcommand typo
    assert capsys.readouterr().err == "agentdbg: stats.jsonl: no such file\n"
    (tmp_path / "stat").write_text("")
    assert main(["stat"]) == 2
    assert capsys.readouterr().err == "agentdbg: stat: is empty\n"  # the file was opened, not suggested


def test_a_debugger_that_dies_exits_non_zero_with_the_reason(monkeypatch, capsys):
    def crash(self):
        raise RuntimeError("pane failed to draw")

    monkeypatch.setattr(DebuggerApp, "on_mount", crash)
    monkeypatch.setattr(DebuggerApp, "run", lambda self: App.run(self, headless=True, size=SIZE))
    assert debug.run(args(file=str(PLANS / "library_good.toml"))) == 1
    err = capsys.readouterr().err
    assert "RuntimeError" in err and "pane failed to draw" in err
    assert err.rstrip().endswith("agentdbg: the debugger stopped on an internal error (exit status 1)")


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


def test_the_debugger_screen_forks_no_workers_even_for_a_big_file(tmp_path, monkeypatch, capsys):
    """Headless commands share a big file's work with forked workers; the debugger's
    screen scans in its own process (it opens the file before its threads start, but
    keeps every core for drawing and keys)."""
    from agentdbg.trace import workers
    from agentdbg.trace.writer import write_trace

    path = tmp_path / "big.jsonl"
    write_trace(path, [list(_small_run())])
    monkeypatch.setattr(workers, "_workers", False)
    monkeypatch.setattr(workers, "_enabled", False)
    monkeypatch.setattr(workers, "fork_is_safe", lambda: True)
    monkeypatch.setattr(workers, "PARALLEL_BYTES", 0)  # (every file is big)
    app = debug.build_app(args(file=str(path)))
    assert isinstance(app, DebuggerApp)
    assert workers._workers is False and not workers._enabled
    app._initial[0].close()
    monkeypatch.setattr(workers, "fork_is_safe", lambda: False)  # (no fork in the test's process)
    assert main(["stats", str(path)]) == 0
    assert workers._enabled  # a headless command asks for them
    capsys.readouterr()


def _small_run():
    from agentdbg.engine import events as ev

    yield ev.RunStart(step=0, task="t", name="r")
    for n in range(1, 4):
        yield ev.StepStart(step=n)
        yield ev.Thought(step=n, text="think")
