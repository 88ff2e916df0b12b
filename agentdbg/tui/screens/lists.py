"""Choosing a run (episode) of a file, and reading the problems found in a file."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.validation import Function
from textual.widgets import Input, Label, OptionList, Static
from textual.widgets.option_list import Option

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
    """The runs of the file around the current one (at most ``RUN_LIST``: a file may hold
    a million); a run number typed in the box opens any run."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel")]

    def __init__(self, runs, current: int):
        super().__init__(id="runs")
        self.runs = runs
        self.current = current
        self.count = len(runs)
        self.first = max(0, min(current - RUN_LIST // 2, self.count - RUN_LIST))

    def compose(self) -> ComposeResult:
        shown = range(self.first, min(self.first + RUN_LIST, self.count))
        with Vertical(classes="dialog wide") as box:
            box.border_title = f"Runs in this file ({self.count:,})"
            box.border_subtitle = "Enter: open · Esc: cancel"
            if len(shown) < self.count:
                yield Label(f"Runs {shown.start + 1:,} to {shown.stop:,} of {self.count:,}; "
                            "type a run number and Enter to open any other:", markup=False)
                yield Input(placeholder="run number", id="run-number",
                            validators=[Function(self._valid, f"a run number from 1 to {self.count:,}")])
            yield OptionList(*(Option(describe_run(i, self.runs[i]), id=str(i)) for i in shown), id="run-list")

    def _valid(self, value: str) -> bool:
        return value.strip().isdigit() and 1 <= int(value.strip()) <= self.count

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        options.highlighted = self.current - self.first
        options.focus()

    @on(OptionList.OptionSelected)
    def chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(int(event.option.id or 0))

    @on(Input.Submitted, "#run-number")
    def typed(self, event: Input.Submitted) -> None:
        if self._valid(event.value):
            self.dismiss(int(event.value.strip()) - 1)


class ProblemsScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,e", "dismiss", "Close")]

    def __init__(self, problems: list[str]):
        super().__init__(id="problems")
        self.problems = problems

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="dialog wide") as box:
            box.border_title = f"Problems ({len(self.problems)})"
            box.border_subtitle = "the valid part of the file is open · Esc: close"
            if not self.problems:
                yield Static(Text("No problems.", style="dim"))
            for problem in self.problems:
                yield Static(Text.assemble(("✗ ", "bold red"), one_line(problem, 2000)), classes="problem")
