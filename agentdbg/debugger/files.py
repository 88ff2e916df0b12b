"""Reading and replacing the small files the debugger keeps beside a trace (breakpoints),
safely in a folder someone else may have filled (a tarball unpacked beside a trace):

* a symbolic link is never followed, for reading or writing;
* a named pipe or a device is never read or waited on, and a huge file is never read whole;
* a file is replaced atomically: the new content goes to a temporary file created
  exclusively beside it, is flushed to disk, then renamed over the old one; a failed
  write leaves the old file as it was and no temporary file behind.

Both raise ``Refused`` (a ``ValueError``) saying why, without the file's name, for the
caller to put in its own message.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from pathlib import Path

from agentdbg.files import kind_of

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # opening a named pipe must not wait for a writer
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_BINARY = getattr(os, "O_BINARY", 0)
_TEMPORARY_NAME_TRIES = 100
# No file can be at such a path (writing there will say why): the same as a missing file.
_NO_FILE_THERE = frozenset({errno.ENOENT, errno.ENOTDIR, errno.ENAMETOOLONG})


class Refused(ValueError):
    """Why a file was not read or not replaced (its name is the caller's to add)."""


def describe_kind(mode: int) -> str:
    """What a file that is not a regular file is, for a message (a symlink included)."""
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    return kind_of(mode) or "not a regular file"


def _not_regular(mode: int, doing: str) -> Refused:
    if stat.S_ISLNK(mode):
        return Refused(f"it is a symbolic link, which is not followed (not {doing})")
    return Refused(f"it is {describe_kind(mode)}, not a regular file (not {doing})")


def _too_large(size: int, limit: int) -> Refused:
    return Refused(f"too large ({size:,} bytes; the limit is {limit:,})")


def read_small_file(path: str | Path, limit: int) -> bytes | None:
    """The bytes of the regular file at ``path``, or None when there is no file there.
    Refused when it is a symbolic link, a directory, a pipe or a device, holds more than
    ``limit`` bytes, or cannot be read."""
    try:
        mode = os.lstat(path).st_mode
    except OSError as exc:
        if exc.errno in _NO_FILE_THERE:
            return None
        raise Refused(exc.strerror or str(exc)) from None
    if not stat.S_ISREG(mode):  # looked at before opening: a pipe or device is never opened
        raise _not_regular(mode, "read")
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC | _BINARY)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # it became a link since it was looked at
            raise _not_regular(stat.S_IFLNK, "read") from None
        raise Refused(exc.strerror or str(exc)) from None
    try:
        opened = os.fstat(fd)  # what was opened, should it have been swapped since
        if not stat.S_ISREG(opened.st_mode):
            raise _not_regular(opened.st_mode, "read")
        if opened.st_size > limit:
            raise _too_large(opened.st_size, limit)
        chunks: list[bytes] = []
        size = 0
        while size <= limit:  # a file still growing is cut off past the limit
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise _too_large(size, limit)
        return b"".join(chunks)
    except OSError as exc:
        raise Refused(exc.strerror or str(exc)) from None
    finally:
        os.close(fd)


def replace_file(path: str | Path, data: bytes) -> None:
    """Make ``data`` the content of ``path`` atomically (see the module's notes), keeping
    the permissions of the file it replaces. Refused when ``path`` is a symbolic link or
    anything but a regular file, or when the write fails."""
    path = Path(path)
    try:
        old = os.lstat(path)
    except FileNotFoundError:
        old = None
    except OSError as exc:
        raise Refused(exc.strerror or str(exc)) from None
    if old is not None and not stat.S_ISREG(old.st_mode):
        raise _not_regular(old.st_mode, "replaced")
    try:
        fd, temporary = _create_temporary(path)
    except OSError as exc:
        raise Refused(exc.strerror or str(exc)) from None
    try:
        try:
            if old is not None and hasattr(os, "fchmod"):
                os.fchmod(fd, stat.S_IMODE(old.st_mode))
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, path)  # a link put at ``path`` meanwhile is replaced, not followed
    except BaseException as exc:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise Refused(exc.strerror or str(exc)) from None
        raise
    _sync_folder(path.parent)


def _create_temporary(path: Path) -> tuple[int, Path]:
    """A new file beside ``path``, created exclusively (never an existing file or link)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC | _BINARY
    for _ in range(_TEMPORARY_NAME_TRIES):
        temporary = path.with_name(f"{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(temporary, flags, 0o666), temporary
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free name for a temporary file", str(path))


def _sync_folder(folder: Path) -> None:
    """Flush the rename itself to disk, where the system allows it (not on Windows)."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
