"""The header (the run's name, task, outcome and position) and the status line."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from agentdbg.tui.safe import one_line

OUTCOME_STYLES = {"answered": "bold green", "finished": "bold green"}


class RunHeader(Static):
    """``agentdbg │ name │ task │ outcome │ step n / N``."""

    def show(self, run, step: int, run_index: int = 0, run_total: int = 1) -> None:
        self.update(self.describe(run, step, run_index, run_total))

    @staticmethod
    def describe(run, step: int, run_index: int = 0, run_total: int = 1) -> Text:
        text = Text.assemble((" agentdbg ", "bold reverse"))
        if run is None:
            text.append("  no run open", style="dim")
            return text
        name = one_line(getattr(run, "title", "") or run.info.name or "run", 40)
        text.append(f" {name}", style="bold")
        if run_total > 1:
            text.append(f" (run {run_index + 1}/{run_total})", style="dim")
        text.append("  Task: ", style="dim")
        text.append(one_line(run.info.task, 70))
        text.append("  ")
        text.append_text(outcome_text(run))
        count = run.step_count
        more = "" if run.complete else "+"
        text.append(f"  step {step:,}/{count:,}{more}", style="bold")
        return text


def outcome_text(run) -> Text:
    end = run.end
    if end is not None:
        outcome = one_line(end.outcome, 40)
        style = OUTCOME_STYLES.get(outcome, "bold red")
        text = Text.assemble(("outcome: ", "dim"), (outcome, style))
        if end.answer is not None:
            text.append(" (answer: ", style="dim")
            text.append(one_line(end.answer, 30), style=style)
            text.append(")", style="dim")
        return text
    if run.complete:
        return Text("outcome: unknown (no end recorded)", style="yellow")
    if hasattr(run, "advance"):
        return Text("live: runs as you step", style="bold cyan")
    return Text("indexing…", style="bold cyan")


class StatusLine(Static):
    """One line: why the last continue stopped, progress, or what just happened."""

    def say(self, message: str, style: str = "") -> None:
        self.message = message
        self.update(Text(one_line(message, 400), style=style))

    message = ""
