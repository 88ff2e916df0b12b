"""The agent's side of the channel: listen beside the trace, and after each step ask an
attached debugger whether to go on (see ``protocol`` for the messages).

With no debugger attached a step costs nothing more than a look at a variable. With one,
the agent sends ``step`` once the step is flushed and waits (at most ``ANSWER_TIMEOUT``)
for ``go`` or ``pause``; a paused agent waits for ``go``, at most ``pause_timeout``
seconds, and goes on as soon as the debugger goes away. What happened is returned as a
``Pause``, which the recorder writes to the trace as a ``pause`` event.
"""

from __future__ import annotations

import json
import math
import os
import socket
import stat
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentdbg import __version__
from agentdbg.attach.protocol import (
    ANSWER_TIMEOUT,
    PAUSE_TIMEOUT,
    PROTOCOL,
    ChannelError,
    LineReader,
    channel_path,
    fits,
    owned,
    peer_pid,
    read_pointer,
    same_user,
    send_now,
)
from agentdbg.engine import events as ev

ACCEPT_EVERY = 0.25  # seconds between looks at the closing flag while waiting for a debugger
ENV = "AGENTDBG_ATTACH"  # set (to 1) to make agentdbg.record attach by default


@dataclass(frozen=True)
class Pause:
    """A pause at a step, once it is over: ``ended`` is ``resumed`` (the debugger said go),
    ``timeout`` (``pause_timeout`` passed) or ``detached`` (the debugger went away)."""

    step: int
    waited: float
    ended: str
    reason: str = ""

    def event(self) -> ev.Paused:
        return ev.Paused(step=self.step, waited=round(self.waited, 3), ended=self.ended, reason=self.reason)


def attach_requested(attach: bool | str | None) -> str | None:
    """``"on"``, ``"wait"`` (the first step waits for a debugger) or None (no channel), from
    ``attach`` as given, or (None) from the ``AGENTDBG_ATTACH`` variable."""
    if attach is None:
        attach = os.environ.get(ENV, "").strip().lower()
        if attach in ("", "0", "no", "false", "off"):
            return None
    if isinstance(attach, str):
        if attach.strip().lower() == "wait":
            return "wait"
        if attach.strip().lower() in ("1", "yes", "true", "on"):
            return "on"
        raise ValueError(f"attach should be True, False or 'wait', got {attach!r}")
    return "on" if attach else None


def checked_timeout(value: Any, name: str = "pause_timeout") -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} should be a number of seconds above 0, got {value!r}")
    return float(value)


