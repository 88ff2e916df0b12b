"""Mutations of the importers' fixtures (tests/fixtures/import/FORMAT): every field of
every JSON document of every format by type (SWE-agent trajectories and their info, OpenAI
chat messages, Anthropic content blocks, OTel attributes, Codex and Claude Code sessions,
LangChain run trees...), and every kind of line of the text formats (ReAct-paper logs,
plain transcripts). The binary formats are in ``binary_cases``.

Each case forces its format (``--format NAME``), so the converter itself reads the
mutated data; detection is exercised by the damaged and special files.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from agentdbg import importers
from fuzz import values
from fuzz.cases import Case, copy_json, drop_at, set_at, shape_text, walk

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "import"
REAL = FIXTURES / "real"  # runs saved by the stacks themselves (with their licences)
NOT_RUNS = ("SOURCE.md", "LICENSE", "LICENSE.md", "NOTICE")
JSON_SUFFIXES = (".json", ".traj", ".jsonl")
TEXT_FORMATS = ("react-paper", "transcript")  # mutated line by line
EXECUTED = "EXECUTED"  # a file the result-dict payloads try to create: they must never run


def formats() -> list[str]:
    """Every format agentdbg imports (each must have fixtures: see the corpus tests)."""
    return sorted(module.NAME for module in importers.FORMATS)


def fixtures(format_name: str) -> list[Path]:
    """The format's fixtures, the richest (largest) first: a shape is mutated where first found."""
    directory = FIXTURES / format_name
    if not directory.is_dir():
        return []
    return sorted((path for path in directory.iterdir() if path.is_file()),
                  key=lambda path: (-path.stat().st_size, path.name))


def text_fixture(format_name: str) -> Path | None:
    """The format's richest fixture that is text (UTF-8), for damage done to text."""
    for path in fixtures(format_name):
        try:
            path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            continue
        return path
    return None


def real_fixtures(format_name: str) -> list[Path]:
    """Runs the stack itself saved (tests/fixtures/import/real/FORMAT), by name."""
    directory = REAL / format_name
    if not directory.is_dir():
        return []
    return sorted(path for path in directory.rglob("*") if path.is_file() and path.name not in NOT_RUNS)


def element_label(item) -> str:
    """List items named by what tells them apart: an OTel attribute by its key, a message
    by its role, a content block by its type."""
    if isinstance(item, dict):
        for key in ("key", "role", "type"):
            if isinstance(item.get(key), str):
                return f"[{key}={item[key]}]"
    return "[]"


def shape_key(shape: tuple) -> tuple:
    """A labelled item itself, and the field that labels it, are one shape for the whole
    list: only the fields inside an item differ by its label."""
    if shape and shape[-1].startswith("[") and "=" in shape[-1]:
        return shape[:-1] + ("[]",)
    if len(shape) >= 2 and shape[-2].startswith("[") and shape[-2][1:].split("=")[0] == shape[-1]:
        return shape[:-2] + ("[]", shape[-1])
    return shape


def _documents(path: Path):
    """(where, parsed JSON) for each JSON document of a fixture: the whole file (where is
    None), each line of a JSON Lines file (its index), or each of several documents one
    after another (their (start, end) in the text, as a console exporter writes them)."""
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        return
    if path.suffix == ".jsonl":
        for index, line in enumerate(text.split("\n")):
            try:
                yield index, json.loads(line)
            except ValueError:
                continue
        return
    try:
        yield None, json.loads(text)
        return
    except ValueError:
        pass
    decoder, found, position = json.JSONDecoder(), [], 0
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position == len(text):
            break
        try:
            document, end = decoder.raw_decode(text, position)
        except ValueError:
            return  # not JSON documents: a text format
        found.append(((position, end), document))
        position = end
    yield from found


def _mutated(path: Path, where_in_file, document, where: tuple, new) -> Callable[[Path], None]:
    """Writes the fixture with one field of one document changed (or the whole document)."""
    def make(directory: Path) -> None:
        mutated = copy_json(document)
        if new is values.DROP:
            drop_at(mutated, where)
        elif where:
            set_at(mutated, where, new)
        else:
            mutated = new
        text = values.dumps(mutated)
        if where_in_file is None:
            data = text
        elif isinstance(where_in_file, tuple):
            original = path.read_bytes().decode("utf-8")
            data = original[:where_in_file[0]] + text + original[where_in_file[1]:]
        else:
            lines = path.read_bytes().decode("utf-8").split("\n")
            lines[where_in_file] = text
            data = "\n".join(lines)
        (directory / path.name).write_bytes(data.encode("utf-8", "surrogatepass"))
    return make


