"""Breakpoints: the automatic ones (tool error, parse error, repeat, guard, final answer)
and the user's (a step number, a tool name, a filter expression), with hit counts,
ignore counts and a JSON sidecar file saved beside the trace or plan.

``BreakpointSet.reasons(record)`` says why a step would stop a continue, each reason a
short line for the status bar; ``register_hit`` is the same but counts the hit (and
honours ignore counts), for the step where a continue actually stops.
"""

from __future__ import annotations

import bisect
import functools
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from json.encoder import encode_basestring, encode_basestring_ascii
from pathlib import Path
from typing import Any

from agentdbg.debugger import quick
from agentdbg.debugger.files import Refused, read_small_file, replace_file
from agentdbg.debugger.filters import Filter, parse_filter
from agentdbg.engine.events import TOOL_ERROR_KINDS
from agentdbg.text import flat

AUTO_BREAKS: dict[str, str] = {
    "tool_error": "a tool call failed: unknown tool, bad arguments, exception, timeout",
    "parse_error": "the policy's output could not be read",
    "repeat": "the step repeats an earlier action (or the same unreadable output)",
    "guard": "a guard stopped the run: step, token or error budget, repetition",
    "final": "the final answer (or the end of a run that ended without one)",
    "approval": "a call to a dangerous tool was approved, denied or edited",
}
BREAKPOINT_KINDS = ("step", "tool", "filter")
SIDECAR_SUFFIX = ".breakpoints.json"
SIDECAR_FORMAT = "agentdbg-breakpoints"
SIDECAR_VERSION = 1
MAX_SIDECAR_BYTES = 16 * 1024 * 1024  # about 300,000 breakpoints; more is certainly not a sidecar
REASON_WIDTH = 200  # a reason is one status line: long error texts are cut here

# Untrusted text made safe for a stop's reason (one status line): ``text.flat``, cut short.
as_reason = functools.partial(flat, limit=REASON_WIDTH)


@dataclass(eq=False)
class Breakpoint:
    """One user breakpoint. ``ignore`` skips the next N hits (like pudb and pdb);
    ``hits`` counts every time a continue reached it, ignored hits included."""

    kind: str  # "step" | "tool" | "filter"
    spec: str
    enabled: bool = True
    hits: int = 0
    ignore: int = 0
    _filter: Filter | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.kind == "filter":
            self._filter = parse_filter(self.spec)

    @property
    def label(self) -> str:
        if self.kind == "step":
            return f"step {self.spec}"
        if self.kind == "tool":
            return f"tool {self.spec}"
        return self.spec

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "spec": self.spec, "enabled": self.enabled}
        if self.ignore:
            out["ignore"] = self.ignore
        return out


def validate(kind: str, spec: Any) -> str:
    """The spec in its normal form; ValueError with a readable message when it is bad."""
    normal = _normal_spec(kind, spec)
    if kind == "filter":
        parse_filter(normal)  # raises ValueError saying what and where
    return normal


def _normal_spec(kind: str, spec: Any) -> str:
    """As ``validate``, a filter's expression not parsed yet (a ``Breakpoint`` parses it)."""
    if kind not in BREAKPOINT_KINDS:
        raise ValueError(f"unknown breakpoint kind {kind!r}; known: {', '.join(BREAKPOINT_KINDS)}")
    if kind == "step":
        text = str(spec).strip()
        if isinstance(spec, bool) or not text.isdigit() or int(text) < 1:
            raise ValueError(f"a step breakpoint needs a step number (1 or more), got {text!r}")
        return str(int(text))
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"a {kind} breakpoint needs a {'tool name' if kind == 'tool' else 'filter'}")
    return spec.strip()


