"""Run agentdbg commands on a case in child processes, as a user would in a pipe.

A worker imports agentdbg once and forks children to run commands: each child is in its
own process group, reads /dev/null, writes stdout and stderr into files (with the
encoding and error handlers of a piped ``agentdbg``), and has its memory and file sizes
capped so a runaway read cannot take the machine down. A command ends as the interpreter
would end it: an escaped exception printed as a traceback, threads joined, stdout
flushed. A command still running at its time limit is killed with its group: a hang.

Forking costs more than most commands on a small case, so the headless commands of a
case run one after another in one child (``run_in_sequence``); one that hangs or kills
its process is followed by a new child for the rest. Commands that may block (a FIFO)
and the debugger run in children of their own (``run_side_by_side``).
"""

from __future__ import annotations

import atexit
import io
import os
import resource
import select
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

MEMORY_LIMIT = 2 << 30  # address space per child
FILE_SIZE_LIMIT = 1 << 30  # what a command may write into any one file
# Root reads files whatever their permissions say, through these two capabilities.
CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 1, 2

# The headless commands, each given the case's file and its extra arguments.
COMMANDS: dict[str, list[str]] = {
    "show": ["show", "{file}"],
    "show --step 1": ["show", "{file}", "--step", "1"],
    "show --json": ["show", "{file}", "--json"],
    "stats": ["stats", "{file}"],
    "stats --json": ["stats", "{file}", "--json"],
    "check": ["check", "{file}", "--fail-on", "error,repeat,budget"],
    "convert": ["convert", "{file}", "-o", "converted.jsonl"],
    "diff": ["diff", "{file}", "{file}"],
}

_report_fd: int | None = None  # in a child: where it reports to the worker

# The stream settings of a piped agentdbg: this worker's own (it was started with pipes).
STREAM_ENCODING = sys.stdout.encoding or "utf-8"
STREAM_ERRORS = sys.stdout.errors or "strict"


def command_argv(name: str, file: str, extra: tuple[str, ...], template: tuple[str, ...] | None = None) -> list[str]:
    """The command ``name`` (or ``template``, a case's own) on ``file``, with ``extra`` after."""
    return [part.replace("{file}", file) for part in (COMMANDS[name] if template is None else template)] + list(extra)


@dataclass
class Step:
    """One command: what to run (returns the exit code), as which arguments, for how long,
    and where its output goes."""

    target: Callable[[], int]
    argv: list[str]
    limit: float
    stdout_path: Path
    stderr_path: Path


@dataclass
class Outcome:
    exit_code: int | None  # None when killed by a signal, or at the time limit
    signal_number: int | None
    timed_out: bool
    seconds: float
    cpu_seconds: float
    stuck: str = ""  # how a timed-out command was stuck: busy, blocked or starved


class HarnessError(RuntimeError):
    """A child could not be set up to run a command (not agentdbg's failure)."""


# -- inside a child -----------------------------------------------------------------------------


def _fresh_streams() -> None:
    def writer(fd: int, errors: str, line_buffering: bool) -> io.TextIOWrapper:
        return io.TextIOWrapper(io.BufferedWriter(io.FileIO(fd, "w", closefd=False)), encoding=STREAM_ENCODING,
                                errors=errors, line_buffering=line_buffering)

    sys.stdout = sys.__stdout__ = writer(1, STREAM_ERRORS, False)
    sys.stderr = sys.__stderr__ = writer(2, "backslashreplace", True)


def _setup(steps: list[Step], directory: Path, unprivileged: bool) -> list[tuple[int, int]]:
    """Its own process group, no stdin, every output file opened (before giving up root),
    limits, the case directory. Returns the (stdout, stderr) descriptors of each step."""
    os.setpgid(0, 0)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    stdin = os.open(os.devnull, os.O_RDONLY)
    os.dup2(stdin, 0)
    os.close(stdin)
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)),
                                                 encoding=STREAM_ENCODING, errors=STREAM_ERRORS)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC
    outputs = [(os.open(step.stdout_path, flags, 0o644), os.open(step.stderr_path, flags, 0o644)) for step in steps]
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_LIMIT, FILE_SIZE_LIMIT))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if unprivileged and os.geteuid() == 0:
        drop_permission_override()
    os.chdir(directory)
    return outputs


