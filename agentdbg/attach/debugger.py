"""The debugger's side of the channel: find the agent of a trace, connect, hear what it
says, answer its steps (see ``protocol``).

``AgentLink.connect(trace, on_message, on_close)`` returns a link, or None when no agent
listens beside the trace (none was attached, or it has ended and left a stale socket);
``ChannelError`` says why a channel that is there cannot be used (not a socket of this
user's, a symlink, another debugger attached). Messages are handed to ``on_message`` from
the link's own thread: a screen passes them on to its thread.
"""

from __future__ import annotations

import errno
import os
import socket
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentdbg.attach.protocol import (
    PROTOCOL,
    ChannelError,
    LineReader,
    channel_path,
    check_socket,
    owned,
    read_pointer,
    same_user,
    send_now,
)

CONNECT_TIMEOUT = 2.0  # seconds for connecting and for the agent's hello
_GONE = {errno.ECONNREFUSED, errno.ENOENT, errno.ENOTSOCK}  # a stale socket: its agent has ended


def agent_socket(trace: str | Path) -> Path | None:
    """The socket of ``trace``'s agent, or None when there is no channel beside it."""
    path = channel_path(trace)
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISLNK(info.st_mode):
        raise ChannelError(f"{path}: is a symbolic link, not followed")
    if not owned(info):
        raise ChannelError(f"{path}: belongs to another user; not used")
    if stat.S_ISREG(info.st_mode):
        return read_pointer(path)
    if not stat.S_ISSOCK(info.st_mode):
        raise ChannelError(f"{path}: is not an agent's socket")
    return path


class AgentLink:
    """A debugger's connection to an attached agent."""

    def __init__(self, sock: socket.socket, hello: dict[str, Any], reader: LineReader,
                 on_message: Callable[[dict[str, Any]], None], on_close: Callable[[str], None]):
        self.sock = sock
        self.hello = hello
        self.pid = hello.get("pid") if isinstance(hello.get("pid"), int) else None
        self.pause_timeout = hello.get("pause_timeout")
        self._reader = reader
        self._on_message = on_message
        self._on_close = on_close
        self._send_lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._read_loop, name="agentdbg-attach link", daemon=True)

    @classmethod
    def connect(cls, trace: str | Path, on_message: Callable[[dict[str, Any]], None],
                on_close: Callable[[str], None], start: bool = True) -> AgentLink | None:
        """Attach to ``trace``'s agent; None when none listens. Starts hearing messages,
        or (``start=False``) once ``start()`` is called: a caller that must know the link
        before its first message comes."""
        path = agent_socket(trace)
        if path is None:
            return None
        check_socket(path)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(CONNECT_TIMEOUT)
        try:
            sock.connect(str(path))
        except OSError as exc:
            sock.close()
            if exc.errno in _GONE:
                return None  # stale: the agent ended without removing it (the next one will)
            raise ChannelError(f"{path}: cannot connect ({exc.strerror or exc})") from None
        try:
            if not same_user(sock):
                raise ChannelError(f"{path}: the process listening there belongs to another user")
            reader = LineReader(sock)
            hello = reader.read(deadline=time.monotonic() + CONNECT_TIMEOUT)
            if hello is None:
                raise ChannelError(f"{path}: the agent closed the connection")
            if hello["type"] == "busy":
                who = f" (pid {hello['pid']})" if isinstance(hello.get("pid"), int) else ""
                raise ChannelError(f"another debugger{who} is attached to this agent")
            if hello["type"] != "hello" or hello.get("protocol") != PROTOCOL:
                raise ChannelError(f"{path}: speaks another protocol ({hello.get('type')} "
                                   f"version {hello.get('protocol')!r}; this agentdbg speaks {PROTOCOL})")
        except (OSError, ChannelError) as exc:
            sock.close()
            if isinstance(exc, ChannelError):
                raise
            raise ChannelError(f"{path}: the agent did not say hello ({exc})") from None
        sock.settimeout(None)
        link = cls(sock, hello, reader, on_message, on_close)
        if start:
            link.start()
        return link

    def start(self) -> None:
        """Start hearing the agent's messages (once)."""
        if not self._thread.is_alive() and self._thread.ident is None:
            self._thread.start()

    @property
    def closed(self) -> bool:
        return self._closed

    def answer(self, request: int, go: bool, reason: str = "") -> bool:
        """Answer the agent's ``step`` request ``request``: go on, or pause there."""
        message: dict[str, Any] = {"type": "go" if go else "pause", "re": request}
        if not go and reason:
            message["reason"] = reason[:500]
        return self._send(message)

    def resume(self, request: int) -> bool:
        """Let an agent paused at request ``request`` go on."""
        return self._send({"type": "go", "re": request})

    def unsupported(self, request: int) -> bool:
        return self._send({"type": "unsupported", "re": request})

    def detach(self) -> None:
        """Let the agent go (a paused one goes on) and close the connection."""
        if self._closed:
            return
        self._send({"type": "detach"})
        self._closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()

    close = detach

    def _send(self, message: dict[str, Any]) -> bool:
        if self._closed:
            return False
        with self._send_lock:
            return send_now(self.sock, message)  # never blocks the screen on an agent that does not read

    def _read_loop(self) -> None:
        why = "the agent closed the connection"
        try:
            while True:
                message = self._reader.read()
                if message is None:
                    break
                if message["type"] == "bye":
                    why = "the recording ended"
                    break
                self._on_message(message)
        except ChannelError as exc:
            why = f"the agent sent {exc}"
        except OSError as exc:
            why = "detached" if self._closed else f"the connection broke ({exc.strerror or exc})"
        was_closed = self._closed
        self._closed = True
        try:
            self.sock.close()
        except OSError:
            pass
        self._on_close("detached" if was_closed else why)
