"""The tool registry: every tool, its parameters, and its use up to the current step."""

from __future__ import annotations

from rich.text import Text

from agentdbg.model.state import RunInfo, RunState, StepRecord
from agentdbg.tui.safe import one_line
from agentdbg.tui.widgets.lines import LinePane

PARAMS = 20  # parameters shown in a tool's signature


class ToolsPane(LinePane):
    """Tools with description, parameters and types, dangerous flag, calls and failures."""

    def __init__(self, *, id: str | None = None, classes: str | None = None):
        super().__init__(id=id, classes=classes)
        self.info: RunInfo | None = None
        self.state: RunState | None = None
        self.record: StepRecord | None = None

    def show(self, info: RunInfo | None, state: RunState | None, record: StepRecord | None) -> None:
        self.info, self.state, self.record = info, state, record
        self.rebuild()

    def content_key(self) -> object:
        calls = self.state.tool_calls if self.state is not None else {}
        return (id(self.info), self.current_tools, tuple((k, tuple(v)) for k, v in calls.items()))

    @property
    def current_tool(self) -> str | None:
        return self.record.tool if self.record is not None else None

    @property
    def current_tools(self) -> frozenset[str]:
        """The tools the current step calls: one, or each of its several calls'."""
        if self.record is None:
            return frozenset()
        return frozenset(call.tool for call in self.record.all_calls)

    def build(self, width: int) -> list:
        if self.info is None:
            return [Text("No run.", style="dim")]
        calls = self.state.tool_calls if self.state is not None else {}
        current = self.current_tools
        out: list = []
        known: set[str] = set()
        for spec in self.info.tools:
            if not isinstance(spec, dict):
                continue
            name = str(spec.get("name", ""))
            known.add(name)
            out.extend(self._tool(spec, name, calls.get(name, [0, 0]), name in current, width))
        undeclared = sorted(set(calls) - known, key=str)
        if not known:
            # An imported run often does not list its tools: what it called is all there is.
            out.append(Text("This run declares no tools; the tools it called:" if undeclared
                            else "This run declares no tools.", style="dim italic"))
            for name in undeclared:
                out.append(self._head(name, "", calls[name], name in current, width))
            return out
        for name in undeclared:
            out.extend(self._unknown(name, calls[name], name in current, width))
        return out

    def _tool(self, spec: dict, name: str, counts: list, current: bool, width: int) -> list:
        params = spec.get("params") or {}
        if isinstance(params, dict):
            shown = [f"{one_line(k, 40)}: {one_line(v, 40)}" for k, v in list(params.items())[:PARAMS]]
            signature = ", ".join(shown + ["…"] * (len(params) > PARAMS))
        else:
            signature = one_line(params, 200)
        head = self._head(name, signature, counts, current, width, declared=True)
        if spec.get("dangerous"):
            head.append(" dangerous", style="bold red")
        lines = [head]
        description = one_line(spec.get("description", ""), 400)
        if description:
            lines.append((2, Text("  " + description, style="dim")))
        key = spec.get("idempotency_key")
        if key:
            lines.append((2, Text("  once per operation key: " + one_line(key, 200), style="dim italic")))
        return lines

    def _unknown(self, name: str, counts: list, current: bool, width: int) -> list:
        head = self._head(name, "", counts, current, width, unknown=True)
        return [head, Text("  called, but no such tool exists", style="italic red")]

    def _head(self, name: str, signature: str, counts: list, current: bool, width: int,
              unknown: bool = False, declared: bool = False) -> Text:
        made, failed = (list(counts) + [0, 0])[:2]
        pointer = "▶ " if current else "  "
        name_style = "bold red strike" if unknown else "bold"
        text = Text.assemble((pointer, "bold"))
        text.append(one_line(name, 40), style=name_style)
        if unknown:
            text.append(" (unknown tool)", style="red")
        elif declared:
            text.append(f"({signature})")
        counter = f"{made}×"
        if failed:
            counter += f" {failed}✗"
        room = width - len(counter) - 1
        if text.cell_len > room:  # the counts stay on the tool's line
            text.truncate(max(room - 1, 1))
            text.append("…")
        pad = max(width - text.cell_len - len(counter), 1)
        text.append(" " * pad)
        text.append(f"{made}×", style="bold" if made else "dim")
        if failed:
            text.append(f" {failed}✗", style="bold red")
        if current:
            text.stylize("reverse")
        return text
