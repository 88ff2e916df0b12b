"""Steps as a table, one row per step of every run, for DuckDB, Spark or pandas.

``COLUMNS`` is the schema: where the step is (file, run, step), what it did (tool, args,
thought, observation, answer), how it went (error kind and message, repeat, guard
counters, tokens) and how its run ended (outcome, verdict). Run-level columns repeat on
each of the run's rows, so a query needs no join: ``select file, run, count(*) from t
where error_kind is not null group by all``.

Rows are made one step at a time and written as they come: CSV and JSON Lines line by
line, Parquet (with pyarrow, ``pip install "agentdbg[table]"``) in row groups of
``ROW_GROUP`` rows; no more than one row group is held. Long texts are cut to
``max_text`` characters; their ``*_chars`` column keeps the full length.

A CSV is opened by spreadsheets and printed on terminals, and a trace's text is an
attacker's: each text cell is quoted (a ``;`` cannot start a cell where it separates
them), one that a spreadsheet would run as a formula (``=HYPERLINK(...)``, ``+``, ``-``,
``@``, a tab or CR first) gets a ``'`` first, and what a terminal obeys is written as
``<U+001B>`` (``agentdbg.text.escape_visible``). Numbers stay numbers: ``-3`` is not text.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from typing import Any

from agentdbg.engine.verdicts import Verdict
from agentdbg.exporters.output import to_json
from agentdbg.outputs import AtomicOutput
from agentdbg.text import escape_visible

ROW_GROUP = 50_000  # Parquet rows written at a time
MAX_TEXT = 4096  # characters kept of a long text by default

# (name, type, what): the types are Parquet's (string, int64, bool, double).
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("file", "string", "the file the run was read from"),
    ("run", "int64", "the run's number in its file (1-based)"),
    ("run_name", "string", "the run's name"),
    ("task", "string", "the run's task (cut)"),
    ("step", "int64", "the step's number in its run (1-based)"),
    ("tool", "string", "the tool called (null: no call)"),
    ("args", "string", "the call's arguments: text, or JSON for an object"),
    ("thought", "string", "the thought (cut)"),
    ("observation", "string", "the observation (cut)"),
    ("observation_chars", "int64", "the observation's full length in characters"),
    ("answer", "string", "the final answer given in this step"),
    ("error_kind", "string", "unknown_tool, bad_args, exception, timeout, policy, ...; parse for a parse error"),
    ("error", "string", "the error message (cut)"),
    ("observation_error", "bool", "the observation is an error"),
    ("repeat", "bool", "the action repeats an earlier one"),
    ("repeats", "int64", "the repeat counter after this step"),
    ("consecutive_errors", "int64", "the error-streak counter after this step"),
    ("step_tokens", "int64", "tokens this step cost"),
    ("total_tokens", "int64", "the run's tokens after this step"),
    ("tripped", "string", "the guard that stopped the run in this step"),
    ("decision", "string", "a dangerous call's decision: approved, denied, edited"),
    ("raw_records", "int64", "records of the step an import could not map"),
    ("outcome", "string", "how the run ended (null: no end recorded)"),
    ("verdict", "string", "the grader's verdict on the run: correct, wrong, score 0.5"),
    ("correct", "bool", "the grader judged the run correct (null: no judgement)"),
    ("score", "double", "the grader's score"),
)
NAMES = tuple(name for name, _, _ in COLUMNS)
# What a spreadsheet reads as the start of a formula (OWASP's list), after any spaces, and
# the quote that marks a cell as neutralised (so a text that begins with one gets one too).
FORMULA_FIRST = frozenset("=+-@\t\r'")
FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}


class MissingDependency(Exception):
    """Parquet asked for without pyarrow installed."""


def _cut(text: Any, limit: int) -> str | None:
    if text is None:
        return None
    text = text if isinstance(text, str) else to_json(text)
    return text[:limit] if limit and len(text) > limit else text


def _counter(pair: Any) -> int | None:
    value = pair[0] if isinstance(pair, (list, tuple)) and pair else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def run_columns(path: str, number: int, run: Any, max_text: int) -> dict[str, Any]:
    """The columns every row of a run shares."""
    end = run.end
    verdict = Verdict.read(end) if end is not None else None
    info = run.info
    return {"file": path, "run": number, "run_name": info.name or getattr(run, "title", "") or None,
            "task": _cut(info.task, max_text), "outcome": end.outcome if end is not None else None,
            "verdict": verdict.word if verdict is not None else None,
            "correct": verdict.correct if verdict is not None else None,
            "score": float(verdict.score) if verdict is not None and verdict.score is not None else None}


def step_row(shared: dict[str, Any], record: Any, max_text: int) -> dict[str, Any]:
    guards = record.guards
    args = record.args
    observation = record.observation
    if record.parse_error is not None:
        kind, error = "parse", record.parse_error
    else:
        kind, error = record.error_kind, record.error
    row = dict(shared)
    row.update({
        "step": record.step,
        "tool": record.tool,
        "args": None if args is None else args if isinstance(args, str) else to_json(args),
        "thought": _cut(record.thought or None, max_text),
        "observation": _cut(observation, max_text),
        "observation_chars": len(observation) if isinstance(observation, str) else None,
        "answer": _cut(record.answer, max_text),
        "error_kind": kind,
        "error": _cut(error, max_text),
        "observation_error": bool(record.observation_error),
        "repeat": bool(record.is_repeat),
        "repeats": _counter(guards.repeats) if guards is not None else None,
        "consecutive_errors": _counter(guards.errors) if guards is not None else None,
        "step_tokens": guards.step_tokens if guards is not None and isinstance(guards.step_tokens, int) else None,
        "total_tokens": _counter(guards.tokens) if guards is not None else None,
        "tripped": record.tripped.guard if record.tripped is not None else None,
        "decision": record.decision,
        "raw_records": len(record.raw),
    })
    return row


def _text_safe(value: Any) -> Any:
    """A string any encoder takes: lone surrogates (which UTF-8 cannot hold) become U+FFFD."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return value