def field_cases() -> list[Case]:
    cases: list[Case] = []
    for format_name in formats():
        seen: set = set()
        for path in fixtures(format_name):
            documents = list(_documents(path))
            for line, document in documents:
                for where, shape, value in walk(document, element_label=element_label):
                    key = shape_key(shape), values.json_type(value)
                    if key in seen:
                        continue
                    seen.add(key)
                    label = f"import-field/{format_name}/{shape_text(key[0])}({key[1]})"
                    mutations = {**values.import_replacements(value), "dropped": values.DROP}
                    for mutation, new in mutations.items():
                        kind = "dropped" if new is values.DROP else f"{key[1]}={mutation}"
                        cases.append(Case(f"{label}={mutation}", "import-field", kind, path.name,
                                          _mutated(path, line, document, where, new),
                                          args=("--format", format_name), slow=mutation in values.BIG))
            if not documents:
                continue  # a text or binary fixture
            whole = documents[0][0]
            for how, root in (("nested-100000", values.deep_list(100_000)), ("empty-list", []),
                              ("empty-object", {}), ("string", "text")):
                cases.append(Case(f"import-field/{format_name}/{path.name}(root)={how}", "import-field",
                                  f"root={how}", path.name, _mutated(path, whole, None, (), root),
                                  args=("--format", format_name)))
    return cases


# -- text formats ------------------------------------------------------------------------

_REACT_LINE = re.compile(
    r"^(?P<label>[ \t]*(?:(?P<index>\d+)[ \t]+)?(?:Question|Claim)[ \t]*:[ \t]?"
    r"|[ \t]*(?:Thought|Action|Observation|Answer)[ \t]*(?P<number>\d*)[ \t]*:[ \t]?)(?P<content>.*)$")
_TRANSCRIPT_LINE = re.compile(
    r"^(?P<label>[ \t]*(?:Question|Thought|Action Input|Action|Observation|Final Answer|Answer)[ \t]*:[ \t]?)"
    r"(?P<content>.*)$")
_CALL = re.compile(r"^(?P<name>\w+)\[(?P<arg>.*)\]$")
# Any other text format: a line labelled "Word 3:" or "Two words:", or a "> command" line.
_GENERIC_LINE = re.compile(r"^(?P<label>[ \t]*(?:>[ \t]*|[A-Za-z][A-Za-z _]{0,30}?[ \t]*(?P<number>\d*)[ \t]*:[ \t]?))"
                           r"(?P<content>.*)$")


def _line_kind(format_name: str, line: str) -> str:
    if not line.strip():
        return ""
    if format_name == "react-paper":
        if re.match(r"^-{5,}\s*$", line):
            return "separator"
        if line.lstrip().startswith("{") and "'steps'" in line:
            return "result"
        if re.match(r"^\d+ \d+ [\d.]+ [\d.]+\s*$", line):
            return "tally"
        match = _REACT_LINE.match(line)
        if match:
            word = re.search(r"Question|Claim|Thought|Action|Observation|Answer", match["label"]).group()
            numbered = "-numbered" if match["number"] or match["index"] else ""
            call = "-call" if _CALL.match(match["content"].strip()) else ""
            return f"{word.lower()}{numbered}{call}"
        return "other"
    if format_name == "transcript":
        match = _TRANSCRIPT_LINE.match(line)
        if match:
            call = "-call" if _CALL.match(match["content"].strip()) else ""
            return match["label"].strip().rstrip(":").strip().lower().replace(" ", "-") + call
        return "other"
    match = _GENERIC_LINE.match(line)
    if match:
        word = re.sub(r"[^a-z]+", "-", match["label"].lower()).strip("-") or "command"
        numbered = "-numbered" if match["number"] else ""
        call = "-call" if _CALL.match(match["content"].strip()) else ""
        return f"{word}{numbered}{call}"
    if not re.search(r"[A-Za-z0-9]", line):
        return "separator"
    return "number" if re.fullmatch(r"[\d\s.,:/%-]+", line) else "other"


