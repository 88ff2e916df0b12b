"""Opening input files: regular files only, never blocking, never reading without a bound.

Every input agentdbg reads (a plan, a trace, a run saved by another stack, and every look
at one to tell which it is) is opened by ``open_regular``. It looks at the path first (a
named pipe would block a reader forever, a device such as /dev/zero never ends), then
opens it without blocking and checks the opened file again, so a path swapped between the
look and the open cannot slip a pipe in. A symlink to a regular file opens normally.
Files read whole are read with a limit (``read_bounded``) that names the file, its size
and the limit when it is exceeded.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from agentdbg.errors import OpenError as OpenError  # named from here too

BINARY_SAMPLE_BYTES = 8192  # what looks_binary looks at (as git does)
_READ_BLOCK = 1024 * 1024
_OPEN_FLAGS = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
               | getattr(os, "O_CLOEXEC", 0))


def size_text(size: int) -> str:
    """A byte count as people read it: ``812 bytes``, ``3.5 KiB``, ``7.2 GiB``."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} bytes"


def kind_of(mode: int) -> str | None:
    """What a file that is not a regular file is; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _refuse(name: str, mode: int, what: str) -> None:
    kind = kind_of(mode)
    if kind == "a directory":
        raise OpenError(f"{name}: is a directory, not {what}")
    if kind is not None:
        raise OpenError(f"{name}: is {kind}, not a regular file")


def _cannot(name: str, exc: OSError, what: str) -> OpenError:
    if isinstance(exc, (FileNotFoundError, NotADirectoryError)):
        return OpenError(f"{name}: no such file")
    if isinstance(exc, IsADirectoryError):
        return OpenError(f"{name}: is a directory, not {what}")
    return OpenError(f"{name}: cannot read: {exc.strerror or exc}")


def open_regular(path: str | Path, what: str = "a file") -> tuple[int, os.stat_result]:
    """(file descriptor, its stat) of the regular file at ``path``; the caller closes it.
    OpenError names the file and what it is instead (``what``: what it should have been,
    for the directory message)."""
    name = str(path)
    try:
        _refuse(name, os.stat(path).st_mode, what)
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        raise _cannot(name, exc, what) from None
    try:
        info = os.fstat(fd)
        _refuse(name, info.st_mode, what)
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def check_regular(path: str | Path, what: str = "a file") -> None:
    """OpenError unless ``path`` is a regular file that can be opened for reading."""
    fd, _ = open_regular(path, what)
    os.close(fd)


def read_head(path: str | Path, size: int, what: str = "a file") -> bytes:
    """At most the first ``size`` bytes of the regular file at ``path``."""
    fd, _ = open_regular(path, what)
    try:
        return os.pread(fd, size, 0)
    finally:
        os.close(fd)


def read_bounded(path: str | Path, limit: int, rule: str, what: str = "a file") -> bytes:
    """The whole regular file at ``path``, at most ``limit`` bytes. A larger file is
    refused with its size and ``rule`` (``"plans are at most 4.0 MiB"``)."""
    name = str(path)
    fd, info = open_regular(path, what)
    try:
        if info.st_size > limit:
            raise OpenError(f"{name}: is {size_text(info.st_size)}; {rule}")
        chunks: list[bytes] = []
        total = 0
        while total <= limit:  # one byte past the limit tells a file that grew since fstat
            chunk = os.read(fd, min(max(info.st_size + 1 - total, _READ_BLOCK), limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as exc:
        raise _cannot(name, exc, what) from None
    finally:
        os.close(fd)
    if total > limit:
        raise OpenError(f"{name}: is more than {size_text(limit)}; {rule}")
    return b"".join(chunks)


def unreadable_text(head: bytes) -> str | None:
    """What a file beginning with ``head`` is when it is not text agentdbg can read (for
    ``f"{path}: is {what}"``), or None for text. UTF-16 and UTF-32 text (what Windows tools
    often write) is named as such, with how to convert it, rather than called binary."""
    encoding = _wide_encoding(head[:BINARY_SAMPLE_BYTES])
    if encoding:
        return f"{encoding} text; agentdbg reads UTF-8 (iconv -f {encoding} -t UTF-8 converts it)"
    return "a binary file (not text)" if looks_binary(head) else None


def _wide_encoding(sample: bytes) -> str | None:
    if sample.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        return "UTF-32"
    if sample.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "UTF-16"
    pairs = len(sample) // 2
    if pairs >= 2:  # mostly ASCII in UTF-16 without a byte-order mark: every other byte is NUL
        even, odd = sample[0:pairs * 2:2].count(0), sample[1:pairs * 2:2].count(0)
        if odd >= pairs * 0.9 and even <= pairs * 0.1:
            return "UTF-16LE"
        if even >= pairs * 0.9 and odd <= pairs * 0.1:
            return "UTF-16BE"
    return None


def looks_binary(head: bytes) -> bool:
    """True when the file that begins with ``head`` is not text: more than 30% of its first
    8 KiB are bytes that are neither UTF-8 text nor common control characters (NUL counts
    as such a byte). Text in another 8-bit encoding (a Latin-1 é here and there) and text
    with some damage (a stray NUL, escape sequences) are still text, and open."""
    sample = head[:BINARY_SAMPLE_BYTES]
    if not sample:
        return False
    text = sample.decode("utf-8", errors="replace")
    if len(sample) == BINARY_SAMPLE_BYTES:
        text = text[:-4]  # a character cut by the sample's end is not damage
    odd = sum(1 for char in text if char == "\ufffd" or (char < " " and char not in "\t\n\r\f\b\x1b"))
    return odd * 10 > len(text) * 3
