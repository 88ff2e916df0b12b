"""Damaged and special files: traces, saved runs and plans cut, corrupted, re-encoded or
grown huge; FIFOs, devices, links, directories and unreadable files under every
extension; the breakpoints sidecar beside a trace made special, damaged or hostile; and
every fixture as it is."""

from __future__ import annotations

import gzip
import json
import os
import random
import stat
from collections.abc import Callable
from pathlib import Path

from fuzz import values
from fuzz.cases import SIDECAR_KEYS, Case, write_bytes, write_lines
from fuzz.import_cases import (
    FIXTURES,
    JSON_SUFFIXES,
    fixtures,
    formats,
    real_fixtures,
    text_fixture,
)
from fuzz.trace_cases import TRACE_NAME, Traces

PLANS = Path(__file__).resolve().parents[2] / "sample_plans"
HOSTILE_TRACE = Path(__file__).resolve().parents[1] / "fixtures" / "hostile" / "hostile.jsonl"
DAMAGE_BASE = "library_hallucinating"  # 5 steps, an error, checkpoints every 2 steps
BIG = 50 * 1024 * 1024  # the "50 MB line"
EXTENSIONS = (".jsonl", ".toml", ".json", ".traj", ".txt", "")
SIDECAR = TRACE_NAME + ".breakpoints.json"
VICTIM = "victim.txt"


def _trace_bytes(traces: Traces, name: str = DAMAGE_BASE) -> bytes:
    return b"".join(line + b"\n" for line in traces.lines(name))


def _kind_of(line: bytes) -> str:
    try:
        return str(json.loads(line).get("type", "?"))
    except ValueError:
        return "?"


# -- damaged -----------------------------------------------------------------------------