def _text_mutations(format_name: str, kind: str, line: str) -> dict[str, str | list[str] | Callable[[], str]]:
    """Replacement lines (or none: dropped) for one line of a text format; a big one is
    made only when its case is built."""
    pattern = {"react-paper": _REACT_LINE, "transcript": _TRANSCRIPT_LINE}.get(format_name, _GENERIC_LINE)
    match = pattern.match(line)
    label, content = (match["label"], match["content"]) if match else ("", line)
    out: dict[str, str | list[str]] = {f"content={name}": label + text for name, text in values.STRINGS.items()}
    out["dropped"] = []
    out["duplicated"] = [line, line]
    out["duplicated-1000"] = [line] * 1000
    number = re.search(r"\d+", label)
    if number:
        for name, new in (("huge", "9" * 20), ("digits-5000", "9" * 5000), ("negative", "-1"), ("zero", "0"),
                          ("missing", ""), ("float", "1.5"), ("shifted", str(int(number.group()) + 5))):
            out[f"number={name}"] = label[: number.start()] + new + label[number.end():] + content
    call = _CALL.match(content.strip())
    if call:
        name = call["name"]
        for how, new in (("unclosed", f"{name}[abc"), ("nested-100000", f"{name}[{'[' * 100_000}{']' * 100_000}]"),
                         ("empty", f"{name}[]"), ("unknown", "Zzz[x]"), ("no-brackets", f"{name} abc"),
                         ("huge", f"{name}[{'x' * 1_000_000}]"), ("osc-name", f"{values.OSC}[x]")):
            out[f"call={how}"] = label + new
    if kind == "action-input":
        for how, new in (("nested-100000", lambda: str(values.deep_dict(100_000))), ("not-json", "{"),
                         ("list", "[1, 2]"), ("huge", lambda: values.dumps({"x": "y" * 1_000_000})),
                         ("keys-100000", lambda: values.dumps({f"k{i}": i for i in range(100_000)}))):
            out[f"input={how}"] = (lambda new=new: label + new()) if callable(new) else label + new
    if kind == "result":
        for how, new in (
            ("nested-100000", "{'steps': " + "{'a': " * 100_000 + "1" + "}" * 100_000 + "}"),
            ("code", "{'steps': __import__('os').system('touch " + EXECUTED + "'), 'answer': 'x'}"),
            ("code-call", "{'steps': 2, 'answer': open('" + EXECUTED + "', 'w')}"),
            ("digits-5000", "{'steps': " + "9" * 5000 + ", 'answer': 'x'}"),
            ("float-overflow", "{'steps': 1e999, 'answer': None}"),
            ("negative", "{'steps': -1, 'answer': 'x'}"),
            ("set", "{'steps': {1, 2}, 'answer': b'bytes'}"),
            ("unclosed", "{'steps': 2, 'answer': 'x'"),
        ):
            out[f"result={how}"] = new
    return out


def executed(directory: Path) -> str:
    if (directory / EXECUTED).exists():
        return f"the file's text ran as code: {EXECUTED} was created"
    return ""


def _text_fixtures(format_name: str) -> list[tuple[Path, str]]:
    """The format's fixtures that are text but not JSON documents, with their text."""
    out = []
    for path in fixtures(format_name):
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            continue  # binary
        if not any(True for _ in _documents(path)):
            out.append((path, text))
    return out


def text_cases() -> list[Case]:
    """Each kind of line of every text fixture (ReAct-paper logs, transcripts, and any other
    format's text), first where it occurs, replaced, dropped, repeated, renumbered..."""
    cases: list[Case] = []
    for format_name in formats():
        seen: set = set()
        for path, text in _text_fixtures(format_name):
            lines = text.split("\n")
            for index, line in enumerate(lines):
                kind = _line_kind(format_name, line)
                if not kind or kind in seen:
                    continue
                seen.add(kind)
                for how, new in _text_mutations(format_name, kind, line).items():
                    replacement = new if callable(new) else [new] if isinstance(new, str) else new
                    slow = callable(new) or sum(len(text) for text in replacement) > 500_000
                    cases.append(Case(f"import-text/{format_name}/{kind}={how}", "import-text", how, path.name,
                                      _text_with(path.name, lines, index, replacement),
                                      args=("--format", format_name), slow=slow,
                                      after=executed if how.startswith("result") else None))
    return cases


def _text_with(name: str, lines: list[str], index: int, replacement) -> Callable[[Path], None]:
    def make(directory: Path) -> None:
        new = [replacement()] if callable(replacement) else replacement
        text = "\n".join(lines[:index] + new + lines[index + 1:])
        (directory / name).write_bytes(text.encode("utf-8", "surrogatepass"))
    return make
