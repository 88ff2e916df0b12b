"""Output files written whole or not at all (``convert -o``, ``export -o``, ``fork -o``).

The new content goes to a temporary file beside the output (in its folder, so the rename
is atomic), is flushed to disk, and is renamed over the output only once everything is
written. Whatever stops it first (an error, an input that gives nothing, Ctrl-C) leaves
the old file as it was and no temporary file behind. A symbolic link at the output is
replaced, never written through.

``temporary_beside`` makes the temporary file (the trace writer fills it itself);
``AtomicOutput`` is one to write to, then ``commit`` or ``discard``.
"""

from __future__ import annotations

import errno
import os
import secrets
from pathlib import Path

_CREATE = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
           | getattr(os, "O_BINARY", 0))
_NAME_TRIES = 100


def temporary_beside(path: str | Path) -> tuple[int, Path]:
    """A new empty file beside ``path`` (``.NAME.XXXXXXXX.partial``, hidden), open for
    writing, created exclusively with the permissions a file created the usual way gets
    (the umask applies, and is never changed: other threads may be creating files)."""
    path = Path(path)
    for _ in range(_NAME_TRIES):
        name = path.parent / f".{path.name}.{secrets.token_hex(4)}.partial"
        try:
            return os.open(name, _CREATE, 0o666), name
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free name for a temporary file beside it", str(path))


class AtomicOutput:
    """A file written in one go: ``write`` text or bytes, then ``commit`` (or ``discard``).
    As a context manager, it commits when the block ends normally and discards otherwise."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        handle, self.temporary = temporary_beside(self.path)
        try:
            self._file = open(handle, "wb", buffering=1 << 20)  # noqa: SIM115 (closed by commit/discard)
        except BaseException:
            os.close(handle)
            self.temporary.unlink(missing_ok=True)
            raise
        self.bytes_written = 0

    def write(self, text: str) -> None:
        self.write_bytes(text.encode("utf-8"))

    def write_bytes(self, data: bytes) -> None:
        self._file.write(data)
        self.bytes_written += len(data)

    def commit(self) -> None:
        try:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            os.replace(self.temporary, self.path)  # a symlink at the path is replaced, not followed
        except BaseException:
            self.discard()
            raise

    def discard(self) -> None:
        if not self._file.closed:
            try:
                self._file.close()
            except OSError:
                pass
        self.temporary.unlink(missing_ok=True)

    def __enter__(self) -> AtomicOutput:
        return self

    def __exit__(self, kind: object, *rest: object) -> None:
        if kind is None:
            self.commit()
        else:
            self.discard()
