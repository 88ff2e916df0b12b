"""Reading a big saved run a record at a time, so that memory holds one run, never the file.

A format that can (``convert_stream`` in its module) reads JSON Lines line by line and a
top-level JSON array element by element, from a ``StreamReader``. What it reads is exactly
what the whole-file readers of ``jsondata`` read from the same file: the same values, the
same lines numbered the same way (``jsondata.json_lines``: a newline ends a line), the same damage reported with the
same words, the valid part of a damaged file kept. Only regular files are opened
(``agentdbg.files``), and one record (a line, an element) is at most MAX_RECORD_BYTES.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from agentdbg.files import open_regular, size_text
from agentdbg.importers.base import MAX_IMPORT_BYTES, Source
from agentdbg.importers.jsondata import Record, reason
from agentdbg.model.runs import Problem

BLOCK_BYTES = 1024 * 1024  # what one read asks for (an element larger than this: twice as much each time)
MAX_RECORD_BYTES = MAX_IMPORT_BYTES  # one line or element: what the whole-file path reads at most
_FIRST_LINE_BYTES = 64 * 1024 * 1024  # a first line longer than this is not parsed to tell JSON Lines
_BOM = b"\xef\xbb\xbf"
_WHITESPACE = " \t\n\r"  # JSON's (what json.loads skips between values)
_NEAR_END = 16  # an error this close to the end of what is read may be a value cut by the read
_DECODER = json.JSONDecoder()


class StreamReader:
    """The file at ``path`` as text, read forward a piece at a time (``rewind`` starts
    over). ``src`` collects what a converter reports; damage found reading JSON goes to
    ``damage`` and undecodable bytes to ``decoding``, so that the problems come out in the
    whole-file path's order: decoding, reading, converting."""

    def __init__(self, path: str | Path, name: str | None = None):
        self.name = name or str(path)
        fd, info = open_regular(path, what="a saved run")
        self.size = info.st_size
        self._file: BinaryIO = os.fdopen(fd, "rb", buffering=BLOCK_BYTES)
        self.src = Source("", self.name)
        self.damage: list[Problem] = []
        self.decoding: list[Problem] = []
        self._start = 3 if self._file.read(3) == _BOM else 0
        self.rewind()

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> StreamReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def problems(self) -> list[Problem]:
        return [*self.decoding, *self.damage, *self.src.problems]

    def rewind(self) -> None:
        """Read from the start again (what was reported reading is reported again)."""
        self.decoding.clear()
        self.damage.clear()
        self._file.seek(self._start)
        self._offset = 0  # bytes read, after the byte-order mark (what decode reports)
        self._newlines = 0  # newlines in those bytes

    # -- bytes to text -----------------------------------------------------------------

    def _read(self, size: int) -> bytes:
        return self._file.read(size)

    def _text(self, data: bytes) -> str:
        """``data`` (the next bytes of the file, cut between characters) as text; the first
        undecodable byte of the file is reported as ``base.decode`` reports it."""
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            if not self.decoding:
                line = self._newlines + data.count(b"\n", 0, exc.start) + 1
                self.decoding.append(Problem(self.name, line, f"not valid UTF-8 at byte {self._offset + exc.start}; "
                                                              "undecodable bytes are shown as U+FFFD"))
            text = data.decode("utf-8", errors="replace")
        self._offset += len(data)
        self._newlines += data.count(b"\n")
        return text

    # -- JSON Lines ------------------------------------------------------------------

    def _physical_lines(self) -> Iterator[str]:
        """Each newline-ended piece of the file as text (a piece longer than
        MAX_RECORD_BYTES: None, and it is skipped)."""
        while True:
            data = self._file.readline(MAX_RECORD_BYTES + 1)
            if not data:
                return
            if len(data) > MAX_RECORD_BYTES and not data.endswith(b"\n"):
                skipped = len(data)
                while data and not data.endswith(b"\n"):
                    data = self._file.readline(BLOCK_BYTES)
                    skipped += len(data)
                self._offset += skipped
                self._newlines += 1 if data.endswith(b"\n") else 0
                yield None
                continue
            yield self._text(data)

    def lines(self) -> Iterator[tuple[int, str | None]]:
        """(line number, text) for every line, numbered as ``jsondata.json_lines`` numbers
        the whole text (a newline ends a line, nothing else); None for a line too long to read."""
        number = 0
        for piece in self._physical_lines():
            if piece is None:
                number += 1
                yield number, None
                continue
            if not piece:
                continue
            line = piece[:-1] if piece.endswith("\n") else piece
            number += 1
            yield number, line[:-1] if line.endswith("\r") else line

    def is_json_lines(self) -> bool:
        """``jsondata.is_json_lines`` of the file: its first line that is not blank parses
        as JSON and the next one opens an object or an array. A line too long to parse
        here (a whole document on one line, then more) counts as a record."""
        first: str | None = None
        try:
            for _, line in self.lines():
                if line is not None and not line.strip():
                    continue
                if first is None:
                    first = "" if line is None or len(line) > _FIRST_LINE_BYTES else line
                    continue
                if first:
                    try:
                        json.loads(first)
                    except ValueError:
                        return False
                return line is None or line.lstrip()[:1] in ("{", "[")
            return False
        finally:
            self.rewind()

    def json_lines(self) -> Iterator[Record]:
        """``jsondata.load_json_lines``, a line at a time."""
        for number, line in self.lines():
            if line is None:
                self.damage.append(Problem(self.name, number, f"longer than {size_text(MAX_RECORD_BYTES)}; line skipped"))
                continue
            if not line.strip():
                continue
            try:
                yield Record(json.loads(line), number)
            except ValueError as exc:
                self.damage.append(Problem(self.name, number, f"not valid JSON ({reason(exc)}); line skipped"))

    # -- a top-level JSON array --------------------------------------------------------

    def opens_array(self) -> bool:
        """Whether the file's first character that is not JSON whitespace is ``[``."""
        window = _Window(self)
        try:
            return window.skip_space() and window.char() == "["
        finally:
            self.rewind()

    def array_items(self) -> Iterator[object]:
        """The elements of the top-level array the file holds (``opens_array``), as
        ``jsondata.load_json`` gives them: a damaged array keeps the elements before the
        damage, which is reported as load_json reports it (the line where reading stopped,
        the parser's message with the line and column of the damage in the file)."""
        window = _Window(self)
        window.skip_space()
        window.pos += 1  # the "["
        count = 0
        if window.skip_space() and window.char() == "]":
            window.pos += 1
        else:
            while True:
                if not window.skip_space():
                    self._cut(window, window.error("Expecting value", window.pos), count)
                    return
                try:
                    value = window.value()
                except json.JSONDecodeError as exc:
                    self._cut(window, window.error(exc.msg, exc.pos), count)
                    return
                count += 1
                yield value
                window.skip_space()
                char = window.char()
                if char == ",":
                    window.pos += 1
                    continue
                if char != "]":
                    self._cut(window, window.error("Expecting ',' delimiter", window.pos), count)
                    return
                window.pos += 1
                break
        stop = window.line_at(window.pos - 1)  # the "]": where the whole-file path stops on extra data
        if window.skip_space():
            self._cut(window, window.error("Extra data", window.pos), count, stop)

    def _cut(self, window: _Window, error: str, kept: int, line: int | None = None) -> None:
        line = window.line_at(window.pos) if line is None else line
        self.damage.append(Problem(self.name, line, f"not valid JSON from here ({error}); kept the {kept} "
                                                    "items before it"))


