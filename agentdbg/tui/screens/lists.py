"""Choosing a run (episode) of a file, and filtering the list."""

from __future__ import annotations

import threading
import time
from functools import partial

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Input, Static

from agentdbg.debugger.filters import parse_filter
from agentdbg.debugger.run_filter import matching_runs
from agentdbg.debugger.triage import RunSummary, Summaries
from agentdbg.model.outcome import outcome_style, verdict_style
from agentdbg.tui.safe import one_line

RUN_LIST = 500  # runs listed at once in the run switcher
SORT_RUNS = 5_000  # runs a sort orders (the file's, or a filter's picks): the first this many
FILL_BATCH_SECONDS = 0.2  # summaries read in the background reach the table this often (each repaints it)
# Sortable columns: key, header, default order descending (the largest first).
COLUMNS = (("run", "run", False), ("name", "name", False), ("outcome", "outcome", False),
           ("verdict", "verdict", False), ("steps", "steps", True), ("errors", "err", True),
           ("repeats", "rep", True), ("tokens", "tokens", True))
SORTS = ("run", "outcome", "verdict", "steps", "errors", "repeats", "tokens")  # the order s goes through
VERDICT_ORDER = {"wrong": 0, "correct": 3}  # a score without a judgement between, no verdict after


def run_title(index: int, run) -> str:
    try:
        title = getattr(run, "title", "") or run.info.name or run.info.task or f"run {index + 1}"
        return f"⑂ {run.info.fork_text()}: {title}" if run.info.fork else title
    except (ValueError, OSError):
        return f"run {index + 1}"


def sort_key(column: str, index: int, summary: RunSummary | None):
    """What a column sorts by; a run whose summary is unknown sorts last either way."""
    if summary is None:
        return (1, 0)
    if column == "run":
        return (0, index)
    if column == "name":
        return (0, summary.title.casefold())
    if column == "outcome":
        return (0, summary.outcome or "")
    if column == "verdict":
        verdict = summary.verdict
        return (0, 2.5 if verdict is None else VERDICT_ORDER.get(verdict.word, 1))
    if column == "tokens":
        return (0, summary.tokens if summary.tokens is not None else -1)
    return (0, getattr(summary, column))



class RunTable(DataTable):
    """The run list's table: Home and End go to the first and last run, as in every list here
    (a plain table only scrolls)."""

    BINDINGS = [Binding("home", "scroll_top", "First run", show=False, id="runs.first"),
                Binding("end", "scroll_bottom", "Last run", show=False, id="runs.last")]

