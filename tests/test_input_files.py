"""Opening inputs: regular files only (a pipe never blocks, a device is never read), bounded
reads, binary files told apart from text in another encoding."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_cli_support import finishes

from agentdbg import files
from agentdbg.files import OpenError

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
needs_dev_zero = pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    if not hasattr(os, "mkfifo"):
        pytest.skip("needs named pipes")
    path = tmp_path / "pipe.jsonl"
    os.mkfifo(path)
    return path


def test_a_named_pipe_is_refused_and_named(fifo: Path) -> None:
    for read in (lambda: files.read_head(fifo, 100), lambda: files.read_bounded(fifo, 100, "rule"),
                 lambda: files.check_regular(fifo)):
        with pytest.raises(OpenError, match=r"pipe\.jsonl: is a named pipe \(FIFO\), not a regular file$"):
            finishes(read, fifo)


def test_a_pipe_swapped_in_after_the_look_is_refused_by_the_opened_file(fifo: Path, tmp_path: Path,
                                                                       monkeypatch) -> None:
    regular = tmp_path / "regular.jsonl"
    regular.write_text("{}\n")
    looked = os.stat(regular)
    # The path looked like a regular file; by the time it is opened it is a pipe.
    monkeypatch.setattr(files.os, "stat", lambda path, *a, **k: looked)
    with pytest.raises(OpenError, match=r"is a named pipe \(FIFO\)"):
        finishes(lambda: files.read_head(fifo, 100), fifo)


@needs_dev_zero
def test_a_device_is_refused_before_it_is_read(tmp_path: Path) -> None:
    link = tmp_path / "plan.toml"
    link.symlink_to("/dev/zero")
    with pytest.raises(OpenError, match=r"plan\.toml: is a character device, not a regular file$"):
        files.read_bounded(link, 1 << 40, "rule")


def test_symlinks_to_regular_files_read_normally(tmp_path: Path) -> None:
    target = tmp_path / "real.jsonl"
    target.write_bytes(b"line one\nline two\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    assert files.read_head(link, 8) == b"line one"
    assert files.read_bounded(link, 100, "rule") == b"line one\nline two\n"


def test_missing_directories_and_unreadable_paths_say_so(tmp_path: Path) -> None:
    with pytest.raises(OpenError, match="missing.jsonl: no such file$"):
        files.read_head(tmp_path / "missing.jsonl", 10)
    with pytest.raises(OpenError, match="no such file$"):
        files.read_head(tmp_path / "missing" / "under.jsonl", 10)
    with pytest.raises(OpenError, match="is a directory, not a plan$"):
        files.read_head(tmp_path, 10, what="a plan")
    loop = tmp_path / "loop.jsonl"
    loop.symlink_to(loop)
    with pytest.raises(OpenError, match="loop.jsonl: cannot read: "):
        files.read_head(loop, 10)


def test_a_file_over_the_limit_is_refused_with_its_size_and_the_rule(tmp_path: Path) -> None:
    path = tmp_path / "big.toml"
    with open(path, "wb") as handle:
        handle.truncate(int(7.2 * 1024 ** 3))  # sparse: nothing is written, nothing is read
    with pytest.raises(OpenError, match=r"big\.toml: is 7\.2 GiB; plans are at most 4\.0 MiB$"):
        files.read_bounded(path, 4 * 1024 * 1024, "plans are at most 4.0 MiB")
    small = tmp_path / "small.txt"
    small.write_bytes(b"x" * 100)
    assert files.read_bounded(small, 100, "rule") == b"x" * 100


def test_a_file_that_grows_past_the_limit_while_read_is_refused(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "growing.txt"
    path.write_bytes(b"x" * 5000)
    real_fstat = os.fstat

    class Small:  # what fstat said before the file grew
        def __init__(self, info):
            self.st_mode, self.st_size = info.st_mode, 10

    monkeypatch.setattr(files.os, "fstat", lambda fd: Small(real_fstat(fd)))
    with pytest.raises(OpenError, match=r"growing\.txt: is more than 1000 bytes; the rule$"):
        files.read_bounded(path, 1000, "the rule")


@pytest.mark.parametrize("head, binary", [
    (b"", False),
    (b"Question: how many copies?\nThought 1: search\n", False),
    ("Thought: café, naïve, 東京 🙂\n".encode(), False),
    ("Caf\u00e9 cr\u00e8me br\u00fbl\u00e9e, \u00e0 la fran\u00e7aise\n".encode("latin-1"), False),  # text, another encoding
    (b"\x1b[31mred\x1b[0m log line\r\n\tindented\n", False),
    (b'{"a": 1}\n' * 2000, False),  # the sample's end cuts nothing that matters
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", True),
    (b"Thought: a stray NUL\x00, a bell\x07 and \x9b C1 bytes are damage in text\n", False),
    (b"plan = 'text first'\n" + b"\x00" * 8000, True),  # a sparse file's hole after a text head
    (b"\x7fELF\x02\x01\x01\x00" + b"\x00" * 8 + b"\x02\x00>\x00\x01\x00\x00\x00", True),
    (bytes(range(128, 256)) * 4, True),
    (b"\xff\xfe\x01\x02\x03", True),
])
def test_binary_files_are_told_from_text(head: bytes, binary: bool) -> None:
    assert files.looks_binary(head) is binary


@pytest.mark.parametrize("encoding, named", [
    ("utf-16", "UTF-16"), ("utf-16-le", "UTF-16LE"), ("utf-16-be", "UTF-16BE"), ("utf-32", "UTF-32")])
def test_text_in_a_wide_encoding_is_named_with_how_to_convert_it(encoding: str, named: str) -> None:
    head = '[{"role": "user", "content": "hi"}]'.encode(encoding)
    assert files.looks_binary(head)
    assert files.unreadable_text(head) == f"{named} text; agentdbg reads UTF-8 (iconv -f {named} -t UTF-8 converts it)"


def test_text_is_readable_and_binary_is_called_binary() -> None:
    assert files.unreadable_text("Thought: café\n".encode()) is None
    assert files.unreadable_text(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR") == "a binary file (not text)"


def test_sizes_read_as_people_say_them() -> None:
    assert [files.size_text(n) for n in (0, 812, 3584, 5 * 1024 ** 2, int(7.2 * 1024 ** 3))] == [
        "0 bytes", "812 bytes", "3.5 KiB", "5.0 MiB", "7.2 GiB"]
