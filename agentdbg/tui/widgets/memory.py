"""Memory tiers at the current step: recent buffer, rolling summary, semantic recall."""

from __future__ import annotations

from rich.text import Text

from agentdbg.model.state import RunInfo, RunState
from agentdbg.tui.safe import clip, clipped
from agentdbg.tui.widgets.lines import LinePane

TURN_CHARS = 300
SUMMARY_CHARS = 5_000
LIST_ITEMS = 100  # of each tier's list (a buffer of 200,000 turns): the rest are counted


class MemoryPane(LinePane):
    """The three tiers, with what changed at this step marked (+ added, - evicted, *)."""

    def __init__(self, *, id: str | None = None, classes: str | None = None):
        super().__init__(id=id, classes=classes)
        self.info: RunInfo | None = None
        self.state: RunState | None = None

    def show(self, info: RunInfo | None, state: RunState | None) -> None:
        self.info, self.state = info, state
        self.rebuild()

    def content_key(self) -> object:
        return (id(self.info), self.state.memory if self.state is not None else None)

    def build(self, width: int) -> list:
        if self.info is None or self.state is None:
            return [Text("No run.", style="dim")]
        memory = self.state.memory
        has_memory = self.info.memory is not None or memory.buffer or memory.summary or memory.semantic_size
        if not has_memory:
            return [Text("This run has no memory tiers: the policy sees the whole transcript.",
                         style="dim italic")]
        out: list = []
        settings = self.info.memory or {}
        size = settings.get("max_turns") or settings.get("buffer")
        title = f"Recent buffer ({len(memory.buffer)}" + (f"/{size})" if size else ")")
        out.append(Text(title, style="bold underline"))
        added = list(memory.added)
        # The newest turns were added at this step: mark exactly that many from the end.
        fresh = range(len(memory.buffer) - len(added), len(memory.buffer))
        for turn in memory.evicted[:LIST_ITEMS]:
            out.append((4, Text.assemble(("  - ", "bold red"), (turn_text(turn), "red strike"))))
        out.extend(_more(len(memory.evicted), "evicted turns"))
        buffer = memory.buffer
        first = max(0, len(buffer) - LIST_ITEMS)  # the newest turns, where this step's are
        if first:
            out.append(Text(f"  … {first:,} older turns not shown", style="dim italic"))
        for index in range(first, len(buffer)):
            turn = buffer[index]
            if index in fresh:
                out.append((4, Text.assemble(("  + ", "bold green"), (turn_text(turn), "green"))))
            else:
                out.append((4, Text("  · " + turn_text(turn))))
        if not memory.buffer and not memory.evicted:
            out.append(Text("  (empty)", style="dim"))
        out.append(Text(""))
        summary_title = Text.assemble(("Rolling summary", "bold underline"))
        if memory.summary_changed:
            summary_title.append("  * changed", style="bold yellow")
        out.append(summary_title)
        if memory.summary:
            out.append(Text(clipped(memory.summary, SUMMARY_CHARS), style="yellow" if memory.summary_changed else ""))
        else:
            out.append(Text("  (none yet)", style="dim"))
        out.append(Text(""))
        out.append(Text(f"Semantic recall ({memory.semantic_size} stored)", style="bold underline"))
        for stored in memory.stored[:LIST_ITEMS]:
            out.append((4, Text.assemble(("  + ", "bold green"), ("stored: ", "green"), (turn_text(stored), "green"))))
        out.extend(_more(len(memory.stored), "stored texts"))
        if memory.recalled:
            for result in memory.recalled[:LIST_ITEMS]:
                score, text = _result(result)
                out.append((7, Text.assemble((f"  {score} ", "bold cyan"), turn_text(text))))
            out.extend(_more(len(memory.recalled), "recalled texts"))
        else:
            out.append(Text("  nothing recalled at this step", style="dim"))
        return out


def _more(count: int, what: str) -> list:
    return [Text(f"  … {count - LIST_ITEMS:,} more {what} not shown", style="dim italic")] if count > LIST_ITEMS else []


def turn_text(turn) -> str:
    """A remembered turn on one line: its Thought / Action / Observation joined by ⏎."""
    text, _ = clip(turn, 4 * TURN_CHARS)
    return " ⏎ ".join(line.strip() for line in text.split("\n") if line.strip())[:TURN_CHARS]


def _result(result) -> tuple[str, str]:
    if isinstance(result, dict):
        score = result.get("score")
        text = result.get("text", "")
    else:
        score, text = None, result
    try:
        shown = f"{float(score):.2f}"
    except (TypeError, ValueError):
        shown = "  ?"
    return shown, clip(text, 4 * TURN_CHARS)[0]
