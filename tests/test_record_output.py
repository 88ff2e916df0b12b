"""agentdbg record and its output file: one recording at a time per file (real processes
racing, with and without --force and --append), and a disk that fills up mid-run."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentdbg.cli import main
from agentdbg.plans import load_plan
from agentdbg.trace import format as fmt
from agentdbg.trace.locking import is_being_written
from agentdbg.trace.reader import open_trace

# A run that holds its trace until the test says so: its policy (Python code, found on
# PYTHONPATH) calls a tool, then waits for the gate file before answering.
GATED_PLAN = """\
name = "gated"
task = "Wait for the gate."
executes_code = true

[[tools]]
name = "calc"
kind = "calculator"

[policy]
kind = "python"
callable = "gated_policy:policy"
"""
GATED_POLICY = """\
import os, time

def policy(transcript):
    if "Observation:" not in transcript:
        return "Thought: first a sum.\\nAction: calc[2 + 3]"
    while not os.path.exists(os.environ["AGENTDBG_TEST_GATE"]):
        time.sleep(0.01)
    return "Thought: the gate is open.\\nFinal Answer: 5"
"""
MODES = {"new": [], "force": ["--force"], "append": ["--append"]}


class Gated:
    """The gated plan, and the gate that lets its recordings finish."""

    def __init__(self, folder: Path, monkeypatch):
        self.plan = folder / "gated.toml"
        self.plan.write_text(GATED_PLAN, encoding="utf-8")
        (folder / "gated_policy.py").write_text(GATED_POLICY, encoding="utf-8")
        self.gate = folder / "gate"
        self.env = {**os.environ, "AGENTDBG_TEST_GATE": str(self.gate),
                    "PYTHONPATH": os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")]))}
        monkeypatch.setenv("AGENTDBG_TEST_GATE", str(self.gate))
        monkeypatch.syspath_prepend(str(folder))

        self.processes: list[subprocess.Popen] = []

    def record(self, output: Path, *flags: str) -> subprocess.Popen:
        process = record(self.plan, output, "--allow-code", *flags, env=self.env)
        self.processes.append(process)
        return process

    def open(self) -> None:
        self.gate.touch()

    def expected(self) -> list[dict]:
        self.open()
        return [json.loads(fmt.event_line(event)) for event in load_plan(self.plan, allow_code=True).run().events]


@pytest.fixture
def gated(tmp_path: Path, monkeypatch):
    folder = tmp_path / "gated"
    folder.mkdir()
    gated = Gated(folder, monkeypatch)
    yield gated
    gated.open()  # a failed test leaves no recording waiting at the gate
    for process in gated.processes:
        try:
            process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()


def record(plan: Path, output: Path, *flags: str, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "agentdbg", "record", str(plan), "-o", str(output), "-q", *flags],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def finish(process: subprocess.Popen) -> tuple[int, str]:
    _, err = process.communicate(timeout=120)
    return process.returncode, err


def wait_at_the_gate(path: Path, process: subprocess.Popen) -> None:
    """Until the gated recording holds ``path`` and waits in its step 2."""
    deadline = time.monotonic() + 60
    while not (is_being_written(path) and path.read_bytes().endswith(b'{"type":"step","step":2}\n')):
        assert process.poll() is None and time.monotonic() < deadline, "the recording never reached the gate"
        time.sleep(0.005)


def runs_in(path: Path) -> list[list[dict]]:
    """The file's runs, each its list of events; every line must be complete JSON."""
    data = path.read_bytes()
    assert data.endswith(b"\n")
    lines = [json.loads(line) for line in data.split(b"\n")[:-1]]
    assert [line["type"] for line in lines].count("header") == 1 and lines[0]["type"] == "header"
    runs: list[list[dict]] = []
    for line in lines[1:]:
        if line["type"] == "run_start":
            runs.append([])
        assert runs, "an event before any run"
        if line["type"] != "checkpoint":
            runs[-1].append(line)
    return runs


def expected(plan: Path) -> list[dict]:
    return [json.loads(fmt.event_line(event)) for event in load_plan(plan).run().events]


