"""The scratchpad: the transcript as the policy saw it, up to the current step.

Only the current step and enough earlier steps to fill the pane are rendered, never the
whole transcript. Long observations of earlier steps are folded; the current step is
shown in full (up to a cap) and emphasised.
"""

from __future__ import annotations

from rich.text import Text
from textual.strip import Strip

from agentdbg.state import StepRecord
from agentdbg.tui.safe import clean
from agentdbg.tui.widgets.lines import LinePane

LABEL_STYLES = {
    "Thought": "bold cyan",
    "Action": "bold yellow",
    "Output": "bold red",
    "Final Answer": "bold green",
    "Observation": "bold green",
    "Error": "bold red",
    "Raw": "bold magenta",
    "Guard": "bold magenta",
}
FOLD_LINES = 4  # earlier steps: longer texts are folded to this many lines
FOLD_CHARS = 400
CURRENT_CHARS = 20_000  # the current step: beyond this, the text is cut (it can be megabytes)
CONTEXT_SCREENS = 2  # earlier steps rendered: enough for this many pane heights


class Scratchpad(LinePane):
    """Thought / Action / Observation of the steps leading to the current one."""

    def __init__(self, *, id: str | None = None, classes: str | None = None):
        super().__init__(id=id, classes=classes)
        self.run = None
        self.step = 0
        self.folded = True
        self.empty_message: Text | None = None
        self.first_shown = 0
        self._current_start_paragraph = 0

    def show(self, run, step: int) -> None:
        self.run = run
        self.step = step
        self.rebuild()

    def toggle_fold(self) -> bool:
        self.folded = not self.folded
        self.rebuild()
        return self.folded

    # --- content -----------------------------------------------------------------------
    def build(self, width: int) -> list[Text]:
        run = self.run
        if run is None:
            return [self.empty_message or Text("No run is open. Press o to open a file.", style="dim")]
        height = max(self.scrollable_content_region.height, 10)
        budget = height * CONTEXT_SCREENS
        blocks: list[list[Text]] = []
        used = 0
        step = self.step
        while step >= 1 and (used < budget or step == self.step):
            try:
                record = run.record(step)
            except (IndexError, ValueError, OSError):
                break
            block = self._block(record, current=step == self.step, width=width)
            blocks.append(block)
            used += sum(_height(paragraph, width) for paragraph in block)
            step -= 1
        self.first_shown = step + 1
        blocks.reverse()
        out: list[Text] = []
        if step >= 1:
            out.append(Text(f"… {step:,} earlier step{'s' if step != 1 else ''} not shown", style="dim italic"))
        else:
            out.append(Text.assemble(("Question: ", "bold"), clean(run.info.task)))
        if self.step == 0:
            out.append(Text(""))
            out.append(Text("No step taken yet: press n to step, c to continue.", style="dim italic"))
        self._current_start_paragraph = 0
        for index, block in enumerate(blocks):
            if index == len(blocks) - 1:
                self._current_start_paragraph = len(out)
            out.extend(block)
        return out

    def _block(self, record: StepRecord, current: bool, width: int) -> list[Text]:
        title = f" Step {record.step} "
        if current:
            rule = Text.assemble(("▶" + title, "bold reverse cyan"), (" current ", "bold cyan"))
            rule.append("━" * max(width - rule.cell_len, 0), style="cyan")
        else:
            rule = Text.assemble(("─" + title, "bold"))
            rule.append("─" * max(width - rule.cell_len, 0))
            rule.stylize("dim")
        block = [rule]
        for label, value in record.transcript():
            text = clean(value)
            hidden = ""
            limit_chars = CURRENT_CHARS if current or not self.folded else FOLD_CHARS
            if len(text) > limit_chars:
                hidden = f"{len(text) - limit_chars:,} more characters"
                text = text[:limit_chars]
            if not current and self.folded:
                lines = text.split("\n")
                if len(lines) > FOLD_LINES:
                    hidden = f"{len(lines) - FOLD_LINES} more lines"
                    text = "\n".join(lines[:FOLD_LINES])
            style = LABEL_STYLES.get(label, "bold")
            if label == "Observation" and record.observation_error:
                style = "bold red"
            paragraph = Text.assemble((f"{label}: ", style), text)
            if hidden:
                paragraph.append(f" … ({hidden}; f unfolds)" if not current else f" … ({hidden})",
                                 style="italic")
            if not current:
                paragraph.stylize("dim")
            block.append(paragraph)
        if not record.transcript():
            block.append(Text("(nothing recorded in this step)", style="dim italic"))
        return block

    def after_rebuild(self, lines: list[Strip]) -> None:
        # Show the current step: its start in view, with as much context above as fits.
        height = max(self.scrollable_content_region.height, 1)
        index = self._current_start_paragraph
        start = self.paragraph_starts[index] if index < len(self.paragraph_starts) else 0
        target = max(0, min(len(lines) - height, start))
        self.scroll_to(y=target, animate=False, immediate=True, force=True)


def _height(paragraph: Text, width: int) -> int:
    """Rows a paragraph takes at ``width`` (close enough to choose how much to render)."""
    rows = 0
    for line in paragraph.plain.split("\n"):
        rows += max(1, -(-len(line) // max(width, 1)))
    return rows
