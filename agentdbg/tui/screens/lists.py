"""Choosing a run (episode) of a file, and filtering the list."""

from __future__ import annotations

import threading
from functools import partial

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from agentdbg.debugger.filters import parse_filter
from agentdbg.debugger.run_filter import matching_runs
from agentdbg.tui.safe import one_line
from agentdbg.tui.widgets.header import outcome_text

RUN_LIST = 500  # runs listed at once in the run switcher


def describe_run(index: int, run) -> Text:
    title = one_line(getattr(run, "title", "") or run.info.name or f"run {index + 1}", 40)
    text = Text.assemble((f"{index + 1:>3}. ", "bold"), (title, "bold"))
    text.append(f"  {run.step_count:,} step{'s' if run.step_count != 1 else ''}  ", style="dim")
    text.append_text(outcome_text(run))
    text.append("\n     " + one_line(run.info.task, 90), style="dim")
    return text


class RunSwitcher(ModalScreen[int | None]):
    """The runs of a file, each with its outcome and verdict: those around the current one
    (at most ``RUN_LIST``: a file may hold a million). The box above them takes a run
    number (Enter opens that run) or a filter: a run is listed when one of its steps
    matches (``~wrong`` lists the runs a grader judged wrong). The scan runs off the
    screen's thread and stops when the screen closes."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel", id="runs.close"),
                Binding("slash", "focus_filter", "Filter", show=False, id="runs.filter")]

    def __init__(self, runs, current: int, filter_text: str = ""):
        super().__init__(id="runs")
        self.runs = runs
        self.current = current
        self.count = len(runs)
        self.filter_text = filter_text  # the filter applied now ("" lists every run)
        first = max(0, min(current - RUN_LIST // 2, self.count - RUN_LIST))
        self.shown: list[int] = list(range(first, min(first + RUN_LIST, self.count)))
        self._cancel = threading.Event()

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide") as box:
            box.border_title = f"Runs in this file ({self.count:,})"
            box.border_subtitle = "Enter: open · /: filter · Esc: cancel"
            yield Input(self.filter_text, id="run-filter",
                        placeholder="run number, or a filter: ~wrong, ~correct, ~error, ~tool Search (Enter)")
            yield Static(self._window_note(), id="run-filter-status")
            yield OptionList(*self._options(self.shown), id="run-list")

    def _window_note(self) -> Text | str:
        if len(self.shown) >= self.count:
            return ""
        return Text(f"runs {self.shown[0] + 1:,} to {self.shown[-1] + 1:,} of {self.count:,}; "
                    "type a run number and Enter to open any other", style="dim")

    def _options(self, indexes: list[int]) -> list[Option]:
        return [Option(describe_run(i, self.runs[i]), id=str(i)) for i in indexes[:RUN_LIST]]

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        if self.current in self.shown:
            options.highlighted = self.shown.index(self.current)
        options.focus()
        if self.filter_text:
            self.apply_filter(self.filter_text)

    def on_unmount(self) -> None:
        self._cancel.set()

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
        options = self.query_one(OptionList)
        options.clear_options()
        options.add_options(self._options(indexes))
        status = self.query_one("#run-filter-status", Static)
        if text:
            more = f" (the first {RUN_LIST:,} listed)" if len(indexes) > RUN_LIST else ""
            status.update(Text(f"{len(indexes):,} of {self.count:,} runs have a step matching "
                               f"{one_line(text, 80)}{more}", style="bold" if indexes else "yellow"))
        else:
            status.update(self._window_note())
        if indexes:
            listed = indexes[:RUN_LIST]
            options.highlighted = listed.index(self.current) if self.current in listed else 0
            options.focus()

    @on(OptionList.OptionSelected)
    def chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(int(event.option.id or 0))
