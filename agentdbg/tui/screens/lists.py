"""Choosing a run (episode) of a file, and reading the problems found in a file."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from agentdbg.tui.safe import one_line
from agentdbg.tui.widgets.header import outcome_text


def describe_run(index: int, run) -> Text:
    title = one_line(getattr(run, "title", "") or run.info.name or f"run {index + 1}", 40)
    text = Text.assemble((f"{index + 1:>3}. ", "bold"), (title, "bold"))
    text.append(f"  {run.step_count:,} step{'s' if run.step_count != 1 else ''}  ", style="dim")
    text.append_text(outcome_text(run))
    text.append("\n     " + one_line(run.info.task, 90), style="dim")
    return text


class RunSwitcher(ModalScreen[int | None]):
    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel")]

    def __init__(self, runs: list, current: int):
        super().__init__(id="runs")
        self.runs = runs
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide") as box:
            box.border_title = f"Runs in this file ({len(self.runs)})"
            box.border_subtitle = "Enter: open · Esc: cancel"
            yield OptionList(*(Option(describe_run(i, run), id=str(i)) for i, run in enumerate(self.runs)),
                             id="run-list")

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        options.highlighted = self.current
        options.focus()

    @on(OptionList.OptionSelected)
    def chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(int(event.option.id or 0))


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