def drop_permission_override() -> None:
    """Make root obey file permissions, as any other user does (it stays root otherwise,
    so Python's own files stay readable). OSError when the system refuses."""
    import ctypes

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    libc = ctypes.CDLL(None, use_errno=True)
    header, data = Header(0x20080522, 0), (Data * 2)()  # _LINUX_CAPABILITY_VERSION_3
    if libc.capget(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capget failed")
    mask = ~((1 << CAP_DAC_OVERRIDE) | (1 << CAP_DAC_READ_SEARCH)) & 0xFFFFFFFF
    data[0].effective &= mask
    data[0].permitted &= mask
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")


def _run_as_command(target: Callable[[], int], argv: list[str], *, last: bool) -> int:
    """Run ``target`` as ``agentdbg ARGV`` would run, up to the interpreter's exit."""
    sys.argv = ["agentdbg", *argv]
    try:
        result = target()
        code = 0 if result is None else int(result)
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    try:
        for thread in threading.enumerate():  # the interpreter waits for these before exiting
            if thread is not threading.current_thread() and not thread.daemon:
                thread.join()
        if last:
            atexit._run_exitfuncs()
    except BaseException:
        traceback.print_exc()
    try:
        sys.stdout.flush()
    except BaseException as exc:
        print(f"Exception ignored on flushing sys.stdout:\n{type(exc).__name__}: {exc}", file=sys.stderr)
        code = 120
    try:
        sys.stderr.flush()
    except BaseException:
        pass
    return code


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def tick() -> None:
    """Called by a long step (the debugger, key after key) to say it is still making
    progress: its time limit starts again."""
    if _report_fd is not None:
        os.write(_report_fd, b"tick\n")


def _die_with_parent(parent: int) -> None:
    """A worker stopped early takes its commands with it (a FIFO reader would wait forever)."""
    import ctypes

    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(0)


def _child_main(steps: list[Step], directory: Path, unprivileged: bool, report_fd: int, parent: int) -> None:
    """Run ``steps`` in order, reporting "start N" and "done N CODE CPU" on ``report_fd``."""
    global _report_fd
    _report_fd = report_fd
    try:
        try:
            _die_with_parent(parent)
            outputs = _setup(steps, directory, unprivileged)
        except BaseException as exc:
            os.write(report_fd, f"error {type(exc).__name__}: {exc}".replace("\n", " ").encode() + b"\n")
            return
        for number, (step, (out, err)) in enumerate(zip(steps, outputs, strict=True)):
            os.write(report_fd, f"start {number}\n".encode())
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except BaseException:
                    pass
            os.dup2(out, 1)
            os.dup2(err, 2)
            _fresh_streams()
            before = _cpu()
            code = _run_as_command(step.target, step.argv, last=number == len(steps) - 1)
            os.write(report_fd, f"done {number} {code} {_cpu() - before:.3f}\n".encode())
    finally:
        os._exit(0)


# -- in the worker ------------------------------------------------------------------------------


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
STARVED_LIMITS = 3  # a command still runnable but given little CPU (a busy machine) waits this many limits


def _usage(pid: int) -> tuple[float, bool]:
    """(CPU seconds the process has used, all its threads; whether any thread is runnable)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
        fields = stat[stat.rindex(b")") + 2:].split()
        cpu = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    except (OSError, ValueError, IndexError):
        return 0.0, False
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/stat", "rb") as handle:
                stat = handle.read()
            if stat[stat.rindex(b")") + 2:][:1] == b"R":
                return cpu, True
    except (OSError, ValueError):
        pass
    return cpu, False


@dataclass
class _Child:
    """A forked child running ``steps`` and what it has reported so far."""

    steps: list[Step]
    pid: int
    reader: int
    outcomes: list[Outcome | None]
    current: int | None = None
    started: float = 0.0  # when the current step started
    progress: float = 0.0  # when it last said it made progress (its time limit counts from there)
    cpu_at_progress: float = 0.0
    cpu_reported: float = 0.0
    error: str = ""
    stuck: str = ""
    stuck_at: float = 0.0
    buffer: bytes = field(default=b"", repr=False)

    @property
    def deadline(self) -> float | None:
        return None if self.current is None else self.progress + self.steps[self.current].limit

    def check_stuck(self, now: float) -> str:
        """Past its limit, a step is stuck when it has used that much CPU (busy), or sleeps
        using next to none (blocked), or is still going after STARVED_LIMITS limits; a step
        that is runnable but starved of CPU by other work is given more time."""
        limit = self.steps[self.current].limit
        if now - self.progress < limit:
            return ""
        cpu, runnable = _usage(self.pid)
        used = cpu - self.cpu_at_progress
        if used >= limit:
            return "busy"
        if not runnable and used < 0.1 * limit:
            return "blocked"
        if now - self.progress >= STARVED_LIMITS * limit:
            return "starved"
        return ""

    def _made_progress(self) -> None:
        self.progress = time.monotonic()
        self.cpu_at_progress = _usage(self.pid)[0]

    def feed(self, chunk: bytes) -> None:
        self.buffer += chunk
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            word, _, rest = line.decode("utf-8", "replace").partition(" ")
            if word == "start":
                self.current, self.started = int(rest), time.monotonic()
                self._made_progress()
            elif word == "tick":
                self._made_progress()
            elif word == "done":
                number, code, cpu = rest.split()
                self.outcomes[int(number)] = Outcome(int(code), None, False, time.monotonic() - self.started,
                                                     float(cpu))
                self.cpu_reported += float(cpu)
                self.current = None
            elif word == "error":
                self.error = rest


def _fork(steps: list[Step], directory: Path, unprivileged: bool) -> _Child:
    read_fd, write_fd = os.pipe()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        _child_main(steps, directory, unprivileged, write_fd, parent)
    os.close(write_fd)
    return _Child(steps, pid, read_fd, [None] * len(steps))


def _kill(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _follow(children: list[_Child]) -> None:
    """Read every child's reports until each has ended or overrun a time limit."""
    open_children = {child.reader: child for child in children}
    while open_children:
        now = time.monotonic()
        for fd, child in list(open_children.items()):
            if child.current is not None:
                child.stuck = child.check_stuck(now)
                if child.stuck:
                    child.stuck_at = now
                    _kill(child.pid)
                    del open_children[fd]
        if not open_children:
            break
        deadlines = [child.deadline for child in open_children.values() if child.deadline is not None]
        wait = min(1.0, max(0.0, min(deadlines) - now)) if deadlines else 1.0
        ready, _, _ = select.select(list(open_children), [], [], wait)
        for fd in ready:
            chunk = os.read(fd, 65536)
            if chunk:
                open_children[fd].feed(chunk)
            else:
                del open_children[fd]
    for child in children:
        _kill(child.pid)  # a hung command, or whatever one left running (before reaping: the id stays its own)
        _, status, usage = os.wait4(child.pid, 0)
        os.close(child.reader)
        if child.error:
            raise HarnessError(f"could not set up a child for {child.steps[0].argv}: {child.error}")
        if child.current is None:
            continue
        cpu = max(0.0, usage.ru_utime + usage.ru_stime - child.cpu_reported)
        if child.stuck:
            outcome = Outcome(None, None, True, child.stuck_at - child.started, cpu, child.stuck)
        elif os.WIFSIGNALED(status):
            outcome = Outcome(None, os.WTERMSIG(status), False, time.monotonic() - child.started, cpu)
        else:
            outcome = Outcome(os.WEXITSTATUS(status), None, False, time.monotonic() - child.started, cpu)
        child.outcomes[child.current] = outcome


def run_in_sequence(steps: list[Step], directory: Path, *, unprivileged: bool = False) -> list[Outcome]:
    """Run the steps one after another, as few children as possible."""
    outcomes: list[Outcome] = []
    while len(outcomes) < len(steps):
        child = _fork(steps[len(outcomes):], directory, unprivileged)
        _follow([child])
        done = [outcome for outcome in child.outcomes if outcome is not None]
        if not done:
            raise HarnessError(f"a child ended before running {steps[len(outcomes)].argv}")
        outcomes += done
    return outcomes


def run_side_by_side(steps: list[Step], directory: Path, *, unprivileged: bool = False) -> list[Outcome]:
    """Run each step in a child of its own, all at once."""
    children = [_fork([step], directory, unprivileged) for step in steps]
    _follow(children)
    outcomes = []
    for child in children:
        if child.outcomes[0] is None:
            raise HarnessError(f"a child ended before running {child.steps[0].argv}")
        outcomes.append(child.outcomes[0])
    return outcomes
