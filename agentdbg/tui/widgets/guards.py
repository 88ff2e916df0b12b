"""The guards: each counter as a bar that turns colour near its limit, and a sparkline
of tokens per step over the last steps."""

from __future__ import annotations

from rich.text import Text
from textual.cache import LRUCache

from agentdbg.model.state import RunState
from agentdbg.tui.widgets.lines import LinePane

SPARK = "▁▂▃▄▅▆▇█"
HISTORY = 40
LABEL_WIDTH = 7
GUARDS = (("steps", "steps"), ("repeats", "repeat"), ("errors", "errors"), ("tokens", "tokens"))


def progress(name: str, value: int, limit: int | None) -> float:
    """How far a counter has gone towards its limit, 0..1. The repeat counter counts
    occurrences of the current action, so its first occurrence is the empty bar."""
    if not limit:
        return 0.0
    if name == "repeat":
        return max(value - 1, 0) / (limit - 1) if limit > 1 else float(value >= limit)
    return value / limit


def level(value: int, limit: int | None, name: str = "") -> str:
    """ok / near / at: how close a counter is to its limit."""
    if not limit:
        return "off"
    ratio = progress(name, value, limit)
    if ratio >= 1:
        return "at"
    if ratio >= 0.75:
        return "near"
    return "ok"


LEVEL_STYLES = {"ok": "green", "near": "yellow", "at": "bold red", "off": "dim"}


def sparkline(values: list[int]) -> str:
    if not values:
        return ""
    top = max(values) or 1
    return "".join(SPARK[min(int(v / top * (len(SPARK) - 1) + 0.5), len(SPARK) - 1)] if v > 0 else " "
                   for v in values)


class GuardsPane(LinePane):
    """Steps, repeats, consecutive errors and tokens against their limits."""

    def __init__(self, *, id: str | None = None, classes: str | None = None):
        super().__init__(id=id, classes=classes)
        self.state: RunState | None = None
        self.history: list[int] = []
        self._tokens: LRUCache[tuple[int, int], int] = LRUCache(4 * HISTORY)  # (run id, step) -> tokens

    def show(self, run, state: RunState | None) -> None:
        self.state = state
        self.history = self._history(run, state.step if state is not None else 0)
        self.rebuild()

    def _history(self, run, step: int) -> list[int]:
        if run is None:
            return []
        values = []
        for number in range(max(1, step - HISTORY + 1), step + 1):
            key = (id(run), number)
            tokens = self._tokens.get(key)
            if tokens is None:
                try:
                    tokens = run.record(number).step_tokens
                except (IndexError, ValueError, OSError):
                    tokens = 0
                self._tokens.set(key, tokens)
            values.append(tokens)
        return values

    def levels(self) -> dict[str, str]:
        """Each guard's level (ok / near / at / off), for tests and the status line."""
        state = self.state
        if state is None:
            return {}
        return {name: level(*_pair(getattr(state, attr)), name) for attr, name in GUARDS}

    def build(self, width: int) -> list[Text]:
        state = self.state
        if state is None:
            return [Text("No run.", style="dim")]
        out = []
        # No token count anywhere so far: the source did not record any (an import, a
        # scripted policy), which is not the same as a run that used none.
        unrecorded = state.step >= 1 and _pair(state.tokens) == (0, None) and not any(self.history)
        for attr, name in GUARDS:
            value, limit = _pair(getattr(state, attr))
            if name == "tokens" and unrecorded:
                out.append(Text.assemble((name.ljust(LABEL_WIDTH), "bold"), ("not recorded", "dim")))
                continue
            out.append(self._bar(name, value, limit, width))
        if unrecorded:
            out.append(Text.assemble(("tok/st".ljust(LABEL_WIDTH), "bold"), ("not recorded", "dim")))
            return out
        spark = sparkline(self.history[-max(width - LABEL_WIDTH - 8, 4):])
        line = Text.assemble(("tok/st".ljust(LABEL_WIDTH), "bold"))
        line.append(spark, style="cyan")
        line.append(f" {state.step_tokens}", style="bold cyan")
        out.append(line)
        return out

    def _bar(self, name: str, value: int, limit: int | None, width: int) -> Text:
        text = Text.assemble((name.ljust(LABEL_WIDTH), "bold"))
        if not limit:
            text.append(f"{value:,}", style="bold")
            text.append("  no limit", style="dim")
            return text
        if name == "repeat":  # occurrences of this action: the first is no repeat
            figure = f"{max(value - 1, 0):,}/{max(limit - 1, 1):,}"
        else:
            figure = f"{value:,}/{limit:,}"
        bar_width = max(width - LABEL_WIDTH - len(figure) - 1, 4)
        style = LEVEL_STYLES[level(value, limit, name)]
        filled = min(bar_width, round(bar_width * progress(name, value, limit)))
        text.append("█" * filled, style=style)
        text.append("░" * (bar_width - filled), style="dim")
        text.append(" " + figure, style=style)
        return text


def _pair(pair) -> tuple[int, int | None]:
    try:
        value, limit = pair[0], pair[1]
    except (TypeError, IndexError):
        return 0, None
    try:
        value = int(value or 0)
    except (TypeError, ValueError):
        value = 0
    try:
        limit = int(limit) if limit is not None else None
    except (TypeError, ValueError):
        limit = None
    return value, limit
