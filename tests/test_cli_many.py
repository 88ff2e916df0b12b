"""`agentdbg check` and `agentdbg stats` over many files and folders: folders walked in
path order, files agentdbg cannot read skipped with a note (named ones refused), runs read
in parallel processes with the same output as one at a time, one line per failing run
with the command that opens it there."""

from __future__ import annotations

import argparse
import json
import os
import shlex
from pathlib import Path

import pytest

from agentdbg.cli import main
from agentdbg.importers.builder import RunBuilder
from agentdbg.trace.writer import write_trace

PLANS = Path(__file__).resolve().parents[1] / "sample_plans"


def graded_run(number: int, *, fail: str = "") -> list:
    builder = RunBuilder(f"task {number}", name=f"case {number}")
    builder.step(thought="look", tool="Search", args="x", call="Search[x]", observation="found")
    if fail == "error":
        builder.step(thought="oops", tool="Lookup", args="y", call="Lookup[y]", error_kind="unknown_tool",
                     error_message="tool 'Lookup' does not exist")
    builder.step(thought="done", answer="2")
    verdict = {"correct": fail != "wrong", "score": None, "expected": "2" if fail != "wrong" else "3", "grader": "em"}
    return builder.build(verdict=verdict)


@pytest.fixture
def runs_dir(tmp_path: Path) -> Path:
    """runs/a.jsonl: 3 runs (run 2 fails with an error at step 2, run 3 is wrong);
    runs/b/c.jsonl: one good run; runs/b/notes.md: not a run; a link loop; a named pipe."""
    root = tmp_path / "runs"
    (root / "b").mkdir(parents=True)
    write_trace(root / "a.jsonl", [graded_run(1), graded_run(2, fail="error"), graded_run(3, fail="wrong")])
    write_trace(root / "b" / "c.jsonl", [graded_run(4)])
    (root / "b" / "notes.md").write_text("just some notes\n", encoding="utf-8")
    (root / "b" / "loop").symlink_to("..")  # a folder linking back up: walked once
    (root / ".hidden").mkdir()
    write_trace(root / ".hidden" / "x.jsonl", [graded_run(5, fail="error")])  # not looked at
    if hasattr(os, "mkfifo"):
        os.mkfifo(root / "b" / "pipe")
    return root


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_check_a_folder_lists_each_failing_run_with_the_command_that_opens_it(runs_dir, capsys):
    code, out, err = run_cli(capsys, "check", str(runs_dir), "--fail-on", "error,wrong", "-j", "2")
    assert code == 1
    lines = out.splitlines()
    a = runs_dir / "a.jsonl"
    assert lines[0].startswith(f"agentdbg {a} --run 2 --step 2  # case 2: error at step 2: unknown_tool")
    assert lines[1].startswith(f"agentdbg {a} --run 3 --step 2  # case 3: wrong: answer '2', expected '3'")
    assert lines[2] == ("FAIL: 2 failing runs in 1 of 2 files (error 1, wrong 1); 4 runs (9 steps) in 2 files "
                        "checked; 2 files skipped") if hasattr(os, "mkfifo") else lines[2].startswith("FAIL: 2 failing runs")
    assert "x.jsonl" not in out + err  # a hidden folder is not read
    assert f"note: {runs_dir / 'b' / 'notes.md'}: skipped: not a plan, an agentdbg trace" in err
    if hasattr(os, "mkfifo"):
        assert f"note: {runs_dir / 'b' / 'pipe'}: skipped: a named pipe (FIFO), not read" in err


def test_parallel_and_serial_print_the_same(runs_dir, capsys):
    serial = run_cli(capsys, "check", str(runs_dir), "--fail-on", "error,wrong", "-j", "1")
    parallel = run_cli(capsys, "check", str(runs_dir), "--fail-on", "error,wrong", "-j", "3")
    assert serial == parallel
    assert run_cli(capsys, "stats", str(runs_dir), "-j", "1") == run_cli(capsys, "stats", str(runs_dir), "-j", "2")


async def test_the_printed_command_opens_the_debugger_at_the_failing_step(runs_dir, capsys):
    from agentdbg.cli import _main_parser, debug

    _, out, _ = run_cli(capsys, "check", str(runs_dir), "--fail-on", "error", "-j", "1")
    command = out.splitlines()[0].split("  #", 1)[0]
    words = shlex.split(command)
    assert words[0] == "agentdbg"
    app = debug.build_app(_main_parser().parse_args(words[1:]))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        assert app.run_index == 1 and app.session.cursor == 2
        assert "tool error" in str(app.query_one("#status").render())


def test_check_json_is_one_document(runs_dir, capsys):
    code, out, _ = run_cli(capsys, "check", str(runs_dir), "--fail-on", "error,wrong", "--json", "-j", "2")
    assert code == 1
    data = json.loads(out)
    assert data["ok"] is False
    assert [(f["run"], f["step"], f["conditions"]) for f in data["failing"]] == [(2, 2, ["error"]), (3, 2, ["wrong"])]
    assert [f["path"] for f in data["files"]] == [str(runs_dir / "a.jsonl"), str(runs_dir / "b" / "c.jsonl")]
    assert data["summary"]["runs"] == 4 and data["summary"]["skipped"] == (2 if hasattr(os, "mkfifo") else 1)


def test_a_clean_folder_passes(tmp_path, capsys):
    (tmp_path / "good").mkdir()
    write_trace(tmp_path / "good" / "one.jsonl", [graded_run(1), graded_run(2)])
    write_trace(tmp_path / "good" / "two.jsonl", [graded_run(3)])
    code, out, _ = run_cli(capsys, "check", str(tmp_path / "good"), "--fail-on", "error,wrong")
    assert code == 0
    assert out == "ok: no error or wrong in 3 runs (6 steps) in 2 files\n"


