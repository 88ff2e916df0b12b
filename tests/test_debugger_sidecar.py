"""The breakpoints file on disk: never written through a symbolic link or over anything
but a regular file, replaced atomically, read without blocking on a pipe or reading a
device or a huge file; and which file a trace's breakpoints are read from and saved to."""

from __future__ import annotations

import json
import os
import re
import stat
import threading

import pytest

from agentdbg.debugger import breakpoints as bp_module
from agentdbg.debugger import files
from agentdbg.debugger.breakpoints import BreakpointSet, sidecar_path
from agentdbg.debugger.sidecar import open_sidecar, sidecar_paths

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes need a POSIX system")


def some_breakpoints() -> BreakpointSet:
    breakpoints = BreakpointSet()
    breakpoints.add("step", 3)
    breakpoints.add("filter", "~tool calc & ~error").ignore = 2
    breakpoints.toggle_auto("repeat")
    return breakpoints


def leftovers(folder) -> list[str]:
    return sorted(path.name for path in folder.iterdir() if path.name.endswith(".tmp"))


# --- saving -------------------------------------------------------------------------------

def test_a_link_planted_at_the_old_temporary_name_is_never_written_through(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    sidecar = sidecar_path(tmp_path / "run.trace")
    (tmp_path / (sidecar.name + ".tmp")).symlink_to(victim)
    some_breakpoints().save(sidecar)
    assert victim.read_text() == "precious"
    assert BreakpointSet.load(sidecar).to_dict() == some_breakpoints().to_dict()


def test_a_breakpoints_file_that_is_a_link_is_not_replaced(tmp_path):
    victim = tmp_path / "victim.json"
    victim.write_text("precious")
    sidecar = sidecar_path(tmp_path / "run.trace")
    sidecar.symlink_to(victim)
    with pytest.raises(ValueError) as caught:
        some_breakpoints().save(sidecar)
    assert str(caught.value).startswith(f"{sidecar}: cannot save breakpoints: it is a symbolic link")
    assert victim.read_text() == "precious" and sidecar.is_symlink() and leftovers(tmp_path) == []


@pytest.mark.parametrize("make, kind", [
    (lambda path: path.mkdir(), "a directory"),
    pytest.param(lambda path: os.mkfifo(path), "a named pipe (FIFO)", marks=needs_fifo),
])
def test_a_breakpoints_file_that_is_not_a_regular_file_is_not_replaced(tmp_path, make, kind):
    sidecar = sidecar_path(tmp_path / "run.trace")
    make(sidecar)
    with pytest.raises(ValueError, match=re.escape(f"it is {kind}, not a regular file (not replaced)")):
        some_breakpoints().save(sidecar)
    assert leftovers(tmp_path) == []


def test_saving_replaces_the_file_whole_and_keeps_its_permissions(tmp_path):
    sidecar = sidecar_path(tmp_path / "run.trace")
    sidecar.write_text("{}")
    os.chmod(sidecar, 0o600)
    some_breakpoints().save(sidecar)
    assert stat.S_IMODE(os.stat(sidecar).st_mode) == 0o600
    assert json.loads(sidecar.read_text()) == some_breakpoints().to_dict()
    assert leftovers(tmp_path) == []


def test_a_failed_save_leaves_the_old_file_and_no_temporary_file(tmp_path, monkeypatch):
    sidecar = sidecar_path(tmp_path / "run.trace")
    BreakpointSet().save(sidecar)
    before = sidecar.read_bytes()

    def disk_full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "fsync", disk_full)
    with pytest.raises(ValueError, match="cannot save breakpoints: No space left on device"):
        some_breakpoints().save(sidecar)
    assert sidecar.read_bytes() == before and leftovers(tmp_path) == []


def test_temporary_files_are_created_exclusively(tmp_path, monkeypatch):
    taken = iter(["aaaa", "aaaa", "bbbb"])
    monkeypatch.setattr(files.secrets, "token_hex", lambda n: next(taken))
    sidecar = sidecar_path(tmp_path / "run.trace")
    planted = tmp_path / f"{sidecar.name}.aaaa.tmp"
    planted.symlink_to(tmp_path / "victim")  # a dangling link: O_EXCL refuses it too
    some_breakpoints().save(sidecar)
    assert not (tmp_path / "victim").exists() and planted.is_symlink()
    assert leftovers(tmp_path) == [planted.name]


