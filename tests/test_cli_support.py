"""Helpers for tests on inputs that could hang or exhaust memory (named pipes, /dev/zero):
no tests here.

``run_guarded`` runs commands in a child process with a time limit and a memory cap, and
``finishes`` runs a call in a thread with a time limit, so a regression (a read that blocks
on a pipe, or reads /dev/zero without end) fails the test instead of hanging the suite or
eating the machine's memory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest

MEMORY_CAP = 2 * 1024 ** 3  # address space for the child: far above what the commands need

_DRIVER = """
import contextlib, io, json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({cap}, {cap}))
from agentdbg.cli import main
from agentdbg.tui.app import DebuggerApp


def no_screen(self, *args, **kwargs):  # these commands must end before a screen starts
    raise RuntimeError("the screen started")


DebuggerApp.run = no_screen
results = []
for argv in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
        except BaseException as exc:
            code = f"{{type(exc).__name__}}: {{exc}}"
    results.append([code, out.getvalue(), err.getvalue()])
print(json.dumps(results))
"""


def run_guarded(*commands: list, timeout: float = 60) -> list[tuple[int, str, str]]:
    """(exit code, stdout, stderr) of ``agentdbg ARGV`` for each command, run one after the
    other in one child process; fails the test when they take longer than ``timeout``."""
    argvs = [[str(arg) for arg in argv] for argv in commands]
    try:
        done = subprocess.run([sys.executable, "-c", _DRIVER.format(cap=MEMORY_CAP), json.dumps(argvs)],
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"agentdbg did not finish within {timeout} s (blocked on its input?): {argvs}")
    assert done.returncode == 0, done.stderr[-3000:]
    return [tuple(result) for result in json.loads(done.stdout.splitlines()[-1])]


def release_readers(fifo, after: float = 0, seconds: float = 60) -> None:
    """From ``after`` seconds on, for ``seconds``, let every reader blocked opening ``fifo``
    go (it reads an empty file): a regression that blocked on the pipe then fails its test's
    assertions instead of hanging the suite. Started before the action under test, it needs
    no cancelling of what blocked (a blocked thread cannot be cancelled)."""

    def writer_comes_and_goes():
        time.sleep(after)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # only succeeds with a reader waiting
            except OSError:
                pass
            time.sleep(0.1)

    threading.Thread(target=writer_comes_and_goes, daemon=True).start()


def finishes(call, fifo=None, timeout: float = 20):
    """``call()``'s result, run in a thread; fails the test when it blocks. For named-pipe
    inputs only (a device could fill memory before the time is up: use ``run_guarded``).
    A reader blocked on ``fifo`` is released when the test fails, so nothing is left hanging."""
    outcome: dict = {}

    def target():
        try:
            outcome["value"] = call()
        except BaseException as exc:  # handed to the test
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        if fifo is not None:
            release_readers(fifo)
        pytest.fail(f"{call} did not finish within {timeout} s (blocked on a named pipe?)")
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")
