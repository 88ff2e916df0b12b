"""Steps, states and runs as terminal text: rich ``Text`` built from sanitized strings,
never markup."""

from __future__ import annotations

import json
from typing import Any

from rich.cells import cell_len
from rich.console import Console
from rich.style import Style
from rich.text import Span, Text

from agentdbg.cli.terminal import make_console as make_console
from agentdbg.engine import events as ev
from agentdbg.engine.verdicts import Verdict
from agentdbg.model.outcome import VERDICT_STYLES as VERDICT_STYLES
from agentdbg.model.outcome import outcome_style, run_outcome, run_verdict, verdict_style
from agentdbg.model.state import RunInfo, RunState, StepRecord
from agentdbg.text import one_line, sanitize, shorten

TEXT_CHARS = 100_000  # a text in human output is cut beyond this (--json has all of it)
LABEL_STYLES = {
    "Thought": "italic",
    "Action": "bold cyan",
    "Output": "magenta",
    "Final Answer": "bold green",
    "Observation": "green",
    "Error": "bold red",
    "Raw": "magenta",
    "Guard": "bold yellow",
    "Paused": "yellow",
    "Approval": "bold magenta",
    "Replayed": "bold blue",
    "Operation": "bold blue",
    "Plan": "bold blue",
    "Plan item": "blue",
    "Replan": "bold blue",
    "Reflection": "bold magenta",
}
MARKER_STYLES = {"final": "bold green", "tripped": "bold white on red", "error": "bold red",
                 "repeat": "bold yellow", "raw": "magenta", "plan": "bold blue", "reflection": "bold magenta"}


def plural(count: int, word: str) -> str:
    return f"{count:,} {word}" if count == 1 else f"{count:,} {word}s"


def _clean(text: Any) -> str:
    return sanitize(text if isinstance(text, str) else json.dumps(ev.jsonable(text), ensure_ascii=False))


def _text(text: Any) -> str:
    """A run's text for human output: cleaned, and cut with what is left out said."""
    if isinstance(text, str) and len(text) > TEXT_CHARS:
        return shorten(text, TEXT_CHARS)
    return _clean(text)


def _pair(pair: Any, off: str = "") -> str:
    if isinstance(pair, list) and len(pair) == 2:
        value, limit = pair
        text = f"{value}/{limit}" if limit is not None else f"{value}{off}"
        return text if isinstance(value, int) and isinstance(limit, (int, type(None))) else _clean(text)
    return _clean(pair)


def guards_text(info: RunInfo) -> str:
    guards = info.guards or {}
    parts = []
    if guards.get("max_steps") is not None:
        parts.append(f"max {guards['max_steps']} steps")
    repeat = guards.get("repeat")
    if isinstance(repeat, dict):
        parts.append(f"repeat brake {repeat.get('mode')} ×{repeat.get('threshold')}")
    if guards.get("max_consecutive_errors") is not None:
        parts.append(f"{guards['max_consecutive_errors']} errors in a row")
    if guards.get("token_budget") is not None:
        parts.append(f"{guards['token_budget']:,} tokens" if isinstance(guards["token_budget"], int) else "")
    return " · ".join(_clean(p) for p in parts if p) or "none"


_WRAPPERS: dict[int, Console] = {}