def test_the_file_has_one_line_per_breakpoint_and_reads_back(tmp_path):
    breakpoints = some_breakpoints()
    breakpoints.add("tool", 'café "quoted"\tand a tab')
    breakpoints.add("tool", "lone \ud800 surrogate")  # JSON allows it; the file stays UTF-8
    sidecar = sidecar_path(tmp_path / "run.trace")
    breakpoints.save(sidecar)
    text = sidecar.read_bytes().decode("utf-8")
    assert '    {"kind": "step", "spec": "3", "enabled": true},\n' in text
    assert '"ignore": 2}' in text and "\\ud800" in text
    assert json.loads(text) == breakpoints.to_dict()
    assert BreakpointSet.load(sidecar).to_dict() == breakpoints.to_dict()
    assert json.loads(BreakpointSet().to_text()) == BreakpointSet().to_dict()


def test_more_breakpoints_than_a_file_may_hold_are_not_saved(tmp_path, monkeypatch):
    monkeypatch.setattr(bp_module, "MAX_SIDECAR_BYTES", 1000)
    breakpoints = BreakpointSet()
    for step in range(1, 100):
        breakpoints.add("step", step)
    sidecar = sidecar_path(tmp_path / "run.trace")
    with pytest.raises(ValueError, match="too many to save"):
        breakpoints.save(sidecar)
    assert not sidecar.exists()


# --- reading ------------------------------------------------------------------------------

@needs_fifo
def test_a_named_pipe_is_refused_without_waiting_for_a_writer(tmp_path):
    sidecar = sidecar_path(tmp_path / "run.trace")
    os.mkfifo(sidecar)
    outcome: list = []

    def load():
        try:
            BreakpointSet.load(sidecar)
        except ValueError as exc:
            outcome.append(str(exc))

    reader = threading.Thread(target=load, daemon=True)
    reader.start()
    reader.join(10)
    assert not reader.is_alive(), "reading a named pipe blocked"
    assert outcome == [f"{sidecar}: cannot read breakpoints: it is a named pipe (FIFO), not a regular file (not read)"]


def test_a_link_is_not_followed_even_to_a_good_file(tmp_path):
    good = tmp_path / "elsewhere.json"
    some_breakpoints().save(good)
    sidecar = sidecar_path(tmp_path / "run.trace")
    sidecar.symlink_to(good)
    with pytest.raises(ValueError, match="it is a symbolic link, which is not followed"):
        BreakpointSet.load(sidecar)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_a_device_is_never_read(tmp_path):
    with pytest.raises(files.Refused, match="it is a character device, not a regular file"):
        files.read_small_file("/dev/zero", 100)
    sidecar = sidecar_path(tmp_path / "run.trace")
    sidecar.symlink_to("/dev/zero")
    with pytest.raises(ValueError, match="symbolic link"):
        BreakpointSet.load(sidecar)


def test_a_huge_file_is_refused_unread(tmp_path, monkeypatch):
    sidecar = sidecar_path(tmp_path / "run.trace")
    with open(sidecar, "wb") as out:
        out.truncate(bp_module.MAX_SIDECAR_BYTES + 1)  # sparse: no disk used
    reads: list[int] = []
    real_read = os.read
    monkeypatch.setattr(files.os, "read", lambda fd, n: reads.append(n) or real_read(fd, n))
    with pytest.raises(ValueError, match=r"too large \(16,777,217 bytes; the limit is 16,777,216\)"):
        BreakpointSet.load(sidecar)
    assert reads == []


def test_a_file_that_grows_while_read_is_cut_off_at_the_limit(tmp_path, monkeypatch):
    sidecar = tmp_path / "growing"
    sidecar.write_bytes(b"x" * 50)
    real_fstat = os.fstat

    def looks_small(fd):  # as if it grew after it was looked at
        result = real_fstat(fd)
        return os.stat_result((result.st_mode, *result[1:6], 10, *result[7:]))

    monkeypatch.setattr(files.os, "fstat", looks_small)
    with pytest.raises(files.Refused, match="too large"):
        files.read_small_file(sidecar, 20)
    assert files.read_small_file(sidecar, 50) == b"x" * 50


# --- which file a trace's breakpoints are read from and saved to --------------------------

