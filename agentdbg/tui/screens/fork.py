"""The fork dialog (E): change the thought, action or observation of a step, then run the
rest again as a new run. An action is read by the run's own parser as it is typed: a
mistake is shown in place and the dialog stays open. ctrl+s forks, Esc cancels.
A plan's action is its calls, one a line, and so is a turn of several calls'; at such a
turn a row of buttons picks the call whose observation is edited. A reflection's text is
its thought.
Everything from the run is shown (and edited) as plain text: control characters are
left out of the text the editor opens with."""

from __future__ import annotations

import ast
import json
import re

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, RadioButton, RadioSet, Static, TextArea

from agentdbg.engine.parsers import ActionPlan, ParallelCalls
from agentdbg.engine.step_edit import FORK_EDITS, StepEdit
from agentdbg.fork import ForkError, check_editable, is_reflection, make_edit
from agentdbg.model.state import StepRecord
from agentdbg.tui.safe import clipped, one_line

TEXT_SHOWN = 100_000  # characters of the step's text put in the editor

WHAT_HAPPENS = {
    "thought": "The action is kept and runs again; later steps see this thought.",
    "action": "This action runs instead (its thought is kept).",
    "observation": "The call is not run; the policy reads this text (ERROR: ... makes it an error).",
}


WHAT_HAPPENS_AT = {
    "plan": {"thought": "The plan is kept and carried out again; later steps see this thought.",
             "action": "This plan is carried out instead: one call a line."},
    "item": {"thought": "The item's call is kept and runs again, with this thought before it.",
             "action": "This call runs instead of the plan's item; the plan goes on after it.",
             "observation": "The call is not run; the plan goes on with its next item "
                            "(ERROR: ... ends the plan: the policy is asked again)."},
    "reflection": {"thought": "This is the reflection instead; the retry reads it.",
                   "action": "This is the reflection instead; the retry reads it."},
    "calls": {"action": "These calls run instead: one a line.",
              "observation": "This call is not run (the others are); the policy reads this text "
                             "(ERROR: ... makes it an error)."},
}
_PYTHON_CALL = re.compile(r"^([\w.\-]+)\((.*)\)$", re.S)


def step_kind(record: StepRecord) -> str:
    """plan, item, reflection, calls (several at once) or call."""
    if is_reflection(record):
        return "reflection"
    if record.plan is not None:
        return "plan"
    if record.item:
        return "item"
    return "calls" if len(record.calls) > 1 else "call"


def what_happens(record: StepRecord, part: str) -> str:
    return WHAT_HAPPENS_AT.get(step_kind(record), {}).get(part, WHAT_HAPPENS[part])


def _written_call(call: str, tool: str, args: object, format: str) -> str:
    """One call as the dialog reads it back in ``format``."""
    if format in ("plan", "script", "json"):
        if not tool:  # a plan's item, known by its call text: name({...})
            found = _PYTHON_CALL.match(call)
            if found is None:
                return call
            try:
                tool, args = found.group(1), ast.literal_eval(found.group(2) or "{}")
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                return call
        args = args if isinstance(args, dict) else {}
        try:
            return f"{tool} {json.dumps(args, ensure_ascii=False)}" if args else tool
        except (TypeError, ValueError):
            return call or tool
    return call or tool