def _wrap(text: Text, width: int) -> list[Text]:
    plain = text.plain
    if "\n" not in plain and (len(plain) <= width // 2 or cell_len(plain) <= width):
        return [text]  # the common case: one short line, no wrapping work
    console = _WRAPPERS.get(width)
    if console is None:
        console = _WRAPPERS[width] = Console(width=width, highlight=False, markup=False, emoji=False)
    return list(text.wrap(console, width, overflow="fold"))


def emit(console: Console, text: Text) -> None:
    """Print pre-wrapped text: plainly when there is no colour to show (a pipe, a file, a CI
    log), which is many times faster on long transcripts."""
    if console.color_system is None:
        console.file.write(text.plain)
    else:
        console.print(text, end="", soft_wrap=True)


def rows_text(rows: list[tuple[str, str, str | Text]], width: int, number_width: int = 4,
              label_width: int = 12) -> Text:
    """Rows of (number, label, value) with the value wrapped under itself (a hanging
    indent), and no trailing spaces: readable in a terminal, a CI log or a file."""
    indent = (number_width + 1 if number_width else 0) + label_width + 1
    wrap_width = max(width - indent, 20)
    pieces: list[str] = []
    spans: list[Span] = []
    position = 0

    def put(text: str, style: str | Style = "") -> None:
        nonlocal position
        pieces.append(text)
        if style and text:
            spans.append(Span(position, position + len(text), style))
        position += len(text)

    for number, label, value in rows:
        text = value if isinstance(value, Text) else Text(value)
        lines = _wrap(text, wrap_width) if text.plain else [Text("")]
        for index, line in enumerate(lines):
            line.rstrip()
            plain = line.plain
            if index == 0:
                if number_width:
                    put(number.rjust(number_width), "bold" if number else "")
                    put(" ")
                put(label.ljust(label_width) if plain else label, LABEL_STYLES.get(label.strip(), "dim"))
                if plain:
                    put(" ")
            elif plain:  # a blank line inside a value stays blank: no trailing spaces
                put(" " * indent)
            if line.style:
                spans.append(Span(position, position + len(plain), line.style))
            spans.extend(Span(position + span.start, position + span.end, span.style) for span in line.spans)
            put(plain)
            put("\n")
    return Text("".join(pieces), spans=spans)


def run_header(run: Any, number: int, total: int | None, path: str, width: int) -> Text:
    info: RunInfo = run.info
    title = Text()
    count = f" of {total}" if total else ""
    title.append(f"run {number}{count}", style="bold")
    title.append(" · ")
    title.append(run_title(run, number), style="bold magenta")
    title.append(f"  ({sanitize(path)})", style="dim")
    rows = []
    if info.task:
        rows.append(("", "task", _first_lines(_text(info.task), 12)))
    tools = sorted(info.tool_names() - {""})
    rows.append(("", "tools", _clean(", ".join(tools)) or "none"))
    rows.append(("", "guards", guards_text(info)))
    if info.policy:
        rows.append(("", "policy", _clean(info.policy)))
    for label, text in StepRecord.from_events(0, run.preamble).transcript():
        rows.append(("", label.lower(), _first_lines(_text(text), 12)))  # kept before the first step
    out = Text("\n")
    out.append_text(title)
    out.append("\n")
    out.append_text(rows_text(rows, width, number_width=0, label_width=7))
    out.append("\n")
    return out


def _first_lines(text: str, count: int) -> str:
    lines = text.split("\n")
    if len(lines) <= count:
        return text
    return "\n".join(lines[:count]) + f"\n… ({len(lines) - count} more lines; --json has them all)"


def run_title(run: Any, number: int) -> str:
    info = run.info
    return one_line(info.name or info.task, 60) or f"run {number}"


def step_block(record: StepRecord, width: int) -> Text:
    """One step: number, the scratchpad lines, memory changes, the guard counters and a
    marker (final, tripped, error, repeat)."""
    rows: list[tuple[str, str, str | Text]] = []
    for label, text in record.transcript():
        if label == "Observation" and record.error is not None and not record.calls \
                and record.error not in (text or ""):
            rows.append(("", "Error", f"{_clean(record.error_kind)}: {_text(record.error)}"))
        rows.append(("", label, _text(text)))
    if record.parse_error is not None:
        rows.insert(0, ("", "Error", f"parse error: {_clean(record.parse_error)}"))
    if not rows:
        rows.append(("", "(no events)", ""))
    memory = memory_line(record)
    if memory:
        rows.append(("", "memory", Text(memory, style="dim")))
    counters = Text(counters_line(record), style="dim")
    marker = record.marker()
    if marker:
        if counters.plain:
            counters.append("  ")
        counters.append(f" {marker} ", style=MARKER_STYLES.get(marker, ""))
    if counters.plain:
        rows.append(("", "guards", counters))
    first = rows[0]
    rows[0] = (str(record.step), first[1], first[2])
    return rows_text(rows, width)


def counters_line(record: StepRecord) -> str:
    guards = record.guards
    if guards is None:
        return ""
    parts = [f"step {_pair(guards.steps)}", f"repeats {_pair(guards.repeats)}", f"errors {_pair(guards.errors)}"]
    tokens = f"tokens {_pair(guards.tokens)}"
    if guards.step_tokens:
        tokens += f" (+{guards.step_tokens})"
    parts.append(tokens)
    return " · ".join(parts)


def memory_line(record: StepRecord) -> str:
    parts = []
    if record.recalled:
        best = record.recalled[0]
        score = best.get("score") if isinstance(best, dict) else None
        parts.append(f"recalled {len(record.recalled)}" + (f" (best {score:.2f})" if isinstance(score, (int, float)) else ""))
    update = record.memory
    if update is not None:
        if update.added:
            parts.append(f"+{plural(len(update.added), 'turn')}")
        if update.evicted:
            parts.append(f"{len(update.evicted)} evicted")
        if update.summary is not None:
            parts.append("summary updated")
        if update.stored:
            parts.append(f"{len(update.stored)} stored")
    return " · ".join(parts)


def outcome_text(run: Any, width: int, state: RunState | None = None) -> Text:
    """The run's last line: how it ended, after how many steps, with what answer."""
    end = run.end
    value = Text()
    outcome = run_outcome(run, state)
    style = outcome_style(outcome, end is not None and end.answer is not None)
    value.append(sanitize(outcome), style=style)
    verdict = run_verdict(run, state)
    if verdict is not None:
        value.append(", ")
        value.append(verdict.word, style=verdict_style(verdict))
    if end is not None:
        value.append(f" after {plural(end.steps, 'step')}")
        if end.answer is not None:
            value.append(": ")
            value.append(_text(end.answer), style="bold")
        elif end.message:
            value.append(": ")
            value.append(_clean(end.message))
    elif outcome == "incomplete":
        value.append(f" after {plural(run.step_count, 'step')} (the run has no end: recording cut off?)")
    rows: list[tuple[str, str, str | Text]] = [("", "outcome", value)]
    if verdict is not None and verdict.details():
        rows.append(("", "", Text(_clean(verdict.details()), style="dim")))
    return rows_text(rows, width, number_width=0, label_width=8)


def state_block(state: RunState, info: RunInfo, width: int) -> Text:
    """Everything derived at a step: guard counters, tools, errors, trips, memory tiers."""
    rows: list[tuple[str, str, str | Text]] = [
        ("", "steps", _pair(state.steps)),
        ("", "repeats", _pair(state.repeats, " (brake off)")),
        ("", "errors in a row", _pair(state.errors, " (no limit)")),
        ("", "tokens", f"{_pair(state.tokens, ' (no budget)')}, this step {state.step_tokens}"),
    ]
    tools = ", ".join(
        f"{name} {calls[0]}" + (f" ({calls[1]} failed)" if len(calls) > 1 and calls[1] else "")
        for name, calls in state.tool_calls.items())
    rows.append(("", "tool calls", _clean(tools) or "none yet"))
    rows.append(("", "error steps", f"{state.error_count} ({plural(state.parse_errors, 'parse error')})"))
    rows.append(("", "repeated steps", str(state.repeat_count)))
    trips = "; ".join(f"step {step}: {guard}: {message}" for step, guard, message in state.trips)
    rows.append(("", "guard trips", _clean(trips) or "none"))
    if state.raw_count:
        rows.append(("", "raw records", str(state.raw_count)))
    if state.answer is not None:
        rows.append(("", "answer", Text(_text(state.answer), style="bold")))
    if state.outcome is not None:
        verdict = Verdict.read(state.verdict)
        outcome = Text(_clean(state.outcome))
        if verdict is not None:
            outcome.append(", ")
            outcome.append(verdict.word, style=verdict_style(verdict))
            if verdict.details():
                outcome.append(f" ({_clean(verdict.details())})")
        rows.append(("", "outcome", outcome))
    out = Text("state after this step\n", style="bold")
    out.append_text(rows_text(rows, width, number_width=0, label_width=16))
    memory = state.memory
    out.append("memory tiers", style="bold")
    out.append("\n")
    if info.memory is None and not (memory.buffer or memory.summary or memory.semantic_size or memory.recalled):
        out.append("  off for this run\n", style="dim")
        return out
    rows = [("", "recent buffer", plural(len(memory.buffer), "turn"))]
    rows += [("", "", "• " + _clean(turn)) for turn in memory.buffer]
    summary = Text(_clean(memory.summary) or "(none)")
    if memory.summary_changed:
        summary.append(" (updated at this step)", style="yellow")
    rows.append(("", "summary", summary))
    rows.append(("", "semantic memory", plural(memory.semantic_size, "item")))
    for hit in memory.recalled:
        text = hit.get("text", "") if isinstance(hit, dict) else hit
        score = hit.get("score") if isinstance(hit, dict) else None
        label = f"recalled {score:.2f}" if isinstance(score, (int, float)) else "recalled"
        rows.append(("", label, _clean(text)))
    for label, items in (("added", memory.added), ("evicted", memory.evicted), ("stored", memory.stored)):
        rows += [("", label, _clean(item)) for item in items]
    out.append_text(rows_text(rows, width, number_width=0, label_width=16))
    return out
