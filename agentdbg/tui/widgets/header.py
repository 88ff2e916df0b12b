"""The header (the run's name, task, outcome and position) and the status line."""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

from agentdbg.engine.verdicts import Verdict, format_score
from agentdbg.model.outcome import outcome_style as outcome_style  # named from here too
from agentdbg.model.outcome import verdict_style
from agentdbg.model.runs import Advancing
from agentdbg.tui.safe import one_line


class RunHeader(Widget):
    """``agentdbg  name  Task: ...`` on the left, outcome and position on the right; the
    task is shortened to whatever width is left."""

    DEFAULT_CSS = "RunHeader { height: 1; }"

    def __init__(self, *, id: str | None = None):
        super().__init__(id=id)
        self.left = Text()
        self.right = Text()
        self.note = Text()  # a run still being written: live or finished, and its agent
        self.view = Text()  # a view filter: what it keeps
        self.run_total = 1

    def show(self, run, step: int, run_index: int = 0, run_total: int = 1, view=None) -> None:
        self.run_total = run_total
        self.left, self.right = self.describe(run, step, run_index, run_total)
        self.view = Text()
        if view is not None and run is not None:
            self.view = Text.assemble(("filter ", "dim"), (one_line(view.text, 30), "bold magenta"),
                                      (f" {len(view):,} of {view.scanned:,} steps", "magenta"), "  ")
        self.refresh()

    def set_note(self, note: Text) -> None:
        if note.plain != self.note.plain or note.spans != self.note.spans:
            self.note = note
            self.refresh()

    @property
    def text(self) -> str:
        note = f"{self.note.plain}  " if self.note.plain else ""
        return f"{self.left.plain}  {note}{self.view.plain}{self.right.plain}"

    def render(self) -> Text:
        width = self.size.width
        left = self.left.copy()
        right = self.right
        if self.view.plain:  # the filter before the outcome; where both do not fit, the outcome goes
            position = right.plain.rfind("step ")
            narrow = self.view.cell_len + right.cell_len + self.note.cell_len > width - 16
            right = Text.assemble(self.view, right[position:] if narrow and position >= 0 else right)
        right = Text.assemble(self.note, "  ", right) if self.note.plain else right
        room = max(width - right.cell_len - 1, 0)
        if left.cell_len > room:
            left.truncate(max(room - 1, 0))
            left.append("…")
        left.append(" " * max(width - left.cell_len - right.cell_len, 1))
        left.append_text(right)
        return left

    @staticmethod
    def describe(run, step: int, run_index: int = 0, run_total: int = 1) -> tuple[Text, Text]:
        left = Text.assemble((" agentdbg ", "bold reverse"))
        if run is None:
            left.append("  no run open", style="dim")
            return left, Text()
        name = one_line(getattr(run, "title", "") or run.info.name or "run", 40)
        left.append(f" {name}", style="bold")
        if run_total > 1:
            left.append(f" (run {run_index + 1}/{run_total})", style="dim")
        if run.info.fork:
            left.append(f" ⑂ {one_line(run.info.fork_text(), 80)}", style="bold magenta")
        left.append("  Task: ", style="dim")
        left.append(one_line(run.info.task, 200))
        # A run being written has no outcome yet: the note beside it says it is live.
        right = Text() if getattr(run, "live", False) else outcome_text(run)
        count = run.step_count
        more = "+" if not run.complete else ""
        right.append(f"{'  ' if right.plain else ''}step {step:,}/{count:,}{more} ", style="bold")
        return left, right




def outcome_text(run) -> Text:
    """``outcome: answered, wrong (answer: SUPPORTS, expected: REFUTES)``."""
    end = run.end
    if end is not None:
        outcome = one_line(end.outcome, 40)
        style = outcome_style(outcome, end.answer is not None)
        text = Text.assemble(("outcome: ", "dim"), (outcome, style))
        verdict = Verdict.read(end)
        if verdict is not None:
            text.append(", ", style="dim")
            text.append(verdict.word, style=verdict_style(verdict))
        shown = []
        if end.answer is not None:
            shown.append(("answer: ", one_line(end.answer, 30), style))
        if verdict is not None and verdict.expected is not None and verdict.correct is not True:
            shown.append(("expected: ", one_line(verdict.expected, 30), "bold"))  # what it should have said
        if verdict is not None and verdict.shows_score and verdict.correct is not None:
            shown.append(("score ", format_score(verdict.score), "bold"))  # partial credit
        for index, (label, value, value_style) in enumerate(shown):
            text.append((" (" if index == 0 else ", ") + label, style="dim")
            text.append(value, style=value_style)
        if shown:
            text.append(")", style="dim")
        return text
    if run.complete:
        return Text("outcome: unknown (no end recorded)", style="yellow")
    if getattr(run, "live", False):
        return Text("outcome: not yet", style="dim")
    if isinstance(run, Advancing):
        return Text("live run", style="bold cyan")
    return Text("indexing…", style="bold cyan")


FULL_REASON_HINT = " … e: full reason"


class StatusLine(Widget):
    """One line: why the last continue stopped, progress, or what just happened."""

    DEFAULT_CSS = "StatusLine { height: 1; }"

    def __init__(self, *, id: str | None = None):
        super().__init__(id=id)
        self.message = ""
        self._text = Text()

    def say(self, message: str, style: str = "") -> None:
        self.message = message
        self._text = Text(one_line(message, 400), style=style, no_wrap=True, overflow="ellipsis")
        self.refresh()

    def render(self) -> Text:
        text, width = self._text, self.content_size.width
        if self.message.startswith("Stopped at") and text.cell_len > width > 2 * len(FULL_REASON_HINT):
            # A stop's reasons cut short: say where they are in full.
            cut = text.copy()
            cut.truncate(width - len(FULL_REASON_HINT))
            cut.append(FULL_REASON_HINT, style="dim")
            return cut
        return text
