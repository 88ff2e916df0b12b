"""The "what if" dialog: other guard settings for the open run, and where they would have
stopped it (re-scored from its recorded steps: nothing is run again), with a jump there."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, Static

from agentdbg.debugger.rescore import EFFECT_WORDS, GuardSettings, Rescore
from agentdbg.tui.safe import one_line

FIELDS = (  # (field, label, placeholder)
    ("max_steps", "Max steps", "off"),
    ("repeat", "Repeat threshold", "off (2: stop at the first repeat)"),
    ("max_errors", "Errors in a row", "off"),
    ("token_budget", "Token budget", "off"),
)
EFFECT_STYLES = {"good_stop": "bold green", "false_stop": "bold red", "ungraded_stop": "bold yellow"}


@dataclass(frozen=True)
class WhatIfResult:
    """A re-score of the open run, for the dialog (None: cancelled)."""

    result: Rescore | None
    complete: bool  # the run has ended (a live run is re-scored over the steps it has so far)


class WhatIfScreen(ModalScreen[int | None]):
    """Asks for guard settings; the app re-scores in a worker and hands the result back
    with ``show_result``. Dismissed with the step to go to, or None."""

    BINDINGS = [Binding("escape", "cancel", "Close", id="whatif.close")]

    class Asked(Message):
        """Re-score the open run with ``settings``."""

        def __init__(self, settings: GuardSettings) -> None:
            super().__init__()
            self.settings = settings

    def __init__(self, settings: GuardSettings, recorded: GuardSettings):
        super().__init__(id="whatif")
        self.settings = settings
        self.recorded = recorded  # the run's own guards, said for comparison
        self.stop_step: int | None = None
        self.shown = Text()  # what the result line says now

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog") as box:
            box.border_title = "What if: other guards"
            box.border_subtitle = "Enter: re-score · Esc: close"
            yield Label(f"This run was recorded with: {self.recorded.describe()}", classes="hint", markup=False)
            for name, label, placeholder in FIELDS:
                with Horizontal(classes="whatif-row"):
                    yield Label(label, classes="whatif-label")
                    value = getattr(self.settings, name)
                    yield Input("" if value is None else str(value), placeholder=placeholder, id=f"whatif-{name}",
                                type="integer")
            yield Checkbox("count repeats in a row only (consecutive; threshold 3 unless given)",
                           self.settings.consecutive, id="whatif-consecutive")
            yield Static("", id="whatif-result")
            with Horizontal(id="whatif-buttons"):
                yield Button("Re-score", id="whatif-run", variant="primary")
                yield Button("Go to the stop", id="whatif-goto", disabled=True)

    def on_mount(self) -> None:
        self.query_one("#whatif-max_steps", Input).focus()
        if self.settings != GuardSettings():
            self.ask()

    def read_settings(self) -> GuardSettings | str:
        """The settings typed in, or what is wrong with them."""
        values: dict = {}
        for name, label, _ in FIELDS:
            text = self.query_one(f"#whatif-{name}", Input).value.strip()
            if text:
                try:
                    values[name] = int(text)
                except ValueError:
                    return f"{label}: give a whole number, or leave it empty for off"
        values["consecutive"] = self.query_one("#whatif-consecutive", Checkbox).value
        try:
            return GuardSettings(**values)
        except ValueError as exc:
            return str(exc)

    def ask(self) -> None:
        settings = self.read_settings()
        if isinstance(settings, str):
            self.show_text(Text(settings, style="bold red"))
            return
        if settings == GuardSettings():
            self.show_text(Text("no guard given: fill in at least one", style="yellow"))
            return
        self.settings = settings
        self.show_text(Text(f"re-scoring with {settings.describe()}…", style="dim"))
        self.post_message(self.Asked(settings))

    def show_text(self, text: Text) -> None:
        self.shown = text
        self.query_one("#whatif-result", Static).update(text)
        self.stop_step = None
        button = self.query_one("#whatif-goto", Button)
        button.disabled = True
        button.label = "Go to the stop"

    def show_result(self, rescored: WhatIfResult) -> None:
        rescore = rescored.result
        if rescore is None:
            self.show_text(Text("re-scoring cancelled", style="yellow"))
            return
        text = Text()
        text.append(f"With {rescore.settings.describe()}:\n", style="bold")
        stop = rescore.stop
        if stop is None:
            text.append(one_line(rescore.explain()))
        else:
            text.append(f"would stop at step {stop.step:,} of {rescore.steps:,}", style="bold")
            text.append(f" ({stop.guard}: {one_line(stop.message, 300)}")
            text.append(", before its action ran)" if stop.before_action else ", after its observation)")
            text.append("\n")
            if rescore.changed:
                saved = f"saves {rescore.steps_saved:,} step{'s' if rescore.steps_saved != 1 else ''}"
                if rescore.tokens:
                    saved += f" and {rescore.tokens_saved:,} of {rescore.tokens:,} tokens"
                text.append(f"{saved}: ")
            text.append(EFFECT_WORDS[rescore.effect], style=EFFECT_STYLES.get(rescore.effect, ""))
        if not rescored.complete:
            text.append(f"\n(over the {rescore.steps:,} steps recorded so far: the run has not ended)", style="dim")
        self.shown = text
        self.query_one("#whatif-result", Static).update(text)
        self.stop_step = stop.step if stop is not None else None
        button = self.query_one("#whatif-goto", Button)
        button.disabled = stop is None
        button.label = f"Go to step {stop.step:,}" if stop is not None else "Go to the stop"

    @on(Input.Submitted)
    def submitted(self) -> None:
        self.ask()

    @on(Button.Pressed, "#whatif-run")
    def rescore_pressed(self) -> None:
        self.ask()

    @on(Button.Pressed, "#whatif-goto")
    def goto_pressed(self) -> None:
        if self.stop_step is not None:
            self.dismiss(self.stop_step)

    def action_cancel(self) -> None:
        self.dismiss(None)
