"""Reading members of a zip archive held in memory, within limits, never extracting.

A saved run that is a zip (Inspect's ``.eval`` logs) is untrusted like any other input:
each member is read only when its declared size, and the total read so far, are within
the limits (a zip bomb is refused before anything is inflated, and inflating stops at the
limit whatever the header claims); encrypted members, members that are themselves
archives, and compression methods this Python cannot read are refused with a message
that names the member. An archive cut short (no central directory at its end) still
gives the members that arrived whole, read from their local headers.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from dataclasses import dataclass

MAX_MEMBER_BYTES = 256 * 1024 * 1024
MAX_TOTAL_BYTES = 1024 * 1024 * 1024
MAX_MEMBERS = 100_000
ZIP_MAGIC = b"PK\x03\x04"
_LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")
_STORED, _DEFLATED, _ZSTANDARD = 0, 8, 93
_METHOD_NAMES = {1: "Shrink", 6: "Implode", 9: "Deflate64", 12: "bzip2", 14: "LZMA",
                 93: "Zstandard", 95: "XZ", 98: "PPMd"}


class ArchiveError(ValueError):
    """The archive as a whole cannot be read (the message says why)."""


@dataclass
class Member:
    name: str
    method: int
    flags: int
    crc: int
    compressed_size: int
    size: int
    offset: int  # of the local header


class Archive:
    """The members of the zip in ``data``; ``read(name)`` gives one's bytes or raises
    ArchiveError saying why it cannot. ``damage`` says what was wrong with the archive
    itself, when members were recovered from an archive cut short."""

    def __init__(self, data: bytes):
        self.data = data
        self.damage = ""
        self.total = 0
        declared = _declared_members(data)
        if declared is not None and declared > MAX_MEMBERS:  # before zipfile lists them all
            raise ArchiveError(f"the zip archive lists {declared:,} members, more than the "
                               f"{MAX_MEMBERS:,} a log can have")
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                infos = archive.infolist()
        except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError) as exc:
            self.members = _recover(data)
            if not self.members:
                raise ArchiveError(f"not a readable zip archive ({exc}); no member before the "
                                   "damage could be read") from None
            self.damage = (f"the zip archive is damaged or cut short ({exc}); read the "
                           f"{len(self.members)} members that arrived whole")
            return
        if len(infos) > MAX_MEMBERS:
            raise ArchiveError(f"the zip archive lists {len(infos):,} members, more than the "
                               f"{MAX_MEMBERS:,} a log can have")
        self.members = {}
        for info in infos:
            self.members.setdefault(info.filename, Member(
                info.filename, info.compress_type, info.flag_bits, info.CRC,
                info.compress_size, info.file_size, info.header_offset))

    @property
    def names(self) -> list[str]:
        return list(self.members)

    def read(self, name: str) -> bytes:
        member = self.members[name]
        if member.flags & 0x1:
            raise ArchiveError(f"{name} is encrypted")
        if member.size > MAX_MEMBER_BYTES:
            raise ArchiveError(f"{name} is {member.size:,} bytes uncompressed, more than the "
                               f"{MAX_MEMBER_BYTES:,} a member may have")
        if self.total + member.size > MAX_TOTAL_BYTES:
            raise ArchiveError(f"{name} would take the archive's uncompressed total past "
                               f"{MAX_TOTAL_BYTES:,} bytes; not read")
        start = _data_start(self.data, member)
        compressed = self.data[start:start + member.compressed_size]
        if len(compressed) < member.compressed_size:
            raise ArchiveError(f"{name} is cut short")
        content = _inflate(name, member.method, compressed, member.size)
        if len(content) != member.size or zlib.crc32(content) != member.crc:
            raise ArchiveError(f"{name} is damaged (its size or checksum does not match its header)")
        self.total += len(content)
        if content.startswith(ZIP_MAGIC):
            raise ArchiveError(f"{name} is itself a zip archive; archives inside archives are not read")
        return content


def _declared_members(data: bytes) -> int | None:
    """The member count in the archive's end record (ZIP64's when it has one), or None."""
    end = data.rfind(b"PK\x05\x06", max(0, len(data) - 22 - 0xFFFF))
    if end == -1 or len(data) < end + 22:
        return None
    count = int.from_bytes(data[end + 10:end + 12], "little")
    locator = end - 20
    if count == 0xFFFF and locator >= 0 and data.startswith(b"PK\x06\x07", locator):
        record = int.from_bytes(data[locator + 8:locator + 16], "little")
        if data.startswith(b"PK\x06\x06", record) and len(data) >= record + 40:
            return int.from_bytes(data[record + 32:record + 40], "little")
    return count


def _data_start(data: bytes, member: Member) -> int:
    header = data[member.offset:member.offset + _LOCAL_HEADER.size]
    if len(header) < _LOCAL_HEADER.size or not header.startswith(ZIP_MAGIC):
        raise ArchiveError(f"{member.name}: no local header where the directory says it is")
    *_, name_length, extra_length = _LOCAL_HEADER.unpack(header)
    return member.offset + _LOCAL_HEADER.size + name_length + extra_length


def _inflate(name: str, method: int, compressed: bytes, size: int) -> bytes:
    """At most ``size`` bytes (a member that inflates past its declared size is cut there,
    then fails the size check): the header's claim bounds the work, never the data."""
    if method == _STORED:
        return compressed[:size + 1]
    if method == _DEFLATED:
        try:
            return zlib.decompressobj(-15).decompress(compressed, size + 1)
        except zlib.error as exc:
            raise ArchiveError(f"{name} is damaged: {exc}") from None
    if method == _ZSTANDARD:
        return _zstd(name, compressed, size)
    kind = _METHOD_NAMES.get(method, f"method {method}")
    raise ArchiveError(f"{name} is compressed with {kind}; agentdbg reads stored, Deflate and "
                       "Zstandard members")


def _zstd(name: str, compressed: bytes, size: int) -> bytes:
    """Zstandard (newer Inspect logs): read with the ``zstandard`` package when installed."""
    try:
        import zstandard
    except ImportError:
        raise ArchiveError(f"{name} is compressed with Zstandard, which Python's zipfile cannot "
                           "read before 3.14: install the 'zstandard' package (pip install "
                           "zstandard) to open it") from None
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(compressed),
                                                            read_across_frames=True)
        return reader.read(size + 1)
    except zstandard.ZstdError as exc:
        raise ArchiveError(f"{name} is damaged: {exc}") from None


def _recover(data: bytes) -> dict[str, Member]:
    """Members read from their local headers, one after another, up to the first that
    did not arrive whole (or whose sizes the local header does not give)."""
    members: dict[str, Member] = {}
    pos = 0
    while data.startswith(ZIP_MAGIC, pos) and len(members) < MAX_MEMBERS:
        header = data[pos:pos + _LOCAL_HEADER.size]
        if len(header) < _LOCAL_HEADER.size:
            break
        _, _, flags, method, _, _, crc, csize, size, name_length, extra_length = _LOCAL_HEADER.unpack(header)
        if flags & 0x8 or 0xFFFFFFFF in (csize, size):  # sizes after the data, or ZIP64
            break
        start = pos + _LOCAL_HEADER.size + name_length + extra_length
        if start + csize > len(data):
            break
        raw_name = data[pos + _LOCAL_HEADER.size:pos + _LOCAL_HEADER.size + name_length]
        name = raw_name.decode("utf-8" if flags & 0x800 else "cp437", errors="replace")
        members.setdefault(name, Member(name, method, flags, crc, csize, size, pos))
        pos = start + csize
    return members
