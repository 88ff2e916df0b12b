"""Worker processes for whole-file work on big traces: indexing and block classification.

A headless command that reads all of a big file (``check``, ``stats``, ``show``,
``export``) shares the work with a few processes forked once, while the program is still
single-threaded (forking a threaded process can deadlock the child). Only a program that
asks for them (``enable``: the headless commands do) gets any: the debugger's screen and a
program using the library read in their own process. The pool is made by ``start`` when
a big trace is opened; later scans, from any thread, use it (no fork happens after the first). The workers read the file themselves
(``FileAt``): only offsets and findings go through the pipes.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import stat
import threading
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

PARALLEL_BYTES = 32 * 1024 * 1024  # files (and scans) larger than this are shared with the workers
MAX_WORKERS = 4
WORKERS_VARIABLE = "AGENTDBG_SCAN_WORKERS"  # how many worker processes (default: one per core, up to 4)
IN_FLIGHT = 6  # pieces of work sent ahead to the workers
_workers: Any = False  # the pool, once made (None: none to be had)
_enabled = False  # this program wants them (``enable``)


def fork_is_safe() -> bool:
    """Forking a threaded process can deadlock the child; a worker forks no workers."""
    return threading.active_count() == 1 and multiprocessing.parent_process() is None


def pool() -> Any:
    """The worker processes (None: not enabled, one core, no ``fork`` here, turned off, or
    the process is already threaded and has none). Made once; they end with the program."""
    global _workers
    if _workers is False:
        if not _enabled or not fork_is_safe():
            return None  # (not remembered: a later single-threaded moment may still make them)
        count = min(os.cpu_count() or 1, MAX_WORKERS)
        wanted = os.environ.get(WORKERS_VARIABLE, "").strip()
        if wanted.isdigit():  # (a shared machine: fewer, or 0 for none)
            count = min(int(wanted), MAX_WORKERS)
        if count < 2 or "fork" not in multiprocessing.get_all_start_methods():
            _workers = None
        else:  # fork: the patterns are compiled already, nothing to import again
            made = ProcessPoolExecutor(count, mp_context=multiprocessing.get_context("fork"), initializer=_quiet)
            made.submit(int)  # the first task forks them all, now, from this one thread
            _workers = made
    return _workers


def _quiet() -> None:
    """In a worker: Ctrl-C is for the command (which stops and ends its workers), not for
    each worker to print its own traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def start(size: int) -> None:
    """Fork the workers now (while the program is single-threaded) for a file of ``size``
    bytes, when it is big enough to share."""
    if size > PARALLEL_BYTES:
        pool()


def lost() -> None:
    """A worker died (killed, out of memory): this scan and later ones go on without them."""
    global _workers
    _workers = None


def enable() -> None:
    """Let big traces opened from now on share their work with worker processes (the
    headless commands call this first thing; a program using the library may too)."""
    global _enabled
    _enabled = True


@dataclass(frozen=True)
class FileAt:
    """The file a scan reads, for a worker process to read it itself rather than be sent
    its bytes: through the descriptor it inherited when it was forked after the file was
    opened, else by path, and only while it is the same file (device and inode)."""

    path: str
    fd: int
    device: int
    inode: int


_opened: dict[FileAt, int] = {}  # in a worker: the descriptors it reads files through


def _descriptor(at: FileAt) -> int | None:
    fd = _opened.get(at)
    if fd is not None:
        return fd
    try:
        held = os.fstat(at.fd)
        if (held.st_dev, held.st_ino) == (at.device, at.inode):
            _opened[at] = at.fd
            return at.fd
    except OSError:
        pass  # (forked before the file was opened, or the descriptor is closed)
    try:
        fd = os.open(at.path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    named = os.fstat(fd)
    if (named.st_dev, named.st_ino) != (at.device, at.inode) or not stat.S_ISREG(named.st_mode):
        os.close(fd)
        return None
    _opened[at] = fd
    return fd


def read_there(at: FileAt, size: int, offset: int) -> bytes | None:
    """In a worker: ``size`` bytes of the file from ``offset``; None when the file cannot
    be read here or holds fewer bytes than that now."""
    fd = _descriptor(at)
    if fd is None:
        return None
    try:
        data = os.pread(fd, size, offset)
    except OSError:
        return None
    return data if len(data) == size else None