class _Window:
    """The decoded text around the reading position: ``buf[pos:]`` is what is still to read;
    what lies before ``buf`` is gone, counted in lines and columns."""

    def __init__(self, reader: StreamReader):
        self.reader = reader
        self.buf = ""
        self.pos = 0
        self.eof = False
        self.lines_before = 0  # newlines before buf[0]
        self.column_before = 0  # characters after the last of them, before buf[0]
        self._carry = b""  # the end of a read that may be half a character

    def more(self) -> bool:
        """Read on (as much again as is held, so a huge value is re-parsed a few times, not
        once per block); False at the end of the file."""
        if self.eof:
            return False
        gone = self.buf[:self.pos]
        newline = gone.rfind("\n")
        if newline >= 0:
            self.lines_before += gone.count("\n")
            self.column_before = len(gone) - newline - 1
        else:
            self.column_before += len(gone)
        self.buf, self.pos = self.buf[self.pos:], 0
        size = max(BLOCK_BYTES, len(self.buf))
        if len(self.buf) > MAX_RECORD_BYTES:
            raise json.JSONDecodeError(f"a value longer than {size_text(MAX_RECORD_BYTES)}", self.buf, 0)
        data = self._carry + self.reader._read(size)
        if len(data) == len(self._carry):
            self.eof = True
            self._carry = b""
            self.buf += self.reader._text(data)
            return bool(data)
        cut = _whole_characters(data)
        self._carry = data[cut:]
        self.buf += self.reader._text(data[:cut])
        return True

    def skip_space(self) -> bool:
        """Move past JSON whitespace; False at the end of the file."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in _WHITESPACE:
                self.pos += 1
            if self.pos < len(self.buf):
                return True
            if not self.more():
                return False

    def char(self) -> str:
        return self.buf[self.pos:self.pos + 1]

    def value(self) -> object:
        """The JSON value at the reading position, read on as long as it may be cut."""
        while True:
            try:
                value, end = _DECODER.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                cut = exc.msg.startswith("Unterminated string") or exc.pos >= len(self.buf) - _NEAR_END
                if cut and not self.eof:
                    self.more()  # then parsed again: the error's position is in the text held now
                    continue
                raise
            if end >= len(self.buf) - _NEAR_END and self.buf[self.pos] not in '{["' and not self.eof:
                self.more()  # a number may go on in the next read ("0" of "0.5", "1" of "1e5")
                continue
            self.pos = end
            return value

    def line_at(self, pos: int) -> int:
        return self.lines_before + self.buf.count("\n", 0, pos) + 1

    def error(self, message: str, pos: int) -> str:
        """``jsondata.reason`` of the parser's error at ``pos``, placed in the whole file."""
        newline = self.buf.rfind("\n", 0, pos)
        column = pos - newline if newline >= 0 else self.column_before + pos + 1
        return f"{message} at line {self.line_at(pos)}, column {column}"


def _whole_characters(data: bytes) -> int:
    """Where to cut ``data`` so that no UTF-8 character is split: before the last byte
    that starts one, within the last four (decoding the two parts then gives the same
    text as decoding them together, replacement characters included)."""
    if not data or data[-1] < 0x80:
        return len(data)
    for back in range(1, min(4, len(data)) + 1):
        if not 0x80 <= data[-back] <= 0xBF:
            return len(data) - back
    return len(data)
