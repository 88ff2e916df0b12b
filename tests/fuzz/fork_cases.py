"""Forks and appended runs of traces made to repeat a side effect or to run code the trace
chose: the operation journal damaged, approvals that do not match their calls, a
``run_start.source`` naming another plan.

Each case records a plan whose tool really appends to ``ledger.txt`` in the case's
directory (``side_effect_tools``, keyed by the line), damages the trace, and runs
``record --append``, ``fork -o`` and ``fork --append`` on it besides every headless
command. Afterwards no line of the ledger may be there twice (a side effect ran again),
no denied call's line may be there, and no file the trace's own plan choice would write.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from fuzz.cases import Case
from fuzz.trace_cases import TRACE_NAME

LEDGER = "ledger.txt"
CHOSEN = "CHOSEN-BY-THE-TRACE"  # what the plan a trace names in place of its own would write
TASK = "Record in the ledger that order A-17 was paid."
ENTRY = "A-17 paid"
ACTION = f'Action: append_line\nAction Input: {{"path": "{LEDGER}", "line": "{ENTRY}"}}'
FORK_KEYS = ("n", "E", "ctrl+s", "escape", "q")  # in the debugger: fork at step 2, as the dialog opens

PLAN = """\
task = "{task}"
executes_code = true

[[tools]]
name = "append_line"
kind = "python"
callable = "side_effect_tools:append_line"
dangerous = {dangerous}
idempotency_key = ["line"]

[policy]
kind = "outputs"
format = "json"
outputs = ['''Action: append_line
Action Input: {{"path": "{ledger}", "line": "{entry}"}}''', "Final Answer: recorded"]
"""

TWO_TOOLS = """\
task = "Settle the ledger."
executes_code = true

[[tools]]
name = "note"
kind = "python"
callable = "side_effect_tools:append_line"
dangerous = true

[[tools]]
name = "pay"
kind = "python"
callable = "side_effect_tools:append_line"
dangerous = true
idempotency_key = ["line"]

[policy]
kind = "script"

[[policy.steps]]
actions = [
  {{ action = "note", args = {{ path = "{ledger}", line = "C noted" }} }},
  {{ action = "pay", args = {{ path = "{ledger}", line = "B paid" }} }},
]

