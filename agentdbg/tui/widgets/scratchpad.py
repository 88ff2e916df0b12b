"""The scratchpad: the transcript as the policy saw it, up to the current step.

Only the current step and enough earlier steps to fill the pane are rendered, never the
whole transcript. Long observations of earlier steps are folded; the current step is
shown in full (up to a cap) and emphasised.

The prompt view (``v``) shows instead the exact prompt the policy was given at the current
step, rebuilt from events: with tiered memory, that is the summary, what recall brought
back and the recent turns, not the whole transcript.
"""

from __future__ import annotations

from rich.text import Text
from textual.cache import LRUCache
from textual.strip import Strip

from agentdbg.debugger.find import Query
from agentdbg.model.prompt import SYSTEM_HEADER, TASK_HEADER, prompt_at
from agentdbg.model.state import PlanProgress, StepRecord, plan_progress
from agentdbg.text import one_line
from agentdbg.tui.safe import clip, clipped
from agentdbg.tui.widgets.lines import LinePane, wrap

LABEL_STYLES = {
    "Thought": "bold cyan",
    "Action": "bold yellow",
    "Output": "bold red",
    "Final Answer": "bold green",
    "Observation": "bold green",
    "Error": "bold red",
    "Raw": "bold magenta",
    "Guard": "bold magenta",
    "Paused": "bold yellow",
    "Approval": "bold magenta",
    "Replayed": "bold blue",
    "Operation": "bold blue",
    "Plan": "bold blue",
    "Plan item": "blue",
    "Replan": "bold blue",
    "Reflection": "bold magenta",
}
# How the plan panel marks each item (see state.PlanProgress).
PLAN_MARKS = {"done": ("✓", "green"), "failed": ("✗", "bold red"), "current": ("▶", "bold cyan"),
              "next": ("›", "cyan"), "pending": ("·", "dim"), "dropped": ("–", "dim strike")}
PLAN_ITEMS_SHOWN = 64
FOLD_LINES = 4  # earlier steps: longer texts are folded to this many lines
FOLD_CHARS = 400
LABEL_CHARS = 80  # the task's label ("Question", "Task", "Claim")
CURRENT_CHARS = 20_000  # the current step: beyond this, the text is cut (it can be megabytes)
STEP_LINES = 200  # a step's transcript lines shown (a step of thousands of raw records)
PROMPT_CHARS = 50_000  # the prompt view: beyond this, the prompt is cut
BLOCK_CACHE = 256  # wrapped steps kept
CONTEXT_SCREENS = 2  # earlier steps rendered: enough for this many pane heights
PROMPT_STEPS = 50  # a prompt that is the whole transcript: its latest steps only
MATCH_STYLE = "bold black on yellow"  # a search match (/)
PROMPT_HEADERS = ("Summary of earlier steps:", "Recalled from memory:", "Recent steps:", SYSTEM_HEADER, TASK_HEADER)