@pytest.mark.parametrize("mode", MODES)
def test_a_second_recording_to_a_file_being_recorded_is_refused(tmp_path: Path, gated: Gated,
                                                                sample_plans: Path, mode: str) -> None:
    quick = sample_plans / "library_good.toml"
    path = tmp_path / "run.jsonl"
    before = []
    if mode != "new":
        assert main(["record", str(quick), "-o", str(path), "-q"]) == 0
        before = [expected(quick)]
    first = gated.record(path, *MODES[mode])
    wait_at_the_gate(path, first)
    held = path.read_bytes()
    code, err = finish(record(quick, path, *MODES[mode]))
    assert code == 2 and err.startswith(f"agentdbg record: error: {path}: is being written by another process")
    assert err.endswith("; not recorded\n") and err.count("\n") == 1
    if Path("/proc/locks").exists():
        assert f"(pid {first.pid})" in err
    assert path.read_bytes().startswith(held), "the refused recording changed nothing"
    assert first.poll() is None
    gated.open()
    assert finish(first) == (0, "")
    ours = gated.expected()
    assert runs_in(path) == ([ours] if mode == "force" else before + [ours])
    # Once the first is done, the second goes ahead as its flags say.
    code, err = finish(record(quick, path, *MODES[mode]))
    if mode == "new":
        assert code == 2 and "exists; use --force" in err
        assert runs_in(path) == [ours]
    else:
        assert code == 0, err
        assert runs_in(path) == ([expected(quick)] if mode == "force" else before + [ours, expected(quick)])


@pytest.mark.parametrize("mode", MODES)
def test_recordings_started_together_exactly_one_writes(tmp_path: Path, gated: Gated, mode: str) -> None:
    path = tmp_path / "race.jsonl"
    processes = [gated.record(path, *MODES[mode]) for _ in range(3)]
    deadline = time.monotonic() + 90
    while sum(process.poll() is not None for process in processes) < 2:  # the winner waits at the gate
        assert time.monotonic() < deadline, "the refused recordings never ended"
        time.sleep(0.01)
    (winner,) = [process for process in processes if process.poll() is None]
    gated.open()
    results = {process.pid: finish(process) for process in processes}
    assert results.pop(winner.pid) == (0, "")
    for code, err in results.values():  # refused outright, and said so: no run is lost silently
        assert code == 2 and "is being written by another process" in err, err
    assert runs_in(path) == [gated.expected()]  # one whole run, nothing interleaved


def test_a_killed_recording_does_not_block_the_next(tmp_path: Path, gated: Gated, sample_plans: Path) -> None:
    path = tmp_path / "run.jsonl"
    first = gated.record(path)
    wait_at_the_gate(path, first)
    first.kill()
    finish(first)
    assert not is_being_written(path)
    code, err = finish(record(sample_plans / "library_good.toml", path, "--append"))
    assert code == 0, err
    assert [run[0]["name"] for run in runs_in_lenient(path)] == ["gated", "library-good"]


def runs_in_lenient(path: Path) -> list[list[dict]]:
    """Like runs_in, but a line cut by a kill is skipped (it stays a line of its own)."""
    runs: list[list[dict]] = []
    for raw in path.read_bytes().split(b"\n"):
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        if line["type"] == "run_start":
            runs.append([])
        if runs and line["type"] != "checkpoint":
            runs[-1].append(line)
    return runs


# -- write failures ----------------------------------------------------------------------------


@pytest.fixture
def full_disk_after(monkeypatch):
    """The trace writer's file takes ``room`` more bytes, then fails with ``error``."""
    from agentdbg.trace import writer as writer_module

    def limit(room: int, error: int = errno.ENOSPC) -> None:
        import io

        class Filling(io.FileIO):
            left = room

            def write(self, data) -> int:
                if Filling.left <= 0:
                    raise OSError(error, os.strerror(error))
                written = super().write(bytes(data[: Filling.left]))
                Filling.left -= written
                return written

        monkeypatch.setattr(writer_module, "open", lambda fd, mode, buffering, closefd: Filling(fd, mode, closefd),
                            raising=False)

    return limit


