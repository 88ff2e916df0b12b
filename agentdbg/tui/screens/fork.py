"""The fork dialog (E): change the thought, action or observation of a step, then run the
rest again as a new run. An action is read by the run's own parser as it is typed: a
mistake is shown in place and the dialog stays open. ctrl+s forks, Esc cancels.
Everything from the run is shown (and edited) as plain text: control characters are
left out of the text the editor opens with."""

from __future__ import annotations

import json

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, RadioButton, RadioSet, Static, TextArea

from agentdbg.engine.step_edit import FORK_EDITS, StepEdit, action_edit
from agentdbg.fork import ForkError, check_editable
from agentdbg.model.state import StepRecord
from agentdbg.tui.safe import clipped, one_line

TEXT_SHOWN = 100_000  # characters of the step's text put in the editor

WHAT_HAPPENS = {
    "thought": "The action is kept and runs again; later steps see this thought.",
    "action": "This action runs instead (its thought is kept).",
    "observation": "The call is not run; the policy reads this text (ERROR: ... makes it an error).",
}


def current_text(record: StepRecord, part: str, format: str) -> str:
    """What the step holds now, written the way the dialog reads it back."""
    if part == "thought":
        return record.thought
    if part == "observation":
        return record.observation or ""
    if record.parse_error is not None:
        return record.output
    structured = format in ("plan", "script")
    if record.tool is None:
        answer = record.answer or ""
        if structured:
            return f"finish {answer}".rstrip()
        return f"Finish[{answer}]" if format == "numbered" else f"Final Answer: {answer}"
    if structured or format == "json":
        args = record.args if isinstance(record.args, dict) else {}
        return f"{record.tool} {json.dumps(args, ensure_ascii=False)}" if args else record.tool
    return record.call


def step_summary(record: StepRecord) -> Text:
    """The step as it was, on one line: ``now: catalog[Il Gattopardo] → 5``."""
    if record.parse_error is not None:
        did = f"unreadable output: {record.parse_error}"
    elif record.tool is None:
        did = f"final answer: {record.answer or ''}"
    else:
        did = record.call or record.tool
        if record.observation is not None:
            did += f" → {record.observation}"
    return Text.assemble(("now: ", "dim bold"), (one_line(did, 300), "dim"))


class ForkScreen(ModalScreen[StepEdit | None]):
    """Answers the edit to fork with, or None."""

    BINDINGS = [Binding("escape", "cancel", "Cancel"), Binding("ctrl+s", "fork", "Fork")]

    def __init__(self, record: StepRecord, format: str, run_label: str = ""):
        super().__init__(id="fork")
        self.record = record
        self.format = format
        self.run_label = run_label
        # Shown as plain text: control characters out, a huge observation cut (it is being replaced).
        self.texts = {part: clipped(current_text(record, part, format), TEXT_SHOWN) for part in FORK_EDITS}
        self.part = next((p for p in ("observation", "action", "thought") if self._problem(p) is None), "action")
        self.edit: StepEdit | None = None

    def _problem(self, part: str) -> str | None:
        try:
            check_editable(self.record, part)
        except ForkError as exc:
            return str(exc)
        return None

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog") as box:
            box.border_title = f"Fork at step {self.record.step}"
            box.border_subtitle = "ctrl+s: fork · Tab: next · Esc: cancel"
            yield Label(one_line(f"Change one part of step {self.record.step} of {self.run_label or 'this run'}; "
                                 "the rest runs again as a new run.", 300), markup=False)
            yield Static(step_summary(self.record), id="fork-step")
            with RadioSet(id="fork-part"):
                for part in FORK_EDITS:
                    yield RadioButton(part, value=part == self.part, id=f"fork-{part}")
            yield TextArea(self.texts[self.part], id="fork-text", soft_wrap=True, show_line_numbers=False)
            yield Static("", id="fork-check")

    def on_mount(self) -> None:
        self.query_one(TextArea).focus()
        self.check()

    @on(RadioSet.Changed)
    def part_changed(self, event: RadioSet.Changed) -> None:
        self.texts[self.part] = self.query_one(TextArea).text
        self.part = FORK_EDITS[event.index]
        self.query_one(TextArea).load_text(self.texts[self.part])
        self.check()

    @on(TextArea.Changed)
    def text_changed(self) -> None:
        self.check()

    def check(self) -> bool:
        """Show what the edit will do, or what is wrong with it; True when it can fork."""
        shown = self.query_one("#fork-check", Static)
        text = self.query_one(TextArea).text
        self.edit = None
        problem = self._problem(self.part)
        if problem is None and self.part == "action":
            try:
                edit, parsed = action_edit(self.format, text, self.record.thought)
            except ValueError as exc:
                problem = f"the action does not parse ({self.format} format): {exc}"
            else:
                self.edit = edit
                reads = getattr(parsed, "call", "") or f"final answer: {getattr(parsed, 'answer', '')}"
                shown.update(Text.assemble(("✓ reads as ", "green"), (one_line(reads, 200), "bold"),
                                           ("\n" + WHAT_HAPPENS["action"], "dim")))
                return True
        if problem is not None:
            shown.update(Text(one_line(problem, 400), style="bold red"))
            return False
        self.edit = StepEdit(self.part, text)
        shown.update(Text(WHAT_HAPPENS[self.part], style="dim"))
        return True

    def action_fork(self) -> None:
        if self.check() and self.edit is not None:
            self.dismiss(self.edit)

    def action_cancel(self) -> None:
        self.dismiss(None)