class Scratchpad(LinePane):
    """Thought / Action / Observation of the steps leading to the current one."""

    def __init__(self, *, id: str | None = None, classes: str | None = None):
        super().__init__(id=id, classes=classes)
        self.run = None
        self.step = 0
        self.folded = True
        self.prompt_view = False
        self.empty_message: Text | None = None
        self.first_shown = 0
        self._current_start_line = 0
        self._blocks: LRUCache[tuple[int, int, bool, bool, int, str | None], list[Strip]] = LRUCache(BLOCK_CACHE)
        self.highlight: Query | None = None  # the last search, its matches picked out

    def set_highlight(self, query: Query | None) -> None:
        """Pick out where ``query`` matches (a regex search; a filter marks nothing)."""
        if query is not None and query.pattern is None:
            query = None
        old = self.highlight.text if self.highlight is not None else None
        if old == (query.text if query is not None else None):
            return
        self.highlight = query
        self._blocks.clear()
        self._built_key = None
        self.rebuild()

    def show(self, run, step: int) -> None:
        self.run = run
        self.step = step
        self.rebuild()

    def toggle_fold(self) -> bool:
        self.folded = not self.folded
        self.rebuild()
        return self.folded

    def toggle_prompt_view(self) -> bool:
        self.prompt_view = not self.prompt_view
        self.rebuild()
        return self.prompt_view

    # --- content -----------------------------------------------------------------------
    def notify_style_update(self) -> None:
        self._blocks.clear()
        super().notify_style_update()

    def build_lines(self, width: int) -> tuple[list[Strip], list[int]]:
        console, style = self.app.console, self.rich_style
        run = self.run
        if run is None:
            message = self.empty_message or Text("No run is open. Press o to open a file.", style="dim")
            return wrap([message], width, console, style)
        if self.prompt_view and self.step >= 1:
            return self._prompt_lines(run, width)
        height = max(self.scrollable_content_region.height, 10)
        budget = height * CONTEXT_SCREENS
        blocks: list[list[Strip]] = []
        used = 0
        step = self.step
        while step >= 1 and (used < budget or step == self.step):
            block = self._block_lines(run, step, step == self.step, width)
            if block is None:
                break
            blocks.append(block)
            used += len(block)
            step -= 1
        self.first_shown = step + 1
        head: list[Text] = []
        if step >= 1:
            head.append(Text(f"… {step:,} earlier step{'s' if step != 1 else ''} not shown", style="dim italic"))
        else:
            label = one_line(str(getattr(run.info, "task_label", None) or "Question"), LABEL_CHARS)  # untrusted
            head.append(Text.assemble((f"{label}: ", "bold"), clipped(run.info.task, CURRENT_CHARS)))
        if self.step == 0:
            head.extend(self._preamble(run))
            head.append(Text(""))
            if run.step_count == 0 and getattr(run, "complete", False):
                head.append(Text("This run has no steps.", style="dim italic"))
            else:
                head.append(Text("No step taken yet: press n to step, c to continue.", style="dim italic"))
        lines, starts = wrap(head, width, console, style)
        for block in reversed(blocks):
            starts.append(len(lines))
            lines.extend(block)
        self._current_start_line = starts[-1] if blocks else 0
        return lines, starts

    def _preamble(self, run) -> list[Text]:
        """Records kept before the first step (what an import could not place in a step)."""
        try:
            events = run.preamble
        except (AttributeError, ValueError, OSError):
            return []
        lines = [Text.assemble((f"{label}: ", "bold magenta"), clipped(text, CURRENT_CHARS))
                 for label, text in StepRecord.from_events(0, events).transcript()[:STEP_LINES]]
        return [Text("")] + lines if lines else []

    def _prompt_lines(self, run, width: int) -> tuple[list[Strip], list[int]]:
        """The prompt of the current step, then what the policy answered to it."""
        console, style = self.app.console, self.rich_style
        head = [Text.assemble((f" Prompt at step {self.step} ", "bold reverse magenta"),
                              (" as the policy saw it (v: back to the transcript)", "magenta"))]
        try:
            prompt = prompt_at(run, self.step, max_steps_shown=PROMPT_STEPS)
        except (IndexError, ValueError, OSError) as exc:
            prompt = f"(the prompt cannot be rebuilt: {exc})"
        if not run.info.memory:
            head.append(Text("This run has no memory tiers: the prompt is the transcript so far.",
                             style="dim italic"))
        text, more = clip(prompt, PROMPT_CHARS)
        for line in text.split("\n"):
            head.append(_prompt_line(line))
        if more:
            head.append(Text(f"… [{more:,} more characters of the prompt not shown]", style="dim italic"))
        lines, starts = wrap(head, width, console, style)
        block = self._block_lines(run, self.step, True, width)
        self._current_start_line = 0
        if block is not None:
            starts.append(len(lines))
            lines.extend(block)
        return lines, starts

    def forget_from(self, step: int) -> None:
        """Steps from ``step`` on are read again (a run still being written)."""
        for key in [k for k in self._blocks.keys() if k[1] >= step]:
            self._blocks.discard(key)
        if self.step >= step:
            self.rebuild()

    def _block_lines(self, run, step: int, current: bool, width: int) -> list[Strip] | None:
        """One step's lines, wrapped and styled; cached, so stepping re-renders two steps."""
        key = (id(run), step, current, self.folded, width, self.highlight.text if self.highlight else None)
        block = self._blocks.get(key)
        if block is not None:
            return block
        try:
            record = run.record(step)
        except (IndexError, ValueError, OSError):
            return None
        progress = None
        if current:
            try:
                progress = plan_progress(run.record, step)
            except (IndexError, ValueError, OSError):
                progress = None
        block, _ = wrap(self._block(record, current, width, progress), width, self.app.console, self.rich_style)
        self._blocks.set(key, block)
        return block

    def _block(self, record: StepRecord, current: bool, width: int, progress: PlanProgress | None = None) -> list[Text]:
        title = f" Step {record.step} "
        fork = getattr(getattr(self.run, "info", None), "fork", None)
        if isinstance(fork, dict) and fork.get("step") == record.step:  # the step this fork changed
            title += f"· ✎ {one_line(str(fork.get('edited')), 20)} edited in this fork "
        if current:
            rule = Text.assemble(("▶" + title, "bold reverse cyan"), (" current ", "bold cyan"))
            rule.append("━" * max(width - rule.cell_len, 0), style="cyan")
        else:
            rule = Text.assemble(("─" + title, "bold"))
            rule.append("─" * max(width - rule.cell_len, 0))
            rule.stylize("dim")
        block = [rule]
        if progress is not None:
            block.extend(_plan_lines(progress, record.step))
        transcript = record.transcript()
        observed = iter([c for c in record.calls if c.observation is not None])  # one per Observation line
        for label, value in transcript[:STEP_LINES]:
            limit_chars = CURRENT_CHARS if current or not self.folded else FOLD_CHARS
            text, more = clip(value, limit_chars)
            hidden = f"{more:,} more characters" if more else ""
            if not current and self.folded:
                lines = text.split("\n")
                if len(lines) > FOLD_LINES:
                    hidden = f"{len(lines) - FOLD_LINES} more lines"
                    text = "\n".join(lines[:FOLD_LINES])
            style = LABEL_STYLES.get(label, "bold")
            if label == "Observation":
                call = next(observed, None)
                if call.observation_error if call is not None else record.observation_error:
                    style = "bold red"
            paragraph = Text.assemble((f"{label}: ", style), text)
            if hidden:
                paragraph.append(f"… [{hidden}]" if current else f" … ({hidden}; z unfolds)", style="italic")
            if not current:
                paragraph.stylize("dim")
            if self.highlight is not None:
                for start, end in self.highlight.spans(paragraph.plain):
                    paragraph.stylize(MATCH_STYLE, start, end)
            block.append(paragraph)
        if len(transcript) > STEP_LINES:
            block.append(Text(f"… {len(transcript) - STEP_LINES:,} more lines in this step not shown",
                              style="dim italic"))
        if not transcript:
            block.append(Text("(nothing recorded in this step)", style="dim italic"))
        return block

    def after_rebuild(self, lines: list[Strip]) -> None:
        if self.prompt_view and self.step >= 1:
            self.scroll_to(y=0, animate=False, immediate=True, force=True)
            return
        # Show the current step: its start in view, with as much context above as fits.
        height = max(self.scrollable_content_region.height, 1)
        start = self._current_start_line
        target = max(0, min(len(lines) - height, start))
        self.scroll_to(y=target, animate=False, immediate=True, force=True)


