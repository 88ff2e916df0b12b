"""A trace has one writer at a time: the lock, the open modes, symlinks, and asking whether a
trace is still being written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentdbg.plans import load_plan
from agentdbg.trace import format as fmt
from agentdbg.trace.locking import is_being_written
from agentdbg.trace.writer import TraceBusyError, TraceExistsError, TraceWriter, write_trace

# Holds a writer open on argv[1] until its stdin says so (or closes).
HOLDER = """
import sys
from agentdbg.trace.writer import TraceWriter
with TraceWriter(sys.argv[1]) as writer:
    print("locked", flush=True)
    sys.stdin.readline()
"""
PROC_LOCKS = Path("/proc/locks").exists()


@pytest.fixture
def held(tmp_path: Path):
    """Start a process holding a writer on a path; yields (path, process); releases at the end."""
    processes = []

    def hold(path: Path) -> subprocess.Popen:
        process = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, text=True)
        assert process.stdout.readline().strip() == "locked"
        processes.append(process)
        return process

    yield hold
    for process in processes:
        if process.poll() is None:
            process.stdin.close()
            process.wait(30)
        process.stdout.close()


def release(process: subprocess.Popen) -> None:
    process.stdin.close()
    assert process.wait(30) == 0


def events(sample_plans: Path, name: str = "library_good"):
    return load_plan(sample_plans / f"{name}.toml").run().events


def test_a_second_writer_is_refused_with_the_file_and_the_pid(tmp_path: Path, held, sample_plans: Path) -> None:
    path = tmp_path / "run.jsonl"
    holder = held(path)
    before = path.read_bytes()
    for mode in ("append", "create", "replace"):
        with pytest.raises(TraceBusyError) as refused:
            TraceWriter(path, mode=mode)
        message = str(refused.value)
        assert message.startswith(f"{path}: is being written by another process")
        if PROC_LOCKS:
            assert refused.value.pid == holder.pid and message.endswith(f"(pid {holder.pid})")
    assert path.read_bytes() == before  # --force did not empty it, nothing was appended
    release(holder)
    with TraceWriter(path) as writer:  # free again once the first writer is done
        writer.write_all(events(sample_plans))
    assert path.read_bytes().startswith(before)


def test_two_writers_in_one_process_are_refused_too(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with TraceWriter(path):
        with pytest.raises(TraceBusyError, match="is being written by this process"):
            TraceWriter(path)
    TraceWriter(path).close()


def test_is_being_written_while_a_writer_holds_the_file(tmp_path: Path, held) -> None:
    path = tmp_path / "live.jsonl"
    assert not is_being_written(path)  # no such file
    holder = held(path)
    assert is_being_written(path)
    assert is_being_written(path)  # asking does not take the lock away
    release(holder)
    assert not is_being_written(path)
    with TraceWriter(path):
        assert is_being_written(path)  # a writer in this very process counts as well
    assert not is_being_written(path)


def test_asking_never_opens_a_pipe_or_a_directory(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert not is_being_written(fifo)  # would block on opening if it tried
    assert not is_being_written(tmp_path)


def test_a_killed_writer_leaves_no_lock_behind(tmp_path: Path, held, sample_plans: Path) -> None:
    path = tmp_path / "killed.jsonl"
    holder = held(path)
    holder.kill()
    holder.wait(30)
    assert not is_being_written(path)
    with TraceWriter(path) as writer:
        writer.write_all(events(sample_plans))
    assert not is_being_written(path)


def test_create_refuses_a_file_that_holds_something_and_takes_an_empty_one(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text("precious\n")
    with pytest.raises(TraceExistsError, match="exists and is not empty"):
        TraceWriter(path, mode="create")
    assert path.read_text() == "precious\n"
    empty = tmp_path / "empty.jsonl"
    empty.touch()
    TraceWriter(empty, mode="create").close()
    assert empty.read_bytes().startswith(fmt.HEADER_PREFIX)


def test_replace_empties_the_file_it_holds(tmp_path: Path, sample_plans: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text("old content that is longer than nothing\n")
    inode = path.stat().st_ino
    with TraceWriter(path, mode="replace") as writer:
        writer.write_all(events(sample_plans))
    assert path.read_bytes().startswith(fmt.HEADER_PREFIX) and b"old content" not in path.read_bytes()
    assert path.stat().st_ino == inode  # the same file, never unlinked and created again


def test_an_unknown_mode_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="mode must be one of append, create, replace"):
        TraceWriter(tmp_path / "x.jsonl", mode="truncate")
    assert not (tmp_path / "x.jsonl").exists()


# -- what the output path is ---------------------------------------------------------------


def test_a_dangling_symlink_is_refused_and_nothing_is_created(tmp_path: Path) -> None:
    link = tmp_path / "run.jsonl"
    link.symlink_to(tmp_path / "elsewhere" / "target.jsonl")
    (tmp_path / "elsewhere").mkdir()
    for mode in ("append", "create", "replace"):
        with pytest.raises(ValueError, match="is a symlink to .*target.jsonl, which does not exist"):
            TraceWriter(link, mode=mode)
    assert not (tmp_path / "elsewhere" / "target.jsonl").exists()


@pytest.mark.parametrize("kind", ["fifo", "device", "directory"])
def test_a_pipe_a_device_or_a_directory_is_refused_directly_or_through_a_symlink(tmp_path: Path, kind) -> None:
    if kind == "fifo":
        special = tmp_path / "fifo"
        os.mkfifo(special)
        named = "a named pipe"
    elif kind == "device":
        special = Path("/dev/null")
        if not special.exists():
            pytest.skip("no /dev/null here")
        named = "a character device"
    else:
        special = tmp_path / "folder"
        special.mkdir()
        named = "a directory"
    link = tmp_path / "link.jsonl"
    link.symlink_to(special)
    for mode in ("append", "replace"):
        with pytest.raises(ValueError, match=f"{special}: is {named}; a trace is written to a regular file"):
            TraceWriter(special, mode=mode)
        with pytest.raises(ValueError, match=f"is a symlink to {special}, {named}"):
            TraceWriter(link, mode=mode)


def test_a_symlink_to_a_trace_is_written_through_and_says_where(tmp_path: Path, sample_plans: Path) -> None:
    target = tmp_path / "batch-42.jsonl"
    with TraceWriter(target) as writer:
        writer.write_all(events(sample_plans))
    link = tmp_path / "latest.jsonl"
    link.symlink_to(target.name)  # relative, as people make them
    with TraceWriter(link, mode="append") as writer:
        writer.write_all(events(sample_plans, "library_stuck"))
    assert writer.target == target and writer.path == link
    assert link.is_symlink() and target.read_bytes().count(fmt.RUN_START_PREFIX) == 2
    with TraceWriter(link, mode="replace") as writer:  # a trace behind the link may be replaced
        writer.write_all(events(sample_plans))
    assert link.is_symlink() and target.read_bytes().count(fmt.RUN_START_PREFIX) == 1


def test_replace_does_not_empty_a_file_that_is_no_trace_through_a_symlink(tmp_path: Path) -> None:
    victim = tmp_path / "notes.txt"
    victim.write_text("my notes\n")
    link = tmp_path / "run.jsonl"
    link.symlink_to(victim)
    with pytest.raises(ValueError, match="which is not an agentdbg trace; refusing to replace it through the link"):
        TraceWriter(link, mode="replace")
    with pytest.raises(ValueError, match="not an agentdbg trace; refusing to append"):
        TraceWriter(link, mode="append")
    assert victim.read_text() == "my notes\n"


# -- write_trace replaces whole files -------------------------------------------------------


def test_write_trace_does_not_replace_a_trace_being_written(tmp_path: Path, held, sample_plans: Path) -> None:
    path = tmp_path / "live.jsonl"
    holder = held(path)
    before = path.read_bytes()
    with pytest.raises(TraceBusyError, match="is being written by another process"):
        write_trace(path, [events(sample_plans)])
    assert path.read_bytes() == before and sorted(tmp_path.iterdir()) == [path]  # no temporary file left
    release(holder)
    write_trace(path, [events(sample_plans)])
    assert path.read_bytes().count(fmt.RUN_START_PREFIX) == 1


def test_write_trace_replaces_a_symlink_itself_not_the_file_it_points_to(tmp_path: Path, sample_plans: Path) -> None:
    victim = tmp_path / "notes.txt"
    victim.write_text("my notes\n")
    link = tmp_path / "run.jsonl"
    link.symlink_to(victim)
    write_trace(link, [events(sample_plans)])
    assert victim.read_text() == "my notes\n"
    assert not link.is_symlink() and link.read_bytes().startswith(fmt.HEADER_PREFIX)
