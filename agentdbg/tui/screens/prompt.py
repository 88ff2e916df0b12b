"""Small one-field dialogs: go to step, search, open a file, write a trace."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.validation import Function, ValidationResult, Validator
from textual.widgets import Input, Label

from agentdbg.debugger.find import Query
from agentdbg.tui.safe import one_line


class PromptScreen(ModalScreen[str | None]):
    """Ask for one line of text; Enter answers, Esc cancels."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="prompt.cancel")]

    def __init__(self, title: str, label: str, value: str = "", placeholder: str = "",
                 hint: str = "", validators=None, id: str | None = None):
        super().__init__(id=id)
        self.prompt_title = title
        self.label = label
        self.value = value
        self.placeholder = placeholder
        self.hint = hint
        self.validators = validators or []

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog prompt") as box:
            box.border_title = self.prompt_title
            box.border_subtitle = "Enter: ok · Esc: cancel"
            yield Label(self.label)
            yield Input(self.value, placeholder=self.placeholder, validators=self.validators,
                        id="prompt-input", select_on_focus=True)
            yield Label(self.hint, id="prompt-hint", classes="hint", markup=False)

    @on(Input.Submitted)
    def submitted(self, event: Input.Submitted) -> None:
        if event.validation_result is not None and not event.validation_result.is_valid:
            self.query_one("#prompt-hint", Label).update(
                "; ".join(event.validation_result.failure_descriptions))
            return
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


def _is_step(value: str) -> bool:
    return value.strip().isdigit() and int(value.strip()) >= 1


def goto_screen(current: int, count: int, more: bool) -> PromptScreen:
    where = f"1 to {count:,}" + (" (a live run runs further as needed)" if more else "")
    return PromptScreen("Go to step", f"Step number ({where}):", placeholder=str(current),
                        validators=[Function(_is_step, "give a step number, 1 or more")], id="goto")


class QueryValidator(Validator):
    """A search starting with ~ or ! must be a filter that parses: say what is wrong."""

    def validate(self, value: str) -> ValidationResult:
        try:
            Query.parse(value)
        except ValueError as exc:
            return self.failure(f"not a filter: {one_line(str(exc), 200)} (\\~ searches for a ~)")
        return self.success()


def search_screen(last: str) -> PromptScreen:
    return PromptScreen("Search", "A regular expression (lower case: any case), or a filter: ~tool search, !~error",
                        value=last, placeholder="e.g. Gattopardo, error|fail, ~tool calc & ~error",
                        hint=". and , go to the next / previous match · empty: clear the highlight",
                        validators=[QueryValidator()], id="search")


def open_screen(initial: str) -> PromptScreen:
    return PromptScreen("Open", "A plan (.toml), an agentdbg trace, or a run saved elsewhere:",
                        value=initial, placeholder="path/to/file", id="open")


def write_screen(initial: str) -> PromptScreen:
    return PromptScreen("Write trace", "Write the current run to this trace file:",
                        value=initial, placeholder="run.jsonl",
                        hint="an existing file is replaced", id="write")
