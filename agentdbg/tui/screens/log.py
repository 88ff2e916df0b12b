"""The log (``e``): every stop and break of this session with its full reason (the status
line has room for one line of it), and every problem found reading the file. Enter on a
stop goes back to its step."""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Group
from rich.padding import Padding
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from agentdbg.tui.safe import one_line

LOG_LIMIT = 1000  # stops kept: a continue loop of hours must not grow without end


@dataclass(frozen=True)
class StopEntry:
    """A stop: which run, which step, and every reason it stopped there."""

    run_index: int
    step: int
    reasons: tuple[str, ...]
    at_breakpoint: bool


class StopLog:
    """The stops of this session, oldest first, at most ``LOG_LIMIT``."""

    def __init__(self) -> None:
        self.entries: list[StopEntry] = []
        self.dropped = 0

    def add(self, run_index: int, step: int, reasons: list[str], at_breakpoint: bool) -> None:
        self.entries.append(StopEntry(run_index, step, tuple(reasons), at_breakpoint))
        if len(self.entries) > LOG_LIMIT:
            del self.entries[0]
            self.dropped += 1

    def __len__(self) -> int:
        return len(self.entries)


def describe_stop(entry: StopEntry, runs: int) -> Group:
    """The stop's place, then each reason on its own lines, wrapped under itself."""
    where = f"run {entry.run_index + 1} · " if runs > 1 else ""
    head = Text.assemble(("● " if entry.at_breakpoint else "○ ", "bold red" if entry.at_breakpoint else "dim"),
                         (f"{where}step {entry.step:,}", "bold"))
    reasons = Text("\n").join(Text(one_line(reason, 2000)) for reason in entry.reasons or ("no reason",))
    return Group(head, Padding(reasons, (0, 0, 0, 4)))


def plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


class LogScreen(ModalScreen[StopEntry | None]):
    """Stops (newest first, selectable) above problems."""

    BINDINGS = [Binding("escape,q,e", "dismiss(None)", "Close", id="log.close")]

    def __init__(self, stops: StopLog, problems: list[str], runs: int = 1):
        super().__init__(id="log")
        self.stops = list(reversed(stops.entries))
        self.dropped = stops.dropped
        self.problems = problems
        self.runs = runs

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide") as box:
            box.border_title = f"Log: {plural(len(self.stops), 'stop')}, {plural(len(self.problems), 'problem')}"
            box.border_subtitle = "Enter: go to the stop · Esc: close"
            options: list[Option] = [Option(Text("Stops and breaks (newest first)", style="bold underline"),
                                            disabled=True)]
            if not self.stops:
                options.append(Option(Text("No stop yet: c continues to the next break.", style="dim"),
                                      disabled=True))
            for number, entry in enumerate(self.stops):
                options.append(Option(describe_stop(entry, self.runs), id=f"stop-{number}"))
            if self.dropped:
                options.append(Option(Text(f"({self.dropped:,} older stops not kept)", style="dim"), disabled=True))
            options.append(Option(Text("\nProblems reading the file", style="bold underline"), disabled=True))
            if not self.problems:
                options.append(Option(Text("No problems.", style="dim"), disabled=True))
            for problem in self.problems:
                options.append(Option(Text.assemble(("✗ ", "bold red"), one_line(problem, 2000)), disabled=True))
            yield OptionList(*options, id="log-list")
            if self.problems:
                yield Static(Text("the valid part of the file is open", style="dim"), classes="hint")

    def on_mount(self) -> None:
        listing = self.query_one(OptionList)
        listing.focus()
        if self.stops:
            listing.highlighted = 1

    @on(OptionList.OptionSelected)
    def chosen(self, event: OptionList.OptionSelected) -> None:
        option_id = event.option.id or ""
        if option_id.startswith("stop-"):
            self.dismiss(self.stops[int(option_id.removeprefix("stop-"))])