class RunSwitcher(ModalScreen[int | None]):
    """The runs of a file as a table: outcome, verdict, steps, errors, repeats and tokens
    per run (a failing run is marked), those around the current one (at most
    ``RUN_LIST``: a file may hold a million). Columns other than the step count are read
    off the screen's thread, a run at a time, and filled in as they come. ``s`` / ``S``
    (or a click on a header) sort the runs listed. The box above takes a run number
    (Enter opens that run) or a filter: a run is listed when one of its steps matches
    (``~wrong`` lists the runs a grader judged wrong). Scans stop when the screen closes."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel", id="runs.close"),
                Binding("slash", "focus_filter", "Filter", show=False, id="runs.filter"),
                Binding("s", "next_sort", "Sort", show=False, id="runs.sort"),
                Binding("S", "reverse_sort", "Reverse", show=False, id="runs.reverse_sort")]

    def __init__(self, runs, current: int, filter_text: str = "", summaries: Summaries | None = None,
                 sort: tuple[str, bool] | None = None):
        super().__init__(id="runs")
        self.runs = runs
        self.current = current
        self.count = len(runs)
        self.filter_text = filter_text  # the filter applied now ("" lists every run)
        self.summaries = summaries if summaries is not None else Summaries(runs)
        self.sort = sort  # (column, descending), None: in the file's order
        first = max(0, min(current - RUN_LIST // 2, self.count - RUN_LIST))
        self.shown: list[int] = list(range(first, min(first + RUN_LIST, self.count)))
        self.matches: list[int] | None = None  # a filter's picks (None: no filter)
        self.listed: list[int] = []  # the rows of the table, in order
        self._cancel = threading.Event()
        self._fill_cancel = threading.Event()
        self._filled = False
        self._status: Text | str = ""  # what the line under the box says (a sort in progress aside)

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide") as box:
            box.border_title = f"Runs in this file ({self.count:,})"
            box.border_subtitle = "Enter: open · /: filter · s S: sort · Esc: cancel"
            yield Input(self.filter_text, id="run-filter",
                        placeholder="run number, or a filter: ~wrong, ~outcome budget, ~tool search & ~error (Enter)")
            self._status = self._window_note()
            yield Static(self._status, id="run-filter-status")
            yield RunTable(id="run-list", cursor_type="row", zebra_stripes=False)

    def _window_note(self) -> Text | str:
        if len(self.shown) >= self.count:
            return ""
        return Text(f"runs {self.shown[0] + 1:,} to {self.shown[-1] + 1:,} of {self.count:,}; "
                    "type a run number and Enter to open any other", style="dim")

    # --- the table --------------------------------------------------------------------
    def _widths(self) -> dict[str, int]:
        """Column widths for the table's width: the name takes what the others leave."""
        room = max(min(150, self.app.size.width * 96 // 100) - 4, 40)  # the dialog (app.tcss) less border, padding
        wide = room >= 90
        widths = {"run": max(len(f"{self.count:,}") + 2, 5), "outcome": 16 if wide else 12, "verdict": 9 if wide else 7,
                  "steps": 7 if wide else 5, "errors": 5 if wide else 3, "repeats": 5 if wide else 3,
                  "tokens": 9 if wide else 6}
        used = sum(widths.values()) + 2 * len(COLUMNS) + 2  # cell padding and the scrollbar
        widths["name"] = max(room - used, 8)
        return widths

    def _build_columns(self) -> None:
        table = self.query_one("#run-list", DataTable)
        table.clear(columns=True)
        widths = self._widths()
        for key, header, _ in COLUMNS:
            label = header
            if self.sort is not None and self.sort[0] == key:
                label += " ▼" if self.sort[1] else " ▲"
            table.add_column(label, key=key, width=max(widths[key], len(label)))

    def _cells(self, index: int) -> list:
        run = self.runs[index]
        summary = self.summaries.known(index)
        mark = Text("✗ ", style="bold red") if summary is not None and summary.failing else Text("  ")
        number = Text.assemble(mark, (f"{index + 1:,}", "bold" if index == self.current else ""))
        title = Text(one_line(run_title(index, run), 200), style="bold" if index == self.current else "")
        if summary is None:
            pending = Text("…", style="dim")
            return [number, title, pending, pending, Text(f"{run.step_count:,}", justify="right"),
                    pending, pending, pending]
        outcome = summary.outcome
        if outcome is None:
            outcome_cell = Text("no end" if summary.complete else "running", style="yellow")
        else:
            outcome_cell = Text(one_line(outcome, 40), style=outcome_style(outcome, summary.answered))
        verdict = summary.verdict
        verdict_cell = Text("") if verdict is None else Text(
            verdict.word, style=verdict_style(verdict))

        def count(value: int | None, style: str) -> Text:
            if value is None:
                return Text("", justify="right")
            return Text(f"{value:,}", style=style if value else "dim", justify="right")

        return [number, title, outcome_cell, verdict_cell, count(summary.steps, ""),
                count(summary.errors, "bold red"), count(summary.repeats, "bold yellow"), count(summary.tokens, "")]

    @property
    def sorting(self) -> bool:
        return self.sort is not None and self.sort != ("run", False)

    def _pool(self) -> list[int]:
        """The runs the table is made from: those shown; sorted, the file's runs or the
        filter's picks (their first ``SORT_RUNS``), of which the first ``RUN_LIST`` are listed."""
        if not self.sorting:
            return self.shown[:RUN_LIST]
        if self.matches is not None:
            return self.matches[:SORT_RUNS]
        return list(range(min(self.count, SORT_RUNS)))

    def _order(self, indexes: list[int]) -> list[int]:
        if not self.sorting:
            return indexes[:RUN_LIST]
        column, descending = self.sort
        keyed = [(sort_key(column, i, self.summaries.known(i)), i) for i in indexes]
        known = sorted((pair for pair in keyed if pair[0][0] == 0), key=lambda pair: pair[0], reverse=descending)
        ordered = [i for _, i in known] + [i for key, i in keyed if key[0] != 0]  # stable: ties keep run order
        return ordered[:RUN_LIST]

    def _highlighted(self) -> int | None:
        """The run the cursor is on (None when the table is empty)."""
        row = self.query_one("#run-list", DataTable).cursor_row
        return self.listed[row] if 0 <= row < len(self.listed) else None

    def _fill_table(self, highlighted: int | None = None) -> None:
        table = self.query_one("#run-list", DataTable)
        if highlighted is None:
            highlighted = self._highlighted()
        table.clear()
        self.listed = self._order(self._pool())
        for index in self.listed:
            table.add_row(*self._cells(index), key=str(index))
        target = highlighted if highlighted in self.listed else (self.current if self.current in self.listed else None)
        if target is not None:
            table.move_cursor(row=self.listed.index(target), animate=False)

    def on_mount(self) -> None:
        self._build_columns()
        self._fill_table()
        self.query_one("#run-list", DataTable).focus()
        self._start_summaries()
        if self.filter_text:
            self.apply_filter(self.filter_text)

    def on_unmount(self) -> None:
        self._cancel.set()
        self._fill_cancel.set()

    def on_resize(self) -> None:
        highlighted = self._highlighted()
        self._build_columns()
        self._fill_table(highlighted)

    # --- summaries, read in the background ----------------------------------------------
    def _start_summaries(self) -> None:
        self._fill_cancel.set()
        cancel = self._fill_cancel = threading.Event()
        listed = set(self.listed)  # the rows on screen first, then the rest a sort needs
        pool = self._pool()
        wanted = [i for i in pool if i in listed] + [i for i in pool if i not in listed]
        wanted = [i for i in wanted if self.summaries.known(i) is None]
        self._filled = not wanted
        if wanted:
            self.run_worker(partial(self._read_summaries, wanted, cancel), thread=True, group="run-summaries")

    def _read_summaries(self, wanted: list[int], cancel: threading.Event) -> None:
        batch: list[int] = []
        last = time.monotonic()
        for done, index in enumerate(wanted, 1):
            if cancel.is_set():
                return
            self.summaries.get(index)
            batch.append(index)
            if time.monotonic() - last >= FILL_BATCH_SECONDS:
                self.app.call_from_thread(self._update_rows, batch, cancel, False, (done, len(wanted)))
                batch, last = [], time.monotonic()
        if not cancel.is_set():
            self.app.call_from_thread(self._update_rows, batch, cancel, True, (len(wanted), len(wanted)))

    def _update_rows(self, indexes: list[int], cancel: threading.Event, done: bool,
                     progress: tuple[int, int] = (0, 0)) -> None:
        if cancel.is_set():
            return
        if self.sorting and not done:
            self.query_one("#run-filter-status", Static).update(
                Text(f"reading runs to sort them: {progress[0]:,} of {progress[1]:,}…", style="bold cyan"))
        table = self.query_one("#run-list", DataTable)
        keys = [key for key, _, _ in COLUMNS]
        listed = set(self.listed)
        for index in indexes:
            if index not in listed:
                continue
            for key, value in zip(keys, self._cells(index), strict=True):
                table.update_cell(str(index), key, value)
        if done:
            self._filled = True
            if self.sorting:
                self._fill_table()  # every run known now: sorted for real
                self.query_one("#run-filter-status", Static).update(self._sort_note())

    def _sort_note(self) -> Text | str:
        """What the status line says of a sort over more runs than are listed."""
        pool = len(self.matches) if self.matches is not None else self.count
        if not self.sorting or pool <= RUN_LIST:
            return self._status
        which = "of the runs picked" if self.matches is not None else "runs"
        if pool > SORT_RUNS:
            return Text(f"sorted: the first {SORT_RUNS:,} {which} of {pool:,} (the top {RUN_LIST:,} listed)", style="yellow")
        return Text(f"sorted: all {pool:,} {which} (the top {RUN_LIST:,} listed)", style="bold")

    # --- sorting ----------------------------------------------------------------------
    def set_sort(self, column: str, descending: bool | None = None) -> None:
        default = {key: desc for key, _, desc in COLUMNS}[column]
        self.sort = (column, default if descending is None else descending)
        highlighted = self._highlighted()
        self._build_columns()
        self._fill_table(highlighted)
        self._start_summaries()
        if not self._filled:
            self.query_one("#run-filter-status", Static).update(Text("reading runs to sort them…", style="bold cyan"))
        else:
            self.query_one("#run-filter-status", Static).update(self._sort_note())

    def action_next_sort(self) -> None:
        current = self.sort[0] if self.sort is not None else "run"
        following = SORTS[(SORTS.index(current) + 1) % len(SORTS)] if current in SORTS else SORTS[0]
        self.set_sort(following)

    def action_reverse_sort(self) -> None:
        column, descending = self.sort if self.sort is not None else ("run", False)
        self.set_sort(column, not descending)

    @on(DataTable.HeaderSelected)
    def header_clicked(self, event: DataTable.HeaderSelected) -> None:
        column = str(event.column_key.value)
        if self.sort is not None and self.sort[0] == column:
            self.set_sort(column, not self.sort[1])
        else:
            self.set_sort(column)

    # --- the filter box -----------------------------------------------------------------
    def action_focus_filter(self) -> None:
        self.query_one("#run-filter", Input).focus()

    @on(Input.Submitted, "#run-filter")
    def filter_submitted(self, event: Input.Submitted) -> None:
        value = event.value.strip()
        if value.isdigit():
            if 1 <= int(value) <= self.count:
                self.dismiss(int(value) - 1)
            else:
                self.query_one("#run-filter-status", Static).update(
                    Text(f"no run {one_line(value, 20)}: runs are numbered 1 to {self.count:,}", style="bold red"))
            return
        self.apply_filter(value)

    def apply_filter(self, text: str) -> None:
        self._cancel.set()  # a scan still running for the previous filter stops
        status = self.query_one("#run-filter-status", Static)
        text = text.strip()
        if not text:
            self.filter_text = ""
            first = max(0, min(self.current - RUN_LIST // 2, self.count - RUN_LIST))
            self.show_runs(list(range(first, min(first + RUN_LIST, self.count))), "")
            return
        try:
            flt = parse_filter(text)
        except ValueError as exc:
            status.update(Text(f"filter not applied: {one_line(str(exc), 200)}", style="bold red"))
            return
        self.filter_text = text
        cancel = self._cancel = threading.Event()
        status.update(Text(f"looking for runs with a step matching {one_line(text, 80)}…", style="bold cyan"))
        self.run_worker(partial(self._scan, flt, text, cancel), thread=True, exclusive=True, group="run-filter")

    def _scan(self, flt, text: str, cancel: threading.Event) -> None:
        picked = matching_runs(self.runs, flt, cancel)
        if picked is not None and not cancel.is_set():
            self.app.call_from_thread(self.show_runs, picked, text)

    def show_runs(self, indexes: list[int], text: str) -> None:
        if text != self.filter_text:
            return  # a newer filter was applied meanwhile
        self.shown = indexes
        self.matches = indexes if text else None
        self._fill_table()
        self._start_summaries()
        status = self.query_one("#run-filter-status", Static)
        if text:
            more = f" (the first {RUN_LIST:,} listed)" if len(indexes) > RUN_LIST and not self.sorting else ""
            self._status = Text(f"{len(indexes):,} of {self.count:,} runs have a step matching "
                                f"{one_line(text, 80)}{more}", style="bold" if indexes else "yellow")
        else:
            self._status = self._window_note()
        status.update(self._status)
        if indexes:
            self.query_one("#run-list", DataTable).focus()

    @on(DataTable.RowSelected)
    def chosen(self, event: DataTable.RowSelected) -> None:
        self.dismiss(int(event.row_key.value or 0))

