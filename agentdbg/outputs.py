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

import os
import tempfile
from pathlib import Path


def temporary_beside(path: str | Path) -> tuple[int, Path]:
    """A new empty file beside ``path`` (``.NAME.XXXXXXXX.partial``, hidden), open for
    writing, with the permissions a file created the usual way gets (not mkstemp's 0600)."""
    path = Path(path)
    handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(handle, 0o666 & ~umask)
    except BaseException:  # Ctrl-C included: the file was never handed out
        os.close(handle)
        os.unlink(name)
        raise
    return handle, Path(name)


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
