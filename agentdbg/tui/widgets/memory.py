"""Memory tiers at the current step: recent buffer, rolling summary, semantic recall."""

from __future__ import annotations

from rich.text import Text

from agentdbg.state import RunInfo, RunState
from agentdbg.tui.safe import clean, one_line
from agentdbg.tui.widgets.lines import LinePane

TURN_CHARS = 160


class MemoryPane(LinePane):
    """The three tiers, with what changed at this step marked (+ added, - evicted, *)."""

    def __init__(self, *, id: str | None = None, classes: str | None = None):
        super().__init__(id=id, classes=classes)
        self.info: RunInfo | None = None
        self.state: RunState | None = None

    def show(self, info: RunInfo | None, state: RunState | None) -> None:
        self.info, self.state = info, state
        self.rebuild()

    def build(self, width: int) -> list[Text]:
        if self.info is None or self.state is None:
            return [Text("No run.", style="dim")]
        memory = self.state.memory
        has_memory = self.info.memory is not None or memory.buffer or memory.summary or memory.semantic_size
        if not has_memory:
            return [Text("This run has no memory tiers: the policy sees the whole transcript.",
                         style="dim italic")]
        out: list[Text] = []
        settings = self.info.memory or {}
        size = settings.get("buffer_size") or settings.get("recent") or settings.get("window")
        title = f"Recent buffer ({len(memory.buffer)}" + (f"/{size})" if size else ")")
        out.append(Text(title, style="bold underline"))
        added = list(memory.added)
        # The newest turns were added at this step: mark exactly that many from the end.
        fresh = set(range(len(memory.buffer) - len(added), len(memory.buffer)))
        for turn in memory.evicted:
            out.append(Text.assemble(("- ", "bold red"), (one_line(turn, TURN_CHARS), "red strike")))
        for index, turn in enumerate(memory.buffer):
            if index in fresh:
                out.append(Text.assemble(("+ ", "bold green"), (one_line(turn, TURN_CHARS), "green")))
            else:
                out.append(Text("  " + one_line(turn, TURN_CHARS)))
        if not memory.buffer and not memory.evicted:
            out.append(Text("  (empty)", style="dim"))
        out.append(Text(""))
        summary_title = Text.assemble(("Rolling summary", "bold underline"))
        if memory.summary_changed:
            summary_title.append("  * changed", style="bold yellow")
        out.append(summary_title)
        if memory.summary:
            out.append(Text(clean(memory.summary), style="yellow" if memory.summary_changed else ""))
        else:
            out.append(Text("  (none yet)", style="dim"))
        out.append(Text(""))
        out.append(Text(f"Semantic recall ({memory.semantic_size} stored)", style="bold underline"))
        for stored in memory.stored:
            out.append(Text.assemble(("+ stored ", "bold green"), (one_line(stored, TURN_CHARS), "green")))
        if memory.recalled:
            for result in memory.recalled:
                score, text = _result(result)
                out.append(Text.assemble((f"{score:>5} ", "bold cyan"), one_line(text, TURN_CHARS)))
        else:
            out.append(Text("  nothing recalled at this step", style="dim"))
        return out


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
    return shown, clean(text)
