"""Who is writing a trace: an exclusive ``flock`` held on the trace file itself.

A writer holds ``LOCK_EX`` on its open trace for as long as it writes, so a second writer
is refused instead of interleaving lines with the first, and a reader can ask whether a
trace is still being written. The lock lives on the file, not on a lock file beside it:
nothing is left behind, the kernel drops it when the writer exits however it exits
(SIGKILL included), and it follows the file when it is renamed. Locks are advisory: a
program that writes without taking it (``cat >>``) is not stopped.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import time
from pathlib import Path

LOCK_PATIENCE = 0.25  # seconds a writer retries: a reader's probe holds its shared lock for microseconds
_RETRY_EVERY = 0.01
# Filesystems that cannot lock (some network and FUSE mounts): written to unlocked.
_NO_LOCKING = {errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EINVAL}


class TraceBusyError(ValueError):
    """Another writer holds the trace. ``pid`` is that process when it can be told, else None."""

    def __init__(self, path: str | Path, pid: int | None):
        self.path = str(path)
        self.pid = pid
        if pid == os.getpid():
            who = "by this process"
        elif pid:
            who = f"by another process (pid {pid})"
        else:
            who = "by another process"
        super().__init__(f"{path}: is being written {who}")


def lock_for_writing(fd: int, path: str | Path) -> bool:
    """Take the writer's lock on ``fd`` (an open trace), retrying briefly.

    True when locked, False when the filesystem cannot lock at all; raises
    ``TraceBusyError`` when another writer holds it."""
    deadline = time.monotonic() + LOCK_PATIENCE
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise TraceBusyError(path, writer_pid(fd)) from None
            time.sleep(_RETRY_EVERY)
        except OSError as exc:
            if exc.errno in _NO_LOCKING:
                return False
            raise


def is_being_written(path: str | Path) -> bool:
    """True while a writer holds ``path`` (a recording still going on), False once it has
    finished or died, or when ``path`` is not a regular file.

    Asks by taking a shared lock for an instant (writers retry past such a probe)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False  # never open a pipe or a device to ask
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # closing drops the probe's lock
    return False


def writer_holds(fd: int) -> bool | None:
    """True while a writer holds the file open at ``fd`` (a reader's own descriptor: the
    file it reads, even if the path now names another), False when none does, None when
    the filesystem cannot tell (it cannot lock)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_UN)  # at once: a writer starting now retries past it
    except OSError:
        pass
    return False


def writer_pid(fd: int) -> int | None:
    """The process holding an exclusive ``flock`` on the file open at ``fd``, when the
    system says (Linux lists locks in /proc/locks); None otherwise."""
    try:
        info = os.fstat(fd)
        with open("/proc/locks", encoding="ascii", errors="replace") as handle:
            listing = handle.read(1 << 20)
    except OSError:
        return None
    # "1: FLOCK  ADVISORY  WRITE 1234 fe:00:5324833 0 EOF"; waiters have "->" after the number.
    where = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    for line in listing.splitlines():
        fields = line.split()
        if "->" in fields or len(fields) < 6:
            continue
        kind, mode, pid, device = fields[1], fields[3], fields[4], fields[5]
        if kind == "FLOCK" and mode == "WRITE" and device == where and pid.isdigit() and int(pid) > 0:
            return int(pid)
    return None