[[policy.steps]]
kind = "finish"
content = "done"
"""


def _record(directory: Path, text: str, approver) -> None:
    """Run the plan ``text`` (its side effects land in the case's directory) into the trace."""
    from agentdbg.plans import load_plan
    from agentdbg.trace.writer import TraceWriter

    path = directory / "plan.toml"
    path.write_text(text, encoding="utf-8")
    plan = load_plan(path, allow_code=True)
    with TraceWriter(directory / TRACE_NAME, mode="create") as writer:
        plan.run(on_event=writer.write, approver=approver)


def _lines(directory: Path) -> list[bytes]:
    return (directory / TRACE_NAME).read_bytes().split(b"\n")


def _write(directory: Path, lines: list[bytes]) -> None:
    (directory / TRACE_NAME).write_bytes(b"\n".join(lines))


def _index(lines: list[bytes], kind: str) -> int:
    return next(i for i, line in enumerate(lines) if line.startswith(b'{"type":"' + kind.encode() + b'",'))


def _ledger_once(directory: Path) -> str:
    path = directory / LEDGER
    written = path.read_text(encoding="utf-8", errors="replace").splitlines() if path.exists() else []
    twice = sorted({line for line in written if written.count(line) > 1})
    if twice:
        return f"a side effect ran twice: {LEDGER} holds {twice[0]!r} {written.count(twice[0])} times"
    if "C noted" in written:
        return "a call whose recorded decision was a denial ran: the ledger holds 'C noted'"
    if (directory / CHOSEN).exists():
        return f"a fork ran code the trace chose: {CHOSEN} was written"
    return ""


def _key_end(line: bytes) -> int:
    """Where the line's key value ends (at its closing quote)."""
    start = line.index(b'"key":"') + len(b'"key":"')
    at = start
    while True:
        quote = line.index(b'"', at)
        if line[quote - 1:quote] != b"\\":
            return quote
        at = quote + 1


def _with_data(change: Callable[[dict], None]) -> Callable[[bytes], bytes]:
    def how(line: bytes) -> bytes:
        data = json.loads(line)
        change(data)
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()
    return how


# How a line is damaged; each keeps its key readable, unless said otherwise below.
DAMAGES: dict[str, Callable[[bytes], bytes]] = {
    "cut-after-key": lambda line: line[:_key_end(line) + 1],
    "cut-inside-key": lambda line: line[:line.index(b'"key":"') + len(b'"key":"append_line:{"')],
    "garbage-before": lambda line: b"#~" + line,
    "nul-inside": lambda line: line[:10] + b"\x00" + line[10:],
    "invalid-utf8": lambda line: line.replace(b'"step":', b'"\xff":0,"step":', 1),
    "bom": lambda line: b"\xef\xbb\xbf" + line,
    "spaces": lambda line: json.dumps(json.loads(line)).encode(),
    "indented": lambda line: json.dumps(json.loads(line), indent=2).encode(),
    "escaped-key-name": lambda line: line.replace(b'"key"', b'"k\\u0065y"'),
    "escaped-type-name": lambda line: line.replace(b'"type"', b'"t\\u0079pe"', 1),
    "type-repeated": lambda line: b'{"type":"guards",' + line[1:],
    "negative-step": _with_data(lambda data: data.update(step=-1)),
    "crlf": lambda line: line + b"\r",
}
# Damages after which the line says nothing of its key: only with the other line intact.
LOSSY: dict[str, Callable[[bytes], bytes]] = {
    "cut-before-key": lambda line: line[:line.index(b'"key"')],
    "key-a-number": _with_data(lambda data: data.update(key=17)),
    "dropped": lambda line: b"",
    "garbage": lambda line: b"not an event at all",
}


def journal_cases() -> list[Case]:
    """The operation line, its observation or both damaged, with and without an approval."""
    cases: list[Case] = []
    for dangerous in (True, False):
        for target in ("operation", "observation", "both"):
            damages = dict(DAMAGES) if target == "both" else {**DAMAGES, **LOSSY}
            for how, damage in damages.items():
                def make(directory: Path, dangerous=dangerous, target=target, damage=damage) -> None:
                    from agentdbg.engine.approval import always

                    _record(directory, PLAN.format(task=TASK, dangerous=str(dangerous).lower(),
                                                   ledger=(directory / LEDGER).as_posix(), entry=ENTRY), always())
                    lines = _lines(directory)
                    for kind in ("operation", "observation") if target == "both" else (target,):
                        index = _index(lines, kind)
                        lines[index] = damage(lines[index])
                    _write(directory, lines)

                tool = "dangerous" if dangerous else "plain"
                cases.append(Case(f"fork/journal/{tool}/{target}={how}", "fork", f"journal={how}", TRACE_NAME, make,
                                  commands=_append_and_forks("--step", "1", "--action", ACTION),
                                  after=_ledger_once))
    return cases


def _append_and_forks(*edit: str, approve: str = "always") -> tuple[tuple[str, ...], ...]:
    flags = ("--allow-code", "--approve", approve)
    return (("record", "plan.toml", "-o", "{file}", "--append", *flags),
            ("fork", "{file}", *edit, "-o", "fork.jsonl", "--force", *flags),
            ("fork", "{file}", *edit, "--append", *flags))


def _approvals(lines: list[bytes]) -> list[int]:
    return [i for i, line in enumerate(lines) if line.startswith(b'{"type":"approval",')]


def _retyped(line: bytes, **fields) -> bytes:
    data = json.loads(line)
    data.update(fields)
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()


def _approve_note(lines: list[bytes], **fields) -> None:
    note = _approvals(lines)[0]
    lines[note] = _retyped(lines[note], decision="approved", reason="", **fields)


def _swap(lines: list[bytes]) -> None:
    first, second = _approvals(lines)
    lines[first], lines[second] = lines[second], lines[first]


def _move_to_step_2(lines: list[bytes]) -> None:
    note = _approvals(lines)[0]
    moved = _retyped(lines[note], step=2, decision="approved", reason="")
    del lines[note]
    lines.insert(_index(lines, "final_answer"), moved)


def _other_arguments(lines: list[bytes]) -> None:
    _approve_note(lines)
    action = _index(lines, "action")
    lines[action] = lines[action].replace(b"C noted", b"C noted elsewhere")


APPROVAL_MUTATIONS: dict[str, Callable[[list[bytes]], None]] = {
    "as-recorded": lambda lines: None,
    "order-swapped": _swap,
    "denial-dropped": lambda lines: lines.__delitem__(_approvals(lines)[0]),
    "approved-with-another-id": lambda lines: _approve_note(lines, id="call_1_2"),
    "approved-without-id": lambda lines: _approve_note(lines, id=""),
    "approved-with-a-key": lambda lines: _approve_note(lines, key="note:C noted"),
    "approved-for-another-tool": lambda lines: _approve_note(lines, tool="pay"),
    "approved-at-another-step": _move_to_step_2,
    "approved-for-other-arguments": _other_arguments,
}


def approval_cases() -> list[Case]:
    """A step whose dangerous calls were denied (note) and approved (pay), its approvals
    then moved, reordered, dropped or rewritten so that none is the note's own approval."""
    cases: list[Case] = []
    for how, mutate in APPROVAL_MUTATIONS.items():
        def make(directory: Path, mutate=mutate) -> None:
            from agentdbg.engine.approval import Decision

            def decide(request):
                return Decision.deny("not now", by="ops") if request.tool == "note" else Decision.approve(by="ops")

            _record(directory, TWO_TOOLS.format(ledger=(directory / LEDGER).as_posix()), decide)
            lines = _lines(directory)
            mutate(lines)
            _write(directory, lines)

        for step in ("1", "2"):
            commands = _append_and_forks("--step", step, "--thought", "again", approve="never")[1:]
            cases.append(Case(f"fork/approval/step-{step}={how}", "fork", f"approval={how}", TRACE_NAME, make,
                              commands=commands, after=_ledger_once))
    return cases


EVIL = """\
task = "{task}"
executes_code = true

[[tools]]
name = "append_line"
kind = "python"
callable = "side_effect_tools:append_line"
idempotency_key = ["line"]

[policy]
kind = "outputs"
format = "json"
outputs = ['''Action: append_line
Action Input: {{"path": "{chosen}", "line": "{entry}"}}''', "Final Answer: recorded"]
"""


def _evil(directory: Path) -> Path:
    path = directory / "evil.toml"
    path.write_text(EVIL.format(task=TASK, chosen=(directory / CHOSEN).as_posix(), entry="chosen"), encoding="utf-8")
    return path


SOURCES: dict[str, Callable[[Path], str]] = {
    "beside": lambda directory: _evil(directory).name,
    "absolute": lambda directory: str(_evil(directory)),
    "dot-slash": lambda directory: f"./{_evil(directory).name}",
    "link": lambda directory: (os.symlink(_evil(directory).name, directory / "link.toml"), "link.toml")[1],
    "hostile-name": lambda directory: (_evil(directory).rename(directory / "e\x1b]52;c;eA==\x07\u202e.toml"),
                                       "e\x1b]52;c;eA==\x07\u202e.toml")[1],
    "fifo": lambda directory: (os.mkfifo(directory / "pipe.toml"), "pipe.toml")[1],
    "dev-zero": lambda directory: "/dev/zero",
    "directory": lambda directory: ((directory / "plans.toml").mkdir(), "plans.toml")[1],
}
HASHES = {"absent": None, "zeros": "0" * 64, "the-recorded-plan's": "recorded", "not-hex": "\x1b[31mnot a hash"}


def source_cases() -> list[Case]:
    """A recorded trace whose ``run_start`` names another plan (one that runs code with the
    same task) or something that is not a plan, with the plan hash absent, wrong or odd."""
    cases: list[Case] = []
    for where, source in SOURCES.items():
        for which, digest in HASHES.items():
            if where not in ("beside", "absolute") and which != "absent":
                continue  # the hash matters only once a plan is found

            def make(directory: Path, source=source, digest=digest) -> None:
                from agentdbg.engine.approval import always

                _record(directory, PLAN.format(task=TASK, dangerous="true", ledger=(directory / LEDGER).as_posix(),
                                               entry=ENTRY), always())
                lines = _lines(directory)
                index = _index(lines, "run_start")
                data = json.loads(lines[index])
                data["source"] = source(directory)
                if digest is None:
                    data.pop("source_sha256", None)
                elif digest != "recorded":
                    data["source_sha256"] = digest
                lines[index] = json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()
                _write(directory, lines)

            commands = _append_and_forks("--step", "2", "--thought", "again")[1:]
            cases.append(Case(f"fork/source/{where}=hash-{which}", "fork", f"source={where}", TRACE_NAME, make,
                              args=("--allow-code",), commands=commands, after=_ledger_once, tui=True,
                              tui_keys=FORK_KEYS))
    return cases


def fork_cases() -> list[Case]:
    return journal_cases() + approval_cases() + source_cases()
