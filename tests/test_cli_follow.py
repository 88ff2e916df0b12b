"""``show --follow`` and ``check --follow`` on a trace written step by step by another
process: output as each step is written, an end with the run or its writer, Ctrl-C."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from live_support import SlowWriter

WAIT = 15.0


class Command:
    """``agentdbg ARGS`` in a subprocess whose output lines are read as they come."""

    def __init__(self, *args: str):
        env = {**os.environ, "COLUMNS": "100"}
        self.process = subprocess.Popen([sys.executable, "-m", "agentdbg", *args], stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True, env=env)
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.seen: list[str] = []

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def until(self, text: str, timeout: float = WAIT) -> list[str]:
        """Lines up to the one containing ``text``."""
        deadline = time.monotonic() + timeout
        got = []
        while True:
            try:
                line = self.lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                raise AssertionError(f"no {text!r} in the output within {timeout} s; got {self.seen}") from None
            if line is None:
                raise AssertionError(f"the output ended without {text!r}: {self.seen}; {self.process.stderr.read()}")
            self.seen.append(line)
            got.append(line)
            if text in line:
                return got

    def nothing_for(self, seconds: float) -> None:
        try:
            line = self.lines.get(timeout=seconds)
        except queue.Empty:
            return
        raise AssertionError(f"unexpected output: {line!r}")

    def finish(self, timeout: float = WAIT) -> tuple[int, str, str]:
        code = self.process.wait(timeout)
        rest = []
        while True:
            line = self.lines.get(timeout=WAIT)
            if line is None:
                break
            rest.append(line)
        self.seen += rest
        return code, "\n".join(rest), self.process.stderr.read()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(30)
        self.process.stdout.close()
        self.process.stderr.close()


def test_show_follow_prints_each_step_as_it_is_written_and_ends_with_the_run(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with SlowWriter(path) as writer:
        show = Command("show", "--follow", str(path))
        try:
            show.until("task    How many copies of Il Gattopardo are available?")
            writer.step()
            assert any("web_search[Il Gattopardo copies]" in line for line in show.until("step 1/6"))
            show.nothing_for(0.3)  # step 2 is not written yet
            writer.step()
            assert any("catalog[Il Gattopardo]" in line for line in show.until("step 2/6"))
            writer.step(3)
            show.until("outcome  answered, correct after 5 steps: 2")
            code, rest, errors = show.finish()
            assert code == 0 and errors == "" and rest == ""
        finally:
            show.close()


def test_show_follow_ends_when_the_writer_goes_away(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with SlowWriter(path) as writer:
        show = Command("show", "--follow", str(path))
        try:
            writer.step(2)
            show.until("catalog[Il Gattopardo]")
            writer.finish()  # releases the file with the run unfinished
            code, rest, errors = show.finish()
            assert code == 0 and "outcome  incomplete" in rest and errors == ""
        finally:
            show.close()


def test_show_follow_json_streams_the_steps(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with SlowWriter(path) as writer:
        show = Command("show", "--follow", "--json", str(path))
        try:
            writer.step(5)
            code, rest, errors = show.finish()
            assert code == 0 and errors == ""
            import json

            data = json.loads(show.seen[-1])
            assert [s["step"] for s in data["steps"]] == [1, 2, 3, 4, 5] and data["outcome"] == "answered"
        finally:
            show.close()


def test_check_follow_fails_at_the_first_error_as_soon_as_it_is_written(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with SlowWriter(path) as writer:
        check = Command("check", "--follow", str(path))
        try:
            check.nothing_for(0.3)
            writer.step()  # step 1 calls a tool that does not exist; steps 2-5 are not written yet
            code, rest, errors = check.finish()
            assert code == 1, (rest, errors)
            lines = check.seen
            assert any("step 1 error" in line and "web_search" in line for line in lines)
            assert lines[-1].startswith("FAIL: error (1 occurrence in 1 run, 1 step)")
            assert writer.process.poll() is None  # the recording goes on
        finally:
            check.close()


def test_check_follow_passes_when_the_run_ends_cleanly(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with SlowWriter(path, "library_good.toml") as writer:
        check = Command("check", "--follow", "--json", str(path))
        try:
            writer.step(2)
            check.nothing_for(0.3)  # no error yet, and the run goes on
            writer.step(2)
            code, rest, errors = check.finish()
            import json

            result = json.loads(check.seen[-1])
            assert code == 0 and result["ok"] and result["runs"][0]["steps"] == 4, (rest, errors)
        finally:
            check.close()


def test_check_follow_fails_on_a_run_its_writer_left_unfinished(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with SlowWriter(path, "library_good.toml") as writer:
        check = Command("check", "--follow", "--fail-on", "error,incomplete", str(path))
        try:
            writer.step(2)
            writer.finish()
            code, rest, errors = check.finish()
            assert code == 1 and "incomplete" in rest and "the run has no end after 2 steps" in rest
        finally:
            check.close()


def test_following_a_file_truncated_meanwhile_exits_2_saying_so(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with SlowWriter(path) as writer:
        show = Command("show", "--follow", str(path))
        try:
            writer.step()
            show.until("web_search")
            os.truncate(path, 200)
            code, rest, errors = show.finish()
            assert code == 2
            assert "truncated while it was followed" in errors
        finally:
            show.close()


def test_ctrl_c_stops_following_at_once(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with SlowWriter(path) as writer:
        show = Command("show", "--follow", str(path))
        try:
            writer.step()
            show.until("web_search")
            started = time.monotonic()
            show.process.send_signal(signal.SIGINT)
            code, rest, errors = show.finish()
            assert code == 130 and "Traceback" not in errors
            assert time.monotonic() - started < 5
        finally:
            show.close()


def test_a_file_not_written_yet_is_waited_for(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    check = Command("check", "--follow", str(path))
    try:
        time.sleep(0.5)
        with SlowWriter(path, "library_good.toml") as writer:
            writer.step(4)
            code, rest, errors = check.finish()
        assert code == 0 and "waiting for" in errors and check.seen[-1].startswith("ok: no error, repeat or budget")
    finally:
        check.close()


def test_follow_refuses_step(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "agentdbg", "show", "--follow", "--step", "2", "x.jsonl"],
                            capture_output=True, text=True)
    assert result.returncode == 2 and "choose one" in result.stderr
