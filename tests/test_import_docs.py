"""docs/importers.md and README.md keep up with the importers: every format in FORMATS has
its row in the detection table (in detection order), in "Formats at a glance" and its own
section; the glance table's claims about tokens and verdicts hold on every fixture of the
format; the "Formats tried" example is what `agentdbg convert` prints; the README names
every format; every real-file fixture says where it comes from."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

import pytest
from test_import_support import IMPORT_FIXTURES

from agentdbg import importers
from agentdbg.cli import main
from agentdbg.engine import events as ev

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "importers.md").read_text(encoding="utf-8")
NAMES = [module.NAME for module in importers.FORMATS]


def section(heading: str) -> str:
    """The text under ``heading`` up to the next heading of the same level or above."""
    level = heading.split(" ")[0]
    start = DOC.index(f"\n{heading}\n") + len(heading) + 2
    following = re.compile(rf"^#{{1,{len(level)}}} ", re.M)
    found = following.search(DOC, start)
    return DOC[start:found.start() if found else len(DOC)]


def table_rows(text: str) -> list[list[str]]:
    """The cells of the first table in ``text``, header and rule left out."""
    lines = [line for line in text.splitlines() if line.startswith("|")]
    first = text.splitlines().index(lines[0])
    block = []
    for line in text.splitlines()[first:]:
        if not line.startswith("|"):
            break
        block.append(line)
    return [[cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]] for line in block[2:]]


def format_name(cell: str) -> str:
    """`name` or [`name`](#anchor) -> name."""
    found = re.match(r"\[?`([^`]+)`", cell)
    assert found, f"no format name in {cell!r}"
    return found.group(1)


def anchors() -> set[str]:
    """The anchors of the doc's headings, as GitHub makes them."""
    headings = re.findall(r"^#+ (.+)$", DOC, re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


GLANCE = {format_name(row[0]): row for row in table_rows(section("## Formats at a glance"))}
GLANCE_COLUMNS = ["format", "runs per file", "steps come from", "tool calls & errors", "tokens",
                  "outcome & verdict", "kept raw"]


def test_the_detection_table_lists_every_format_in_detection_order():
    rows = table_rows(section("## Detection"))
    assert [format_name(row[0]) for row in rows] == NAMES


def test_formats_at_a_glance_has_one_row_per_format_in_detection_order():
    rows = table_rows(section("## Formats at a glance"))
    assert [format_name(row[0]) for row in rows] == NAMES
    header = next(line for line in section("## Formats at a glance").splitlines() if line.startswith("|"))
    assert [cell.strip() for cell in header.split("|")[1:-1]] == GLANCE_COLUMNS
    assert all(len(row) == len(GLANCE_COLUMNS) and all(row) for row in rows), "a row with a missing cell"


def test_every_format_has_its_section_and_the_glance_table_links_to_it():
    known = anchors()
    for name in NAMES:
        assert re.search(rf"^### `{re.escape(name)}`: ", DOC, re.M), f"no section for {name}"
        link = re.match(r"\[`[^`]+`\]\(#([^)]+)\)", GLANCE[name][0])
        assert link, f"the glance row of {name} does not link to its section"
        assert link.group(1) in known, f"{name} links to #{link.group(1)}, which no heading makes"
        assert link.group(1).startswith(re.sub(r"[^\w-]", "", name)), f"{name} links to another section"
    for target in re.findall(r"\]\(#([^)]+)\)", section("## Formats at a glance")):
        assert target in known, f"#{target} is no heading"


def glance_cell(name: str, column: str) -> str:
    """A cell of the glance table; "as `other`" is that format's cell."""
    cell = GLANCE[name][GLANCE_COLUMNS.index(column)]
    same = re.match(r"as `([^`]+)`", cell)
    return glance_cell(same.group(1), column) if same else cell


def fixtures_of(name: str) -> list[Path]:
    """The hand-written fixtures of a format and the real files of it that make runs."""
    made = sorted(p for p in (IMPORT_FIXTURES / name).glob("*") if p.is_file())
    real = sorted(p for p in (IMPORT_FIXTURES / "real" / name).rglob("*") if p.is_file()
                  and p.name not in ("SOURCE.md", "NOTICE") and not p.name.startswith("LICENSE"))
    return made + real


def converted_runs(name: str) -> list[list[ev.Event]]:
    runs = []
    for path in fixtures_of(name):
        try:
            _, result = importers.convert_file(path, name)
        except importers.NotImportable:  # a file kept to show a refusal (a report, HTTP spans)
            continue
        runs.extend(result.runs)
    assert runs, f"no fixture of {name} makes a run"
    return runs


def total_tokens(run: list[ev.Event]) -> int:
    counters = [e for e in run if isinstance(e, ev.GuardCounters)]
    return counters[-1].tokens[0] if counters else 0


@pytest.mark.parametrize("name", NAMES)
def test_the_glance_tables_tokens_and_verdicts_hold_on_the_fixtures(name):
    runs = converted_runs(name)
    tokens = glance_cell(name, "tokens")
    counted = [total_tokens(run) for run in runs]
    if tokens == "none":
        assert not any(counted), f"{name}: the table says it records no usage"
    else:
        assert any(counted), f"{name}: the table says usage is read ({tokens}), no fixture shows it"
    ending = glance_cell(name, "outcome & verdict")
    verdicts = [run[-1].verdict for run in runs if isinstance(run[-1], ev.RunEnd)]
    if "no verdict" in ending:
        assert not any(verdicts), f"{name}: the table says no verdict"
    else:
        assert "verdict:" in ending, f"{name}: the table says nothing of verdicts"
        assert any(verdicts), f"{name}: the table names a verdict, no fixture has one"


def test_the_formats_tried_example_is_what_convert_prints(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    Path("notes.json").write_text('{"notes": [1, 2]}', encoding="utf-8")
    assert main(["convert", "notes.json", "-o", "notes.jsonl"]) == 2
    printed = capsys.readouterr().err
    assert printed.startswith("agentdbg convert: error: ")
    documented = re.search(r"```\n(notes\.json: not a plan.*?)```", section("## Detection"), re.S)
    assert documented, "no 'Formats tried' example under Detection"
    assert printed.removeprefix("agentdbg convert: error: ") == documented.group(1)


# How the README's paragraph on other stacks names each format.
README_NAMES = {
    "inspect-ai": "Inspect AI logs",
    "otlp-protobuf": "binary OTLP protobuf",
    "reflexion": "Reflexion trial logs",
    "react-paper": "ReAct-paper transcripts",
    "webshop": "WebShop printouts",
    "alfworld": "ALFWorld episodes",
    "transcript": "plain-text transcripts",
    "swe-agent": "SWE-agent trajectories",
    "openhands": "OpenHands trajectories",
    "tau-bench": "tau-bench results",
    "mini-swe-agent": "mini-swe-agent trajectories",
    "codex-rollout": "Codex CLI rollouts",
    "claude-code": "Claude Code sessions",
    "gemini-cli": "Gemini CLI chats",
    "vercel-ai-sdk": "Vercel AI SDK results",
    "openai-responses": "OpenAI Responses API",
    "langchain": "LangChain / LangSmith runs",
    "otel-sdk": "the Python SDK's console and JSON dumps",
    "openai-chat": "OpenAI Chat Completions",
    "anthropic-messages": "Anthropic Messages",
    "otel-genai": "GenAI spans in OTLP/JSON",
}


def test_the_readme_names_every_format():
    assert sorted(README_NAMES) == sorted(NAMES), "a format without its README name here, or one gone"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    paragraph = readme[readme.index("## Runs saved by other agent stacks"):]
    paragraph = " ".join(paragraph[:paragraph.index("\n## ", 1)].split())
    for name, words in README_NAMES.items():
        assert words in paragraph, f"README.md does not name {name} ({words!r})"


REAL = IMPORT_FIXTURES / "real"
NOT_FIXTURES = ("SOURCE.md", "NOTICE")


def source_note(path: Path) -> Path | None:
    """The SOURCE.md that describes ``path``: in its folder or one above, within real/."""
    for folder in path.parents:
        if (folder / "SOURCE.md").is_file():
            return folder / "SOURCE.md"
        if folder == REAL:
            return None
    return None


REAL_FILES = sorted(p for p in REAL.rglob("*") if p.is_file() and p.parent.name != "LICENSES"
                    and p.name not in NOT_FIXTURES and not p.name.startswith("LICENSE"))


@pytest.mark.parametrize("path", REAL_FILES, ids=lambda p: str(p.relative_to(REAL)))
def test_every_real_file_says_where_it_comes_from_and_under_what_licence(path):
    note = source_note(path)
    assert note is not None, f"{path.relative_to(REAL)} has no SOURCE.md"
    text = note.read_text(encoding="utf-8")
    named = re.findall(r"`([^`]+)`", text)
    assert any(path.name == n or fnmatch.fnmatch(path.name, n) for n in named), \
        f"{note.relative_to(REAL)} does not name {path.name}"
    made_here = "made for agentdbg" in text.lower()
    assert made_here or re.search(r"licen[cs]e", text, re.I), f"{note.relative_to(REAL)} gives no licence"
    assert made_here or re.search(r"\b[\w.-]+/[\w.-]+\b", text), f"{note.relative_to(REAL)} names no repository"