# -- writers ------------------------------------------------------------------------------


class _Writer:
    def __init__(self, output: AtomicOutput):
        self.output = output
        self.rows = 0

    def write(self, row: dict[str, Any]) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass


def csv_text(text: str) -> str:
    """A text cell's content, safe to open in a spreadsheet and to print: a ``'`` before
    one that would start a formula (or begins with ``'``), terminal controls and invisible
    characters as ``<U+XXXX>``. The exact text is ``unescape_visible`` of the cell without
    its first ``'``."""
    text = escape_visible(text)
    if text and (text[0] in FORMULA_FIRST or text.lstrip()[:1] in FORMULA_FIRST):
        return "'" + text
    return text


def csv_cell(value: Any) -> str:
    """One CSV field: nothing for null, a number or bool as it is, text quoted."""
    if value is None:
        return ""
    if isinstance(value, str):
        return '"' + csv_text(value).replace('"', '""') + '"'
    return str(value)


class CsvWriter(_Writer):
    def __init__(self, output: AtomicOutput):
        super().__init__(output)
        self._buffer = io.StringIO()
        self._buffer.write(",".join(NAMES) + "\n")

    def write(self, row: dict[str, Any]) -> None:
        self._buffer.write(",".join([csv_cell(row[name]) for name in NAMES]) + "\n")
        self.rows += 1
        if self._buffer.tell() > 1 << 20:
            self._flush()

    def _flush(self) -> None:
        self.output.write(self._buffer.getvalue())
        self._buffer.seek(0)
        self._buffer.truncate()

    def close(self) -> None:
        self._flush()


class JsonLinesWriter(_Writer):
    def write(self, row: dict[str, Any]) -> None:
        self.output.write(to_json({name: row[name] for name in NAMES}) + "\n")
        self.rows += 1


class ParquetWriter(_Writer):
    def __init__(self, output: AtomicOutput, row_group: int | None = None):
        super().__init__(output)
        pa, pq = _pyarrow()
        types = {"string": pa.string(), "int64": pa.int64(), "bool": pa.bool_(), "double": pa.float64()}
        self._pa = pa
        self.schema = pa.schema([(name, types[kind]) for name, kind, _ in COLUMNS])
        self._writer = pq.ParquetWriter(output._file, self.schema, compression="zstd")
        self._row_group = row_group or ROW_GROUP
        self._batch: dict[str, list] = {name: [] for name in NAMES}
        self._held = 0

    def write(self, row: dict[str, Any]) -> None:
        batch = self._batch
        for name in NAMES:
            batch[name].append(_text_safe(row[name]))
        self._held += 1
        self.rows += 1
        if self._held >= self._row_group:
            self._flush()

    def _flush(self) -> None:
        if self._held:
            self._writer.write_table(self._pa.Table.from_pydict(self._batch, schema=self.schema))
            self._batch = {name: [] for name in NAMES}
            self._held = 0

    def close(self) -> None:
        self._flush()
        self._writer.close()


def _pyarrow():
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise MissingDependency('writing Parquet needs pyarrow: pip install "agentdbg[table]" '
                                "(or write .csv or .jsonl, which need nothing more)") from None
    return pa, pq


def format_of(path: str, forced: str | None = None) -> str:
    """parquet, csv or jsonl, from ``forced`` or the file's extension; ValueError if neither says."""
    if forced:
        if forced not in set(FORMATS.values()):
            raise ValueError(f"--table-format {forced}: choose parquet, csv or jsonl")
        return forced
    for suffix, name in FORMATS.items():
        if path.lower().endswith(suffix):
            return name
    raise ValueError(f"{path}: say the table's format by its extension (.parquet, .csv, .jsonl) "
                     "or with --table-format")


def open_writer(kind: str, output: AtomicOutput) -> _Writer:
    if kind == "parquet":
        return ParquetWriter(output)
    return CsvWriter(output) if kind == "csv" else JsonLinesWriter(output)


def rows_of(path: str, runs: Iterable[tuple[int, Any]], records, max_text: int = MAX_TEXT) -> Iterator[dict[str, Any]]:
    """Every step of ``runs`` as a row; ``records(run)`` yields a run's steps in order."""
    for number, run in runs:
        shared = run_columns(path, number, run, max_text)
        for record in records(run):
            yield step_row(shared, record, max_text)