def current_text(record: StepRecord, part: str, format: str, call: int = 1) -> str:
    """What the step holds now, written the way the dialog reads it back."""
    kind = step_kind(record)
    if kind == "reflection" and part != "observation":
        return record.reflection.text if record.reflection is not None else record.output
    if part == "thought":
        return record.thought
    if part == "observation":
        if kind == "calls":
            return record.calls[min(max(call, 1), len(record.calls)) - 1].observation or ""
        return record.observation or ""
    if record.parse_error is not None:
        return record.output
    if kind == "plan" and record.plan is not None:
        return "\n".join(_written_call(item, "", None, format) for item in record.plan.items)
    if kind == "calls":
        return "\n".join(_written_call(c.call, c.tool, c.args, format) for c in record.calls)
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
    if record.reflection is not None:
        did = f"reflection on step {record.reflection.on_step}: {record.reflection.text}"
    elif record.plan is not None:
        did = f"plan of {len(record.plan.items)}: " + "; ".join(record.plan.items)
    elif record.parse_error is not None:
        did = f"unreadable output: {record.parse_error}"
    elif record.tool is None:
        did = f"final answer: {record.answer or ''}"
    elif len(record.calls) > 1:
        did = " · ".join(f"{c.call or c.tool} → {c.observation}" for c in record.calls)
    else:
        did = (f"item {record.item}: " if record.item else "") + (record.call or record.tool)
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
        self.calls = len(record.calls) if len(record.calls) > 1 else 0  # a turn of several: which call's observation
        self.call = 1
        self.part = next((p for p in ("observation", "action", "thought") if self._problem(p) is None), "action")
        self.edit: StepEdit | None = None

    def _problem(self, part: str) -> str | None:
        try:
            check_editable(self.record, part, self.call if self.calls and part == "observation" else 0)
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
            if self.calls:
                with RadioSet(id="fork-call"):
                    for number, call in enumerate(self.record.calls, 1):
                        button = RadioButton(one_line(f"call {number}: {call.tool}", 28),
                                             value=number == 1, id=f"fork-call-{number}")
                        button.tooltip = one_line(call.call or call.tool, 300)
                        yield button
            yield TextArea(self.texts[self.part], id="fork-text", soft_wrap=True, show_line_numbers=False)
            yield Static("", id="fork-check")

    def on_mount(self) -> None:
        self.query_one(TextArea).focus()
        self.check()

    @on(RadioSet.Changed, "#fork-part")
    def part_changed(self, event: RadioSet.Changed) -> None:
        self.texts[self.part] = self.query_one(TextArea).text
        self.part = FORK_EDITS[event.index]
        self.query_one(TextArea).load_text(self.texts[self.part])
        self.check()

    @on(RadioSet.Changed, "#fork-call")
    def call_changed(self, event: RadioSet.Changed) -> None:
        """Another call's observation: the editor shows it (one observation is edited at a time)."""
        self.call = event.index + 1
        self.texts["observation"] = clipped(current_text(self.record, "observation", self.format, self.call), TEXT_SHOWN)
        if self.part == "observation":
            self.query_one(TextArea).load_text(self.texts["observation"])
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
        call = self.call if self.calls and self.part == "observation" else 0
        edit, parsed = None, None
        if problem is None:
            try:
                edit, parsed = make_edit(self.record, self.format, self.part, text, call)
            except ValueError as exc:
                problem = f"the action does not parse ({self.format} format): {exc}" if self.part == "action" \
                    else str(exc)
        if problem is not None or edit is None:
            shown.update(Text(one_line(problem or "", 400), style="bold red"))
            return False
        self.edit = edit
        if parsed is not None:
            shown.update(Text.assemble(("✓ reads as ", "green"), (one_line(_reads(parsed), 200), "bold"),
                                       ("\n" + what_happens(self.record, self.part), "dim")))
        else:
            shown.update(Text(what_happens(self.record, self.part), style="dim"))
        return True

    def action_fork(self) -> None:
        if self.check() and self.edit is not None:
            self.dismiss(self.edit)

    def action_cancel(self) -> None:
        self.dismiss(None)


def _reads(parsed: object) -> str:
    """What an edited action parses to, on one line."""
    if isinstance(parsed, ActionPlan):
        return f"a plan of {len(parsed.actions)}: " + "; ".join(a.call for a in parsed.actions)
    if isinstance(parsed, ParallelCalls):
        return f"{len(parsed.actions)} calls: " + "; ".join(a.call for a in parsed.actions)
    return getattr(parsed, "call", "") or f"final answer: {getattr(parsed, 'answer', '')}"