NEWER = json.dumps({"format": "agentdbg-breakpoints", "version": 2, "breakpoints": []})


def test_the_names_breakpoints_may_be_kept_under(tmp_path):
    assert [path.name for path in sidecar_paths(tmp_path / "run.trace")] == [
        "run.trace.breakpoints.json", "run.trace.breakpoints.2.json", "run.trace.breakpoints.3.json"]


def test_nothing_saved_yet_means_the_usual_name(tmp_path):
    sidecar = open_sidecar(tmp_path / "run.trace")
    assert sidecar.path == sidecar_path(tmp_path / "run.trace")
    assert not sidecar.loaded and not sidecar.kept and sidecar.problems() == []
    assert len(sidecar.breakpoints) == 0


def test_a_readable_file_is_read_and_saved_back(tmp_path):
    some_breakpoints().save(sidecar_path(tmp_path / "run.trace"))
    sidecar = open_sidecar(tmp_path / "run.trace")
    assert sidecar.loaded and sidecar.path == sidecar_path(tmp_path / "run.trace")
    assert sidecar.breakpoints.to_dict() == some_breakpoints().to_dict() and sidecar.problems() == []


def test_a_file_that_cannot_be_read_is_kept_and_the_breakpoints_go_beside_it(tmp_path):
    usual, second, _ = sidecar_paths(tmp_path / "run.trace")
    usual.write_text(NEWER)
    sidecar = open_sidecar(tmp_path / "run.trace")
    assert sidecar.path == second and not sidecar.loaded and list(sidecar.kept) == [usual]
    [problem] = sidecar.problems()
    assert problem.startswith(f"breakpoints not loaded: {usual}: unsupported version 2")
    assert problem.endswith(f"the file is kept as it is; breakpoints you set are saved to {second}")
    assert sidecar.notice() == ("run.trace.breakpoints.json cannot be read and is kept as it is; "
                                "breakpoints you set are saved to run.trace.breakpoints.2.json (e lists why)")
    sidecar.breakpoints.add("step", 4)
    sidecar.save(sidecar.breakpoints)
    assert usual.read_text() == NEWER
    again = open_sidecar(tmp_path / "run.trace")  # the next opening reads what was saved
    assert again.path == second and again.loaded and again.breakpoints.has_step(4)
    assert again.problems()[-1].endswith(f"breakpoints are read from and saved to {second}")


def test_once_the_usual_file_is_gone_the_other_one_is_still_read(tmp_path):
    usual, second, _ = sidecar_paths(tmp_path / "run.trace")
    some_breakpoints().save(second)
    sidecar = open_sidecar(tmp_path / "run.trace")
    assert sidecar.path == second and sidecar.loaded and sidecar.problems() == []


def test_a_link_at_the_usual_name_is_kept_and_not_written_through(tmp_path):
    victim = tmp_path / "victim.json"
    victim.write_text("precious")
    usual, second, _ = sidecar_paths(tmp_path / "run.trace")
    usual.symlink_to(victim)
    sidecar = open_sidecar(tmp_path / "run.trace")
    assert sidecar.path == second and "symbolic link" in sidecar.kept[usual]
    sidecar.save(some_breakpoints())
    assert victim.read_text() == "precious" and usual.is_symlink() and second.is_file()


def test_when_every_name_is_taken_nothing_is_saved_and_it_says_why(tmp_path):
    for path in sidecar_paths(tmp_path / "run.trace"):
        path.write_text("not json")
    sidecar = open_sidecar(tmp_path / "run.trace")
    assert sidecar.path is None and len(sidecar.kept) == 3 and len(sidecar.problems()) == 3
    assert "breakpoints you set are not saved" in sidecar.problems()[-1]
    assert "are kept as they are" in sidecar.notice()
    with pytest.raises(ValueError, match="breakpoints you set are not saved"):
        sidecar.save(some_breakpoints())
    assert all(path.read_text() == "not json" for path in sidecar_paths(tmp_path / "run.trace"))


def test_a_name_too_long_for_the_system_is_not_a_file_kept(tmp_path):
    target = tmp_path / ("r" * 240)
    sidecar = open_sidecar(target)
    assert sidecar.path == sidecar_path(target) and sidecar.kept == {} and sidecar.problems() == []
    with pytest.raises(ValueError, match="cannot save breakpoints: File name too long"):
        sidecar.save(some_breakpoints())