def test_a_folder_of_nothing_readable_is_not_reported_as_passing(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("not a run\n", encoding="utf-8")
    code, out, err = run_cli(capsys, "check", str(tmp_path), "--fail-on", "error")
    assert code == 2
    assert out.startswith("nothing checked: ") and "1 file skipped" in out
    assert "no file agentdbg can read" in err


def test_a_link_loop_is_walked_once(runs_dir, capsys):
    code, out, _ = run_cli(capsys, "stats", str(runs_dir / "b"))  # b/loop leads back to runs/, and to b
    assert code == 0
    assert [line.split("  ")[0] for line in out.splitlines()[:-1]] == [
        str(runs_dir / "b" / "c.jsonl"), str(runs_dir / "b" / "loop" / "a.jsonl")]


def test_a_named_file_that_cannot_be_read_is_trouble(runs_dir, tmp_path, capsys):
    notes = runs_dir / "b" / "notes.md"
    code, out, err = run_cli(capsys, "check", str(runs_dir / "b" / "c.jsonl"), str(notes), str(tmp_path / "missing"))
    assert code == 2
    assert f"error: {notes}: not a plan" in err and f"error: {tmp_path / 'missing'}: no such file" in err
    assert out.splitlines()[-1].startswith("incomplete: no error, repeat or budget in 1 run")
    if hasattr(os, "mkfifo"):
        code, _, err = run_cli(capsys, "check", str(runs_dir / "b" / "c.jsonl"), str(runs_dir / "b" / "pipe"))
        assert code == 2 and "is a named pipe (FIFO), not a regular file" in err


def test_a_folder_with_nothing_readable_is_trouble(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    code, _, err = run_cli(capsys, "check", str(tmp_path / "empty"))
    assert code == 2 and "no file agentdbg can read" in err


def test_one_file_keeps_the_one_file_output(runs_dir, capsys):
    code, out, _ = run_cli(capsys, "check", str(runs_dir / "a.jsonl"), "--fail-on", "error")
    assert code == 1
    assert "run 2 · case 2" in out and "agentdbg " not in out


def test_stats_over_a_folder_prints_a_line_per_file_and_totals(runs_dir, capsys):
    code, out, _ = run_cli(capsys, "stats", str(runs_dir), "-j", "2")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == (f"{runs_dir / 'a.jsonl'}  3 runs (3 answered); 2 correct, 1 wrong; "
                        "7 steps, 1 error, 0 repeats, 0 tokens")
    assert lines[1].startswith(f"{runs_dir / 'b' / 'c.jsonl'}  1 run (1 answered); 1 correct, 0 wrong")
    assert lines[2].startswith("total  4 runs (4 answered); 3 correct, 1 wrong; 9 steps, 1 error")
    assert " in 2 files" in lines[2]
    data = json.loads(run_cli(capsys, "stats", str(runs_dir), "--json")[1])
    assert data["totals"]["runs"] == 4 and data["totals"]["files"] == 2 and data["totals"]["wrong"] == 1
    assert [len(f["runs"]) for f in data["files"]] == [3, 1]


def test_a_plan_in_a_folder_is_run_and_opened_at_its_step(tmp_path, capsys):
    (tmp_path / "plans").mkdir()
    for name in ("library_stuck.toml", "kv_tax.toml"):
        (tmp_path / "plans" / name).write_bytes((PLANS / name).read_bytes())
    code, out, _ = run_cli(capsys, "check", str(tmp_path / "plans"))
    assert code == 1
    assert out.splitlines()[0].startswith(f"agentdbg {tmp_path / 'plans' / 'library_stuck.toml'} --step 2  # ")


def test_jobs_must_be_positive(runs_dir, capsys):
    code, _, err = run_cli(capsys, "check", str(runs_dir), "-j", "0")
    assert code == 2 and "--jobs 0" in err


def test_debugger_step_option(runs_dir, capsys):
    from agentdbg.cli import debug

    args = argparse.Namespace(file=str(runs_dir / "a.jsonl"), format=None, run=2, step=9, allow_code=False)
    assert debug.build_app(args) == 2
    err = capsys.readouterr().err
    assert "--step 9: run 2 of" in err and "has 3 steps" in err
    args.step = 0
    assert debug.build_app(args) == 2


def test_a_hostile_file_name_is_printed_as_one_shell_word_without_control_characters(tmp_path, capsys):
    import subprocess

    folder = tmp_path / "runs"
    folder.mkdir()
    name = "e\x1b[31mred\nline \u202e$(touch x);'q.jsonl"
    write_trace(folder / name, [graded_run(1, fail="error")])
    code, out, _ = run_cli(capsys, "check", str(folder), "--fail-on", "error")
    assert code == 1
    line = out.splitlines()[0]
    assert "\x1b" not in line and "\u202e" not in line
    command = line.split("  #", 1)[0]
    # bash reads the word back as the file's real name
    echoed = subprocess.run(["bash", "-c", f"printf '%s' {command.split(' ', 1)[1].split(' --step')[0]}"],
                            capture_output=True, text=True, check=True).stdout
    assert echoed == str(folder / name)


def test_a_file_in_a_folder_that_opens_but_cannot_be_checked_as_asked_is_trouble(runs_dir, capsys):
    code, _, err = run_cli(capsys, "check", str(runs_dir), "--max-runs", "2", "-j", "1")
    assert code == 2
    assert f"error: {runs_dir / 'a.jsonl'}: 3 runs, more than --max-runs 2" in err