@pytest.mark.parametrize("error, reason", [(errno.ENOSPC, "No space left on device"),
                                           (errno.EIO, "Input/output error"),
                                           (errno.EFBIG, "File too large")])
def test_record_on_a_failing_disk_says_so_in_one_line_and_exits_1(tmp_path: Path, sample_plans: Path, capsys,
                                                                   full_disk_after, error, reason) -> None:
    path = tmp_path / "run.jsonl"
    full_disk_after(1500, error)
    code = main(["record", str(sample_plans / "library_hallucinating.toml"), "-o", str(path)])
    out, err = capsys.readouterr()
    runs = runs_in(path)  # every line whole: the one being written when it failed was cut off
    kept = len(runs[0])
    assert code == 1 and out == "" and 0 < kept < 27
    assert err == f"agentdbg record: error: cannot write {path}: {reason} (the trace holds the first {kept} events)\n"
    assert runs == [expected(sample_plans / "library_hallucinating.toml")[:kept]]
    assert not is_being_written(path)  # the lock went with the failed recording
    with open_trace(path) as document:  # and what it holds opens as a run without an end
        assert document.wait(10) and document.runs[0].step_count >= 1


def test_record_past_the_file_size_limit(tmp_path: Path, sample_plans: Path) -> None:
    """A real failure from the kernel: the file size limit (RLIMIT_FSIZE) gives EFBIG."""
    resource = pytest.importorskip("resource")
    path = tmp_path / "run.jsonl"

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (4000, resource.RLIM_INFINITY))

    process = subprocess.run([sys.executable, "-m", "agentdbg", "record", str(sample_plans / "memory_research.toml"),
                              "-o", str(path)], capture_output=True, text=True, preexec_fn=small_files, timeout=120)
    runs = runs_in(path)
    kept = len(runs[0])
    assert process.returncode == 1 and process.stdout == ""
    assert process.stderr == (f"agentdbg record: error: cannot write {path}: File too large "
                              f"(the trace holds the first {kept} events)\n")
    assert path.stat().st_size <= 4000


def test_record_refuses_what_it_cannot_write_to(tmp_path: Path, sample_plans: Path, capsys) -> None:
    plan = sample_plans / "library_good.toml"
    dangling = tmp_path / "dangling.jsonl"
    dangling.symlink_to(tmp_path / "missing" / "run.jsonl")
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    for output, flags, message in [
        (dangling, [], "is a symlink to"),
        (fifo, ["--force"], "is a named pipe; a trace is written to a regular file"),
        (tmp_path, [], "is a directory"),
        (tmp_path / "missing" / "run.jsonl", [], "cannot write"),
    ]:
        assert main(["record", str(plan), "-o", str(output), *flags]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
    assert not (tmp_path / "missing").exists()


def test_record_through_a_symlink_says_where_the_trace_went(tmp_path: Path, sample_plans: Path, capsys) -> None:
    target = tmp_path / "batch.jsonl"
    link = tmp_path / "latest.jsonl"
    assert main(["record", str(sample_plans / "library_good.toml"), "-o", str(target), "-q"]) == 0
    link.symlink_to(target)
    assert main(["record", str(sample_plans / "library_good.toml"), "-o", str(link), "--append"]) == 0
    out = capsys.readouterr().out
    assert f"-> {link} (a symlink to {target}) (21 events)" in " ".join(out.split())
    assert len(runs_in(target)) == 2


def test_record_never_overwrites_its_plan_even_through_a_link(tmp_path: Path, sample_plans: Path, capsys) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text((sample_plans / "library_good.toml").read_text(encoding="utf-8"), encoding="utf-8")
    before = plan.read_bytes()
    (tmp_path / "hard.jsonl").hardlink_to(plan)
    (tmp_path / "soft.jsonl").symlink_to(plan)
    for output in ("hard.jsonl", "soft.jsonl"):
        assert main(["record", str(plan), "-o", str(tmp_path / output), "--force"]) == 2
        assert "the trace would overwrite the plan" in capsys.readouterr().err
    assert plan.read_bytes() == before
