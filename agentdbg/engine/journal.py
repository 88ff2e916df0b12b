"""The operation journal: what each operation key's call returned, so it never runs twice.

The journal is read from events, so the trace is the journal: an ``operation`` event
(written before a keyed call runs) opens an entry, the observation with the same key in
the same step closes it with the result. A key whose entry is closed is answered with the
recorded result; a key whose entry is open (its call started, no result was recorded: the
run was cut off while it ran, or it is still running) is not run again either, since its
effect is unknown. Runs appended to a trace read the earlier runs' entries first
(``agentdbg.trace.journal``), so a re-run never repeats what an earlier run did.

Any other trace of a key counts too, since a damaged or missing ``operation`` line must
not let its call run again: an observation with the key and no operation before it, an
approved call's decision naming the key, a damaged line the key can be read from. Such a
key's effect is unknown (its entry says what was found, ``evidence``); an observation
that gives a result again (``replayed``) carries that result, which stands. A damaged
line cut inside a key marks every key that begins that way (``note_prefix``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass

from agentdbg.engine import events as ev

__all__ = ["OperationJournal", "Recorded"]


@dataclass(frozen=True)
class Recorded:
    """One operation: where it ran (``run`` is the run's number in the trace, counted from
    1) and, once known, what it returned. ``evidence`` (when not empty): the entry was not
    opened by its ``operation`` event but by what this says was found instead; it gets no
    result, its effect stays unknown."""

    key: str
    run: int
    step: int
    text: str | None = None  # None: started, no result recorded
    error: bool = False
    evidence: str = ""

    @property
    def known(self) -> bool:
        return self.text is not None

    def where(self, current_run: int) -> str:
        return f"step {self.step}" if self.run == current_run else f"run {self.run}, step {self.step}"

    def replayed(self, current_run: int) -> dict[str, int]:
        """The ``replayed`` field of an observation that gives this result again."""
        return {"step": self.step} if self.run == current_run else {"run": self.run, "step": self.step}


class OperationJournal:
    """Operation keys and their results, fed the events of a run (or of a trace) in order
    with ``note``. Thread-safe: a recorder's tools may report from other threads."""

    def __init__(self, events: Iterable[ev.Event] = ()):
        self._entries: dict[str, Recorded] = {}
        self._prefixes: dict[str, Recorded] = {}  # a key cut short on a damaged line: every key it begins
        self._prefix_lengths: set[int] = set()
        self._approved: set[str] = set()  # keys whose entry an approval opened, before its operation
        self._run = 0  # runs seen so far: the current run's number once its run_start is noted
        self._lock = threading.Lock()
        for event in events:
            self.note(event)

    @property
    def run(self) -> int:
        """The number of the run being noted (1 for the first)."""
        return max(self._run, 1)

    def __len__(self) -> int:
        return len(self._entries)

    def note(self, event: ev.Event) -> None:
        if isinstance(event, ev.RunStart):
            with self._lock:
                self._run += 1
        elif isinstance(event, ev.Operation) and event.key:
            with self._lock:
                entry = self._entries.get(event.key)
                # The first call with a key is the operation; a later one was a mistake to record.
                # An approval noted just before it, in its step, was for this very call.
                if entry is None or (event.key in self._approved and (entry.run, entry.step) == (self.run, event.step)):
                    self._entries[event.key] = Recorded(event.key, self.run, event.step)
                self._approved.discard(event.key)
        elif isinstance(event, ev.Observation) and event.key:
            with self._lock:
                entry = self._entries.get(event.key)
                if entry is None:
                    self._entries[event.key] = self._without_operation(event)
                elif (event.replayed is None and not entry.known and not entry.evidence
                      and (entry.run, entry.step) == (self.run, event.step)):
                    # Only the result of the call that opened the entry closes it (never a refusal's).
                    self._entries[event.key] = Recorded(entry.key, entry.run, entry.step, event.text, event.error)
        elif isinstance(event, ev.Approval) and event.key and event.decision == "approved":
            with self._lock:
                if event.key not in self._entries:
                    self._approved.add(event.key)
                    self._entries[event.key] = Recorded(
                        event.key, self.run, event.step,
                        evidence=f"its call was approved at {self._at(event.step)} and the trace holds no "
                                 "operation line for it (damaged or missing)")

    def _without_operation(self, event: ev.Observation) -> Recorded:
        """An entry from an observation with a key that no operation opened."""
        origin = event.replayed or {}
        if event.replayed is not None:  # a result given again: the result stands, wherever it ran
            run, step = origin.get("run", self.run), origin.get("step", event.step)
            return Recorded(event.key, run if isinstance(run, int) else self.run,
                            step if isinstance(step, int) else event.step, event.text, event.error,
                            evidence="a replayed result")
        return Recorded(event.key, self.run, event.step,
                        evidence=f"the trace holds its result at {self._at(event.step)} but not the operation "
                                 "line before it (damaged or missing)")

    def _at(self, step: int) -> str:
        return f"run {self.run}, step {step}"

    def note_damaged(self, key: str, what: str) -> None:
        """A damaged line the key was read from (``what`` says where it is): the key's
        effect is unknown, unless an entry already says more."""
        with self._lock:
            if key not in self._entries:
                self._entries[key] = Recorded(key, self.run, 0, evidence=what)

    def note_prefix(self, prefix: str, what: str) -> None:
        """A damaged line cut inside a key that begins with ``prefix``: every such key's
        effect is unknown."""
        with self._lock:
            if prefix not in self._prefixes:
                self._prefixes[prefix] = Recorded(prefix, self.run, 0, evidence=what)
                self._prefix_lengths.add(len(prefix))

    def lookup(self, key: str) -> Recorded | None:
        """The operation with this key, or None when nothing says a call with it started."""
        with self._lock:
            found = self._entries.get(key)
            if found is not None or not self._prefixes:
                return found
            for length in sorted(self._prefix_lengths):
                cut = self._prefixes.get(key[:length]) if length <= len(key) else None
                if cut is not None:
                    return Recorded(key, cut.run, 0, evidence=cut.evidence)
            return None

    def entries(self) -> list[Recorded]:
        with self._lock:
            return list(self._entries.values())
