"""The approval dialog: a call to a dangerous tool waits here for the user's decision.

Approve (a) runs the call as proposed; deny (d) asks why (the policy reads the reason in
its observation); edit (e) opens the arguments as JSON, checked against the tool's
parameters before anything runs: a mistake is shown in place and the call still waits.
Esc leaves a form, or at the top denies the call (the safe side); q quits the debugger,
which denies it too. Everything from the run is shown as plain text.
"""

from __future__ import annotations

import json
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static, TextArea

from agentdbg.engine.approval import ApprovalRequest, Decision
from agentdbg.text import escape_json
from agentdbg.tui.safe import clean, one_line

APPROVAL_KEYS = (  # for the help screen
    ("a", "approve: the call runs as proposed"),
    ("d", "deny, with a reason the policy reads (Enter); the call does not run"),
    ("e", "edit the arguments as JSON, checked against the tool's parameters (ctrl+s runs them)"),
    ("Esc", "leave the deny or edit form; at the choices, deny"),
    ("q", "quit: the waiting call is denied"),
)
ARGS_SHOWN = 6000  # characters of the arguments shown (all of them are in the editor)
DISMISSED = "dismissed with Esc"


def editable_json(args: Any) -> str:
    """The arguments as indented JSON that shows every character: controls and invisible
    characters are written as ``\\uXXXX`` escapes, so the text decodes to the same value."""
    return escape_json(json.dumps(args, ensure_ascii=False, indent=2, default=repr))


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def read_edited(text: str, request: ApprovalRequest) -> tuple[dict | None, str]:
    """(arguments, "") when ``text`` is a JSON object the tool accepts, else (None, why)."""
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        return None, f"not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
    except (ValueError, RecursionError) as exc:
        return None, f"not JSON: {exc}" if not isinstance(exc, RecursionError) else "not JSON: nested too deeply"
    problems = request.problems(value)
    if problems:
        return None, "; ".join(problems)
    return value, ""


class ApprovalScreen(ModalScreen[Decision]):
    """Dismissed with the user's ``Decision`` (``by`` is ``user``)."""

    BINDINGS = [
        Binding("a", "approve", "Approve", id="approval.approve"),
        Binding("d", "deny", "Deny…", id="approval.deny"),
        Binding("e", "edit", "Edit arguments…", id="approval.edit"),
        Binding("ctrl+s", "run_edited", "Run edited", show=False, id="approval.run_edited"),
        Binding("escape", "back", "Back / deny", id="approval.back"),
        Binding("q", "app.quit", "Quit"),
    ]

    def __init__(self, request: ApprovalRequest):
        super().__init__(id="approval")
        self.request = request
        self.form: str | None = None  # "deny" or "edit" while that form is open

    def compose(self) -> ComposeResult:
        request = self.request
        with Vertical(classes="dialog wide", id="approval-box") as box:
            box.border_title = "Approve a dangerous call?"
            box.border_subtitle = "a: approve · d: deny · e: edit · Esc: deny · q: quit"
            title = Text.assemble(("Step ", "bold"), (str(request.step), "bold"), (" wants to run ", ""),
                                  (one_line(request.tool, 80), "bold red"), (" (dangerous)", "red"))
            yield Label(title, id="approval-title", markup=False)
            if request.description:
                yield Label(Text(one_line(request.description, 300), style="dim"), markup=False)
            if request.thought:
                yield Label(Text.assemble(("Thought: ", "bold cyan"), one_line(request.thought, 500)), markup=False)
            yield Label("Arguments:", classes="section")
            with VerticalScroll(id="approval-args-box"):
                yield Static(self.args_text(), id="approval-args", markup=False)
            if request.key:
                yield Label(Text.assemble(("Operation key: ", "dim"), one_line(request.key, 300)), markup=False)
            with Horizontal(id="approval-buttons"):
                yield Button("Approve (a)", id="approve", variant="success")
                yield Button("Deny… (d)", id="deny", variant="error")
                yield Button("Edit arguments… (e)", id="edit", variant="primary")
            with Vertical(id="deny-form", classes="approval-form"):
                yield Label("Why deny it? The policy reads this in its observation (Enter denies, Esc goes back):")
                yield Input(placeholder="e.g. not outside /tmp", id="deny-reason")
            with Vertical(id="edit-form", classes="approval-form"):
                yield Label("The arguments to run instead, as a JSON object (ctrl+s runs them, Esc goes back):")
                yield TextArea(editable_json(request.args), id="edit-args", soft_wrap=True)
                yield Button("Run with these arguments (ctrl+s)", id="run-edited", variant="warning")
            yield Label("", id="approval-error", classes="error", markup=False)

    def args_text(self) -> Text:
        shown = clean(editable_json(self.request.args))
        if len(shown) > ARGS_SHOWN:
            shown = f"{shown[:ARGS_SHOWN]}\n… ({len(shown) - ARGS_SHOWN:,} more characters; e shows them all)"
        return Text(shown)

    def on_mount(self) -> None:
        self.query_one("#deny-form").display = False
        self.query_one("#edit-form").display = False
        self.query_one("#approve", Button).focus()

    # --- the choices --------------------------------------------------------------------
    @on(Button.Pressed, "#approve")
    def action_approve(self) -> None:
        if self.form is None:
            self.dismiss(Decision.approve(by="user"))

    @on(Button.Pressed, "#deny")
    def action_deny(self) -> None:
        self.open_form("deny")

    @on(Button.Pressed, "#edit")
    def action_edit(self) -> None:
        self.open_form("edit")

    def open_form(self, form: str) -> None:
        self.form = form
        self.query_one("#deny-form").display = form == "deny"
        self.query_one("#edit-form").display = form == "edit"
        self.query_one("#approval-buttons").display = False
        self.say("")
        self.query_one("#deny-reason" if form == "deny" else "#edit-args").focus()

    def action_back(self) -> None:
        """Esc: out of a form, back to the choices; at the choices, deny."""
        if self.form is None:
            self.dismiss(Decision.deny(DISMISSED, by="user"))
            return
        self.form = None
        self.query_one("#deny-form").display = False
        self.query_one("#edit-form").display = False
        self.query_one("#approval-buttons").display = True
        self.say("")
        self.query_one("#approve", Button).focus()

    @on(Input.Submitted, "#deny-reason")
    def denied(self, event: Input.Submitted) -> None:
        self.dismiss(Decision.deny(event.value.strip(), by="user"))

    @on(Button.Pressed, "#run-edited")
    def action_run_edited(self) -> None:
        if self.form != "edit":
            return
        args, problem = read_edited(self.query_one("#edit-args", TextArea).text, self.request)
        if args is None:
            self.say(f"✗ {one_line(problem, 400)}: nothing runs until the arguments are right")
            return
        self.dismiss(Decision.edit(args, by="user"))

    def say(self, message: str) -> None:
        self.query_one("#approval-error", Label).update(message)
