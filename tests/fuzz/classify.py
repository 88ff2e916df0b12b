"""What counts as a failure, read from a command's exit and output.

- traceback: "Traceback" on stderr, or an exit code other than 0, 1 or 2 (a signal too);
- hang: no exit (for the debugger: no next screen) within the time limit, counted in CPU
  time for a command that computes (busy), in wall time for one that sleeps (blocked); one
  starved of CPU by other work gets up to 3 limits (then: starved);
- escape leak: a byte or character that a terminal acts on, or that hides or reorders
  text, in what a command printed into a pipe: ESC, other C0 controls but tab and newline,
  C1 controls, bidirectional controls, zero-width characters, lone surrogates or bytes
  that are not UTF-8 (DEL is left out: terminals ignore it, and JSON may carry it raw);
- other: a condition of the debugger's run (exit 2 with more than one message, a file that
  must not change, did).
"""

from __future__ import annotations

import re
import signal
import unicodedata
from dataclasses import asdict, dataclass

KINDS = ("traceback", "hang", "escape", "other")
OK_EXIT_CODES = (0, 1, 2)
BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff"
# Raw bytes that are not UTF-8 come back from "surrogateescape" decoding as U+DC80..U+DCFF.
UNSAFE = re.compile(f"[\x00-\x08\x0b-\x1f\x80-\x9f{BIDI}{ZERO_WIDTH}\ud800-\udfff]")


@dataclass(frozen=True)
class Finding:
    kind: str  # one of KINDS
    command: str
    detail: str  # the first line of the problem
    signature: str  # the same problem in another command or case has the same signature

    def to_dict(self) -> dict:
        return asdict(self)


def char_class(char: str) -> str:
    code = ord(char)
    if char == "\x1b":
        return "ESC"
    if 0xDC80 <= code <= 0xDCFF:
        return "non-UTF-8 byte"
    if 0xD800 <= code <= 0xDFFF:
        return "lone surrogate"
    if code < 0x20:
        return "C0 control"
    if code <= 0x9F:
        return "C1 control"
    return "bidi control" if char in BIDI else "zero-width character"


def describe(char: str) -> str:
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:
        return f"byte 0x{code - 0xDC00:02X}"
    name = unicodedata.name(char, "")
    return f"U+{code:04X}" + (f" {name}" if name else "")


def escapes(text: str, where: str, command: str) -> list[Finding]:
    """One finding per class of unsafe character in ``text`` (the first of each, with context)."""
    found: dict[str, Finding] = {}
    for match in UNSAFE.finditer(text):
        cls = char_class(match.group())
        if cls in found:
            continue
        start = match.start()
        line = text.count("\n", 0, start) + 1
        context = text[max(0, start - 20): start + 20].encode("unicode_escape").decode("ascii")
        found[cls] = Finding("escape", command, f"{where} line {line}: {describe(match.group())}: ...{context}...",
                             f"escape|{where}|{cls}")
        if len(found) == 6:
            break
    return list(found.values())


def decode(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


_FRAME = re.compile(r'^  File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>.+)$')


def traceback_summary(stderr: str) -> tuple[str, str]:
    """(the exception line, where in agentdbg it was raised) of the last traceback in stderr."""
    block = stderr[stderr.rfind("Traceback (most recent call last):"):]
    lines = block.splitlines()
    where, last_frame = "", 0
    for number, line in enumerate(lines):
        match = _FRAME.match(line)
        if match:
            last_frame = number
            path = match["file"].replace("\\", "/")
            if "/agentdbg/" in path:
                where = f"agentdbg/{path.rsplit('/agentdbg/', 1)[1]}:{match['line']} in {match['func']}"
    exception = ""
    for line in lines[last_frame + 1:]:
        if line and not line.startswith(" "):
            exception = line
            break
    return exception[:200], where


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def classify(command: str, *, exit_code: int | None, signal_number: int | None, timed_out: bool,
             timeout: float, cpu_seconds: float, stdout: bytes, stderr: bytes, stuck: str = "",
             seconds: float = 0.0) -> list[Finding]:
    """Every failure one command run shows (``stuck``: how a timed-out one was stuck)."""
    findings: list[Finding] = []
    err = decode(stderr)
    if timed_out:
        state = stuck or ("busy" if cpu_seconds >= timeout else "blocked")
        findings.append(Finding("hang", command, f"stuck {state}, limit {timeout:g} s "
                                f"({cpu_seconds:.1f} s of CPU in {seconds or timeout:.0f} s)", f"hang|{state}"))
    elif "Traceback (most recent call last)" in err:
        exception, where = traceback_summary(err)
        kind = exception.split(":", 1)[0]
        detail = f"{exception} ({where})" if where else exception
        findings.append(Finding("traceback", command, detail, f"traceback|{kind}|{where}"))
    elif signal_number:
        name = signal_name(signal_number)
        findings.append(Finding("traceback", command, f"killed by {name}", f"traceback|{name}"))
    elif exit_code not in OK_EXIT_CODES:
        first = err.strip().splitlines()[-1][:200] if err.strip() else ""
        findings.append(Finding("traceback", command, f"exit code {exit_code}: {first}", f"traceback|exit {exit_code}"))
    findings += escapes(decode(stdout), "stdout", command)
    findings += escapes(err, "stderr", command)
    return findings


def tui_exit(command: str, exit_code: int | None, stderr: bytes) -> list[Finding]:
    """The debugger starts (exit 0 after quitting), or refuses with exit 2 and one message:
    one line, which may be followed by indented lines that explain it (the formats tried)."""
    if exit_code != 2:
        return []
    lines = [line for line in decode(stderr).splitlines() if line.strip()]
    messages = [line for line in lines if not line[:1].isspace()]
    if len(messages) == 1 and lines[0] is messages[0]:
        return []
    return [Finding("other", command, f"exit 2 with {len(messages)} unindented lines of {len(lines)} on stderr",
                    "other|tui-exit-2-lines")]