class BreakpointSet:
    """The automatic breaks (each on or off) and the user's breakpoints."""

    def __init__(self) -> None:
        self.auto: dict[str, bool] = dict.fromkeys(AUTO_BREAKS, True)
        self.breakpoints: list[Breakpoint] = []
        # Lookups by kind and spec, step and tool: adding, finding and the per-step check
        # stay cheap with many breakpoints (each kept up to date as one is added or removed).
        self._keys: dict[tuple[str, str], Breakpoint] = {}
        self._steps: dict[int, Breakpoint] = {}
        self._tools: dict[str, list[Breakpoint]] = {}
        self._filters: list[Breakpoint] = []

    # --- editing ---------------------------------------------------------------------

    def toggle_auto(self, code: str) -> bool:
        """Flip one automatic break; returns its new setting."""
        if code not in AUTO_BREAKS:
            raise ValueError(f"unknown automatic break {code!r}; known: {', '.join(AUTO_BREAKS)}")
        self.auto[code] = not self.auto.get(code, True)
        return self.auto[code]

    def add(self, kind: str, spec: Any) -> Breakpoint:
        """Add a breakpoint (or return the existing one with the same kind and spec)."""
        spec = _normal_spec(kind, spec)
        existing = self._keys.get((kind, spec))
        if existing is not None:
            return existing
        bp = Breakpoint(kind, spec)  # parses a filter: ValueError saying what and where
        self.breakpoints.append(bp)
        self._keys[(kind, spec)] = bp
        if kind == "step":
            self._steps[int(spec)] = bp
        elif kind == "tool":
            self._tools.setdefault(spec, []).append(bp)
        else:
            self._filters.append(bp)
        return bp

    def remove(self, bp: Breakpoint) -> None:
        if self._keys.get((bp.kind, bp.spec)) is not bp:
            return
        del self._keys[(bp.kind, bp.spec)]
        self.breakpoints.remove(bp)
        if bp.kind == "step":
            del self._steps[int(bp.spec)]
        elif bp.kind == "tool":
            same_tool = self._tools[bp.spec]
            same_tool.remove(bp)
            if not same_tool:
                del self._tools[bp.spec]
        else:
            self._filters.remove(bp)

    def toggle(self, bp: Breakpoint) -> bool:
        """Enable or disable; returns the new setting."""
        bp.enabled = not bp.enabled
        return bp.enabled

    def toggle_step(self, step: int) -> bool:
        """The ``b`` key: add a breakpoint on ``step``, or remove the one there.
        Returns True when the step now has a breakpoint."""
        existing = self._steps.get(int(step))
        if existing is not None:
            self.remove(existing)
            return False
        self.add("step", step)
        return True

    def has_step(self, step: int) -> bool:
        """A step breakpoint (enabled or not) sits on ``step``: for the gutter."""
        return step in self._steps

    def step_breakpoint(self, step: int) -> Breakpoint | None:
        return self._steps.get(step)

    def clear(self) -> None:
        self.breakpoints = []
        self._keys, self._steps, self._tools, self._filters = {}, {}, {}, []

    def __len__(self) -> int:
        return len(self.breakpoints)

    def __iter__(self) -> Iterator[Breakpoint]:
        return iter(list(self.breakpoints))

    def __getitem__(self, index: int) -> Breakpoint:
        """The breakpoint at ``index`` in the order they were added (for a list view)."""
        return self.breakpoints[index]

    def index(self, bp: Breakpoint) -> int:
        """Where ``bp`` is in that order; ValueError when it is not in this set."""
        return self.breakpoints.index(bp)

    # --- matching --------------------------------------------------------------------

    def auto_reasons(self, record: Any) -> list[str]:
        """Why the enabled automatic breaks stop at this step."""
        auto = self.auto
        out: list[str] = []
        parse_error = record.parse_error
        if auto["tool_error"]:
            # A plan item's failure is told against the plan: it ends the plan there.
            label = f"tool error (plan item {record.item} failed): " if getattr(record, "item", 0) else "tool error: "
            if record.error_kind in TOOL_ERROR_KINDS:
                out.append(label + as_reason(record.error or record.error_kind))
            elif record.observation_error is True and parse_error is None and record.decision != "denied":
                out.append(label + as_reason(record.observation or "error observation"))
        if auto["parse_error"] and parse_error is not None:
            out.append("parse error: " + as_reason(parse_error or "the output could not be read"))
        if auto["repeat"] and record.is_repeat:
            times = record.guards.repeats[0]
            what = record.call or record.tool or record.output.strip() or "the same output"
            out.append(f"repeated action: {as_reason(what)} ({_ordinal(times)} time)")
        if auto["approval"] and record.approval is not None:
            out.append("approval: " + as_reason(f"{record.approval.tool} {record.approval_text()}"))
        tripped = record.tripped
        if auto["guard"] and tripped is not None:
            out.append(f"guard tripped: {as_reason(tripped.guard)}: {as_reason(tripped.message)}")
        if auto["final"]:
            if record.answer is not None:
                out.append("final answer: " + as_reason(record.answer))
            elif record.end is not None and tripped is None:
                end = record.end
                detail = f": {as_reason(end.message)}" if end.message else ""
                out.append(f"run ended: {as_reason(end.outcome)}{detail}")
        return out

    def matching(self, record: Any) -> list[Breakpoint]:
        """The enabled user breakpoints that match this step (ignore counts aside)."""
        # Called for every step a continue scans: plain lookups, no per-breakpoint calls.
        found: list[Breakpoint] = []
        if self._steps:
            step = getattr(record, "step", None)
            bp = self._steps.get(step) if type(step) is int else None
            if bp is not None and bp.enabled:
                found.append(bp)
        if self._tools:
            tool = getattr(record, "tool", None)
            if type(tool) is str:
                bps = self._tools.get(tool)
                if bps is None and not (tool.isascii() and tool.isprintable()):
                    bps = self._tools.get(flat(tool))  # a name as shown: calc<U+200B>
                found.extend(b for b in bps or () if b.enabled)
        for bp in self._filters:
            if bp.enabled and bp._filter is not None and bp._filter.matches(record):
                found.append(bp)
        return found

    def reasons(self, record: Any) -> list[str]:
        """Every enabled automatic break and user breakpoint matching this step, as short
        reasons. Hit and ignore counts are neither changed nor consulted."""
        if record is None:
            return []
        return self._safe_auto(record) + ["breakpoint: " + as_reason(bp.label) for bp in self.matching(record)]

    def register_hit(self, record: Any) -> list[str]:
        """As ``reasons``, for a step a continue reached: each matching user breakpoint
        counts a hit, and one with an ignore count left uses one up instead of stopping."""
        if record is None:
            return []
        out = self._safe_auto(record)
        for bp in self.matching(record):
            bp.hits += 1
            if bp.ignore > 0:
                bp.ignore -= 1
                continue
            out.append("breakpoint: " + as_reason(bp.label))
        return out

    def skip_test(self) -> Callable[[int, bytes], bool] | None:
        """A cheap test on a step's lines as an agentdbg trace holds them: ``test(step, data)``
        is True only when the step cannot stop a continue, so a scan over a large file need
        not decode it (see ``quick``). None when no such test exists: an enabled filter
        breakpoint that needs every step decoded (``~obs time.*out``, ``!~error``...)."""
        filter_tests = []
        for bp in self._filters:
            if bp.enabled and bp._filter is not None:
                test = bp._filter.bytes_test()
                if test is None:
                    return None
                filter_tests.append(test)
        steps = {number for number, bp in self._steps.items() if bp.enabled}
        names = [name for name, bps in self._tools.items() if any(bp.enabled for bp in bps)]
        may_call = quick.may_name(names, or_shown=True) if names else None
        need_quiet = any(self.auto.values())

        def cannot_stop(step: int, data: bytes) -> bool:
            if step in steps:
                return False
            if need_quiet and not quick.is_quiet(data):
                return False
            if may_call is not None and may_call(step, data):
                return False
            return not any(test(step, data) for test in filter_tests)

        return cannot_stop

    def block_test(self) -> Callable[[Any], set[int]] | None:
        """``skip_test`` over a block of a trace file's steps (``agentdbg.trace.scan``):
        (block) -> the steps that may stop a continue (every other step cannot). None when
        an enabled filter breakpoint has no block form."""
        filter_tests = []
        for bp in self._filters:
            if bp.enabled and bp._filter is not None:
                test = bp._filter.block_test()
                if test is None:
                    return None
                filter_tests.append(test)
        steps = sorted(number for number, bp in self._steps.items() if bp.enabled)
        names = [name for name, bps in self._tools.items() if any(bp.enabled for bp in bps)]
        may_call = quick.name_block_test(names, or_shown=True) if names else None
        need_quiet = any(self.auto.values())

        def may_stop(block: Any) -> set[int]:
            if not block.data:  # steps too large to be read with the others: look at each
                return set(range(block.first, block.last + 1))
            found = quick.eventful_block_test(block) if need_quiet else set()
            low, high = bisect.bisect_left(steps, block.first), bisect.bisect_right(steps, block.last)
            found.update(steps[low:high])
            if may_call is not None:
                found |= may_call(block)
            for test in filter_tests:
                found |= test(block)
            return found

        return may_stop

    def _safe_auto(self, record: Any) -> list[str]:
        try:
            return self.auto_reasons(record)
        except Exception:  # an odd record (an import's) never stops the debugger working
            return []

    # --- persistence -----------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The sidecar's content. Hit counts belong to a debugging session: not saved."""
        return {
            "format": SIDECAR_FORMAT,
            "version": SIDECAR_VERSION,
            "auto": dict(self.auto),
            "breakpoints": [bp.to_dict() for bp in self.breakpoints],
        }

    @classmethod
    def from_dict(cls, data: Any, where: str = "breakpoints") -> BreakpointSet:
        """Rebuild from ``to_dict``'s form; ValueError names ``where`` and what is wrong."""
        if not isinstance(data, dict):
            raise ValueError(f"{where}: expected a JSON object, got {type(data).__name__}")
        if data.get("format") != SIDECAR_FORMAT:
            raise ValueError(f"{where}: not an agentdbg breakpoints file (format is {data.get('format')!r})")
        if data.get("version") != SIDECAR_VERSION:
            raise ValueError(f"{where}: unsupported version {data.get('version')!r} "
                             f"(this agentdbg reads version {SIDECAR_VERSION})")
        result = cls()
        auto = data.get("auto", {})
        if not isinstance(auto, dict):
            raise ValueError(f"{where}: 'auto' should be an object of true/false settings")
        for code, on in auto.items():
            if code not in AUTO_BREAKS:
                raise ValueError(f"{where}: unknown automatic break {code!r}; known: {', '.join(AUTO_BREAKS)}")
            if not isinstance(on, bool):
                raise ValueError(f"{where}: automatic break {code!r} should be true or false")
            result.auto[code] = on
        entries = data.get("breakpoints", [])
        if not isinstance(entries, list):
            raise ValueError(f"{where}: 'breakpoints' should be a list")
        for number, entry in enumerate(entries, 1):
            at = f"{where}: breakpoint {number}"
            if not isinstance(entry, dict):
                raise ValueError(f"{at}: expected an object")
            enabled, ignore, hits = entry.get("enabled", True), entry.get("ignore", 0), entry.get("hits", 0)
            if not isinstance(enabled, bool):
                raise ValueError(f"{at}: 'enabled' should be true or false")
            for name, value in (("ignore", ignore), ("hits", hits)):
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise ValueError(f"{at}: {name!r} should be a whole number of 0 or more")
            try:
                kind: Any = entry.get("kind")  # checked by add
                bp = result.add(kind, entry.get("spec"))
            except ValueError as exc:
                raise ValueError(f"{at}: {exc}") from None
            bp.enabled, bp.ignore, bp.hits = enabled, ignore, hits
        return result

    def to_text(self) -> str:
        """``to_dict`` as the sidecar's text: one line per breakpoint (easy to read and to
        diff, and quick to write with many breakpoints)."""
        try:
            return self._text(encode_basestring)
        except UnicodeEncodeError:  # a lone surrogate: escape it so the file stays UTF-8
            return self._text(encode_basestring_ascii)

    def _text(self, quote: Callable[[str], str]) -> str:
        auto = ", ".join(f"{quote(code)}: {'true' if on else 'false'}" for code, on in self.auto.items())
        lines = [f'    {{"kind": {quote(bp.kind)}, "spec": {quote(bp.spec)}, '
                 f'"enabled": {"true" if bp.enabled else "false"}'
                 + (f', "ignore": {bp.ignore:d}}}' if bp.ignore else "}")
                 for bp in self.breakpoints]
        body = "[\n" + ",\n".join(lines) + "\n  ]" if lines else "[]"
        text = (f'{{\n  "format": {quote(SIDECAR_FORMAT)},\n  "version": {SIDECAR_VERSION},\n'
                f'  "auto": {{{auto}}},\n  "breakpoints": {body}\n}}\n')
        text.encode("utf-8")  # UnicodeEncodeError on a lone surrogate
        return text

    def save(self, path: str | Path) -> None:
        """Write the sidecar atomically, never through a symbolic link and never over
        anything but a regular file; ValueError naming the file when it cannot."""
        path = Path(path)
        data = self.to_text().encode("utf-8")
        if len(data) > MAX_SIDECAR_BYTES:  # it could not be read back
            raise ValueError(f"{path}: cannot save breakpoints: too many to save "
                             f"({len(data):,} bytes; the limit is {MAX_SIDECAR_BYTES:,})")
        try:
            replace_file(path, data)
        except Refused as exc:
            raise ValueError(f"{path}: cannot save breakpoints: {exc}") from None

    @classmethod
    def load(cls, path: str | Path) -> BreakpointSet:
        """Read a sidecar. A missing file gives the defaults (nothing saved yet); a damaged
        or foreign one gives a ValueError naming the file and what is wrong."""
        loaded = cls.read(path)
        return loaded if loaded is not None else cls()

    @classmethod
    def read(cls, path: str | Path) -> BreakpointSet | None:
        """As ``load``, None when there is no file. A symbolic link is not followed, and a
        pipe, a device or a file over ``MAX_SIDECAR_BYTES`` is refused unread."""
        path = Path(path)
        try:
            raw = read_small_file(path, MAX_SIDECAR_BYTES)
        except Refused as exc:
            raise ValueError(f"{path}: cannot read breakpoints: {exc}") from None
        if raw is None:
            return None
        try:
            data = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path}: not UTF-8 text (byte {exc.start})") from None
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg} (column {exc.colno})") from None
        except RecursionError:
            raise ValueError(f"{path}: not a breakpoints file (nested too deeply)") from None
        return cls.from_dict(data, str(path))


def sidecar_path(target_path: str | Path) -> Path:
    """Where breakpoints for a trace or plan are saved: beside it, ``.breakpoints.json`` added."""
    target = Path(target_path)
    return target.with_name(target.name + SIDECAR_SUFFIX)


def _ordinal(n: Any) -> str:
    if not isinstance(n, int) or isinstance(n, bool):
        return str(n)
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
