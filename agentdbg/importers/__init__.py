"""Runs saved by other agent stacks, read as agentdbg events.

One module per format, each with ``NAME``, ``DESCRIPTION``, ``sniff(head, path) ->
(ok, reason)`` (a cheap look at the first bytes; a refusal says why) and
``convert(source, path=None) -> ImportResult``; a binary format (``BINARY = True``) is
given the file's bytes instead of its text. A format that can read a big file a run at a
time also has ``convert_stream`` and ``STREAMS`` (which of its files stream): see
``importers.streamed``. Detection is by content, never by the file's
extension: the first format in ``FORMATS`` whose sniff accepts the file reads it.
See docs/importers.md for what maps to what.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from agentdbg.files import OpenError, unreadable_text
from agentdbg.files import read_head as read_file_head
from agentdbg.importers import (
    alfworld,
    anthropic_messages,
    claude_code,
    codex_rollout,
    gemini_cli,
    inspect_ai,
    langchain,
    mini_swe_agent,
    openai_chat,
    openai_responses,
    openhands,
    otel_genai,
    otel_sdk,
    otlp_proto,
    react_paper,
    reflexion,
    swe_agent,
    tau_bench,
    transcript,
    vercel_ai,
    webshop,
)
from agentdbg.importers.base import (
    HEAD_BYTES,
    ImportResult,
    NotImportable,
    UnknownFormat,
    decode,
    read_head,
    read_input,
)
from agentdbg.importers.found import nothing_read
from agentdbg.importers.streamed import StreamedImport, spool
from agentdbg.importers.streaming import StreamReader
from agentdbg.model.runs import Document, EventRun

FORMATS: list[ModuleType] = [
    inspect_ai, otlp_proto,  # binary formats first (inspect-ai: zipped .eval logs, and its .json logs)
    reflexion, react_paper, webshop, alfworld, transcript, swe_agent,
    openhands, tau_bench, mini_swe_agent,
    codex_rollout, claude_code, gemini_cli, vercel_ai,  # JSON with wrapper keys of their own,
    openai_responses, langchain, otel_sdk,              # before the chat formats
    openai_chat, anthropic_messages, otel_genai,
]
BY_NAME: dict[str, ModuleType] = {module.NAME: module for module in FORMATS}

__all__ = ["FORMATS", "BY_NAME", "ImportResult", "NotImportable", "UnknownFormat", "detect",
           "sniff_all", "get_format", "binary_format", "convert_file", "stream_file", "open_import"]
# show, stats, check and the debugger read a file bigger than this a run at a time (through
# a temporary trace) when its format streams it; smaller ones are converted in memory.
STREAM_ABOVE_BYTES = 32 * 1024 * 1024


def get_format(name: str) -> ModuleType:
    """The importer called ``name``; UnknownFormat lists the valid names."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise UnknownFormat(f"unknown format {name!r}; formats: {', '.join(BY_NAME)} "
                            "(and 'plan', 'trace' for agentdbg's own files)") from None


def sniff_all(head: str | bytes, path: str = "") -> list[tuple[str, bool, str]]:
    """Every format's verdict on ``head`` (the file's first bytes): (name, accepted, why).
    Binary formats look at the bytes themselves when they are given."""
    raw = head if isinstance(head, bytes) else None
    if isinstance(head, bytes):
        head = head.removeprefix(b"\xef\xbb\xbf").decode("utf-8", errors="replace")
    verdicts = []
    for module in FORMATS:
        look = raw if raw is not None and getattr(module, "BINARY", False) else head
        try:
            ok, reason = module.sniff(look, path)
        except Exception as exc:  # a sniff is a guess: a failing one only refuses
            ok, reason = False, f"could not look: {type(exc).__name__}: {exc}"
        verdicts.append((module.NAME, ok, reason))
    return verdicts