def _plan_lines(progress: PlanProgress, step: int) -> list[Text]:
    """The plan this step belongs to, each item marked: done, failed, current, next..."""
    plan = progress.plan
    where = "written at this step" if progress.step == step else f"written at step {progress.step}"
    revision = f", replan {plan.revision - 1}" if plan.revision > 1 else ""
    lines = [Text.assemble(("Plan", "bold blue"), (f" ({where}{revision}):", "blue"))]
    for number, (item, status) in enumerate(zip(plan.items[:PLAN_ITEMS_SHOWN], progress.statuses, strict=False), 1):
        mark, style = PLAN_MARKS.get(status, ("·", "dim"))
        line = Text.assemble((f"  {mark} ", style), (f"{number}. ", "bold"), clipped(one_line(item, 400), 400))
        if status in ("current", "failed", "next"):
            line.append(f"  ← {'failed here' if status == 'failed' else 'this step' if status == 'current' else 'next'}",
                        style=style)
        if status == "dropped":
            line.stylize("dim")
        lines.append(line)
    if len(plan.items) > PLAN_ITEMS_SHOWN:
        lines.append(Text(f"  … {len(plan.items) - PLAN_ITEMS_SHOWN} more items", style="dim italic"))
    return lines


def _prompt_line(line: str) -> Text:
    """A prompt line with its memory header or transcript label picked out."""
    if line in PROMPT_HEADERS:
        return Text(line, style="bold magenta")
    label, sep, rest = line.partition(": ")
    if sep and label in LABEL_STYLES:
        return Text.assemble((label + sep, LABEL_STYLES[label]), rest)
    return Text(line)
