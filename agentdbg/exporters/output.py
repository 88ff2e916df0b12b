"""Where an export is written: a temporary file beside the output, renamed over it at the
end, so the output never holds half an export and an export that fails leaves the old
file as it was. A symbolic link at the output is replaced, never written through.

Text goes out as it is made (the file is buffered, never the document), and every JSON
value passes ``escape_json``: what a terminal would obey (C1 controls, bidi overrides,
lone surrogates) is written as ``\\uXXXX`` escapes, so ``cat`` on an export is inert and
the JSON still decodes to exactly the same strings.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

from agentdbg.text import escape_json


def to_json(value: Any) -> str:
    """Compact JSON, terminal-safe. A NaN or infinity (which a source's JSON may hold, and
    which JSON cannot) is written as text."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError:
        text = json.dumps(_finite(value), ensure_ascii=False, separators=(",", ":"))
    return escape_json(text)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


class AtomicOutput:
    """A file written in one go: ``write`` text, then ``commit`` (or ``discard``)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        handle, name = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".partial",
                                        dir=self.path.parent if str(self.path.parent) else ".")
        self.temporary = Path(name)
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(handle, 0o666 & ~umask)  # as a file created the usual way, not mkstemp's 0600
        self._file = open(handle, "wb", buffering=1 << 20)  # noqa: SIM115 (closed by commit/discard)
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