def detect(path: str | Path) -> str:
    """The name of the format that reads ``path``; NotImportable lists every format
    tried and why each refused."""
    path = Path(path)
    head = _head(path)
    if not head.strip():
        raise NotImportable(f"{path}: is empty")
    # A binary format (OTLP protobuf: 0x0a or a size first; a zip) needs the bytes themselves.
    if head[:1] in ("\n", "\x00") or "\x00" in head or "\ufffd" in head:
        try:
            raw = read_file_head(path, HEAD_BYTES)
        except OpenError as exc:
            raise NotImportable(str(exc)) from None
        name = binary_format(raw, str(path))
        if name:
            return name
        if unreadable_text(raw):
            _refuse_binary(path, raw)
    verdicts = sniff_all(head, str(path))
    for name, ok, _ in verdicts:
        if ok:
            return name
    lines = "\n".join(f"  {name}: {reason}" for name, _, reason in verdicts)
    raise NotImportable(f"{path}: not a plan, an agentdbg trace, or a run format agentdbg "
                        f"can import. Formats tried:\n{lines}")


def binary_format(head: bytes, path: str = "", format: str | None = None) -> str | None:
    """The binary format (a zip archive) that reads a file beginning with ``head``: the
    one ``format`` names if it is one, else the first whose sniff accepts the bytes."""
    if format is not None:
        module = BY_NAME.get(format)
        return format if module is not None and getattr(module, "BINARY", False) else None
    for module in FORMATS:
        if getattr(module, "BINARY", False):
            try:
                accepted, _ = module.sniff(head, path)
            except Exception:  # a sniff is a guess: a failing one only refuses
                accepted = False
            if accepted:
                return module.NAME
    return None


def _head(path: Path) -> str:
    try:
        return read_head(path, HEAD_BYTES)
    except OpenError as exc:
        raise NotImportable(str(exc)) from None


def _refuse_binary(path: Path, head: bytes) -> None:
    """One line for a binary (or UTF-16) file, instead of every format's refusal."""
    unreadable = unreadable_text(head)
    if unreadable:
        raise NotImportable(f"{path}: is {unreadable}")


def convert_file(path: str | Path, format: str | None = None) -> tuple[str, ImportResult]:
    """(format name, what it made of the file)."""
    path = Path(path)
    name = get_format(format).NAME if format else detect(path)
    module = BY_NAME[name]
    streams = getattr(module, "STREAMS", "")
    data = read_input(path, f"; {name} streams only {streams}" if streams else "")
    if getattr(module, "BINARY", False):
        text, problems = data, []
    else:
        if format:
            _refuse_binary(path, data[:HEAD_BYTES])
        text, problems = decode(data, str(path))
    try:
        result = module.convert(text, str(path))
    except NotImportable as exc:
        raise NotImportable(f"{exc} (reading it as {name})") from None
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
        raise NotImportable(f"{path}: cannot be read as {name}: {type(exc).__name__}: {exc}") from None
    result.problems[:0] = problems
    if result.step_count == 0 and text.strip() and not result.holds_a_run():
        raise NotImportable(nothing_read(str(path), name, result.unread, text, len(result.runs)))
    return name, result


def stream_file(path: str | Path, format: str | None = None) -> StreamedImport | None:
    """The runs of ``path`` a run at a time, when its format streams a file of its kind
    (None: it is read whole, by ``convert_file``). Its ``runs()`` gives the same events,
    counts and problems as ``convert_file``, and raises what it raises."""
    path = Path(path)
    name = get_format(format).NAME if format else detect(path)
    module = BY_NAME[name]
    if not hasattr(module, "convert_stream"):
        return None
    try:
        if format:
            _refuse_binary(path, read_file_head(path, HEAD_BYTES))
        reader = StreamReader(path)
    except OpenError as exc:
        raise NotImportable(str(exc)) from None
    try:
        streamed = StreamedImport(module, reader, str(path))
    except NotImportable as exc:
        reader.close()
        raise NotImportable(f"{exc} (reading it as {name})") from None
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
        reader.close()
        raise NotImportable(f"{path}: cannot be read as {name}: {type(exc).__name__}: {exc}") from None
    except BaseException:
        reader.close()
        raise
    if not streamed.streams:
        streamed.close()
        return None
    return streamed


def open_import(path: str | Path, format: str | None = None) -> Document:
    """The runs in ``path`` as a Document (kind = the format's name); a big file whose
    format streams it is converted a run at a time into a temporary trace, read from there."""
    try:
        big = Path(path).stat().st_size > STREAM_ABOVE_BYTES
    except OSError:
        big = False  # convert_file says what is wrong with it
    streamed = stream_file(path, format) if big else None
    if streamed is not None:
        return spool(streamed)
    name, result = convert_file(path, format)
    runs = [EventRun(events) for events in result.runs]
    return Document(str(path), name, runs, list(result.problems))
