"""Small one-field dialogs: go to step, search, open a file (with path completion),
write a trace (asking before a file is replaced), and a yes/no question."""

from __future__ import annotations

import os
from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.validation import Function, ValidationResult, Validator
from textual.widgets import Button, Input, Label

from agentdbg.debugger.find import Query
from agentdbg.tui.confine import Confinement
from agentdbg.tui.safe import one_line

COMPLETIONS = 40  # names listed by Tab at most


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


def open_screen(initial: str, confine: Confinement | None = None) -> PromptScreen:
    return PathPromptScreen("Open", "A plan (.toml), an agentdbg trace, or a run saved elsewhere (Tab completes):",
                            value=initial, placeholder="path/to/file", confine=confine, id="open")


class PathPromptScreen(PromptScreen):
    """A prompt for a path: the hint shows the full path it means, and Tab completes it
    as far as every matching name agrees, listing the names when several match.
    ``confine``: outside its folder nothing is completed nor described (in web mode, what
    is there is none of the page's business)."""

    BINDINGS = [Binding("tab", "complete", "Complete", show=False, priority=True, id="prompt.complete")]

    def __init__(self, *args, describe=None, confine: Confinement | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.describe = describe or full_path_hint
        self.confine = confine
        self._listed: tuple[str, str] | None = None  # (value completed, its matches listed)

    def on_mount(self) -> None:
        self.query_one("#prompt-input", Input).focus()
        self.show_hint(self.value)

    @on(Input.Changed, "#prompt-input")
    def changed(self, event: Input.Changed) -> None:
        self.show_hint(event.value)

    def show_hint(self, value: str) -> None:
        listed = self._listed
        refused = self.confine.refusal(value.strip()) if self.confine is not None and value.strip() else None
        if refused is not None:
            hint = f"refused: {refused}"
        else:
            hint = listed[1] if listed is not None and listed[0] == value else self.describe(value)
        self.query_one("#prompt-hint", Label).update(hint)

    def action_complete(self) -> None:
        field = self.query_one("#prompt-input", Input)
        value, matches = complete_path(field.value, confine=self.confine)
        self._listed = (value, matches_hint(matches)) if len(matches) > 1 or (not matches and value) else None
        if value != field.value:
            field.value = value
            field.cursor_position = len(value)
        self.show_hint(value)


def full_path_hint(value: str) -> str:
    path = resolved(value)
    return f"→ {one_line(str(path), 300)}" if path is not None else ""


def write_hint(value: str) -> str:
    path = resolved(value)
    if path is None:
        return ""
    shown = one_line(str(path), 300)
    if path.is_dir():
        return f"→ {shown} is a directory: name a file in it"
    if path.exists():
        return f"→ {shown} exists: you will be asked before it is replaced"
    return f"→ {shown}"


def resolved(value: str) -> Path | None:
    if not value.strip():
        return None
    try:
        return Path(value.strip()).expanduser().absolute()
    except (OSError, RuntimeError, ValueError):
        return None


def complete_path(value: str, limit: int = COMPLETIONS,
                  confine: Confinement | None = None) -> tuple[str, list[str]]:
    """``value`` completed as far as every matching name agrees, and the names that match
    (directories end with /). Never raises: an unreadable directory matches nothing, and
    so does one outside ``confine``'s folder."""
    typed = os.path.expanduser(value) if value.startswith("~") else value
    folder, _, prefix = typed.rpartition("/")
    base = Path(folder + "/" if folder or typed.startswith("/") else ".")
    if confine is not None and confine.refusal(base) is not None:
        return value, []
    names: list[str] = []
    try:
        with os.scandir(base) as entries:
            for entry in entries:
                if entry.name.startswith(prefix) and (prefix.startswith(".") or not entry.name.startswith(".")):
                    try:
                        is_dir = entry.is_dir()
                    except OSError:
                        is_dir = False
                    names.append(entry.name + ("/" if is_dir else ""))
                    if len(names) > limit:
                        break
    except OSError:
        return value, []
    names.sort()
    if not names:
        return value, []
    common = os.path.commonprefix(names)
    if len(common) <= len(prefix):
        return value, names
    head = value[: len(value) - len(prefix)] if prefix else value
    return head + common, names


def matches_hint(matches: list[str]) -> str:
    if not matches:
        return "no file starts with that"
    shown = "  ".join(one_line(name, 60) for name in matches[:COMPLETIONS])
    more = " …" if len(matches) > COMPLETIONS else ""
    return f"{len(matches)}{'+' if more else ''} matches: {shown}{more}"


class ConfirmScreen(ModalScreen[bool]):
    """Yes or no: y / Enter confirms, n / Esc declines."""

    BINDINGS = [Binding("y", "answer(True)", "Yes", id="confirm.yes"),
                Binding("n,escape", "answer(False)", "No", id="confirm.no")]

    def __init__(self, title: str, question: str, yes: str = "Replace", id: str | None = None):
        super().__init__(id=id)
        self.prompt_title = title
        self.question = question
        self.yes = yes

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog prompt") as box:
            box.border_title = self.prompt_title
            box.border_subtitle = "y: yes · n / Esc: no"
            yield Label(self.question, markup=False)
            with Horizontal(classes="buttons"):
                yield Button(self.yes, id="confirm-yes", variant="warning")
                yield Button("Cancel", id="confirm-no")

    def on_mount(self) -> None:
        self.query_one("#confirm-no", Button).focus()  # Enter alone never replaces a file

    @on(Button.Pressed)
    def pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "confirm-yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


def write_screen(initial: str, confine: Confinement | None = None) -> PromptScreen:
    return PathPromptScreen("Write trace", "Write the current run to this trace file (Tab completes):",
                            value=initial, placeholder="run.jsonl", describe=write_hint, confine=confine,
                            id="write")

def diff_screen(suggested: str, several: bool) -> PromptScreen:
    what = "Another run of this file (its number), or a file" if several else "A file"
    return PromptScreen("Diff", f"{what} to compare this run with (FILE:N picks run N of a file):",
                        value=suggested, placeholder="2, golden.jsonl or runs.jsonl:3",
                        hint="steps are aligned by action; } and { go to the next / previous difference",
                        id="diff-prompt")


class FilterValidator(Validator):
    """A filter expression, or nothing; the parser's message (what, at which column) when wrong."""

    def validate(self, value: str) -> ValidationResult:
        from agentdbg.debugger.filters import parse_filter

        if not value.strip():
            return self.success()
        try:
            parse_filter(value)
        except ValueError as exc:
            return self.failure(str(exc))
        return self.success()


def view_filter_screen(current: str) -> PromptScreen:
    return PromptScreen("View filter", "Show only the steps matching (empty: every step):", value=current,
                        placeholder="e.g. ~error, ~tool search & ~obs timeout, ~step >10",
                        hint="n / p move between the steps kept; ? lists the filters",
                        validators=[FilterValidator()], id="view-filter")