def truncated_cases(traces: Traces) -> list[Case]:
    data = _trace_bytes(traces)
    offsets: dict[int, str] = {1: "first-byte"}
    start = 0
    for number, line in enumerate(data.split(b"\n")[:-1], 1):
        kind = _kind_of(line)
        end = start + len(line)
        offsets.setdefault(start + 1, f"line{number}-{kind}-opening-brace")
        offsets.setdefault((start + end) // 2, f"line{number}-{kind}-middle")
        offsets.setdefault(end, f"line{number}-{kind}-before-newline")
        if line.startswith(b'{"type":"step"'):
            offsets.setdefault(start + len(b'{"type":"step"'), f"line{number}-step-after-marker")
        start = end + 1
    cases = [Case(f"damaged/trace-truncated/{where}@{offset}", "damaged", "truncated", TRACE_NAME,
                  write_bytes(TRACE_NAME, data[:offset])) for offset, where in sorted(offsets.items())]
    # Cut inside a UTF-8 sequence.
    lines = traces.lines(DAMAGE_BASE)
    thought = next(i for i, line in enumerate(lines) if line.startswith(b'{"type":"thought"'))
    lines[thought] = values.dumps({"type": "thought", "step": 1, "text": "€uro ünïcödé 界"}).encode()
    unicode_data = b"".join(line + b"\n" for line in lines)
    cut = unicode_data.index("€".encode()) + 1
    cases.append(Case("damaged/trace-truncated/inside-utf8-sequence", "damaged", "truncated", TRACE_NAME,
                      write_bytes(TRACE_NAME, unicode_data[:cut])))
    for format_name in formats():
        path = fixtures(format_name)[0]
        raw = path.read_bytes()
        for fraction in (0.25, 0.5, 0.75):
            offset = int(len(raw) * fraction)
            cases.append(Case(f"damaged/import-truncated/{format_name}/{path.name}@{offset}", "damaged",
                              "truncated", path.name, write_bytes(path.name, raw[:offset])))
        cases.append(Case(f"damaged/import-truncated/{format_name}/{path.name}@last-byte", "damaged",
                          "truncated", path.name, write_bytes(path.name, raw[:-1])))
    plan = (PLANS / "library_hallucinating.toml").read_bytes()
    for fraction in (0.33, 0.5, 0.9):
        offset = int(len(plan) * fraction)
        cases.append(Case(f"damaged/plan-truncated@{offset}", "damaged", "truncated", "plan.toml",
                          write_bytes("plan.toml", plan[:offset])))
    return cases


def _line_index(lines: list[bytes], kind: str, nth: int = 0) -> int:
    found = [i for i, line in enumerate(lines) if line.startswith(b'{"type":"' + kind.encode() + b'"')]
    return found[min(nth, len(found) - 1)]


def corrupt_cases(traces: Traces) -> list[Case]:
    base = traces.lines(DAMAGE_BASE)
    targets = {"run_start": _line_index(base, "run_start"), "step": _line_index(base, "step", 2),
               "thought": _line_index(base, "thought", 2), "guards": _line_index(base, "guards", 1),
               "checkpoint": _line_index(base, "checkpoint"), "run_end": _line_index(base, "run_end")}
    rng = random.Random(7)
    corruptions: dict[str, Callable[[list[bytes], int], None]] = {
        "half-line": lambda lines, i: lines.__setitem__(i, lines[i][: len(lines[i]) // 2]),
        "garbage": lambda lines, i: lines.__setitem__(i, b"this line is not JSON at all"),
        "nul-bytes": lambda lines, i: lines.__setitem__(i, b"\x00" * 64),
        "random-bytes": lambda lines, i: lines.__setitem__(i, rng.randbytes(64).replace(b"\n", b"")),
        "spliced": lambda lines, i: lines.__setitem__(slice(i, i + 2), [lines[i] + lines[i + 1]]),
        "blank": lambda lines, i: lines.insert(i, b""),
        "carriage-return": lambda lines, i: lines.insert(i, b"\r"),
    }
    cases = []
    for target, index in targets.items():
        for how, corrupt in corruptions.items():
            lines = list(base)
            if how == "spliced" and index + 1 >= len(lines):
                continue
            corrupt(lines, index)
            cases.append(Case(f"damaged/trace-corrupt/{target}={how}", "damaged", f"corrupt-{how}", TRACE_NAME,
                              write_lines(TRACE_NAME, lines)))
    return cases


def invalid_utf8_cases(traces: Traces) -> list[Case]:
    base = traces.lines(DAMAGE_BASE)
    targets = {"header": 0, "run_start": _line_index(base, "run_start"), "step": _line_index(base, "step", 1),
               "thought": _line_index(base, "thought", 1), "last-line": len(base) - 1}
    sequences = {"ff": b"\xff\xfe", "overlong": b"\xc0\xaf", "surrogate": b"\xed\xa0\x80",
                 "raw-c1": b"\x9b31m", "cut-sequence": b"\xe2\x82"}
    cases = []
    for target, index in targets.items():
        for how, bad in sequences.items():
            lines = list(base)
            line = lines[index]
            # inside the last string value when there is one, else at the end
            at = line.rfind(b'"', 0, len(line) - 1)
            lines[index] = line[:at] + bad + line[at:] if at > 0 else line + bad
            cases.append(Case(f"damaged/trace-invalid-utf8/{target}={how}", "damaged", "invalid-utf8",
                              TRACE_NAME, write_lines(TRACE_NAME, lines)))
    for format_name in formats():
        path = fixtures(format_name)[0]
        raw = path.read_bytes()
        middle = len(raw) // 2
        cases.append(Case(f"damaged/import-invalid-utf8/{format_name}", "damaged", "invalid-utf8", path.name,
                          write_bytes(path.name, raw[:middle] + b"\xff\x9b\xed\xa0\x80" + raw[middle:])))
    plan = (PLANS / "library_hallucinating.toml").read_bytes()
    cases.append(Case("damaged/plan-invalid-utf8", "damaged", "invalid-utf8", "plan.toml",
                      write_bytes("plan.toml", plan.replace(b"Il Gattopardo", b"Il Gatto\xffpardo", 1))))
    return cases


def encoding_cases(traces: Traces) -> list[Case]:
    data = _trace_bytes(traces)
    lines = traces.lines(DAMAGE_BASE)
    step = _line_index(lines, "step", 1)
    bom = b"\xef\xbb\xbf"
    text = data.decode("utf-8")
    variants = {
        "utf8-bom": bom + data,
        "bom-before-run_start": b"\n".join(lines[:1] + [bom + lines[1]] + lines[2:]) + b"\n",
        "bom-before-step": b"\n".join(lines[:step] + [bom + lines[step]] + lines[step + 1:]) + b"\n",
        "utf16le-bom": text.encode("utf-16"),
        "utf16be-bom": b"\xfe\xff" + text.encode("utf-16-be"),
        "utf32-bom": text.encode("utf-32"),
        "crlf": data.replace(b"\n", b"\r\n"),
        "cr-only": data.replace(b"\n", b"\r"),
        "mixed-endings": b"".join(line + (b"\r\n" if i % 2 else b"\n") for i, line in enumerate(lines)),
        "crlf-cut-after-cr": data.replace(b"\n", b"\r\n")[: -1],
    }
    cases = [Case(f"damaged/trace-encoding/{how}", "damaged", how, TRACE_NAME, write_bytes(TRACE_NAME, raw))
             for how, raw in variants.items()]
    for format_name in formats():
        path = text_fixture(format_name)
        if path is None:
            continue  # binary only: see binary_cases
        raw = path.read_bytes()
        for how, new in (("utf8-bom", bom + raw), ("utf16-bom", raw.decode("utf-8").encode("utf-16")),
                         ("crlf", raw.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"))):
            cases.append(Case(f"damaged/import-encoding/{format_name}={how}", "damaged", how, path.name,
                              write_bytes(path.name, new)))
    plan = (PLANS / "library_hallucinating.toml").read_bytes()
    for how, new in (("utf8-bom", bom + plan), ("utf16-bom", plan.decode().encode("utf-16")),
                     ("crlf", plan.replace(b"\n", b"\r\n"))):
        cases.append(Case(f"damaged/plan-encoding={how}", "damaged", how, "plan.toml", write_bytes("plan.toml", new)))
    return cases


def _big_trace_line(traces: Traces, where: str) -> Callable[[Path], None]:
    def make(directory: Path) -> None:
        lines = traces.lines(DAMAGE_BASE)
        filler = "x" * BIG
        if where == "observation":
            index = _line_index(lines, "observation", 1)
            lines[index] = values.dumps({"type": "observation", "step": 2, "text": filler}).encode()
        elif where == "task":
            event = json.loads(lines[1])
            event["task"] = filler
            lines[1] = values.dumps(event).encode()
        elif where == "header":
            header = json.loads(lines[0])
            header["created_by"] = filler
            lines[0] = values.dumps(header).encode()
        elif where == "garbage-line":
            lines.insert(_line_index(lines, "thought", 2), filler.encode())
        elif where == "last-line-cut":
            lines.append(b'{"type":"thought","step":5,"text":"' + filler.encode())
            (directory / TRACE_NAME).write_bytes(b"\n".join(lines))
            return
        elif where == "only-line":
            (directory / TRACE_NAME).write_bytes(filler.encode())
            return
        write_lines(TRACE_NAME, lines)(directory)
    return make


def _big_import(path: Path, format_name: str) -> Callable[[Path], None]:
    """The fixture with its longest string made 50 MB (in the first document of a JSON
    Lines file); a text fixture with its longest line made 50 MB longer."""
    def make(directory: Path) -> None:
        raw = path.read_text(encoding="utf-8")
        if path.suffix not in JSON_SUFFIXES:
            lines = raw.split("\n")
            longest = max(range(len(lines)), key=lambda i: len(lines[i]))
            lines[longest] += "x" * BIG
        else:
            lines = raw.split("\n") if path.suffix == ".jsonl" else [raw]
            for index, text in enumerate(lines):
                try:
                    document = json.loads(text)
                except ValueError:
                    continue
                _grow_longest_string(document)
                lines[index] = values.dumps(document)
                break
        (directory / path.name).write_text("\n".join(lines), encoding="utf-8")
    return make


def _grow_longest_string(document) -> None:
    best: list = [None, None, -1]

    def visit(container) -> None:
        items = container.items() if isinstance(container, dict) else enumerate(container)
        for key, item in items:
            if isinstance(item, str) and len(item) > best[2]:
                best[:] = [container, key, len(item)]
            elif isinstance(item, (dict, list)):
                visit(item)

    visit(document)
    if best[0] is not None:
        best[0][best[1]] += "x" * BIG


def big_line_cases(traces: Traces) -> list[Case]:
    cases = [Case(f"damaged/trace-50mb/{where}", "damaged", "50mb-line", TRACE_NAME, _big_trace_line(traces, where),
                  slow=True)
             for where in ("observation", "task", "header", "garbage-line", "last-line-cut", "only-line")]
    for format_name in formats():
        path = text_fixture(format_name)
        if path is None:
            continue  # binary only: see binary_cases
        cases.append(Case(f"damaged/import-50mb/{format_name}", "damaged", "50mb-line", path.name,
                          _big_import(path, format_name), slow=True))

    def big_plan(directory: Path) -> None:
        plan = (PLANS / "library_hallucinating.toml").read_text(encoding="utf-8")
        (directory / "plan.toml").write_text(plan.replace('task = "', 'task = "' + "x" * BIG, 1), encoding="utf-8")

    cases.append(Case("damaged/plan-50mb-task", "damaged", "50mb-line", "plan.toml", big_plan, slow=True))
    return cases


# -- special files -------------------------------------------------------------------------


def _fifo(name: str):
    def make(directory: Path) -> None:
        os.mkfifo(directory / name)
    return make


def _symlink(name: str, target: str):
    def make(directory: Path) -> None:
        os.symlink(target, directory / name)
    return make


def _directory(name: str):
    def make(directory: Path) -> None:
        (directory / name).mkdir()
        (directory / name / "inside.jsonl").write_text("{}\n")
    return make


def _unreadable(name: str, data: bytes, *, in_closed_directory: bool = False):
    def make(directory: Path) -> None:
        where = directory
        if in_closed_directory:
            where = directory / "closed"
            where.mkdir()
        (where / Path(name).name).write_bytes(data)
        os.chmod(where / Path(name).name, 0)
        if in_closed_directory:
            os.chmod(where, 0)
    return make


def _sparse(name: str, size: int):
    def make(directory: Path) -> None:
        with open(directory / name, "wb") as handle:
            handle.truncate(size)
    return make


def special_cases(traces: Traces) -> list[Case]:
    trace = _trace_bytes(traces)
    header = traces.lines(DAMAGE_BASE)[0]
    run_start = traces.lines(DAMAGE_BASE)[1]
    other = _trace_bytes(traces, "library_stuck")
    plan = (PLANS / "library_hallucinating.toml").read_bytes()
    openai = (FIXTURES / "openai-chat" / "weather_request.json").read_bytes()
    rng = random.Random(11)
    cases: list[Case] = []

    def add(what: str, name: str, make, **options) -> None:
        cases.append(Case(f"special/{what}", "special", what.split("/")[0], name, make, tui=True, **options))

    for ext in EXTENSIONS:
        label = ext.lstrip(".") or "no-extension"
        add(f"empty/{label}", f"input{ext}", write_bytes(f"input{ext}", b""))
        add(f"fifo/{label}", f"input{ext}", _fifo(f"input{ext}"), blocking=True)
        add(f"directory/{label}", f"input{ext}", _directory(f"input{ext}"))
    for forced in ("plan", "trace", "openai-chat"):
        add(f"fifo/format-{forced}", "input.bin", _fifo("input.bin"), args=("--format", forced), blocking=True)
    for ext in (".jsonl", ".toml", ".json", ".txt"):
        add(f"dev-zero/{ext.lstrip('.')}", f"zero{ext}", _symlink(f"zero{ext}", "/dev/zero"))
    for forced in ("plan", "trace", "transcript", "openai-chat"):
        add(f"dev-zero/format-{forced}", "zero.bin", _symlink("zero.bin", "/dev/zero"), args=("--format", forced))
    add("dev-zero/path-format-plan", "/dev/zero", lambda directory: None, args=("--format", "plan"))
    add("dev-null/jsonl", "null.jsonl", _symlink("null.jsonl", "/dev/null"))
    add("dev-null/toml", "null.toml", _symlink("null.toml", "/dev/null"))
    add("dev-urandom/jsonl", "random.jsonl", _symlink("random.jsonl", "/dev/urandom"))
    add("proc-file/txt", "status.txt", _symlink("status.txt", "/proc/self/status"))
    for ext in (".jsonl", ".toml", ".json"):
        add(f"sparse-4gib/{ext.lstrip('.')}", f"sparse{ext}", _sparse(f"sparse{ext}", 4 << 30))
    add("dangling-link/jsonl", "gone.jsonl", _symlink("gone.jsonl", "missing-target.jsonl"))
    add("dangling-link/toml", "gone.toml", _symlink("gone.toml", "missing-target.toml"))
    add("link-loop/self-jsonl", "loop.jsonl", _symlink("loop.jsonl", "loop.jsonl"))

    def two_link_loop(directory: Path) -> None:
        os.symlink("b.toml", directory / "a.toml")
        os.symlink("a.toml", directory / "b.toml")

    add("link-loop/pair-toml", "a.toml", two_link_loop)

    def link_to_directory(directory: Path) -> None:
        (directory / "folder").mkdir()
        os.symlink("folder", directory / "folder.jsonl")

    add("link-to-directory/jsonl", "folder.jsonl", link_to_directory)
    add("unreadable/trace", TRACE_NAME, _unreadable(TRACE_NAME, trace), unprivileged=True)
    add("unreadable/plan", "plan.toml", _unreadable("plan.toml", plan), unprivileged=True)
    add("unreadable/import", "chat.json", _unreadable("chat.json", openai), unprivileged=True)
    add("unreadable/closed-directory", f"closed/{TRACE_NAME}",
        _unreadable(TRACE_NAME, trace, in_closed_directory=True), unprivileged=True)
    add("missing/jsonl", "missing.jsonl", lambda directory: None)
    add("not-a-directory/jsonl", f"{TRACE_NAME}/", write_bytes(TRACE_NAME, trace))
    hostile_name = "\x1b]52;c;eA==\x07evil\x9b31m\u202egnp\u200b[red]x[bold].jsonl"  # no "/": one name
    add("hostile-name/existing", hostile_name, write_bytes(hostile_name, trace))
    add("hostile-name/missing", hostile_name, lambda directory: None)
    add("hostile-name/not-a-trace", hostile_name, write_bytes(hostile_name, b"not a trace\n"))
    for how, data in (("whitespace", b"  \n\t\n  \n"), ("newline", b"\n"), ("nul-1mb", b"\x00" * 1_000_000),
                      ("header-only", header + b"\n"), ("header-no-newline", header),
                      ("header-blank-lines", header + b"\n\n\n\n"),
                      ("header-and-run_start", header + b"\n" + run_start + b"\n"),
                      ("run_start-without-header", run_start + b"\n"),
                      ("two-headers", header + b"\n" + trace),
                      ("concatenated", trace + other),
                      ("concatenated-no-newline", trace.rstrip(b"\n") + other),
                      ("random-64k", rng.randbytes(65_536)),
                      ("elf", b"\x7fELF\x02\x01\x01" + rng.randbytes(4096)),
                      ("png", b"\x89PNG\r\n\x1a\n" + rng.randbytes(4096)),
                      ("gzip-trace", gzip.compress(trace, mtime=0))):
        add(f"content/{how}", TRACE_NAME, write_bytes(TRACE_NAME, data))
    for ext in (".toml", ".json"):
        add(f"content/random-64k{ext}", f"input{ext}",
            write_bytes(f"input{ext}", rng.randbytes(65_536)))
    return cases


# -- the breakpoints sidecar ---------------------------------------------------------------


def _sidecar_json(breakpoints: list, **extra) -> bytes:
    return values.dumps({"format": "agentdbg-breakpoints", "version": 1, "auto": {}, "breakpoints": breakpoints,
                         **extra}).encode()


def _unchanged_sidecar(expected: bytes | None, kind: str = "file") -> Callable[[Path], str]:
    """After the debugger: a sidecar it refused is still there as it was."""
    def check(directory: Path) -> str:
        path = directory / SIDECAR
        try:
            info = path.lstat()
        except FileNotFoundError:
            return "the refused breakpoints file was deleted"
        if kind == "fifo":
            return "" if stat.S_ISFIFO(info.st_mode) else "the named pipe holding the breakpoints was replaced"
        if kind == "directory":
            return "" if stat.S_ISDIR(info.st_mode) else "the breakpoints directory was replaced"
        if kind == "link":
            if not stat.S_ISLNK(info.st_mode):
                return "the symbolic link to the breakpoints was replaced by a file"
            victim = directory / VICTIM
            if victim.exists() and victim.read_bytes() != b"precious\n":
                return f"the file the breakpoints link points to ({VICTIM}) was overwritten"
            return ""
        if stat.S_ISREG(info.st_mode) and path.read_bytes() != expected:
            return "the refused breakpoints file was overwritten"
        return ""
    return check


def sidecar_cases(traces: Traces) -> list[Case]:
    """A valid trace (step 2's observation is 40 a's and a '!') with a sidecar beside it."""
    lines = traces.lines(DAMAGE_BASE)
    index = _line_index(lines, "observation", 1)
    event = json.loads(lines[index])
    event["text"] = "a" * 40 + "!"
    lines[index] = values.dumps(event).encode()
    trace = b"".join(line + b"\n" for line in lines)
    cases: list[Case] = []

    def add(what: str, make_sidecar: Callable[[Path], None], *, after=None, **options) -> None:
        def make(directory: Path) -> None:
            (directory / TRACE_NAME).write_bytes(trace)
            make_sidecar(directory)
        cases.append(Case(f"sidecar/{what}", "sidecar", what.split("/")[0], TRACE_NAME, make, tui=True,
                          tui_keys=SIDECAR_KEYS, after=after, **options))

    def sidecar_bytes(data: bytes | Callable[[], bytes]):
        def make(directory: Path) -> None:
            (directory / SIDECAR).write_bytes(data() if callable(data) else data)
        return make

    add("fifo", _fifo(SIDECAR), after=_unchanged_sidecar(None, "fifo"), blocking=True)
    add("dev-zero", _symlink(SIDECAR, "/dev/zero"))
    add("directory", _directory(SIDECAR), after=_unchanged_sidecar(None, "directory"))

    def link_to_victim(directory: Path) -> None:
        (directory / VICTIM).write_bytes(b"precious\n")
        os.symlink(VICTIM, directory / SIDECAR)

    add("link-to-other-file", link_to_victim, after=_unchanged_sidecar(None, "link"))
    add("dangling-link", _symlink(SIDECAR, "nowhere.json"))
    add("unreadable", _unreadable(SIDECAR, _sidecar_json([])), unprivileged=True)
    for how, data in (
        ("bad-json", b'{"format": "agentdbg-breakpoints", "version": 1, "breakpoints": ['),
        ("invalid-utf8", _sidecar_json([{"kind": "tool", "spec": "calc"}]).replace(b"calc", b"ca\xff\x9blc")),
        ("nested-100000", ("[" * 100_000 + "]" * 100_000).encode()),
        ("wrong-types", values.dumps({"format": "agentdbg-breakpoints", "version": 1, "auto": [1],
                                      "breakpoints": "x"}).encode()),
        ("unknown-kind", _sidecar_json([{"kind": "watch", "spec": "x"}])),
        ("newer-version", values.dumps({"format": "agentdbg-breakpoints", "version": 99}).encode()),
        ("bad-filter", _sidecar_json([{"kind": "filter", "spec": "~obs ((("}])),
    ):
        add(f"refused/{how}", sidecar_bytes(data), after=_unchanged_sidecar(data))
    add("huge-50mb", sidecar_bytes(lambda: _sidecar_json([], pad="x" * BIG)), slow=True)
    for how, kind, spec, count in (("steps-100000", "step", "{}", 100_000), ("filters-20000", "filter", "~obs x{}", 20_000),
                                   ("tools-20000", "tool", "tool{}", 20_000)):
        def many(kind=kind, spec=spec, count=count) -> bytes:
            return _sidecar_json([{"kind": kind, "spec": spec.format(n)} for n in range(1, count + 1)])
        add(f"many/{how}", sidecar_bytes(many), slow=True)
    for how, pattern in (("nested-plus", "(a+)+$"), ("alternation", "(a|a)*$"), ("nested-star", "(a*)*b"),
                         ("repeat-group", "(a|aa){1,40}$"), ("email", "^([a-zA-Z0-9]+\\s?)+$")):
        add(f"pattern/{how}", sidecar_bytes(_sidecar_json([{"kind": "filter", "spec": f"~obs {pattern}"}])))
        add(f"pattern/{how}-thought", sidecar_bytes(_sidecar_json([{"kind": "filter",
                                                                      "spec": f"~thought {pattern} | ~obs {pattern}"}])))
    for how, spec in (("osc", f'~obs "{values.OSC}"'), ("bidi-markup", '~obs "[red]x[/red]\u202eevil\u200b"'),
                      ("huge-1mb", '~obs "' + "x" * 1_000_000 + '"')):
        add(f"hostile-spec/{how}", sidecar_bytes(_sidecar_json([{"kind": "filter", "spec": spec}])))
    add("hostile-spec/tool-name", sidecar_bytes(_sidecar_json([{"kind": "tool", "spec": values.OSC + "\u202e"}])))
    return cases


# -- every fixture as it is ------------------------------------------------------------------


def fixture_cases(traces: Traces) -> list[Case]:
    cases = []
    for name in traces.names:
        data = _trace_bytes(traces, name)
        cases.append(Case(f"fixture/trace/{name}", "fixture", "recorded-trace", TRACE_NAME,
                          write_bytes(TRACE_NAME, data)))
    if HOSTILE_TRACE.is_file():
        cases.append(Case("fixture/trace/hostile", "fixture", "hostile-trace", TRACE_NAME,
                          write_bytes(TRACE_NAME, HOSTILE_TRACE.read_bytes()), tui=True))
    for format_name in formats():
        for path in fixtures(format_name):
            cases.append(Case(f"fixture/import/{format_name}/{path.name}", "fixture", format_name, path.name,
                              write_bytes(path.name, path.read_bytes())))
        for path in real_fixtures(format_name):
            relative = path.relative_to(FIXTURES).as_posix()
            cases.append(Case(f"fixture/{relative}", "fixture", format_name, path.name,
                              write_bytes(path.name, path.read_bytes())))
    for path in sorted(PLANS.glob("*.toml")):
        cases.append(Case(f"fixture/plan/{path.stem}", "fixture", "plan", path.name,
                          write_bytes(path.name, path.read_bytes())))
    return cases


def damaged_cases(traces: Traces) -> list[Case]:
    return (truncated_cases(traces) + corrupt_cases(traces) + invalid_utf8_cases(traces)
            + encoding_cases(traces) + big_line_cases(traces))
