"""The agent channel's protocol: where the socket is, and the messages (JSON lines).

**Where.** ``FILE.agentdbg.sock`` beside the trace ``FILE``, in the same directory: a Unix
domain socket (mode 0600) the agent listens on. A socket's path is limited to about 107
bytes (``sun_path``); when the absolute path is longer, the socket is made in a private
temporary directory (mode 0700) and ``FILE.agentdbg.sock`` is instead a small regular
file (mode 0600) holding ``{"socket": PATH, "pid": N}``. Neither is ever reached through a
symbolic link, and both must belong to the user: a debugger refuses anything else, and
on Linux each side checks the other's user id (``SO_PEERCRED``). The agent removes them
when it ends; one left by an agent that crashed is stale (nothing answers on it), and the
next agent on the trace replaces it.

**Messages.** One JSON object per line, UTF-8, at most 64 KiB; each has a ``type``.
Requests carry an ``id``; answers name the request they answer in ``re``.

From the agent (it listens, so a debugger can attach and detach at will):

- ``hello`` on connecting: ``protocol`` (1), ``agent`` (its version), ``pid``, ``trace``
  (the trace's absolute path), ``step`` and ``end`` (the last step written and the byte
  offset where it ends), ``pause_timeout`` (seconds).
- ``busy`` instead, when another debugger is attached (``pid``: that debugger's); then
  the agent closes the connection.
- ``step``, a request, after each step is flushed: ``id``, ``step`` (its number in the
  run), ``end`` (where its last line ends in the file: the debugger reads the file to
  there before deciding), ``ended`` (the run has ended: no answer is awaited).
- ``went_on`` when a paused agent goes on without being told: ``re``, ``why``
  (``timeout``), ``waited`` (seconds).
- ``bye`` when the recording ends.

From the debugger:

- ``go`` (``re``): go on from that step; after ``pause``, resume.
- ``pause`` (``re``, ``reason``): stay at that step until a ``go`` with the same ``re``.
- ``unsupported`` (``re``): a request type this debugger does not know.
- ``detach``: the debugger lets go; closing the connection says the same.

Requests may gain types (an approval request for a dangerous tool call, say, answered
with a decision): a debugger answers ``unsupported`` to a type it does not know, and the
agent then decides as it would without a debugger. An agent waits ``ANSWER_TIMEOUT``
seconds for an answer to ``step`` and goes on without one.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import struct
import sys
import time
from pathlib import Path
from typing import Any

PROTOCOL = 1
SUFFIX = ".agentdbg.sock"
MAX_MESSAGE = 64 * 1024
MAX_POINTER = 4096  # bytes of a pointer file
PAUSE_TIMEOUT = 600.0  # seconds a paused agent waits for the debugger before going on
ANSWER_TIMEOUT = 5.0  # seconds an agent waits for the debugger's answer to a step
# sun_path holds 108 bytes on Linux (104 on macOS and the BSDs), the final NUL included.
PATH_LIMIT = (104 if sys.platform == "darwin" or "bsd" in sys.platform else 108) - 1


class ChannelError(ValueError):
    """The channel cannot be used: says which path and why."""


def channel_path(trace: str | Path) -> Path:
    """Where the agent of ``trace`` listens (or its pointer file is): beside the trace."""
    return Path(os.path.abspath(os.fspath(trace)) + SUFFIX)


def fits(path: str | Path) -> bool:
    return len(os.fsencode(os.fspath(path))) <= PATH_LIMIT


def encode(message: dict[str, Any]) -> bytes:
    line = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
    if len(line) > MAX_MESSAGE:
        raise ChannelError(f"a {message.get('type')} message of {len(line):,} bytes is over the limit")
    return line


def send_now(sock: socket.socket, message: dict[str, Any]) -> bool:
    """Send ``message`` without waiting: False when it cannot go whole at once (the other
    side stopped reading, or went away), so a peer that never reads cannot block us."""
    data = encode(message)
    try:
        return sock.send(data, socket.MSG_DONTWAIT) == len(data)
    except (BlockingIOError, OSError):
        return False


class LineReader:
    """Messages from a connected socket, one JSON object per line."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self._buffer = b""

    def read(self, deadline: float | None = None) -> dict[str, Any] | None:
        """The next message; None when the other side closed the connection. Raises
        ``ChannelError`` on a line that is too long or not a JSON object, ``OSError`` on a
        broken connection or a timeout (``socket.timeout``, or ``deadline`` on the
        monotonic clock passed: a peer sending a byte at a time is not waited for)."""
        while b"\n" not in self._buffer:
            if len(self._buffer) > MAX_MESSAGE:
                raise ChannelError("a message over the 64 KiB limit")
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError("no whole message in time")
            data = self.sock.recv(65536)
            if not data:
                return None
            self._buffer += data
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            message = json.loads(line.decode("utf-8"))
        except (ValueError, RecursionError):
            raise ChannelError("a message that is not JSON") from None
        if not isinstance(message, dict) or not isinstance(message.get("type"), str):
            raise ChannelError("a message that is not an object with a type")
        return message


def peer_uid(sock: socket.socket) -> int | None:
    """The user id of the process at the other end (Linux); None when it cannot be told."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    try:
        _, uid, _ = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i")))
    except (OSError, struct.error):
        return None
    return uid


def peer_pid(sock: socket.socket) -> int | None:
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    try:
        pid, _, _ = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i")))
    except (OSError, struct.error):
        return None
    return pid or None


def same_user(sock: socket.socket) -> bool:
    uid = peer_uid(sock)
    return uid is None or uid == os.getuid()


def owned(info: os.stat_result) -> bool:
    return info.st_uid == os.getuid()


def read_pointer(path: Path) -> Path:
    """The socket a pointer file names; raises ``ChannelError`` for anything suspect."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise ChannelError(f"{path}: cannot read it ({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or not owned(info) or info.st_mode & 0o022:
            raise ChannelError(f"{path}: not a pointer file of yours (owner, or writable by others)")
        data = os.read(fd, MAX_POINTER + 1)
    finally:
        os.close(fd)
    try:
        pointer = json.loads(data.decode("utf-8")) if len(data) <= MAX_POINTER else None
    except (ValueError, RecursionError):
        pointer = None
    target = pointer.get("socket") if isinstance(pointer, dict) else None
    if not isinstance(target, str) or not os.path.isabs(target) or not fits(target):
        raise ChannelError(f"{path}: does not name an agent's socket")
    return Path(target)


def check_socket(path: Path) -> None:
    """``path`` must be a socket of this user's, not reached through a symlink."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise ChannelError(f"{path}: no such socket") from None
    if stat.S_ISLNK(info.st_mode):
        raise ChannelError(f"{path}: is a symbolic link, not followed")
    if not stat.S_ISSOCK(info.st_mode):
        raise ChannelError(f"{path}: is not a socket")
    if not owned(info):
        raise ChannelError(f"{path}: belongs to another user")