class AgentChannel:
    """Listen for a debugger beside ``trace`` (one at a time) until ``close()``.

    Raises ``ChannelError`` when the socket cannot be made: something that is not a
    stale agent socket of this user's is in its place, another agent listens there."""

    def __init__(self, trace: str | Path, *, pause_timeout: float = PAUSE_TIMEOUT,
                 answer_timeout: float = ANSWER_TIMEOUT, wait: bool = False):
        self.pause_timeout = checked_timeout(pause_timeout)
        self.answer_timeout = checked_timeout(answer_timeout, "answer_timeout")
        self.wait = wait  # the first step waits (pause_timeout at most) for a debugger to attach
        self.trace = Path(os.path.abspath(os.fspath(trace)))
        self.path = channel_path(trace)
        self._listener, self.socket_path, self._pointer, self._private = _listen(self.path)
        self._made = _identity(self.path)
        self._cond = threading.Condition()
        self._send_lock = threading.Lock()
        self._conn: socket.socket | None = None
        self.debugger_pid: int | None = None
        self._answers: dict[int, dict[str, Any]] = {}
        self._next_id = 0
        self._last = (0, 0)  # the last step told, and where it ends
        self._closed = False
        self.on_attach: Callable[[bool], None] | None = None  # told True / False as a debugger comes and goes
        self._thread = threading.Thread(target=self._accept_loop, name=f"agentdbg-attach {self.path}", daemon=True)
        self._thread.start()

    @property
    def attached(self) -> bool:
        return self._conn is not None

    def wait_for_debugger(self, timeout: float | None = None) -> bool:
        """Wait until a debugger attaches (at most ``timeout`` seconds); True if one did."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._conn is None and not self._closed:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(0.25 if left is None else min(left, 0.25))
            return self._conn is not None

    # -- the loop's thread ----------------------------------------------------------------
    def step_written(self, step: int, end: int, ended: bool = False) -> Pause | None:
        """Step ``step`` (ending at byte ``end`` of the trace) is flushed: tell an attached
        debugger and do as it says. Returns how a pause ended, or None (no pause)."""
        if self.wait:
            self.wait = False
            if not ended:
                self.wait_for_debugger(self.pause_timeout)
        with self._cond:
            self._last = (step, end)
            conn = self._conn
            self._next_id += 1
            number = self._next_id
        if conn is None or not self._send(conn, {"type": "step", "id": number, "step": step, "end": end,
                                                 "ended": bool(ended)}):
            return None
        if ended:
            return None
        answer = self._await(conn, number, ("go", "pause", "unsupported"), self.answer_timeout)
        if answer is None:
            self._drop(conn)  # a debugger that does not answer is let go: it costs one wait, not one per step
            return None
        if answer["type"] != "pause":
            return None
        reason = answer.get("reason")
        reason = reason[:500] if isinstance(reason, str) else ""
        started = time.monotonic()
        resumed = self._await(conn, number, ("go",), self.pause_timeout)
        waited = time.monotonic() - started
        if resumed is not None:
            return Pause(step, waited, "resumed", reason)
        if self._conn is not conn:
            return Pause(step, waited, "detached", reason)
        self._send(conn, {"type": "went_on", "re": number, "why": "timeout", "waited": round(waited, 3)})
        return Pause(step, waited, "timeout", reason)

    def _await(self, conn: socket.socket, number: int, kinds: tuple[str, ...], timeout: float) -> dict | None:
        """The answer to request ``number`` of one of ``kinds``; None on timeout or when
        the debugger goes away. Waits in short slices, so Ctrl-C is heard at once."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                answer = self._answers.get(number)
                if answer is not None and answer["type"] in kinds:
                    del self._answers[number]
                    return answer
                left = deadline - time.monotonic()
                if self._conn is not conn or self._closed or left <= 0:
                    return None
                self._cond.wait(min(left, 0.25))

    # -- the channel's threads ------------------------------------------------------------
    def _accept_loop(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                if self._closed:
                    return
                time.sleep(ACCEPT_EVERY)
                continue
            conn.settimeout(None)
            if not same_user(conn):
                _close_quietly(conn)
                continue
            with self._cond:
                busy = self._conn is not None and not self._closed
                if not busy:
                    self._conn, self.debugger_pid = conn, peer_pid(conn)
                    self._answers.clear()
                step, end = self._last
            if busy:
                self._send(conn, {"type": "busy", "pid": self.debugger_pid})
                _close_quietly(conn)
                continue
            hello = {"type": "hello", "protocol": PROTOCOL, "agent": f"agentdbg {__version__}", "pid": os.getpid(),
                     "trace": str(self.trace), "step": step, "end": end, "pause_timeout": self.pause_timeout}
            if self._send(conn, hello):
                threading.Thread(target=self._read_loop, args=(conn,), name="agentdbg-attach reader",
                                 daemon=True).start()
                with self._cond:
                    self._cond.notify_all()
                self._told(True)
            else:
                self._drop(conn)

    def _read_loop(self, conn: socket.socket) -> None:
        reader = LineReader(conn)
        try:
            while True:
                message = reader.read()
                if message is None or message["type"] == "detach":
                    break
                number = message.get("re")
                if message["type"] in ("go", "pause", "unsupported") and isinstance(number, int):
                    with self._cond:
                        self._answers[number] = message
                        self._cond.notify_all()
        except (OSError, ChannelError):
            pass
        finally:
            self._drop(conn)

    def _drop(self, conn: socket.socket) -> None:
        with self._cond:
            current = self._conn is conn
            if current:
                self._conn, self.debugger_pid = None, None
            self._cond.notify_all()
        _close_quietly(conn)
        if current:
            self._told(False)

    def _told(self, attached: bool) -> None:
        if self.on_attach is not None:
            try:
                self.on_attach(attached)
            except Exception:  # the user's callback must not stop the channel
                pass

    def _send(self, conn: socket.socket, message: dict[str, Any]) -> bool:
        with self._send_lock:
            return send_now(conn, message)

    # -- the end --------------------------------------------------------------------------
    def close(self) -> None:
        """Say goodbye, stop listening and remove the socket (only if it is still ours)."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            conn = self._conn
            self._cond.notify_all()
        if conn is not None:
            self._send(conn, {"type": "bye"})
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        _close_quietly(self._listener)
        if _identity(self.path) == self._made:
            _unlink_quietly(self.path)
        if self._pointer is not None:
            _unlink_quietly(self.socket_path)
        if self._private is not None:
            try:
                os.rmdir(self._private)
            except OSError:
                pass
        if self._thread is not threading.current_thread():
            self._thread.join(ACCEPT_EVERY * 4)

    def __enter__(self) -> AgentChannel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _listen(path: Path) -> tuple[socket.socket, Path, Path | None, Path | None]:
    """A listening socket at ``path`` (or, for a path too long for a socket, in a private
    directory named by a pointer file at ``path``): (socket, its path, pointer, directory)."""
    _clear_stale(path)
    if fits(path):
        return _bind(path), path, None, None
    private = Path(tempfile.mkdtemp(prefix="agentdbg-"))  # mode 0700
    target = private / "agent.sock"
    try:
        if not fits(target):
            raise ChannelError(f"{path}: too long for a socket, and so is the temporary directory {private}")
        listener = _bind(target)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            _close_quietly(listener)
            raise ChannelError(f"{path}: cannot write it ({exc.strerror})") from None
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(json.dumps({"socket": str(target), "pid": os.getpid()}) + "\n")
    except BaseException:
        _unlink_quietly(target)
        os.rmdir(private)
        raise
    return listener, target, path, private


def _bind(path: Path) -> socket.socket:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(str(path))  # refuses an existing name (a symlink too): never replaces or follows one
    except OSError as exc:
        _close_quietly(listener)
        raise ChannelError(f"{path}: cannot listen there ({exc.strerror})") from None
    try:
        info = os.lstat(path)
        if not stat.S_ISSOCK(info.st_mode):
            raise ChannelError(f"{path}: was replaced as it was made")
        os.chmod(path, 0o600)  # the user only (Linux also checks each peer's user id)
        listener.listen(4)
        listener.settimeout(ACCEPT_EVERY)
    except BaseException:
        _close_quietly(listener)
        _unlink_quietly(path)
        raise
    return listener


def _clear_stale(path: Path) -> None:
    """Remove what an agent that crashed left at ``path``; refuse anything else."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode):
        raise ChannelError(f"{path}: is a symbolic link; the agent's socket is not put there (remove it)")
    if not owned(info):
        raise ChannelError(f"{path}: belongs to another user; not replaced")
    if stat.S_ISSOCK(info.st_mode):
        if _answers(path):
            raise ChannelError(f"{path}: another agent listens there")
        _unlink_quietly(path)
        return
    if stat.S_ISREG(info.st_mode):
        try:
            target = read_pointer(path)
        except ChannelError:
            raise ChannelError(f"{path}: exists and is not an agent's channel; not replaced") from None
        if _answers(target):
            raise ChannelError(f"{path}: another agent listens at {target}")
        _remove_stale_socket(target)
        _unlink_quietly(path)
        return
    raise ChannelError(f"{path}: exists and is not a socket; not replaced")


def _answers(path: Path) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(str(path))
        return True
    except OSError:
        return False
    finally:
        _close_quietly(probe)


def _remove_stale_socket(target: Path) -> None:
    try:
        info = os.lstat(target)
    except OSError:
        return
    if stat.S_ISSOCK(info.st_mode) and owned(info):
        _unlink_quietly(target)
        if target.parent.name.startswith("agentdbg-"):
            try:
                os.rmdir(target.parent)
            except OSError:
                pass


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def _unlink_quietly(path: Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _close_quietly(sock: socket.socket) -> None:
    try:
        sock.close()
    except OSError:
        pass


def run_plan_attached(plan: Any, writer: Any, channel: AgentChannel, approver: Any = None,
                      journal: Any = None) -> Any:
    """Run ``plan`` writing to ``writer``, telling ``channel`` after each step (a paused
    step gets its ``pause`` event): ``agentdbg record PLAN --attach``. ``approver`` and
    ``journal`` as for ``Plan.run``. Returns the trace."""
    run = plan.start(on_event=writer.write, approver=approver, journal=journal)
    while not run.done:
        result = run.step()
        if result.step:
            pause = channel.step_written(result.step, writer.end_offset, ended=run.done)
            if pause is not None:
                writer.write(pause.event())
    return run.trace()
